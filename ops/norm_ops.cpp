// Normalizations (BatchNormalization, InstanceNormalization, LayerNormalization, LRN,
// MeanVarianceNormalization) and Softmax, LogSoftmax, Hardmax. Kernels: kernels/norm.cl and
// kernels/softmax.cl.
#include <cmath>
#include <cstdint>

#include "ops/core/expansion.hpp"
#include "ops/elementwise.hpp"
#include "ops/epilogue.hpp"
#include "runtime/ir/host_math.hpp"
#include "ops/reduce_ops.hpp"
#include "ops/variants.hpp"

namespace oi {

using ocl_infer::dtype_name;
using ocl_infer::shape_to_string;

namespace {

void check_float(OpContext& ctx, int i) {
  if (!is_float(ctx.in_type(i)))
    ctx.fail("input " + std::to_string(i) + " must be a floating-point tensor, not " +
             dtype_name(ctx.in_type(i)));
}

// "-DT=float -DTA=float", the double versions, or for float16 storage "-DT=half -DTA=float
// -DS=F16 -DCT=float" (kernels/storage.cl). `t` is the storage type, the same for every float
// operand of the node (OpTraits::shared_float_storage).
std::string float_type_defines(const OpContext& ctx, DType t) {
  if (t == DType::Float16) return "-DT=half -DTA=float -DS=F16 -DCT=float";
  if (t != DType::Float32 && t != DType::Float64)
    ctx.unsupported(std::string(dtype_name(t)) + " tensors are not supported on the device yet");
  std::string ct = cl_type(t);
  return "-DT=" + ct + " -DTA=" + ct + (t == DType::Float64 ? " -DUSE_FP64" : "");
}

// The type host-folded parameters are computed and uploaded in: float for float16 storage.
DType compute_type(DType storage) { return storage == DType::Float16 ? DType::Float32 : storage; }

// " -DINDEX32" when flat indices below n fit in 32 bits.
std::string index_defines(int64_t n) {
  return n < (int64_t{1} << 31) ? " -DINDEX32" : "";
}

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to && d < s.size(); ++d) p *= s[d];
  return p;
}

// ---- BatchNormalization (inference) ------------------------------------------------------
// Per-channel parameters apply to x viewed as [.., channels, block]: with spatial=1 (the only
// mode from opset 9) channels = C and block = the spatial size; with spatial=0 (opsets 6-7) every
// (c, position) pair has its own parameters.
struct BnGeom {
  int64_t channels, block;
};

BnGeom bn_geom(OpContext& ctx) {
  const Shape& xs = ctx.in_shape(0);
  if (xs.size() < 2) ctx.fail("X must have rank >= 2 (N x C x ...), got " + shape_to_string(xs));
  const int64_t c = xs[1], s = product(xs, 2, xs.size());
  const bool spatial = ctx.opset() >= 9 || ctx.node().attr_int("spatial", 1) != 0;
  return spatial ? BnGeom{c, s} : BnGeom{c * s, 1};
}

void bn_infer(OpContext& ctx) {
  const Node& n = ctx.node();
  check_float(ctx, 0);
  if (ctx.num_inputs() != 5) ctx.fail("needs 5 inputs (X, scale, B, mean, var)");
  if (ctx.opset() >= 14 && n.attr_int("training_mode", 0) != 0)
    ctx.unsupported("training_mode=1 is not supported (inference only)");
  if (ctx.opset() < 7 && n.attr_int("is_test", 0) == 0)
    ctx.unsupported("is_test=0 (training) is not supported (inference only)");
  for (int k = 1; k < ctx.num_outputs(); ++k)
    if (ctx.has_output(k))
      ctx.unsupported("output " + std::to_string(k) +
                      " (running or saved statistics) exists only in training mode, which is "
                      "not supported");
  const BnGeom g = bn_geom(ctx);
  static const char* names[] = {"X", "scale", "B", "mean", "var"};
  for (int k = 1; k < 5; ++k) {
    check_float(ctx, k);
    if (numel(ctx.in_shape(k)) != g.channels)
      ctx.fail(std::string(names[k]) + " has shape " + shape_to_string(ctx.in_shape(k)) +
               ", expected " + std::to_string(g.channels) + " elements for X of shape " +
               shape_to_string(ctx.in_shape(0)));
  }
  ctx.set_out(0, ctx.in_type(0), ctx.in_shape(0));
}

