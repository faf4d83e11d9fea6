// Scaled dot-product attention as exporters write it out (BERT, GPT-style decoders, ViT):
//   S = MatMul(Q, Kt); [S = S * c or S / c]; [S = S + mask, or Where(cond, fill, S) or
//   Where(cond, S, fill)] (either order with the scale); P = Softmax(S, last axis);
//   [P = Where(IsNaN(P), 0, P): Attention-23's zero rows where the mask hides every key];
//   Y = MatMul(P, V)
// becomes one ai.ocl_infer.FusedAttention node (ops/attention_ops.cpp): one kernel instead of
// five to seven (with the GEMMs' packing launches), and the scores never leave the row that
// computes them. A GPT-style decoder's attention was 11 of its 44 launches per block.
//
// Q, Kt and V become strided views of what a Split, Reshape and Transpose cut them from (the heads
// of a fused QKV projection), and a Transpose of Y that keeps rows contiguous becomes the output's
// strides, when each of those values is read by the next node alone: those copies are not made.
//
// Fused only when each intermediate is read by the next node alone, shapes are known, every float
// operand is float32, S has at most two batch dims, the mask broadcasts into S without widening it,
// and V does not widen the batch.
#include <algorithm>

#include "ops/core/op_def.hpp"
#include "runtime/compiler/optimizer.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

