// LayerNorm as exporters decompose it before opset 17 (PyTorch's F.layer_norm, ViT, BERT, ConvNeXt
// at opset <= 16):
//   m = ReduceMean(x, trailing axes); d = x - m; v = ReduceMean(d^2 or d*d); s = Sqrt(v + eps);
//   n = d / s; [y = n * gamma]; [y = y + beta]
// becomes one LayerNormalization node: one kernel instead of nine, and no Pow.
#include <cmath>

#include "runtime/compiler/optimizer.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

namespace {

bool is_const(const Graph& g, int v) { return v >= 0 && g.values[v].data != nullptr; }

double scalar(const Graph& g, int v) {
  if (!is_const(g, v) || numel(g.values[v].shape) != 1) return NAN;
  return host_get_f(*g.values[v].data, 0);
}

int other_input(const Node& n, int v) {
  if (n.inputs.size() != 2) return -1;
  return n.inputs[0] == v ? n.inputs[1] : (n.inputs[1] == v ? n.inputs[0] : -1);
}

// The first reduced axis when `r` is a keepdims ReduceMean of `x` over the trailing axes
// [first, rank), else -1.
int trailing_mean_axis(const Graph& g, const Node& r, int x) {
  if (r.removed || r.op_type != "ReduceMean" || r.inputs.empty() || r.inputs[0] != x) return -1;
  if (r.attr_int("keepdims", 1) != 1) return -1;
  std::vector<int64_t> axes;
  if (r.has("axes")) {
    axes = r.attr_ints("axes", {});
  } else if (r.inputs.size() > 1 && r.inputs[1] >= 0) {
    if (!is_const(g, r.inputs[1])) return -1;
    const Tensor& t = *g.values[r.inputs[1]].data;
    for (int64_t i = 0; i < t.numel(); ++i) axes.push_back(host_get_i(t, i));
  }
  const int64_t rank = static_cast<int64_t>(g.values[x].shape.size());
  if (axes.empty() || rank == 0) return -1;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    if (a < 0) a += rank;
    if (a < 0 || a >= rank || seen[a]) return -1;
    seen[a] = true;
  }
  const int64_t first = rank - static_cast<int64_t>(axes.size());
  for (int64_t a = first; a < rank; ++a)
    if (!seen[a]) return -1;
  return static_cast<int>(first);
}

// A node whose op is `op` and reads `v` as its sole reader.
int sole_op(const Graph& g, int v, const char* op) {
  const int r = g.sole_reader(v);
  return r >= 0 && g.nodes[r].op_type == op ? r : -1;
}

// A constant that broadcasts exactly over the normalised dims: its shape, after leading 1s, is
// the trailing dims of x from `axis`.
bool affine_param(const Graph& g, int v, const Shape& x, int axis) {
  if (!is_const(g, v) || g.values[v].dtype != DType::Float32) return false;
  Shape s = g.values[v].shape;
  while (!s.empty() && s.front() == 1 && s.size() > x.size() - axis) s.erase(s.begin());
  return s == Shape(x.begin() + axis, x.end());
}

}  // namespace

