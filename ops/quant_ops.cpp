// Quantization operators: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear (elementwise,
// kernels/elementwise.cl OP_QUANTIZE / OP_DEQUANTIZE), and the 8-bit products QLinearConv,
// ConvInteger, QLinearMatMul, MatMulInteger (kernels/quant.cl: int32 accumulation, weights packed
// once at plan time when they are constants).
//
// Quantized values are 8-bit integers (int8 or uint8) with a float scale and an integer zero point,
// per tensor or per axis (opset 13). Float operands stay float32 in every precision mode: a scale
// rounded to float16 would move every quantized value.
#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "ops/conv_ops.hpp"
#include "ops/copy_view.hpp"
#include "ops/elementwise.hpp"
#include "ops/gemm_ops.hpp"
#include "ops/variants.hpp"
#include "ops/core/activation.hpp"
#include "ops/core/quantize.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

using ocl_infer::dtype_name;
using ocl_infer::shape_to_string;

namespace {

std::string slot_name(const OpContext& ctx, int i) {
  return "input " + std::to_string(i) + " ('" + ctx.in(i).name + "')";
}

// A float32 scale input, one value or (per_axis_len > 0) a 1-D tensor of per_axis_len values;
// constants must be finite and non-zero. With half, a float16 scale is taken too (the integer
// products, whose kernels get it widened to float32: scale_buffer).
void check_scale(const OpContext& ctx, int slot, int64_t per_axis_len, const char* what, bool half = false) {
  const DType t = ctx.in_type(slot);
  if (t != DType::Float32 && !(half && t == DType::Float16))
    ctx.unsupported(std::string(what) + " " + slot_name(ctx, slot) + " is " + dtype_name(t) + "; only float32 " +
                    (half ? "and float16 " : "") + "scales are supported");
  const Shape& s = ctx.in_shape(slot);
  const int64_t n = numel(s);
  if (!(n == 1 && s.size() <= 1) && !(per_axis_len > 0 && s.size() == 1 && n == per_axis_len))
    ctx.fail(std::string(what) + " " + slot_name(ctx, slot) + " has shape " + shape_to_string(s) + "; expected a scalar" +
             (per_axis_len > 0 ? " or " + std::to_string(per_axis_len) + " values (one per channel)" : std::string()));
  if (ctx.is_const(slot)) {
    const Tensor& t = ctx.in_data(slot);
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double v = host_get_f(t, i);
      if (!std::isfinite(v) || v == 0)
        ctx.fail(std::string(what) + " " + slot_name(ctx, slot) + " holds " + std::to_string(v) + " at index " +
                 std::to_string(i) + "; scales must be finite and non-zero");
    }
  }
}

// A zero-point input matching `type` and the scale's element count.
void check_zero_point(const OpContext& ctx, int slot, DType type, int64_t count, const char* what) {
  if (!ctx.has_input(slot)) return;
  if (ctx.in_type(slot) != type)
    ctx.fail(std::string(what) + " " + slot_name(ctx, slot) + " is " + dtype_name(ctx.in_type(slot)) + ", expected " +
             dtype_name(type) + " (the type of the quantized values)");
  const Shape& s = ctx.in_shape(slot);
  if (numel(s) != count || s.size() > 1)
    ctx.fail(std::string(what) + " " + slot_name(ctx, slot) + " has shape " + shape_to_string(s) + "; expected " +
             (count == 1 ? std::string("a scalar") : std::to_string(count) + " values, like its scale"));
}

void require_quantized(const OpContext& ctx, int slot) {
  const DType t = ctx.in_type(slot);
  if (!is_quantized_type(t))
    ctx.unsupported(slot_name(ctx, slot) + " is " + dtype_name(t) + "; only int8 and uint8 are supported");
}

// The per-axis length of a scale for data of `rank` at `axis` (opset >= 13), 0 before opset 13.
struct AxisInfo {
  int64_t axis = 1;
  int64_t len = 0;  // 0: per-tensor only
};

AxisInfo axis_info(const OpContext& ctx, const Shape& data, bool blocks_ok = false) {
  AxisInfo a;
  if (ctx.opset() < 13) return a;
  const Node& n = ctx.node();
  if (!blocks_ok && n.has("block_size") && n.attr_int("block_size", 0) != 0)
    ctx.unsupported("blocked quantization (block_size) is not supported here (DequantizeLinear of constants is)");
  // The axis matters only for per-axis scales; a per-tensor scale ignores it (even out of range).
  const int64_t rank = static_cast<int64_t>(data.size()), axis = n.attr_int("axis", 1);
  if (axis < -rank || axis >= rank) return a;
  a.axis = axis < 0 ? axis + rank : axis;
  a.len = data[static_cast<size_t>(a.axis)];
  return a;
}

// The scale or zero-point operand shaped to broadcast along `axis` of a tensor of rank `rank`.
Operand along_axis(Operand o, int64_t axis, size_t rank) {
  if (o.numel() <= 1) {
    o.shape = {};
    return o;
  }
  Shape s(rank, 1);
  s[static_cast<size_t>(axis)] = o.numel();
  o.shape = s;
  return o;
}

// A one-element constant 0 of type t (an omitted zero point).
Operand zero_operand(BuildContext& ctx, DType t) { return ctx.constant(Tensor(t, {})); }

std::string range_defines(DType t) {
  int lo, hi;
  quantized_range(t, &lo, &hi);
  return " -DQMIN=" + std::to_string(lo) + " -DQMAX=" + std::to_string(hi);
}

// ---- QuantizeLinear ------------------------------------------------------------------------
void quantize_infer(OpContext& ctx) {
  const DType xt = ctx.in_type(0);
  if (xt != DType::Float32)
    ctx.unsupported("input 0 is " + std::string(dtype_name(xt)) + "; only float32 can be quantized");
  // QuantizeLinear-23's precision of x / y_scale: float32 (or 0: the scale's type, float32 here).
  if (const int64_t p = ctx.node().attr_int("precision", 0); p != 0 && p != static_cast<int64_t>(DType::Float32))
    ctx.unsupported("precision " + std::string(dtype_name(static_cast<DType>(p))) + " (float32 is supported)");
  const AxisInfo a = axis_info(ctx, ctx.in_shape(0));
  check_scale(ctx, 1, a.len, "y_scale");
  DType out = ctx.has_input(2) ? ctx.in_type(2) : DType::UInt8;
  if (ctx.node().has("output_dtype") && ctx.node().attr_int("output_dtype", 0) != 0) {
    const DType want = static_cast<DType>(ctx.node().attr_int("output_dtype", 0));
    if (ctx.has_input(2) && want != out) ctx.fail("output_dtype differs from the zero point's type");
    out = want;
  }
  if (!is_quantized_type(out))
    ctx.unsupported("quantizing to " + std::string(dtype_name(out)) + " is not supported (int8 and uint8 are)");
  if (ctx.node().has("saturate") && ctx.node().attr_int("saturate", 1) == 0)
    ctx.unsupported("saturate=0 applies to float8 outputs only");
  check_zero_point(ctx, 2, out, numel(ctx.in_shape(1)), "y_zero_point");
  ctx.set_out(0, out, ctx.in_shape(0));
}

void quantize_host(OpContext& ctx) {
  const Tensor& x = ctx.in_data(0);
  const Tensor& s = ctx.in_data(1);
  const DType out = ctx.out_value(0).dtype;
  const AxisInfo a = axis_info(ctx, x.shape);
  Tensor y(out, x.shape);
  const int64_t per = s.numel();
  int64_t inner = 1;
  if (per > 1)
    for (size_t d = static_cast<size_t>(a.axis) + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = per > 1 ? (i / inner) % per : 0;
    const int z = ctx.has_input(2) ? static_cast<int>(host_get_i(ctx.in_data(2), c)) : 0;
    host_set_i(y, i,
               static_cast<int64_t>(quantize_value(static_cast<float>(host_get_f(x, i)),
                                                   static_cast<float>(host_get_f(s, c)), z, out)));
  }
  ctx.set_out_data(0, std::move(y));
}

// One scale and zero point, float32 data: the vectorized kernel (kernels/quant.cl).
bool launch_linear(BuildContext& ctx, const char* entry, DType qtype, const Operand& zp) {
  if (numel(ctx.in_shape(1)) != 1 || ctx.input(0).dtype == DType::Float16 || ctx.output(0).dtype == DType::Float16 ||
      !is_quantized_type(qtype))
    return false;
  const int64_t n = numel(ctx.in_shape(0));
  ctx.launch("quant", entry, std::string("-DQLINEAR -DQT=") + cl_type(qtype) + range_defines(qtype),
             {static_cast<size_t>((n + 15) / 16)}, {}, ctx.in_buf(0), ctx.in_buf(1), zp.mem, ctx.out_buf(0), n);
  return true;
}

void quantize_build(BuildContext& ctx) {
  const AxisInfo a = axis_info(ctx, ctx.in_shape(0));
  const DType out = ctx.out_value(0).dtype;
  const size_t rank = ctx.in_shape(0).size();
  Operand zp = ctx.has_input(2) ? ctx.input(2) : zero_operand(ctx, out);
  if (launch_linear(ctx, "quantize_linear", out, zp)) return;
  launch_elementwise(ctx, "QUANTIZE",
                     {ctx.input(0), along_axis(ctx.input(1), a.axis, rank), along_axis(zp, a.axis, rank)},
                     ctx.output(0), range_defines(out));
}

// ---- DequantizeLinear ----------------------------------------------------------------------
// DequantizeLinear-21's block_size (0: not blocked).
int64_t dq_block(const OpContext& ctx) {
  return ctx.opset() >= 21 ? ctx.node().attr_int("block_size", 0) : 0;
}

// Blocked quantization: the scale (and zero point) has x's rank and dims, except along `axis`,
// where each of its values covers `block` consecutive elements of x. Checked, and the axis
// returned.
int64_t check_blocked(const OpContext& ctx, int64_t block) {
  const Shape &x = ctx.in_shape(0), &s = ctx.in_shape(1);
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = ctx.node().attr_int("axis", 1);
  if (block < 0) ctx.fail("block_size must not be negative, not " + std::to_string(block));
  if (axis < -rank || axis >= rank) ctx.fail("axis " + std::to_string(axis) + " is out of range for " + shape_to_string(x));
  if (axis < 0) axis += rank;
  bool ok = s.size() == x.size();
  for (int64_t d = 0; ok && d < rank; ++d)
    ok = d == axis ? s[d] == (x[d] + block - 1) / block : s[d] == x[d];
  if (!ok)
    ctx.fail("x_scale " + shape_to_string(s) + " does not fit blocks of " + std::to_string(block) + " along axis " +
             std::to_string(axis) + " of x " + shape_to_string(x));
  if (ctx.in_type(1) != DType::Float32)
    ctx.unsupported("x_scale is " + std::string(dtype_name(ctx.in_type(1))) + "; only float32 scales are supported");
  if (ctx.has_input(2) && (ctx.in_type(2) != ctx.in_type(0) || ctx.in_shape(2) != s))
    ctx.fail("x_zero_point must have x's type and x_scale's shape " + shape_to_string(s));
  if (!ctx.is_const(0) || !ctx.is_const(1) || (ctx.has_input(2) && !ctx.is_const(2)))
    ctx.unsupported("blocked quantization of computed tensors (constant weights are dequantized once at plan time)");
  return axis;
}

Tensor dequantize_blocked(const Tensor& x, const Tensor& s, const Tensor* z, int64_t axis, int64_t block) {
  Tensor y(DType::Float32, x.shape);
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  const int64_t len = x.shape[axis], slen = s.shape[axis];
  float* out = y.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t outer = i / (inner * len), along = (i / inner) % len, rest = i % inner;
    const int64_t c = (outer * slen + along / block) * inner + rest;
    const int64_t zp = z ? host_get_i(*z, c) : 0;
    out[i] = static_cast<float>(host_get_i(x, i) - zp) * static_cast<float>(host_get_f(s, c));
  }
  return y;
}

void dequantize_infer(OpContext& ctx) {
  const DType xt = ctx.in_type(0);
  if (!is_quantized_type(xt) && xt != DType::Int32)
    ctx.unsupported("input 0 is " + std::string(dtype_name(xt)) + "; int8, uint8 and int32 can be dequantized");
  // DequantizeLinear-23's output_dtype: float32 (or 0: the scale's type, float32 here).
  if (const int64_t o = ctx.node().attr_int("output_dtype", 0); o != 0 && o != static_cast<int64_t>(DType::Float32))
    ctx.unsupported("output_dtype " + std::string(dtype_name(static_cast<DType>(o))) + " (float32 is supported)");
  if (const int64_t block = dq_block(ctx)) {
    check_blocked(ctx, block);
    ctx.set_out(0, DType::Float32, ctx.in_shape(0));
    return;
  }
  const AxisInfo a = axis_info(ctx, ctx.in_shape(0));
  check_scale(ctx, 1, a.len, "x_scale");
  check_zero_point(ctx, 2, xt, numel(ctx.in_shape(1)), "x_zero_point");
  if (xt == DType::Int32 && ctx.is_const(2)) {
    const Tensor& z = ctx.in_data(2);
    for (int64_t i = 0; i < z.numel(); ++i)
      if (host_get_i(z, i) != 0) ctx.fail("x_zero_point of int32 data must be 0");
  }
  ctx.set_out(0, DType::Float32, ctx.in_shape(0));
}

void dequantize_host(OpContext& ctx) {
  if (const int64_t block = dq_block(ctx)) {
    const int64_t axis = check_blocked(ctx, block);
    ctx.set_out_data(0, dequantize_blocked(ctx.in_data(0), ctx.in_data(1), ctx.has_input(2) ? &ctx.in_data(2) : nullptr,
                                           axis, block));
    return;
  }
  const AxisInfo a = axis_info(ctx, ctx.in_shape(0));
  ctx.set_out_data(0, dequantize_tensor(ctx.in_data(0), ctx.in_data(1), ctx.has_input(2) ? &ctx.in_data(2) : nullptr,
                                        a.axis));
}

