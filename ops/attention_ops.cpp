// ai.ocl_infer.FusedAttention: scaled dot-product attention in one kernel (kernels/attention.cl).
// Only the fuse_attention pass makes this node (runtime/compiler/passes/fuse_attention.cpp), from
//   S = MatMul(Q, Kt); [S = S * c | S / c]; [S = S + mask | Where(cond, fill, S) | Where(cond, S,
//   fill)]; P = Softmax(S, last axis); Y = MatMul(P, V)
// Inputs: Q [..., M, D], Kt [..., D, N], V [..., N, DV], and the mask (float, added) or condition
// (bool) broadcastable to [..., M, N]; at most two batch dims, broadcast as MatMul does.
// Attributes: scale (float, 1: none), scale_div (1: S / scale), mask ("add", "fill_true",
// "fill_false" or absent), fill (float), mask_first (1: the mask before the scale); q_perm, kt_perm,
// v_perm: the input is the operand's source, the operand is Transpose(input, perm); y_perm: the
// output is Transpose(Y, perm). A perm keeps the last axis last (rows stay contiguous), so the
// transposes around attention heads cost no copies.
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

// Input i as the operand sees it: its shape permuted by the node's `attr` permutation.
Shape operand_shape(const OpContext& ctx, int i, const char* attr) {
  const Shape& src = ctx.in_shape(i);
  const std::vector<int64_t> p = perm_of(ctx.node(), attr, src.size());
  if (!row_keeping_perm(p, src.size())) ctx.fail(std::string(attr) + " must permute the input's axes and keep the last last");
  Shape r;
  for (int64_t a : p) r.push_back(src[a]);
  return r;
}

// Y's shape before the output's y_perm.
Shape logical_output(OpContext& ctx) {
  for (int i = 0; i < 3; ++i)
    if (!is_float(ctx.in_type(i)) || ctx.in_type(i) != ctx.in_type(0))
      ctx.fail("Q, Kt and V must be floating-point tensors of one type");
  for (int i = 0; i < 3; ++i)
    if (ctx.in_shape(i).size() < 2 || ctx.in_shape(i).size() > 4) ctx.fail("Q, Kt and V must have rank 2 to 4");
  const Shape q = operand_shape(ctx, 0, "q_perm"), k = operand_shape(ctx, 1, "kt_perm"),
              v = operand_shape(ctx, 2, "v_perm");
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
  const Shape y = logical_output(ctx);
  const std::vector<int64_t> p = perm_of(ctx.node(), "y_perm", y.size());
  if (!row_keeping_perm(p, y.size())) ctx.fail("y_perm must permute Y's axes and keep the last last");
  Shape out;
  for (int64_t a : p) out.push_back(y[a]);
  ctx.set_out(0, ctx.in_type(0), out);
}

// Element strides of an operand's four dims [B1, B2, rows, columns] (left-padded with broadcast
// dims) when it is Transpose(source, perm) of a contiguous `source`: 0 along the batch dims where
// it broadcasts (size 1).
std::array<int64_t, 4> operand_strides(const Shape& source, const std::vector<int64_t>& perm) {
  std::vector<int64_t> cs(source.size(), 1);
  for (size_t d = source.size(); d-- > 1;) cs[d - 1] = cs[d] * source[d];
  std::array<int64_t, 4> st{0, 0, 0, 0};
  const size_t pad = 4 - perm.size();
  for (size_t i = 0; i < perm.size(); ++i) st[pad + i] = source[perm[i]] == 1 && pad + i < 2 ? 0 : cs[perm[i]];
  return st;
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
  const Shape q = operand_shape(ctx, 0, "q_perm"), k = operand_shape(ctx, 1, "kt_perm");
  const Shape y = logical_output(ctx);
  const Shape ob = batch_of(y);
  const int64_t M = q[q.size() - 2], D = q.back(), N = k.back(), DV = y.back();
  const auto qs = operand_strides(ctx.in_shape(0), perm_of(n, "q_perm", ctx.in_shape(0).size()));
  const auto ks = operand_strides(ctx.in_shape(1), perm_of(n, "kt_perm", ctx.in_shape(1).size()));
  const auto vs = operand_strides(ctx.in_shape(2), perm_of(n, "v_perm", ctx.in_shape(2).size()));
  const auto ys = output_strides(ctx.out_shape(0), perm_of(n, "y_perm", y.size()));
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
  else if (!mask.empty()) ctx.fail("unknown mask kind '" + mask + "'");
  if (!mask.empty() && n.attr_int("mask_first", 0)) opts += " -DMASK_FIRST";
  // CPU devices: four query rows a work-item share each key and value vector (a GPT-style
  // decoder's [4, 64, 64] attention 33 -> 28 us, minima on PoCL, 2-core EPYC); elsewhere a row each.
  const int64_t rb = ctx.caps().cpu_shaped() ? 4 : 1, blocks = (M + rb - 1) / rb;
  opts += " -DRB=" + std::to_string(rb);
  const Operand scores = ctx.workspace(DType::Float32, {ob[0] * ob[1] * blocks * rb, N});
  cl_mem mask_buf = mask.empty() ? ctx.in_buf(0) : ctx.in_buf(3);
  ctx.launch("attention", "attention_rows", opts,
             {static_cast<size_t>(blocks), static_cast<size_t>(ob[1]), static_cast<size_t>(ob[0])},
             ctx.caps().cpu_shaped() ? std::vector<size_t>{1, 1, 1} : std::vector<size_t>{},
             ctx.in_buf(0), ctx.in_buf(1), ctx.in_buf(2), mask_buf, ctx.out_buf(0), scores.mem, M, N, D, DV, qs[0],
             qs[1], qs[2], ks[0], ks[1], ks[2], vs[0], vs[1], vs[2], ys[0], ys[1], ys[2], ms[0], ms[1], ms[2], ms[3],
             scale, n.attr_float("fill", 0.0f));
}

double attention_flops(const OpContext& ctx) {
  const Shape& y = ctx.out_shape(0);
  const Shape& q = ctx.in_shape(0);
  const double rows = static_cast<double>(numel(y) / y.back());
  const double N = static_cast<double>(ctx.in_shape(1).back());
  return rows * N * (2.0 * static_cast<double>(q.back()) + 2.0 * static_cast<double>(y.back()) + 5.0);
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
