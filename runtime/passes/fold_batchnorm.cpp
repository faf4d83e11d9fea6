// BatchNormalization (and per-channel constant Mul / Add) after a Conv, ConvTranspose or Gemm is
// folded into that node's weights and bias, computed in double precision:
//   s = gamma / sqrt(var + eps);  W' = W * s (per output channel);  b' = (b - mean) * s + beta.
#include <cmath>

#include "ops/host_math.hpp"
#include "runtime/optimizer.hpp"

namespace oi {

namespace {

bool is_const_f32(const Graph& g, int v) {
  return v >= 0 && g.values[v].data && g.values[v].dtype == DType::Float32;
}

// Output-channel count of a foldable producer, or -1 when `p` cannot absorb a per-channel affine.
int64_t out_channels(const Graph& g, const Node& p) {
  if (!p.epilogue.empty() || p.inputs.size() < 2 || !is_const_f32(g, p.inputs[1])) return -1;
  if (p.inputs.size() > 2 && p.inputs[2] >= 0 && !is_const_f32(g, p.inputs[2])) return -1;
  const Shape& w = g.values[p.inputs[1]].shape;
  if (p.op_type == "Conv" && w.size() >= 3) return w[0];
  if (p.op_type == "ConvTranspose" && w.size() >= 3) return w[1] * p.attr_int("group", 1);
  if (p.op_type == "Gemm" && w.size() == 2) {
    if (p.attr_int("transA", 0) != 0 && g.values[p.inputs[0]].shape.size() != 2) return -1;
    int64_t n = p.attr_int("transB", 0) ? w[0] : w[1];
    if (p.inputs.size() > 2 && p.inputs[2] >= 0) {
      const Shape& c = g.values[p.inputs[2]].shape;
      // Only a per-column (or scalar) C can become a per-channel bias.
      if (!(numel(c) == 1 || (c.size() == 1 && c[0] == n) || (c.size() == 2 && c[0] == 1 && c[1] == n))) return -1;
    }
    return n;
  }
  return -1;
}

int new_constant(Graph& g, const std::string& name, Tensor t) {
  int id = g.add_value(name);
  Value& v = g.values[id];
  v.dtype = t.dtype;
  v.shape = t.shape;
  v.shape_known = true;
  v.data = std::make_shared<const Tensor>(std::move(t));
  return id;
}

// Rewrites p so that its output becomes out * scale[c] + shift[c].
void apply_affine(Graph& g, Node& p, const std::vector<double>& scale, const std::vector<double>& shift) {
  const int64_t C = static_cast<int64_t>(scale.size());
  const Tensor& w = *g.values[p.inputs[1]].data;
  Tensor nw = w;
  float* wd = nw.data<float>();
  const Shape& ws = w.shape;
  if (p.op_type == "Conv") {
    int64_t per = numel(ws) / ws[0];
    for (int64_t c = 0; c < C; ++c)
      for (int64_t k = 0; k < per; ++k) wd[c * per + k] = static_cast<float>(wd[c * per + k] * scale[c]);
  } else if (p.op_type == "ConvTranspose") {
    // W is [Cin, Cout/group, k...]; input channel ci belongs to group ci / (Cin/group).
    int64_t group = p.attr_int("group", 1), cin = ws[0], cog = ws[1], per = numel(ws) / (cin * cog);
    for (int64_t ci = 0; ci < cin; ++ci)
      for (int64_t co = 0; co < cog; ++co) {
        int64_t c = (ci / (cin / group)) * cog + co;
        for (int64_t k = 0; k < per; ++k) {
          float& x = wd[(ci * cog + co) * per + k];
          x = static_cast<float>(x * scale[c]);
        }
      }
  } else {  // Gemm
    bool tb = p.attr_int("transB", 0) != 0;
    int64_t rows = ws[0], cols = ws[1];
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t q = 0; q < cols; ++q) {
        int64_t c = tb ? r : q;
        wd[r * cols + q] = static_cast<float>(wd[r * cols + q] * scale[c]);
      }
  }
  // Old bias (Gemm: beta * C), as per channel values.
  std::vector<double> bias(C, 0.0);
  bool has_bias = p.inputs.size() > 2 && p.inputs[2] >= 0;
  if (has_bias) {
    const Tensor& b = *g.values[p.inputs[2]].data;
    double beta = p.op_type == "Gemm" ? p.attr_float("beta", 1.f) : 1.0;
    for (int64_t c = 0; c < C; ++c) bias[c] = beta * host_get_f(b, b.numel() == 1 ? 0 : c);
  }
  Tensor nb(DType::Float32, {C});
  for (int64_t c = 0; c < C; ++c) nb.data<float>()[c] = static_cast<float>(bias[c] * scale[c] + shift[c]);
  int wid = new_constant(g, g.values[p.inputs[1]].name + "/folded", std::move(nw));
  int bid = new_constant(g, p.name + "/folded_bias", std::move(nb));
  p.inputs[1] = wid;
  if (p.inputs.size() < 3) p.inputs.resize(3, -1);
  p.inputs[2] = bid;
  if (p.op_type == "Gemm") {
    Attribute one;
    one.kind = Attribute::Kind::Float;
    one.f = 1.f;
    p.attrs["beta"] = one;
  }
}

// Per-channel values of a constant that broadcasts against [N, C, ...] (or [M, C] for Gemm) along
// the channel axis only; empty when it does not.
std::vector<double> per_channel(const Graph& g, int v, int64_t C, size_t out_rank) {
  if (!is_const_f32(g, v)) return {};
  const Tensor& t = *g.values[v].data;
  std::vector<double> r(C);
  if (t.numel() == 1) {
    for (auto& x : r) x = host_get_f(t, 0);
    return r;
  }
  // Accept shapes like [C,1,1], [1,C,1,1] (rank <= out_rank, channel at axis 1 of the output).
  Shape s = t.shape;
  if (s.size() > out_rank) return {};
  Shape padded(out_rank - s.size(), 1);
  padded.insert(padded.end(), s.begin(), s.end());
  for (size_t d = 0; d < out_rank; ++d)
    if ((d == 1 && padded[d] != C) || (d != 1 && padded[d] != 1)) return {};
  for (int64_t c = 0; c < C; ++c) r[c] = host_get_f(t, c);
  return r;
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
    Node& p = g.nodes[pi];
    int64_t C = out_channels(g, p);
    if (C <= 0 || g.values[p.outputs[0]].dtype != DType::Float32) continue;
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
    apply_affine(g, p, scale, shift);
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
