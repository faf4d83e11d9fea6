// ONNX sequences: SequenceEmpty, SequenceConstruct, SequenceAt, SequenceInsert, SequenceErase,
// SequenceLength, SplitToSequence, ConcatFromSequence and SequenceMap.
//
// A sequence is a list of tensor values known to the compiler (Value::sequence), never a runtime
// object: each op expands (OpTraits::expand) once its positions and its input sequences are known
// -- construct/insert/erase edit the list and emit nothing, SequenceAt becomes an Identity of the
// element, SequenceLength a constant, SplitToSequence one Split, ConcatFromSequence one Concat
// (Unsqueeze first for new_axis), SequenceMap a copy of its body per element. The elements are
// ordinary device tensors, planned, fused and freed like any other. Loops unroll, so a sequence
// carried through a Loop grows one element per iteration in the plan; a position computed on the
// device ends a plan segment like any value that steers the plan.
#include <algorithm>

#include "ops/core/op_def.hpp"
#include "runtime/ir/host_math.hpp"
#include "runtime/ir/subgraph.hpp"

namespace oi {

namespace {

using ocl_infer::dtype_name;
using ocl_infer::ModelError;
using ocl_infer::shape_to_string;

using Elements = std::vector<int>;

[[noreturn]] void fail(const Graph& g, const Node& n, const std::string& msg) {
  throw ModelError(describe_node(g, n) + ": " + msg);
}

// The elements of input `slot`, which must be a sequence.
const Elements& elements_of(const Graph& g, const Node& n, int slot) {
  if (slot >= static_cast<int>(n.inputs.size()) || n.inputs[slot] < 0) fail(g, n, "input " + std::to_string(slot) + " (a sequence) is missing");
  const Value& v = g.values[n.inputs[slot]];
  if (!v.sequence) fail(g, n, "input '" + v.name + "' must be a sequence, it is a tensor");
  return *v.sequence;
}

void set_sequence(Graph& g, int out, Elements e, DType t) {
  Value& v = g.values[out];
  v.sequence = std::make_shared<const Elements>(std::move(e));
  v.dtype = t;
  v.shape.clear();
  v.shape_known = true;
}

// Position input `slot` (a scalar int32/int64 constant) normalised against [0, hi] where negative
// values count from `count`; nullopt-like -1 return means "not known yet".
bool position(const Graph& g, const Node& n, int slot, int64_t count, int64_t hi, int64_t* out) {
  const Value& v = g.values[n.inputs[slot]];
  if (!v.data) return false;
  if (v.dtype != DType::Int32 && v.dtype != DType::Int64) fail(g, n, "position must be int32 or int64, not " + std::string(dtype_name(v.dtype)));
  if (v.data->numel() != 1) fail(g, n, "position must be a scalar, it has shape " + shape_to_string(v.shape));
  const int64_t p = host_get_i(*v.data, 0);
  const int64_t q = p < 0 ? p + count : p;
  if (q < 0 || q > hi)
    fail(g, n, "position " + std::to_string(p) + " is out of range for a sequence of " + std::to_string(count) +
                   " element(s)");
  *out = q;
  return true;
}

bool has(const Node& n, int slot) { return slot < static_cast<int>(n.inputs.size()) && n.inputs[slot] >= 0; }

int int64_constant(Graph& g, const std::string& name, const std::vector<int64_t>& v, bool scalar) {
  Tensor t(DType::Int64, scalar ? Shape{} : Shape{static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return g.add_constant(name, std::move(t));
}

void ints_attr(Node& n, const std::string& name, std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::Ints;
  a.ints = std::move(v);
  n.attrs[name] = a;
}

void int_attr(Node& n, const std::string& name, int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::Int;
  a.i = v;
  n.attrs[name] = a;
}

// ---- list edits ------------------------------------------------------------------------------
bool empty_expand(Graph& g, int ni) {
  const Node n = g.nodes[ni];
  const int64_t t = n.attr_int("dtype", static_cast<int64_t>(DType::Float32));
  set_sequence(g, n.outputs[0], {}, static_cast<DType>(t));
  replace_node(g, ni, {});
  return true;
}

bool construct_expand(Graph& g, int ni) {
  const Node n = g.nodes[ni];
  Elements e;
  DType t = DType::Undefined;
  for (int in : n.inputs) {
    if (in < 0) fail(g, n, "an input is missing");
    const Value& v = g.values[in];
    if (v.sequence) fail(g, n, "input '" + v.name + "' is a sequence; SequenceConstruct takes tensors");
    if (t != DType::Undefined && v.dtype != t)
      fail(g, n, "inputs have different types (" + std::string(dtype_name(t)) + " and " + dtype_name(v.dtype) + ")");
    t = v.dtype;
    e.push_back(in);
  }
  if (e.empty()) fail(g, n, "needs at least one input");
  set_sequence(g, n.outputs[0], e, t);
  replace_node(g, ni, {});
  return true;
}

bool insert_expand(Graph& g, int ni) {
  const Node n = g.nodes[ni];
  Elements e = elements_of(g, n, 0);
  const DType st = g.values[n.inputs[0]].dtype;
  if (!has(n, 1)) fail(g, n, "input 1 (the tensor) is missing");
  const Value& t = g.values[n.inputs[1]];
  if (t.sequence) fail(g, n, "input '" + t.name + "' must be a tensor");
  if (st != DType::Undefined && t.dtype != st)
    fail(g, n, "inserts a " + std::string(dtype_name(t.dtype)) + " tensor into a sequence of " + dtype_name(st));
  int64_t at = static_cast<int64_t>(e.size());
  const int64_t count = static_cast<int64_t>(e.size());
  if (has(n, 2) && !position(g, n, 2, count, count, &at)) return false;
  e.insert(e.begin() + at, n.inputs[1]);
  set_sequence(g, n.outputs[0], e, t.dtype);
  replace_node(g, ni, {});
  return true;
}

bool erase_expand(Graph& g, int ni) {
  const Node n = g.nodes[ni];
  Elements e = elements_of(g, n, 0);
  const int64_t count = static_cast<int64_t>(e.size());
  if (count == 0) fail(g, n, "erases from an empty sequence");
  int64_t at = count - 1;
  if (has(n, 1) && !position(g, n, 1, count, count - 1, &at)) return false;
  e.erase(e.begin() + at);
  set_sequence(g, n.outputs[0], e, g.values[n.inputs[0]].dtype);
  replace_node(g, ni, {});
  return true;
}

bool at_expand(Graph& g, int ni) {
  const Node n = g.nodes[ni];
  const Elements& e = elements_of(g, n, 0);
  const int64_t count = static_cast<int64_t>(e.size());
  if (count == 0) fail(g, n, "reads from an empty sequence");
  if (!has(n, 1)) fail(g, n, "input 1 (position) is missing");
  int64_t at = 0;
  if (!position(g, n, 1, count, count - 1, &at)) return false;
  const int elem = e[at];
  replace_node(g, ni, {make_node("Identity", n.name, {elem}, {n.outputs[0]})});
  return true;
}

bool length_expand(Graph& g, int ni) {
  const Node n = g.nodes[ni];
  const Elements& e = elements_of(g, n, 0);
  Tensor t(DType::Int64, {});
  t.data<int64_t>()[0] = static_cast<int64_t>(e.size());
  Value& out = g.values[n.outputs[0]];
  out.dtype = DType::Int64;
  out.shape = {};
  out.shape_known = true;
  out.data = std::make_shared<const Tensor>(std::move(t));
  replace_node(g, ni, {});
  return true;
}

// ---- tensors <-> sequences -------------------------------------------------------------------
bool split_expand(Graph& g, int ni) {
  const Node n = g.nodes[ni];
  if (!has(n, 0)) fail(g, n, "input 0 is missing");
  const Value x = g.values[n.inputs[0]];
  if (x.sequence) fail(g, n, "input '" + x.name + "' must be a tensor");
  if (!x.shape_known) return false;
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = n.attr_int("axis", 0);
  if (axis < -rank || axis >= rank) fail(g, n, "axis " + std::to_string(axis) + " is out of range for " + shape_to_string(x.shape));
  if (axis < 0) axis += rank;
  const int64_t dim = x.shape[axis];
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (has(n, 1)) {
    const Value& sv = g.values[n.inputs[1]];
    if (!sv.data) return false;
    if (sv.dtype != DType::Int32 && sv.dtype != DType::Int64) fail(g, n, "split must be int32 or int64");
    if (sv.shape.empty()) {
      const int64_t chunk = host_get_i(*sv.data, 0);
      if (chunk <= 0) fail(g, n, "split " + std::to_string(chunk) + " must be positive");
      for (int64_t at = 0; at < dim; at += chunk) sizes.push_back(std::min(chunk, dim - at));
    } else {
      int64_t sum = 0;
      for (int64_t k = 0; k < sv.data->numel(); ++k) {
        const int64_t s = host_get_i(*sv.data, k);
        if (s < 0) fail(g, n, "split holds a negative size " + std::to_string(s));
        sizes.push_back(s);
        sum += s;
      }
      if (sum != dim)
        fail(g, n, "split sizes add up to " + std::to_string(sum) + ", axis " + std::to_string(axis) + " of " +
                       shape_to_string(x.shape) + " has " + std::to_string(dim));
    }
  } else {
    sizes.assign(static_cast<size_t>(dim), 1);
    squeeze = n.attr_int("keepdims", 1) == 0;
  }
  std::vector<Node> nodes;
  Elements parts;
  if (!sizes.empty()) {
    for (size_t k = 0; k < sizes.size(); ++k) parts.push_back(g.add_value(n.name + "/part" + std::to_string(k)));
    Node split = make_node("Split", n.name + "/split", {n.inputs[0]}, parts);
    int_attr(split, "axis", axis);
    if (g.opset() >= 13) split.inputs.push_back(int64_constant(g, n.name + "/sizes", sizes, false));
    else ints_attr(split, "split", sizes);
    nodes.push_back(std::move(split));
    if (squeeze) {
      for (int& p : parts) {
        const int sq = g.add_value(g.values[p].name + "/squeezed");
        Node s = make_node("Squeeze", g.values[p].name + "/squeeze", {p}, {sq});
        if (g.opset() >= 13) s.inputs.push_back(int64_constant(g, g.values[p].name + "/axes", {axis}, false));
        else ints_attr(s, "axes", {axis});
        nodes.push_back(std::move(s));
        p = sq;
      }
    }
  }
  set_sequence(g, n.outputs[0], parts, x.dtype);
  replace_node(g, ni, std::move(nodes));
  return true;
}

bool concat_expand(Graph& g, int ni) {
  const Node n = g.nodes[ni];
  const Elements e = elements_of(g, n, 0);
  if (e.empty()) fail(g, n, "concatenates an empty sequence");
  if (!n.has("axis")) fail(g, n, "attribute 'axis' is required");
  const int64_t axis = n.attr_int("axis", 0);
  const bool new_axis = n.attr_int("new_axis", 0) != 0;
  std::vector<Node> nodes;
  Elements ins = e;
  if (new_axis) {
    const Value& first = g.values[e[0]];
    if (!first.shape_known) return false;
    const int64_t r = static_cast<int64_t>(first.shape.size()) + 1;
    if (axis < -r || axis >= r) fail(g, n, "axis " + std::to_string(axis) + " is out of range for new_axis on rank " + std::to_string(r - 1));
    const int64_t a = axis < 0 ? axis + r : axis;
    for (size_t k = 0; k < e.size(); ++k) {
      const int u = g.add_value(n.name + "/unsqueezed" + std::to_string(k));
      Node un = make_node("Unsqueeze", n.name + "/unsqueeze" + std::to_string(k), {e[k]}, {u});
      if (g.opset() >= 13) un.inputs.push_back(int64_constant(g, n.name + "/axes" + std::to_string(k), {a}, false));
      else ints_attr(un, "axes", {a});
      nodes.push_back(std::move(un));
      ins[k] = u;
    }
    Node c = make_node("Concat", n.name, ins, {n.outputs[0]});
    int_attr(c, "axis", a);
    nodes.push_back(std::move(c));
  } else {
    Node c = make_node("Concat", n.name, ins, {n.outputs[0]});
    int_attr(c, "axis", axis);
    nodes.push_back(std::move(c));
  }
  replace_node(g, ni, std::move(nodes));
  return true;
}

// ---- SequenceMap ---------------------------------------------------------------------------------
bool map_expand(Graph& g, int ni) {
  const Node n = g.nodes[ni];
  auto it = n.attrs.find("body");
  if (it == n.attrs.end() || it->second.kind != Attribute::Kind::Graph || !it->second.g)
    fail(g, n, "attribute 'body' (a graph) is missing");
  const Graph& body = *it->second.g;
  const int formal = formal_inputs(n);
  const Elements& first = elements_of(g, n, 0);
  const size_t count = first.size();
  for (int k = 1; k < formal; ++k) {
    if (n.inputs[k] < 0) fail(g, n, "input " + std::to_string(k) + " is missing");
    const Value& v = g.values[n.inputs[k]];
    if (v.sequence && v.sequence->size() != count)
      fail(g, n, "sequence '" + v.name + "' has " + std::to_string(v.sequence->size()) + " elements, '" +
                     g.values[n.inputs[0]].name + "' has " + std::to_string(count));
  }
  if (static_cast<int>(body.inputs.size()) != formal)
    fail(g, n, "the body has " + std::to_string(body.inputs.size()) + " inputs, the node " + std::to_string(formal));
  if (body.outputs.size() != n.outputs.size())
    fail(g, n, "the body has " + std::to_string(body.outputs.size()) + " outputs, the node " + std::to_string(n.outputs.size()));
  const std::vector<int> caps(n.inputs.begin() + formal, n.inputs.end());
  std::vector<Elements> outs(n.outputs.size());
  std::vector<Node> nodes;
  for (size_t i = 0; i < count; ++i) {
    std::vector<int> ins;
    for (int k = 0; k < formal; ++k) {
      const Value& v = g.values[n.inputs[k]];
      ins.push_back(v.sequence ? (*v.sequence)[i] : n.inputs[k]);
    }
    std::vector<int> o;
    std::vector<Node> copy = copy_subgraph(g, body, ins, caps, n.name + "/" + std::to_string(i), &o);
    nodes.insert(nodes.end(), std::make_move_iterator(copy.begin()), std::make_move_iterator(copy.end()));
    for (size_t k = 0; k < o.size(); ++k) outs[k].push_back(o[k]);
  }
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    if (n.outputs[k] < 0) continue;
    DType t = g.values[body.outputs[k]].dtype;
    if (!outs[k].empty()) t = g.values[outs[k][0]].dtype;
    set_sequence(g, n.outputs[k], outs[k], t);
  }
  replace_node(g, ni, std::move(nodes));
  return true;
}

void sequence_infer(OpContext& ctx) {
  for (int k = 0; k < ctx.num_inputs(); ++k)
    if (ctx.has_input(k) && !ctx.in(k).sequence && !ctx.is_const(k) && ctx.node().op_type != "SplitToSequence")
      ctx.unsupported("position input '" + ctx.in(k).name + "' is computed on the device; this plan cannot read it back");
  ctx.unsupported("internal: the sequence op was not expanded");
}

}  // namespace

void add_sequence_ops(std::vector<OpDef>& t) {
  t.push_back(OpDef("SequenceEmpty", 11, sequence_infer).expands(empty_expand).sequences());
  t.push_back(OpDef("SequenceConstruct", 11, sequence_infer).expands(construct_expand).sequences());
  t.push_back(OpDef("SequenceInsert", 11, sequence_infer).expands(insert_expand).value_inputs({2}).sequences());
  t.push_back(OpDef("SequenceErase", 11, sequence_infer).expands(erase_expand).value_inputs({1}).sequences());
  t.push_back(OpDef("SequenceAt", 11, sequence_infer).expands(at_expand).value_inputs({1}).sequences());
  t.push_back(OpDef("SequenceLength", 11, sequence_infer).expands(length_expand).sequences());
  t.push_back(OpDef("SplitToSequence", 11, sequence_infer).expands(split_expand).value_inputs({1}).sequences());
  t.push_back(OpDef("ConcatFromSequence", 11, sequence_infer).expands(concat_expand).sequences());
  t.push_back(OpDef("SequenceMap", 17, sequence_infer).expands(map_expand).sequences());
}

}  // namespace oi