void bn_build(BuildContext& ctx) {
  const DType t = ctx.input(0).dtype;
  const BnGeom g = bn_geom(ctx);
  const int64_t n = numel(ctx.in_shape(0));
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  const Epilogue& epi = ctx.node().epilogue;
  const std::string opts = float_type_defines(ctx, t) + index_defines(n) + epilogue_defines(epi);
  cl_mem residual = epi.residual >= 0 ? ctx.value(epi.residual).mem : ctx.out_buf(0);
  const size_t local = ctx.caps().linear_local();
  const std::vector<size_t> global{round_up(static_cast<size_t>(n), local)};
  if (ctx.is_const(1) && ctx.is_const(2) && ctx.is_const(3) && ctx.is_const(4)) {
    // Fold everything into y = x * a + b, in double so that folding adds no rounding of its own.
    Tensor a(compute_type(t), {g.channels}), b(compute_type(t), {g.channels});
    for (int64_t c = 0; c < g.channels; ++c) {
      double sc = host_get_f(ctx.in_data(1), c), bias = host_get_f(ctx.in_data(2), c);
      double mean = host_get_f(ctx.in_data(3), c), var = host_get_f(ctx.in_data(4), c);
      double k = sc / std::sqrt(var + eps);
      host_set_f(a, c, k);
      host_set_f(b, c, bias - mean * k);
    }
    cl_mem am = ctx.params(a.bytes.data(), a.bytes.size());
    cl_mem bm = ctx.params(b.bytes.data(), b.bytes.size());
    // Rows of a channel's values (spatial BN with planes of 16+ values, float compute): vectors
    // along the row, the channel's a and b read once per work-item. CPU devices take 64 values
    // a work-item (local size 1), GPUs 8 with work-groups along the row (CPU-shaped plans as the
    // other kernel families choose them: rusticl, a CPU device with GPU-like limits, takes 8).
    if (g.block >= 16 && t != DType::Float64) {
      const bool cpu = ctx.caps().cpu_shaped();
      const int64_t chunk = cpu ? 64 : 8;
      const size_t chunks = static_cast<size_t>((g.block + chunk - 1) / chunk);
      const size_t rows = static_cast<size_t>(n / g.block);
      const size_t l0 = cpu ? 1 : std::min<size_t>(local, round_up(chunks, 8));
      ctx.launch("norm", "bn_rows", opts + " -DBN_CHUNK=" + std::to_string(chunk), {round_up(chunks, l0), rows},
                 {l0, 1}, ctx.in_buf(0), ctx.out_buf(0), am, bm, g.block, g.channels, residual);
      return;
    }
    ctx.launch("norm", "bn_scale_shift", opts, global, {local}, ctx.in_buf(0), ctx.out_buf(0), am,
               bm, n, g.block, g.channels, residual);
    return;
  }
  for (int k = 1; k < 5; ++k)
    if (ctx.input(k).dtype != t)
      ctx.unsupported("run-time parameters of another type than X are not supported");
  ctx.launch("norm", "bn_generic", opts, global, {local}, ctx.in_buf(0), ctx.in_buf(1),
             ctx.in_buf(2), ctx.in_buf(3), ctx.in_buf(4), ctx.out_buf(0), n, g.block, g.channels,
             static_cast<float>(eps), residual);
}

// ---- row normalizations: LayerNormalization, InstanceNormalization, MVN ------------------
struct RowNorm {
  std::vector<bool> reduced;  // dims of X that one row spans
  std::string defines;        // AFFINE_*, HAS_BIAS, STATS_OUT, STD_PLUS_EPS
  int scale = -1, bias = -1;  // input indices, -1 when absent
  float eps = 1e-5f;
};

// The row normalizations as a kernel family (ops/variants.hpp).
struct NormRowsDesc {
  const RowNorm* rn;
  ReduceGeometry g;
  std::string base;  // type and geometry build options
  // Rows are contiguous and consecutive: row r spans [r * n_red, (r + 1) * n_red).
  bool contiguous() const {
    return g.nr() == 1 && g.red_strides[0] == 1 && (g.nk() == 0 || (g.nk() == 1 && g.kept_strides[0] == g.n_red));
  }
};

struct NormRowsArgs {
  cl_mem scale, bias, mean_out, inv_out;
  int64_t scale_n, bias_n;
};

