// Gemm and MatMul, both lowered to the blocked product in kernels/gemm.cl.
#include "ops/gemm_ops.hpp"

#include <algorithm>
#include <climits>
#include <string>

#include "ops/elementwise.hpp"
#include "ops/epilogue.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

namespace {

using ocl_infer::shape_to_string;

// Host copy of B in the panel layout of gemm_f32_packed, written in order (it wrote column by
// column, every value nr floats from the last).
HostFloats pack_b_host(const Tensor& t, const GemmDesc& d, int nr, int64_t npad) {
  HostFloats p(static_cast<size_t>(d.b_count * npad * d.K), 0.0f);
  const float* b = t.data<float>();
  float* out = p.data();
  for (int64_t j = 0; j < d.b_count; ++j)
    for (int64_t n0 = 0; n0 < npad; n0 += nr) {
      const int64_t cols = std::min<int64_t>(nr, d.N - n0);
      for (int64_t k = 0; k < d.K; ++k, out += nr) {
        const float* src = b + j * d.b_bs + k * d.b_ks + n0 * d.b_ns;
        for (int64_t c = 0; c < cols; ++c) out[c] = src[c * d.b_ns];
      }
    }
  return p;
}

void require_int32(const OpContext& ctx, std::initializer_list<int64_t> v) {
  for (int64_t x : v)
    if (x > INT_MAX) ctx.unsupported("matrix dimensions beyond 2^31 elements are not supported");
}

// A GEMM problem and its operands, as the variants see it.
struct GemmProblem {
  const GemmDesc* d;
  cl_mem a, y;
  bool b_const;  // B is a constant (packed once at plan time)
};

// "m49 n3072 k768 batch1 a768,1 b3072,1 bconst c0,1"
std::string gemm_key(const GemmProblem& p) {
  const GemmDesc& d = *p.d;
  return "m" + std::to_string(d.M) + " n" + std::to_string(d.N) + " k" + std::to_string(d.K) + " batch" +
         std::to_string(d.a_off.size()) + " a" + std::to_string(d.a_rs) + "," + std::to_string(d.a_ks) + " b" +
         std::to_string(d.b_ks) + "," + std::to_string(d.b_ns) + (p.b_const ? " bconst" : "") +
         (d.c ? " c" + std::to_string(d.c_rs) + "," + std::to_string(d.c_cs) : "");
}

// packed: each work-item owns an MR x (VW*NV) register block over B packed in panels of VW*NV
// columns (kernels/gemm.cl).
VariantParams packed_defaults(const GemmProblem& p, const DeviceCaps& c) {
  const int64_t M = p.d->M, N = p.d->N;
  // Register blocks sized by the CPU's native vector width: MR rows x 2 vectors of VW columns in
  // MR*2 vector accumulators. With 16-float native vectors (AVX-512: 32 registers) 8 x 32 fits:
  // convnext_tiny's MatMuls 3-15 % faster than 6 x 32 on an Intel Xeon (skylake-avx512, PoCL
  // 3.1), 4 x 32 slower. With 8-float vectors (AVX2: 16 registers) 6 x 16 keeps 12 accumulators
  // and the two B vectors in registers, where 6 x 32 (24 ymm accumulators) spilled:
  // bert_like_t128's products 12.2 -> 6.4 ms, the whole model 15.5 -> 9.8 ms (AMD EPYC Zen 3,
  // AVX2, PoCL 3.1). GPUs and other devices keep 16-wide vectors.
  const bool cpu = c.cpu_shaped();
  const int native = static_cast<int>(c.native_vector_width_float);
  int vw = cpu && native < 16 ? (native <= 4 ? 4 : 8) : 16, nv = 2;
  if (N < vw) {
    vw = N > 4 ? 8 : 4;
    nv = 1;
  } else if (round_up(static_cast<size_t>(N), vw) < round_up(static_cast<size_t>(N), 2 * vw)) {
    nv = 1;  // a two-vector panel would mostly compute padding
  }
  // A single-vector row leaves room for more rows.
  int mr = nv == 2 ? (cpu && native >= 16 ? 8 : 6) : 8;
  if (M < mr) mr = M <= 2 ? static_cast<int>(std::max<int64_t>(M, 1)) : (M <= 4 ? 4 : 6);
  return {{"mr", mr}, {"vw", vw}, {"nv", nv}};
}

bool packed_applies(const GemmProblem&, const DeviceCaps&) { return true; }

bool packed_valid(const GemmProblem&, const DeviceCaps&, const VariantParams& v) {
  const int mr = v.at("mr"), vw = v.at("vw"), nv = v.at("nv");
  return mr >= 1 && mr <= 16 && (vw == 4 || vw == 8 || vw == 16) && nv >= 1 && nv <= 4;
}

void packed_run(BuildContext& ctx, const GemmProblem& p, const VariantParams& v) {
  const GemmDesc& d = *p.d;
  const int64_t batch = static_cast<int64_t>(d.a_off.size());
  const int mr = v.at("mr"), nr = v.at("vw") * v.at("nv");
  const int64_t npad = static_cast<int64_t>(round_up(static_cast<size_t>(d.N), nr));
  require_int32(ctx, {d.M, d.N, d.K, npad * d.K, d.a_rs, d.a_ks, d.c_rs, d.c_cs});
  std::string opts = "-DMR=" + std::to_string(mr) + " -DVW=" + std::to_string(v.at("vw")) +
                     " -DNV=" + std::to_string(v.at("nv")) + BuildContext::storage_option("AS", d.a_storage) +
                     BuildContext::storage_option("BS", d.b_host || d.b_host_pack ? DType::Float32 : ctx.input(d.b_input).dtype) +
                     BuildContext::storage_option("CS", d.c_storage) + BuildContext::storage_option("YS", d.y_storage) +
                     (d.epilogue.residual >= 0 ? BuildContext::storage_option("RS", ctx.value(d.epilogue.residual).dtype)
                                               : "");

  // B packed: a constant is packed once here; anything else by a kernel before every product.
  cl_mem bp;
  std::string packed_opts;  // constants are packed in B's storage type
  if (d.b_host_pack) {
    HostFloats packed(static_cast<size_t>(d.b_count * npad * d.K), 0.0f);
    d.b_host_pack(nr, npad, packed.data());
    bp = ctx.constant_floats(std::move(packed), DType::Float32);
  } else if (d.b_host) {
    bp = ctx.constant_floats(pack_b_host(*d.b_host, d, nr, npad), DType::Float32);
  } else if (ctx.is_const(d.b_input)) {
    const DType st = ctx.input(d.b_input).dtype;
    packed_opts = BuildContext::storage_option("PS", st);
    Tensor widened;
    bp = ctx.constant_floats(pack_b_host(as_float32(ctx.in_data(d.b_input), &widened), d, nr, npad), st);
  } else {
    bp = ctx.scratch(DType::Float32, {d.b_count * npad * d.K}).mem;
    ctx.launch("gemm", "gemm_f32_pack_b", opts,
               {static_cast<size_t>(npad), static_cast<size_t>(d.K), static_cast<size_t>(d.b_count)}, {},
               ctx.in_buf(d.b_input), static_cast<int32_t>(d.b_ks), static_cast<int32_t>(d.b_ns),
               static_cast<int64_t>(d.b_bs), bp, static_cast<int32_t>(d.K), static_cast<int32_t>(d.N),
               static_cast<int32_t>(npad));
  }

  std::vector<int64_t> off(static_cast<size_t>(2 * batch));
  for (int64_t b = 0; b < batch; ++b) {
    off[2 * b] = d.a_off[b];
    off[2 * b + 1] = (d.b_index.empty() ? 0 : d.b_index[b]) * npad * d.K;
  }
  cl_mem offs = ctx.params(off.data(), off.size() * sizeof(int64_t));
  std::string run_opts = opts + packed_opts + epilogue_defines(d.epilogue);
  cl_mem c = d.c ? d.c : p.y;  // any valid buffer stands in for an absent operand
  cl_mem residual = d.epilogue.residual >= 0 ? ctx.value(d.epilogue.residual).mem : p.y;
  if (d.c && d.beta != 0.0f) run_opts += " -DHAS_C";
  ctx.launch("gemm", "gemm_f32_packed", run_opts,
             {static_cast<size_t>((d.M + mr - 1) / mr), static_cast<size_t>(npad / nr), static_cast<size_t>(batch)},
             {1, 1, 1}, p.a, static_cast<int32_t>(d.a_rs), static_cast<int32_t>(d.a_ks), bp, offs, c,
             static_cast<int32_t>(d.c_rs), static_cast<int32_t>(d.c_cs), residual, p.y, static_cast<int32_t>(d.M),
             static_cast<int32_t>(d.N), static_cast<int32_t>(d.K), d.alpha, d.beta);
}

// tiled: the GPU-shaped product (kernels/gemm_tiled.cl): TS x TS tiles per work-group of
// (TS/RN) x (TS/RM) work-items, TK-deep slices staged in local memory, B read in place.
bool tiled_applies(const GemmProblem&, const DeviceCaps& c) { return c.max_work_group_size >= 16; }
bool tiled_preferred(const GemmProblem&, const DeviceCaps& c) { return !c.cpu_shaped(); }

bool tiled_valid(const GemmProblem&, const DeviceCaps& c, const VariantParams& v) {
  return tiled_params_fit(c, v);
}

VariantParams tiled_defaults(const GemmProblem& p, const DeviceCaps& c) {
  return tiled_params_default(c, p.d->M >= 64 && p.d->N >= 64);
}

void tiled_run(BuildContext& ctx, const GemmProblem& p, const VariantParams& v) {
  const GemmDesc& d = *p.d;
  const int64_t batch = static_cast<int64_t>(d.a_off.size());
  const int ts = v.at("ts"), rm = v.at("rm"), rn = v.at("rn");
  require_int32(ctx, {d.M, d.N, d.K, d.a_rs, d.a_ks, d.b_ks, d.b_ns, d.c_rs, d.c_cs});
  std::string opts = "-DTS=" + std::to_string(ts) + " -DRM=" + std::to_string(rm) + " -DRN=" + std::to_string(rn) +
                     " -DTK=" + std::to_string(v.at("tk")) + BuildContext::storage_option("AS", d.a_storage) +
                     BuildContext::storage_option("BS", d.b_host ? DType::Float32 : ctx.input(d.b_input).dtype) +
                     BuildContext::storage_option("CS", d.c_storage) + BuildContext::storage_option("YS", d.y_storage) +
                     (d.epilogue.residual >= 0 ? BuildContext::storage_option("RS", ctx.value(d.epilogue.residual).dtype)
                                               : "") +
                     epilogue_defines(d.epilogue);
  std::vector<int64_t> off(static_cast<size_t>(2 * batch));
  for (int64_t b = 0; b < batch; ++b) {
    off[2 * b] = d.a_off[b];
    off[2 * b + 1] = (d.b_index.empty() ? 0 : d.b_index[b]) * d.b_bs;
  }
  cl_mem offs = ctx.params(off.data(), off.size() * sizeof(int64_t));
  cl_mem c = d.c ? d.c : p.y;
  cl_mem residual = d.epilogue.residual >= 0 ? ctx.value(d.epilogue.residual).mem : p.y;
  if (d.c && d.beta != 0.0f) opts += " -DHAS_C";
  const size_t wx = static_cast<size_t>(ts / rn), wy = static_cast<size_t>(ts / rm);
  ctx.launch("gemm_tiled", "gemm_f32_tiled", opts,
             {static_cast<size_t>((d.N + ts - 1) / ts) * wx, static_cast<size_t>((d.M + ts - 1) / ts) * wy,
              static_cast<size_t>(batch)},
             {wx, wy, 1}, p.a, static_cast<int32_t>(d.a_rs), static_cast<int32_t>(d.a_ks),
             d.b_host ? ctx.constant(*d.b_host).mem : ctx.in_buf(d.b_input),
             static_cast<int32_t>(d.b_ks), static_cast<int32_t>(d.b_ns), offs, c, static_cast<int32_t>(d.c_rs),
             static_cast<int32_t>(d.c_cs), residual, p.y, static_cast<int32_t>(d.M), static_cast<int32_t>(d.N),
             static_cast<int32_t>(d.K), d.alpha, d.beta);
}

const KernelFamily<GemmProblem>& gemm_family() {
  static const KernelFamily<GemmProblem> f{
      "gemm",
      {
          {"tiled", "GPU-shaped: TSxTS tiles per work-group in local memory, RMxRN per work-item, B in place",
           tiled_param_space(), tiled_applies, tiled_valid, tiled_defaults, tiled_run, tiled_preferred},
          {"packed", "register-blocked: MR rows x VW*NV columns per work-item, B packed in panels",
           {{"mr", {1, 2, 4, 6, 8}}, {"vw", {4, 8, 16}}, {"nv", {1, 2}}},
           packed_applies, packed_valid, packed_defaults, packed_run},
      },
      gemm_key};
  return f;
}

}  // namespace

