// The transformer operators of opsets 23-25: Attention (23-25), RotaryEmbedding (23) and
// TensorScatter (24, a KV cache update: ScatterElements at the write positions). They run as
// standard operators (OpTraits::expand; Attention and RotaryEmbedding are ONNX functions), with the
// semantics of ONNX 1.23's reference (which ONNX Runtime 1.32 follows):
//
//   Attention: 3-D Q/K/V [B, S, heads * head_size] split into heads ([B, heads, S, head_size]);
//   past_key/past_value concatenated before K/V (present_key/present_value); grouped-query heads
//   (K/V heads repeated, each for q_heads / kv_heads consecutive query heads); scores
//   MatMul(Q, K^T) * scale (default 1/sqrt(head_size)), softcap * tanh(scores / softcap) when
//   softcap > 0, plus the attention bias (a boolean mask: -inf where false; a float mask added;
//   is_causal: query i sees key j <= i + past length; Attention-24's nonpad_kv_seqlen: keys past
//   each batch's length masked, the frontier at its end; Attention-25's sliding windows),
//   Softmax, MatMul with V. A query row that
//   the bias masks entirely gives zeros (not NaN). qk_matmul_output: mode 0/1 the (softcapped)
//   scores, 2 with the bias, 3 the softmax.
//   The optimizer then fuses the MatMul/Mul/Add/Softmax/MatMul chain into one FusedAttention
//   kernel (runtime/compiler/passes/fuse_attention.cpp) where it can.
//
//   RotaryEmbedding: X [B, heads, S, head_size] or [B, S, hidden] (num_heads), the first
//   rotary_embedding_dim (default head_size) of each head rotated by cos/sin caches
//   ([B, S, dim/2], or [positions, dim/2] gathered by position_ids), halves or interleaved pairs.
#include <cmath>
#include <limits>

#include "ops/core/expansion.hpp"
#include "ops/core/op_def.hpp"
#include "runtime/ir/host_math.hpp"
#include "runtime/ir/subgraph.hpp"

