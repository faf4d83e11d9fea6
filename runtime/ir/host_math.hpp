// Element access for host evaluation (constant folding and shape arithmetic) on tensors of any
// numeric dtype. Integers go through int64 and floats through double, so int64 shape arithmetic
// stays exact.
#pragma once

#include <cstring>

#include "runtime/ir/graph.hpp"

namespace oi {

double host_get_f(const Tensor& t, int64_t i);
int64_t host_get_i(const Tensor& t, int64_t i);
void host_set_f(Tensor& t, int64_t i, double v);
void host_set_i(Tensor& t, int64_t i, int64_t v);
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);

// The same elements in another float type (float32 <-> float16: the storage conversions; float16
// rounds to nearest even). Throws for other pairs.
Tensor convert_elements(const Tensor& t, DType to);
// t itself when it is float32, else its float32 copy kept in *widened (no copy of float32 weights).
const Tensor& as_float32(const Tensor& t, Tensor* widened);

// Index into an input of shape `in` broadcast to `out`, for flat output index `i`.
int64_t broadcast_index(const Shape& out, const Shape& in, int64_t i);

}  // namespace oi