namespace {

bool is_f32(const Graph& g, int v) { return v >= 0 && g.values[v].dtype == DType::Float32 && g.values[v].shape_known; }

// The value of a one-element float32 constant, or false.
bool scalar_const(const Graph& g, int v, float* out) {
  if (v < 0 || !g.values[v].data || g.values[v].dtype != DType::Float32 || numel(g.values[v].shape) != 1)
    return false;
  *out = g.values[v].data->data<float>()[0];
  return true;
}

// `m` broadcasts into `s` (same or lower rank, each dim equal or 1) without widening it.
bool broadcasts_into(const Shape& m, const Shape& s) {
  if (m.size() > s.size()) return false;
  for (size_t i = 0; i < m.size(); ++i) {
    const int64_t a = m[m.size() - 1 - i], b = s[s.size() - 1 - i];
    if (a != b && a != 1) return false;
  }
  return true;
}

bool plain_node(const Node& n, const char* op) {
  return !n.removed && n.op_type == op && n.domain.empty() && n.epilogue.empty();
}

struct Chain {
  int mm1 = -1, softmax = -1, mm2 = -1;
  std::vector<int> stages;  // between mm1 and the softmax, in order
  bool has_scale = false, scale_div = false, mask_first = false;
  float scale = 1.0f, fill = 0.0f;
  std::string mask;  // "", "add", "fill_true", "fill_false"
  int mask_value = -1;
  // Attention-23's guard after the softmax (ops/llm_ops.cpp): Where(IsNaN(P), 0, P), a row
  // masked entirely gives zeros. The kernel then zeroes rows whose maximum is -inf.
  int guard_isnan = -1, guard_where = -1;
};

// The guard Where(IsNaN(p), 0, p) on the softmax output p (read by those two nodes alone): fills
// c's guard nodes and returns the Where's output, else p.
int masked_row_guard(const Graph& g, int p, Chain* c) {
  if (g.is_output(p)) return p;
  const auto uses = g.uses(p);
  if (uses.size() != 2) return p;
  int isnan = -1, where = -1;
  for (const auto& u : uses) {
    const Node& n = g.nodes[u.node];
    if (plain_node(n, "IsNaN") && n.inputs.size() == 1) isnan = u.node;
    else if (plain_node(n, "Where") && n.inputs.size() == 3 && u.slot == 2) where = u.node;
  }
  if (isnan < 0 || where < 0 || g.nodes[isnan].outputs.size() != 1) return p;
  const Node& w = g.nodes[where];
  float zero = 1.0f;
  if (w.inputs[0] != g.nodes[isnan].outputs[0] || g.sole_reader(w.inputs[0]) != where ||
      !scalar_const(g, w.inputs[1], &zero) || zero != 0.0f || w.outputs.size() != 1 ||
      g.values[w.outputs[0]].shape != g.values[p].shape)
    return p;
  c->guard_isnan = isnan;
  c->guard_where = where;
  return w.outputs[0];
}

// Walks back from `cur` (read by node `reader` alone) to the first MatMul through at most one
// scale and one mask, recording them in `c` (stages in forward order). Where an Add's two inputs
// could both continue the chain, tries each.
bool walk_back(const Graph& g, int cur, int reader, const Shape& s, Chain* c) {
  if (g.sole_reader(cur) != reader || g.values[cur].shape != s) return false;
  const int pi = g.values[cur].producer;
  if (pi < 0) return false;
  const Node& n = g.nodes[pi];
  if (plain_node(n, "MatMul")) {
    if (n.inputs.size() != 2 || n.outputs.size() != 1) return false;
    c->mm1 = pi;
    return true;
  }
  if (c->stages.size() == 2 || n.outputs.size() != 1) return false;
  auto deeper = [&](int next, const Chain& with) {
    Chain t = with;
    t.stages.insert(t.stages.begin(), pi);
    if (!walk_back(g, next, pi, s, &t)) return false;
    *c = t;
    return true;
  };
  if ((plain_node(n, "Mul") || plain_node(n, "Div")) && n.inputs.size() == 2 && !c->has_scale) {
    for (int k = 0; k < 2; ++k) {
      if (n.op_type == "Div" && k != 0) break;  // c / S is no scale
      float v = 0;
      if (n.inputs[k] < 0 || !scalar_const(g, n.inputs[1 - k], &v)) continue;
      Chain t = *c;
      t.has_scale = true;
      t.scale = v;
      t.scale_div = n.op_type == "Div";
      // Walking back, a mask already met is nearer the softmax: the scale comes first.
      t.mask_first = false;
      if (deeper(n.inputs[k], t)) return true;
    }
    return false;
  }
  if (plain_node(n, "Add") && n.inputs.size() == 2 && c->mask.empty() && n.inputs[0] != n.inputs[1]) {
    for (int k = 0; k < 2; ++k) {
      const int m = n.inputs[1 - k];
      if (n.inputs[k] < 0 || !is_f32(g, m) || !broadcasts_into(g.values[m].shape, s)) continue;
      Chain t = *c;
      t.mask = "add";
      t.mask_value = m;
      t.mask_first = t.has_scale;  // the scale, met already, is nearer the softmax
      if (deeper(n.inputs[k], t)) return true;
    }
    return false;
  }
  if (plain_node(n, "Where") && n.inputs.size() == 3 && c->mask.empty()) {
    const int cond = n.inputs[0];
    if (cond < 0 || g.values[cond].dtype != DType::Bool || !g.values[cond].shape_known ||
        !broadcasts_into(g.values[cond].shape, s))
      return false;
    for (int k = 1; k <= 2; ++k) {
      float fill = 0;
      if (n.inputs[k] < 0 || n.inputs[k] == cond || !scalar_const(g, n.inputs[3 - k], &fill)) continue;
      Chain t = *c;
      t.mask = k == 2 ? "fill_true" : "fill_false";
      t.fill = fill;
      t.mask_value = cond;
      t.mask_first = t.has_scale;
      if (deeper(n.inputs[k], t)) return true;
    }
    return false;
  }
  return false;
}

// Fills `c` for the Softmax node `si` when the whole pattern is there.
bool match(const Graph& g, int si, Chain* c) {
  const Node& sm = g.nodes[si];
  if (!plain_node(sm, "Softmax") || sm.inputs.size() != 1 || sm.outputs.size() != 1) return false;
  const int x = sm.inputs[0], p = sm.outputs[0];
  if (!is_f32(g, x)) return false;
  const Shape& s = g.values[x].shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  if (rank < 2 || rank > 4) return false;
  int64_t axis = sm.attr_int("axis", g.opset() < 13 ? 1 : -1);
  if (axis < 0) axis += rank;
  if (axis != rank - 1) return false;  // before opset 13 axis = rank - 1 is the same last-axis softmax
  for (int64_t d : s)
    if (d <= 0) return false;
  // P (or its masked-row guard) feeds the second MatMul as its left operand, and nothing else.
  const int pg = masked_row_guard(g, p, c);
  c->mm2 = g.sole_reader(pg);
  if (c->mm2 < 0 || !plain_node(g.nodes[c->mm2], "MatMul")) return false;
  const Node& mm2 = g.nodes[c->mm2];
  if (mm2.inputs.size() != 2 || mm2.inputs[0] != pg || mm2.outputs.size() != 1) return false;
  const int vv = mm2.inputs[1], y = mm2.outputs[0];
  if (!is_f32(g, vv) || !is_f32(g, y)) return false;
  const Shape &vs = g.values[vv].shape, &ys = g.values[y].shape;
  if (vs.size() < 2 || ys.size() != s.size() || !std::equal(s.begin(), s.end() - 2, ys.begin())) return false;
  // Back from the softmax's input to the first MatMul through at most one scale and one mask.
  c->softmax = si;
  if (!walk_back(g, x, si, s, c)) return false;
  const Node& mm1 = g.nodes[c->mm1];
  const int q = mm1.inputs[0], kt = mm1.inputs[1];
  if (!is_f32(g, q) || !is_f32(g, kt)) return false;
  const Shape &qs = g.values[q].shape, &ks = g.values[kt].shape;
  if (qs.size() < 2 || ks.size() < 2 || qs.size() > 4 || ks.size() > 4 || vs.size() > 4) return false;
  if (vs[vs.size() - 2] != s.back() || vs.back() <= 0) return false;
  // The batch of V broadcasts into S's (V never widens it).
  const Shape vb(vs.begin(), vs.end() - 2), sb(s.begin(), s.end() - 2);
  return broadcasts_into(vb, sb);
}

// A permutation of `rank` (2 to 4) axes that keeps the last axis last.
bool row_keeping_perm(const std::vector<int64_t>& perm, size_t rank) {
  if (rank < 2 || rank > 4 || perm.size() != rank || perm.back() != static_cast<int64_t>(rank) - 1) return false;
  std::vector<bool> seen(rank, false);
  for (int64_t a : perm) {
    if (a < 0 || a >= static_cast<int64_t>(rank) || seen[a]) return false;
    seen[a] = true;
  }
  return true;
}

// A float32 Transpose with a perm that keeps rows contiguous (a view the attention kernel reads
// or writes with strides).
bool row_keeping_transpose(const Graph& g, int ti) {
  const Node& t = g.nodes[ti];
  return plain_node(t, "Transpose") && t.inputs.size() == 1 && t.outputs.size() == 1 && t.has("perm") &&
         is_f32(g, t.inputs[0]) && is_f32(g, t.outputs[0]) &&
         row_keeping_perm(t.attr_ints("perm", {}), g.values[t.inputs[0]].shape.size());
}

// An operand as a strided view of another value: what the Split, Reshape and Transpose that cut a
// fused QKV projection into heads make, read in place.
struct View {
  int source = -1;
  int64_t offset = 0;
  Shape shape;
  std::vector<int64_t> strides;
  std::vector<int> nodes;  // the nodes walked through, nearest the source first
};

View contiguous(const Graph& g, int v) {
  View r;
  r.source = v;
  r.shape = g.values[v].shape;
  r.strides.assign(r.shape.size(), 1);
  for (size_t d = r.shape.size(); d-- > 1;) r.strides[d - 1] = r.strides[d] * r.shape[d];
  return r;
}

// Strides for `nd` when a view of shape `od` and strides `os` is reshaped without a copy: each
// group of old dims that multiplies to a group of new dims must be contiguous within itself.
bool reshape_strides(const Shape& od, const std::vector<int64_t>& os, const Shape& nd, std::vector<int64_t>* ns) {
  Shape dims;
  std::vector<int64_t> st;
  for (size_t i = 0; i < od.size(); ++i)
    if (od[i] != 1) dims.push_back(od[i]), st.push_back(os[i]);
  ns->assign(nd.size(), 0);
  size_t oi = 0, ni = 0;
  while (ni < nd.size() && oi < dims.size()) {
    size_t oj = oi + 1, nj = ni + 1;
    int64_t np = nd[ni], op = dims[oi];
    while (np != op) {
      if (np < op) {
        if (nj == nd.size()) return false;
        np *= nd[nj++];
      } else {
        if (oj == dims.size()) return false;
        op *= dims[oj++];
      }
    }
    for (size_t k = oi; k + 1 < oj; ++k)
      if (st[k] != dims[k + 1] * st[k + 1]) return false;
    (*ns)[nj - 1] = st[oj - 1];
    for (size_t k = nj - 1; k > ni; --k) (*ns)[k - 1] = (*ns)[k] * nd[k];
    ni = nj;
    oi = oj;
  }
  for (size_t k = ni; k < nd.size(); ++k)
    if (nd[k] != 1) return false;
  return oi == dims.size();
}

// `v` as read by node `reader`: back through Transpose, Reshape-like views and Split outputs while
// each value is read by the next node alone; where a step cannot be a view, `v` itself.
View view_of(const Graph& g, int v, int reader) {
  View here = contiguous(g, v);
  const int pi = g.values[v].producer;
  if (pi < 0 || g.sole_reader(v) != reader || !is_f32(g, v)) return here;
  const Node& n = g.nodes[pi];
  if (n.removed || !n.domain.empty() || !n.epilogue.empty() || n.inputs.empty() || !is_f32(g, n.inputs[0]))
    return here;
  const Shape& out = g.values[v].shape;
  View r = view_of(g, n.inputs[0], pi);
  if (r.shape != g.values[n.inputs[0]].shape) return here;
  if (n.op_type == "Transpose" && n.outputs.size() == 1) {
    std::vector<int64_t> perm = n.attr_ints("perm", {});
    if (perm.empty())
      for (size_t i = r.shape.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
    if (perm.size() != r.shape.size()) return here;
    Shape sh;
    std::vector<int64_t> st;
    for (int64_t a : perm) {
      if (a < 0 || a >= static_cast<int64_t>(r.shape.size())) return here;
      sh.push_back(r.shape[a]), st.push_back(r.strides[a]);
    }
    if (sh != out) return here;
    r.shape = sh, r.strides = st;
  } else if ((n.op_type == "Reshape" || n.op_type == "Flatten" || n.op_type == "Squeeze" || n.op_type == "Unsqueeze") &&
             n.outputs.size() == 1) {
    std::vector<int64_t> st;
    if (numel(out) != numel(r.shape) || !reshape_strides(r.shape, r.strides, out, &st)) return here;
    r.shape = out, r.strides = st;
  } else if (n.op_type == "Split") {
    int64_t axis = n.attr_int("axis", 0);
    if (axis < 0) axis += static_cast<int64_t>(r.shape.size());
    if (axis < 0 || axis >= static_cast<int64_t>(r.shape.size()) || out.size() != r.shape.size()) return here;
    int64_t start = 0;
    size_t j = 0;
    for (; j < n.outputs.size() && n.outputs[j] != v; ++j) {
      if (n.outputs[j] < 0 || !g.values[n.outputs[j]].shape_known) return here;
      start += g.values[n.outputs[j]].shape[axis];
    }
    if (j == n.outputs.size()) return here;
    r.offset += start * r.strides[axis];
    r.shape[axis] = out[axis];
    if (r.shape != out) return here;
  } else {
    return here;
  }
  r.nodes.push_back(pi);
  return r;
}

Attribute attr_float(float v) {
  Attribute a;
  a.kind = Attribute::Kind::Float;
  a.f = v;
  return a;
}

Attribute attr_int(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::Int;
  a.i = v;
  return a;
}

Attribute attr_ints(const std::vector<int64_t>& v) {
  Attribute a;
  a.kind = Attribute::Kind::Ints;
  a.ints = v;
  return a;
}

}  // namespace

int pass_fuse_attention(Graph& g, std::string* detail) {
  int fused = 0;
  for (size_t si = 0; si < g.nodes.size(); ++si) {
    Chain c;
    if (!match(g, static_cast<int>(si), &c)) continue;
    const Node &mm1 = g.nodes[c.mm1], &mm2 = g.nodes[c.mm2];
    Node f;
    f.name = mm1.name;
    f.op_type = "FusedAttention";
    f.domain = kOclInferDomain;
    f.inputs = {mm1.inputs[0], mm1.inputs[1], mm2.inputs[1]};
    if (!c.mask.empty()) f.inputs.push_back(c.mask_value);
    f.outputs = {mm2.outputs[0]};
    if (c.has_scale) {
      f.attrs["scale"] = attr_float(c.scale);
      f.attrs["scale_div"] = attr_int(c.scale_div ? 1 : 0);
    }
    if (!c.mask.empty()) {
      Attribute a;
      a.kind = Attribute::Kind::String;
      a.s = c.mask;
      f.attrs["mask"] = a;
      f.attrs["fill"] = attr_float(c.fill);
      f.attrs["mask_first"] = attr_int(c.mask_first ? 1 : 0);
    }
    // Transposes of Q, Kt, V and Y that keep rows contiguous (attention heads split off and
    // merged back) become strides of the kernel's operands.
    std::vector<int> chain;
    const char* view_attrs[3] = {"q_view", "kt_view", "v_view"};
    const int readers[3] = {c.mm1, c.mm1, c.mm2};
    std::vector<int> splits;
    for (int i = 0; i < 3; ++i) {
      const View vw = view_of(g, f.inputs[i], readers[i]);
      if (vw.nodes.empty() || (i == 2 && vw.strides.back() != 1)) continue;  // V's rows contiguous
      std::vector<int64_t> a{vw.offset, static_cast<int64_t>(vw.shape.size())};
      a.insert(a.end(), vw.shape.begin(), vw.shape.end());
      a.insert(a.end(), vw.strides.begin(), vw.strides.end());
      f.attrs[view_attrs[i]] = attr_ints(a);
      f.inputs[i] = vw.source;
      for (int t : vw.nodes) (g.nodes[t].op_type == "Split" ? splits : chain).push_back(t);
    }
    chain.push_back(c.mm1);
    chain.insert(chain.end(), c.stages.begin(), c.stages.end());
    chain.push_back(c.softmax);
    if (c.guard_where >= 0) {
      f.attrs["zero_masked_rows"] = attr_int(1);
      chain.push_back(c.guard_isnan);
      chain.push_back(c.guard_where);
    }
    chain.push_back(c.mm2);
    int place = c.mm2;
    const int yt = g.sole_reader(mm2.outputs[0]);
    if (yt >= 0 && row_keeping_transpose(g, yt)) {
      f.attrs["y_perm"] = attr_ints(g.nodes[yt].attr_ints("perm", {}));
      f.outputs = {g.nodes[yt].outputs[0]};
      chain.push_back(yt);
      place = yt;
    }
    for (int n : chain) absorb(f, g.nodes[n]);
    const int y = f.outputs[0];
    for (int n : chain) g.nodes[n].removed = true;
    // A Split goes when none of its outputs is read any more (all of them were views of this
    // node's operands); otherwise it stays and the views read its input.
    std::sort(splits.begin(), splits.end());
    splits.erase(std::unique(splits.begin(), splits.end()), splits.end());
    for (int sp : splits) {
      bool read = false;
      for (int o : g.nodes[sp].outputs) read |= o >= 0 && g.is_read(o);
      if (read) continue;
      absorb(f, g.nodes[sp]);
      g.nodes[sp].removed = true;
    }
    f.covers.erase(f.covers.begin());  // absorb() seeded it with the new node itself
    // The new node takes the last node's place, after everything its inputs need.
    g.nodes[place] = std::move(f);
    g.values[y].producer = place;
    ++fused;
  }
  if (fused && g.opset(kOclInferDomain) < 1) g.opsets[kOclInferDomain] = 1;
  if (detail) *detail = std::to_string(fused) + " attention patterns (MatMul, scale, mask, Softmax, MatMul) fused";
  return fused;
}

}  // namespace oi
