// Sliding-window geometry shared by Conv, ConvTranspose and the pooling ops.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "ops/core/op_def.hpp"

namespace oi {

// Per spatial dim (outermost first): input size, kernel extent, stride, dilation, padding at the
// start and at the end, output size.
struct Window {
  std::vector<int64_t> in, k, s, d, pb, pe, out;
  int rank() const { return static_cast<int>(in.size()); }
};

// Reads kernel_shape (must equal `kernel` when `kernel` is not empty; required otherwise),
// strides, dilations (only when `has_dilations`), pads and auto_pad of the node, and computes the
// output size: floor, or ceil when `ceil_mode` (a window starting in the end padding is dropped).
// Fails with a message naming the attribute for inconsistent values or an empty output.
Window window_geometry(const OpContext& ctx, const std::vector<int64_t>& in_spatial,
                       const std::vector<int64_t>& kernel, bool has_dilations, bool ceil_mode);

// A convolution's sizes: batch, input channels, output channels, groups and the window geometry,
// from input X (slot x_slot) and weights [M][C/G][k...] (slot w_slot); fails naming the node for
// ranks, group counts and a bias (slot bias_slot, -1: none) that do not fit.
struct ConvShape {
  int64_t N, C, M, G;
  Window w;
};
ConvShape conv_shape(const OpContext& ctx, int x_slot = 0, int w_slot = 1, int bias_slot = 2);

// `v` (rank <= 3) right-aligned into three dims, the leading ones set to `fill`, so 1-D and 2-D
// windows run through 3-D kernels.
std::array<int64_t, 3> to3(const std::vector<int64_t>& v, int64_t fill);

// How a CPU-shaped depthwise conv shares out `planes` output planes of `plane_out` pixels among
// work-items (the float32 kernel and the 8-bit ones): small planes take up to 8 channels per
// work-item (amortising the per-work-group cost: 8 channels of 7x7 ran 25 % faster than 1); few
// large planes are cut into `bands` of rows, so that every core gets work.
struct DepthwiseSplit {
  int64_t chans, bands;
};
DepthwiseSplit depthwise_split(int64_t planes, int64_t plane_out);
// The rows of a depthwise kernel's ring of input rows in private memory (kernels/conv.cl DW_RING,
// kernels/quant.cl qconv_depthwise_vnni): a window of kh taps dilated by dh and two output rows'
// more at stride sh, rounded up to a power of two (the kernels mask the row number).
int64_t depthwise_ring_slots(int64_t kh, int64_t dh, int64_t sh);

}  // namespace oi
