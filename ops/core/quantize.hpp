// Quantization arithmetic shared by the quantization ops (ops/quant_ops.cpp), the fuse_qdq pass and
// the tests (host code, no OpenCL): the ONNX definitions, computed in float32 as the device kernels compute them.
#pragma once

#include "runtime/ir/graph.hpp"

namespace oi {

// int8 or uint8: the types the integer kernels read and write.
bool is_quantized_type(DType t);
// [-128, 127] for int8, [0, 255] for uint8.
void quantized_range(DType t, int* lo, int* hi);
// QuantizeLinear of one value: saturate(round_half_even(x / scale) + zero_point) into t's range
// (NaN becomes the range's low end, as on the device).
float quantize_value(float x, float scale, int zero_point, DType t);
// DequantizeLinear: (x - zero_point) * scale as float32; `scale` (and `zero_point`, nullptr for
// 0) hold one value or one per index along `axis` of x.
Tensor dequantize_tensor(const Tensor& x, const Tensor& scale, const Tensor* zero_point, int64_t axis);

}  // namespace oi
