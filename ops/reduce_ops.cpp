// Reductions over a set of axes (ReduceSum, ReduceMean, ...) and ArgMax/ArgMin, computed by
// kernels/reduce.cl. Constant inputs fold on the host, which is what shape arithmetic
// (ReduceProd of a Shape, ...) needs.
#include "ops/reduce_ops.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ops/elementwise.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

using ocl_infer::dtype_name;

std::vector<int64_t> ReduceGeometry::params() const {
  std::vector<int64_t> p;
  p.insert(p.end(), kept_dims.begin(), kept_dims.end());
  p.insert(p.end(), kept_strides.begin(), kept_strides.end());
  p.insert(p.end(), red_dims.begin(), red_dims.end());
  p.insert(p.end(), red_strides.begin(), red_strides.end());
  if (p.empty()) p.push_back(0);  // a zero-byte buffer is not allowed
  return p;
}

std::string ReduceGeometry::defines() const {
  return " -DNK=" + std::to_string(nk()) + " -DNR=" + std::to_string(nr());
}

ReduceGeometry reduce_geometry(const Shape& shape, const std::vector<bool>& reduced) {
  ReduceGeometry g;
  const auto st = strides_of(shape);
  int last_kind = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    const int kind = reduced[d] ? 1 : 0;
    (kind ? g.n_red : g.n_out) *= shape[d];
    if (shape[d] == 1) continue;
    auto& dims = kind ? g.red_dims : g.kept_dims;
    auto& strides = kind ? g.red_strides : g.kept_strides;
    // In a row-major tensor two neighbouring dims of one kind (size-1 dims between them do not
    // count) always merge into one dim with the inner stride.
    if (kind == last_kind) {
      dims.back() *= shape[d];
      strides.back() = st[d];
    } else {
      dims.push_back(shape[d]);
      strides.push_back(st[d]);
    }
    last_kind = kind;
  }
  return g;
}

size_t pick_work_group(BuildContext& ctx, const std::string& file, const std::string& entry,
                       const std::string& options, size_t want, std::string* opts) {
  ClRuntime& cl = ctx.cl();
  for (size_t wg = want;; wg /= 2) {
    std::string o = options + " -DWG=" + std::to_string(wg);
    KernelPtr k = cl.kernel(file, entry, o);
    size_t max = 0;
    cl_check(clGetKernelWorkGroupInfo(k.get(), cl.device(), CL_KERNEL_WORK_GROUP_SIZE, sizeof max,
                                      &max, nullptr),
             "clGetKernelWorkGroupInfo(CL_KERNEL_WORK_GROUP_SIZE)");
    if (wg <= max || wg == 1) {
      *opts = o;
      return wg;
    }
  }
}

