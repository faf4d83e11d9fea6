// Strided copies: the one primitive behind Transpose, Slice, Expand, Tile, Concat, Split,
// DepthToSpace and SpaceToDepth. An op describes its outputs as a list of CopyViews; the same list
// runs on the host (constant folding, exact for every dtype) or on the device (kernels/copy.cl).
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "ops/build_context.hpp"

namespace oi {

// For every coordinate c over `dims`:
//   output[out_offset + sum c_d * out_strides_d] = input[in_offset + sum c_d * in_strides_d]
// `input`/`output` are the node's input and output slots. Strides and offsets are in elements;
// a stride of 0 repeats (broadcast), a negative stride walks backwards.
struct CopyView {
  int input = 0;
  int output = 0;
  Shape dims;
  std::vector<int64_t> in_strides, out_strides;
  int64_t in_offset = 0, out_offset = 0;
};

// The view that permutes `in_shape` by `perm` into a contiguous output:
// out dim k = in dim perm[k].
CopyView permute_view(const Shape& in_shape, const std::vector<int64_t>& perm);

// Drops size-1 dims and merges dims that are contiguous in both input and output, so the kernel
// walks as few dims as possible. An empty view stays empty (a 0 dim is kept).
void collapse_view(CopyView& v);

// Element size of `t` for byte-wise copies; unsupported() for strings and undefined types.
size_t copy_elem_size(const OpContext& ctx, DType t);
// Build option naming the OpenCL word type of t's size, for dtype-agnostic kernels: "-DE=uint".
std::string word_option(const OpContext& ctx, DType t);
// " -DIDX=int" when every element count in `sizes` (tensor sizes, launch sizes) stays below 2^31,
// so kernels index in 32 bits; "" (64-bit indexing) otherwise.
std::string index_option(std::initializer_list<int64_t> sizes);

// Host: allocates each output with its inferred dtype and shape (zero-filled), applies the views,
// and sets the outputs' data. Every output slot that is present must be covered by the views.
void run_copies_host(OpContext& ctx, const std::vector<CopyView>& views);

// Device: one copy_strided launch per non-empty view.
void run_copies_device(BuildContext& ctx, const std::vector<CopyView>& views);

// Host: output `o` gets input `i`'s bytes under the output's inferred shape (Reshape & co).
void host_same_bytes(OpContext& ctx, int i = 0, int o = 0);

}  // namespace oi