void dequantize_build(BuildContext& ctx) {
  const AxisInfo a = axis_info(ctx, ctx.in_shape(0));
  const size_t rank = ctx.in_shape(0).size();
  Operand zp = ctx.has_input(2) ? ctx.input(2) : zero_operand(ctx, ctx.in_type(0));
  if (launch_linear(ctx, "dequantize_linear", ctx.in_type(0), zp)) return;
  launch_elementwise(ctx, "DEQUANTIZE",
                     {ctx.input(0), along_axis(ctx.input(1), a.axis, rank), along_axis(zp, a.axis, rank)},
                     ctx.output(0));
}

// ---- DynamicQuantizeLinear -----------------------------------------------------------------
void dynq_infer(OpContext& ctx) {
  if (ctx.in_type(0) != DType::Float32)
    ctx.unsupported("input 0 is " + std::string(dtype_name(ctx.in_type(0))) + "; only float32 is supported");
  ctx.set_out(0, DType::UInt8, ctx.in_shape(0));
  if (ctx.has_output(1)) ctx.set_out(1, DType::Float32, {});
  if (ctx.has_output(2)) ctx.set_out(2, DType::UInt8, {});
}

void dynq_build(BuildContext& ctx) {
  const int64_t n = ctx.input(0).numel();
  const int P = static_cast<int>(std::min<int64_t>(64, std::max<int64_t>(1, n / 4096)));
  Operand part = ctx.scratch(DType::Float32, {2 * P});
  Operand scale = ctx.has_output(1) ? ctx.output(1) : ctx.scratch(DType::Float32, {});
  Operand zero = ctx.has_output(2) ? ctx.output(2) : ctx.scratch(DType::UInt8, {});
  scale.shape = {};
  zero.shape = {};
  ctx.launch("quant", "dynq_minmax_partial", "", {static_cast<size_t>(P)}, {1}, ctx.in_buf(0), part.mem, n);
  ctx.launch("quant", "dynq_scale", "", {1}, {1}, part.mem, static_cast<int32_t>(P), scale.mem, zero.mem);
  launch_elementwise(ctx, "QUANTIZE", {ctx.input(0), scale, zero}, ctx.output(0), range_defines(DType::UInt8));
}

// ---- shared by the integer products ---------------------------------------------------------
int32_t i32(int64_t v) { return static_cast<int32_t>(v); }

// The product's quantization operands, by input slot (-1: absent). ConvInteger/MatMulInteger
// have only zero points and output int32.
struct QSlots {
  int x, xs, xz, w, ws, wz, ys, yz, bias;
};
const QSlots kQLinear{0, 1, 2, 3, 4, 5, 6, 7, 8};
const QSlots kInteger{0, -1, 2, 1, -1, 3, -1, -1, -1};

const QSlots& slots_of(const OpContext& ctx) {
  return ctx.node().op_type.rfind("QLinear", 0) == 0 ? kQLinear : kInteger;
}
bool has(const OpContext& ctx, int slot) { return slot >= 0 && ctx.has_input(slot); }

// Checks the operands common to QLinearConv/QLinearMatMul/ConvInteger/MatMulInteger; `channels`:
// output channels (conv) or columns (matmul) that per-channel weight scales and zero points cover.
// Returns the output type.
DType check_product(const OpContext& ctx, int64_t channels) {
  const QSlots& q = slots_of(ctx);
  require_quantized(ctx, q.x);
  require_quantized(ctx, q.w);
  if (q.xs >= 0) check_scale(ctx, q.xs, 0, "x scale", true);
  if (has(ctx, q.xz)) {
    if (numel(ctx.in_shape(q.xz)) != 1)
      ctx.unsupported(slot_name(ctx, q.xz) + ": only a single input zero point is supported, got shape " +
                      shape_to_string(ctx.in_shape(q.xz)));
    check_zero_point(ctx, q.xz, ctx.in_type(q.x), 1, "x zero point");
  }
  if (q.ws >= 0) check_scale(ctx, q.ws, channels, "w scale", true);
  if (has(ctx, q.wz)) {
    const int64_t nz = numel(ctx.in_shape(q.wz));
    check_zero_point(ctx, q.wz, ctx.in_type(q.w), nz == 1 ? 1 : channels, "w zero point");
  }
  if (q.ys < 0) return DType::Int32;
  check_scale(ctx, q.ys, 0, "y scale", true);
  if (!ctx.has_input(q.yz)) ctx.fail("the output zero point (input 7) is required");
  const DType yt = ctx.in_type(q.yz);
  if (!is_quantized_type(yt)) ctx.unsupported("output type " + std::string(dtype_name(yt)) + " is not supported");
  check_zero_point(ctx, q.yz, yt, 1, "y zero point");
  if (has(ctx, q.bias)) {
    if (ctx.in_type(q.bias) != DType::Int32) ctx.fail("bias " + slot_name(ctx, q.bias) + " must be int32");
    if (ctx.in_shape(q.bias) != Shape{channels})
      ctx.fail("bias " + slot_name(ctx, q.bias) + " has shape " + shape_to_string(ctx.in_shape(q.bias)) +
               ", expected [" + std::to_string(channels) + "]");
  }
  return yt;
}

// Shared kernel options and buffers of a product's requantizing epilogue.
struct ProductArgs {
  std::string opts;
  cl_mem bias, xs, xz, ws, ys, yz;
};

// A scale operand as the kernels read it: float32 (a float16 scale widened once at plan time if
// constant, else by a Cast into a plan-owned copy before the product).
cl_mem scale_buffer(BuildContext& ctx, int slot) {
  if (ctx.in_type(slot) == DType::Float32) return ctx.in_buf(slot);
  if (!ctx.is_const(slot)) {
    const Operand wide = ctx.scratch(DType::Float32, ctx.in_shape(slot));
    launch_elementwise(ctx, "CAST", {ctx.input(slot)}, wide);
    return wide.mem;
  }
  const Tensor& t = ctx.in_data(slot);
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = static_cast<float>(host_get_f(t, i));
  return ctx.params(v.data(), v.size() * sizeof(float));
}

ProductArgs product_args(BuildContext& ctx, int64_t channels) {
  const QSlots& q = slots_of(ctx);
  const Node& n = ctx.node();
  const DType xt = ctx.in_type(q.x), yt = ctx.out_value(0).dtype;
  ProductArgs a;
  a.opts = std::string(" -DXT=") + cl_type(xt) + " -DYT=" + cl_type(yt);
  if (yt == DType::Int32) a.opts += " -DOUT_I32";
  else a.opts += range_defines(yt);
  cl_mem any = ctx.in_buf(q.x);
  a.bias = has(ctx, q.bias) ? ctx.in_buf(q.bias) : any;
  if (has(ctx, q.bias)) a.opts += " -DHAS_BIAS";
  a.xs = q.xs >= 0 ? scale_buffer(ctx, q.xs) : any;
  a.xz = has(ctx, q.xz) ? ctx.in_buf(q.xz) : zero_operand(ctx, xt).mem;
  a.ws = q.ws >= 0 ? scale_buffer(ctx, q.ws) : any;
  if (q.ws >= 0 && numel(ctx.in_shape(q.ws)) > 1) a.opts += " -DW_PER_CHANNEL";
  a.ys = q.ys >= 0 ? scale_buffer(ctx, q.ys) : any;
  a.yz = q.yz >= 0 ? ctx.in_buf(q.yz) : any;
  (void)channels;
  const Epilogue& e = n.epilogue;
  if (e.act) {
    // Relu, LeakyRelu and Clip commute with a positive scale: applied to the scaled value (Clip's
    // bounds divided by y_scale), the result is exactly what the unfused graph computes.
    a.opts += std::string(" -DEPILOGUE_ACT=ACT_") + e.act->kernel;
    const std::string name = e.act->name;
    double alpha = e.alpha, beta = e.beta;
    if (name == "Relu" || name == "LeakyRelu" || name == "Clip") {
      a.opts += " -DACT_SCALED";
      if (name == "Clip") {
        const double ys = host_get_f(ctx.in_data(q.ys), 0);
        alpha /= ys;
        beta /= ys;
      }
    }
    a.opts += " -DACT_ALPHA=" + float_literal(alpha) + " -DACT_BETA=" + float_literal(beta);
    // Scaled Relu and Clip are clamps: merged with the output range's (kernels/quant.cl FINISH_VEC).
    if (name == "Relu") a.opts += " -DACT_LO=0.0f -DACT_HI=MAXFLOAT";
    if (name == "Clip") a.opts += " -DACT_LO=" + float_literal(alpha) + " -DACT_HI=" + float_literal(beta);
  }
  // Whole-vector requantization where the activation allows it.
  if (yt != DType::Int32 && (!e.act || (e.act->vector_exact && a.opts.find("-DACT_SCALED") != std::string::npos)))
    a.opts += " -DVEC_FINISH";
  if (e.residual >= 0) ctx.unsupported("a fused residual add is not supported by the integer kernels");
  return a;
}

// Constant weights [rows][K] of an 8-bit type, minus their zero point (per row when the zero point
// has `rows` values), as floats (exact small integers) in the layout `index(row, k)` of a buffer of
// `size` elements. *max_abs gets the largest |w - zero point|.
template <typename Index>
HostFloats pack_weights(const Tensor& w, const Tensor* zp, int64_t rows, int64_t K, size_t size, Index index,
                                int64_t* max_abs) {
  HostFloats p(size, 0.0f);
  *max_abs = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t z = zp ? host_get_i(*zp, zp->numel() == 1 ? 0 : r) : 0;
    for (int64_t k = 0; k < K; ++k) {
      const int64_t v = host_get_i(w, r * K + k) - z;
      *max_abs = std::max<int64_t>(*max_abs, v < 0 ? -v : v);
      p[index(r, k)] = static_cast<float>(v);
    }
  }
  return p;
}

// The largest |x - x_zero_point| the input can hold: from a constant zero point, else the type's
// worst case.
int64_t max_input_magnitude(const OpContext& ctx, int x_slot, int zero_slot) {
  int lo, hi;
  quantized_range(ctx.in_type(x_slot), &lo, &hi);
  if (zero_slot < 0 || !ctx.has_input(zero_slot)) return std::max(-lo, hi);
  if (!ctx.is_const(zero_slot)) return hi - lo;
  const int64_t z = host_get_i(ctx.in_data(zero_slot), 0);
  return std::max<int64_t>(z - lo, hi - z);
}

// Reduction steps of `products_per_step` products of at most max_x * max_w each that float sums
// hold exactly (below 2^24); fails when not even one step fits.
int exact_chunk(const OpContext& ctx, int64_t products_per_step, int64_t max_x, int64_t max_w) {
  const int64_t per_step = std::max<int64_t>(1, products_per_step * max_x * std::max<int64_t>(1, max_w));
  const int64_t chunk = ((int64_t{1} << 24) - 1) / per_step;
  if (chunk < 1)
    ctx.unsupported("a " + std::to_string(products_per_step) +
                    "-tap window is too large for the integer kernels' exact accumulation");
  return static_cast<int>(std::min<int64_t>(chunk, 1 << 20));
}

int64_t product_of(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// ---- QLinearConv / ConvInteger -------------------------------------------------------------
// The bias (slot 8) is checked with the other quantization operands (check_product).
ConvShape qconv_shape(const OpContext& ctx) {
  const QSlots& q = slots_of(ctx);
  return conv_shape(ctx, q.x, q.w, -1);
}

void qconv_infer(OpContext& ctx) {
  ConvShape s = qconv_shape(ctx);
  const DType yt = check_product(ctx, s.M);
  Shape out{s.N, s.M};
  out.insert(out.end(), s.w.out.begin(), s.w.out.end());
  ctx.set_out(0, yt, out);
}

// ---- QLinearConv / ConvInteger: kernel variants ---------------------------------------------
// Everything a variant needs to know about one node (see ops/variants.hpp).
struct QConvDesc {
  ConvShape s;
  int64_t C_g = 0, M_g = 0, taps = 0, K = 0;
  std::array<int64_t, 3> in3{}, out3{}, k3{}, st3{}, d3{}, pb3{};
  bool pointwise = false;
  bool const_w = false;  // weights and their zero points are constants (packed at plan time)
  int64_t max_x = 255;   // the largest |x - x_zero|
  bool w_fits_s8 = false;  // constant weights whose every w - w_zero fits a signed byte
  DType xt = DType::UInt8, yt = DType::UInt8;
};

QConvDesc qconv_desc(const OpContext& ctx) {
  const QSlots& q = slots_of(ctx);
  QConvDesc d;
  d.s = qconv_shape(ctx);
  d.C_g = d.s.C / d.s.G;
  d.M_g = d.s.M / d.s.G;
  d.in3 = to3(d.s.w.in, 1);
  d.out3 = to3(d.s.w.out, 1);
  d.k3 = to3(d.s.w.k, 1);
  d.st3 = to3(d.s.w.s, 1);
  d.d3 = to3(d.s.w.d, 1);
  d.pb3 = to3(d.s.w.pb, 0);
  d.taps = d.k3[0] * d.k3[1] * d.k3[2];
  d.K = d.C_g * d.taps;
  d.pointwise = d.taps == 1 && product_of(d.s.w.s) == 1 &&
                std::all_of(d.s.w.pb.begin(), d.s.w.pb.end(), [](int64_t p) { return p == 0; }) &&
                std::all_of(d.s.w.pe.begin(), d.s.w.pe.end(), [](int64_t p) { return p == 0; });
  d.const_w = ctx.is_const(q.w) && (!has(ctx, q.wz) || ctx.is_const(q.wz));
  d.max_x = max_input_magnitude(ctx, q.x, q.xz);
  d.xt = ctx.in_type(q.x);
  d.yt = ctx.out_value(0).dtype;
  return d;
}

// Whether every w - w_zero of constant 8-bit weights [rows][K] fits a signed byte.
bool weights_fit_s8(const Tensor& w, const Tensor* zp, int64_t rows, int64_t K) {
  const bool per_row = zp && zp->numel() != 1;
  bool zero = true;  // every zero point 0 (ONNX Runtime's symmetric weights, per channel too)
  for (int64_t i = 0; zp && zero && i < zp->numel(); ++i) zero = host_get_i(*zp, i) == 0;
  if (zero) {
    if (w.dtype == DType::Int8) return true;
    const uint8_t* p = w.data<uint8_t>();
    return std::all_of(p, p + w.numel(), [](uint8_t v) { return v < 128; });
  }
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t z = host_get_i(*zp, per_row ? r : 0);
    for (int64_t k = 0; k < K; ++k) {
      const int64_t v = host_get_i(w, r * K + k) - z;
      if (v < -128 || v > 127) return false;
    }
  }
  return true;
}

