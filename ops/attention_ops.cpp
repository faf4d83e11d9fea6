// ai.ocl_infer.FusedAttention: scaled dot-product attention in one kernel (kernels/attention.cl).
// Only the fuse_attention pass makes this node (runtime/compiler/passes/fuse_attention.cpp), from
//   S = MatMul(Q, Kt); [S = S * c | S / c]; [S = S + mask | Where(cond, fill, S) | Where(cond, S,
//   fill)]; P = Softmax(S, last axis); Y = MatMul(P, V)
// Inputs: Q [..., M, D], Kt [..., D, N], V [..., N, DV], and the mask (float, added) or condition
// (bool) broadcastable to [..., M, N]; at most two batch dims, broadcast as MatMul does.
// Attributes: scale (float, 1: none), scale_div (1: S / scale), mask ("add", "fill_true",
// "fill_false" or absent), fill (float), mask_first (1: the mask before the scale),
// zero_masked_rows (1: a row whose every score is -inf gives zeros, not NaN); q_view,
// kt_view, v_view: the operand is a strided view of the input ([offset, rank, dims..., strides...]
// in elements: the Split, Reshape and Transpose that cut a fused QKV projection into heads; V's
// rows contiguous); y_perm: the output is Transpose(Y, perm) with the last axis kept last. So the
// copies around attention heads are not made.
#include <algorithm>
#include <array>

#include "ops/build_context.hpp"
#include "ops/core/op_def.hpp"
#include "runtime/ir/graph.hpp"