NormRowsArgs norm_rows_args(BuildContext& ctx, const RowNorm& rn) {
  NormRowsArgs a{};
  a.scale = rn.scale >= 0 ? ctx.in_buf(rn.scale) : nullptr;
  a.bias = rn.bias >= 0 ? ctx.in_buf(rn.bias) : nullptr;
  a.scale_n = rn.scale >= 0 ? numel(ctx.in_shape(rn.scale)) : 1;
  a.bias_n = rn.bias >= 0 ? numel(ctx.in_shape(rn.bias)) : 1;
  a.mean_out = ctx.has_output(1) ? ctx.out_buf(1) : nullptr;
  a.inv_out = ctx.has_output(2) ? ctx.out_buf(2) : nullptr;
  return a;
}

// group: one work-group per row, a tree reduction in local memory (GPU-shaped; any geometry).
bool group_applies(const NormRowsDesc&, const DeviceCaps&) { return true; }
VariantParams group_defaults(const NormRowsDesc& d, const DeviceCaps&) {
  return {{"wg", static_cast<int>(row_work_group(d.g.n_red))}};
}
bool group_valid(const NormRowsDesc&, const DeviceCaps& c, const VariantParams& p) {
  const int wg = p.at("wg");
  return wg >= 1 && wg <= 1024 && (wg & (wg - 1)) == 0 && static_cast<size_t>(wg) <= c.max_work_group_size;
}
void group_run(BuildContext& ctx, const NormRowsDesc& d, const VariantParams& p) {
  const auto params = d.g.params();
  cl_mem pm = ctx.params(params.data(), params.size() * sizeof(int64_t));
  std::string opts;
  const size_t wg = pick_work_group(ctx, "norm", "norm_rows", d.base, static_cast<size_t>(p.at("wg")), &opts);
  const NormRowsArgs a = norm_rows_args(ctx, *d.rn);
  ctx.launch("norm", "norm_rows", opts, {static_cast<size_t>(d.g.n_out) * wg}, {wg}, ctx.in_buf(0), ctx.out_buf(0),
             pm, d.g.n_red, a.scale, a.bias, a.scale_n, a.bias_n, a.mean_out, a.inv_out, d.rn->eps);
}

// serial: one work-item per contiguous row (CPU-shaped: PoCL runs a work-group as a loop, so a
// local-memory reduction over 32-128 work-items costs more than the row itself for short rows).
bool serial_applies(const NormRowsDesc& d, const DeviceCaps&) { return d.contiguous(); }
bool serial_preferred(const NormRowsDesc& d, const DeviceCaps& c) {
  // Enough rows to fill the device with one work-item each, rows short enough for one work-item.
  return c.cpu_shaped() && d.g.n_out >= 16 * static_cast<int64_t>(c.compute_units) && d.g.n_red <= 65536;
}
VariantParams serial_defaults(const NormRowsDesc&, const DeviceCaps&) { return {{"local", 16}}; }
bool serial_valid(const NormRowsDesc&, const DeviceCaps& c, const VariantParams& p) {
  const int l = p.at("local");
  return l >= 1 && static_cast<size_t>(l) <= c.max_work_group_size;
}
void serial_run(BuildContext& ctx, const NormRowsDesc& d, const VariantParams& p) {
  const size_t local = static_cast<size_t>(p.at("local"));
  const NormRowsArgs a = norm_rows_args(ctx, *d.rn);
  // Whole float8 vectors when the row, the scale and the bias split into them.
  auto splits = [](int64_t k) { return k == 1 || k % 8 == 0; };
  const bool vec = ctx.input(0).dtype != DType::Float64 && d.g.n_red % 8 == 0 && splits(a.scale_n) && splits(a.bias_n);
  ctx.launch("norm", "norm_rows_serial", d.base + (vec ? " -DROW_VEC=8" : ""), {round_up(static_cast<size_t>(d.g.n_out), local)}, {local},
             ctx.in_buf(0), ctx.out_buf(0), d.g.n_out, d.g.n_red, a.scale, a.bias, a.scale_n, a.bias_n, a.mean_out,
             a.inv_out, d.rn->eps);
}

std::string norm_key(const NormRowsDesc& d) {
  return "rows" + std::to_string(d.g.n_out) + " n" + std::to_string(d.g.n_red) + (d.contiguous() ? " contiguous" : "") +
         " " + d.base;
}

