#include "ops/op.hpp"

#include <algorithm>
#include <limits>

namespace oi {

using ocl_infer::ModelError;
using ocl_infer::UnsupportedError;

const Value& OpContext::in(int i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is required but missing");
  return g_.values[node_.inputs[i]];
}

Value& OpContext::out(int i) {
  if (!has_output(i)) fail("output " + std::to_string(i) + " is required but missing");
  return g_.values[node_.outputs[i]];
}

const Tensor& OpContext::in_data(int i) const {
  const Value& v = in(i);
  if (!v.data)
    unsupported("input " + std::to_string(i) + " ('" + v.name +
                "') must be known at plan time (a constant or computed from constants and "
                "input shapes); data-dependent shapes are not supported");
  return *v.data;
}

std::vector<int64_t> OpContext::in_ints(int i) const {
  const Tensor& t = in_data(i);
  std::vector<int64_t> r(t.numel());
  switch (t.dtype) {
    case DType::Int64:
      for (size_t k = 0; k < r.size(); ++k) r[k] = t.data<int64_t>()[k];
      break;
    case DType::Int32:
      for (size_t k = 0; k < r.size(); ++k) r[k] = t.data<int32_t>()[k];
      break;
    case DType::UInt8:
      for (size_t k = 0; k < r.size(); ++k) r[k] = t.data<uint8_t>()[k];
      break;
    case DType::Int8:
      for (size_t k = 0; k < r.size(); ++k) r[k] = t.data<int8_t>()[k];
      break;
    default:
      fail("input " + std::to_string(i) + " must be an integer tensor, not " +
           ocl_infer::dtype_name(t.dtype));
  }
  return r;
}

void OpContext::set_out(int i, DType t, const Shape& s) {
  if (!has_output(i)) return;  // omitted optional output
  // Refuse absurd shapes before any allocation: 2^40 elements is far beyond any device.
  double total = 1;
  for (auto d : s) {
    if (d < 0) fail("computed a negative dimension for output " + std::to_string(i) + " " +
                    ocl_infer::shape_to_string(s));
    total *= static_cast<double>(d);
  }
  if (total > static_cast<double>(1ll << 40))
    fail("output " + std::to_string(i) + " would have an absurd shape " +
         ocl_infer::shape_to_string(s));
  Value& v = out(i);
  v.dtype = t;
  v.shape = s;
  v.shape_known = true;
}

void OpContext::set_out_data(int i, Tensor t) {
  if (!has_output(i)) return;
  set_out(i, t.dtype, t.shape);
  out(i).data = std::make_shared<const Tensor>(std::move(t));
}

void OpContext::fail(const std::string& msg) const {
  throw ModelError(describe_node(g_, node_) + ": " + msg);
}

void OpContext::unsupported(const std::string& msg) const {
  throw UnsupportedError(describe_node(g_, node_) + ": " + msg);
}

int64_t OpContext::axis(int64_t a, int64_t rank) const {
  int64_t r = a < 0 ? a + rank : a;
  if (r < 0 || r >= std::max<int64_t>(rank, 1))
    fail("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
  return r;
}

DeviceBuilder& OpContext::dev() const {
  if (!dev_) throw ocl_infer::Error("internal: device build outside the planner");
  return *dev_;
}

void OpContext::set_arg(cl_kernel k, cl_uint i, cl_mem m) {
  cl_check(clSetKernelArg(k, i, sizeof(cl_mem), &m), "clSetKernelArg(buffer)");
}
void OpContext::set_arg(cl_kernel k, cl_uint i, int32_t v) {
  cl_check(clSetKernelArg(k, i, sizeof v, &v), "clSetKernelArg(int)");
}
void OpContext::set_arg(cl_kernel k, cl_uint i, int64_t v) {
  cl_check(clSetKernelArg(k, i, sizeof v, &v), "clSetKernelArg(long)");
}
void OpContext::set_arg(cl_kernel k, cl_uint i, float v) {
  cl_check(clSetKernelArg(k, i, sizeof v, &v), "clSetKernelArg(float)");
}
void OpContext::set_arg(cl_kernel k, cl_uint i, double v) {
  cl_check(clSetKernelArg(k, i, sizeof v, &v), "clSetKernelArg(double)");
}

void OpContext::push(KernelPtr k, const std::string& name, std::vector<size_t> global,
                     std::vector<size_t> local) {
  Launch l;
  l.kernel = std::move(k);
  l.kernel_name = name;
  l.global = std::move(global);
  l.local = std::move(local);
  l.node = index_;
  dev().add_launch(std::move(l));
}

const char* cl_type(DType t) {
  switch (t) {
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::Int8: return "char";
    case DType::UInt8: return "uchar";
    case DType::Int16: return "short";
    case DType::UInt16: return "ushort";
    case DType::Int32: return "int";
    case DType::UInt32: return "uint";
    case DType::Int64: return "long";
    case DType::UInt64: return "ulong";
    case DType::Bool: return "uchar";
    default:
      throw UnsupportedError(std::string("tensors of type ") + ocl_infer::dtype_name(t) +
                             " are not supported on the device yet");
  }
}

bool is_float(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::Float16;
}

bool is_integer(DType t) {
  switch (t) {
    case DType::Int8: case DType::UInt8: case DType::Int16: case DType::UInt16:
    case DType::Int32: case DType::UInt32: case DType::Int64: case DType::UInt64:
      return true;
    default:
      return false;
  }
}

bool broadcast_shapes(const Shape& a, const Shape& b, Shape* out) {
  size_t r = std::max(a.size(), b.size());
  Shape s(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1) s[i] = da;
    else if (da == 1) s[i] = db;
    else return false;
  }
  *out = s;
  return true;
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

}  // namespace oi
