// Activations fused into the conv / gemm / matmul that produces their input, including the
// decomposed patterns exporters emit: x*Sigmoid(x) (SiLU), x*HardSigmoid(x) and
// x*Clip(x+3,0,6)/6 (HardSwish) and the Erf-based GELU  x * 0.5 * (1 + erf(x / sqrt(2))).
#include <algorithm>
#include <cmath>

#include "ops/core/activation.hpp"
#include "ops/core/op_def.hpp"
#include "runtime/compiler/optimizer.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

namespace {

// The scalar value of a constant input, or NaN.
double scalar(const Graph& g, int v) {
  if (v < 0 || !g.values[v].data || numel(g.values[v].shape) != 1) return NAN;
  return host_get_f(*g.values[v].data, 0);
}

bool near(double a, double b) { return std::fabs(a - b) <= 1e-4 * std::max(1.0, std::fabs(b)); }

// x*Gate(x) where Gate is Sigmoid or HardSigmoid: the two readers of x are the gate and a Mul of
// x with the gate's output. Returns the Mul and sets the epilogue.
int gated(const Graph& g, int x, int gate_i, int mul_i, Epilogue* e, std::vector<int>* gone) {
  const Node &gate = g.nodes[gate_i], &mul = g.nodes[mul_i];
  if (mul.op_type != "Mul" || mul.inputs.size() != 2 || gate.outputs.empty()) return -1;
  int go = gate.outputs[0];
  if (!((mul.inputs[0] == x && mul.inputs[1] == go) || (mul.inputs[1] == x && mul.inputs[0] == go))) return -1;
  if (g.sole_reader(go) != mul_i) return -1;
  // x * Sigmoid(x) is SiLU; x * HardSigmoid(x) is HardSwish with the gate's parameters.
  Epilogue gate_act;
  if (!activation_of_node(g, gate, &gate_act)) return -1;
  if (gate_act.act == activation_for_op("Sigmoid")) *e = Epilogue{activation_named("Silu"), 0, 0, e->residual};
  else if (gate_act.act == activation_for_op("HardSigmoid"))
    *e = Epilogue{activation_named("HardSwish"), gate_act.alpha, gate_act.beta, e->residual};
  else return -1;
  gone->assign({gate_i, mul_i});
  return mul_i;
}

// The other operand of a two-input node that reads v (-1 if it does not read v exactly once).
int other_operand(const Node& n, int v) {
  if (n.inputs.size() != 2 || n.inputs[0] == n.inputs[1]) return -1;
  return n.inputs[0] == v ? n.inputs[1] : n.inputs[1] == v ? n.inputs[0] : -1;
}

// HardSwish spelled out, as paddle2onnx and some TensorFlow converters emit it:
//   t = x + 3; c = Clip(t, 0, 6); then m = x * c; y = m / 6 (or m * (1/6))
//                                 or    d = c / 6 (or c * (1/6)); y = x * d.
// x * Clip(x + 3, 0, 6) / 6 is HardSwish with alpha 1/6, beta 1/2.
int hard_swish(const Graph& g, int x, const std::vector<int>& rd, Epilogue* e, std::vector<int>* gone) {
  auto is_sixth = [&](const Node& n, int v) {  // n is v / 6 or v * (1/6)
    const int o = other_operand(n, v);
    if (o < 0) return false;
    if (n.op_type == "Div") return n.inputs[0] == v && near(scalar(g, o), 6.0);
    return n.op_type == "Mul" && near(scalar(g, o), 1.0 / 6.0);
  };
  for (int k = 0; k < 2; ++k) {
    const Node &add = g.nodes[rd[k]], &mul = g.nodes[rd[1 - k]];
    if (add.op_type != "Add" || mul.op_type != "Mul" || !near(scalar(g, other_operand(add, x)), 3.0)) continue;
    const int clip_i = g.sole_reader(add.outputs[0]);
    Epilogue clip;
    if (clip_i < 0 || !activation_of_node(g, g.nodes[clip_i], &clip) || clip.act != activation_for_op("Clip") ||
        g.nodes[clip_i].inputs[0] != add.outputs[0] || clip.alpha != 0.0f || clip.beta != 6.0f)
      continue;
    const int c = g.nodes[clip_i].outputs[0];
    const int mo = mul.outputs[0];
    int last = -1, scale_i = -1;
    if (other_operand(mul, x) == c && g.sole_reader(c) == rd[1 - k]) {
      scale_i = g.sole_reader(mo);  // x * c, then / 6
      if (scale_i >= 0 && is_sixth(g.nodes[scale_i], mo)) last = scale_i;
    } else {
      scale_i = g.sole_reader(c);  // c / 6, then x * that
      if (scale_i >= 0 && is_sixth(g.nodes[scale_i], c) && other_operand(mul, x) == g.nodes[scale_i].outputs[0] &&
          g.sole_reader(g.nodes[scale_i].outputs[0]) == rd[1 - k])
        last = rd[1 - k];
    }
    // A constant of higher rank would broadcast the result beyond x's shape.
    if (last < 0 || g.values[g.nodes[last].outputs[0]].shape != g.values[x].shape) continue;
    *e = Epilogue{activation_named("HardSwish"), 1.0f / 6, 0.5f, e->residual};
    gone->assign({rd[k], clip_i, rd[1 - k], scale_i});
    return last;
  }
  return -1;
}

// GELU as exported by PyTorch: d = x / 1.41421; e = Erf(d); a = e + 1; m = x * a; y = m * 0.5.
int gelu(const Graph& g, int x, const std::vector<int>& rd, Epilogue* e, std::vector<int>* gone) {
  int div_i = -1, mul_i = -1;
  for (int r : rd) {
    const Node& n = g.nodes[r];
    if (n.op_type == "Div" && n.inputs.size() == 2 && n.inputs[0] == x && near(scalar(g, n.inputs[1]), std::sqrt(2.0))) div_i = r;
    else if (n.op_type == "Mul" && n.inputs.size() == 2 && (n.inputs[0] == x || n.inputs[1] == x)) mul_i = r;
  }
  if (div_i < 0 || mul_i < 0) return -1;
  int erf_i = g.sole_reader(g.nodes[div_i].outputs[0]);
  if (erf_i < 0 || g.nodes[erf_i].op_type != "Erf") return -1;
  int add_i = g.sole_reader(g.nodes[erf_i].outputs[0]);
  if (add_i < 0 || g.nodes[add_i].op_type != "Add") return -1;
  const Node& add = g.nodes[add_i];
  int eo = g.nodes[erf_i].outputs[0];
  int one = add.inputs[0] == eo ? add.inputs[1] : add.inputs[0];
  if (!near(scalar(g, one), 1.0)) return -1;
  const Node& mul = g.nodes[mul_i];
  int other = mul.inputs[0] == x ? mul.inputs[1] : mul.inputs[0];
  if (other != add.outputs[0] || g.sole_reader(add.outputs[0]) != mul_i) return -1;
  int half_i = g.sole_reader(mul.outputs[0]);
  if (half_i < 0 || g.nodes[half_i].op_type != "Mul") return -1;
  const Node& half = g.nodes[half_i];
  int h = half.inputs[0] == mul.outputs[0] ? half.inputs[1] : half.inputs[0];
  if (!near(scalar(g, h), 0.5)) return -1;
  e->act = activation_named("Gelu");
  gone->assign({div_i, erf_i, add_i, mul_i, half_i});
  return half_i;
}

}  // namespace