std::string qconv_window(const QConvDesc& d) {
  std::string o;
  const char* axes[] = {"D", "H", "W"};
  for (int i = 0; i < 3; ++i)
    o += std::string(" -DK") + axes[i] + "=" + std::to_string(d.k3[i]) + " -DS" + axes[i] + "=" +
         std::to_string(d.st3[i]) + " -DD" + axes[i] + "=" + std::to_string(d.d3[i]);
  return o;
}

// The input extent along axis `a` (0..2: D, H, W) that `outputs` consecutive windows read when
// each window's last read is `last_span` elements wide (1 for a tap, more for a vector load).
int64_t window_extent(const QConvDesc& d, int a, int64_t outputs, int64_t last_span) {
  return (outputs - 1) * d.st3[a] + (d.k3[a] - 1) * d.d3[a] + last_span;
}

// The weights as floats minus their zero point: constants packed here (index(m, k) into a buffer
// of `size`), others by qconv_pack_weights (only the `ocb` block layout). *max_w: the largest
// magnitude (255 when unknown).
template <typename Index>
cl_mem qconv_weights(BuildContext& ctx, const QConvDesc& d, size_t size, Index index, int ocb, int64_t* max_w) {
  const QSlots& q = slots_of(ctx);
  *max_w = 255;
  if (d.const_w) {
    const Tensor* zp = has(ctx, q.wz) ? &ctx.in_data(q.wz) : nullptr;
    return ctx.constant_floats(pack_weights(ctx.in_data(q.w), zp, d.s.M, d.K, size, index, max_w));
  }
  const DType wt = ctx.in_type(q.w);
  const int64_t blocks = (d.M_g + ocb - 1) / ocb;
  cl_mem wp = ctx.scratch(DType::Float32, {static_cast<int64_t>(size)}).mem;
  const bool per = has(ctx, q.wz) && numel(ctx.in_shape(q.wz)) > 1;
  ctx.launch("quant", "qconv_pack_weights",
             "-DPACK_WEIGHTS -DOCB=" + std::to_string(ocb) + " -DWT=" + cl_type(wt) + (per ? " -DWZ_PER_CHANNEL" : ""),
             {static_cast<size_t>(d.s.G * blocks * ocb), static_cast<size_t>(d.K)}, {}, ctx.in_buf(q.w),
             has(ctx, q.wz) ? ctx.in_buf(q.wz) : zero_operand(ctx, wt).mem, wp, i32(d.M_g), i32(d.K), i32(blocks));
  return wp;
}

// The packed layout [G][blocks][K][ocb] (zero past M_g).
cl_mem packed_qweights(BuildContext& ctx, const QConvDesc& d, int ocb, int64_t* max_w) {
  const int64_t blocks = (d.M_g + ocb - 1) / ocb;
  return qconv_weights(ctx, d, static_cast<size_t>(d.s.G * blocks * d.K * ocb),
                       [&](int64_t m, int64_t k) {
                         const int64_t g = m / d.M_g, oc = m % d.M_g;
                         return static_cast<size_t>(((g * blocks + oc / ocb) * d.K + k) * ocb + oc % ocb);
                       },
                       ocb, max_w);
}

int qconv_ocb(const QConvDesc& d) { return d.M_g >= 12 ? 16 : (d.M_g >= 6 ? 8 : 4); }

// depthwise: one channel in and out per group, weights [C][taps]; a work-item per output row.
bool qdw_applies(const QConvDesc& d, const DeviceCaps&) {
  return d.const_w && d.C_g == 1 && d.M_g == 1 && d.s.G > 1 && d.taps * d.max_x * 255 < (int64_t{1} << 24);
}
// ring=1: qconv_depthwise_rows (input rows converted once into private memory) where it applies
// (2-D, strides 1 and 2, a ring within kRingLimit), the default on CPU-shaped devices; ring=0: the
// padded copy in global memory, then qconv_depthwise_padded (or qconv_depthwise for strides > 2).
VariantParams qdw_defaults(const QConvDesc&, const DeviceCaps& c) {
  return {{"owb", 8}, {"ring", c.cpu_shaped() ? 1 : 0}};
}
bool qdw_valid(const QConvDesc&, const DeviceCaps&, const VariantParams& p) {
  const int owb = p.at("owb"), ring = p.at("ring");
  return (owb == 4 || owb == 8 || owb == 16) && (ring == 0 || ring == 1);
}
constexpr int64_t kFloatCopyLimit = int64_t{1} << 22;
// qconv_depthwise_rows' ring of converted input rows, in floats of private memory per work-item.
constexpr int64_t kRingLimit = 16384;
size_t groups(int64_t n, int64_t per) { return static_cast<size_t>((n + per - 1) / per); }
void qdw_run(BuildContext& ctx, const QConvDesc& d, const VariantParams& p) {
  const QSlots& q = slots_of(ctx);
  ProductArgs a = product_args(ctx, d.s.M);
  int64_t max_w = 0;
  cl_mem wp = qconv_weights(ctx, d, static_cast<size_t>(d.s.M * d.taps),
                            [&](int64_t m, int64_t k) { return static_cast<size_t>(m * d.taps + k); }, 4, &max_w);
  const int owb = p.at("owb");
  const std::string opts = "-DDEPTHWISE -DOWB=" + std::to_string(owb) + qconv_window(d) + a.opts;
  const int64_t planes = d.s.N * d.s.G;
  // Work-groups of up to 16 output rows of a channel: PoCL runs a work-group's items in one call,
  // and at one row per work-group its per-group cost was a large share of a row's arithmetic.
  const size_t rows = static_cast<size_t>(d.out3[0] * d.out3[1]);
  size_t local = 1;
  for (size_t l = std::min<size_t>(16, ctx.caps().max_work_group_size); l > 1; --l)
    if (rows % l == 0) {
      local = l;
      break;
    }
  const int64_t blocks = (d.out3[2] + owb - 1) / owb;
  // RSLOTS rows of RPW floats (kernels/quant.cl): the window's rows and two output rows' more; a
  // row's window, or its 16-value copy where longer.
  const int64_t ring_row = std::max(blocks * owb * d.st3[2] + (d.k3[2] - 1) * d.d3[2], d.pb3[2] + (d.in3[2] + 15) / 16 * 16);
  const int64_t ring_floats = ((d.k3[1] - 1) * d.d3[1] + 1 + 2 * d.st3[1]) * ring_row;
  if (p.at("ring") == 1 && d.st3[2] <= 2 && d.k3[0] == 1 && d.in3[0] == 1 && ring_floats <= kRingLimit) {
    // 2-D, strides 1 and 2: input rows converted to floats once into a ring in private memory
    // (kernels/quant.cl, qconv_depthwise_rows); bands of rows x a few channels per work-item.
    const DepthwiseSplit split = depthwise_split(planes, d.out3[1] * d.out3[2]);
    const int64_t band_rows = (d.out3[1] + split.bands - 1) / split.bands;
    ctx.launch("quant", "qconv_depthwise_rows",
               opts + " -DDW_FLOAT_COPY -DDW_ROWS -DIN_W=" + std::to_string(d.in3[2]) + " -DOUT_W=" +
                   std::to_string(d.out3[2]) + " -DPAD_W=" + std::to_string(d.pb3[2]),
               {groups(d.out3[1], band_rows), groups(planes, split.chans)}, {1, 1}, ctx.in_buf(q.x), wp, a.bias,
               a.xs, a.xz, a.ws, a.ys, a.yz, ctx.out_buf(0), i32(d.s.G), i32(d.in3[1]), i32(d.out3[1]),
               i32(d.pb3[1]), i32(planes), i32(band_rows), i32(split.chans));
    return;
  }
  if (d.st3[2] <= 2) {
    // Strides 1 and 2: the input copied with its padding made real, then one vector load of
    // owb * stride elements per tap (kernels/quant.cl, qconv_depthwise_padded).
    const int64_t Dp = window_extent(d, 0, d.out3[0], 1), Hp = window_extent(d, 1, d.out3[1], 1);
    const int64_t Wp = window_extent(d, 2, (blocks - 1) * owb + 1, owb * d.st3[2]);
    // The copy holds x - x_zero as floats where it stays small (a tap is then a load and an FMA,
    // as in the float32 kernel): the 8-bit copy is kept for inputs past 16 MiB of floats.
    const bool float_copy = planes * Dp * Hp * Wp <= kFloatCopyLimit;
    const std::string copy_opts = opts + (float_copy ? " -DDW_FLOAT_COPY" : "");
    Operand xp = ctx.workspace(float_copy ? DType::Float32 : d.xt, {planes * Dp * Hp * Wp});
    // CPU-shaped: bands of rows x a few channels per work-item (depthwise_split); GPU-shaped: a
    // row of a channel per work-item.
    int64_t out_rows = 1, chans = 1, pad_rows = 1;
    std::vector<size_t> conv_local{local, 1}, pad_local;
    if (ctx.caps().cpu_shaped()) {
      const DepthwiseSplit split = depthwise_split(planes, d.out3[0] * d.out3[1] * d.out3[2]);
      chans = split.chans;
      out_rows = (static_cast<int64_t>(rows) + split.bands - 1) / split.bands;
      pad_rows = (Dp * Hp + split.bands - 1) / split.bands;
      conv_local = pad_local = {1, 1};
    }
    ctx.launch("quant", "qdw_pad_input", copy_opts, {groups(Dp * Hp, pad_rows), groups(planes, chans)}, pad_local,
               ctx.in_buf(q.x), a.xz, xp.mem, i32(d.in3[0]), i32(d.in3[1]), i32(d.in3[2]), i32(Dp), i32(Hp), i32(Wp),
               i32(d.pb3[0]), i32(d.pb3[1]), i32(d.pb3[2]), i32(planes), i32(pad_rows), i32(chans));
    ctx.launch("quant", "qconv_depthwise_padded", copy_opts,
               {groups(static_cast<int64_t>(rows), out_rows), groups(planes, chans)}, conv_local, xp.mem, wp, a.bias,
               a.xs, a.xz, a.ws, a.ys, a.yz, ctx.out_buf(0), i32(d.s.G), i32(Dp), i32(Hp), i32(Wp), i32(d.out3[0]),
               i32(d.out3[1]), i32(d.out3[2]), i32(planes), i32(out_rows), i32(chans));
    return;
  }
  ctx.launch("quant", "qconv_depthwise", opts, {rows, static_cast<size_t>(planes)}, {local, 1}, ctx.in_buf(q.x), wp,
             a.bias, a.xs, a.xz, a.ws, a.ys, a.yz, ctx.out_buf(0), i32(d.s.G), i32(d.in3[0]), i32(d.in3[1]),
             i32(d.in3[2]), i32(d.out3[0]), i32(d.out3[1]), i32(d.out3[2]), i32(d.pb3[0]), i32(d.pb3[1]),
             i32(d.pb3[2]));
}

// vnni_dw: depthwise on x86 AVX-512 VNNI (kernels/quant.cl, qconv_depthwise_vnni): a vpdpbusd
// lane is one output pixel, its 4 bytes 4 taps of a kernel row. 2-D, strides up to 2 and short
// dilations (a 16-byte lane of 4 pixels holds their taps: shift + 3 * stride + 3 * dilation < 16),
// constant weights whose every w - w_zero fits a signed byte, a ring of input rows in private
// memory of at most 4 * kRingLimit bytes (the float kernel's limit).
bool qdw_vnni_applies(const QConvDesc& d, const DeviceCaps& c) {
  if (!(c.x86_vnni512 && d.const_w && d.w_fits_s8 && d.C_g == 1 && d.M_g == 1 && d.s.G > 1)) return false;
  if (d.k3[0] != 1 || d.in3[0] != 1 || d.st3[2] > 2 || d.pb3[2] > 32 || d.k3[2] > 16) return false;
  const int64_t left = (d.pb3[2] + 3) / 4, shift = 4 * left - d.pb3[2];
  if (shift + 3 * d.st3[2] + 3 * d.d3[2] >= 16) return false;
  const int64_t tg = (d.k3[2] + 3) / 4, vblk = (d.out3[2] + 15) / 16;
  // kernels/quant.cl: VNEED, VCOPY, VRB (uints), VSLOTS.
  const int64_t need = 16 - left + (vblk - 1) * 4 * d.st3[2] + (tg - 1) * d.d3[2] + 16;
  const int64_t row = (std::max(need, 16 + 4 * ((d.in3[2] + 15) / 16)) + 15) / 16 * 16;
  const int64_t slots = depthwise_ring_slots(d.k3[1], d.d3[1], d.st3[1]);  // VSLOTS
  return slots <= 64 && slots * row * 4 <= 4 * kRingLimit;
}
void qdw_vnni_run(BuildContext& ctx, const QConvDesc& d, const VariantParams&) {
  const QSlots& q = slots_of(ctx);
  ProductArgs a = product_args(ctx, d.s.M);
  const int64_t KH = d.k3[1], KW = d.k3[2], TG = (KW + 3) / 4;
  // Wq [C][KH][TG]: tap kw of row kh in byte kw % 4 of group kw / 4; wsum: each channel's sum.
  const Tensor& w = ctx.in_data(q.w);
  const Tensor* zp = has(ctx, q.wz) ? &ctx.in_data(q.wz) : nullptr;
  std::vector<uint32_t> wq(static_cast<size_t>(d.s.M * KH * TG), 0u);
  std::vector<int32_t> wsum(static_cast<size_t>(d.s.M), 0);
  for (int64_t m = 0; m < d.s.M; ++m) {
    const int64_t z = zp ? host_get_i(*zp, zp->numel() == 1 ? 0 : m) : 0;
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw) {
        const int64_t v = host_get_i(w, (m * KH + kh) * KW + kw) - z;
        wsum[static_cast<size_t>(m)] += static_cast<int32_t>(v);
        wq[static_cast<size_t>((m * KH + kh) * TG + kw / 4)] |= static_cast<uint32_t>(static_cast<uint8_t>(static_cast<int8_t>(v)))
                                                              << (8 * (kw % 4));
      }
  }
  cl_mem wqb = ctx.params(wq.data(), wq.size() * sizeof(uint32_t));
  cl_mem wsb = ctx.params(wsum.data(), wsum.size() * sizeof(int32_t));
  const int64_t planes = d.s.N * d.s.G;
  const DepthwiseSplit split = depthwise_split(planes, d.out3[1] * d.out3[2]);
  const int64_t band_rows = (d.out3[1] + split.bands - 1) / split.bands;
  ctx.launch("quant", "qconv_depthwise_vnni",
             "-DQDWVNNI" + qconv_window(d) + " -DIN_W=" + std::to_string(d.in3[2]) + " -DOUT_W=" +
                 std::to_string(d.out3[2]) + " -DPAD_W=" + std::to_string(d.pb3[2]) +
                 (d.xt == DType::Int8 ? " -DX_SIGNED" : "") + a.opts,
             {groups(d.out3[1], band_rows), groups(planes, split.chans)}, {1, 1}, ctx.in_buf(q.x), wqb, wsb, a.bias,
             a.xs, a.xz, a.ws, a.ys, a.yz, ctx.out_buf(0), i32(d.s.G), i32(d.in3[1]), i32(d.out3[1]), i32(d.pb3[1]),
             i32(planes), i32(band_rows), i32(split.chans));
}

