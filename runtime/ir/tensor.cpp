// The public value types' helpers (Tensor, DType names and sizes, shape strings): part of the IR
// layer, since the graph stores its constants as public Tensors.
#include "ocl_infer/ocl_infer.hpp"
#include "runtime/ir/host_math.hpp"

#include <cstdint>
#include <cstdio>

namespace ocl_infer {

float half_to_float(uint16_t h) { return oi::half_to_float(h); }
uint16_t float_to_half(float f) { return oi::float_to_half(f); }

std::string printable_message(const std::string& what, bool keep_lines) {
  std::string r;
  r.reserve(what.size());
  for (unsigned char c : what) {
    if ((c < 0x20 && !(keep_lines && (c == '\n' || c == '\t'))) || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      r += buf;
    } else {
      r += static_cast<char>(c);
    }
  }
  return r;
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float32: case DType::Int32: case DType::UInt32: return 4;
    case DType::Float64: case DType::Int64: case DType::UInt64: return 8;
    case DType::Float16: case DType::Int16: case DType::UInt16: case DType::BFloat16: return 2;
    case DType::Int8: case DType::UInt8: case DType::Bool: return 1;
    default: return 0;
  }
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::BFloat16: return "bfloat16";
    case DType::UInt8: return "uint8";
    case DType::Int8: return "int8";
    case DType::UInt16: return "uint16";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::String: return "string";
    case DType::Bool: return "bool";
    case DType::Float16: return "float16";
    case DType::Float64: return "float64";
    case DType::UInt32: return "uint32";
    case DType::UInt64: return "uint64";
    default: return "undefined";
  }
}

Tensor::Tensor(DType t, std::vector<int64_t> s) : dtype(t), shape(std::move(s)) {
  uint64_t n = dtype_size(t);
  bool bad = false;
  for (int64_t d : shape) bad |= d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n);
  if (bad || n > (uint64_t{1} << 48))
    throw InputError("cannot make a " + std::string(dtype_name(t)) + " tensor of shape " + shape_to_string(shape));
  bytes.assign(static_cast<size_t>(n), 0);
}

int64_t Tensor::numel() const {
  // Saturates instead of overflowing (a shape read from a hostile file); a 0 dim gives 0.
  int64_t n = 1;
  bool overflow = false;
  for (auto d : shape) {
    if (d == 0) return 0;
    overflow |= d < 0 || __builtin_mul_overflow(n, d, &n);
  }
  return overflow ? INT64_MAX : n;
}

std::string shape_to_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    s += i ? "," : "";
    s += shape[i] < 0 ? "?" : std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace ocl_infer
