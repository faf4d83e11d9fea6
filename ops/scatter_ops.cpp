// Scatter family: ScatterElements (and the deprecated Scatter), ScatterND, and the index-driven
// constructors OneHot, EyeLike, Trilu and CumSum. Kernels in kernels/scatter.cl (see its header
// for how scatters with reductions stay deterministic and what that costs).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/copy_view.hpp"
#include "ops/elementwise.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

namespace {

using ocl_infer::dtype_name;
using ocl_infer::shape_to_string;

// ---- shared --------------------------------------------------------------------------------
enum class Reduction { None, Add, Mul, Max, Min };

const char* reduction_macro(Reduction r) {
  switch (r) {
    case Reduction::Add: return "RED_ADD";
    case Reduction::Mul: return "RED_MUL";
    case Reduction::Max: return "RED_MAX";
    case Reduction::Min: return "RED_MIN";
    case Reduction::None: break;
  }
  return "";
}

// The `reduction` attribute as the node's opset defines it: none/add/mul since 16, max/min
// since 18, absent before.
Reduction reduction_of(const OpContext& ctx) {
  const std::string r = ctx.node().attr_string("reduction", "none");
  if (ctx.node().op_type == "Scatter" || ctx.opset() < 16) {
    if (r != "none")
      ctx.fail("attribute 'reduction' is defined from opset 16 on (this model has opset " +
               std::to_string(ctx.opset()) + ")");
    return Reduction::None;
  }
  if (r == "none") return Reduction::None;
  if (r == "add") return Reduction::Add;
  if (r == "mul") return Reduction::Mul;
  if (r == "max" || r == "min") {
    if (ctx.opset() < 18) ctx.fail("reduction '" + r + "' needs opset 18 (this model has opset " + std::to_string(ctx.opset()) + ")");
    return r == "max" ? Reduction::Max : Reduction::Min;
  }
  ctx.fail("reduction must be none, add, mul, max or min, not '" + r + "'");
}

void check_index_type(const OpContext& ctx, int i) {
  DType t = ctx.in_type(i);
  if (t != DType::Int32 && t != DType::Int64)
    ctx.fail(std::string("indices must be int32 or int64, not ") + dtype_name(t));
}

// Normalises a host index against `dim`; fails (naming the index) when out of range.
int64_t host_index(const OpContext& ctx, int64_t ix, int64_t dim) {
  if (ix < -dim || ix >= dim)
    ctx.fail("index " + std::to_string(ix) + " is out of range for a dim of " + std::to_string(dim));
  return ix < 0 ? ix + dim : ix;
}

std::string index_type_option(const BuildContext& ctx, int i) {
  return ctx.in_type(i) == DType::Int32 ? " -DTI=int" : " -DTI=long";
}

// Build options for kernels that compute on elements stored as `storage`: the pointer type, the
// type to compute in (float for float16 storage) and fp64 where needed.
std::string arith_options(const BuildContext& ctx, DType storage) {
  if (storage == DType::Bool || (!is_float(storage) && !is_integer(storage)))
    ctx.unsupported(std::string("arithmetic on ") + dtype_name(storage) + " elements is not supported");
  if (storage == DType::Float16) return " -DT=half -DACC=float -DHALF_STORAGE";
  // (A device without cl_khr_fp64 is refused at the launch: BuildContext::require_fp64_support.)
  if (storage == DType::Float64) return " -DT=double -DACC=double -DUSE_FP64";
  const std::string t = cl_type(storage);
  return " -DT=" + t + " -DACC=" + t;
}

// a <- reduce(a, u) on host element storage: floats through double (rounded to the element type
// on every store, as the kernels' loop does), integers through int64 with wrap-around.
void host_reduce(Tensor& out, int64_t o, const Tensor& upd, int64_t u, Reduction r) {
  if (r == Reduction::None) {
    const size_t es = ocl_infer::dtype_size(out.dtype);
    std::memcpy(out.bytes.data() + o * es, upd.bytes.data() + u * es, es);
    return;
  }
  if (is_float(out.dtype)) {
    const double a = host_get_f(out, o), b = host_get_f(upd, u);
    double v = a;
    switch (r) {
      case Reduction::Add: v = a + b; break;
      case Reduction::Mul: v = a * b; break;
      // NaN on either side gives NaN (kernels/scatter.cl, as the Max and Min operators).
      case Reduction::Max: v = std::isnan(a) ? a : std::isnan(b) ? b : b > a ? b : a; break;
      case Reduction::Min: v = std::isnan(a) ? a : std::isnan(b) ? b : b < a ? b : a; break;
      case Reduction::None: break;
    }
    host_set_f(out, o, v);
    return;
  }
  const int64_t a = host_get_i(out, o), b = host_get_i(upd, u);
  const bool uns = out.dtype == DType::UInt64;
  const bool greater = uns ? static_cast<uint64_t>(b) > static_cast<uint64_t>(a) : b > a;
  const bool less = uns ? static_cast<uint64_t>(b) < static_cast<uint64_t>(a) : b < a;
  int64_t v = a;
  switch (r) {
    case Reduction::Add: v = static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); break;
    case Reduction::Mul: v = static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); break;
    case Reduction::Max: v = greater ? b : a; break;
    case Reduction::Min: v = less ? b : a; break;
    case Reduction::None: break;
  }
  host_set_i(out, o, v);
}