// pointwise: 1x1, stride 1, unpadded; vectors along the pixels.
bool qpw_applies(const QConvDesc& d, const DeviceCaps&) { return d.pointwise; }
VariantParams qpw_defaults(const QConvDesc& d, const DeviceCaps&) {
  return {{"ocb", qconv_ocb(d)}, {"pxb", d.out3[0] * d.out3[1] * d.out3[2] >= 16 ? 16 : 8}};
}
bool qpw_valid(const QConvDesc&, const DeviceCaps&, const VariantParams& p) {
  const int ocb = p.at("ocb"), pxb = p.at("pxb");
  return (ocb == 4 || ocb == 8 || ocb == 16) && (pxb == 8 || pxb == 16);
}
void qpw_run(BuildContext& ctx, const QConvDesc& d, const VariantParams& p) {
  const QSlots& q = slots_of(ctx);
  ProductArgs a = product_args(ctx, d.s.M);
  const int ocb = p.at("ocb"), pxb = p.at("pxb");
  int64_t max_w = 0;
  cl_mem wp = packed_qweights(ctx, d, ocb, &max_w);
  const int64_t P = d.out3[0] * d.out3[1] * d.out3[2], blocks = (d.M_g + ocb - 1) / ocb;
  ctx.launch("quant", "qconv_pointwise",
             "-DPOINTWISE -DOCB=" + std::to_string(ocb) + " -DPXB=" + std::to_string(pxb) + " -DCHUNK=" +
                 std::to_string(exact_chunk(ctx, 1, d.max_x, max_w)) + a.opts,
             {static_cast<size_t>(blocks), static_cast<size_t>((P + pxb - 1) / pxb), static_cast<size_t>(d.s.N * d.s.G)},
             {1, 1, 1}, ctx.in_buf(q.x), wp, a.bias, a.xs, a.xz, a.ws, a.ys, a.yz, ctx.out_buf(0), i32(d.C_g), i32(P),
             i32(d.M_g), i32(d.s.G), i32(blocks));
}

// packed: any conv; OCB channels x OWB pixels of one output row per work-item.
bool qpacked_applies(const QConvDesc&, const DeviceCaps&) { return true; }
VariantParams qpacked_defaults(const QConvDesc& d, const DeviceCaps&) {
  return {{"ocb", qconv_ocb(d)}, {"owb", static_cast<int>(std::min<int64_t>(8, d.out3[2]))}};
}
bool qpacked_valid(const QConvDesc&, const DeviceCaps&, const VariantParams& p) {
  const int ocb = p.at("ocb"), owb = p.at("owb");
  return (ocb == 4 || ocb == 8 || ocb == 16) && owb >= 1 && owb <= 16;
}
void qpacked_run(BuildContext& ctx, const QConvDesc& d, const VariantParams& p) {
  const QSlots& q = slots_of(ctx);
  ProductArgs a = product_args(ctx, d.s.M);
  const int ocb = p.at("ocb"), owb = p.at("owb");
  int64_t max_w = 0;
  cl_mem wp = packed_qweights(ctx, d, ocb, &max_w);
  const int64_t blocks = (d.M_g + ocb - 1) / ocb;
  ctx.launch("quant", "qconv",
             "-DOCB=" + std::to_string(ocb) + " -DOWB=" + std::to_string(owb) + qconv_window(d) + " -DCHUNK=" +
                 std::to_string(exact_chunk(ctx, d.taps, d.max_x, max_w)) + a.opts,
             {static_cast<size_t>(blocks), static_cast<size_t>((d.out3[2] + owb - 1) / owb),
              static_cast<size_t>(d.s.N * d.s.G * d.out3[0] * d.out3[1])},
             {1, 1, 1}, ctx.in_buf(q.x), wp, a.bias, a.xs, a.xz, a.ws, a.ys, a.yz, ctx.out_buf(0), i32(d.C_g),
             i32(d.in3[0]), i32(d.in3[1]), i32(d.in3[2]), i32(d.M_g), i32(d.out3[0]), i32(d.out3[1]),
             i32(d.out3[2]), i32(d.s.G), i32(blocks), i32(d.pb3[0]), i32(d.pb3[1]), i32(d.pb3[2]));
}

// vnni: x86 AVX-512 VNNI (DeviceCaps::x86_vnni512), 4 input channels per vpdpbusd lane; the
// input first repacked into 4-channel groups with its padding made real (kernels/quant.cl,
// QVNNI). Needs constant weights whose every w - w_zero fits a signed byte and sums that stay
// below 2^30.
constexpr int64_t kVnniMaxSteps = (int64_t{1} << 30) / (255 * 128);

bool qvnni_applies(const QConvDesc& d, const DeviceCaps& c) {
  return c.x86_vnni512 && d.const_w && d.w_fits_s8 && ((d.C_g + 3) / 4) * 4 * d.taps <= kVnniMaxSteps;
}
// Depthwise convs (one channel per group) would use a quarter of every instruction; 3-channel
// stems use three quarters and still beat the float-FMA kernel (squeezenet1_1 int8: 883 -> 530 us).
bool qvnni_preferred(const QConvDesc& d, const DeviceCaps&) { return d.C_g >= 3; }
VariantParams qvnni_defaults(const QConvDesc& d, const DeviceCaps&) {
  const int64_t ow = d.out3[2];
  const int owb = ow <= 8 ? static_cast<int>(ow) : (ow % 8 != 0 && ow % 7 == 0 ? 7 : 8);
  return {{"owb", owb}, {"ocv", d.M_g > 16 ? 2 : 1}};
}
bool qvnni_valid(const QConvDesc&, const DeviceCaps&, const VariantParams& p) {
  const int owb = p.at("owb"), ocv = p.at("ocv");
  return owb >= 1 && owb <= 16 && (ocv == 1 || ocv == 2 || ocv == 4) && owb * ocv <= 28;
}

// The weights as vectors of lanes holding 4 signed bytes, or 2 signed 16-bit halves with
// group = 2 (see qconv_vnni), and each output channel's sum.
struct VnniWeights {
  std::vector<uint32_t> packed;
  std::vector<int32_t> sums;
};

// Output channels in blocks of `block` lanes: [G][blocks][CG][taps][block] uints, CG groups of
// `group` input channels (4: bytes, 2: 16-bit halves).
VnniWeights pack_vnni_weights(const Tensor& w, const Tensor* zp, const QConvDesc& d, int64_t block, int64_t group) {
  const int64_t CG = (d.C_g + group - 1) / group, blocks = (d.M_g + block - 1) / block;
  const int bits = static_cast<int>(32 / group);
  VnniWeights r;
  r.packed.assign(static_cast<size_t>(d.s.G * blocks * CG * d.taps * block), 0u);
  r.sums.assign(static_cast<size_t>(d.s.M), 0);
  for (int64_t m = 0; m < d.s.M; ++m) {
    const int64_t z = zp ? host_get_i(*zp, zp->numel() == 1 ? 0 : m) : 0;
    const int64_t g = m / d.M_g, oc = m % d.M_g, b = oc / block, lane = oc % block;
    int64_t sum = 0;
    for (int64_t c = 0; c < d.C_g; ++c)
      for (int64_t t = 0; t < d.taps; ++t) {
        const int64_t v = host_get_i(w, (m * d.C_g + c) * d.taps + t) - z;
        sum += v;
        const size_t i = static_cast<size_t>((((g * blocks + b) * CG + c / group) * d.taps + t) * block + lane);
        const uint32_t part = group == 4 ? static_cast<uint8_t>(static_cast<int8_t>(v))
                                         : static_cast<uint16_t>(static_cast<int16_t>(v));
        r.packed[i] |= part << (bits * (c % group));
      }
    r.sums[static_cast<size_t>(m)] = static_cast<int32_t>(sum);
  }
  return r;
}

// The packed weights (pack_vnni_weights) and channel sums as device buffers.
void upload_vnni_weights(BuildContext& ctx, const QConvDesc& d, int64_t block, int64_t group, cl_mem* wq,
                         cl_mem* wsum) {
  const QSlots& q = slots_of(ctx);
  const VnniWeights vw =
      pack_vnni_weights(ctx.in_data(q.w), has(ctx, q.wz) ? &ctx.in_data(q.wz) : nullptr, d, block, group);
  *wq = ctx.params(vw.packed.data(), vw.packed.size() * sizeof(uint32_t));
  *wsum = ctx.params(vw.sums.data(), vw.sums.size() * sizeof(int32_t));
}

// The input repacked into groups of `group` channels per uint with its padding made real, extents
// Dp x Hp x Wp (kernels/quant.cl, pack_input): qconv_vnni's, qconv_madd's and qconv_vnni_rows's.
// VNNI: one work-item per padded row.
// The packing kernel's options: only what it reads (the input type, its grouping), so that one
// program packs for every conv of a model and every variant (the conv's own options made one per
// conv: 120 of the VNNI conv test's 280 kernel compilations).
std::string pack_input_options(BuildContext& ctx, const QConvDesc& d, int64_t group) {
  return std::string(" -DQVNNI -DPACK_INPUT_ONLY -DXT=") + cl_type(d.xt) + (d.xt == DType::Int8 ? " -DX_SIGNED" : "") +
         (group == 2 ? std::string(" -DQPAIRS") + (ctx.caps().x86_avx2 ? " -DX86_MADD" : "") : "");
}
Operand pack_grouped_input(BuildContext& ctx, const QConvDesc& d, cl_mem xz, int64_t group, int64_t CG, int64_t Dp,
                           int64_t Hp, int64_t Wp) {
  Operand xp = ctx.workspace(DType::Int32, {d.s.N * d.s.G * CG * Dp * Hp * Wp});
  ctx.launch("quant", group == 4 ? "qvnni_pack_input" : "qmadd_pack_input", pack_input_options(ctx, d, group),
             {group == 4 ? size_t{1} : static_cast<size_t>((Wp + 15) / 16), static_cast<size_t>(Dp * Hp),
              static_cast<size_t>(d.s.N * d.s.G * CG)},
             {}, ctx.in_buf(slots_of(ctx).x), xz, xp.mem, i32(d.C_g), i32(d.in3[0]), i32(d.in3[1]), i32(d.in3[2]),
             i32(CG), i32(Dp), i32(Hp), i32(Wp), i32(d.pb3[0]), i32(d.pb3[1]), i32(d.pb3[2]));
  return xp;
}

// The VNNI conv (group 4, 16 lanes) or the madd one (group 2, 8 lanes; -DQPAIRS).
void run_grouped_conv(BuildContext& ctx, const QConvDesc& d, const VariantParams& p, int64_t group) {
  ProductArgs a = product_args(ctx, d.s.M);
  const int owb = p.at("owb"), ocv = p.at("ocv");
  const int64_t lanes = group == 4 ? 16 : 8;
  cl_mem wq, wsum;
  upload_vnni_weights(ctx, d, lanes * ocv, group, &wq, &wsum);
  const int64_t CG = (d.C_g + group - 1) / group, blocks = (d.M_g + lanes * ocv - 1) / (lanes * ocv);
  const int64_t ow_blocks = (d.out3[2] + owb - 1) / owb;
  // The padded input extents that cover every read (whole OWB blocks included).
  const int64_t Dp = window_extent(d, 0, d.out3[0], 1), Hp = window_extent(d, 1, d.out3[1], 1);
  const int64_t Wp = window_extent(d, 2, ow_blocks * owb, 1);
  std::string opts = " -DQVNNI -DOWB=" + std::to_string(owb) + " -DOCV=" + std::to_string(ocv) + qconv_window(d) +
                     (d.xt == DType::Int8 ? " -DX_SIGNED" : "") + a.opts;
  if (group == 2) opts += std::string(" -DQPAIRS") + (ctx.caps().x86_avx2 ? " -DX86_MADD" : "");
  Operand xp = pack_grouped_input(ctx, d, a.xz, group, CG, Dp, Hp, Wp);
  ctx.launch("quant", group == 4 ? "qconv_vnni" : "qconv_madd", opts,
             {static_cast<size_t>(blocks), static_cast<size_t>(ow_blocks),
              static_cast<size_t>(d.s.N * d.s.G * d.out3[0] * d.out3[1])},
             {1, 1, 1}, xp.mem, wq, wsum, a.bias, a.xs, a.xz, a.ws, a.ys, a.yz, ctx.out_buf(0), i32(CG), i32(Dp),
             i32(Hp), i32(Wp), i32(d.M_g), i32(d.out3[0]), i32(d.out3[1]), i32(d.out3[2]), i32(d.s.G),
             i32(blocks));
}
void qvnni_run(BuildContext& ctx, const QConvDesc& d, const VariantParams& p) { run_grouped_conv(ctx, d, p, 4); }