std::vector<VariantInfo> gemm_variant_info() { return family_info(gemm_family()); }

void launch_gemm(BuildContext& ctx, cl_mem a, cl_mem y, const GemmDesc& d) {
  if (d.M == 0 || d.N == 0 || d.a_off.empty()) return;
  run_variant(ctx, gemm_family(), GemmProblem{&d, a, y, d.b_host || ctx.is_const(d.b_input)});
}

void launch_gemm_packed(BuildContext& ctx, cl_mem a, cl_mem y, const GemmDesc& d) {
  if (d.M == 0 || d.N == 0 || d.a_off.empty()) return;
  const GemmProblem p{&d, a, y, d.b_host || d.b_host_pack || ctx.is_const(d.b_input)};
  packed_run(ctx, p, packed_defaults(p, ctx.caps()));
}

namespace {

// Float32 and float16 tensors (float16: stored as half, computed in float); all the same type.
void require_float(const OpContext& ctx, int i) {
  const DType t = ctx.in_type(i);
  if (t != DType::Float32 && t != DType::Float16)
    ctx.unsupported(std::string("only float32 and float16 inputs are supported, input ") + std::to_string(i) +
                    " is " + ocl_infer::dtype_name(t));
  if (t != ctx.in_type(0)) ctx.fail("input " + std::to_string(i) + " has another type than input 0");
}

// ---- Gemm ----------------------------------------------------------------------------------
struct GemmShape {
  int64_t M, N, K;
  int64_t c_rs = 0, c_cs = 0;
};

GemmShape gemm_shape(const OpContext& ctx) {
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
    if (ctx.has_input(i)) require_float(ctx, i);
  GemmShape s = gemm_shape(ctx);
  ctx.set_out(0, ctx.in_type(0), {s.M, s.N});
}

void gemm_build(BuildContext& ctx) {
  ctx.require_float_operands();
  const Node& n = ctx.node();
  GemmShape s = gemm_shape(ctx);
  const bool ta = n.attr_int("transA", 0) != 0, tb = n.attr_int("transB", 0) != 0;
  GemmDesc d;
  d.M = s.M;
  d.N = s.N;
  d.K = s.K;
  d.a_rs = ta ? 1 : s.K;
  d.a_ks = ta ? s.M : 1;
  d.b_input = 1;
  d.b_ks = tb ? 1 : s.N;
  d.b_ns = tb ? s.K : 1;
  d.alpha = n.attr_float("alpha", 1.0f);
  d.beta = n.attr_float("beta", 1.0f);
  d.epilogue = n.epilogue;
  if (ctx.has_input(2) && numel(ctx.in_shape(2)) > 0) {
    d.c = ctx.in_buf(2);
    d.c_storage = ctx.input(2).dtype;
    d.c_rs = s.c_rs;
    d.c_cs = s.c_cs;
  }
  d.a_storage = ctx.input(0).dtype;
  d.y_storage = ctx.output(0).dtype;
  launch_gemm(ctx, ctx.in_buf(0), ctx.out_buf(0), d);
}

}  // namespace