namespace {

// ---- Reduce* ---------------------------------------------------------------------------------
struct ReduceOp {
  const char* onnx;
  const char* macro;     // OP_<macro> in kernels/reduce.cl
  int axes_input_since;  // opset from which axes is an input rather than an attribute
};

const ReduceOp kReduce[] = {
    {"ReduceSum", "SUM", 13},
    {"ReduceMean", "MEAN", 18},
    {"ReduceMax", "MAX", 18},
    {"ReduceMin", "MIN", 18},
    {"ReduceProd", "PROD", 18},
    {"ReduceL1", "L1", 18},
    {"ReduceL2", "L2", 18},
    {"ReduceLogSum", "LOGSUM", 18},
    {"ReduceLogSumExp", "LOGSUMEXP", 18},
    {"ReduceSumSquare", "SUMSQUARE", 18},
};

const ReduceOp& find_reduce(const std::string& op) {
  for (auto& r : kReduce)
    if (op == r.onnx) return r;
  throw ocl_infer::Error("internal: " + op + " is not a reduction");
}

struct ReduceAxes {
  std::vector<bool> reduced;  // per input dim
  bool noop = false;          // noop_with_empty_axes with no axes: the output is the input
  bool keepdims = true;
};

ReduceAxes reduce_axes(OpContext& ctx) {
  const Node& n = ctx.node();
  const ReduceOp& op = find_reduce(n.op_type);
  const int64_t rank = static_cast<int64_t>(ctx.in_shape(0).size());
  const bool from_input = ctx.opset() >= op.axes_input_since;
  std::vector<int64_t> axes;
  if (from_input) {
    if (n.has("axes"))
      ctx.fail("axes is an input, not an attribute, from opset " +
               std::to_string(op.axes_input_since));
    if (ctx.has_input(1)) axes = ctx.in_ints(1);
  } else {
    if (ctx.has_input(1))
      ctx.fail("axes is an attribute, not an input, before opset " +
               std::to_string(op.axes_input_since));
    axes = n.attr_ints("axes", {});
  }
  ReduceAxes r;
  r.keepdims = n.attr_int("keepdims", 1) != 0;
  r.reduced.assign(rank, false);
  if (axes.empty()) {
    if (from_input && n.attr_int("noop_with_empty_axes", 0) != 0)
      r.noop = true;
    else
      r.reduced.assign(rank, true);
    return r;
  }
  for (int64_t a : axes) {
    int64_t d = ctx.axis(a, rank);
    if (rank == 0) continue;  // a scalar reduces to itself
    if (r.reduced[d]) ctx.fail("axis " + std::to_string(a) + " is listed twice");
    r.reduced[d] = true;
  }
  return r;
}

Shape reduced_shape(const Shape& in, const ReduceAxes& ax) {
  if (ax.noop) return in;
  Shape s;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!ax.reduced[d])
      s.push_back(in[d]);
    else if (ax.keepdims)
      s.push_back(1);
  }
  return s;
}

void check_numeric(OpContext& ctx, DType t) {
  if (!is_float(t) && !is_integer(t))
    ctx.unsupported(std::string("inputs of type ") + dtype_name(t) + " are not supported");
}

// ReduceMax / ReduceMin take bool from opset 20 (any / all; an empty reduction gives false / true).
bool bool_extremum(OpContext& ctx) {
  const std::string& op = ctx.node().op_type;
  return ctx.in_type(0) == DType::Bool && ctx.opset() >= 20 && (op == "ReduceMax" || op == "ReduceMin");
}

void reduce_infer(OpContext& ctx) {
  if (!bool_extremum(ctx)) check_numeric(ctx, ctx.in_type(0));
  ctx.set_out(0, ctx.in_type(0), reduced_shape(ctx.in_shape(0), reduce_axes(ctx)));
}

// For each element of `in`, the flat index of the output it reduces into.
std::vector<int64_t> output_index_map(const Shape& in, const std::vector<bool>& reduced) {
  const int64_t n = numel(in);
  std::vector<int64_t> ostride(in.size(), 0);
  int64_t acc = 1;
  for (size_t d = in.size(); d-- > 0;)
    if (!reduced[d]) {
      ostride[d] = acc;
      acc *= in[d];
    }
  std::vector<int64_t> map(n), coord(in.size(), 0);
  int64_t o = 0;
  for (int64_t i = 0; i < n; ++i) {
    map[i] = o;
    for (size_t d = in.size(); d-- > 0;) {
      o += ostride[d];
      if (++coord[d] < in[d]) break;
      o -= ostride[d] * in[d];
      coord[d] = 0;
    }
  }
  return map;
}

