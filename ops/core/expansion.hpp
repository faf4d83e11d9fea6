// Builds the nodes an op expands into (OpTraits::expand: ONNX functions such as the losses,
// GroupNormalization, LpNormalization): new values and nodes named after the expanded node, typed
// constants, Squeeze/Unsqueeze with axes as the graph's opset wants them. The caller hands `nodes`
// to replace_node (runtime/ir/subgraph.hpp). Every value or constant added moves g.values: copy
// what an expansion needs from a Value (dtype, shape, data) before the first one, never hold a
// `const Value&` across them (ASan found one in GroupNormalization's).
#pragma once

#include <string>
#include <vector>

#include "runtime/ir/graph.hpp"
#include "runtime/ir/subgraph.hpp"

namespace oi {

class Expansion {
 public:
  Expansion(Graph& g, const Node& n) : g_(g), n_(n) {}

  int value(const std::string& what) { return g_.add_value(n_.name + "/" + what); }

  // Appends a node `op` reading `ins`; writes `out`, or a new value named after `what`.
  int node(const std::string& op, std::vector<int> ins, const std::string& what, int out = -1) {
    if (out < 0) out = value(what);
    nodes.push_back(make_node(op, n_.name + "/" + what, std::move(ins), {out}));
    return out;
  }
  // Attributes of the last node appended.
  void attr_int(const std::string& name, int64_t v) {
    Attribute a;
    a.kind = Attribute::Kind::Int;
    a.i = v;
    nodes.back().attrs[name] = a;
  }
  void attr_float(const std::string& name, float v) {
    Attribute a;
    a.kind = Attribute::Kind::Float;
    a.f = v;
    nodes.back().attrs[name] = a;
  }
  void attr_ints(const std::string& name, std::vector<int64_t> v) {
    Attribute a;
    a.kind = Attribute::Kind::Ints;
    a.ints = std::move(v);
    nodes.back().attrs[name] = a;
  }
  // A scalar constant of type t (float32/64/16, int32, else int64).
  int scalar(const std::string& what, DType t, double v) {
    Tensor c(t, {});
    if (t == DType::Float32) c.data<float>()[0] = static_cast<float>(v);
    else if (t == DType::Float64) c.data<double>()[0] = v;
    else if (t == DType::Float16) c.data<uint16_t>()[0] = ocl_infer::float_to_half(static_cast<float>(v));
    else if (t == DType::Int32) c.data<int32_t>()[0] = static_cast<int32_t>(v);
    else c.data<int64_t>()[0] = static_cast<int64_t>(v);
    return g_.add_constant(n_.name + "/" + what, std::move(c));
  }
  // A constant int64 vector (shapes, axes).
  int ints(const std::string& what, const std::vector<int64_t>& v) {
    Tensor c(DType::Int64, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) c.data<int64_t>()[i] = v[i];
    return g_.add_constant(n_.name + "/" + what, std::move(c));
  }
  // Squeeze or Unsqueeze of one axis: axes as an input from opset 13, else an attribute.
  int reshape_axis(const std::string& op, int in, int64_t axis, const std::string& what) {
    if (g_.opset() >= 13) return node(op, {in, ints(what + "_axes", {axis})}, what);
    const int out = node(op, {in}, what);
    attr_ints("axes", {axis});
    return out;
  }

  std::vector<Node> nodes;

 private:
  Graph& g_;
  const Node& n_;
};

}  // namespace oi