void check_reduction_type(const OpContext& ctx, Reduction r) {
  DType t = ctx.in_type(0);
  if (r != Reduction::None && (t == DType::Bool || (!is_float(t) && !is_integer(t))))
    ctx.unsupported(std::string("reduction '") + ctx.node().attr_string("reduction", "") + "' on " + dtype_name(t) +
                    " data is not supported");
}

// The output starts as a copy of the data.
void copy_data_to_output(BuildContext& ctx) {
  CopyView v;
  v.dims = {numel(ctx.in_shape(0))};
  v.in_strides = v.out_strides = {1};
  run_copies_device(ctx, {v});
}

// ---- ScatterElements, Scatter ----------------------------------------------------------------
int64_t scatter_elements_axis(const OpContext& ctx) {
  return ctx.axis(ctx.node().attr_int("axis", 0), static_cast<int64_t>(ctx.in_shape(0).size()));
}

void scatter_elements_infer(OpContext& ctx) {
  check_index_type(ctx, 1);
  const Shape &d = ctx.in_shape(0), &is = ctx.in_shape(1), &us = ctx.in_shape(2);
  if (d.empty()) ctx.fail("data must have rank >= 1");
  if (ctx.in_type(2) != ctx.in_type(0))
    ctx.fail(std::string("updates (") + dtype_name(ctx.in_type(2)) + ") and data (" + dtype_name(ctx.in_type(0)) +
             ") types differ");
  if (is != us)
    ctx.fail("indices " + shape_to_string(is) + " and updates " + shape_to_string(us) + " must have the same shape");
  if (is.size() != d.size())
    ctx.fail("indices " + shape_to_string(is) + " and data " + shape_to_string(d) + " must have the same rank");
  const int64_t axis = scatter_elements_axis(ctx);
  for (size_t k = 0; k < d.size(); ++k)
    if (static_cast<int64_t>(k) != axis && us[k] > d[k])
      ctx.fail("updates " + shape_to_string(us) + " exceed data " + shape_to_string(d) + " in dim " + std::to_string(k));
  check_reduction_type(ctx, reduction_of(ctx));
  if (ctx.is_const(1)) {
    const Tensor& idx = ctx.in_data(1);
    for (int64_t i = 0; i < idx.numel(); ++i) host_index(ctx, host_get_i(idx, i), d[axis]);
  }
  ctx.set_out(0, ctx.in_type(0), d);
}

void scatter_elements_host(OpContext& ctx) {
  const Tensor& data = ctx.in_data(0);
  const Tensor& idx = ctx.in_data(1);
  const Tensor& upd = ctx.in_data(2);
  const Reduction red = reduction_of(ctx);
  const int64_t r = static_cast<int64_t>(data.shape.size());
  const int64_t axis = scatter_elements_axis(ctx);
  auto dst = strides_of(data.shape);
  Tensor out = data;
  for (int64_t i = 0; i < upd.numel(); ++i) {
    int64_t rem = i, o = 0;
    for (int64_t d = r - 1; d >= 0; --d) {
      int64_t c = rem % upd.shape[d];
      rem /= upd.shape[d];
      if (d == axis) c = host_index(ctx, host_get_i(idx, i), data.shape[d]);
      o += c * dst[d];
    }
    host_reduce(out, o, upd, i, red);
  }
  ctx.set_out_data(0, std::move(out));
}