void reduce_host(OpContext& ctx) {
  const std::string op = find_reduce(ctx.node().op_type).macro;
  const ReduceAxes ax = reduce_axes(ctx);
  const Tensor& x = ctx.in_data(0);
  Tensor y(x.dtype, reduced_shape(x.shape, ax));
  if (ax.noop) {
    y.bytes = x.bytes;
    // The elementwise part of the reduction still applies (as reduce_build does).
    if (op == "SUMSQUARE" || op == "L1" || op == "L2" || op == "LOGSUM")
      for (int64_t i = 0; i < y.numel(); ++i) {
        const double v = host_get_f(x, i);
        host_set_f(y, i, op == "SUMSQUARE" ? v * v : op == "LOGSUM" ? std::log(v) : std::fabs(v));
      }
    ctx.set_out_data(0, std::move(y));
    return;
  }
  const int64_t n_out = y.numel();
  const int64_t n_red = n_out ? x.numel() / n_out : 0;
  const auto map = output_index_map(x.shape, ax.reduced);
  // Integers stay exact in int64 where the result is an integer operation.
  const bool boolean = x.dtype == DType::Bool;
  const bool exact_int = (is_integer(x.dtype) || boolean) && op != "L2" && op != "LOGSUM" && op != "LOGSUMEXP";
  if (exact_int) {
    int64_t init = 0;
    if (op == "PROD") init = 1;
    if (op == "MAX") init = boolean ? 0 : std::numeric_limits<int64_t>::min();
    if (op == "MIN") init = boolean ? 1 : std::numeric_limits<int64_t>::max();
    std::vector<int64_t> acc(n_out, init);
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t v = host_get_i(x, i), &a = acc[map[i]];
      if (op == "SUM" || op == "MEAN")
        a += v;
      else if (op == "L1")
        a += v < 0 ? -v : v;
      else if (op == "SUMSQUARE")
        a += v * v;
      else if (op == "PROD")
        a *= v;
      else if (op == "MAX")
        a = std::max(a, v);
      else if (op == "MIN")
        a = std::min(a, v);
    }
    for (int64_t o = 0; o < n_out; ++o)
      host_set_i(y, o, op == "MEAN" && n_red ? acc[o] / n_red : acc[o]);
  } else {
    double init = 0;
    if (op == "PROD") init = 1;
    if (op == "MAX" || op == "LOGSUMEXP") init = -INFINITY;
    if (op == "MIN") init = INFINITY;
    std::vector<double> acc(n_out, init), shift(n_out, 0);
    if (op == "LOGSUMEXP") {
      for (int64_t i = 0; i < x.numel(); ++i) acc[map[i]] = std::max(acc[map[i]], host_get_f(x, i));
      for (int64_t o = 0; o < n_out; ++o) {
        shift[o] = std::isinf(acc[o]) ? 0 : acc[o];
        acc[o] = 0;
      }
    }
    for (int64_t i = 0; i < x.numel(); ++i) {
      double v = host_get_f(x, i), &a = acc[map[i]];
      if (op == "SUM" || op == "MEAN" || op == "LOGSUM")
        a += v;
      else if (op == "L1")
        a += std::fabs(v);
      else if (op == "L2" || op == "SUMSQUARE")
        a += v * v;
      else if (op == "PROD")
        a *= v;
      else if (op == "MAX")
        a = std::isnan(v) || v > a ? v : a;
      else if (op == "MIN")
        a = std::isnan(v) || v < a ? v : a;
      else if (op == "LOGSUMEXP")
        a += std::exp(v - shift[map[i]]);
    }
    for (int64_t o = 0; o < n_out; ++o) {
      double a = acc[o];
      if (op == "MEAN")
        a /= static_cast<double>(n_red);
      else if (op == "L2")
        a = std::sqrt(a);
      else if (op == "LOGSUM")
        a = std::log(a);
      else if (op == "LOGSUMEXP")
        a = std::log(a) + shift[o];
      host_set_f(y, o, a);
    }
  }
  ctx.set_out_data(0, std::move(y));
}

// Integer limits of t as OpenCL literals: the Max/Min identities.
std::string int_limits(DType t) {
  auto lim = [](auto lo, auto hi) {
    // The lowest int64 has no literal of its own in C.
    std::string l = lo == std::numeric_limits<int64_t>::min() ? "(-9223372036854775807L-1)"
                                                              : "(" + std::to_string(lo) + "L)";
    return " -DT_LOWEST=" + l + " -DT_HIGHEST=" + std::to_string(hi) + "UL";
  };
  switch (t) {
    case DType::Bool:
      return lim(int64_t{0}, uint64_t{1});
    case DType::Int8:
      return lim(int64_t{INT8_MIN}, uint64_t{INT8_MAX});
    case DType::UInt8:
      return lim(int64_t{0}, uint64_t{UINT8_MAX});
    case DType::Int16:
      return lim(int64_t{INT16_MIN}, uint64_t{INT16_MAX});
    case DType::UInt16:
      return lim(int64_t{0}, uint64_t{UINT16_MAX});
    case DType::Int32:
      return lim(int64_t{INT32_MIN}, uint64_t{INT32_MAX});
    case DType::UInt32:
      return lim(int64_t{0}, uint64_t{UINT32_MAX});
    case DType::Int64:
      return lim(std::numeric_limits<int64_t>::min(), uint64_t{INT64_MAX});
    default:
      return lim(int64_t{0}, std::numeric_limits<uint64_t>::max());
  }
}

