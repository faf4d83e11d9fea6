// BatchNormalization (and per-channel constant Mul / Add) after a Conv, ConvTranspose or Gemm is
// folded into that node's weights and bias, computed in double precision:
//   s = gamma / sqrt(var + eps);  W' = W * s (per output channel);  b' = (b - mean) * s + beta.
#include <cmath>

#include "ops/core/op_def.hpp"
#include "runtime/compiler/optimizer.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

namespace {

// The producer's per-channel affine trait and its channel count, or -1 when `p` cannot absorb an
// affine (no trait, already fused work, non-constant weights, ...).
int64_t out_channels(const Graph& g, int pi, const ChannelAffine** affine) {
  const Node& p = g.nodes[pi];
  const OpDef* def = find_op(g, p);
  if (!def || !def->traits.affine || !p.epilogue.empty()) return -1;
  const ChannelAffine& a = *def->traits.affine;
  if (static_cast<int>(p.inputs.size()) <= a.weight_input || !is_const_f32(g, p.inputs[a.weight_input])) return -1;
  if (static_cast<int>(p.inputs.size()) > a.bias_input && p.inputs[a.bias_input] >= 0 &&
      !is_const_f32(g, p.inputs[a.bias_input]))
    return -1;
  *affine = &a;
  return a.channels(OpContext(g, pi));
}

// Rewrites p so that its output becomes out * scale[c] + shift[c].
void apply_affine(Graph& g, int pi, const ChannelAffine& a, const std::vector<double>& scale,
                  const std::vector<double>& shift) {
  const int64_t C = static_cast<int64_t>(scale.size());
  Tensor nw = *g.values[g.nodes[pi].inputs[a.weight_input]].data;
  a.scale_weights(OpContext(g, pi), nw, scale);
  // The old bias (times the node's factor for it, e.g. Gemm's beta), per channel.
  std::vector<double> bias(C, 0.0);
  const Node& p = g.nodes[pi];
  if (static_cast<int>(p.inputs.size()) > a.bias_input && p.inputs[a.bias_input] >= 0) {
    const Tensor& b = *g.values[p.inputs[a.bias_input]].data;
    const double factor = a.bias_scale ? a.bias_scale(OpContext(g, pi)) : 1.0;
    for (int64_t c = 0; c < C; ++c) bias[c] = factor * host_get_f(b, b.numel() == 1 ? 0 : c);
  }
  Tensor nb(DType::Float32, {C});
  for (int64_t c = 0; c < C; ++c) nb.data<float>()[c] = static_cast<float>(bias[c] * scale[c] + shift[c]);
  const std::string wname = g.values[p.inputs[a.weight_input]].name + "/folded", bname = p.name + "/folded_bias";
  const int wid = g.add_constant(wname, std::move(nw));
  const int bid = g.add_constant(bname, std::move(nb));
  Node& q = g.nodes[pi];
  q.inputs[a.weight_input] = wid;
  if (static_cast<int>(q.inputs.size()) <= a.bias_input) q.inputs.resize(a.bias_input + 1, -1);
  q.inputs[a.bias_input] = bid;
  if (a.bias_scale_attr) {
    Attribute one;
    one.kind = Attribute::Kind::Float;
    one.f = 1.f;
    q.attrs[a.bias_scale_attr] = one;
  }
}

}  // namespace

int pass_fold_batchnorm(Graph& g, std::string* detail) {
  int bn = 0, mul = 0, add = 0;
  for (auto& n : g.nodes) {
    if (n.removed || n.inputs.empty() || n.inputs[0] < 0 || n.outputs.empty() || n.outputs[0] < 0) continue;
    const bool is_bn = n.op_type == "BatchNormalization";
    if (!is_bn && n.op_type != "Mul" && n.op_type != "Add") continue;
    // The producer: for Mul/Add the non-constant operand.
    int x = n.inputs[0], other = n.inputs.size() > 1 ? n.inputs[1] : -1;
    if (!is_bn && g.values[x].data) std::swap(x, other);
    int pi = g.values[x].producer;
    if (pi < 0 || g.nodes[pi].removed || g.sole_reader(x) != &n - &g.nodes[0]) continue;
    const ChannelAffine* affine = nullptr;
    int64_t C = out_channels(g, pi, &affine);
    if (C <= 0 || g.values[g.nodes[pi].outputs[0]].dtype != DType::Float32) continue;
    const size_t out_rank = g.values[x].shape.size();
    if (g.values[n.outputs[0]].shape != g.values[x].shape) continue;  // must not broadcast up
    std::vector<double> scale(C, 1.0), shift(C, 0.0);
    if (is_bn) {
      if (n.inputs.size() < 5 || n.attr_int("training_mode", 0) != 0) continue;
      bool consts = true;
      for (int k = 1; k < 5; ++k) consts &= is_const_f32(g, n.inputs[k]) && numel(g.values[n.inputs[k]].shape) == C;
      if (!consts) continue;
      bool extra_outputs = false;
      for (size_t k = 1; k < n.outputs.size(); ++k) extra_outputs |= n.outputs[k] >= 0 && g.is_read(n.outputs[k]);
      if (extra_outputs) continue;
      const double eps = n.attr_float("epsilon", 1e-5f);
      const Tensor &gamma = *g.values[n.inputs[1]].data, &beta = *g.values[n.inputs[2]].data,
                   &mean = *g.values[n.inputs[3]].data, &var = *g.values[n.inputs[4]].data;
      for (int64_t c = 0; c < C; ++c) {
        scale[c] = host_get_f(gamma, c) / std::sqrt(host_get_f(var, c) + eps);
        shift[c] = host_get_f(beta, c) - host_get_f(mean, c) * scale[c];
      }
    } else {
      std::vector<double> v = per_channel(g, other, C, out_rank);
      if (v.empty()) continue;
      if (n.op_type == "Mul") scale = v;
      else shift = v;
    }
    apply_affine(g, pi, *affine, scale, shift);
    Node& p = g.nodes[pi];
    absorb(p, n);
    p.outputs[0] = n.outputs[0];
    g.values[p.outputs[0]].producer = pi;
    n.removed = true;
    (is_bn ? bn : n.op_type == "Mul" ? mul : add)++;
  }
  if (detail)
    *detail = std::to_string(bn) + " BatchNormalization, " + std::to_string(mul) + " Mul, " + std::to_string(add) +
              " Add folded into Conv/ConvTranspose/Gemm weights";
  return bn + mul + add;
}

}  // namespace oi