const KernelFamily<NormRowsDesc>& norm_family() {
  static const KernelFamily<NormRowsDesc> f{
      "norm",
      {
          {"serial", "contiguous rows (LayerNormalization): one work-item per row", {{"local", {1, 4, 16, 64}}},
           serial_applies, serial_valid, serial_defaults, serial_run, serial_preferred},
          {"group", "any row geometry: one work-group per row, reduction in local memory",
           {{"wg", {32, 64, 128, 256}}}, group_applies, group_valid, group_defaults, group_run},
      },
      norm_key};
  return f;
}

void launch_norm_rows(BuildContext& ctx, const RowNorm& rn) {
  const DType t = ctx.input(0).dtype;
  NormRowsDesc d{&rn, reduce_geometry(ctx.in_shape(0), rn.reduced), ""};
  d.base = float_type_defines(ctx, t) + d.g.defines() + rn.defines;
  if (d.g.n_out == 0 || d.g.n_red == 0) return;
  run_variant(ctx, norm_family(), d);
}

// LayerNormalization's Scale and B broadcast to X.shape[axis:]; supported when, without leading
// 1s, they are a suffix of it, so that the kernel can index them with (position in row) % size.
bool suffix_of(const Shape& p, const Shape& x, size_t axis) {
  size_t lead = 0;
  while (lead < p.size() && p[lead] == 1) ++lead;
  const size_t len = p.size() - lead;
  if (len > x.size() - axis) return false;
  for (size_t k = 0; k < len; ++k)
    if (p[lead + k] != x[x.size() - len + k]) return false;
  return true;
}

int64_t ln_axis(OpContext& ctx) {
  return ctx.axis(ctx.node().attr_int("axis", -1), static_cast<int64_t>(ctx.in_shape(0).size()));
}

void ln_infer(OpContext& ctx) {
  const Node& n = ctx.node();
  check_float(ctx, 0);
  const Shape& xs = ctx.in_shape(0);
  if (xs.empty()) ctx.fail("X must have rank >= 1");
  const size_t axis = static_cast<size_t>(ln_axis(ctx));
  if (!ctx.has_input(1)) ctx.fail("input 1 (Scale) is required");
  if (n.attr_int("stash_type", 1) != 1)
    ctx.unsupported("stash_type " + std::to_string(n.attr_int("stash_type", 1)) +
                    " is not supported (only 1, float32)");
  for (int k = 1; k < 3; ++k) {
    if (!ctx.has_input(k)) continue;
    if (ctx.in_type(k) != ctx.in_type(0)) ctx.fail("Scale and B must have X's type");
    if (!suffix_of(ctx.in_shape(k), xs, axis))
      ctx.unsupported(std::string(k == 1 ? "Scale" : "B") + " of shape " +
                      shape_to_string(ctx.in_shape(k)) + " is not supported for X of shape " +
                      shape_to_string(xs) + " and axis " + std::to_string(axis) +
                      " (only trailing-dims broadcasting)");
  }
  ctx.set_out(0, ctx.in_type(0), xs);
  if (n.op_type == "RMSNormalization") {
    if (ctx.has_input(2)) ctx.fail("RMSNormalization takes X and scale only");
    if (ctx.has_output(1) || ctx.has_output(2)) ctx.fail("RMSNormalization has one output");
    return;
  }
  Shape stats(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(axis));
  stats.resize(xs.size(), 1);
  ctx.set_out(1, DType::Float32, stats);
  ctx.set_out(2, DType::Float32, stats);
}

void ln_build(BuildContext& ctx) {
  const size_t axis = static_cast<size_t>(ln_axis(ctx));
  RowNorm rn;
  rn.reduced.assign(ctx.in_shape(0).size(), false);
  for (size_t d = axis; d < rn.reduced.size(); ++d) rn.reduced[d] = true;
  rn.scale = 1;
  // RMSNormalization-23: LayerNormalization's rows and scale without the mean (nor a bias).
  rn.defines = ctx.node().op_type == "RMSNormalization" ? " -DAFFINE_COL -DRMS" : " -DAFFINE_COL";
  if (ctx.has_input(2)) {
    rn.bias = 2;
    rn.defines += " -DHAS_BIAS";
  }
  if (ctx.has_output(1) || ctx.has_output(2)) rn.defines += " -DSTATS_OUT";
  rn.eps = ctx.node().attr_float("epsilon", 1e-5f);
  launch_norm_rows(ctx, rn);
}