// Element and accumulator types: floats accumulate in their own type, integers in 64 bits.
std::string reduce_type_defines(OpContext& ctx, DType t) {
  if (t == DType::Float16) return " -DT=half -DTA=float -DIS_FLOAT -DS=F16 -DCT=float";
  std::string s = std::string(" -DT=") + cl_type(t);
  if (is_float(t))
    s += std::string(" -DTA=") + cl_type(t) + " -DIS_FLOAT";
  else {
    bool is_unsigned = t == DType::UInt8 || t == DType::UInt16 || t == DType::UInt32 || t == DType::UInt64 ||
                       t == DType::Bool;
    s += is_unsigned ? " -DTA=ulong" : " -DTA=long";
    s += int_limits(t);
  }
  if (t == DType::Float64) s += " -DUSE_FP64";
  return s;
}

void reduce_build(BuildContext& ctx) {
  const Node& n = ctx.node();
  const ReduceAxes ax = reduce_axes(ctx);
  if (ax.noop) {
    // A copy, not a view: whether this node is a view is known only per node, and the buffer
    // planner decides views per op type. The reductions with an elementwise part apply it, as the
    // ONNX reference and ONNX Runtime do (ReduceSumSquare squares, ReduceL1 / ReduceL2 take the
    // magnitude, ReduceLogSum the log).
    const std::string m = find_reduce(n.op_type).macro;
    if (m == "SUMSQUARE") launch_elementwise(ctx, "MUL", {ctx.input(0), ctx.input(0)}, ctx.output(0));
    else if (m == "L1" || m == "L2") launch_elementwise(ctx, "ABS", {ctx.input(0)}, ctx.output(0));
    else if (m == "LOGSUM") launch_elementwise(ctx, "LOG", {ctx.input(0)}, ctx.output(0));
    else launch_elementwise(ctx, "CAST", {ctx.input(0)}, ctx.output(0));
    return;
  }
  const DType t = ctx.input(0).dtype;
  const ReduceGeometry g = reduce_geometry(ctx.in_shape(0), ax.reduced);
  const std::string opts = std::string("-DOP_") + find_reduce(n.op_type).macro +
                           reduce_type_defines(ctx, t) + g.defines();
  if (g.n_out == 0) return;
  const auto p = g.params();
  cl_mem pm = ctx.params(p.data(), p.size() * sizeof(int64_t));
  // A work-group per output when each output reduces enough elements and either they are
  // contiguous (the group's reads coalesce) or there are too few outputs to fill the device.
  if (g.n_red >= 32 && (g.inner_contiguous() || g.n_out < 512)) {
    std::string o;
    size_t wg = pick_work_group(ctx, "reduce", "reduce_wg", opts, row_work_group(g.n_red), &o);
    ctx.launch("reduce", "reduce_wg", o, {static_cast<size_t>(g.n_out) * wg}, {wg}, ctx.in_buf(0),
               ctx.out_buf(0), pm, g.n_red);
    return;
  }
  const size_t local = ctx.caps().linear_local();
  ctx.launch("reduce", "reduce_generic", opts, {round_up(static_cast<size_t>(g.n_out), local)},
             {local}, ctx.in_buf(0), ctx.out_buf(0), pm, g.n_out, g.n_red);
}

// ---- ArgMax, ArgMin --------------------------------------------------------------------------
struct ArgSpec {
  int64_t axis, outer, len, inner;
  bool keepdims, last;
};

ArgSpec arg_spec(OpContext& ctx) {
  const Node& n = ctx.node();
  const Shape& s = ctx.in_shape(0);
  if (s.empty()) ctx.fail("input must have rank >= 1");
  ArgSpec a;
  a.axis = ctx.axis(n.attr_int("axis", 0), static_cast<int64_t>(s.size()));
  a.keepdims = n.attr_int("keepdims", 1) != 0;
  a.last = n.attr_int("select_last_index", 0) != 0;
  a.outer = numel(Shape(s.begin(), s.begin() + a.axis));
  a.len = s[a.axis];
  a.inner = numel(Shape(s.begin() + a.axis + 1, s.end()));
  return a;
}