void scatter_elements_build(BuildContext& ctx) {
  const Shape &d = ctx.in_shape(0), &us = ctx.in_shape(2);
  const int64_t r = static_cast<int64_t>(d.size());
  const int64_t axis = scatter_elements_axis(ctx);
  const Reduction red = reduction_of(ctx);
  copy_data_to_output(ctx);
  const int64_t n = numel(us);
  if (n == 0) return;
  const cl_mem err = ctx.error_flag("an index of " + ctx.node().op_type + " is out of range for axis " +
                                    std::to_string(axis) + " of data " + shape_to_string(d));
  const size_t local = ctx.caps().linear_local();
  auto ust = strides_of(us), dst = strides_of(d);
  std::vector<int64_t> p = us;
  if (red == Reduction::None) {
    p.insert(p.end(), dst.begin(), dst.end());
    ctx.launch("scatter", "scatter_elements", word_option(ctx, ctx.input(0).dtype) + index_type_option(ctx, 1),
               {round_up(static_cast<size_t>(n), local)}, {local}, ctx.in_buf(1), ctx.in_buf(2), ctx.out_buf(0),
               ctx.params(p.data(), p.size() * sizeof(int64_t)), static_cast<int32_t>(r),
               static_cast<int32_t>(axis), d[axis], n, err);
    return;
  }
  p.insert(p.end(), ust.begin(), ust.end());
  p.insert(p.end(), dst.begin(), dst.end());
  const int64_t lines = n / us[axis];
  ctx.launch("scatter", "scatter_elements_reduce",
             arith_options(ctx, ctx.input(0).dtype) + index_type_option(ctx, 1) + " -D" + reduction_macro(red),
             {round_up(static_cast<size_t>(lines), local)}, {local}, ctx.in_buf(1), ctx.in_buf(2), ctx.out_buf(0),
             ctx.params(p.data(), p.size() * sizeof(int64_t)), static_cast<int32_t>(r), static_cast<int32_t>(axis),
             d[axis], lines, err);
}

// ---- ScatterND -----------------------------------------------------------------------------
struct ScatterNdDims {
  int64_t depth = 0, slice = 1, nsel = 1;
  Shape indexed;  // the `depth` data dims an index tuple addresses
  std::vector<int64_t> indexed_strides;
};

ScatterNdDims scatter_nd_dims(const OpContext& ctx) {
  const Shape &d = ctx.in_shape(0), &is = ctx.in_shape(1);
  if (d.empty()) ctx.fail("data must have rank >= 1");
  if (is.empty()) ctx.fail("indices must have rank >= 1");
  ScatterNdDims g;
  g.depth = is.back();
  if (g.depth > static_cast<int64_t>(d.size()))
    ctx.fail("the last indices dim " + std::to_string(g.depth) + " exceeds the data rank of " + shape_to_string(d));
  for (size_t k = 0; k + 1 < is.size(); ++k) g.nsel *= is[k];
  auto st = strides_of(d);
  for (int64_t k = 0; k < static_cast<int64_t>(d.size()); ++k) {
    if (k < g.depth) {
      g.indexed.push_back(d[k]);
      g.indexed_strides.push_back(st[k]);
    } else {
      g.slice *= d[k];
    }
  }
  return g;
}

void scatter_nd_infer(OpContext& ctx) {
  check_index_type(ctx, 1);
  const ScatterNdDims g = scatter_nd_dims(ctx);
  const Shape &d = ctx.in_shape(0), &is = ctx.in_shape(1), &us = ctx.in_shape(2);
  if (ctx.in_type(2) != ctx.in_type(0))
    ctx.fail(std::string("updates (") + dtype_name(ctx.in_type(2)) + ") and data (" + dtype_name(ctx.in_type(0)) +
             ") types differ");
  Shape want(is.begin(), is.end() - 1);
  want.insert(want.end(), d.begin() + g.depth, d.end());
  if (us != want)
    ctx.fail("updates " + shape_to_string(us) + " must have shape " + shape_to_string(want) + " (indices " +
             shape_to_string(is) + ", data " + shape_to_string(d) + ")");
  check_reduction_type(ctx, reduction_of(ctx));
  if (ctx.is_const(1)) {
    const Tensor& idx = ctx.in_data(1);
    for (int64_t i = 0; i < idx.numel(); ++i) host_index(ctx, host_get_i(idx, i), g.indexed[i % g.depth]);
  }
  ctx.set_out(0, ctx.in_type(0), d);
}

