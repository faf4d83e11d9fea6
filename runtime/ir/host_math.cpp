#include "runtime/ir/host_math.hpp"

#include <cstring>

#include <cmath>

namespace oi {

float half_to_float(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0) v = std::ldexp(static_cast<float>(man), -24);
  else if (exp == 31) v = man ? NAN : INFINITY;
  else v = std::ldexp(static_cast<float>(man | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t man = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (man ? 0x200 : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    man |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t h = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = sign | (static_cast<uint32_t>(exp) << 10) | (man >> 13);
  uint32_t rem = man & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // round to nearest even
  return static_cast<uint16_t>(h);
}

Tensor convert_elements(const Tensor& t, DType to) {
  if (t.dtype == to) return t;
  Tensor r(to, t.shape);
  const int64_t n = t.numel();
  if (t.dtype == DType::Float32 && to == DType::Float16)
    for (int64_t i = 0; i < n; ++i) r.data<uint16_t>()[i] = float_to_half(t.data<float>()[i]);
  else if (t.dtype == DType::Float16 && to == DType::Float32)
    for (int64_t i = 0; i < n; ++i) r.data<float>()[i] = half_to_float(t.data<uint16_t>()[i]);
  else
    throw ocl_infer::Error(std::string("internal: no storage conversion from ") + ocl_infer::dtype_name(t.dtype) +
                           " to " + ocl_infer::dtype_name(to));
  return r;
}

const Tensor& as_float32(const Tensor& t, Tensor* widened) {
  if (t.dtype == DType::Float32) return t;
  *widened = convert_elements(t, DType::Float32);
  return *widened;
}

double host_get_f(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DType::Float32: return t.data<float>()[i];
    case DType::Float64: return t.data<double>()[i];
    case DType::Float16: return half_to_float(t.data<uint16_t>()[i]);
    case DType::BFloat16: {
      const uint32_t bits = static_cast<uint32_t>(t.data<uint16_t>()[i]) << 16;
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return f;
    }
    default: return static_cast<double>(host_get_i(t, i));
  }
}

int64_t host_get_i(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DType::Int64: return t.data<int64_t>()[i];
    case DType::Int32: return t.data<int32_t>()[i];
    case DType::Int16: return t.data<int16_t>()[i];
    case DType::Int8: return t.data<int8_t>()[i];
    case DType::UInt8: case DType::Bool: return t.data<uint8_t>()[i];
    case DType::UInt16: return t.data<uint16_t>()[i];
    case DType::UInt32: return t.data<uint32_t>()[i];
    case DType::UInt64: return static_cast<int64_t>(t.data<uint64_t>()[i]);
    default: return static_cast<int64_t>(host_get_f(t, i));
  }
}

void host_set_f(Tensor& t, int64_t i, double v) {
  switch (t.dtype) {
    case DType::Float32: t.data<float>()[i] = static_cast<float>(v); break;
    case DType::Float64: t.data<double>()[i] = v; break;
    case DType::Float16: t.data<uint16_t>()[i] = float_to_half(static_cast<float>(v)); break;
    case DType::BFloat16: {  // the upper half of the float32, rounded to nearest even; NaN stays NaN
      const float f = static_cast<float>(v);
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      if ((bits & 0x7fffffffu) > 0x7f800000u) t.data<uint16_t>()[i] = static_cast<uint16_t>((bits >> 16) | 0x40u);
      else t.data<uint16_t>()[i] = static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
      break;
    }
    case DType::Bool: t.data<uint8_t>()[i] = v != 0; break;
    default: host_set_i(t, i, static_cast<int64_t>(v)); break;
  }
}

void host_set_i(Tensor& t, int64_t i, int64_t v) {
  switch (t.dtype) {
    case DType::Int64: t.data<int64_t>()[i] = v; break;
    case DType::Int32: t.data<int32_t>()[i] = static_cast<int32_t>(v); break;
    case DType::Int16: t.data<int16_t>()[i] = static_cast<int16_t>(v); break;
    case DType::Int8: t.data<int8_t>()[i] = static_cast<int8_t>(v); break;
    case DType::UInt8: t.data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
    case DType::Bool: t.data<uint8_t>()[i] = v != 0; break;
    case DType::UInt16: t.data<uint16_t>()[i] = static_cast<uint16_t>(v); break;
    case DType::UInt32: t.data<uint32_t>()[i] = static_cast<uint32_t>(v); break;
    case DType::UInt64: t.data<uint64_t>()[i] = static_cast<uint64_t>(v); break;
    default: host_set_f(t, i, static_cast<double>(v)); break;
  }
}

int64_t broadcast_index(const Shape& out, const Shape& in, int64_t i) {
  int64_t idx = 0, stride = 1;
  size_t off = out.size() - in.size();
  for (size_t d = out.size(); d-- > 0;) {
    int64_t c = i % out[d];
    i /= out[d];
    if (d >= off) {
      int64_t n = in[d - off];
      if (n != 1) idx += c * stride;
      stride *= n;
    }
  }
  return idx;
}

}  // namespace oi
