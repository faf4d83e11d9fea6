// Quantization arithmetic (see quantize.hpp).
#include "ops/core/quantize.hpp"

#include <algorithm>
#include <cmath>

#include "runtime/ir/host_math.hpp"

namespace oi {

bool is_quantized_type(DType t) { return t == DType::Int8 || t == DType::UInt8; }

void quantized_range(DType t, int* lo, int* hi) {
  *lo = t == DType::Int8 ? -128 : 0;
  *hi = t == DType::Int8 ? 127 : 255;
}

float quantize_value(float x, float scale, int zero_point, DType t) {
  int lo, hi;
  quantized_range(t, &lo, &hi);
  const float q = std::nearbyint(x / scale) + static_cast<float>(zero_point);
  if (std::isnan(q)) return static_cast<float>(lo);
  return std::min(std::max(q, static_cast<float>(lo)), static_cast<float>(hi));
}

Tensor dequantize_tensor(const Tensor& x, const Tensor& scale, const Tensor* zero_point, int64_t axis) {
  Tensor y(DType::Float32, x.shape);
  const int64_t n = x.numel(), per_axis = scale.numel();
  int64_t inner = 1;
  if (per_axis > 1)
    for (size_t d = static_cast<size_t>(axis) + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  float* out = y.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = per_axis > 1 ? (i / inner) % per_axis : 0;
    const int64_t z = zero_point ? host_get_i(*zero_point, c) : 0;
    out[i] = static_cast<float>(host_get_i(x, i) - z) * static_cast<float>(host_get_f(scale, c));
  }
  return y;
}

}  // namespace oi