int pass_fuse_layernorm(Graph& g, std::string* detail) {
  int fused = 0;
  for (size_t si = 0; si < g.nodes.size(); ++si) {
    Node& sub = g.nodes[si];
    if (sub.removed || sub.op_type != "Sub" || sub.inputs.size() != 2 || sub.outputs.empty()) continue;
    const int x = sub.inputs[0], mean = sub.inputs[1];
    if (x < 0 || mean < 0 || g.values[x].dtype != DType::Float32 || !g.values[x].shape_known) continue;
    const int mean_i = g.values[mean].producer;
    if (mean_i < 0 || g.sole_reader(mean) != static_cast<int>(si)) continue;
    const int axis = trailing_mean_axis(g, g.nodes[mean_i], x);
    if (axis < 0) continue;
    const int d = sub.outputs[0];
    // d is read by the square (Pow(d, 2) or Mul(d, d)) and the Div, nothing else.
    const auto uses = g.uses(d);
    if (g.is_output(d) || uses.size() < 2 || uses.size() > 3) continue;
    int sq_i = -1, div_i = -1;
    for (auto& u : uses) {
      const Node& n = g.nodes[u.node];
      if (u.slot == Graph::kResidual) sq_i = div_i = -2;
      else if (n.op_type == "Pow" && u.slot == 0 && scalar(g, n.inputs[1]) == 2.0) sq_i = u.node;
      else if (n.op_type == "Mul" && n.inputs.size() == 2 && n.inputs[0] == d && n.inputs[1] == d) sq_i = u.node;
      else if (n.op_type == "Div" && u.slot == 0) div_i = u.node;
      else sq_i = div_i = -2;
    }
    const size_t expected = sq_i >= 0 && g.nodes[sq_i].op_type == "Mul" ? 3 : 2;
    if (sq_i < 0 || div_i < 0 || uses.size() != expected) continue;
    const int var_i = g.sole_reader(g.nodes[sq_i].outputs[0]);
    if (var_i < 0 || trailing_mean_axis(g, g.nodes[var_i], g.nodes[sq_i].outputs[0]) != axis) continue;
    const int add_i = sole_op(g, g.nodes[var_i].outputs[0], "Add");
    if (add_i < 0) continue;
    const double eps = scalar(g, other_input(g.nodes[add_i], g.nodes[var_i].outputs[0]));
    if (!(eps >= 0)) continue;
    const int sqrt_i = sole_op(g, g.nodes[add_i].outputs[0], "Sqrt");
    if (sqrt_i < 0 || g.sole_reader(g.nodes[sqrt_i].outputs[0]) != div_i) continue;
    Node& div = g.nodes[div_i];
    if (div.inputs.size() != 2 || div.inputs[1] != g.nodes[sqrt_i].outputs[0] || div.outputs.empty()) continue;

    // Optional scale and shift.
    const Shape& xs = g.values[x].shape;
    int last = div_i, gamma = -1, beta = -1;
    const int mul_i = sole_op(g, div.outputs[0], "Mul");
    if (mul_i >= 0) {
      const int gm = other_input(g.nodes[mul_i], div.outputs[0]);
      if (gm >= 0 && gm != div.outputs[0] && affine_param(g, gm, xs, axis) &&
          g.values[g.nodes[mul_i].outputs[0]].shape == xs) {
        gamma = gm;
        last = mul_i;
        const int add2_i = sole_op(g, g.nodes[mul_i].outputs[0], "Add");
        if (add2_i >= 0) {
          const int bt = other_input(g.nodes[add2_i], g.nodes[mul_i].outputs[0]);
          if (bt >= 0 && affine_param(g, bt, xs, axis) && g.values[g.nodes[add2_i].outputs[0]].shape == xs) {
            beta = bt;
            last = add2_i;
          }
        }
      }
    }
    const Shape norm_shape(xs.begin() + axis, xs.end());
    if (gamma < 0) {
      Tensor ones(DType::Float32, norm_shape);
      for (int64_t i = 0; i < ones.numel(); ++i) ones.data<float>()[i] = 1.0f;
      gamma = g.add_value(div.name + "/layernorm_scale");
      g.values[gamma].dtype = DType::Float32;
      g.values[gamma].shape = norm_shape;
      g.values[gamma].shape_known = true;
      g.values[gamma].data = std::make_shared<const Tensor>(std::move(ones));
    }
    // Scale and shift must be exactly the normalised dims for LayerNormalization.
    auto reshaped = [&](int v) {
      if (g.values[v].shape == norm_shape) return v;
      Tensor t = *g.values[v].data;
      t.shape = norm_shape;
      const int nv = g.add_value(g.values[v].name + "/layernorm");
      g.values[nv].dtype = t.dtype;
      g.values[nv].shape = norm_shape;
      g.values[nv].shape_known = true;
      g.values[nv].data = std::make_shared<const Tensor>(std::move(t));
      return nv;
    };
    gamma = reshaped(gamma);
    if (beta >= 0) beta = reshaped(beta);

    Node& out = g.nodes[last];
    const int y = out.outputs[0];
    const std::vector<int> chain{mean_i, static_cast<int>(si), sq_i, var_i, add_i, sqrt_i, div_i};
    Node ln;
    ln.name = g.nodes[mean_i].name;
    ln.op_type = "LayerNormalization";
    for (int c : chain) absorb(ln, g.nodes[c]);
    if (last != div_i) absorb(ln, g.nodes[mul_i]);
    if (last != div_i && last != mul_i) absorb(ln, g.nodes[last]);
    ln.covers.erase(ln.covers.begin());  // absorb() seeded it with the new node itself
    ln.inputs = {x, gamma};
    if (beta >= 0) ln.inputs.push_back(beta);
    ln.outputs = {y};
    Attribute a;
    a.kind = Attribute::Kind::Int;
    a.i = axis;
    ln.attrs["axis"] = a;
    Attribute e;
    e.kind = Attribute::Kind::Float;
    e.f = static_cast<float>(eps);
    ln.attrs["epsilon"] = e;
    // The new node takes the last node's place so that it runs after everything its inputs need.
    for (int c : chain) g.nodes[c].removed = true;
    if (last != div_i) g.nodes[mul_i].removed = true;
    g.nodes[last] = std::move(ln);
    g.values[y].producer = last;
    ++fused;
  }
  if (detail) *detail = std::to_string(fused) + " decomposed LayerNorm patterns turned into LayerNormalization";
  return fused;
}

}  // namespace oi