void instnorm_infer(OpContext& ctx) {
  check_float(ctx, 0);
  const Shape& xs = ctx.in_shape(0);
  if (xs.size() < 3)
    ctx.fail("input must have rank >= 3 (N x C x D1 ...), got " + shape_to_string(xs));
  for (int k = 1; k < 3; ++k) {
    if (ctx.in_type(k) != ctx.in_type(0)) ctx.fail("scale and B must have the input's type");
    if (numel(ctx.in_shape(k)) != xs[1])
      ctx.fail(std::string(k == 1 ? "scale" : "B") + " has shape " +
               shape_to_string(ctx.in_shape(k)) + ", expected " + std::to_string(xs[1]) +
               " channels");
  }
  ctx.set_out(0, ctx.in_type(0), xs);
}

void instnorm_build(BuildContext& ctx) {
  RowNorm rn;
  rn.reduced.assign(ctx.in_shape(0).size(), true);
  rn.reduced[0] = rn.reduced[1] = false;
  rn.scale = 1;
  rn.bias = 2;
  rn.defines = " -DAFFINE_ROW";  // row n * C + c: scale index row % C
  rn.eps = ctx.node().attr_float("epsilon", 1e-5f);
  launch_norm_rows(ctx, rn);
}

std::vector<bool> mvn_reduced(OpContext& ctx) {
  const int64_t rank = static_cast<int64_t>(ctx.in_shape(0).size());
  std::vector<bool> r(rank, false);
  for (int64_t a : ctx.node().attr_ints("axes", {0, 2, 3})) {
    int64_t d = ctx.axis(a, rank);
    if (r[d]) ctx.fail("axis " + std::to_string(a) + " is listed twice");
    r[d] = true;
  }
  return r;
}

void mvn_infer(OpContext& ctx) {
  check_float(ctx, 0);
  mvn_reduced(ctx);
  ctx.set_out(0, ctx.in_type(0), ctx.in_shape(0));
}

void mvn_build(BuildContext& ctx) {
  RowNorm rn;
  rn.reduced = mvn_reduced(ctx);
  // The ONNX function body divides by sqrt(variance) + 1e-9.
  rn.defines = " -DSTD_PLUS_EPS";
  rn.eps = 1e-9f;
  launch_norm_rows(ctx, rn);
}

// ---- LRN ---------------------------------------------------------------------------------
void lrn_infer(OpContext& ctx) {
  check_float(ctx, 0);
  const Shape& xs = ctx.in_shape(0);
  if (xs.size() < 2)
    ctx.fail("input must have rank >= 2 (N x C x ...), got " + shape_to_string(xs));
  if (!ctx.node().has("size")) ctx.fail("attribute 'size' is required");
  const int64_t size = ctx.node().attr_int("size", 0);
  if (size < 1 || size >= (int64_t{1} << 31)) ctx.fail("size must be in [1, 2^31), got " + std::to_string(size));
  ctx.set_out(0, ctx.in_type(0), xs);
}

void lrn_build(BuildContext& ctx) {
  const Node& n = ctx.node();
  const Shape& xs = ctx.in_shape(0);
  const int64_t total = numel(xs);
  const size_t local = ctx.caps().linear_local();
  ctx.launch("norm", "lrn", float_type_defines(ctx, ctx.input(0).dtype) + index_defines(total),
             {round_up(static_cast<size_t>(total), local)}, {local}, ctx.in_buf(0), ctx.out_buf(0),
             total, xs[1], product(xs, 2, xs.size()), static_cast<int32_t>(n.attr_int("size", 1)),
             n.attr_float("alpha", 1e-4f), n.attr_float("beta", 0.75f), n.attr_float("bias", 1.0f));
}

// ---- Softmax, LogSoftmax, Hardmax --------------------------------------------------------
// x viewed as [outer, len, inner]. Before opset 13 the input is coerced to 2-D at `axis` and
// normalized over the whole flattened inner part; from opset 13 along the one axis.
struct SoftmaxGeom {
  int64_t outer, len, inner;
};

SoftmaxGeom softmax_geom(OpContext& ctx) {
  const Shape& s = ctx.in_shape(0);
  if (s.empty()) ctx.fail("input must have rank >= 1");
  const bool old = ctx.opset() < 13;
  const size_t axis = static_cast<size_t>(
      ctx.axis(ctx.node().attr_int("axis", old ? 1 : -1), static_cast<int64_t>(s.size())));
  if (old) return {product(s, 0, axis), product(s, axis, s.size()), 1};
  return {product(s, 0, axis), s[axis], product(s, axis + 1, s.size())};
}

