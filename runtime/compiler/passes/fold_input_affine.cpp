// Constant Mul / Add chains in front of an unpadded Conv fold into its weights and bias:
//   x = a (.) u + c  (a, c per input channel or scalar)  =>  W'[m][ci] = W[m][ci] * a[ci],
//   b'[m] = b[m] + sum over ci of the group and the taps of W[m][ci][taps] * c[ci],
// computed in double precision. Zero padding would see c at the borders, so only convs without
// padding qualify (1x1 convs, VALID windows). PP-LCNet's "learnable affine blocks" (a scalar Mul
// and Add after every activation, PP-OCRv4's detector and recognizer) are the pattern: half of
// them feed a 1x1 conv. The rest, after a 1x1 conv, become its post-activation affine
// (pass_fuse_post_affine below).
#include <cmath>

#include "ops/core/op_def.hpp"
#include "runtime/compiler/optimizer.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

namespace {

// A Conv whose windows never leave the input: no explicit pads, or SAME with a 1x1 kernel.
bool unpadded(const Node& n, const Shape& w) {
  const std::string ap = n.attr_string("auto_pad", "NOTSET");
  if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (size_t d = 2; d < w.size(); ++d)
      if (w[d] != 1) return false;
    return true;
  }
  if (ap != "NOTSET" && ap != "VALID") return false;
  if (ap == "VALID") return true;
  for (int64_t p : n.attr_ints("pads", {}))
    if (p != 0) return false;
  return true;
}

}  // namespace

int pass_fold_input_affine(Graph& g, std::string* detail) {
  int convs = 0, folded = 0;
  for (size_t ci = 0; ci < g.nodes.size(); ++ci) {
    Node& conv = g.nodes[ci];
    if (conv.removed || conv.op_type != "Conv" || !(conv.domain.empty() || conv.domain == "ai.onnx")) continue;
    if (conv.inputs.size() < 2 || conv.inputs.size() > 3 || conv.inputs[0] < 0 || !is_const_f32(g, conv.inputs[1]))
      continue;
    if (conv.inputs.size() == 3 && conv.inputs[2] >= 0 && !is_const_f32(g, conv.inputs[2])) continue;
    const Shape& ws = g.values[conv.inputs[1]].shape;
    const Shape& xs = g.values[conv.inputs[0]].shape;
    if (ws.size() < 3 || xs.size() != ws.size() || !unpadded(conv, ws)) continue;
    const int64_t M = ws[0], Cg = ws[1], C = xs[1], G = conv.attr_int("group", 1);
    if (C <= 0 || G <= 0 || Cg * G != C || M % G != 0) continue;
    // Walk back through Mul / Add nodes with a constant per-channel operand, each read only by
    // the next: the conv's input is a (.) u + c with u the value before the chain.
    std::vector<double> a(C, 1.0), c(C, 0.0);
    std::vector<int> chain;
    int v = conv.inputs[0];
    while (chain.size() < 8) {
      const int pi = g.values[v].producer;
      if (pi < 0 || g.nodes[pi].removed || g.sole_reader(v) != (chain.empty() ? static_cast<int>(ci) : chain.back()))
        break;
      const Node& p = g.nodes[pi];
      if ((p.op_type != "Mul" && p.op_type != "Add") || !(p.domain.empty() || p.domain == "ai.onnx") ||
          p.inputs.size() != 2 || p.outputs.size() != 1)
        break;
      int u = p.inputs[0], k = p.inputs[1];
      if (g.values[u].data) std::swap(u, k);
      if (u < 0 || g.values[u].data || g.values[u].dtype != DType::Float32 || g.values[u].shape != xs) break;
      const std::vector<double> val = per_channel(g, k, C, xs.size());
      if (val.empty()) break;
      for (int64_t ch = 0; ch < C; ++ch) {
        if (p.op_type == "Add") c[ch] += a[ch] * val[ch];
        else a[ch] *= val[ch];
      }
      chain.push_back(pi);
      v = u;
    }
    if (chain.empty()) continue;
    const Tensor& w = *g.values[conv.inputs[1]].data;
    const int64_t taps = numel(ws) / (M * Cg), Mg = M / G;
    Tensor nw(DType::Float32, ws);
    Tensor nb(DType::Float32, {M});
    const bool has_bias = conv.inputs.size() == 3 && conv.inputs[2] >= 0;
    for (int64_t m = 0; m < M; ++m) {
      double bias = has_bias ? host_get_f(*g.values[conv.inputs[2]].data, m) : 0.0;
      const int64_t group = m / Mg;
      for (int64_t k = 0; k < Cg; ++k) {
        const int64_t ch = group * Cg + k;
        for (int64_t t = 0; t < taps; ++t) {
          const int64_t i = (m * Cg + k) * taps + t;
          const double wv = host_get_f(w, i);
          nw.data<float>()[i] = static_cast<float>(wv * a[ch]);
          bias += wv * c[ch];
        }
      }
      nb.data<float>()[m] = static_cast<float>(bias);
    }
    const int wid = g.add_constant(g.values[conv.inputs[1]].name + "/input_affine", std::move(nw));
    const int bid = g.add_constant(conv.name + "/input_affine_bias", std::move(nb));
    Node& q = g.nodes[ci];
    q.inputs.resize(3, -1);
    q.inputs[0] = v;
    q.inputs[1] = wid;
    q.inputs[2] = bid;
    // Profiles name the chain first, in graph order, then what the conv already covers.
    decltype(q.covers) covers;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const Node& p = g.nodes[*it];
      if (p.covers.empty()) covers.push_back({p.name, p.op_type});
      else covers.insert(covers.end(), p.covers.begin(), p.covers.end());
    }
    if (q.covers.empty()) covers.push_back({q.name, q.op_type});
    else covers.insert(covers.end(), q.covers.begin(), q.covers.end());
    q.covers = std::move(covers);
    for (int pi : chain) g.nodes[pi].removed = true;
    ++convs;
    folded += static_cast<int>(chain.size());
  }
  if (detail)
    *detail = std::to_string(folded) + " constant Mul/Add in front of " + std::to_string(convs) +
              " unpadded Conv folded into their weights";
  return folded;
}

