#include "ops/core/op_def.hpp"

#include <algorithm>
#include <limits>

namespace oi {

using ocl_infer::ModelError;
using ocl_infer::UnsupportedError;

const Value& OpContext::in(int i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is required but missing");
  return g_.values[node_.inputs[i]];
}

const Value& OpContext::out_value(int i) const {
  if (!has_output(i)) fail("output " + std::to_string(i) + " is required but missing");
  return g_.values[node_.outputs[i]];
}

Value& OpContext::out_mut(int i) {
  if (!mut_) throw ocl_infer::Error("internal: " + describe_node(g_, node_) + " set an output outside shape inference");
  if (!has_output(i)) fail("output " + std::to_string(i) + " is required but missing");
  return mut_->values[node_.outputs[i]];
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
  Value& v = out_mut(i);
  v.dtype = t;
  v.shape = s;
  v.shape_known = true;
}

void OpContext::set_out_data(int i, Tensor t) {
  if (!has_output(i)) return;
  set_out(i, t.dtype, t.shape);
  out_mut(i).data = std::make_shared<const Tensor>(std::move(t));
}

void OpContext::fail(const std::string& msg) const {
  throw ModelError(describe_node(g_, node_) + ": " + msg);
}

void OpContext::unsupported(const std::string& msg) const {
  throw UnsupportedError(describe_node(g_, node_) + ": " + msg);
}

int64_t OpContext::axis(int64_t a, int64_t rank) const {
  int64_t r = a < 0 ? a + rank : a;
  if (r < 0 || r >= rank)  // a scalar (rank 0) has no axis
    fail("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
  return r;
}

std::vector<int64_t> OpContext::axes(std::vector<int64_t> list, int64_t rank) const {
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
  for (int64_t& a : list) {
    const int64_t original = a;
    a = axis(a, rank);
    if (seen[a]) fail("axis " + std::to_string(original) + " is listed twice");
    seen[a] = true;
  }
  return list;
}

double node_flops(const Graph& g, int node_index) {
  const Node& n = g.nodes[node_index];
  const OpDef* def = find_op(g, n);
  if (!def || !def->traits.flops || n.outputs.empty() || n.outputs[0] < 0) return 0;
  OpContext ctx(g, node_index);
  return def->traits.flops(ctx);
}

double node_bytes(const Graph& g, int node_index) {
  const Node& n = g.nodes[node_index];
  auto bytes_of = [&](int v) {
    return v < 0 ? 0.0 : static_cast<double>(numel(g.values[v].shape)) * static_cast<double>(ocl_infer::dtype_size(g.values[v].dtype));
  };
  double b = bytes_of(n.epilogue.residual);
  for (int v : n.inputs) b += bytes_of(v);
  for (int v : n.outputs) b += bytes_of(v);
  return b;
}

}  // namespace oi