void softmax_infer(OpContext& ctx) {
  check_float(ctx, 0);
  softmax_geom(ctx);
  ctx.set_out(0, ctx.in_type(0), ctx.in_shape(0));
}

void softmax_build(BuildContext& ctx) {
  const std::string& op = ctx.node().op_type;
  const SoftmaxGeom g = softmax_geom(ctx);
  const std::string macro = op == "Softmax"      ? "SOFTMAX"
                            : op == "LogSoftmax" ? "LOGSOFTMAX"
                                                 : "HARDMAX";
  const std::string opts = float_type_defines(ctx, ctx.input(0).dtype) + " -DOP_" + macro;
  const int64_t n_out = g.outer * g.inner;
  if (n_out == 0 || g.len == 0) return;
  // A row per work-group (with barriers between its reductions) pays on GPUs; on CPU devices a
  // row per work-item is as fast or faster (PoCL, 2-core Xeon: 64-wide attention rows 225 -> 190
  // us before EXP_ONCE), and most of a softmax's time there is exp().
  if (g.inner == 1 && g.len >= 32 && macro != "HARDMAX" && !ctx.caps().cpu_shaped()) {
    std::string o;
    const size_t wg =
        pick_work_group(ctx, "softmax", "softmax_rows_wg", opts, row_work_group(g.len), &o);
    ctx.launch("softmax", "softmax_rows_wg", o, {static_cast<size_t>(g.outer) * wg}, {wg},
               ctx.in_buf(0), ctx.out_buf(0), g.len);
    return;
  }
  // Float32/64 storage: each exp() once, its value kept in the output until the sum is known (the
  // same value as computing it again); float16 storage would round it in between.
  const std::string exp_once = ctx.input(0).dtype != DType::Float16 && ctx.output(0).dtype != DType::Float16 &&
                                       macro == "SOFTMAX"
                                   ? " -DEXP_ONCE"
                                   : "";
  // CPU devices, contiguous rows: a row per work-item in vectors (softmax_rows_vec; a GPT-style
  // decoder's [4,64,64] attention softmax 108 -> 13 us on PoCL, docs/performance.md).
  if (g.inner == 1 && g.len >= 4 && macro != "HARDMAX" && ctx.input(0).dtype != DType::Float64 &&
      ctx.caps().cpu_shaped()) {
    const int vw = g.len >= 16 ? 16 : g.len >= 8 ? 8 : 4;
    ctx.launch("softmax", "softmax_rows_vec", opts + exp_once + " -DROW_VW=" + std::to_string(vw),
               {static_cast<size_t>(g.outer)}, {1}, ctx.in_buf(0), ctx.out_buf(0), g.len, g.outer);
    return;
  }
  // CPU devices, an axis before the last: a work-item per vector of neighbouring inner positions
  // (softmax_inner_vec; YOLOv8's DFL softmax over 16 bins of [1,16,4,8400]: 2.5 -> 0.2 ms on PoCL).
  if (g.inner >= 4 && macro != "HARDMAX" && ctx.input(0).dtype != DType::Float64 && ctx.caps().cpu_shaped()) {
    const int vw = g.inner >= 16 ? 16 : g.inner >= 8 ? 8 : 4;
    const int64_t blocks = (g.inner + vw - 1) / vw, items = g.outer * blocks;
    ctx.launch("softmax", "softmax_inner_vec", opts + exp_once + " -DINNER_VW=" + std::to_string(vw),
               {static_cast<size_t>(items)}, {1}, ctx.in_buf(0), ctx.out_buf(0), g.len, g.inner, blocks, items);
    return;
  }
  const size_t local = ctx.caps().linear_local();
  const std::string generic = opts + exp_once;
  ctx.launch("softmax", "softmax_generic", generic, {round_up(static_cast<size_t>(n_out), local)},
             {local}, ctx.in_buf(0), ctx.out_buf(0), n_out, g.len, g.inner);
}

double two_per_output(const OpContext& ctx) { return 2.0 * static_cast<double>(numel(ctx.out_shape(0))); }
double three_per_output(const OpContext& ctx) { return 3.0 * static_cast<double>(numel(ctx.out_shape(0))); }
double one_per_output(const OpContext& ctx) { return static_cast<double>(numel(ctx.out_shape(0))); }