namespace oi {

using ocl_infer::shape_to_string;

namespace {

// `s` with its last two dims dropped, padded on the left with 1s to two dims.
Shape batch_of(const Shape& s) {
  Shape b(s.begin(), s.end() - 2);
  while (b.size() < 2) b.insert(b.begin(), 1);
  return b;
}

// The permutation attribute `name` of the node, or identity of `rank`.
std::vector<int64_t> perm_of(const Node& n, const char* name, size_t rank) {
  std::vector<int64_t> p = n.attr_ints(name, {});
  if (p.empty())
    for (size_t i = 0; i < rank; ++i) p.push_back(static_cast<int64_t>(i));
  return p;
}

// A valid permutation of `rank` axes that keeps the last axis last.
bool row_keeping_perm(const std::vector<int64_t>& p, size_t rank) {
  if (p.size() != rank || rank == 0 || p.back() != static_cast<int64_t>(rank) - 1) return false;
  std::vector<bool> seen(rank, false);
  for (int64_t a : p) {
    if (a < 0 || a >= static_cast<int64_t>(rank) || seen[a]) return false;
    seen[a] = true;
  }
  return true;
}

// An operand as the kernel reads it: its shape and element strides from `offset` in its input.
struct View {
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

// Input i through the node's view attribute `attr` ([offset, rank, dims..., strides...]), or the
// input itself (contiguous). Fails when the view is malformed or reaches past the input.
View operand_view(const OpContext& ctx, int i, const char* attr) {
  const Shape& src = ctx.in_shape(i);
  View v;
  const std::vector<int64_t> a = ctx.node().attr_ints(attr, {});
  if (a.empty()) {
    if (src.size() < 2 || src.size() > 4) ctx.fail("Q, Kt and V must have rank 2 to 4");
    v.shape = src;
    v.strides.assign(src.size(), 1);
    for (size_t d = src.size(); d-- > 1;) v.strides[d - 1] = v.strides[d] * src[d];
    return v;
  }
  const int64_t rank = a.size() >= 2 ? a[1] : -1;
  if (rank < 2 || rank > 4 || static_cast<int64_t>(a.size()) != 2 + 2 * rank) ctx.fail(std::string(attr) + " is malformed");
  v.offset = a[0];
  v.shape.assign(a.begin() + 2, a.begin() + 2 + rank);
  v.strides.assign(a.begin() + 2 + rank, a.end());
  int64_t last = v.offset;
  for (int64_t d = 0; d < rank; ++d) {
    if (v.shape[d] <= 0 || v.strides[d] < 0) ctx.fail(std::string(attr) + " is malformed");
    last += (v.shape[d] - 1) * v.strides[d];
  }
  if (v.offset < 0 || last >= numel(src)) ctx.fail(std::string(attr) + " reaches past its input");
  return v;
}

// The operand's strides for the kernel's four dims [B1, B2, rows, columns] (left-padded with
// size-1 dims): 0 along batch dims of size 1 (broadcast).
std::array<int64_t, 4> strides4(const View& v) {
  std::array<int64_t, 4> st{0, 0, 0, 0};
  const size_t pad = 4 - v.shape.size();
  for (size_t i = 0; i < v.shape.size(); ++i) st[pad + i] = v.shape[i] == 1 && pad + i < 2 ? 0 : v.strides[i];
  return st;
}

// Y's shape before the output's y_perm.
Shape logical_output(OpContext& ctx) {
  for (int i = 0; i < 3; ++i)
    if (!is_float(ctx.in_type(i)) || ctx.in_type(i) != ctx.in_type(0))
      ctx.fail("Q, Kt and V must be floating-point tensors of one type");
  const Shape q = operand_view(ctx, 0, "q_view").shape, k = operand_view(ctx, 1, "kt_view").shape,
              v = operand_view(ctx, 2, "v_view").shape;
  if (q.back() != k[k.size() - 2] || k.back() != v[v.size() - 2])
    ctx.fail("shapes do not chain: Q " + shape_to_string(q) + ", Kt " + shape_to_string(k) + ", V " +
             shape_to_string(v));
  Shape b;
  if (!broadcast_shapes(batch_of(q), batch_of(k), &b) || !broadcast_shapes(b, batch_of(v), &b))
    ctx.fail("batch dims do not broadcast");
  Shape out(b.begin(), b.end());
  const size_t rank = std::max({q.size(), k.size(), v.size()});
  out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(4 - rank));
  out.push_back(q[q.size() - 2]);
  out.push_back(v.back());
  return out;
}

void attention_infer(OpContext& ctx) {
  // The mask: a fourth input of Q's type to add, or a bool condition for a fill; none without it.
  const std::string mask = ctx.node().attr_string("mask", "");
  if (mask.empty()) {
    if (ctx.has_input(3)) ctx.fail("a fourth input needs the mask attribute (add, fill_true or fill_false)");
  } else {
    if (mask != "add" && mask != "fill_true" && mask != "fill_false")
      ctx.fail("unknown mask kind '" + mask + "' (add, fill_true or fill_false)");
    if (!ctx.has_input(3)) ctx.fail("mask '" + mask + "' needs the mask as a fourth input");
    if (mask == "add" ? ctx.in_type(3) != ctx.in_type(0) : ctx.in_type(3) != DType::Bool)
      ctx.fail(mask == "add" ? "an added mask must have Q's type" : "a fill mask's condition must be bool");
  }
  const Shape y = logical_output(ctx);
  const std::vector<int64_t> p = perm_of(ctx.node(), "y_perm", y.size());
  if (!row_keeping_perm(p, y.size())) ctx.fail("y_perm must permute Y's axes and keep the last last");
  Shape out;
  for (int64_t a : p) out.push_back(y[a]);
  ctx.set_out(0, ctx.in_type(0), out);
}

// The output's strides for Y's four dims when the output is Transpose(Y, y_perm): Y's axis i is the
// output's axis j where y_perm[j] == i.
std::array<int64_t, 4> output_strides(const Shape& out, const std::vector<int64_t>& perm) {
  std::vector<int64_t> cs(out.size(), 1);
  for (size_t d = out.size(); d-- > 1;) cs[d - 1] = cs[d] * out[d];
  std::array<int64_t, 4> st{0, 0, 0, 0};
  const size_t pad = 4 - perm.size();
  for (size_t j = 0; j < perm.size(); ++j) st[pad + static_cast<size_t>(perm[j])] = cs[j];
  return st;
}

void attention_build(BuildContext& ctx) {
  const DType st = ctx.input(0).dtype;
  // One storage type (OpTraits::shared_float_storage) for the float operands; the condition of
  // a Where mask is bool.
  const int floats = ctx.num_inputs() > 3 && ctx.node().attr_string("mask", "") == "add" ? 4 : 3;
  for (int i = 0; i < floats; ++i)
    if (ctx.input(i).dtype != st) ctx.unsupported("operands stored in different types");
  if ((st != DType::Float32 && st != DType::Float16) || ctx.output(0).dtype != st)
    ctx.unsupported("float32 or float16 storage only");
  const Node& n = ctx.node();
  const View qv = operand_view(ctx, 0, "q_view"), kv = operand_view(ctx, 1, "kt_view"), vv = operand_view(ctx, 2, "v_view");
  const Shape y = logical_output(ctx);
  const Shape ob = batch_of(y);
  const int64_t M = qv.shape[qv.shape.size() - 2], D = qv.shape.back(), N = kv.shape.back(), DV = y.back();
  const auto qs = strides4(qv), ks = strides4(kv), vs = strides4(vv);
  const auto ys = output_strides(ctx.out_shape(0), perm_of(n, "y_perm", y.size()));
  if (vs[3] != 1) ctx.fail("V's rows must be contiguous");
  const std::string mask = n.attr_string("mask", "");
  int64_t ms[4] = {0, 0, 0, 0};
  if (!mask.empty()) {
    Shape m = ctx.in_shape(3);
    while (m.size() < 4) m.insert(m.begin(), 1);
    const int64_t full[4] = {ob[0], ob[1], M, N};
    int64_t stride = 1;
    for (int d = 3; d >= 0; --d) {
      if (m[d] != 1 && m[d] != full[d]) ctx.fail("the mask " + shape_to_string(ctx.in_shape(3)) + " does not broadcast");
      ms[d] = m[d] == 1 ? 0 : stride;
      stride *= m[d];
    }
  }
  std::string opts = st == DType::Float16 ? "-DT=half -DS=F16" : "-DT=float";
  const uint32_t w = ctx.caps().preferred_vector_width_float;
  opts += " -DVW=" + std::to_string(w >= 16 ? 16 : w >= 8 ? 8 : 4);
  const float scale = n.attr_float("scale", 1.0f);
  if (scale != 1.0f) opts += n.attr_int("scale_div", 0) ? " -DSCALE_DIV" : " -DSCALE_MUL";
  if (mask == "add") opts += " -DMASK_ADD";
  else if (mask == "fill_true") opts += " -DMASK_FILL_TRUE";
  else if (mask == "fill_false") opts += " -DMASK_FILL_FALSE";
  if (!mask.empty() && n.attr_int("mask_first", 0)) opts += " -DMASK_FIRST";
  if (n.attr_int("zero_masked_rows", 0)) opts += " -DZERO_MASKED_ROWS";
  // CPU devices: four query rows a work-item share each key and value vector (a GPT-style
  // decoder's [4, 64, 64] attention 33 -> 28 us, minima on PoCL, 2-core EPYC); elsewhere a row each.
  const int64_t rb = ctx.caps().cpu_shaped() ? 4 : 1, blocks = (M + rb - 1) / rb;
  opts += " -DRB=" + std::to_string(rb);
  // Keys that are not contiguous along N (K's rows transposed by a view) are gathered into each
  // work-item's scratch first. Float16 operands on CPU devices go there as float, the values and
  // query rows too (F32_COPIES): read as halves, each use cost a conversion, and each query element
  // a shuffle to broadcast it (ViT-B/16's attention took 1.38x its float32 time).
  const bool copies = st == DType::Float16 && ctx.caps().cpu_shaped();
  const bool gather = ks[3] != 1 || copies;
  if (gather) opts += " -DKT_GATHER";
  if (copies) opts += " -DF32_COPIES";
  // A work-item takes one row block, or with gathered keys (copied once per work-item) as many
  // as leave two work-items per compute unit: a GPT-style decoder's attention 55 -> 20 us.
  int64_t groups = blocks;
  if (gather) {
    const int64_t heads = ob[0] * ob[1], want = 2 * static_cast<int64_t>(std::max<uint32_t>(1, ctx.caps().compute_units));
    groups = std::clamp<int64_t>((want + heads - 1) / heads, 1, blocks);
  }
  const int64_t bpg = (blocks + groups - 1) / groups;
  groups = (blocks + bpg - 1) / bpg;
  // Per work-item: RB rows of scores, the gathered keys, the copied values and query rows.
  const int64_t per = (rb + (gather ? D : 0)) * N + (copies ? N * DV + rb * D : 0);
  const Operand scores = ctx.workspace(DType::Float32, {ob[0] * ob[1] * groups, per});
  cl_mem mask_buf = mask.empty() ? ctx.in_buf(0) : ctx.in_buf(3);
  ctx.launch("attention", "attention_rows", opts,
             {static_cast<size_t>(groups), static_cast<size_t>(ob[1]), static_cast<size_t>(ob[0])},
             ctx.caps().cpu_shaped() ? std::vector<size_t>{1, 1, 1} : std::vector<size_t>{},
             ctx.in_buf(0), ctx.in_buf(1), ctx.in_buf(2), mask_buf, ctx.out_buf(0), scores.mem, M, N, D, DV, qv.offset,
             qs[0], qs[1], qs[2], qs[3], kv.offset, ks[0], ks[1], ks[2], ks[3], vv.offset, vs[0], vs[1], vs[2], ys[0],
             ys[1], ys[2], ms[0], ms[1], ms[2], ms[3], scale, n.attr_float("fill", 0.0f), bpg);
}

double attention_flops(const OpContext& ctx) {
  const Shape& y = ctx.out_shape(0);
  const double rows = static_cast<double>(numel(y) / y.back());
  const double D = static_cast<double>(operand_view(ctx, 0, "q_view").shape.back());
  const double N = static_cast<double>(operand_view(ctx, 1, "kt_view").shape.back());
  return rows * N * (2.0 * D + 2.0 * static_cast<double>(y.back()) + 5.0);
}

}  // namespace

void add_attention_ops(std::vector<OpDef>& t) {
  t.push_back(OpDef("FusedAttention", 1, attention_infer, kOclInferDomain)
                  .build(attention_build)
                  .flops(attention_flops)
                  .shared_storage()
                  .any_storage());
}

}  // namespace oi
