// MaxPool, AveragePool, LpPool and their Global* forms, all computed by kernels/pool.cl (the
// global forms as a window that covers the whole input).
#include <algorithm>
#include <string>

#include "ops/conv_ops.hpp"
#include "ops/elementwise.hpp"
#include "ops/variants.hpp"

namespace oi {

namespace {

using ocl_infer::shape_to_string;

enum class Kind { Max, Avg, Lp };

Kind kind_of(const std::string& op) {
  if (op.find("Max") != std::string::npos) return Kind::Max;
  if (op.find("Lp") != std::string::npos) return Kind::Lp;
  return Kind::Avg;
}

bool is_global(const std::string& op) {
  return op.rfind("Global", 0) == 0;
}

void check_input(const OpContext& ctx, Kind kind) {
  const Shape& x = ctx.in_shape(0);
  if (x.size() < 3)
    ctx.fail("input X must have rank >= 3 (N, C, spatial...), got " + shape_to_string(x));
  if (x.size() > 5) ctx.unsupported("pooling over more than 3 spatial dims is not supported");
  const DType t = ctx.in_type(0);
  const bool ok = t == DType::Float32 || t == DType::Float64 || t == DType::Float16 ||
                  (kind == Kind::Max && (t == DType::Int8 || t == DType::UInt8));
  if (!ok)
    ctx.unsupported(std::string("inputs of type ") + ocl_infer::dtype_name(t) +
                    " are not supported");
}

Window pool_window(const OpContext& ctx) {
  const Node& n = ctx.node();
  const Shape& x = ctx.in_shape(0);
  std::vector<int64_t> sp(x.begin() + 2, x.end());
  if (is_global(n.op_type)) {
    Window w;
    w.in = w.k = sp;
    w.s = w.d = std::vector<int64_t>(sp.size(), 1);
    w.pb = w.pe = std::vector<int64_t>(sp.size(), 0);
    w.out = std::vector<int64_t>(sp.size(), 1);
    for (int64_t d : sp)
      if (d == 0) ctx.fail("cannot pool over an empty spatial dim of " + shape_to_string(x));
    return w;
  }
  return window_geometry(ctx, sp, {}, true, n.attr_int("ceil_mode", 0) != 0);
}

void pool_infer(OpContext& ctx) {
  const Kind kind = kind_of(ctx.node().op_type);
  check_input(ctx, kind);
  const Window w = pool_window(ctx);
  Shape out{ctx.in_shape(0)[0], ctx.in_shape(0)[1]};
  out.insert(out.end(), w.out.begin(), w.out.end());
  ctx.set_out(0, ctx.in_type(0), out);
  if (ctx.has_output(1)) ctx.set_out(1, DType::Int64, out);
}

const char* lowest(DType t) {
  switch (t) {
    case DType::Int8:
      return "CHAR_MIN";
    case DType::UInt8:
      return "0";
    default:
      return "(-INFINITY)";
  }
}

// Everything a pool variant needs to know about one node.
struct PoolDesc {
  Kind kind;
  Window w;
  DType t;
  bool indices;
  std::string opts;           // type, reduction and window build options
  std::vector<int32_t> geom;  // in, out, k, s, d, pb, pe (3 each)
  int64_t planes;             // N * C
};

bool small_window(const PoolDesc& d) { return d.geom[6] * d.geom[7] * d.geom[8] <= 64; }

// rows: MaxPool with a small window and no indices, one output row per work-item (1.5x faster on
// PoCL than one output per work-item).
bool rows_applies(const PoolDesc& d, const DeviceCaps&) {
  return d.kind == Kind::Max && !d.indices && small_window(d);
}
// Work-groups of up to 8 rows: PoCL then runs 8 rows per call of its work-group function (squeezenet1_1's
// three MaxPools 10-17 % faster than with one row per work-group on an AMD EPYC, PoCL 3.1).
VariantParams rows_defaults(const PoolDesc& d, const DeviceCaps&) {
  return {{"local", static_cast<int>(std::clamp<int64_t>(d.geom[3] * d.geom[4], 1, 8))}};
}
bool rows_valid(const PoolDesc&, const DeviceCaps& c, const VariantParams& p) {
  return p.at("local") >= 1 && static_cast<size_t>(p.at("local")) <= c.max_work_group_size;
}
void rows_run(BuildContext& ctx, const PoolDesc& d, const VariantParams& p) {
  const size_t local = static_cast<size_t>(p.at("local"));
  const size_t rows = (static_cast<size_t>(d.geom[3] * d.geom[4]) + local - 1) / local * local;
  // Float, half and 8-bit storage (vectors computed in float, exact for 8-bit values): interior
  // runs of 8 outputs as vectors (int8 resnet18's MaxPool 2.7 ms -> 0.1 ms on a 2-core Xeon).
  const bool int8 = d.t == DType::UInt8 || d.t == DType::Int8;
  const bool vec = d.t == DType::Float32 || d.t == DType::Float16 || int8;
  const std::string storage = int8 ? (d.t == DType::UInt8 ? " -DS=U8 -DPOOL_BYTES" : " -DS=S8 -DPOOL_BYTES") : "";
  ctx.launch("pool", "pool_max_rows", d.opts + storage + (vec ? " -DROWS_VEC" : ""), {rows, static_cast<size_t>(d.planes)},
             {local, 1}, ctx.in_buf(0),
             ctx.out_buf(0), ctx.params(d.geom.data(), d.geom.size() * sizeof(int32_t)));
}

// sep: 2-D MaxPool with stride 1, no dilation and no indices on float or half planes of at most
// 256 columns (SPP / SPPF blocks): a work-item per plane, rows reduced along their columns once into
// a ring, then down the columns (kernels/pool.cl pool_max_sep). YOLOv8n's three 5x5 MaxPools on
// [1,128,20,20]: 180-240 us each with `rows` (every output's 25 taps, a fifth of them checked),
// ONNX Runtime 29-33 us. Every window must hold an input element (padding below the window).
bool sep_applies(const PoolDesc& d, const DeviceCaps&) {
  const auto& g = d.geom;  // in 0-2, out 3-5, k 6-8, s 9-11, d 12-14, pb 15-17, pe 18-20
  return d.kind == Kind::Max && !d.indices && (d.t == DType::Float32 || d.t == DType::Float16) && g[7] <= 16 &&
         g[8] <= 16 && g[0] == 1 && g[6] == 1 && g[10] == 1 && g[11] == 1 && g[13] == 1 && g[14] == 1 && g[5] <= 256 &&
         g[16] < g[7] && g[17] < g[8] && g[4] - 1 - g[16] < g[1] && g[5] - 1 - g[17] < g[2];
}
bool sep_preferred(const PoolDesc&, const DeviceCaps& c) { return c.cpu_shaped(); }
VariantParams sep_defaults(const PoolDesc&, const DeviceCaps&) { return {}; }
void sep_run(BuildContext& ctx, const PoolDesc& d, const VariantParams&) {
  const int32_t ring_w = (d.geom[5] + 15) / 16 * 16;
  // Windows past small_window's 64 taps (SPP's 9x9 and 13x13) are compiled in here too.
  std::string opts = d.opts;
  if (!small_window(d))
    opts += " -DWIN_KD=1 -DWIN_KH=" + std::to_string(d.geom[7]) + " -DWIN_KW=" + std::to_string(d.geom[8]) +
            " -DWIN_SD=1 -DWIN_SH=1 -DWIN_SW=1 -DWIN_DD=1 -DWIN_DH=1 -DWIN_DW=1";
  ctx.launch("pool", "pool_max_sep", opts + " -DPOOL_SEP -DSEP_W=" + std::to_string(ring_w),
             {static_cast<size_t>(d.planes)}, {1}, ctx.in_buf(0), ctx.out_buf(0), d.geom[1], d.geom[2], d.geom[4],
             d.geom[5], d.geom[16], d.geom[17], static_cast<int32_t>(d.planes));
}

// plane: average over whole planes (every output 1, no padding), float or half storage, one
// work-item per plane summing 8 lanes at a time: the generic kernel's per-tap loop took 94 us for
// squeezenet1_1's [1,1000,13,13] GlobalAveragePool on PoCL. CPU-shaped (preferred on CPUs).
bool plane_applies(const PoolDesc& d, const DeviceCaps&) {
  if (d.kind != Kind::Avg || (d.t != DType::Float32 && d.t != DType::Float16)) return false;
  for (int a = 0; a < 3; ++a)
    if (d.geom[3 + a] != 1 || d.geom[6 + a] != d.geom[a] || (d.geom[6 + a] > 1 && d.geom[12 + a] != 1) ||
        d.geom[15 + a] != 0 || d.geom[18 + a] != 0)
      return false;
  return true;
}
bool plane_preferred(const PoolDesc&, const DeviceCaps& c) { return c.cpu_shaped(); }
VariantParams plane_defaults(const PoolDesc&, const DeviceCaps&) { return {}; }
void plane_run(BuildContext& ctx, const PoolDesc& d, const VariantParams&) {
  const int64_t plane = static_cast<int64_t>(d.geom[0]) * d.geom[1] * d.geom[2];
  ctx.launch("pool", "pool_plane_avg", d.opts + " -DPLANE_AVG", {static_cast<size_t>(d.planes)}, {1}, ctx.in_buf(0),
             ctx.out_buf(0), plane, static_cast<int64_t>(d.planes));
}

// avg_rows: 2-D AveragePool with a small window, no padding or dilation, every window inside the
// input (ceil_mode adds none past the end), float or half storage: one output row per work-item
// (kernels/pool.cl pool_avg_rows). CPU-shaped (preferred on CPUs).
bool avg_rows_applies(const PoolDesc& d, const DeviceCaps&) {
  const auto& g = d.geom;  // in 0-2, out 3-5, k 6-8, s 9-11, d 12-14, pb 15-17, pe 18-20
  if (d.kind != Kind::Avg || (d.t != DType::Float32 && d.t != DType::Float16) || !small_window(d)) return false;
  if (g[0] != 1 || g[3] != 1 || g[6] != 1 || g[13] != 1 || g[14] != 1) return false;
  for (int a = 15; a < 21; ++a)
    if (g[a] != 0) return false;
  return static_cast<int64_t>(g[4] - 1) * g[10] + g[7] <= g[1] && static_cast<int64_t>(g[5] - 1) * g[11] + g[8] <= g[2];
}
bool avg_rows_preferred(const PoolDesc&, const DeviceCaps& c) { return c.cpu_shaped(); }
VariantParams avg_rows_defaults(const PoolDesc&, const DeviceCaps&) { return {}; }
void avg_rows_run(BuildContext& ctx, const PoolDesc& d, const VariantParams&) {
  ctx.launch("pool", "pool_avg_rows", d.opts + " -DAVG_ROWS", {static_cast<size_t>(d.geom[4]), static_cast<size_t>(d.planes)},
             {1, 1}, ctx.in_buf(0), ctx.out_buf(0), d.geom[1], d.geom[2], d.geom[4], d.geom[5]);
}

// generic: one output per work-item, work-groups of a row segment (PoCL then runs a row as one
// vectorizable loop instead of paying its per-work-group cost for every output).
bool generic_applies(const PoolDesc&, const DeviceCaps&) { return true; }
VariantParams generic_defaults(const PoolDesc& d, const DeviceCaps&) {
  const int64_t ow = d.geom[5], rows = d.geom[3] * d.geom[4];
  const int local_w = ow >= 32 ? 32 : ow >= 16 ? 16 : ow >= 8 ? 8 : 1;
  const int local_h = local_w == 1 ? 1 : rows >= 8 ? 8 : 1;
  return {{"local_w", local_w}, {"local_h", local_h}};
}
bool generic_valid(const PoolDesc&, const DeviceCaps& c, const VariantParams& p) {
  const int w = p.at("local_w"), h = p.at("local_h");
  return w >= 1 && h >= 1 && static_cast<size_t>(w) * static_cast<size_t>(h) <= c.max_work_group_size;
}
void generic_run(BuildContext& ctx, const PoolDesc& d, const VariantParams& p) {
  const size_t ow = static_cast<size_t>(d.geom[5]), rows = static_cast<size_t>(d.geom[3] * d.geom[4]);
  const size_t local_w = static_cast<size_t>(p.at("local_w")), local_h = static_cast<size_t>(p.at("local_h"));
  cl_mem y = ctx.out_buf(0);
  cl_mem idx = d.indices ? ctx.out_buf(1) : y;
  ctx.launch("pool", "pool_generic", d.opts,
             {(ow + local_w - 1) / local_w * local_w, (rows + local_h - 1) / local_h * local_h,
              static_cast<size_t>(d.planes)},
             {local_w, local_h, 1}, ctx.in_buf(0), y, idx, ctx.params(d.geom.data(), d.geom.size() * sizeof(int32_t)));
}

// The window geometry and the kernel options (kind, types).
std::string pool_key(const PoolDesc& d) {
  std::string s = "planes" + std::to_string(d.planes) + " geom";
  for (size_t k = 0; k < d.geom.size(); ++k) s += (k ? "," : "") + std::to_string(d.geom[k]);
  return s + (d.indices ? " indices" : "") + " " + d.opts;
}

const KernelFamily<PoolDesc>& pool_family() {
  static const KernelFamily<PoolDesc> f{
      "pool",
      {
          {"plane", "average over whole planes (global average): one work-item per plane, 8 lanes", {},
           plane_applies, nullptr, plane_defaults, plane_run, plane_preferred},
          {"avg_rows", "2-D AveragePool, window <= 64 taps inside the input, no padding or dilation, float/half: one "
                       "output row per work-item", {}, avg_rows_applies, nullptr, avg_rows_defaults, avg_rows_run,
           avg_rows_preferred},
          {"sep", "2-D MaxPool, stride 1, no dilation, no indices, float/half, rows <= 256, window <= 16x16: a plane "
                  "per work-item, rows then columns", {}, sep_applies, nullptr, sep_defaults, sep_run, sep_preferred},
          {"rows", "MaxPool, window <= 64 taps, no indices: one output row per work-item",
           {{"local", {1, 4, 8, 16}}}, rows_applies, rows_valid, rows_defaults, rows_run},
          {"generic", "any pooling: one output per work-item, row-segment work-groups",
           {{"local_w", {1, 8, 16, 32}}, {"local_h", {1, 8}}}, generic_applies, generic_valid, generic_defaults,
           generic_run},
      },
      pool_key};
  return f;
}

void pool_build(BuildContext& ctx) {
  const Node& n = ctx.node();
  PoolDesc d;
  d.kind = kind_of(n.op_type);
  d.w = pool_window(ctx);
  d.t = ctx.input(0).dtype;
  d.indices = ctx.has_output(1);
  d.opts = type_defines({{"T", d.t}});
  // The output's storage when it differs from the input's (a float16 value pooled into a float32
  // graph output, or the reverse); the kernel converts in registers.
  const DType yt = ctx.output(0).dtype;
  if (yt != d.t) {
    if (!is_float(yt) || !is_float(d.t)) ctx.unsupported("input and output storage types differ");
    d.opts += std::string(" -DYT=") + cl_type(yt) + (yt == DType::Float16 ? " -DYS=F16" : " -DYS=F32");
  }
  switch (d.kind) {
    case Kind::Max:
      d.opts += std::string(" -DPOOL_MAX -DT_LOWEST=") + lowest(d.t);
      if (d.indices) {
        d.opts += " -DHAS_INDICES";
        if (n.attr_int("storage_order", 0) != 0) d.opts += " -DCOLUMN_MAJOR";
      }
      break;
    case Kind::Avg:
      d.opts += " -DPOOL_AVG";
      if (n.attr_int("count_include_pad", 0) != 0) d.opts += " -DCOUNT_PAD";
      break;
    case Kind::Lp: {
      const int64_t p = n.attr_int("p", 2);
      if (p < 1) ctx.fail("p must be >= 1, got " + std::to_string(p));
      d.opts += " -DPOOL_LP -DP_NORM=" + std::to_string(p);
      break;
    }
  }
  for (const auto& a : {to3(d.w.in, 1), to3(d.w.out, 1), to3(d.w.k, 1), to3(d.w.s, 1), to3(d.w.d, 1),
                        to3(d.w.pb, 0), to3(d.w.pe, 0)})
    for (int64_t v : a) d.geom.push_back(static_cast<int32_t>(v));
  const Shape& x = ctx.in_shape(0);
  d.planes = x[0] * x[1];
  // Small windows become compile-time constants so the loops unroll (global pools keep the
  // runtime loop: their window is the whole plane).
  static const char* names[] = {"KD", "KH", "KW", "SD", "SH", "SW", "DD", "DH", "DW"};
  if (small_window(d))
    for (int i = 0; i < 9; ++i) d.opts += std::string(" -DWIN_") + names[i] + "=" + std::to_string(d.geom[6 + i]);
  run_variant(ctx, pool_family(), d);
}

double pool_flops(const OpContext& ctx) {
  double k = 1;
  if (is_global(ctx.node().op_type)) {
    const Shape& x = ctx.in_shape(0);
    for (size_t i = 2; i < x.size(); ++i) k *= static_cast<double>(x[i]);
  } else {
    for (auto d : ctx.node().attr_ints("kernel_shape", {})) k *= static_cast<double>(d);
  }
  return static_cast<double>(numel(ctx.out_shape(0))) * k;
}

}  // namespace

std::vector<VariantInfo> pool_variant_info() { return family_info(pool_family()); }

void add_pool_ops(std::vector<OpDef>& t) {
  for (const char* op :
       {"MaxPool", "AveragePool", "LpPool", "GlobalMaxPool", "GlobalAveragePool", "GlobalLpPool"})
    t.push_back(OpDef(op, 1, pool_infer).build(pool_build).flops(pool_flops).any_storage());
  // AveragePool-19 adds dilations, which every pool's window honours (pool_window).
  t.push_back(OpDef("AveragePool", 19, pool_infer).build(pool_build).flops(pool_flops).any_storage());
}

}  // namespace oi