// vnni_rows: convs with stride 1 or 2 along W on VNNI with the 1x1 kernels' pixel vectors along
// output rows (qconv_vnni_rows): PWB channels x PXV vectors of 16 columns x RB rows per
// work-item, each channel's pixels requantized and stored as vectors. The packed input
// (qvnni_pack_input) is qconv_vnni's, its rows long enough for every vector's reads. Strided 1x1
// convs (ResNets' downsampling) run here too: qconv_vnni stored their outputs byte by byte.
bool qvnni_rows_applies(const QConvDesc& d, const DeviceCaps& c) {
  return !d.pointwise && (d.st3[2] == 1 || d.st3[2] == 2) && qvnni_applies(d, c);
}
// Where an output row fills most of its 16-pixel vectors (rows of 13 columns and more: 81 %);
// qconv_vnni, with output channels in the lanes, keeps narrow rows (ResNets' 7x7 planes). 3-channel
// stems too (one vpdpbusd lane of 4 bytes per pixel and tap either way): int8 squeezenet1_1's
// 490 -> 172 us, resnet18's 629 -> 357 us (Xeon AVX-512).
bool qvnni_rows_preferred(const QConvDesc& d, const DeviceCaps&) {
  const int64_t ow = d.out3[2];
  return d.C_g >= 3 && ow * 100 >= (ow + 15) / 16 * 16 * 80;
}
// 16 sums: 8 channels x 2 vectors, two of a row, or one of two rows where rows are at most 16
// columns or the sums are short (stems of 1 group of 4 channels; the int8 squeezenet1_1 and
// resnet18 layers each way measured faster so, Xeon AVX-512).
VariantParams qvnni_rows_defaults(const QConvDesc& d, const DeviceCaps&) {
  const bool two_rows = d.out3[1] > 1 && (d.out3[2] <= 16 || d.C_g <= 4);
  return {{"pwb", 8}, {"pxv", two_rows ? 1 : 2}, {"rb", two_rows ? 2 : 1}, {"direct", 1}};
}
bool qvnni_rows_valid(const QConvDesc&, const DeviceCaps&, const VariantParams& p) {
  const int pwb = p.at("pwb"), pxv = p.at("pxv"), rb = p.at("rb");
  return (pwb == 4 || pwb == 8 || pwb == 16) && pxv >= 1 && pxv <= 4 && rb >= 1 && rb <= 4 &&
         pwb * pxv * rb <= 32 && (!p.count("direct") || p.at("direct") == 0 || p.at("direct") == 1);
}
// qconv_vnni_rows_x's private copy of its input rows: ROWS_GROUPS 4-channel groups x IN_ROWS rows
// x IN_VECS vectors of 64 bytes (kernels/quant.cl), at most 64 KiB. ROWS_GROUPS is 64 (one
// program for every layer of a window) where that fits (3x3 windows: 36-60 KiB), else the
// conv's own group count rounded up to a power of two (7x7 stems: one group), else no direct run.
constexpr int64_t kRowsGroups = 64, kRowsCopyBytes = 64 * 1024;
int64_t rows_direct_groups(const QConvDesc& d, int pxv, int rb) {
  const int64_t in_rows = (rb - 1) * d.st3[1] + (d.k3[1] - 1) * d.d3[1] + 1;
  const int64_t in_vecs = (16 * pxv * d.st3[2] + (d.k3[2] - 1) * d.d3[2] + 15) / 16;
  const int64_t cg = (d.C_g + 3) / 4, per_group = in_rows * in_vecs * 64;
  if (cg > kRowsGroups) return 0;
  if (kRowsGroups * per_group <= kRowsCopyBytes) return kRowsGroups;
  int64_t groups = 1;
  while (groups < cg) groups *= 2;
  return groups * per_group <= kRowsCopyBytes ? groups : 0;
}
void qvnni_rows_run(BuildContext& ctx, const QConvDesc& d, const VariantParams& p) {
  const QSlots& q = slots_of(ctx);
  ProductArgs a = product_args(ctx, d.s.M);
  const int pwb = p.at("pwb"), pxv = p.at("pxv"), rb = p.at("rb");
  cl_mem wq, wsum;
  upload_vnni_weights(ctx, d, pwb, 4, &wq, &wsum);
  const int64_t CG = (d.C_g + 3) / 4, blocks = (d.M_g + pwb - 1) / pwb;
  const int64_t step = 16 * pxv, items = (d.out3[2] + step - 1) / step;
  const int64_t row_blocks = (d.out3[1] + rb - 1) / rb;
  // The padded input extents that cover every read (whole vectors and row blocks included).
  const int64_t Dp = window_extent(d, 0, d.out3[0], 1), Hp = window_extent(d, 1, row_blocks * rb, 1);
  const int64_t Wp = window_extent(d, 2, items * step, d.st3[2]);  // stride 2: the odd lane after the last
  const std::string opts = " -DQVNNI -DPW_ROWS -DPWB=" + std::to_string(pwb) + " -DPXV=" + std::to_string(pxv) +
                           " -DRB=" + std::to_string(rb) + " -DOWB=1 -DOCV=1" + qconv_window(d) +
                           (d.xt == DType::Int8 ? " -DX_SIGNED" : "") + a.opts;
  const bool two_d = d.in3[0] == 1 && d.out3[0] == 1 && d.k3[0] == 1;
  const int64_t rows_groups = two_d ? rows_direct_groups(d, pxv, rb) : 0;
  if ((!p.count("direct") || p.at("direct") == 1) && rows_groups > 0) {
    // No packing launch: each work-item gathers its rows' input once and computes `per` channel
    // blocks from it, as few work-items as keep 4 per compute unit busy.
    const int64_t cus = ctx.caps().compute_units, pixel_items = items * row_blocks * d.s.N * d.s.G;
    const int64_t ranges = std::clamp<int64_t>((4 * cus + pixel_items - 1) / pixel_items, 1, blocks);
    const int64_t per = (blocks + ranges - 1) / ranges;
    ctx.launch("quant", "qconv_vnni_rows_x", opts + " -DROWS_DIRECT -DROWS_GROUPS=" + std::to_string(rows_groups),
               {static_cast<size_t>((blocks + per - 1) / per), static_cast<size_t>(items),
                static_cast<size_t>(d.s.N * d.s.G * row_blocks)},
               {1, 1, 1}, ctx.in_buf(q.x), wq, wsum, a.bias, a.xs, a.xz, a.ws, a.ys, a.yz, ctx.out_buf(0),
               i32(d.C_g), i32(d.in3[1]), i32(d.in3[2]), i32(d.pb3[1]), i32(d.pb3[2]), i32(d.M_g), i32(d.out3[1]),
               i32(d.out3[2]), i32(d.s.G), i32(blocks), i32(per));
    return;
  }
  Operand xp = pack_grouped_input(ctx, d, a.xz, 4, CG, Dp, Hp, Wp);
  ctx.launch("quant", "qconv_vnni_rows", opts,
             {static_cast<size_t>(blocks), static_cast<size_t>(items),
              static_cast<size_t>(d.s.N * d.s.G * d.out3[0] * row_blocks)},
             {1, 1, 1}, xp.mem, wq, wsum, a.bias, a.xs, a.xz, a.ws, a.ys, a.yz, ctx.out_buf(0), i32(CG), i32(Dp),
             i32(Hp), i32(Wp), i32(d.M_g), i32(d.out3[0]), i32(d.out3[1]), i32(d.out3[2]), i32(d.s.G),
             i32(blocks));
}

// madd: any conv with constant weights in the VNNI conv's shape with 2 input channels per lane as
// 16-bit halves and x86's vpmaddwd (-DQPAIRS; portable OpenCL C elsewhere): 8 channels per vector,
// any 8-bit weights, sums below 2^31.
bool qmadd_applies(const QConvDesc& d, const DeviceCaps&) {
  return d.const_w && (d.C_g + 1) / 2 * 2 * d.taps * 255 * 255 < (int64_t{1} << 31);
}
// Where the instruction is there, for convs whose lanes are mostly used (not depthwise).
bool qmadd_preferred(const QConvDesc& d, const DeviceCaps& c) { return c.x86_avx2 && c.cpu_shaped() && d.C_g >= 3; }
VariantParams qmadd_defaults(const QConvDesc& d, const DeviceCaps&) {
  const int64_t ow = d.out3[2];
  const int owb = ow <= 6 ? static_cast<int>(ow) : (ow % 6 != 0 && ow % 7 == 0 ? 7 : 6);
  return {{"owb", owb}, {"ocv", d.M_g > 8 ? 2 : 1}};
}
bool qmadd_valid(const QConvDesc&, const DeviceCaps&, const VariantParams& p) {
  const int owb = p.at("owb"), ocv = p.at("ocv");
  return owb >= 1 && owb <= 16 && (ocv == 1 || ocv == 2 || ocv == 4) && owb * ocv <= 16;
}
void qmadd_run(BuildContext& ctx, const QConvDesc& d, const VariantParams& p) { run_grouped_conv(ctx, d, p, 2); }

// vnni_pw: 1x1 convs (stride 1, unpadded) on VNNI with vectors along 16 pixels (qconv_vnni_pw).
bool qvnni_pw_applies(const QConvDesc& d, const DeviceCaps& c) { return d.pointwise && qvnni_applies(d, c); }
// Planes of 128 pixels and more: 4 channels x 4 vectors, so that a work-item writes whole 64-byte
// lines of each output channel (with 2 vectors, two work-items on different cores wrote the two
// halves of a line): the 1x1 convs of int8 mobilenet_v2, EfficientNet-Lite0 and squeezenet1_1
// 0.7-0.9x the time of 16 channels x 2 vectors (per-node minima over alternating runs, Xeon
// AVX-512); 7x7 planes 1.35-1.6x, so they keep 16 x 2.
VariantParams qvnni_pw_defaults(const QConvDesc& d, const DeviceCaps&) {
  const int64_t P = d.out3[0] * d.out3[1] * d.out3[2];
  if (P >= 128) return {{"ocb", 4}, {"pxv", 4}, {"direct", 1}};
  return {{"ocb", d.M_g >= 16 ? 16 : 8}, {"pxv", P >= 32 ? 2 : 1}, {"direct", 1}};
}
bool qvnni_pw_valid(const QConvDesc&, const DeviceCaps&, const VariantParams& p) {
  const int ocb = p.at("ocb"), pxv = p.at("pxv");
  return (ocb == 4 || ocb == 8 || ocb == 16) && pxv >= 1 && pxv <= 4 && ocb * pxv <= 32 &&
         (!p.count("direct") || p.at("direct") == 0 || p.at("direct") == 1);
}
// qconv_vnni_pw_x's private copy of its pixels' input: at most this many 4-channel groups
// (passed as -DPW_GROUPS, the copy's size).
constexpr int64_t kPwGroups = 256;
void qvnni_pw_run(BuildContext& ctx, const QConvDesc& d, const VariantParams& p) {
  const QSlots& q = slots_of(ctx);
  ProductArgs a = product_args(ctx, d.s.M);
  const int ocb = p.at("ocb"), pxv = p.at("pxv");
  // Blocks of ocb channels, one lane each (pointwise: one tap).
  cl_mem wq, wsum;
  upload_vnni_weights(ctx, d, ocb, 4, &wq, &wsum);
  const int64_t C4 = (d.C_g + 3) / 4, blocks = (d.M_g + ocb - 1) / ocb;
  const int64_t P = d.out3[0] * d.out3[1] * d.out3[2], step = 16 * pxv;
  const int64_t items = (P + step - 1) / step, Pp = items * step;
  const std::string opts = " -DQVNNI -DPWB=" + std::to_string(ocb) + " -DPXV=" + std::to_string(pxv) +
                           " -DOWB=1 -DOCV=1" + qconv_window(d) + (d.xt == DType::Int8 ? " -DX_SIGNED" : "") + a.opts;
  const std::vector<size_t> global{static_cast<size_t>(blocks), static_cast<size_t>(items),
                                   static_cast<size_t>(d.s.N * d.s.G)};
  if (p.count("direct") && p.at("direct") == 1 && C4 <= kPwGroups) {
    // Each work-item gathers its pixels' input once into private memory and computes `per`
    // channel blocks from it: as few work-items as keep 4 per compute unit busy.
    const int64_t cus = ctx.caps().compute_units, pixel_items = items * d.s.N * d.s.G;
    const int64_t ranges = std::clamp<int64_t>((4 * cus + pixel_items - 1) / pixel_items, 1, blocks);
    const int64_t per = (blocks + ranges - 1) / ranges;
    ctx.launch("quant", "qconv_vnni_pw_x", opts + " -DPW_DIRECT -DPW_GROUPS=" + std::to_string(kPwGroups),
               {static_cast<size_t>((blocks + per - 1) / per), global[1], global[2]}, {1, 1, 1}, ctx.in_buf(q.x), wq,
               wsum, a.bias, a.xs, a.xz, a.ws, a.ys, a.yz, ctx.out_buf(0), i32(C4), i32(d.C_g), i32(P), i32(Pp),
               i32(d.M_g), i32(d.s.G), i32(blocks), i32(per));
    return;
  }
  Operand xp = ctx.workspace(DType::Int32, {d.s.N * d.s.G * C4 * Pp});
  // The pixels as one row of P columns, packed into Pp (the tail holds the zero point).
  ctx.launch("quant", "qvnni_pack_input", pack_input_options(ctx, d, 4),
             {static_cast<size_t>(Pp / 16), 1, static_cast<size_t>(d.s.N * d.s.G * C4)}, {}, ctx.in_buf(q.x), a.xz,
             xp.mem, i32(d.C_g), i32(1), i32(1), i32(P), i32(C4), i32(1), i32(1), i32(Pp), i32(0), i32(0), i32(0));
  ctx.launch("quant", "qconv_vnni_pw", opts, global, {1, 1, 1}, xp.mem, wq, wsum, a.bias, a.xs, a.xz, a.ws, a.ys,
             a.yz, ctx.out_buf(0), i32(C4), i32(d.C_g), i32(P), i32(Pp), i32(d.M_g), i32(d.s.G), i32(blocks));
}

