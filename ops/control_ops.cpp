// Control flow: If, Loop and Scan. None of them has a kernel: the compiler expands each into the
// nodes it stands for once the values that steer it are known (OpTraits::expand) -- If into the
// branch taken, Loop one iteration at a time, Scan into all of its steps -- and the expanded nodes
// are planned, fused and tuned like any others. A condition or trip count computed on the device
// ends a plan segment there: the session reads it back (a few bytes) and plans the rest for it
// (runtime/exec/segments.hpp), caching that plan by the value read.
#include <algorithm>

#include "ops/core/op_def.hpp"
#include "runtime/ir/host_math.hpp"
#include "runtime/ir/subgraph.hpp"

namespace oi {

namespace {

using ocl_infer::ModelError;

// Loops unroll into the plan; past this many iterations the plan would be absurdly long.
constexpr int64_t kMaxIterations = 4096;

const Graph& subgraph(const Graph& g, const Node& n, const std::string& attr) {
  auto it = n.attrs.find(attr);
  if (it == n.attrs.end() || it->second.kind != Attribute::Kind::Graph || !it->second.g)
    throw ModelError(describe_node(g, n) + ": attribute '" + attr + "' (a graph) is missing");
  return *it->second.g;
}

// A constant scalar's value as int64 (bool and integer types); `what` names it in errors.
int64_t scalar_of(const Graph& g, const Node& n, int value, const std::string& what) {
  const Value& v = g.values[value];
  if (v.data->numel() != 1)
    throw ModelError(describe_node(g, n) + ": " + what + " '" + v.name + "' must hold one element, it has shape " +
                     ocl_infer::shape_to_string(v.shape));
  if (v.dtype == DType::Float32 || v.dtype == DType::Float64 || v.dtype == DType::Float16)
    throw ModelError(describe_node(g, n) + ": " + what + " '" + v.name + "' must be a bool or an integer");
  return host_get_i(*v.data, 0);
}

Node identity(const std::string& name, int in, int out) { return make_node("Identity", name, {in}, {out}); }

int int64_constant(Graph& g, const std::string& name, std::vector<int64_t> v, bool scalar) {
  Tensor t(DType::Int64, scalar ? Shape{} : Shape{static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return g.add_constant(name, std::move(t));
}

// Unsqueeze `in` at `axis`, in the form the graph's opset defines.
Node unsqueeze(Graph& g, const std::string& name, int in, int64_t axis, int out) {
  if (g.opset() >= 13) return make_node("Unsqueeze", name, {in, int64_constant(g, name + "/axes", {axis}, false)}, {out});
  Node n = make_node("Unsqueeze", name, {in}, {out});
  Attribute a;
  a.kind = Attribute::Kind::Ints;
  a.ints = {axis};
  n.attrs["axes"] = a;
  return n;
}

Node concat(const std::string& name, std::vector<int> ins, int64_t axis, int out) {
  Node n = make_node("Concat", name, std::move(ins), {out});
  Attribute a;
  a.kind = Attribute::Kind::Int;
  a.i = axis;
  n.attrs["axis"] = a;
  return n;
}

// Stacks `parts` along a new axis `axis` into `out` (Unsqueeze each, then one Concat).
void stack(Graph& g, std::vector<Node>& nodes, const std::string& name, const std::vector<int>& parts, int64_t axis,
           int out) {
  std::vector<int> un;
  for (size_t k = 0; k < parts.size(); ++k) {
    const int u = g.add_value(name + "/unsqueezed" + std::to_string(k));
    nodes.push_back(unsqueeze(g, name + "/unsqueeze" + std::to_string(k), parts[k], axis, u));
    un.push_back(u);
  }
  nodes.push_back(concat(name + "/concat", un, axis, out));
}

// ---- If ------------------------------------------------------------------------------------
void check_if(const Graph& g, const Node& n) {
  for (const char* b : {"then_branch", "else_branch"}) {
    const Graph& br = subgraph(g, n, b);
    if (br.outputs.size() != n.outputs.size())
      throw ModelError(describe_node(g, n) + ": " + b + " has " + std::to_string(br.outputs.size()) +
                       " outputs, the node has " + std::to_string(n.outputs.size()));
    if (!br.inputs.empty()) throw ModelError(describe_node(g, n) + ": " + b + " must not have inputs");
  }
}

bool if_expand(Graph& g, int ni) {
  const Node n = g.nodes[ni];
  check_if(g, n);
  if (n.inputs.empty() || n.inputs[0] < 0 || !g.values[n.inputs[0]].data) return false;
  const bool cond = scalar_of(g, n, n.inputs[0], "the condition") != 0;
  const Graph& branch = subgraph(g, n, cond ? "then_branch" : "else_branch");
  std::vector<int> caps(n.inputs.begin() + formal_inputs(n), n.inputs.end());
  std::vector<int> outs;
  std::vector<Node> nodes =
      copy_subgraph(g, branch, {}, caps, n.name + (cond ? "/then" : "/else"), &outs);
  for (size_t k = 0; k < n.outputs.size(); ++k)
    if (n.outputs[k] >= 0) nodes.push_back(identity(n.name + "/output" + std::to_string(k), outs[k], n.outputs[k]));
  replace_node(g, ni, std::move(nodes));
  return true;
}

void if_infer(OpContext& ctx) {
  check_if(ctx.graph(), ctx.node());
  ctx.unsupported("the condition '" + ctx.in(0).name +
                  "' is computed on the device; this plan cannot read it back (plans made outside a session)");
}

// ---- Loop ----------------------------------------------------------------------------------
// An unrolled Loop node carries its progress in two attributes: "oi.iteration" (iterations done)
// and "oi.parts" (the scan-output values of those iterations, kept as trailing inputs after the
// captures so that they stay alive). Its other inputs are the loop-carried values so far.
struct LoopLayout {
  int carried = 0;     // N
  int scan = 0;        // K
  int captures = 0;    // C
  int parts = 0;       // trailing inputs: iterations done x K
  int64_t iteration = 0;
};

LoopLayout loop_layout(const Graph& g, const Node& n) {
  const Graph& body = subgraph(g, n, "body");
  LoopLayout l;
  l.captures = static_cast<int>(body.captures.size());
  l.parts = static_cast<int>(n.attr_int("oi.parts", 0));
  l.iteration = n.attr_int("oi.iteration", 0);
  const int formal = static_cast<int>(n.inputs.size()) - l.captures - l.parts;
  l.carried = formal - 2;
  if (l.carried < 0) throw ModelError(describe_node(g, n) + ": a Loop has at least two inputs (M and cond)");
  if (static_cast<int>(body.inputs.size()) != 2 + l.carried)
    throw ModelError(describe_node(g, n) + ": the body has " + std::to_string(body.inputs.size()) +
                     " inputs, it needs 2 + " + std::to_string(l.carried) + " (iteration, condition, carried values)");
  l.scan = static_cast<int>(body.outputs.size()) - 1 - l.carried;
  if (l.scan < 0)
    throw ModelError(describe_node(g, n) + ": the body has " + std::to_string(body.outputs.size()) +
                     " outputs, it needs at least 1 + " + std::to_string(l.carried));
  if (static_cast<int>(n.outputs.size()) != l.carried + l.scan)
    throw ModelError(describe_node(g, n) + ": the node has " + std::to_string(n.outputs.size()) +
                     " outputs, the body makes " + std::to_string(l.carried + l.scan));
  return l;
}

bool loop_expand(Graph& g, int ni) {
  const Node n = g.nodes[ni];
  const LoopLayout l = loop_layout(g, n);
  const bool has_m = n.inputs[0] >= 0, has_cond = n.inputs[1] >= 0;
  if (!has_m && !has_cond)
    throw ModelError(describe_node(g, n) + ": a Loop without a trip count and without a condition never ends");
  if ((has_m && !g.values[n.inputs[0]].data) || (has_cond && !g.values[n.inputs[1]].data)) return false;
  const int64_t m = has_m ? scalar_of(g, n, n.inputs[0], "the trip count M") : INT64_MAX;
  const bool cond = has_cond ? scalar_of(g, n, n.inputs[1], "the condition") != 0 : true;
  const Graph& body = subgraph(g, n, "body");
  const int first_capture = 2 + l.carried, first_part = first_capture + l.captures;
  std::vector<Node> nodes;
  if (l.iteration >= m || !cond) {
    for (int k = 0; k < l.carried; ++k)
      if (n.outputs[k] >= 0)
        nodes.push_back(identity(n.name + "/final" + std::to_string(k), n.inputs[2 + k], n.outputs[k]));
    for (int j = 0; j < l.scan; ++j) {
      const int out = n.outputs[l.carried + j];
      if (out < 0) continue;
      const std::string name = n.name + "/scan" + std::to_string(j);
      if (l.iteration == 0) {
        // No iteration ran: an empty tensor of the body's declared type.
        const DType t = body.values[body.outputs[1 + l.carried + j]].dtype;
        if (t == DType::Undefined)
          throw ocl_infer::UnsupportedError(describe_node(g, n) +
                                            ": the loop ran no iteration and the body does not declare the type of "
                                            "scan output " + std::to_string(j));
        nodes.push_back(identity(name, g.add_constant(name + "/empty", Tensor(t, {0})), out));
        continue;
      }
      std::vector<int> parts;
      for (int64_t it = 0; it < l.iteration; ++it) parts.push_back(n.inputs[first_part + it * l.scan + j]);
      stack(g, nodes, name, parts, 0, out);
    }
    replace_node(g, ni, std::move(nodes));
    return true;
  }
  if (l.iteration >= kMaxIterations)
    throw ocl_infer::UnsupportedError(describe_node(g, n) + ": more than " + std::to_string(kMaxIterations) +
                                      " iterations (loops are unrolled into the plan)");
  const std::string prefix = n.name + "/" + std::to_string(l.iteration);
  std::vector<int> ins{int64_constant(g, prefix + "/iteration", {l.iteration}, true)};
  if (has_cond) {
    ins.push_back(n.inputs[1]);
  } else {
    Tensor t(DType::Bool, {});
    t.bytes[0] = 1;
    ins.push_back(g.add_constant(prefix + "/true", std::move(t)));
  }
  for (int k = 0; k < l.carried; ++k) ins.push_back(n.inputs[2 + k]);
  std::vector<int> caps(n.inputs.begin() + first_capture, n.inputs.begin() + first_part);
  std::vector<int> outs;
  nodes = copy_subgraph(g, body, ins, caps, prefix, &outs);
  Node next = n;
  next.inputs = {n.inputs[0], has_cond ? outs[0] : -1};
  for (int k = 0; k < l.carried; ++k) next.inputs.push_back(outs[1 + k]);
  next.inputs.insert(next.inputs.end(), caps.begin(), caps.end());
  next.inputs.insert(next.inputs.end(), n.inputs.begin() + first_part, n.inputs.end());
  for (int j = 0; j < l.scan; ++j) next.inputs.push_back(outs[1 + l.carried + j]);
  next.attrs["oi.iteration"].kind = Attribute::Kind::Int;
  next.attrs["oi.iteration"].i = l.iteration + 1;
  next.attrs["oi.parts"].kind = Attribute::Kind::Int;
  next.attrs["oi.parts"].i = l.parts + l.scan;
  nodes.push_back(std::move(next));
  replace_node(g, ni, std::move(nodes));
  return true;
}

void loop_infer(OpContext& ctx) {
  loop_layout(ctx.graph(), ctx.node());
  ctx.unsupported("the trip count or condition is computed on the device; this plan cannot read it back (plans "
                  "made outside a session)");
}

// ---- Scan (opset 9+) -----------------------------------------------------------------------
bool scan_expand(Graph& g, int ni) {
  const Node n = g.nodes[ni];
  const Graph& body = subgraph(g, n, "body");
  const int formal = formal_inputs(n);
  const int m = static_cast<int>(n.attr_int("num_scan_inputs", -1));
  if (m < 1 || m > formal) throw ModelError(describe_node(g, n) + ": num_scan_inputs must be in [1, inputs]");
  const int states = formal - m;
  const int k_out = static_cast<int>(n.outputs.size()) - states;
  if (k_out < 0 || static_cast<int>(body.outputs.size()) != states + k_out ||
      static_cast<int>(body.inputs.size()) != states + m)
    throw ModelError(describe_node(g, n) + ": the body's inputs and outputs do not match the node's");
  auto list = [&](const char* attr, int count) {
    std::vector<int64_t> v = n.attr_ints(attr, std::vector<int64_t>(count, 0));
    if (static_cast<int>(v.size()) != count)
      throw ModelError(describe_node(g, n) + ": " + attr + " must have " + std::to_string(count) + " entries");
    return v;
  };
  const auto in_axes = list("scan_input_axes", m), in_dirs = list("scan_input_directions", m);
  const auto out_axes = list("scan_output_axes", k_out), out_dirs = list("scan_output_directions", k_out);
  int64_t len = -1;
  std::vector<int64_t> axis(m);
  for (int j = 0; j < m; ++j) {
    const Value& x = g.values[n.inputs[states + j]];
    const int64_t r = static_cast<int64_t>(x.shape.size());
    if (in_axes[j] < -r || in_axes[j] >= r)
      throw ModelError(describe_node(g, n) + ": scan_input_axes[" + std::to_string(j) + "] is out of range");
    axis[j] = in_axes[j] < 0 ? in_axes[j] + r : in_axes[j];
    const int64_t l = x.shape[axis[j]];
    if (len >= 0 && l != len) throw ModelError(describe_node(g, n) + ": the scan inputs differ in sequence length");
    len = l;
  }
  if (len == 0) throw ocl_infer::UnsupportedError(describe_node(g, n) + ": a scan over a sequence of length 0");
  if (len > kMaxIterations)
    throw ocl_infer::UnsupportedError(describe_node(g, n) + ": a sequence longer than " +
                                      std::to_string(kMaxIterations) + " steps (scans are unrolled into the plan)");
  std::vector<int> caps(n.inputs.begin() + formal, n.inputs.end());
  std::vector<int> state(n.inputs.begin(), n.inputs.begin() + states);
  std::vector<std::vector<int>> elems(k_out);
  std::vector<Node> nodes;
  for (int64_t t = 0; t < len; ++t) {
    const std::string prefix = n.name + "/" + std::to_string(t);
    std::vector<int> ins = state;
    for (int j = 0; j < m; ++j) {
      const int64_t at = in_dirs[j] ? len - 1 - t : t;
      const int e = g.add_value(prefix + "/x" + std::to_string(j));
      Node gather = make_node("Gather", prefix + "/slice" + std::to_string(j),
                              {n.inputs[states + j], int64_constant(g, prefix + "/index" + std::to_string(j), {at}, true)},
                              {e});
      gather.attrs["axis"].kind = Attribute::Kind::Int;
      gather.attrs["axis"].i = axis[j];
      nodes.push_back(std::move(gather));
      ins.push_back(e);
    }
    std::vector<int> outs;
    std::vector<Node> step = copy_subgraph(g, body, ins, caps, prefix, &outs);
    nodes.insert(nodes.end(), std::make_move_iterator(step.begin()), std::make_move_iterator(step.end()));
    state.assign(outs.begin(), outs.begin() + states);
    for (int j = 0; j < k_out; ++j) elems[j].push_back(outs[states + j]);
  }
  for (int k = 0; k < states; ++k)
    if (n.outputs[k] >= 0) nodes.push_back(identity(n.name + "/final" + std::to_string(k), state[k], n.outputs[k]));
  for (int j = 0; j < k_out; ++j) {
    if (n.outputs[states + j] < 0) continue;
    std::vector<int> parts = elems[j];
    if (out_dirs[j]) std::reverse(parts.begin(), parts.end());
    stack(g, nodes, n.name + "/scan" + std::to_string(j), parts, out_axes[j], n.outputs[states + j]);
  }
  replace_node(g, ni, std::move(nodes));
  return true;
}

void scan_infer(OpContext& ctx) { ctx.fail("internal: a Scan node was not expanded"); }

}  // namespace

void add_control_ops(std::vector<OpDef>& t) {
  t.push_back(OpDef("If", 1, if_infer).value_inputs({0}).expands(if_expand).sequences());
  t.push_back(OpDef("Loop", 1, loop_infer).value_inputs({0, 1}).expands(loop_expand).sequences());
  t.push_back(OpDef("Scan", 9, scan_infer).expands(scan_expand));
}

}  // namespace oi
