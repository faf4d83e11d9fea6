// Gemm and MatMul, both lowered to the blocked product in kernels/gemm.cl.
#include "ops/gemm_ops.hpp"

#include <algorithm>
#include <climits>
#include <string>

#include "ops/elementwise.hpp"
#include "ops/epilogue.hpp"
#include "ops/host_math.hpp"

namespace oi {

namespace {

using ocl_infer::shape_to_string;

// The register block of one work-item; see kernels/gemm.cl.
struct GemmBlock {
  int mr, vw, nv;
  int nr() const { return vw * nv; }
};

GemmBlock choose_block(int64_t M, int64_t N) {
  GemmBlock b{6, 16, 2};
  if (N < 16) {
    b.vw = N > 4 ? 8 : 4;
    b.nv = 1;
  } else if (round_up(N, 16) < round_up(N, 32)) {
    b.nv = 1;  // a 32-wide panel would mostly compute padding
  }
  // 6 x 32 keeps 12 accumulators in registers; a single-vector row leaves room for more rows.
  b.mr = b.nv == 2 ? 6 : 8;
  if (M < b.mr) b.mr = M <= 2 ? static_cast<int>(std::max<int64_t>(M, 1)) : (M <= 4 ? 4 : 6);
  return b;
}

// Host copy of B in the panel layout of gemm_f32_packed.
std::vector<float> pack_b_host(const Tensor& t, const GemmDesc& d, int nr, int64_t npad) {
  std::vector<float> p(static_cast<size_t>(d.b_count * npad * d.K), 0.0f);
  const float* b = t.data<float>();
  for (int64_t j = 0; j < d.b_count; ++j)
    for (int64_t n = 0; n < d.N; ++n)
      for (int64_t k = 0; k < d.K; ++k)
        p[static_cast<size_t>(((j * (npad / nr) + n / nr) * d.K + k) * nr + n % nr)] =
            b[j * d.b_bs + k * d.b_ks + n * d.b_ns];
  return p;
}

void require_int32(OpContext& ctx, std::initializer_list<int64_t> v) {
  for (int64_t x : v)
    if (x > INT_MAX) ctx.unsupported("matrix dimensions beyond 2^31 elements are not supported");
}

int add_float_value(OpContext& ctx, const std::string& tag, size_t floats) {
  Graph& g = ctx.graph();
  const int id = g.add_value(ctx.node().name + "/" + tag);
  Value& v = g.values[id];
  v.dtype = DType::Float32;
  v.shape = {static_cast<int64_t>(std::max<size_t>(floats, 1))};
  v.shape_known = true;
  return id;
}

}  // namespace

cl_mem scratch_buffer(OpContext& ctx, const std::string& tag, size_t floats) {
  return ctx.dev().buffer_of(add_float_value(ctx, tag, floats));
}

cl_mem constant_buffer(OpContext& ctx, const std::string& tag, const std::vector<float>& data) {
  const int id = add_float_value(ctx, tag, data.size());
  Value& v = ctx.graph().values[id];
  Tensor t(DType::Float32, v.shape);
  std::copy(data.begin(), data.end(), t.data<float>());
  v.data = std::make_shared<const Tensor>(std::move(t));
  return ctx.dev().buffer_of(id);
}

void launch_gemm(OpContext& ctx, cl_mem a, cl_mem y, const GemmDesc& d) {
  const int64_t batch = static_cast<int64_t>(d.a_off.size());
  if (d.M == 0 || d.N == 0 || batch == 0) return;
  const GemmBlock blk = choose_block(d.M, d.N);
  const int nr = blk.nr();
  const int64_t npad = static_cast<int64_t>(round_up(static_cast<size_t>(d.N), nr));
  require_int32(ctx, {d.M, d.N, d.K, npad * d.K, d.a_rs, d.a_ks, d.c_rs, d.c_cs});
  const std::string opts = "-DMR=" + std::to_string(blk.mr) + " -DVW=" + std::to_string(blk.vw) +
                           " -DNV=" + std::to_string(blk.nv);

  // B packed: a constant is packed once here; anything else by a kernel before every product.
  DeviceBuilder& dev = ctx.dev();
  std::shared_ptr<const Tensor> b_const = ctx.graph().values[d.b_value].data;
  cl_mem bp;
  if (b_const) {
    bp = constant_buffer(ctx, "packed_b", pack_b_host(*b_const, d, nr, npad));
  } else {
    bp = scratch_buffer(ctx, "packed_b", static_cast<size_t>(d.b_count * npad * d.K));
    ctx.launch(
        "gemm", "gemm_f32_pack_b", opts,
        {static_cast<size_t>(npad), static_cast<size_t>(d.K), static_cast<size_t>(d.b_count)}, {},
        dev.buffer_of(d.b_value), static_cast<int32_t>(d.b_ks), static_cast<int32_t>(d.b_ns),
        static_cast<int64_t>(d.b_bs), bp, static_cast<int32_t>(d.K), static_cast<int32_t>(d.N),
        static_cast<int32_t>(npad));
  }

  std::vector<int64_t> off(static_cast<size_t>(2 * batch));
  for (int64_t b = 0; b < batch; ++b) {
    off[2 * b] = d.a_off[b];
    off[2 * b + 1] = (d.b_index.empty() ? 0 : d.b_index[b]) * npad * d.K;
  }
  cl_mem offs = dev.params(off.data(), off.size() * sizeof(int64_t));
  std::string run_opts = opts + epilogue_defines(d.epilogue);
  cl_mem c = d.c ? d.c : y;  // any valid buffer stands in for an absent operand
  cl_mem residual = d.epilogue.residual >= 0 ? dev.buffer_of(d.epilogue.residual) : y;
  if (d.c && d.beta != 0.0f) run_opts += " -DHAS_C";
  ctx.launch("gemm", "gemm_f32_packed", run_opts,
             {static_cast<size_t>((d.M + blk.mr - 1) / blk.mr), static_cast<size_t>(npad / nr),
              static_cast<size_t>(batch)},
             {1, 1, 1}, a, static_cast<int32_t>(d.a_rs), static_cast<int32_t>(d.a_ks), bp, offs, c,
             static_cast<int32_t>(d.c_rs), static_cast<int32_t>(d.c_cs), residual, y,
             static_cast<int32_t>(d.M), static_cast<int32_t>(d.N), static_cast<int32_t>(d.K),
             d.alpha, d.beta);
}

namespace {

void require_f32(OpContext& ctx, int i) {
  if (ctx.in_type(i) != DType::Float32)
    ctx.unsupported(std::string("only float32 inputs are supported, input ") + std::to_string(i) +
                    " is " + ocl_infer::dtype_name(ctx.in_type(i)));
}

// ---- Gemm ----------------------------------------------------------------------------------
struct GemmShape {
  int64_t M, N, K;
  int64_t c_rs = 0, c_cs = 0;
};

GemmShape gemm_shape(OpContext& ctx) {
  const Node& n = ctx.node();
  const Shape &a = ctx.in_shape(0), &b = ctx.in_shape(1);
  if (a.size() != 2 || b.size() != 2)
    ctx.fail("A and B must be 2-D, got " + shape_to_string(a) + " and " + shape_to_string(b));
  const bool ta = n.attr_int("transA", 0) != 0, tb = n.attr_int("transB", 0) != 0;
  GemmShape s;
  s.M = ta ? a[1] : a[0];
  s.K = ta ? a[0] : a[1];
  s.N = tb ? b[0] : b[1];
  const int64_t kb = tb ? b[1] : b[0];
  if (kb != s.K)
    ctx.fail("inner dimensions differ: A " + shape_to_string(a) + (ta ? " (transposed)" : "") +
             ", B " + shape_to_string(b) + (tb ? " (transposed)" : ""));
  if (ctx.has_input(2)) {
    const Shape& c = ctx.in_shape(2);
    if (c.size() > 2) ctx.fail("C must have rank <= 2, got " + shape_to_string(c));
    const int64_t c0 = c.size() == 2 ? c[0] : 1, c1 = c.empty() ? 1 : c.back();
    if ((c0 != 1 && c0 != s.M) || (c1 != 1 && c1 != s.N))
      ctx.fail("C " + shape_to_string(c) + " does not broadcast to [" + std::to_string(s.M) + "," +
               std::to_string(s.N) + "]");
    s.c_rs = c0 == 1 ? 0 : c1;
    s.c_cs = c1 == 1 ? 0 : 1;
  }
  return s;
}

void gemm_infer(OpContext& ctx) {
  for (int i = 0; i < 3; ++i)
    if (ctx.has_input(i)) require_f32(ctx, i);
  GemmShape s = gemm_shape(ctx);
  ctx.set_out(0, DType::Float32, {s.M, s.N});
}

void gemm_build(OpContext& ctx) {
  const Node& n = ctx.node();
  GemmShape s = gemm_shape(ctx);
  const bool ta = n.attr_int("transA", 0) != 0, tb = n.attr_int("transB", 0) != 0;
  GemmDesc d;
  d.M = s.M;
  d.N = s.N;
  d.K = s.K;
  d.a_rs = ta ? 1 : s.K;
  d.a_ks = ta ? s.M : 1;
  d.b_value = n.inputs[1];
  d.b_ks = tb ? 1 : s.N;
  d.b_ns = tb ? s.K : 1;
  d.alpha = n.attr_float("alpha", 1.0f);
  d.beta = n.attr_float("beta", 1.0f);
  d.epilogue = n.epilogue;
  if (ctx.has_input(2) && numel(ctx.in_shape(2)) > 0) {
    d.c = ctx.in_buf(2);
    d.c_rs = s.c_rs;
    d.c_cs = s.c_cs;
  }
  launch_gemm(ctx, ctx.in_buf(0), ctx.out_buf(0), d);
}

// ---- MatMul --------------------------------------------------------------------------------
struct MatmulShape {
  Shape a_batch, b_batch, batch, out;
  int64_t M, N, K;
};

MatmulShape matmul_shape(OpContext& ctx) {
  const Shape &a = ctx.in_shape(0), &b = ctx.in_shape(1);
  if (a.empty() || b.empty()) ctx.fail("MatMul inputs must have rank >= 1");
  MatmulShape s;
  s.M = a.size() == 1 ? 1 : a[a.size() - 2];
  s.K = a.back();
  s.N = b.size() == 1 ? 1 : b.back();
  const int64_t kb = b.size() == 1 ? b[0] : b[b.size() - 2];
  if (kb != s.K)
    ctx.fail("inner dimensions differ: " + shape_to_string(a) + " x " + shape_to_string(b));
  if (a.size() > 2) s.a_batch.assign(a.begin(), a.end() - 2);
  if (b.size() > 2) s.b_batch.assign(b.begin(), b.end() - 2);
  if (!broadcast_shapes(s.a_batch, s.b_batch, &s.batch))
    ctx.fail("batch dimensions of " + shape_to_string(a) + " and " + shape_to_string(b) +
             " do not broadcast");
  s.out = s.batch;
  if (a.size() > 1) s.out.push_back(s.M);
  if (b.size() > 1) s.out.push_back(s.N);
  return s;
}

void matmul_infer(OpContext& ctx) {
  require_f32(ctx, 0);
  require_f32(ctx, 1);
  MatmulShape s = matmul_shape(ctx);
  ctx.set_out(0, DType::Float32, s.out);
}

void matmul_build(OpContext& ctx) {
  const Node& n = ctx.node();
  MatmulShape s = matmul_shape(ctx);
  GemmDesc d;
  d.M = s.M;
  d.N = s.N;
  d.K = s.K;
  d.a_rs = s.K;
  d.b_value = n.inputs[1];
  d.b_ks = s.N;
  d.epilogue = n.epilogue;
  d.b_count = numel(s.b_batch);
  d.b_bs = s.K * s.N;
  if (s.b_batch.empty() || d.b_count == 1) {
    // One B for every batch: A's batches are consecutive rows of one taller matrix.
    d.M *= numel(s.batch);
    d.b_count = 1;
  } else {
    const int64_t batch = numel(s.batch);
    d.a_off.resize(static_cast<size_t>(batch));
    d.b_index.resize(static_cast<size_t>(batch));
    for (int64_t i = 0; i < batch; ++i) {
      d.a_off[i] = broadcast_index(s.batch, s.a_batch, i) * s.M * s.K;
      d.b_index[i] = broadcast_index(s.batch, s.b_batch, i);
    }
  }
  launch_gemm(ctx, ctx.in_buf(0), ctx.out_buf(0), d);
}

}  // namespace

void add_gemm_ops(std::vector<OpDef>& t) {
  // Both honour Node::epilogue (the last field): a fused activation / residual add.
  t.push_back({"Gemm", 1, gemm_infer, nullptr, gemm_build, 0, false, false, false, true});
  t.push_back({"MatMul", 1, matmul_infer, nullptr, matmul_build, 0, false, false, false, true});
}

}  // namespace oi
