// The loss functions exporters emit: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
//
// Both are ONNX functions, and run as the ops their function bodies define (OpTraits::expand): the
// compiler replaces the node by
//   NLL:  ignore mask (Equal, Where), GatherElements of -input at the target class, Gather of the
//         class weights, Mul, then ReduceSum / ReduceMean / sum(loss) / sum(weights);
//   SCE:  LogSoftmax over the class axis, then the NLL above (log_prob is the LogSoftmax output),
// so every part runs on the device with the existing kernels, is fused and planned like any other
// node, and gives exactly what the spec's function body gives -- including NaN for a mean over
// targets that are all ignored (0 / 0). A target outside [0, C) that is not ignore_index fails the
// run with GatherElements' index error.
#include "ops/core/expansion.hpp"
#include "ops/core/op_def.hpp"
#include "runtime/ir/subgraph.hpp"

namespace oi {

namespace {

using ocl_infer::dtype_name;
using ocl_infer::ModelError;
using ocl_infer::shape_to_string;

[[noreturn]] void fail(const Graph& g, const Node& n, const std::string& msg) {
  throw ModelError(describe_node(g, n) + ": " + msg);
}

bool has(const Node& n, int slot) { return slot < static_cast<int>(n.inputs.size()) && n.inputs[slot] >= 0; }

// Builds the replacement nodes of one loss node.
// Checks the operands of an NLL-shaped loss: input [N, C, d...] float, target [N, d...] integer,
// weight [C] of input's type.
void check_operands(const Graph& g, const Node& n, const char* what) {
  if (!has(n, 0) || !has(n, 1)) fail(g, n, std::string(what) + " and the target are required");
  const Value& x = g.values[n.inputs[0]];
  const Value& t = g.values[n.inputs[1]];
  if (!is_float(x.dtype)) fail(g, n, std::string(what) + " must be a float tensor, not " + dtype_name(x.dtype));
  if (t.dtype != DType::Int32 && t.dtype != DType::Int64)
    fail(g, n, std::string("the target must be int32 or int64, not ") + dtype_name(t.dtype));
  if (x.shape.size() < 2) fail(g, n, std::string(what) + " must be [N, C, ...], not " + shape_to_string(x.shape));
  Shape want = x.shape;
  want.erase(want.begin() + 1);
  if (t.shape != want)
    fail(g, n, "the target has shape " + shape_to_string(t.shape) + ", " + what + " " + shape_to_string(x.shape) +
                   " needs " + shape_to_string(want));
  if (has(n, 2)) {
    const Value& w = g.values[n.inputs[2]];
    if (w.shape != Shape{x.shape[1]} || w.dtype != x.dtype)
      fail(g, n, "the weight must be a " + std::string(dtype_name(x.dtype)) + " tensor of shape [" +
                     std::to_string(x.shape[1]) + "], not " + dtype_name(w.dtype) + " " + shape_to_string(w.shape));
  }
  const std::string r = n.attr_string("reduction", "mean");
  if (r != "none" && r != "sum" && r != "mean") fail(g, n, "reduction must be none, sum or mean, not '" + r + "'");
}

bool shapes_known(const Graph& g, const Node& n) {
  for (int k = 0; k < 3; ++k)
    if (has(n, k) && !g.values[n.inputs[k]].shape_known) return false;
  return true;
}

// The NLL function body on log-probabilities `x` into `out`.
void nll(Graph& g, const Node& n, Expansion& e, int x, int out) {
  const Value& tv = g.values[n.inputs[1]];
  const DType tt = tv.dtype, ft = g.values[n.inputs[0]].dtype;  // x may be a new value, not yet typed
  const int target = n.inputs[1];
  int safe = target, keep = -1;  // keep: 1 where the target counts, as ft
  if (n.has("ignore_index")) {
    const int mask = e.node("Equal", {target, e.scalar("ignore_index", tt, static_cast<double>(n.attr_int("ignore_index", 0)))},
                            "ignored");
    safe = e.node("Where", {mask, e.scalar("zero_target", tt, 0), target}, "safe_target");
    keep = e.node("Where", {mask, e.scalar("zero", ft, 0), e.scalar("one", ft, 1)}, "kept");
  }
  const int picked = e.node("GatherElements", {x, e.reshape_axis("Unsqueeze", safe, 1, "target_N1")}, "picked");
  e.attr_int("axis", 1);
  const int loss = e.node("Neg", {e.reshape_axis("Squeeze", picked, 1, "picked_N")}, "loss_unweighted");
  int weight = keep;
  if (has(n, 2)) {
    weight = e.node("Gather", {n.inputs[2], safe}, "class_weight");
    if (keep >= 0) weight = e.node("Mul", {weight, keep}, "weight");
  }
  const std::string r = n.attr_string("reduction", "mean");
  const int weighted = weight >= 0 ? e.node("Mul", {loss, weight}, "loss", r == "none" ? out : -1) : loss;
  if (r == "none") {
    if (weighted == loss) e.node("Identity", {loss}, "loss", out);
    return;
  }
  if (r == "sum") {
    e.node("ReduceSum", {weighted}, "sum", out);
    e.attr_int("keepdims", 0);
  } else if (weight >= 0) {
    const int sum = e.node("ReduceSum", {weighted}, "sum");
    e.attr_int("keepdims", 0);
    const int wsum = e.node("ReduceSum", {weight}, "weight_sum");
    e.attr_int("keepdims", 0);
    e.node("Div", {sum, wsum}, "mean", out);
  } else {
    e.node("ReduceMean", {weighted}, "mean", out);
    e.attr_int("keepdims", 0);
  }
}

bool nll_expand(Graph& g, int ni) {
  const Node n = g.nodes[ni];
  if (!shapes_known(g, n)) return false;
  check_operands(g, n, "the input");
  if (n.outputs.empty() || n.outputs[0] < 0) fail(g, n, "output 0 is required");
  Expansion e(g, n);
  nll(g, n, e, n.inputs[0], n.outputs[0]);
  replace_node(g, ni, std::move(e.nodes));
  return true;
}

bool sce_expand(Graph& g, int ni) {
  const Node n = g.nodes[ni];
  if (!shapes_known(g, n)) return false;
  check_operands(g, n, "the scores");
  if (n.outputs.empty() || n.outputs[0] < 0) fail(g, n, "output 0 is required");
  Expansion e(g, n);
  const int scores = n.inputs[0];
  const int64_t rank = static_cast<int64_t>(g.values[scores].shape.size());
  const int log_prob_out = n.outputs.size() > 1 && n.outputs[1] >= 0 ? n.outputs[1] : -1;
  int log_prob;
  if (g.opset() >= 13 || rank == 2) {
    log_prob = e.node("LogSoftmax", {scores}, "log_prob", log_prob_out);
    e.attr_int("axis", 1);
  } else {
    // LogSoftmax before opset 13 flattens from its axis: move the classes last and back.
    std::vector<int64_t> perm{0}, back(static_cast<size_t>(rank));
    for (int64_t k = 2; k < rank; ++k) perm.push_back(k);
    perm.push_back(1);
    for (int64_t k = 0; k < rank; ++k) back[static_cast<size_t>(perm[k])] = k;
    auto transpose = [&](int in, const std::vector<int64_t>& p, const std::string& what, int out) {
      const int r = e.node("Transpose", {in}, what, out);
      Attribute a;
      a.kind = Attribute::Kind::Ints;
      a.ints = p;
      e.nodes.back().attrs["perm"] = a;
      return r;
    };
    const int last = transpose(scores, perm, "classes_last", -1);
    const int ls = e.node("LogSoftmax", {last}, "log_prob_last");
    e.attr_int("axis", rank - 1);
    log_prob = transpose(ls, back, "log_prob", log_prob_out);
  }
  nll(g, n, e, log_prob, n.outputs[0]);
  replace_node(g, ni, std::move(e.nodes));
  return true;
}

void loss_infer(OpContext& ctx) {
  check_operands(ctx.graph(), ctx.node(), ctx.node().op_type == "SoftmaxCrossEntropyLoss" ? "the scores" : "the input");
  ctx.fail("internal: the loss was not expanded");
}

}  // namespace

void add_loss_ops(std::vector<OpDef>& t) {
  for (int since : {12, 13}) {
    t.push_back(OpDef("NegativeLogLikelihoodLoss", since, loss_infer).expands(nll_expand));
    t.push_back(OpDef("SoftmaxCrossEntropyLoss", since, loss_infer).expands(sce_expand));
  }
}

}  // namespace oi
