// The blocked float32 matrix multiply behind Gemm and MatMul (kernels/gemm.cl), shared with ops
// that lower to a matrix product (ConvTranspose).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ops/build_context.hpp"
#include "ops/variants.hpp"

namespace oi {

// Y[b] = alpha * A[b] x B[b] + beta * C, for b in [0, a_off.size()); Y[b] is a dense row-major
// M x N matrix at element b*M*N of `y`.
struct GemmDesc {
  int64_t M = 0, N = 0, K = 0;
  // A[b][m][k] is element a_off[b] + m*a_rs + k*a_ks of `a`.
  int64_t a_rs = 0, a_ks = 1;
  std::vector<int64_t> a_off{0};
  // B is the node's input `b_input` (a constant is packed at plan time, anything else by a kernel
  // at run time). Its matrix j holds B[j][k][n] at j*b_bs + k*b_ks + n*b_ns; batch b uses matrix
  // b_index[b] (empty: matrix 0 for every batch). b_count: how many matrices B holds.
  int b_input = 1;
  int64_t b_ks = 0, b_ns = 1, b_bs = 0, b_count = 1;
  // Or B given as a float32 host tensor made at plan time (the audio ops' DFT bases), laid out
  // through the same strides; then b_input is unused.
  const Tensor* b_host = nullptr;
  // Or B written by b_host_pack straight into gemm_f32_packed's panel layout (for launch_gemm_packed
  // only): out[((j * npad / nr + n / nr) * K + k) * nr + n % nr] = B[j][k][n], `out` zeroed,
  // b_count * npad * K floats. Saves the host tensor and its repacking (Winograd's weights).
  std::function<void(int nr, int64_t npad, float* out)> b_host_pack;
  std::vector<int64_t> b_index;
  float alpha = 1, beta = 0;
  // Optional C (nullptr: none), broadcast over [M, N] through strides (0 on a broadcast dim).
  cl_mem c = nullptr;
  int64_t c_rs = 0, c_cs = 0;
  // Fused epilogue: y = act(... + residual), the residual laid out like y.
  Epilogue epilogue;
  // Storage types of A, C and Y (float32 or float16); B's and the residual's come from the graph.
  DType a_storage = DType::Float32, c_storage = DType::Float32, y_storage = DType::Float32;
};

// MatMul's numpy-style operand shapes: A [..., M, K] x B [..., K, N] (rank-1 operands promoted and
// their dims dropped from `out`), batch dims broadcast. Fails naming the node for mismatched inner
// dims or batch dims that do not broadcast.
struct MatmulShape {
  Shape a_batch, b_batch, batch, out;
  int64_t M, N, K;
};
// A and B are the node's inputs a_slot and b_slot.
MatmulShape matmul_shape(const OpContext& ctx, int a_slot = 0, int b_slot = 1);

// Appends the launches of the gemm family's chosen variant (a B-packing pass when B is not
// constant, then the product). Requires float32 operands; fails for sizes beyond int32 indexing.
void launch_gemm(BuildContext& ctx, cl_mem a, cl_mem y, const GemmDesc& d);
// The register-blocked product with its default parameters, without the family's choice (for
// kernels that use a GEMM as one of their steps, e.g. Winograd convolution).
void launch_gemm_packed(BuildContext& ctx, cl_mem a, cl_mem y, const GemmDesc& d);

}  // namespace oi