// ---- GroupNormalization, LpNormalization: ONNX functions, expanded ---------------------------
// GroupNormalization-18 (scale and bias per group) and -21 (per channel): X [N, C, ...] viewed as
// [N, G, C/G * spatial], each row normalised as LayerNormalization's (the same kernel, its
// statistics and epsilon), then y = normalised * scale[c] + bias[c].
int64_t group_count(const OpContext& ctx) {
  const int64_t g = ctx.node().attr_int("num_groups", 0);
  if (!ctx.node().has("num_groups")) ctx.fail("attribute num_groups is required");
  if (g < 1) ctx.fail("num_groups must be positive, not " + std::to_string(g));
  return g;
}

void group_norm_infer(OpContext& ctx) {
  check_float(ctx, 0);
  const Shape& x = ctx.in_shape(0);
  if (x.size() < 2) ctx.fail("X must be [N, C, ...], not " + shape_to_string(x));
  const int64_t groups = group_count(ctx), c = x[1];
  if (c % groups != 0)
    ctx.fail("num_groups " + std::to_string(groups) + " does not divide the " + std::to_string(c) + " channels");
  if (ctx.node().attr_int("stash_type", 1) != 1)
    ctx.unsupported("stash_type " + std::to_string(ctx.node().attr_int("stash_type", 1)) + " (only 1, float32)");
  const int64_t per = ctx.opset() >= 21 ? c : groups;
  for (int k = 1; k < 3; ++k) {
    if (!ctx.has_input(k)) ctx.fail(std::string(k == 1 ? "scale" : "bias") + " is required");
    if (ctx.in_type(k) != ctx.in_type(0)) ctx.fail("scale and bias must have X's type");
    if (ctx.in_shape(k) != Shape{per})
      ctx.fail(std::string(k == 1 ? "scale" : "bias") + " must have shape [" + std::to_string(per) + "] (" +
               (ctx.opset() >= 21 ? "one per channel" : "one per group, GroupNormalization-18") + "), not " +
               shape_to_string(ctx.in_shape(k)));
  }
  ctx.set_out(0, ctx.in_type(0), x);
}

bool group_norm_expand(Graph& g, int ni) {
  const Node n = g.nodes[ni];
  if (!g.values[n.inputs[0]].shape_known) return false;
  // Copies: adding values below moves g.values.
  const Shape x = g.values[n.inputs[0]].shape;
  const DType xt = g.values[n.inputs[0]].dtype;
  const int64_t groups = n.attr_int("num_groups", 1), c = x[1];
  Expansion e(g, n);
  const int rows = e.node("Reshape", {n.inputs[0], e.ints("rows_shape", {0, groups, -1})}, "rows");
  Tensor one(xt, {1});
  host_set_f(one, 0, 1.0);
  const int normed = e.node("LayerNormalization", {rows, g.add_constant(n.name + "/one", std::move(one))}, "normalized");
  e.attr_int("axis", 2);
  e.attr_float("epsilon", n.attr_float("epsilon", 1e-5f));
  const int back = e.node("Reshape", {normed, e.node("Shape", {n.inputs[0]}, "x_shape")}, "normalized_x");
  // scale and bias as [C, 1, ..., 1] (per group: repeated C/G times first).
  std::vector<int64_t> per_channel(x.size() - 1, 1);
  per_channel[0] = c;
  auto channels = [&](int in, const std::string& what) {
    if (g.opset(n.domain) < 21) {
      const int col = e.node("Reshape", {in, e.ints(what + "_col", {groups, 1})}, what + "_groups");
      in = e.node("Expand", {col, e.ints(what + "_per_group", {groups, c / groups})}, what + "_repeated");
    }
    return e.node("Reshape", {in, e.ints(what + "_shape", per_channel)}, what + "_channels");
  };
  const int scaled = e.node("Mul", {back, channels(n.inputs[1], "scale")}, "scaled");
  e.node("Add", {scaled, channels(n.inputs[2], "bias")}, "y", n.outputs[0]);
  replace_node(g, ni, std::move(e.nodes));
  return true;
}