void scatter_nd_host(OpContext& ctx) {
  const ScatterNdDims g = scatter_nd_dims(ctx);
  const Tensor& idx = ctx.in_data(1);
  const Tensor& upd = ctx.in_data(2);
  const Reduction red = reduction_of(ctx);
  Tensor out = ctx.in_data(0);
  for (int64_t s = 0; s < g.nsel; ++s) {
    int64_t base = 0;
    for (int64_t k = 0; k < g.depth; ++k)
      base += host_index(ctx, host_get_i(idx, s * g.depth + k), g.indexed[k]) * g.indexed_strides[k];
    for (int64_t e = 0; e < g.slice; ++e) host_reduce(out, base + e, upd, s * g.slice + e, red);
  }
  ctx.set_out_data(0, std::move(out));
}

void scatter_nd_build(BuildContext& ctx) {
  const ScatterNdDims g = scatter_nd_dims(ctx);
  const Reduction red = reduction_of(ctx);
  copy_data_to_output(ctx);
  const int64_t n = numel(ctx.in_shape(2));
  if (n == 0) return;
  const cl_mem err = ctx.error_flag("an index of ScatterND is out of range for data " +
                                    shape_to_string(ctx.in_shape(0)));
  std::vector<int64_t> p = g.indexed;
  p.insert(p.end(), g.indexed_strides.begin(), g.indexed_strides.end());
  if (p.empty()) p.push_back(0);  // depth 0: every tuple is the whole tensor
  const size_t local = ctx.caps().linear_local();
  if (red == Reduction::None) {
    ctx.launch("scatter", "scatter_nd", word_option(ctx, ctx.input(0).dtype) + index_type_option(ctx, 1),
               {round_up(static_cast<size_t>(n), local)}, {local}, ctx.in_buf(1), ctx.in_buf(2), ctx.out_buf(0),
               ctx.params(p.data(), p.size() * sizeof(int64_t)), static_cast<int32_t>(g.depth), g.slice, n, err);
    return;
  }
  ctx.launch("scatter", "scatter_nd_reduce",
             arith_options(ctx, ctx.input(0).dtype) + index_type_option(ctx, 1) + " -D" + reduction_macro(red),
             {round_up(static_cast<size_t>(g.slice), local)}, {local}, ctx.in_buf(1), ctx.in_buf(2), ctx.out_buf(0),
             ctx.params(p.data(), p.size() * sizeof(int64_t)), static_cast<int32_t>(g.depth), g.slice, g.nsel, err);
}

// ---- OneHot --------------------------------------------------------------------------------
struct OneHotDims {
  int64_t axis = 0, depth = 0, inner = 1;
};

OneHotDims one_hot_dims(const OpContext& ctx) {
  const Shape& is = ctx.in_shape(0);
  const int64_t r = static_cast<int64_t>(is.size());
  OneHotDims h;
  const int64_t a = ctx.node().attr_int("axis", -1);
  if (a < -r - 1 || a > r)
    ctx.fail("axis " + std::to_string(a) + " is out of range for indices of rank " + std::to_string(r));
  h.axis = a < 0 ? a + r + 1 : a;
  const Tensor& dt = ctx.in_data(1);
  if (dt.numel() != 1) ctx.fail("depth must hold one element, not " + shape_to_string(dt.shape));
  const double dv = is_float(dt.dtype) ? host_get_f(dt, 0) : static_cast<double>(host_get_i(dt, 0));
  if (!(dv >= 1) || dv > 1e12) ctx.fail("depth " + std::to_string(dv) + " must be a positive count");
  h.depth = static_cast<int64_t>(dv);
  for (int64_t k = h.axis; k < r; ++k) h.inner *= is[k];
  return h;
}