int pass_fuse_activation(Graph& g, std::string* detail) {
  int fused = 0, patterns = 0;
  for (size_t pi = 0; pi < g.nodes.size(); ++pi) {
    Node& p = g.nodes[pi];
    if (p.removed || p.outputs.empty() || p.outputs[0] < 0 || p.epilogue.act) continue;
    const OpDef* def = find_op(g, p);
    if (!def || !def->traits.takes_epilogue) continue;
    const int x = p.outputs[0];
    if (g.values[x].dtype != DType::Float32 || g.is_output(x)) continue;
    // Every read of x must be part of the pattern: after fusion nothing writes x any more. A fused
    // residual read (x added by a later kernel's epilogue) keeps x alive, and so does a node that
    // reads x twice.
    const auto uses = g.uses(x);
    std::vector<int> rd;
    bool other_read = false;
    for (auto& u : uses) {
      other_read |= u.slot == Graph::kResidual;
      if (std::find(rd.begin(), rd.end(), u.node) == rd.end()) rd.push_back(u.node);
    }
    if (other_read || uses.size() != rd.size()) continue;
    Epilogue e = p.epilogue;
    std::vector<int> gone;
    int last = -1;
    if (rd.size() == 1 && activation_of_node(g, g.nodes[rd[0]], &e) && g.nodes[rd[0]].inputs[0] == x) {
      gone = {rd[0]};
      last = rd[0];
    } else if (rd.size() == 2) {
      for (int k = 0; k < 2 && last < 0; ++k) last = gated(g, x, rd[k], rd[1 - k], &e, &gone);
      if (last < 0) last = gelu(g, x, rd, &e, &gone);
      if (last < 0) last = hard_swish(g, x, rd, &e, &gone);
      if (last >= 0) ++patterns;
    }
    if (last < 0) continue;
    for (int r : gone) {
      absorb(p, g.nodes[r]);
      g.nodes[r].removed = true;
    }
    p.epilogue = e;
    p.outputs[0] = g.nodes[last].outputs[0];
    g.values[p.outputs[0]].producer = static_cast<int>(pi);
    ++fused;
  }
  if (detail)
    *detail = std::to_string(fused) + " activations fused into their producer (" + std::to_string(patterns) +
              " decomposed SiLU/HardSwish/GELU patterns)";
  return fused;
}

}  // namespace oi