// madd_pw: 1x1 convs with 16-bit pairwise products (kernels/quant.cl, qconv_madd_pw): two input
// channels per 32-bit lane, x86's vpmaddwd where there is no VNNI (AVX2). Exact for any 8-bit
// weights (w - w_zero fits 16 bits) while C_g * 255 * 255 stays below 2^31.
bool qmadd_pw_applies(const QConvDesc& d, const DeviceCaps& c) { return d.pointwise && qmadd_applies(d, c); }
bool qmadd_pw_preferred(const QConvDesc&, const DeviceCaps& c) { return c.x86_avx2 && c.cpu_shaped(); }
VariantParams qmadd_pw_defaults(const QConvDesc& d, const DeviceCaps&) {
  const int64_t P = d.out3[0] * d.out3[1] * d.out3[2];
  return {{"ocb", d.M_g >= 8 ? 8 : 4}, {"pxv", P >= 16 ? 2 : 1}};
}
bool qmadd_pw_valid(const QConvDesc&, const DeviceCaps&, const VariantParams& p) {
  const int ocb = p.at("ocb"), pxv = p.at("pxv");
  return ocb >= 1 && ocb <= 16 && pxv >= 1 && pxv <= 4 && ocb * pxv <= 16;
}

// The weights of qconv_madd_pw: [G][blocks][C2][block] uints, channel 2*c2's w' in the low half,
// 2*c2+1's in the high half; and each output channel's sum of w'.
struct MaddWeights {
  std::vector<uint32_t> packed;
  std::vector<int32_t> sums;
};
MaddWeights pack_madd_weights(const Tensor& w, const Tensor* zp, const QConvDesc& d, int64_t block) {
  const int64_t C2 = (d.C_g + 1) / 2, blocks = (d.M_g + block - 1) / block;
  MaddWeights r;
  r.packed.assign(static_cast<size_t>(d.s.G * blocks * C2 * block), 0u);
  r.sums.assign(static_cast<size_t>(d.s.M), 0);
  for (int64_t m = 0; m < d.s.M; ++m) {
    const int64_t z = zp ? host_get_i(*zp, zp->numel() == 1 ? 0 : m) : 0;
    const int64_t g = m / d.M_g, oc = m % d.M_g, b = oc / block, lane = oc % block;
    int64_t sum = 0;
    for (int64_t c = 0; c < d.C_g; ++c) {
      const int64_t v = host_get_i(w, m * d.C_g + c) - z;
      sum += v;
      const size_t i = static_cast<size_t>(((g * blocks + b) * C2 + c / 2) * block + lane);
      r.packed[i] |= static_cast<uint32_t>(static_cast<uint16_t>(static_cast<int16_t>(v))) << (16 * (c % 2));
    }
    r.sums[static_cast<size_t>(m)] = static_cast<int32_t>(sum);
  }
  return r;
}

void qmadd_pw_run(BuildContext& ctx, const QConvDesc& d, const VariantParams& p) {
  const QSlots& q = slots_of(ctx);
  ProductArgs a = product_args(ctx, d.s.M);
  const int ocb = p.at("ocb"), pxv = p.at("pxv");
  const MaddWeights mw =
      pack_madd_weights(ctx.in_data(q.w), has(ctx, q.wz) ? &ctx.in_data(q.wz) : nullptr, d, ocb);
  cl_mem wq = ctx.params(mw.packed.data(), mw.packed.size() * sizeof(uint32_t));
  cl_mem wsum = ctx.params(mw.sums.data(), mw.sums.size() * sizeof(int32_t));
  const int64_t blocks = (d.M_g + ocb - 1) / ocb, P = d.out3[0] * d.out3[1] * d.out3[2];
  ctx.launch("quant", "qconv_madd_pw",
             " -DQMADD -DPWB=" + std::to_string(ocb) + " -DPXV=" + std::to_string(pxv) +
                 (ctx.caps().x86_avx2 ? " -DX86_MADD" : "") + a.opts,
             {static_cast<size_t>(blocks), groups(P, 8 * pxv), static_cast<size_t>(d.s.N * d.s.G)}, {1, 1, 1},
             ctx.in_buf(q.x), wq, wsum, a.bias, a.xs, a.xz, a.ws, a.ys, a.yz, ctx.out_buf(0), i32(d.C_g), i32(P),
             i32(d.M_g), i32(d.s.G), i32(blocks));
}

// tiled: the GPU-shaped implicit GEMM of the fp32 family on 8-bit data (kernels/tiled.cl).
bool qtiled_applies(const QConvDesc& d, const DeviceCaps& c) {
  return c.max_work_group_size >= 16 && d.s.w.rank() <= 3;
}
bool qtiled_preferred(const QConvDesc& d, const DeviceCaps& c) { return !c.cpu_shaped() && !(d.C_g == 1 && d.s.G > 1); }
bool qtiled_valid(const QConvDesc&, const DeviceCaps& c, const VariantParams& v) { return tiled_params_fit(c, v); }
VariantParams qtiled_defaults(const QConvDesc& d, const DeviceCaps& c) {
  return tiled_params_default(c, d.M_g >= 64 && product_of(d.s.w.out) >= 64);
}
void qtiled_run(BuildContext& ctx, const QConvDesc& d, const VariantParams& v) {
  const QSlots& q = slots_of(ctx);
  ProductArgs a = product_args(ctx, d.s.M);
  const int ts = v.at("ts"), rm = v.at("rm"), rn = v.at("rn"), tk = v.at("tk");
  int64_t max_w = 0;
  // Weights [G*M_g][K] (the pack kernel's layout with ocb = 1 for run-time weights).
  cl_mem wp = qconv_weights(ctx, d, static_cast<size_t>(d.s.M * d.K),
                            [&](int64_t m, int64_t k) { return static_cast<size_t>(m * d.K + k); }, 1, &max_w);
  const int flush = std::max(1, exact_chunk(ctx, 1, d.max_x, max_w) / tk);
  const int64_t P = d.out3[0] * d.out3[1] * d.out3[2];
  const size_t wx = static_cast<size_t>(ts / rn), wy = static_cast<size_t>(ts / rm);
  ctx.launch("quant", "qconv_tiled",
             "-DQTILED -DTS=" + std::to_string(ts) + " -DRM=" + std::to_string(rm) + " -DRN=" + std::to_string(rn) +
                 " -DTK=" + std::to_string(tk) + " -DFLUSH_TILES=" + std::to_string(flush) + qconv_window(d) + a.opts,
             {static_cast<size_t>((P + ts - 1) / ts) * wx, static_cast<size_t>((d.M_g + ts - 1) / ts) * wy,
              static_cast<size_t>(d.s.N * d.s.G)},
             {wx, wy, 1}, ctx.in_buf(q.x), wp, a.bias, a.xs, a.xz, a.ws, a.ys, a.yz, ctx.out_buf(0), i32(d.C_g),
             i32(d.in3[0]), i32(d.in3[1]), i32(d.in3[2]), i32(d.M_g), i32(d.out3[0]), i32(d.out3[1]), i32(d.out3[2]),
             i32(d.s.G), i32(d.pb3[0]), i32(d.pb3[1]), i32(d.pb3[2]));
}

std::string qdims3(const std::array<int64_t, 3>& a) {
  return std::to_string(a[0]) + "x" + std::to_string(a[1]) + "x" + std::to_string(a[2]);
}

// "n1 c64 m64 g1 in1x56x56 k1x3x3 s1x1x1 d1x1x1 p0x1x1 out1x56x56 x255"
std::string qconv_key(const QConvDesc& d) {
  return "n" + std::to_string(d.s.N) + " c" + std::to_string(d.s.C) + " m" + std::to_string(d.s.M) + " g" +
         std::to_string(d.s.G) + " in" + qdims3(d.in3) + " k" + qdims3(d.k3) + " s" + qdims3(d.st3) + " d" +
         qdims3(d.d3) + " p" + qdims3(d.pb3) + " out" + qdims3(d.out3) + " x" + std::to_string(d.max_x) +
         (d.const_w ? "" : " wrun");
}

const KernelFamily<QConvDesc>& qconv_family() {
  static const KernelFamily<QConvDesc> f{
      "qconv",
      {
          {"tiled", "GPU-shaped 8-bit implicit GEMM: TSxTS tiles per work-group in local memory, RMxRN per work-item",
           tiled_param_space(), qtiled_applies, qtiled_valid, qtiled_defaults, qtiled_run, qtiled_preferred},
          {"vnni_dw", "8-bit depthwise on x86 AVX-512 VNNI CPUs (PoCL): 16 pixels per vector, 4 taps of a kernel "
                      "row per vpdpbusd lane, input rows as bytes in a ring in private memory",
           {}, qdw_vnni_applies, nullptr, [](const QConvDesc&, const DeviceCaps&) { return VariantParams{}; },
           qdw_vnni_run},
          {"depthwise", "8-bit, one channel in and out per group, OWB-pixel vectors of float taps: input rows "
                        "converted once into a ring in private memory (ring=1, CPU-shaped default) or a padded "
                        "copy in global memory (ring=0)",
           {{"owb", {4, 8, 16}}, {"ring", {0, 1}}}, qdw_applies, qdw_valid, qdw_defaults, qdw_run},
          {"vnni_pw", "8-bit 1x1 on x86 AVX-512 VNNI CPUs (PoCL): OCB channels x PXV vectors of 16 pixels",
           {{"ocb", {4, 8, 16}}, {"pxv", {1, 2, 4}}, {"direct", {0, 1}}}, qvnni_pw_applies, qvnni_pw_valid, qvnni_pw_defaults,
           qvnni_pw_run},
          {"vnni_rows", "8-bit, stride 1 or 2 along rows, on x86 AVX-512 VNNI CPUs (PoCL): PWB channels x PXV vectors "
                        "of 16 pixels of RB output rows, 4 channels per vpdpbusd lane; direct=1: no packing launch "
                        "(each work-item gathers its input rows into private memory)",
           {{"pwb", {4, 8, 16}}, {"pxv", {1, 2, 3, 4}}, {"rb", {1, 2, 3, 4}}, {"direct", {0, 1}}}, qvnni_rows_applies, qvnni_rows_valid, qvnni_rows_defaults,
           qvnni_rows_run, qvnni_rows_preferred},
          {"vnni", "8-bit on x86 AVX-512 VNNI CPUs (PoCL): OCVx16 channels x OWB pixels, 4 channels per vpdpbusd lane",
           {{"owb", {4, 7, 8, 14, 16}}, {"ocv", {1, 2, 4}}}, qvnni_applies, qvnni_valid, qvnni_defaults, qvnni_run,
           qvnni_preferred},
          {"madd_pw", "8-bit 1x1 with 16-bit pairwise products (x86 vpmaddwd; CPU-shaped default without VNNI): "
                      "OCB channels x PXV vectors of 8 pixels, 2 input channels per 32-bit lane",
           {{"ocb", {2, 4, 6, 8}}, {"pxv", {1, 2, 3}}}, qmadd_pw_applies, qmadd_pw_valid, qmadd_pw_defaults,
           qmadd_pw_run, qmadd_pw_preferred},
          {"madd", "8-bit with 16-bit pairwise products (x86 vpmaddwd; CPU-shaped default without VNNI): "
                   "OCVx8 channels x OWB pixels, 2 input channels per 32-bit lane",
           {{"owb", {4, 6, 7, 8, 14}}, {"ocv", {1, 2}}}, qmadd_applies, qmadd_valid, qmadd_defaults, qmadd_run,
           qmadd_preferred},
          {"pointwise", "8-bit 1x1, stride 1, unpadded: OCB channels x PXB pixels, vectors along the pixels",
           {{"ocb", {4, 8, 16}}, {"pxb", {8, 16}}}, qpw_applies, qpw_valid, qpw_defaults, qpw_run},
          {"packed", "any 8-bit conv: OCB channels x OWB pixels of one output row per work-item",
           {{"ocb", {4, 8, 16}}, {"owb", {1, 2, 4, 8, 16}}}, qpacked_applies, qpacked_valid, qpacked_defaults,
           qpacked_run},
      },
      qconv_key};
  return f;
}

void qconv_build(BuildContext& ctx) {
  QConvDesc d = qconv_desc(ctx);
  if (ctx.caps().x86_vnni512 && d.const_w) {
    const QSlots& q = slots_of(ctx);
    d.w_fits_s8 = weights_fit_s8(ctx.in_data(q.w), has(ctx, q.wz) ? &ctx.in_data(q.wz) : nullptr, d.s.M, d.K);
  }
  for (int i = 0; i < 3; ++i)
    if ((d.k3[i] - 1) * d.d3[i] + 1 > 1024 || d.st3[i] > 1024)
      ctx.unsupported("a window spanning " + std::to_string((d.k3[i] - 1) * d.d3[i] + 1) + " elements with stride " +
                      std::to_string(d.st3[i]) + " is not supported (at most 1024 each)");
  run_variant(ctx, qconv_family(), d);
}

double qconv_ops(const OpContext& ctx) {
  const QSlots& q = slots_of(ctx);
  const Shape& w = ctx.in_shape(q.w);
  return 2.0 * static_cast<double>(numel(ctx.out_shape(0))) * static_cast<double>(numel(w) / w[0]);
}

// ---- QLinearMatMul / MatMulInteger ---------------------------------------------------------
MatmulShape qmatmul_shape(const OpContext& ctx) {
  const QSlots& q = slots_of(ctx);
  return matmul_shape(ctx, q.x, q.w);
}

void qmatmul_infer(OpContext& ctx) {
  const MatmulShape s = qmatmul_shape(ctx);
  const DType yt = check_product(ctx, s.N);
  ctx.set_out(0, yt, s.out);
}

// ---- QLinearMatMul / MatMulInteger: kernel variants -------------------------------------------
struct QMatMulDesc {
  MatmulShape s;
  int64_t count = 1, batch = 1;  // B matrices, output batches
  bool const_w = false, per_col = false;
  bool w_fits_s8 = false;  // constant B whose every w - w_zero fits a signed byte
  int64_t max_x = 255;
};