void one_hot_infer(OpContext& ctx) {
  const DType it = ctx.in_type(0);
  if (it == DType::Bool || (!is_float(it) && !is_integer(it)))
    ctx.fail(std::string("indices must be numeric, not ") + dtype_name(it));
  if (numel(ctx.in_shape(2)) != 2 || ctx.in_shape(2).size() != 1)
    ctx.fail("values must be a 1-D [off, on] pair, not " + shape_to_string(ctx.in_shape(2)));
  const OneHotDims h = one_hot_dims(ctx);
  Shape out = ctx.in_shape(0);
  out.insert(out.begin() + h.axis, h.depth);
  ctx.set_out(0, ctx.in_type(2), out);
}

// An index as OneHot reads it: floats truncated toward zero, as a cast to int64.
int64_t one_hot_index(const Tensor& t, int64_t i) {
  if (!is_float(t.dtype)) return host_get_i(t, i);
  const double v = host_get_f(t, i);
  return v >= -9e18 && v <= 9e18 ? static_cast<int64_t>(v) : INT64_MIN;  // NaN and huge: no match
}

void one_hot_host(OpContext& ctx) {
  const OneHotDims h = one_hot_dims(ctx);
  const Tensor& idx = ctx.in_data(0);
  const Tensor& values = ctx.in_data(2);
  const size_t es = ocl_infer::dtype_size(values.dtype);
  Tensor out(values.dtype, ctx.out_shape(0));
  for (int64_t i = 0; i < out.numel(); ++i) {
    const int64_t in = i % h.inner, t = i / h.inner, d = t % h.depth;
    int64_t ix = one_hot_index(idx, (t / h.depth) * h.inner + in);
    if (ix < 0 && ctx.opset() >= 11) ix += h.depth;
    std::memcpy(out.bytes.data() + i * es, values.bytes.data() + (ix == d ? es : 0), es);
  }
  ctx.set_out_data(0, std::move(out));
}

void one_hot_build(BuildContext& ctx) {
  const OneHotDims h = one_hot_dims(ctx);
  const int64_t n = numel(ctx.out_shape(0));
  if (n == 0) return;
  const DType it = ctx.input(0).dtype;
  std::string opts = word_option(ctx, ctx.output(0).dtype) + " -DONE_HOT";
  if (it == DType::Float16)
    opts += " -DTI=half -DTI_HALF";
  else
    opts += std::string(" -DTI=") + cl_type(it) + (it == DType::Float64 ? " -DUSE_FP64" : "") +
            (it == DType::Float32 || it == DType::Float64 ? " -DTI_FLOAT" : "");
  if (ctx.opset() >= 11) opts += " -DNEGATIVE_INDICES";
  const size_t local = ctx.caps().linear_local();
  ctx.launch("scatter", "one_hot", opts, {round_up(static_cast<size_t>(n), local)}, {local}, ctx.in_buf(0),
             ctx.in_buf(2), ctx.out_buf(0), h.depth, h.inner, n);
}

// ---- EyeLike -------------------------------------------------------------------------------
DType eye_like_type(const OpContext& ctx) {
  if (!ctx.node().has("dtype")) return ctx.in_type(0);
  const int64_t t = ctx.node().attr_int("dtype", 0);
  const DType d = static_cast<DType>(t);
  if (d == DType::String || (!is_float(d) && !is_integer(d) && d != DType::Bool))
    ctx.fail("dtype " + std::to_string(t) + " is not a numeric tensor type");
  return d;
}

void eye_like_infer(OpContext& ctx) {
  if (ctx.in_shape(0).size() != 2) ctx.fail("input must be 2-D, got " + shape_to_string(ctx.in_shape(0)));
  ctx.set_out(0, eye_like_type(ctx), ctx.in_shape(0));
}

void eye_like_host(OpContext& ctx) {
  const int64_t k = ctx.node().attr_int("k", 0);
  Tensor out(eye_like_type(ctx), ctx.out_shape(0));
  const int64_t cols = out.shape[1];
  for (int64_t i = 0; i < out.numel(); ++i) host_set_f(out, i, (i % cols) - (i / cols) == k ? 1.0 : 0.0);
  ctx.set_out_data(0, std::move(out));
}

