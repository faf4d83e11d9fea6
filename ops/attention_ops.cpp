// ai.ocl_infer.FusedAttention: scaled dot-product attention in one kernel (kernels/attention.cl).
// Only the fuse_attention pass makes this node (runtime/compiler/passes/fuse_attention.cpp), from
//   S = MatMul(Q, Kt); [S = S * c | S / c]; [S = S + mask | Where(cond, fill, S) | Where(cond, S,
//   fill)]; P = Softmax(S, last axis); Y = MatMul(P, V)
// Inputs: Q [..., M, D], Kt [..., D, N], V [..., N, DV], and the mask (float, added) or condition
// (bool) broadcastable to [..., M, N]; at most two batch dims, broadcast as MatMul does.
// Attributes: scale (float, 1: none), scale_div (1: S / scale), mask ("add", "fill_true",
// "fill_false" or absent), fill (float), mask_first (1: the mask before the scale).
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

void attention_infer(OpContext& ctx) {
  for (int i = 0; i < 3; ++i)
    if (!is_float(ctx.in_type(i)) || ctx.in_type(i) != ctx.in_type(0))
      ctx.fail("Q, Kt and V must be floating-point tensors of one type");
  const Shape &q = ctx.in_shape(0), &k = ctx.in_shape(1), &v = ctx.in_shape(2);
  if (q.size() < 2 || k.size() < 2 || v.size() < 2 || q.size() > 4 || k.size() > 4 || v.size() > 4)
    ctx.fail("Q, Kt and V must have rank 2 to 4");
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
  ctx.set_out(0, ctx.in_type(0), out);
}

// Element strides of an operand's two batch dims in the output's batch [B1, B2]: 0 where it
// broadcasts.
void batch_strides(const Shape& s, const Shape& out_batch, int64_t st[2]) {
  const Shape b = batch_of(s);
  const int64_t mat = s[s.size() - 2] * s.back();
  st[1] = b[1] == 1 && out_batch[1] != 1 ? 0 : mat;
  st[0] = b[0] == 1 && out_batch[0] != 1 ? 0 : mat * b[1];
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
  const Shape &q = ctx.in_shape(0), &k = ctx.in_shape(1), &v = ctx.in_shape(2);
  const Shape& y = ctx.out_shape(0);
  const Shape ob = batch_of(y);
  const int64_t M = q[q.size() - 2], D = q.back(), N = k.back(), DV = v.back();
  int64_t qs[2], ks[2], vs[2];
  batch_strides(q, ob, qs);
  batch_strides(k, ob, ks);
  batch_strides(v, ob, vs);
  const Node& n = ctx.node();
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
             qs[1], ks[0], ks[1], vs[0], vs[1], ms[0], ms[1], ms[2], ms[3], scale, n.attr_float("fill", 0.0f));
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