QMatMulDesc qmatmul_desc(const OpContext& ctx) {
  const QSlots& q = slots_of(ctx);
  QMatMulDesc d;
  d.s = qmatmul_shape(ctx);
  d.count = std::max<int64_t>(1, numel(d.s.b_batch));
  d.batch = std::max<int64_t>(1, numel(d.s.batch));
  d.const_w = ctx.is_const(q.w) && (!has(ctx, q.wz) || ctx.is_const(q.wz));
  d.per_col = has(ctx, q.wz) && numel(ctx.in_shape(q.wz)) > 1;
  d.max_x = max_input_magnitude(ctx, q.x, q.xz);
  return d;
}

// B as [count][K][NP] floats minus its zero points (NP = N rounded up to nb), packed here when
// constant, else by qmatmul_pack_b; *max_w: the largest magnitude (255 when unknown).
cl_mem packed_b(BuildContext& ctx, const QMatMulDesc& d, int nb, int64_t* np, int64_t* max_w) {
  const QSlots& q = slots_of(ctx);
  const int64_t NP = (d.s.N + nb - 1) / nb * nb;
  *np = NP;
  const size_t packed = static_cast<size_t>(d.count * d.s.K * NP);
  *max_w = 255;
  if (d.const_w) {
    const Tensor& b = ctx.in_data(q.w);
    std::vector<float> p(packed, 0.0f);
    *max_w = 0;
    for (int64_t j = 0; j < d.count; ++j)
      for (int64_t k = 0; k < d.s.K; ++k)
        for (int64_t n = 0; n < d.s.N; ++n) {
          const int64_t z = has(ctx, q.wz) ? host_get_i(ctx.in_data(q.wz), d.per_col ? n : 0) : 0;
          const int64_t v = host_get_i(b, (j * d.s.K + k) * d.s.N + n) - z;
          *max_w = std::max<int64_t>(*max_w, v < 0 ? -v : v);
          p[static_cast<size_t>((j * d.s.K + k) * NP + n)] = static_cast<float>(v);
        }
    return ctx.constant_floats(p);
  }
  const DType wt = ctx.in_type(q.w);
  cl_mem bp = ctx.scratch(DType::Float32, {static_cast<int64_t>(packed)}).mem;
  ctx.launch("quant", "qmatmul_pack_b", std::string("-DPACK_WEIGHTS -DWT=") + cl_type(wt) + (d.per_col ? " -DWZ_PER_CHANNEL" : ""),
             {static_cast<size_t>(NP), static_cast<size_t>(d.s.K), static_cast<size_t>(d.count)}, {}, ctx.in_buf(q.w),
             has(ctx, q.wz) ? ctx.in_buf(q.wz) : zero_operand(ctx, wt).mem, bp, i32(d.s.K), i32(d.s.N), i32(NP));
  return bp;
}

// Per output batch: A's element offset and B's matrix index.
cl_mem batch_offsets(BuildContext& ctx, const QMatMulDesc& d) {
  std::vector<int64_t> offs(static_cast<size_t>(2 * d.batch));
  for (int64_t i = 0; i < d.batch; ++i) {
    offs[2 * i] = (d.s.a_batch.empty() ? 0 : broadcast_index(d.s.batch, d.s.a_batch, i)) * d.s.M * d.s.K;
    offs[2 * i + 1] = d.s.b_batch.empty() ? 0 : broadcast_index(d.s.batch, d.s.b_batch, i);
  }
  return ctx.params(offs.data(), offs.size() * sizeof(int64_t));
}

// packed: NB columns x MB rows per work-item, vectors along the columns.
bool qmm_packed_applies(const QMatMulDesc&, const DeviceCaps&) { return true; }
VariantParams qmm_packed_defaults(const QMatMulDesc& d, const DeviceCaps&) {
  // Rows per work-item: 4, or all of them for a single-row (batch-1 classifier) product.
  return {{"nb", d.s.N >= 16 ? 16 : (d.s.N >= 8 ? 8 : 4)},
          {"mb", static_cast<int>(std::min<int64_t>(4, std::max<int64_t>(1, d.s.M)))}};
}
bool qmm_packed_valid(const QMatMulDesc&, const DeviceCaps&, const VariantParams& p) {
  const int nb = p.at("nb"), mb = p.at("mb");
  return (nb == 4 || nb == 8 || nb == 16) && mb >= 1 && mb <= 8;
}
void qmm_packed_run(BuildContext& ctx, const QMatMulDesc& d, const VariantParams& p) {
  const QSlots& q = slots_of(ctx);
  ProductArgs a = product_args(ctx, d.s.N);
  const int nb = p.at("nb"), mb = p.at("mb");
  int64_t NP = 0, max_w = 0;
  cl_mem bp = packed_b(ctx, d, nb, &NP, &max_w);
  const std::string opts = "-DNB=" + std::to_string(nb) + " -DMB=" + std::to_string(mb) + " -DCHUNK=" +
                           std::to_string(exact_chunk(ctx, 1, d.max_x, max_w)) + a.opts;
  ctx.launch("quant", "qmatmul", opts,
             {static_cast<size_t>(NP / nb), static_cast<size_t>((d.s.M + mb - 1) / mb), static_cast<size_t>(d.batch)},
             {1, 1, 1}, ctx.in_buf(q.x), bp, a.bias, a.xs, a.xz, a.ws, a.ys, a.yz, ctx.out_buf(0),
             batch_offsets(ctx, d), i32(d.s.M), i32(d.s.N), i32(d.s.K), i32(NP));
}

// vnni: x86 AVX-512 VNNI (kernels/quant.cl, qmatmul_vnni): constant B kept as signed bytes, 4
// rows per vpdpbusd lane, a quarter of the packed float B's memory and 4x its products per
// instruction (the 1280 x 1000 classifier of int8 mobilenet_v2: qmatmul 340 us).
bool qmm_vnni_applies(const QMatMulDesc& d, const DeviceCaps& c) {
  return c.x86_vnni512 && d.const_w && d.w_fits_s8 && (d.s.K + 3) / 4 * 4 <= kVnniMaxSteps;
}
VariantParams qmm_vnni_defaults(const QMatMulDesc& d, const DeviceCaps&) {
  return {{"nbv", d.s.N > 16 ? 2 : 1}, {"mb", static_cast<int>(std::min<int64_t>(4, std::max<int64_t>(1, d.s.M)))}};
}
bool qmm_vnni_valid(const QMatMulDesc&, const DeviceCaps&, const VariantParams& p) {
  const int nbv = p.at("nbv"), mb = p.at("mb");
  return (nbv == 1 || nbv == 2 || nbv == 4) && mb >= 1 && mb <= 8 && nbv * mb <= 28;
}
// Whether every b - b_zero of constant 8-bit B [count][K][N] (zero point per column or one) fits a
// signed byte.
bool qmm_b_fits_s8(BuildContext& ctx, const QMatMulDesc& d) {
  const QSlots& q = slots_of(ctx);
  const Tensor& b = ctx.in_data(q.w);
  const Tensor* zp = has(ctx, q.wz) ? &ctx.in_data(q.wz) : nullptr;
  const int64_t n_all = d.count * d.s.K * d.s.N;
  for (int64_t i = 0; i < n_all; ++i) {
    const int64_t v = host_get_i(b, i) - (zp ? host_get_i(*zp, d.per_col ? i % d.s.N : 0) : 0);
    if (v < -128 || v > 127) return false;
  }
  return true;
}
void qmm_vnni_run(BuildContext& ctx, const QMatMulDesc& d, const VariantParams& p) {
  const QSlots& q = slots_of(ctx);
  ProductArgs a = product_args(ctx, d.s.N);
  const int nbv = p.at("nbv"), mb = p.at("mb");
  const int64_t K = d.s.K, N = d.s.N, lanes = 16 * nbv, blocks = (N + lanes - 1) / lanes, K4 = (K + 3) / 4;
  const Tensor& b = ctx.in_data(q.w);
  const Tensor* zp = has(ctx, q.wz) ? &ctx.in_data(q.wz) : nullptr;
  std::vector<uint32_t> packed(static_cast<size_t>(d.count * blocks * K4 * lanes), 0u);
  std::vector<int32_t> sums(static_cast<size_t>(d.count * N), 0);
  for (int64_t j = 0; j < d.count; ++j)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) {
        const int64_t v = host_get_i(b, (j * K + k) * N + n) - (zp ? host_get_i(*zp, d.per_col ? n : 0) : 0);
        sums[static_cast<size_t>(j * N + n)] += static_cast<int32_t>(v);
        packed[static_cast<size_t>(((j * blocks + n / lanes) * K4 + k / 4) * lanes + n % lanes)] |=
            static_cast<uint32_t>(static_cast<uint8_t>(static_cast<int8_t>(v))) << (8 * (k % 4));
      }
  cl_mem bq = ctx.params(packed.data(), packed.size() * sizeof(uint32_t));
  cl_mem bsum = ctx.params(sums.data(), sums.size() * sizeof(int32_t));
  const std::string opts = "-DQMVNNI -DNBV=" + std::to_string(nbv) + " -DMB=" + std::to_string(mb) +
                           (ctx.in_type(q.x) == DType::Int8 ? " -DX_SIGNED" : "") + a.opts;
  ctx.launch("quant", "qmatmul_vnni", opts,
             {static_cast<size_t>(blocks), static_cast<size_t>((d.s.M + mb - 1) / mb), static_cast<size_t>(d.batch)},
             {1, 1, 1}, ctx.in_buf(q.x), bq, bsum, a.bias, a.xs, a.xz, a.ws, a.ys, a.yz, ctx.out_buf(0),
             batch_offsets(ctx, d), i32(d.s.M), i32(d.s.N), i32(d.s.K), i32(blocks));
}

// tiled: the GPU-shaped product on local-memory tiles (kernels/tiled.cl).
bool qmm_tiled_applies(const QMatMulDesc&, const DeviceCaps& c) { return c.max_work_group_size >= 16; }
bool qmm_tiled_preferred(const QMatMulDesc&, const DeviceCaps& c) { return !c.cpu_shaped(); }
bool qmm_tiled_valid(const QMatMulDesc&, const DeviceCaps& c, const VariantParams& v) { return tiled_params_fit(c, v); }
VariantParams qmm_tiled_defaults(const QMatMulDesc& d, const DeviceCaps& c) {
  return tiled_params_default(c, d.s.M >= 64 && d.s.N >= 64 && d.s.K >= 64);
}
void qmm_tiled_run(BuildContext& ctx, const QMatMulDesc& d, const VariantParams& v) {
  const QSlots& q = slots_of(ctx);
  ProductArgs a = product_args(ctx, d.s.N);
  const int ts = v.at("ts"), rm = v.at("rm"), rn = v.at("rn"), tk = v.at("tk");
  int64_t NP = 0, max_w = 0;
  cl_mem bp = packed_b(ctx, d, 1, &NP, &max_w);
  const int flush = std::max(1, exact_chunk(ctx, 1, d.max_x, max_w) / tk);
  const size_t wx = static_cast<size_t>(ts / rn), wy = static_cast<size_t>(ts / rm);
  ctx.launch("quant", "qmatmul_tiled",
             "-DQMTILED -DTS=" + std::to_string(ts) + " -DRM=" + std::to_string(rm) + " -DRN=" + std::to_string(rn) +
                 " -DTK=" + std::to_string(tk) + " -DFLUSH_TILES=" + std::to_string(flush) + a.opts,
             {static_cast<size_t>((d.s.N + ts - 1) / ts) * wx, static_cast<size_t>((d.s.M + ts - 1) / ts) * wy,
              static_cast<size_t>(d.batch)},
             {wx, wy, 1}, ctx.in_buf(q.x), bp, a.bias, a.xs, a.xz, a.ws, a.ys, a.yz, ctx.out_buf(0),
             batch_offsets(ctx, d), i32(d.s.M), i32(d.s.N), i32(d.s.K), i32(NP));
}

// "b1 m1 n1000 k512 x255"
std::string qmatmul_key(const QMatMulDesc& d) {
  return "b" + std::to_string(d.batch) + " m" + std::to_string(d.s.M) + " n" + std::to_string(d.s.N) + " k" +
         std::to_string(d.s.K) + " bc" + std::to_string(d.count) + " x" + std::to_string(d.max_x) +
         (d.const_w ? "" : " wrun");
}

const KernelFamily<QMatMulDesc>& qmatmul_family() {
  static const KernelFamily<QMatMulDesc> f{
      "qgemm",
      {
          {"vnni", "8-bit product on x86 AVX-512 VNNI CPUs (PoCL): NBVx16 columns x MB rows, 4 rows of B per vpdpbusd lane",
           {{"nbv", {1, 2, 4}}, {"mb", {1, 2, 4, 8}}}, qmm_vnni_applies, qmm_vnni_valid, qmm_vnni_defaults,
           qmm_vnni_run},
          {"tiled", "GPU-shaped 8-bit product: TSxTS tiles per work-group in local memory, RMxRN per work-item",
           tiled_param_space(), qmm_tiled_applies, qmm_tiled_valid, qmm_tiled_defaults, qmm_tiled_run,
           qmm_tiled_preferred},
          {"packed", "8-bit product: NB columns x MB rows per work-item, packed B",
           {{"nb", {4, 8, 16}}, {"mb", {1, 2, 4, 8}}}, qmm_packed_applies, qmm_packed_valid, qmm_packed_defaults,
           qmm_packed_run},
      },
      qmatmul_key};
  return f;
}

void qmatmul_build(BuildContext& ctx) {
  QMatMulDesc d = qmatmul_desc(ctx);
  if (ctx.caps().x86_vnni512 && d.const_w) d.w_fits_s8 = qmm_b_fits_s8(ctx, d);
  run_variant(ctx, qmatmul_family(), d);
}

double qmatmul_ops(const OpContext& ctx) {
  const MatmulShape s = qmatmul_shape(ctx);
  return 2.0 * static_cast<double>(numel(ctx.out_shape(0))) * static_cast<double>(s.K);
}

// ---- com.microsoft QLinearAdd / QLinearMul / QLinearSigmoid / QLinearLeakyRelu /
// QLinearGlobalAveragePool (ONNX Runtime's QOperator format; fuse_qdq also makes them) -------
// Their scales and zero points must be constants: they are compiled into the kernel.
struct ConstQ {
  double scale = 1;
  int zero = 0;
};