void eye_like_build(BuildContext& ctx) {
  const int64_t n = numel(ctx.out_shape(0));
  if (n == 0) return;
  const DType st = ctx.output(0).dtype;
  Tensor one(st, {});
  host_set_f(one, 0, 1.0);
  uint64_t bits = 0;
  std::memcpy(&bits, one.bytes.data(), one.bytes.size());  // little-endian, as the device
  const size_t local = ctx.caps().linear_local();
  ctx.launch("scatter", "eye_like", word_option(ctx, st) + " -DONE=" + std::to_string(bits) + "UL",
             {round_up(static_cast<size_t>(n), local)}, {local}, ctx.out_buf(0), ctx.out_shape(0)[1],
             ctx.node().attr_int("k", 0), n);
}

// ---- Trilu ---------------------------------------------------------------------------------
int64_t trilu_k(const OpContext& ctx) {
  if (!ctx.has_input(1)) return 0;
  auto k = ctx.in_ints(1);
  if (k.size() != 1) ctx.fail("k must hold one element, not " + std::to_string(k.size()));
  return k[0];
}

void trilu_infer(OpContext& ctx) {
  if (ctx.in_shape(0).size() < 2) ctx.fail("input must have rank >= 2, got " + shape_to_string(ctx.in_shape(0)));
  if (ctx.has_input(1) && !is_integer(ctx.in_type(1))) ctx.fail("k must be an integer");
  trilu_k(ctx);
  ctx.set_out(0, ctx.in_type(0), ctx.in_shape(0));
}

void trilu_host(OpContext& ctx) {
  const int64_t k = trilu_k(ctx);
  const bool upper = ctx.node().attr_int("upper", 1) != 0;
  const Tensor& x = ctx.in_data(0);
  const int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
  const size_t es = copy_elem_size(ctx, x.dtype);
  Tensor y(x.dtype, x.shape);  // zero-filled
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t diag = (i % cols) - (i / cols) % rows;
    if (upper ? diag >= k : diag <= k) std::memcpy(y.bytes.data() + i * es, x.bytes.data() + i * es, es);
  }
  ctx.set_out_data(0, std::move(y));
}

void trilu_build(BuildContext& ctx) {
  const Shape& s = ctx.in_shape(0);
  const int64_t n = numel(s);
  if (n == 0) return;
  // k far outside the matrix keeps or clears everything the same way; clamping keeps the
  // kernel's subtraction clear of overflow.
  const int64_t k = std::clamp<int64_t>(trilu_k(ctx), -(int64_t{1} << 40), int64_t{1} << 40);
  std::string opts = word_option(ctx, ctx.input(0).dtype) + " -DTRILU";
  if (ctx.node().attr_int("upper", 1) != 0) opts += " -DUPPER";
  const size_t local = ctx.caps().linear_local();
  ctx.launch("scatter", "trilu", opts, {round_up(static_cast<size_t>(n), local)}, {local}, ctx.in_buf(0),
             ctx.out_buf(0), s[s.size() - 2], s.back(), k, n);
}

// ---- CumSum --------------------------------------------------------------------------------
int64_t cumsum_axis(const OpContext& ctx) {
  auto a = ctx.in_ints(1);
  if (a.size() != 1) ctx.fail("axis must hold one element, not " + std::to_string(a.size()));
  return ctx.axis(a[0], static_cast<int64_t>(ctx.in_shape(0).size()));
}

void cumsum_infer(OpContext& ctx) {
  const DType t = ctx.in_type(0);
  if (t == DType::Bool || (!is_float(t) && !is_integer(t)))
    ctx.unsupported(std::string("CumSum of ") + dtype_name(t) + " is not supported");
  if (ctx.in_type(1) != DType::Int32 && ctx.in_type(1) != DType::Int64) ctx.fail("axis must be int32 or int64");
  cumsum_axis(ctx);
  ctx.set_out(0, t, ctx.in_shape(0));
}