namespace oi {

namespace {

using ocl_infer::dtype_name;
using ocl_infer::shape_to_string;

bool present(const Node& n, int slot) { return slot < static_cast<int>(n.inputs.size()) && n.inputs[slot] >= 0; }
bool has_out(const Node& n, int slot) { return slot < static_cast<int>(n.outputs.size()) && n.outputs[slot] >= 0; }

// ---- Attention ----------------------------------------------------------------------------
struct AttnDims {
  bool three_d = false;
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, past = 0, head = 0, v_head = 0;
  int64_t total() const { return past + kv_len; }
};

AttnDims attention_dims(const OpContext& ctx) {
  const Node& n = ctx.node();
  const Shape &q = ctx.in_shape(0), &k = ctx.in_shape(1), &v = ctx.in_shape(2);
  const DType t = ctx.in_type(0);
  if (t != DType::Float32 && t != DType::Float16)
    ctx.unsupported("Q of type " + std::string(dtype_name(t)) + " (float32 and float16 are supported)");
  if (ctx.in_type(1) != t || ctx.in_type(2) != t) ctx.fail("Q, K and V must have one type");
  if (q.size() != k.size() || q.size() != v.size() || (q.size() != 3 && q.size() != 4))
    ctx.fail("Q, K and V must all be 3-D or all 4-D, not " + shape_to_string(q) + ", " + shape_to_string(k) + ", " +
             shape_to_string(v));
  AttnDims d;
  d.three_d = q.size() == 3;
  d.batch = q[0];
  if (k[0] != d.batch || v[0] != d.batch) ctx.fail("Q, K and V differ in batch");
  if (d.three_d) {
    d.q_heads = n.attr_int("q_num_heads", 0);
    d.kv_heads = n.attr_int("kv_num_heads", 0);
    if (d.q_heads < 1 || d.kv_heads < 1) ctx.fail("3-D inputs need the attributes q_num_heads and kv_num_heads");
    if (q[2] % d.q_heads || k[2] % d.kv_heads || v[2] % d.kv_heads)
      ctx.fail("the hidden sizes " + std::to_string(q[2]) + ", " + std::to_string(k[2]) + ", " + std::to_string(v[2]) +
               " do not split into q_num_heads " + std::to_string(d.q_heads) + " / kv_num_heads " +
               std::to_string(d.kv_heads) + " heads");
    d.q_len = q[1];
    d.kv_len = k[1];
    d.head = q[2] / d.q_heads;
    if (k[2] / d.kv_heads != d.head) ctx.fail("Q and K heads differ in size");
    d.v_head = v[2] / d.kv_heads;
    if (v[1] != d.kv_len) ctx.fail("K and V differ in sequence length");
  } else {
    d.q_heads = q[1];
    d.kv_heads = k[1];
    d.q_len = q[2];
    d.kv_len = k[2];
    d.head = q[3];
    d.v_head = v[3];
    if (k[3] != d.head) ctx.fail("Q and K heads differ in size: " + shape_to_string(q) + ", " + shape_to_string(k));
    if (v[1] != d.kv_heads || v[2] != d.kv_len) ctx.fail("K " + shape_to_string(k) + " and V " + shape_to_string(v) + " differ");
  }
  if (d.kv_heads < 1 || d.q_heads % d.kv_heads)
    ctx.fail("q heads (" + std::to_string(d.q_heads) + ") must be a multiple of kv heads (" + std::to_string(d.kv_heads) + ")");
  if (present(n, 4) != present(n, 5)) ctx.fail("past_key and past_value go together");
  if (present(n, 4)) {
    const Shape &pk = ctx.in_shape(4), &pv = ctx.in_shape(5);
    if (pk.size() != 4 || pk[0] != d.batch || pk[1] != d.kv_heads || pk[3] != d.head)
      ctx.fail("past_key must be [batch, kv heads, past, head size] = [" + std::to_string(d.batch) + ", " +
               std::to_string(d.kv_heads) + ", P, " + std::to_string(d.head) + "], not " + shape_to_string(pk));
    if (pv.size() != 4 || pv[0] != d.batch || pv[1] != d.kv_heads || pv[2] != pk[2] || pv[3] != d.v_head)
      ctx.fail("past_value " + shape_to_string(pv) + " does not match past_key " + shape_to_string(pk) + " and V");
    if (ctx.in_type(4) != t || ctx.in_type(5) != t) ctx.fail("past_key and past_value must have Q's type");
    d.past = pk[2];
  }
  if (present(n, 3)) {
    const Shape& m = ctx.in_shape(3);
    const DType mt = ctx.in_type(3);
    if (mt != DType::Bool && mt != t) ctx.fail("attn_mask must be bool or Q's type, not " + std::string(dtype_name(mt)));
    const Shape full{d.batch, d.q_heads, d.q_len, d.total()};
    // A mask shorter than the total length covers its first keys; the rest are masked (ONNX
    // 1.23's reference pads it with false / -inf).
    bool ok = m.size() >= 2 && m.size() <= 4 && m.back() >= 1 && m.back() <= d.total();
    for (size_t i = 0; ok && i + 1 < m.size(); ++i) {
      const int64_t want = full[4 - m.size() + i];
      ok = m[i] == want || m[i] == 1;
    }
    if (!ok)
      ctx.fail("attn_mask " + shape_to_string(m) + " does not broadcast to [batch, q heads, q length, total length] " +
               shape_to_string(full));
  }
  if (ctx.opset() >= 24 && present(n, 6)) {
    if (present(n, 4)) ctx.fail("nonpad_kv_seqlen cannot go with past_key and past_value");
    if (ctx.in_type(6) != DType::Int64 || ctx.in_shape(6) != Shape{d.batch})
      ctx.fail("nonpad_kv_seqlen must be int64 [batch] = [" + std::to_string(d.batch) + "], not " +
               std::string(dtype_name(ctx.in_type(6))) + " " + shape_to_string(ctx.in_shape(6)));
  }
  if (ctx.opset() >= 25)
    for (const char* w : {"left_window_size", "right_window_size"})
      if (n.attr_int(w, -1) < -1) ctx.fail(std::string(w) + " must be -1 or more, not " + std::to_string(n.attr_int(w, -1)));
  const int64_t mode = n.attr_int("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) ctx.fail("qk_matmul_output_mode must be 0 to 3, not " + std::to_string(mode));
  return d;
}

void attention_infer(OpContext& ctx) {
  const AttnDims d = attention_dims(ctx);
  const DType t = ctx.in_type(0);
  if (d.three_d) ctx.set_out(0, t, {d.batch, d.q_len, d.q_heads * d.v_head});
  else ctx.set_out(0, t, {d.batch, d.q_heads, d.q_len, d.v_head});
  if (ctx.has_output(1)) ctx.set_out(1, t, {d.batch, d.kv_heads, d.total(), d.head});
  if (ctx.has_output(2)) ctx.set_out(2, t, {d.batch, d.kv_heads, d.total(), d.v_head});
  if (ctx.has_output(3)) ctx.set_out(3, t, {d.batch, d.q_heads, d.q_len, d.total()});
}

bool shapes_known(const Graph& g, const Node& n) {
  for (int in : n.inputs)
    if (in >= 0 && !g.values[in].shape_known) return false;
  return true;
}

bool attention_expand(Graph& g, int ni) {
  const Node n = g.nodes[ni];
  if (!shapes_known(g, n)) return false;
  AttnDims d;
  {
    OpContext ctx(static_cast<const Graph&>(g), ni);
    d = attention_dims(ctx);
  }
  const DType t = g.values[n.inputs[0]].dtype;
  const float inf = std::numeric_limits<float>::infinity();
  Expansion e(g, n);
  // Heads: [B, S, heads * size] -> [B, heads, S, size].
  auto heads = [&](int in, int64_t count, const std::string& what) {
    if (!d.three_d) return in;
    const int split = e.node("Reshape", {in, e.ints(what + "_shape", {0, 0, count, -1})}, what + "_split");
    const int out = e.node("Transpose", {split}, what + "_heads");
    e.attr_ints("perm", {0, 2, 1, 3});
    return out;
  };
  const int q = heads(n.inputs[0], d.q_heads, "q");
  int k = heads(n.inputs[1], d.kv_heads, "k");
  int v = heads(n.inputs[2], d.kv_heads, "v");
  if (d.past > 0 || present(n, 4)) {
    k = e.node("Concat", {n.inputs[4], k}, "present_key");
    e.attr_int("axis", 2);
    v = e.node("Concat", {n.inputs[5], v}, "present_value");
    e.attr_int("axis", 2);
  }
  if (has_out(n, 1)) e.node("Identity", {k}, "present_key_out", n.outputs[1]);
  if (has_out(n, 2)) e.node("Identity", {v}, "present_value_out", n.outputs[2]);
  // Grouped-query heads: each K/V head serves q_heads / kv_heads consecutive query heads.
  const int64_t rep = d.q_heads / d.kv_heads;
  auto repeat = [&](int in, int64_t size, const std::string& what) {
    if (rep == 1) return in;
    const int un = e.reshape_axis("Unsqueeze", in, 2, what + "_unsqueezed");
    const int ex = e.node("Expand", {un, e.ints(what + "_rep", {d.batch, d.kv_heads, rep, d.total(), size})}, what + "_repeated");
    return e.node("Reshape", {ex, e.ints(what + "_qheads", {d.batch, d.q_heads, d.total(), size})}, what + "_grouped");
  };
  const int kr = repeat(k, d.head, "k");
  const int vr = repeat(v, d.v_head, "v");
  const int kt = e.node("Transpose", {kr}, "k_transposed");
  e.attr_ints("perm", {0, 1, 3, 2});
  const double scale = n.has("scale") ? n.attr_float("scale", 0) : 1.0 / std::sqrt(static_cast<double>(d.head));
  int s = e.node("MatMul", {q, kt}, "qk");
  s = e.node("Mul", {s, e.scalar("scale", t, scale)}, "scores");
  const double softcap = n.attr_float("softcap", 0);
  if (softcap > 0) {
    const int c = e.scalar("softcap", t, softcap);
    s = e.node("Mul", {e.node("Tanh", {e.node("Div", {s, c}, "capped_in")}, "capped_tanh"), c}, "capped");
  }
  const int scores = s;
  // The bias: the mask (bool: 0 / -inf; float: added) and the causal frontier j <= i + past.
  int bias = -1;
  bool may_mask_rows = false;
  if (present(n, 3)) {
    const int m = n.inputs[3];
    bias = g.values[m].dtype == DType::Bool
               ? e.node("Where", {m, e.scalar("zero", t, 0), e.scalar("minus_inf", t, -inf)}, "mask_bias")
               : m;
    const Shape ms = g.values[m].shape;  // a copy: adding values moves g.values
    if (ms.back() < d.total()) {
      std::vector<int64_t> pads(2 * ms.size(), 0);
      pads.back() = d.total() - ms.back();
      bias = e.node("Pad", {bias, e.ints("mask_pads", pads), e.scalar("mask_fill", t, -inf)}, "mask_padded");
    }
    may_mask_rows = true;
  }
  // The causal frontier and Attention-25's sliding window: query i (at position i + past) sees
  // key j iff j <= i + past (is_causal) and i + past - left <= j <= i + past + right (a window
  // side of -1 is unbounded).
  const bool causal = n.attr_int("is_causal", 0) != 0;
  const int64_t left = g.opset(n.domain) >= 25 ? n.attr_int("left_window_size", -1) : -1;
  const int64_t right = g.opset(n.domain) >= 25 ? n.attr_int("right_window_size", -1) : -1;
  if (g.opset(n.domain) >= 24 && present(n, 6)) {
    // Attention-24's nonpad_kv_seqlen (a static cache, no past): batch b's keys from
    // nonpad[b] on are padding, and the causal frontier and window sit at query i's position
    // i + nonpad[b] - q_len: d = i - j + nonpad[b] - q_len, causal d >= 0, window
    // -right <= d <= left. Built at run time from the lengths.
    const int64_t T = d.total();
    Tensor keys(DType::Int64, {1, 1, 1, T}), diff(DType::Int64, {1, 1, d.q_len, T});
    for (int64_t j = 0; j < T; ++j) keys.data<int64_t>()[j] = j;
    for (int64_t i = 0; i < d.q_len; ++i)
      for (int64_t j = 0; j < T; ++j) diff.data<int64_t>()[i * T + j] = i - j - d.q_len;
    const int lens = e.node("Reshape", {n.inputs[6], e.ints("lens_shape", {d.batch, 1, 1, 1})}, "lens");
    int allowed = e.node("Less", {g.add_constant(n.name + "/key_positions", std::move(keys)), lens}, "not_padding");
    if (causal || left >= 0 || right >= 0) {
      const int dd = e.node("Add", {g.add_constant(n.name + "/query_key_offsets", std::move(diff)), lens}, "offsets");
      auto both = [&](int a, int b, const std::string& what) { return e.node("And", {a, b}, what); };
      if (causal)
        allowed = both(allowed, e.node("GreaterOrEqual", {dd, e.scalar("zero_i", DType::Int64, 0)}, "causal_ok"), "causal_and");
      if (left >= 0)
        allowed = both(allowed, e.node("LessOrEqual", {dd, e.scalar("left", DType::Int64, static_cast<double>(left))}, "left_ok"),
                       "left_and");
      if (right >= 0)
        allowed = both(allowed,
                       e.node("GreaterOrEqual", {dd, e.scalar("right", DType::Int64, -static_cast<double>(right))}, "right_ok"),
                       "right_and");
    }
    const int lbias = e.node("Where", {allowed, e.scalar("zero_len", t, 0), e.scalar("minus_inf_len", t, -inf)}, "length_bias");
    bias = bias < 0 ? lbias : e.node("Add", {bias, lbias}, "bias");
    may_mask_rows = true;
  } else if (causal || left >= 0 || right >= 0) {
    Tensor c(t, {d.q_len, d.total()});
    for (int64_t i = 0; i < d.q_len; ++i) {
      bool any = false;
      for (int64_t j = 0; j < d.total(); ++j) {
        const int64_t diff = i + d.past - j;
        const bool seen = (!causal || diff >= 0) && (left < 0 || diff <= left) && (right < 0 || -diff <= right);
        host_set_f(c, i * d.total() + j, seen ? 0.0 : -inf);
        any |= seen;
      }
      may_mask_rows |= !any;
    }
    const int frontier = g.add_constant(n.name + "/causal_bias", std::move(c));
    bias = bias < 0 ? frontier : e.node("Add", {bias, frontier}, "bias");
  }
  if (bias >= 0) s = e.node("Add", {s, bias}, "masked_scores");
  const int64_t mode = n.attr_int("qk_matmul_output_mode", 0);
  if (has_out(n, 3) && mode < 3) e.node("Identity", {mode == 2 ? s : scores}, "qk_out", n.outputs[3]);
  int p = e.node("Softmax", {s}, "probs");
  e.attr_int("axis", -1);
  if (may_mask_rows) {
    // A row the bias masks entirely: Softmax gives NaN there (-inf - -inf); the operator gives 0.
    p = e.node("Where", {e.node("IsNaN", {p}, "masked_row"), e.scalar("zero_p", t, 0), p}, "probs_or_zero");
  }
  if (has_out(n, 3) && mode == 3) e.node("Identity", {p}, "qk_out", n.outputs[3]);
  if (!d.three_d) {
    e.node("MatMul", {p, vr}, "y", n.outputs[0]);
  } else {
    const int y4 = e.node("MatMul", {p, vr}, "y_heads");
    const int yt = e.node("Transpose", {y4}, "y_rows");
    e.attr_ints("perm", {0, 2, 1, 3});
    e.node("Reshape", {yt, e.ints("y_shape", {0, 0, -1})}, "y", n.outputs[0]);
  }
  replace_node(g, ni, std::move(e.nodes));
  return true;
}

// ---- RotaryEmbedding ----------------------------------------------------------------------
struct RopeDims {
  bool three_d = false;
  int64_t heads = 0, head = 0, dim = 0;
};

RopeDims rope_dims(const OpContext& ctx) {
  const Node& n = ctx.node();
  const Shape& x = ctx.in_shape(0);
  const DType t = ctx.in_type(0);
  if (t != DType::Float32 && t != DType::Float16)
    ctx.unsupported("X of type " + std::string(dtype_name(t)) + " (float32 and float16 are supported)");
  RopeDims d;
  if (x.size() == 4) {
    d.heads = x[1];
    d.head = x[3];
  } else if (x.size() == 3) {
    d.three_d = true;
    d.heads = n.attr_int("num_heads", 0);
    if (d.heads < 1) ctx.fail("a 3-D X needs the attribute num_heads");
    if (x[2] % d.heads) ctx.fail("the hidden size " + std::to_string(x[2]) + " does not split into " + std::to_string(d.heads) + " heads");
    d.head = x[2] / d.heads;
  } else {
    ctx.fail("X must be [batch, heads, sequence, head size] or [batch, sequence, hidden], not " + shape_to_string(x));
  }
  d.dim = n.attr_int("rotary_embedding_dim", 0);
  if (d.dim == 0) d.dim = d.head;
  if (d.dim < 2 || d.dim > d.head || d.dim % 2)
    ctx.fail("rotary_embedding_dim " + std::to_string(d.dim) + " must be even and at most the head size " + std::to_string(d.head));
  const int64_t batch = x[0], seq = d.three_d ? x[1] : x[2];
  for (int k = 1; k < 3; ++k) {
    if (ctx.in_type(k) != t) ctx.fail("cos_cache and sin_cache must have X's type");
    const Shape& c = ctx.in_shape(k);
    if (c.empty() || c.back() != d.dim / 2)
      ctx.fail(std::string(k == 1 ? "cos" : "sin") + "_cache " + shape_to_string(c) + " must end in rotary_embedding_dim / 2 = " +
               std::to_string(d.dim / 2));
    if (ctx.has_input(3)) {
      if (c.size() != 2) ctx.fail("with position_ids the caches are [positions, dim / 2], not " + shape_to_string(c));
    } else if (c != Shape{batch, seq, d.dim / 2}) {
      ctx.fail("without position_ids the caches must be [batch, sequence, dim / 2] = " +
               shape_to_string(Shape{batch, seq, d.dim / 2}) + ", not " + shape_to_string(c));
    }
  }
  if (ctx.has_input(3)) {
    if (ctx.in_type(3) != DType::Int64) ctx.fail("position_ids must be int64");
    if (ctx.in_shape(3) != Shape{batch, seq})
      ctx.fail("position_ids must be [batch, sequence] = " + shape_to_string(Shape{batch, seq}) + ", not " +
               shape_to_string(ctx.in_shape(3)));
  }
  return d;
}

void rope_infer(OpContext& ctx) {
  rope_dims(ctx);
  ctx.set_out(0, ctx.in_type(0), ctx.in_shape(0));
}

bool rope_expand(Graph& g, int ni) {
  const Node n = g.nodes[ni];
  if (!shapes_known(g, n)) return false;
  RopeDims d;
  {
    OpContext ctx(static_cast<const Graph&>(g), ni);
    d = rope_dims(ctx);
  }
  const bool interleaved = n.attr_int("interleaved", 0) != 0;
  Expansion e(g, n);
  // X as [B, S, heads, head size].
  int x;
  if (d.three_d) {
    x = e.node("Reshape", {n.inputs[0], e.ints("x_shape", {0, 0, d.heads, d.head})}, "x_heads");
  } else {
    x = e.node("Transpose", {n.inputs[0]}, "x_heads");
    e.attr_ints("perm", {0, 2, 1, 3});
  }
  auto slice = [&](int in, int64_t start, int64_t end, int64_t step, const std::string& what) {
    return e.node("Slice", {in, e.ints(what + "_starts", {start}), e.ints(what + "_ends", {end}),
                            e.ints(what + "_axes", {3}), e.ints(what + "_steps", {step})},
                  what);
  };
  const int rot = d.dim < d.head ? slice(x, 0, d.dim, 1, "x_rotated") : x;
  int cos = n.inputs[1], sin = n.inputs[2];
  if (present(n, 3)) {
    cos = e.node("Gather", {cos, n.inputs[3]}, "cos");
    sin = e.node("Gather", {sin, n.inputs[3]}, "sin");
  }
  cos = e.reshape_axis("Unsqueeze", cos, 2, "cos_heads");
  sin = e.reshape_axis("Unsqueeze", sin, 2, "sin_heads");
  const int half = static_cast<int>(d.dim / 2);
  const int x1 = interleaved ? slice(rot, 0, d.dim, 2, "x_even") : slice(rot, 0, half, 1, "x_first");
  const int x2 = interleaved ? slice(rot, 1, d.dim, 2, "x_odd") : slice(rot, half, d.dim, 1, "x_second");
  const int real = e.node("Sub", {e.node("Mul", {cos, x1}, "cos_x1"), e.node("Mul", {sin, x2}, "sin_x2")}, "real");
  const int imag = e.node("Add", {e.node("Mul", {sin, x1}, "sin_x1"), e.node("Mul", {cos, x2}, "cos_x2")}, "imag");
  int rotated;
  if (interleaved) {
    const int pairs = e.node("Concat", {e.reshape_axis("Unsqueeze", real, 4, "real_pair"),
                                        e.reshape_axis("Unsqueeze", imag, 4, "imag_pair")},
                             "pairs");
    e.attr_int("axis", 4);
    rotated = e.node("Reshape", {pairs, e.ints("rotated_shape", {0, 0, 0, d.dim})}, "rotated");
  } else {
    rotated = e.node("Concat", {real, imag}, "rotated");
    e.attr_int("axis", 3);
  }
  int out = rotated;
  if (d.dim < d.head) {
    out = e.node("Concat", {rotated, slice(x, d.dim, d.head, 1, "x_kept")}, "y_heads");
    e.attr_int("axis", 3);
  }
  if (d.three_d) {
    e.node("Reshape", {out, e.ints("y_shape", {0, 0, -1})}, "y", n.outputs[0]);
  } else {
    e.node("Transpose", {out}, "y", n.outputs[0]);
    e.attr_ints("perm", {0, 2, 1, 3});
  }
  replace_node(g, ni, std::move(e.nodes));
  return true;
}

// ---- TensorScatter (opset 24): a KV cache updated in place ---------------------------------
// present = past with update[b, ..., s, ...] written at position write_indices[b] + s along axis
// (circular: modulo the cache length), as ScatterElements with those positions.
int64_t scatter_axis(const OpContext& ctx) {
  return ctx.axis(ctx.node().attr_int("axis", -2), static_cast<int64_t>(ctx.in_shape(0).size()));
}

void tensor_scatter_infer(OpContext& ctx) {
  const Shape &past = ctx.in_shape(0), &up = ctx.in_shape(1);
  const std::string mode = ctx.node().attr_string("mode", "linear");
  if (mode != "linear" && mode != "circular") ctx.fail("mode must be linear or circular, not '" + mode + "'");
  if (past.size() < 2) ctx.fail("past_cache must have rank >= 2, not " + shape_to_string(past));
  const int64_t axis = scatter_axis(ctx);
  if (axis == 0) ctx.fail("axis must not be the batch dim");
  if (ctx.in_type(1) != ctx.in_type(0)) ctx.fail("update must have past_cache's type");
  bool ok = up.size() == past.size();
  for (size_t d = 0; ok && d < past.size(); ++d)
    ok = static_cast<int64_t>(d) == axis ? up[d] <= past[d] : up[d] == past[d];
  if (!ok)
    ctx.fail("update " + shape_to_string(up) + " does not fit past_cache " + shape_to_string(past) + " along axis " +
             std::to_string(axis));
  if (ctx.has_input(2) && (ctx.in_type(2) != DType::Int64 || ctx.in_shape(2) != Shape{past[0]}))
    ctx.fail("write_indices must be int64 [batch] = [" + std::to_string(past[0]) + "]");
  ctx.set_out(0, ctx.in_type(0), past);
}

bool tensor_scatter_expand(Graph& g, int ni) {
  const Node n = g.nodes[ni];
  if (!shapes_known(g, n)) return false;
  int64_t axis;
  {
    OpContext ctx(static_cast<const Graph&>(g), ni);
    axis = scatter_axis(ctx);
  }
  const Shape past = g.values[n.inputs[0]].shape, up = g.values[n.inputs[1]].shape;
  const size_t rank = past.size();
  Expansion e(g, n);
  // Positions along the axis, [1, .., S, .., 1], plus each batch's write index, [B, 1, .., 1].
  Tensor pos(DType::Int64, {up[axis]});
  for (int64_t i = 0; i < up[axis]; ++i) pos.data<int64_t>()[i] = i;
  std::vector<int64_t> pos_shape(rank, 1), batch_shape(rank, 1);
  pos_shape[axis] = up[axis];
  batch_shape[0] = past[0];
  int idx = e.node("Reshape", {g.add_constant(n.name + "/positions", std::move(pos)), e.ints("pos_shape", pos_shape)},
                   "positions");
  if (present(n, 2))
    idx = e.node("Add", {e.node("Reshape", {n.inputs[2], e.ints("batch_shape", batch_shape)}, "write_at"), idx},
                 "cache_positions");
  if (n.attr_string("mode", "linear") == "circular")
    idx = e.node("Mod", {idx, e.scalar("cache_length", DType::Int64, static_cast<double>(past[axis]))}, "wrapped");
  const int full = e.node("Expand", {idx, e.ints("update_shape", up)}, "indices");
  e.node("ScatterElements", {n.inputs[0], full, n.inputs[1]}, "present", n.outputs[0]);
  e.attr_int("axis", axis);
  replace_node(g, ni, std::move(e.nodes));
  return true;
}

}  // namespace

void add_llm_ops(std::vector<OpDef>& t) {
  t.push_back(OpDef("TensorScatter", 24, tensor_scatter_infer).expands(tensor_scatter_expand));
  // 24: the nonpad_kv_seqlen input; 25: sliding windows.
  for (int v : {23, 24, 25}) t.push_back(OpDef("Attention", v, attention_infer).expands(attention_expand));
  t.push_back(OpDef("RotaryEmbedding", 23, rope_infer).expands(rope_expand));
}

}  // namespace oi