// What fold_input_affine could not take (the chain feeds a padded conv, e.g. a depthwise one): a
// chain of scalar Mul / Add after an ungrouped 1x1 Conv becomes that conv's post-activation affine
// (Epilogue::post_scale / post_bias), which the pointwise kernel applies as it stores; other
// variants add one in-place pass (ops/conv_ops.cpp).
int pass_fuse_post_affine(Graph& g, std::string* detail) {
  int convs = 0, folded = 0;
  for (size_t pi = 0; pi < g.nodes.size(); ++pi) {
    Node& conv = g.nodes[pi];
    if (conv.removed || conv.op_type != "Conv" || !conv.domain.empty() || conv.outputs.size() != 1 ||
        conv.outputs[0] < 0 || conv.epilogue.has_post() || conv.inputs.size() < 2 || conv.inputs[1] < 0)
      continue;
    const Shape& ws = g.values[conv.inputs[1]].shape;
    const int x = conv.outputs[0];
    if (ws.size() < 3 || conv.attr_int("group", 1) != 1 || g.values[x].dtype != DType::Float32) continue;
    bool one_by_one = true;
    for (size_t d = 2; d < ws.size(); ++d) one_by_one &= ws[d] == 1;
    if (!one_by_one) continue;
    double a = 1, c = 0;
    std::vector<int> chain;
    int v = x;
    while (chain.size() < 4) {
      const int ri = g.sole_reader(v);
      if (ri < 0) break;
      const Node& r = g.nodes[ri];
      if ((r.op_type != "Mul" && r.op_type != "Add") || !r.domain.empty() || r.inputs.size() != 2 ||
          r.outputs.size() != 1 || r.outputs[0] < 0 || r.inputs[0] == r.inputs[1])
        break;
      const int k = r.inputs[0] == v ? r.inputs[1] : r.inputs[0];
      if (!is_const_f32(g, k) || numel(g.values[k].shape) != 1 || g.values[r.outputs[0]].shape != g.values[x].shape)
        break;
      const double val = host_get_f(*g.values[k].data, 0);
      if (r.op_type == "Mul") a *= val, c *= val;
      else c += val;
      chain.push_back(ri);
      v = r.outputs[0];
    }
    if (chain.empty() || !std::isfinite(a) || !std::isfinite(c)) continue;
    conv.epilogue.post_scale = static_cast<float>(a);
    conv.epilogue.post_bias = static_cast<float>(c);
    for (int ri : chain) {
      absorb(conv, g.nodes[ri]);
      g.nodes[ri].removed = true;
    }
    conv.outputs[0] = v;
    g.values[v].producer = static_cast<int>(pi);
    ++convs;
    folded += static_cast<int>(chain.size());
  }
  if (detail)
    *detail = std::to_string(folded) + " scalar Mul/Add after " + std::to_string(convs) +
              " 1x1 Conv fused as their post-activation affine";
  return folded;
}

}  // namespace oi