// LpNormalization: x / ||x||_p along axis (p 1 or 2); a zero norm leaves its zeros (x / 1), as
// ONNX Runtime does.
void lp_norm_infer(OpContext& ctx) {
  check_float(ctx, 0);
  const int64_t p = ctx.node().attr_int("p", 2);
  if (p != 1 && p != 2) ctx.fail("p must be 1 or 2, not " + std::to_string(p));
  ctx.axis(ctx.node().attr_int("axis", -1), static_cast<int64_t>(ctx.in_shape(0).size()));
  ctx.set_out(0, ctx.in_type(0), ctx.in_shape(0));
}

bool lp_norm_expand(Graph& g, int ni) {
  const Node n = g.nodes[ni];
  if (!g.values[n.inputs[0]].shape_known) return false;
  const int64_t rank = static_cast<int64_t>(g.values[n.inputs[0]].shape.size());
  int64_t axis = n.attr_int("axis", -1);
  if (axis < 0) axis += rank;
  const DType t = g.values[n.inputs[0]].dtype;
  Expansion e(g, n);
  const std::string reduce = n.attr_int("p", 2) == 1 ? "ReduceL1" : "ReduceL2";
  int norm;
  if (g.opset() >= 18) {
    norm = e.node(reduce, {n.inputs[0], e.ints("axes", {axis})}, "norm");
  } else {
    norm = e.node(reduce, {n.inputs[0]}, "norm");
    e.attr_ints("axes", {axis});
  }
  e.attr_int("keepdims", 1);
  const int zero = e.node("Equal", {norm, e.scalar("zero", t, 0)}, "norm_is_zero");
  const int safe = e.node("Where", {zero, e.scalar("one", t, 1), norm}, "safe_norm");
  e.node("Div", {n.inputs[0], safe}, "y", n.outputs[0]);
  replace_node(g, ni, std::move(e.nodes));
  return true;
}

}  // namespace

std::vector<VariantInfo> norm_variant_info() { return family_info(norm_family()); }

void add_norm_ops(std::vector<OpDef>& t) {
  // `inplace` where output 0 may overwrite input 0: every element (BatchNormalization) or every
  // row (the rest) is read in full by the work-item or work-group that writes it, and no other
  // input can have the output's shape. Not LayerNormalization (Scale may have X's shape) nor LRN
  // (reads neighbouring channels).
  // BatchNormalization: 6 (is_test, spatial), 7 (spatial), 9 (always spatial), 14
  // (training_mode), 15 (separate types for the statistics). A standalone BatchNormalization (no
  // foldable producer) takes the activation after it.
  for (int v : {6, 7, 9, 14, 15})
    t.push_back(OpDef("BatchNormalization", v, bn_infer).build(bn_build).inplace().epilogue().flops(two_per_output).shared_storage().any_storage());
  for (int v : {1, 6})
    t.push_back(OpDef("InstanceNormalization", v, instnorm_infer).build(instnorm_build).inplace().flops(two_per_output).shared_storage().any_storage());
  // Standard since opset 17; accepted at any opset (as ONNX Runtime does) because the
  // fuse_layernorm pass makes it from the decomposed form that older exports contain.
  t.push_back(OpDef("LayerNormalization", 1, ln_infer).build(ln_build).flops(two_per_output).shared_storage().any_storage());
  t.push_back(OpDef("RMSNormalization", 23, ln_infer).build(ln_build).flops(two_per_output).shared_storage().any_storage());
  // ONNX functions, run as the ops of their bodies.
  for (int v : {18, 21}) t.push_back(OpDef("GroupNormalization", v, group_norm_infer).expands(group_norm_expand));
  t.push_back(OpDef("LpNormalization", 1, lp_norm_infer).expands(lp_norm_expand));
  for (int v : {9, 13})
    t.push_back(OpDef("MeanVarianceNormalization", v, mvn_infer).build(mvn_build).inplace().flops(one_per_output).shared_storage().any_storage());
  for (int v : {1, 13}) t.push_back(OpDef("LRN", v, lrn_infer).build(lrn_build).flops(one_per_output).shared_storage().any_storage());
  for (int v : {1, 11, 13}) {
    t.push_back(OpDef("Softmax", v, softmax_infer).build(softmax_build).inplace().flops(three_per_output).shared_storage().any_storage());
    t.push_back(OpDef("LogSoftmax", v, softmax_infer).build(softmax_build).inplace().flops(three_per_output).shared_storage().any_storage());
    t.push_back(OpDef("Hardmax", v, softmax_infer).build(softmax_build).inplace().flops(one_per_output).shared_storage().any_storage());
  }
}

}  // namespace oi