void arg_infer(OpContext& ctx) {
  check_numeric(ctx, ctx.in_type(0));
  ArgSpec a = arg_spec(ctx);
  if (a.len == 0 && a.outer * a.inner > 0)
    ctx.fail("cannot take the arg-extremum of an empty axis");
  Shape s = ctx.in_shape(0);
  if (a.keepdims)
    s[a.axis] = 1;
  else
    s.erase(s.begin() + a.axis);
  ctx.set_out(0, DType::Int64, s);
}

void arg_host(OpContext& ctx) {
  const ArgSpec a = arg_spec(ctx);
  const bool is_max = ctx.node().op_type == "ArgMax";
  const Tensor& x = ctx.in_data(0);
  Tensor y(DType::Int64, ctx.out_shape(0));
  for (int64_t o = 0; o < a.outer; ++o)
    for (int64_t in = 0; in < a.inner; ++in) {
      const int64_t base = o * a.len * a.inner + in;
      double best = host_get_f(x, base);
      int64_t bi = 0;
      for (int64_t k = 1; k < a.len; ++k) {
        double v = host_get_f(x, base + k * a.inner);
        bool better = is_max ? (a.last ? v >= best : v > best) : (a.last ? v <= best : v < best);
        if (better) {
          best = v;
          bi = k;
        }
      }
      y.data<int64_t>()[o * a.inner + in] = bi;
    }
  ctx.set_out_data(0, std::move(y));
}

void arg_build(BuildContext& ctx) {
  const ArgSpec a = arg_spec(ctx);
  const DType t = ctx.input(0).dtype;
  std::string opts = std::string("-DT=") + cl_type(t) + (t == DType::Float16 ? " -DS=F16 -DCT=float" : "") +
                     (ctx.node().op_type == "ArgMax" ? " -DARG_MAX" : " -DARG_MIN");
  if (a.last) opts += " -DSELECT_LAST";
  if (t == DType::Float64) opts += " -DUSE_FP64";
  const int64_t n_out = a.outer * a.inner;
  const size_t local = ctx.caps().linear_local();
  ctx.launch("reduce", "arg_reduce", opts, {round_up(static_cast<size_t>(n_out), local)}, {local},
             ctx.in_buf(0), ctx.out_buf(0), n_out, a.len, a.inner);
}

// One operation per input element.
double per_input_element(const OpContext& ctx) { return static_cast<double>(numel(ctx.in_shape(0))); }

}  // namespace

void add_reduce_ops(std::vector<OpDef>& t) {
  for (const ReduceOp& r : kReduce) {
    t.push_back(OpDef(r.onnx, 1, reduce_infer).host(reduce_host).build(reduce_build).flops(per_input_element).shared_storage().any_storage());
    // From this opset the axes come as input 1, needed at plan time.
    t.push_back(OpDef(r.onnx, r.axes_input_since, reduce_infer)
                    .host(reduce_host)
                    .build(reduce_build)
                    .value_inputs({1})
                    .flops(per_input_element).shared_storage().any_storage());
    // Opset 20: ReduceMax and ReduceMin on bool (reduce_infer).
    if (std::string(r.macro) == "MAX" || std::string(r.macro) == "MIN")
      t.push_back(OpDef(r.onnx, 20, reduce_infer)
                      .host(reduce_host)
                      .build(reduce_build)
                      .value_inputs({1})
                      .flops(per_input_element).shared_storage().any_storage());
  }
  for (const char* op : {"ArgMax", "ArgMin"}) {
    t.push_back(OpDef(op, 1, arg_infer).host(arg_host).build(arg_build).flops(per_input_element).shared_storage().any_storage());
    // Opset 12 adds select_last_index.
    t.push_back(OpDef(op, 12, arg_infer).host(arg_host).build(arg_build).flops(per_input_element).shared_storage().any_storage());
  }
}

}  // namespace oi