// ---- MatMul --------------------------------------------------------------------------------
MatmulShape matmul_shape(const OpContext& ctx, int a_slot, int b_slot) {
  const Shape &a = ctx.in_shape(a_slot), &b = ctx.in_shape(b_slot);
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

namespace {

// A third input is a per-column bias that the fuse_matmul_bias pass adds (ONNX's MatMul has two).
void matmul_infer(OpContext& ctx) {
  require_float(ctx, 0);
  require_float(ctx, 1);
  MatmulShape s = matmul_shape(ctx);
  if (ctx.num_inputs() > 2) {
    require_float(ctx, 2);
    if (s.out.empty() || numel(ctx.in_shape(2)) != s.out.back())
      ctx.fail("fused bias " + shape_to_string(ctx.in_shape(2)) + " is not one value per output column");
  }
  ctx.set_out(0, ctx.in_type(0), s.out);
}

void matmul_build(BuildContext& ctx) {
  ctx.require_float_operands();
  const Node& n = ctx.node();
  MatmulShape s = matmul_shape(ctx);
  GemmDesc d;
  d.M = s.M;
  d.N = s.N;
  d.K = s.K;
  d.a_rs = s.K;
  d.b_input = 1;
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
  if (ctx.has_input(2)) {
    d.c = ctx.in_buf(2);
    d.c_storage = ctx.input(2).dtype;
    d.c_rs = 0;
    d.c_cs = 1;
    d.beta = 1.0f;
  }
  d.a_storage = ctx.input(0).dtype;
  d.y_storage = ctx.output(0).dtype;
  launch_gemm(ctx, ctx.in_buf(0), ctx.out_buf(0), d);
}

double gemm_flops(const OpContext& ctx) {
  const Shape& a = ctx.in_shape(0);
  const int64_t k = ctx.node().attr_int("transA", 0) ? a[0] : a[1];
  return static_cast<double>(numel(ctx.out_shape(0))) * (2.0 * static_cast<double>(k) + (ctx.has_input(2) ? 1 : 0));
}

double matmul_flops(const OpContext& ctx) {
  const Shape& a = ctx.in_shape(0);
  const int64_t k = a.empty() ? 1 : a.back();
  return static_cast<double>(numel(ctx.out_shape(0))) * (2.0 * static_cast<double>(k) + (ctx.has_input(2) ? 1 : 0));
}

// Folding a per-column affine into Gemm: B's output columns (its rows when transposed); only a
// per-column (or scalar) C can become a per-channel bias, and A must be a plain 2-D operand.
int64_t gemm_affine_channels(const OpContext& ctx) {
  if (!ctx.is_const(1) || (ctx.has_input(2) && !ctx.is_const(2))) return -1;
  const Shape& w = ctx.in_shape(1);
  if (w.size() != 2) return -1;
  if (ctx.node().attr_int("transA", 0) != 0 && ctx.in_shape(0).size() != 2) return -1;
  const int64_t n = ctx.node().attr_int("transB", 0) ? w[0] : w[1];
  if (ctx.has_input(2)) {
    const Shape& c = ctx.in_shape(2);
    if (!(numel(c) == 1 || (c.size() == 1 && c[0] == n) || (c.size() == 2 && c[0] == 1 && c[1] == n))) return -1;
  }
  return n;
}

void gemm_scale_weights(const OpContext& ctx, Tensor& w, const std::vector<double>& scale) {
  const bool tb = ctx.node().attr_int("transB", 0) != 0;
  const int64_t rows = w.shape[0], cols = w.shape[1];
  float* wd = w.data<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t q = 0; q < cols; ++q) {
      const int64_t c = tb ? r : q;
      wd[r * cols + q] = static_cast<float>(wd[r * cols + q] * scale[c]);
    }
}

double gemm_bias_scale(const OpContext& ctx) { return ctx.node().attr_float("beta", 1.f); }

const ChannelAffine kGemmAffine{gemm_affine_channels, gemm_scale_weights, 1, 2, gemm_bias_scale, "beta"};

}  // namespace

void add_gemm_ops(std::vector<OpDef>& t) {
  t.push_back(
      OpDef("Gemm", 1, gemm_infer).build(gemm_build).epilogue().flops(gemm_flops).affine(&kGemmAffine).any_storage());
  t.push_back(OpDef("MatMul", 1, matmul_infer).build(matmul_build).epilogue().flops(matmul_flops).any_storage());
}

}  // namespace oi