void cumsum_host(OpContext& ctx) {
  const Tensor& x = ctx.in_data(0);
  const int64_t axis = cumsum_axis(ctx);
  const bool exclusive = ctx.node().attr_int("exclusive", 0) != 0, reverse = ctx.node().attr_int("reverse", 0) != 0;
  int64_t inner = 1;
  for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  const int64_t len = x.shape[axis];
  const int64_t lines = len == 0 ? 0 : x.numel() / len;
  Tensor y(x.dtype, x.shape);
  const bool fl = is_float(x.dtype);
  for (int64_t l = 0; l < lines; ++l) {
    const int64_t base = (l / inner) * len * inner + l % inner;
    double accf = 0;
    float acc32 = 0;  // float and float16 accumulate in float, as the kernel does
    uint64_t acci = 0;
    for (int64_t t = 0; t < len; ++t) {
      const int64_t o = base + (reverse ? len - 1 - t : t) * inner;
      const bool f32 = x.dtype != DType::Float64;
      if (fl && exclusive) host_set_f(y, o, f32 ? acc32 : accf);
      if (!fl && exclusive) host_set_i(y, o, static_cast<int64_t>(acci));
      if (fl) {
        if (f32) acc32 += static_cast<float>(host_get_f(x, o));
        else accf += host_get_f(x, o);
      } else {
        acci += static_cast<uint64_t>(host_get_i(x, o));
      }
      if (fl && !exclusive) host_set_f(y, o, f32 ? acc32 : accf);
      if (!fl && !exclusive) host_set_i(y, o, static_cast<int64_t>(acci));
    }
  }
  ctx.set_out_data(0, std::move(y));
}

void cumsum_build(BuildContext& ctx) {
  const Shape& s = ctx.in_shape(0);
  const int64_t axis = cumsum_axis(ctx);
  const int64_t len = s[axis];
  if (numel(s) == 0) return;
  int64_t inner = 1;
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t lines = numel(s) / len;
  std::string opts = arith_options(ctx, ctx.input(0).dtype) + " -DCUMSUM";
  if (ctx.node().attr_int("exclusive", 0) != 0) opts += " -DEXCLUSIVE";
  if (ctx.node().attr_int("reverse", 0) != 0) opts += " -DREVERSE";
  const size_t local = ctx.caps().linear_local();
  ctx.launch("scatter", "cumsum", opts, {round_up(static_cast<size_t>(lines), local)}, {local}, ctx.in_buf(0),
             ctx.out_buf(0), len, inner, lines);
}

double cumsum_flops(const OpContext& ctx) { return static_cast<double>(numel(ctx.in_shape(0))); }

// Data movement and arithmetic read and write every float operand in the storage the plan gives
// the data (one type for data, updates and output; kernels/storage.cl for the arithmetic).
OpDef shared(OpDef d) { return d.shared_storage().any_storage(); }

}  // namespace

void add_scatter_ops(std::vector<OpDef>& t) {
  for (int v : {9, 11})
    t.push_back(shared(OpDef("Scatter", v, scatter_elements_infer).host(scatter_elements_host).build(scatter_elements_build)));
  for (int v : {11, 13, 16, 18})
    t.push_back(shared(OpDef("ScatterElements", v, scatter_elements_infer).host(scatter_elements_host).build(scatter_elements_build)));
  for (int v : {11, 13, 16, 18})
    t.push_back(shared(OpDef("ScatterND", v, scatter_nd_infer).host(scatter_nd_host).build(scatter_nd_build)));
  // OneHot's values and output are not tied to input 0 (the indices), so no shared storage: the
  // plan keeps them in their own dtype and the kernel moves words.
  for (int v : {9, 11})
    t.push_back(OpDef("OneHot", v, one_hot_infer).host(one_hot_host).build(one_hot_build).value_inputs({1}));
  // EyeLike reads only its input's shape and writes the bits of 0 and 1 in the output's storage.
  t.push_back(OpDef("EyeLike", 9, eye_like_infer).host(eye_like_host).build(eye_like_build).any_storage());
  t.push_back(shared(OpDef("Trilu", 14, trilu_infer).host(trilu_host).build(trilu_build).value_inputs({1})));
  for (int v : {11, 14})
    t.push_back(shared(OpDef("CumSum", v, cumsum_infer).host(cumsum_host).build(cumsum_build).value_inputs({1}).flops(cumsum_flops)));
}

}  // namespace oi