ConstQ const_q(const OpContext& ctx, int scale_slot, int zero_slot, DType type, const char* what) {
  check_scale(ctx, scale_slot, 0, what);
  check_zero_point(ctx, zero_slot, type, 1, what);
  if (!ctx.is_const(scale_slot) || (ctx.has_input(zero_slot) && !ctx.is_const(zero_slot)))
    ctx.unsupported(std::string(what) + ": scales and zero points computed at run time are not supported");
  ConstQ q;
  q.scale = host_get_f(ctx.in_data(scale_slot), 0);
  q.zero = ctx.has_input(zero_slot) ? static_cast<int>(host_get_i(ctx.in_data(zero_slot), 0)) : 0;
  return q;
}

std::string int_define(const char* name, int v) { return std::string(" -D") + name + "=" + std::to_string(v); }
std::string float_define(const char* name, double v) {
  return std::string(" -D") + name + "=" + float_literal(static_cast<float>(v));
}

// The fused activation of a quantized elementwise node, applied to the value divided by y_scale
// (only activations that commute with a positive scale are fused there).
std::string scaled_activation(const OpContext& ctx, double y_scale) {
  const Epilogue& e = ctx.node().epilogue;
  if (e.residual >= 0) ctx.unsupported("a fused residual add is not supported by the integer kernels");
  if (!e.act) return "";
  const std::string name = e.act->name;
  if (name != "Relu" && name != "LeakyRelu" && name != "Clip")
    ctx.unsupported("activation " + name + " cannot be fused into a quantized elementwise op");
  const double k = name == "Clip" ? 1.0 / y_scale : 1.0;
  return std::string(" -DQACT=ACT_") + e.act->kernel + float_define("ALPHA", e.alpha * k) + float_define("BETA", e.beta * k);
}

void qbinary_infer(OpContext& ctx) {
  require_quantized(ctx, 0);
  require_quantized(ctx, 3);
  const DType t = ctx.in_type(0);
  if (ctx.in_type(3) != t) ctx.fail("A and B must have the same type");
  const_q(ctx, 1, 2, t, "A scale");
  const_q(ctx, 4, 5, t, "B scale");
  const_q(ctx, 6, 7, t, "C scale");
  Shape out;
  if (!broadcast_shapes(ctx.in_shape(0), ctx.in_shape(3), &out))
    ctx.fail("shapes " + shape_to_string(ctx.in_shape(0)) + " and " + shape_to_string(ctx.in_shape(3)) +
             " do not broadcast");
  ctx.set_out(0, t, out);
}

void qbinary_build(BuildContext& ctx) {
  const DType t = ctx.in_type(0);
  const ConstQ a = const_q(ctx, 1, 2, t, "A scale"), b = const_q(ctx, 4, 5, t, "B scale"),
               y = const_q(ctx, 6, 7, t, "C scale");
  const bool add = ctx.node().op_type == "QLinearAdd";
  std::string d = range_defines(t) + int_define("QA_Z", a.zero) + int_define("QB_Z", b.zero) + int_define("QY_Z", y.zero);
  if (add) d += float_define("QA_M", a.scale / y.scale) + float_define("QB_M", b.scale / y.scale);
  else d += float_define("QA_M", a.scale * b.scale / y.scale);
  d += scaled_activation(ctx, y.scale);
  const Operand out = ctx.output(0);
  if (ctx.in_shape(0) == out.shape && ctx.in_shape(3) == out.shape) {
    // No broadcast: 16 outputs per work-item as vectors (kernels/elementwise.cl).
    const size_t items = static_cast<size_t>((out.numel() + 15) / 16), local = ctx.caps().linear_local();
    if (items == 0) return;
    ctx.launch("elementwise", "ew_qbinary_vec",
               std::string("-DOP_") + (add ? "QADD" : "QMUL") + type_defines({{"TA", t}, {"TB", t}, {"TO", t}}) +
                   " -DTO_INT" + d,
               {(items + local - 1) / local * local}, {local}, ctx.in_buf(0), ctx.in_buf(3), out.mem, out.numel());
    return;
  }
  launch_elementwise(ctx, add ? "QADD" : "QMUL", {ctx.input(0), ctx.input(3)}, out, d);
}

void qunary_infer(OpContext& ctx) {
  require_quantized(ctx, 0);
  const DType t = ctx.in_type(0);
  const_q(ctx, 1, 2, t, "X scale");
  const_q(ctx, 3, 4, t, "Y scale");
  ctx.set_out(0, t, ctx.in_shape(0));
}

void qunary_build(BuildContext& ctx) {
  const DType t = ctx.in_type(0);
  const ConstQ x = const_q(ctx, 1, 2, t, "X scale"), y = const_q(ctx, 3, 4, t, "Y scale");
  const bool leaky = ctx.node().op_type == "QLinearLeakyRelu";
  const ActivationDef* act = activation_for_op(leaky ? "LeakyRelu" : "Sigmoid");
  std::string d = range_defines(t) + int_define("QA_Z", x.zero) + int_define("QY_Z", y.zero) +
                  float_define("QA_S", x.scale) + float_define("QY_S", y.scale) + " -DACTIVATION=ACT_" + act->kernel +
                  float_define("ALPHA", leaky ? ctx.node().attr_float("alpha", 0.01f) : 0.0) + float_define("BETA", 0);
  launch_elementwise(ctx, "QACTIVATION", {ctx.input(0)}, ctx.output(0), d);
}

void qgap_infer(OpContext& ctx) {
  require_quantized(ctx, 0);
  const DType t = ctx.in_type(0);
  if (ctx.node().attr_int("channels_last", 0) != 0) ctx.unsupported("channels_last=1 is not supported");
  const Shape& x = ctx.in_shape(0);
  if (x.size() < 3) ctx.fail("input X must have rank >= 3 (N, C, spatial...), got " + shape_to_string(x));
  const_q(ctx, 1, 2, t, "x scale");
  const_q(ctx, 3, 4, t, "y scale");
  Shape out(x.size(), 1);
  out[0] = x[0];
  out[1] = x[1];
  ctx.set_out(0, t, out);
}

void qgap_build(BuildContext& ctx) {
  const DType t = ctx.in_type(0);
  const Shape& x = ctx.in_shape(0);
  const int64_t nc = x[0] * x[1], hw = numel(x) / std::max<int64_t>(1, nc);
  ctx.launch("quant", "qgap", std::string("-DQGAP -DXT=") + cl_type(t) + " -DYT=" + cl_type(t) + range_defines(t),
             {static_cast<size_t>(nc)}, {}, ctx.in_buf(0), ctx.in_buf(1),
             ctx.has_input(2) ? ctx.in_buf(2) : zero_operand(ctx, t).mem, ctx.in_buf(3),
             ctx.has_input(4) ? ctx.in_buf(4) : zero_operand(ctx, t).mem, ctx.out_buf(0), i32(nc), i32(hw));
}

// QLinearConcat: inputs Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per operand.
int64_t qconcat_axis(const OpContext& ctx) {
  const int64_t r = static_cast<int64_t>(ctx.in_shape(2).size());
  if (r == 0) ctx.fail("cannot concatenate scalars");
  if (!ctx.node().has("axis")) ctx.fail("attribute 'axis' is required");
  return ctx.axis(ctx.node().attr_int("axis", 1), r);
}

void qconcat_infer(OpContext& ctx) {
  if (ctx.num_inputs() < 5 || (ctx.num_inputs() - 2) % 3 != 0)
    ctx.fail("expects Y_scale, Y_zero_point and (X, X_scale, X_zero_point) per operand, got " +
             std::to_string(ctx.num_inputs()) + " inputs");
  if (!ctx.has_input(1)) ctx.fail("Y_zero_point is required");
  const DType t = ctx.in_type(1);
  if (!is_quantized_type(t)) ctx.unsupported("output type " + std::string(dtype_name(t)) + " is not supported");
  const_q(ctx, 0, 1, t, "Y scale");
  const int64_t axis = qconcat_axis(ctx);
  Shape out = ctx.in_shape(2);
  out[static_cast<size_t>(axis)] = 0;
  for (int k = 2; k < ctx.num_inputs(); k += 3) {
    if (ctx.in_type(k) != t) ctx.fail(slot_name(ctx, k) + " is not of the output's type " + dtype_name(t));
    const_q(ctx, k + 1, k + 2, t, "X scale");
    const Shape& s = ctx.in_shape(k);
    bool ok = s.size() == out.size();
    for (size_t d = 0; ok && d < s.size(); ++d) ok = d == static_cast<size_t>(axis) || s[d] == out[d];
    if (!ok) ctx.fail(slot_name(ctx, k) + " " + shape_to_string(s) + " does not match the others outside axis " +
                      std::to_string(axis));
    out[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
  }
  ctx.set_out(0, t, out);
}

// Operand k (a data slot) has the output's scale and zero point: its values are copied unchanged.
bool qconcat_copied(const OpContext& ctx, int k) {
  const DType t = ctx.in_type(1);
  const ConstQ y = const_q(ctx, 0, 1, t, "Y scale"), x = const_q(ctx, k + 1, k + 2, t, "X scale");
  return static_cast<float>(x.scale) == static_cast<float>(y.scale) && x.zero == y.zero;
}

// The buffer planner's Concat elimination (as for Concat): an operand copied unchanged is one
// contiguous block of the output when every dim before the axis is 1, so its producer can write
// it in place (int8 squeezenet1_1: one copy launch fewer per fire module).
int64_t qconcat_input_offset(const OpContext& ctx, int k) {
  if (k < 2 || (k - 2) % 3 != 0) return -1;
  try {
    if (!qconcat_copied(ctx, k)) return -1;
    const Shape& os = ctx.out_shape(0);
    const int64_t axis = qconcat_axis(ctx);
    for (int64_t d = 0; d < axis; ++d)
      if (os[static_cast<size_t>(d)] != 1) return -1;
    int64_t off = 0;
    for (int j = 2; j < k; j += 3) off += numel(ctx.in_shape(j));
    return off;
  } catch (const std::exception&) {
    return -1;  // the node's own checks report it
  }
}

void qconcat_build(BuildContext& ctx) {
  const DType t = ctx.in_type(1);
  const ConstQ y = const_q(ctx, 0, 1, t, "Y scale");
  const int64_t axis = qconcat_axis(ctx);
  const Shape& os = ctx.out_shape(0);
  const auto ost = strides_of(os);
  std::vector<CopyView> copies;
  int64_t at = 0;
  for (int k = 2; k < ctx.num_inputs(); k += 3) {
    const Shape& s = ctx.in_shape(k);
    const ConstQ x = const_q(ctx, k + 1, k + 2, t, "X scale");
    const int64_t offset = at * ost[static_cast<size_t>(axis)];
    at += s[static_cast<size_t>(axis)];
    if (qconcat_copied(ctx, k)) {
      if (ctx.input_in_place(k)) continue;  // its producer wrote it into the output
      CopyView v;
      v.input = k;
      v.dims = s;
      v.in_strides = strides_of(s);
      v.out_strides = ost;
      v.out_offset = offset;
      copies.push_back(v);
      continue;
    }
    const int64_t n = numel(s), in_block = s[static_cast<size_t>(axis)] * ost[static_cast<size_t>(axis)];
    if (n == 0) continue;
    const int64_t out_block = os[static_cast<size_t>(axis)] * ost[static_cast<size_t>(axis)];
    const size_t local = ctx.caps().linear_local();
    ctx.launch("quant", "qrequant_into", std::string("-DQREQUANT -DXT=") + cl_type(t) + " -DYT=" + cl_type(t) + range_defines(t),
               {round_up(static_cast<size_t>((in_block + 15) / 16), local), static_cast<size_t>(n / in_block)},
               {local, 1}, ctx.in_buf(k), ctx.out_buf(0), n, in_block,
               out_block, offset, static_cast<float>(x.scale), static_cast<int32_t>(x.zero),
               static_cast<float>(y.scale), static_cast<int32_t>(y.zero));
  }
  run_copies_device(ctx, copies);
}

}  // namespace

std::vector<VariantInfo> qconv_variant_info() { return family_info(qconv_family()); }
std::vector<VariantInfo> qgemm_variant_info() { return family_info(qmatmul_family()); }

void add_quant_ops(std::vector<OpDef>& t) {
  // 19: float8 types (refused); 21: blocked quantization (DequantizeLinear of constants) and
  // QuantizeLinear's output_dtype; 23: QuantizeLinear's precision, DequantizeLinear's output_dtype.
  for (int v : {10, 13, 19, 21, 23}) {
    t.push_back(OpDef("QuantizeLinear", v, quantize_infer).host(quantize_host).build(quantize_build));
    // Not folded before the optimizer: the fuse_qdq pass wants the quantized weights (it folds
    // what it does not fuse).
    t.push_back(OpDef("DequantizeLinear", v, dequantize_infer).host(dequantize_host).build(dequantize_build).fold_late());
  }
  t.push_back(OpDef("DynamicQuantizeLinear", 11, dynq_infer).build(dynq_build));
  t.push_back(OpDef("QLinearConv", 10, qconv_infer).build(qconv_build).epilogue().flops(qconv_ops));
  t.push_back(OpDef("ConvInteger", 10, qconv_infer).build(qconv_build).flops(qconv_ops));
  t.push_back(OpDef("QLinearMatMul", 10, qmatmul_infer).build(qmatmul_build).epilogue().flops(qmatmul_ops));
  t.push_back(OpDef("MatMulInteger", 10, qmatmul_infer).build(qmatmul_build).flops(qmatmul_ops));
  const std::string ms = "com.microsoft";
  t.push_back(OpDef("QLinearAdd", 1, qbinary_infer, ms).build(qbinary_build).epilogue());
  t.push_back(OpDef("QLinearMul", 1, qbinary_infer, ms).build(qbinary_build).epilogue());
  t.push_back(OpDef("QLinearSigmoid", 1, qunary_infer, ms).build(qunary_build));
  t.push_back(OpDef("QLinearLeakyRelu", 1, qunary_infer, ms).build(qunary_build));
  t.push_back(OpDef("QLinearGlobalAveragePool", 1, qgap_infer, ms).build(qgap_build));
  t.push_back(OpDef("QLinearConcat", 1, qconcat_infer, ms).build(qconcat_build).input_slices(qconcat_input_offset));
}

}  // namespace oi
