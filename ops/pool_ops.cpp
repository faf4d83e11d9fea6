// MaxPool, AveragePool, LpPool and their Global* forms, all computed by kernels/pool.cl (the
// global forms as a window that covers the whole input).
#include <string>

#include "ops/conv_ops.hpp"
#include "ops/elementwise.hpp"

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

void check_input(OpContext& ctx, Kind kind) {
  const Shape& x = ctx.in_shape(0);
  if (x.size() < 3)
    ctx.fail("input X must have rank >= 3 (N, C, spatial...), got " + shape_to_string(x));
  if (x.size() > 5) ctx.unsupported("pooling over more than 3 spatial dims is not supported");
  const DType t = ctx.in_type(0);
  const bool ok = t == DType::Float32 || t == DType::Float64 ||
                  (kind == Kind::Max && (t == DType::Int8 || t == DType::UInt8));
  if (!ok)
    ctx.unsupported(std::string("inputs of type ") + ocl_infer::dtype_name(t) +
                    " are not supported");
}

Window pool_window(OpContext& ctx) {
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

void pool_build(OpContext& ctx) {
  const Node& n = ctx.node();
  const Kind kind = kind_of(n.op_type);
  const Window w = pool_window(ctx);
  const DType t = ctx.in_type(0);
  std::string opts = type_defines({{"T", t}});
  switch (kind) {
    case Kind::Max:
      opts += std::string(" -DPOOL_MAX -DT_LOWEST=") + lowest(t);
      if (ctx.has_output(1)) {
        opts += " -DHAS_INDICES";
        if (n.attr_int("storage_order", 0) != 0) opts += " -DCOLUMN_MAJOR";
      }
      break;
    case Kind::Avg:
      opts += " -DPOOL_AVG";
      if (n.attr_int("count_include_pad", 0) != 0) opts += " -DCOUNT_PAD";
      break;
    case Kind::Lp: {
      const int64_t p = n.attr_int("p", 2);
      if (p < 1) ctx.fail("p must be >= 1, got " + std::to_string(p));
      opts += " -DPOOL_LP -DP_NORM=" + std::to_string(p);
      break;
    }
  }
  const auto in3 = to3(w.in, 1), out3 = to3(w.out, 1);
  std::vector<int32_t> p;
  for (const auto& a :
       {in3, out3, to3(w.k, 1), to3(w.s, 1), to3(w.d, 1), to3(w.pb, 0), to3(w.pe, 0)})
    for (int64_t v : a) p.push_back(static_cast<int32_t>(v));
  const Shape& x = ctx.in_shape(0);
  cl_mem y = ctx.out_buf(0);
  cl_mem idx = ctx.has_output(1) ? ctx.out_buf(1) : y;
  // Small windows become compile-time constants so the loops unroll (global pools keep the
  // runtime loop: their window is the whole plane).
  static const char* names[] = {"KD", "KH", "KW", "SD", "SH", "SW", "DD", "DH", "DW"};
  if (p[6] * p[7] * p[8] <= 64)
    for (int i = 0; i < 9; ++i) opts += std::string(" -DWIN_") + names[i] + "=" + std::to_string(p[6 + i]);
  // A row of outputs per work-group: PoCL runs it as one vectorizable loop instead of paying its
  // per-work-group cost for every output.
  const size_t ow = static_cast<size_t>(out3[2]);
  const size_t local_w = ow >= 32 ? 32 : ow >= 16 ? 16 : ow >= 8 ? 8 : 1;
  const size_t rows = static_cast<size_t>(out3[0] * out3[1]);
  if (kind == Kind::Max && !ctx.has_output(1) && p[6] * p[7] * p[8] <= 64) {
    ctx.launch("pool", "pool_max_rows", opts, {rows, static_cast<size_t>(x[0] * x[1])}, {1, 1},
               ctx.in_buf(0), y, ctx.dev().params(p.data(), p.size() * sizeof(int32_t)));
    return;
  }
  const size_t local_h = local_w == 1 ? 1 : rows >= 8 ? 8 : 1;
  ctx.launch("pool", "pool_generic", opts,
             {(ow + local_w - 1) / local_w * local_w, (rows + local_h - 1) / local_h * local_h,
              static_cast<size_t>(x[0] * x[1])},
             {local_w, local_h, 1}, ctx.in_buf(0), y, idx, ctx.dev().params(p.data(), p.size() * sizeof(int32_t)));
}

}  // namespace

void add_pool_ops(std::vector<OpDef>& t) {
  for (const char* op :
       {"MaxPool", "AveragePool", "LpPool", "GlobalMaxPool", "GlobalAveragePool", "GlobalLpPool"})
    t.push_back({op, 1, pool_infer, nullptr, pool_build});
}

}  // namespace oi
