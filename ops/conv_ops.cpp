// Conv and ConvTranspose (1-D, 2-D and 3-D, float32). Conv runs as an implicit GEMM over weights
// packed at plan time (kernels/conv.cl), with dedicated kernels for 1x1 and depthwise convs;
// ConvTranspose as a GEMM into columns plus a gather (kernels/gemm.cl, kernels/conv_transpose.cl).
#include "ops/conv_ops.hpp"

#include <algorithm>
#include <climits>
#include <string>

#include "ops/copy_view.hpp"
#include "ops/elementwise.hpp"
#include "ops/epilogue.hpp"
#include "ops/gemm_ops.hpp"
#include "ops/variants.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

using ocl_infer::shape_to_string;

namespace {

std::string list(const std::vector<int64_t>& v) {
  return shape_to_string(v);
}

int64_t floor_div(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}
int64_t ceil_div(int64_t a, int64_t b) {
  return -floor_div(-a, b);
}

std::vector<int64_t> spatial(const Shape& s) {
  return {s.begin() + 2, s.end()};
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

}  // namespace

int64_t depthwise_ring_slots(int64_t kh, int64_t dh, int64_t sh) {
  int64_t slots = 4;
  while (slots < (kh - 1) * dh + 1 + 2 * sh) slots *= 2;
  return slots;
}

DepthwiseSplit depthwise_split(int64_t planes, int64_t plane_out) {
  return {std::clamp<int64_t>(std::min<int64_t>(2048 / std::max<int64_t>(plane_out, 1), planes / 32), 1, 8),
          planes < 16 && plane_out >= 4096 ? (16 + planes - 1) / planes : 1};
}

std::array<int64_t, 3> to3(const std::vector<int64_t>& v, int64_t fill) {
  std::array<int64_t, 3> r{fill, fill, fill};
  for (size_t i = 0; i < v.size() && i < 3; ++i) r[3 - v.size() + i] = v[i];
  return r;
}

Window window_geometry(const OpContext& ctx, const std::vector<int64_t>& in_spatial,
                       const std::vector<int64_t>& kernel, bool has_dilations, bool ceil_mode) {
  const Node& n = ctx.node();
  const size_t r = in_spatial.size();
  Window w;
  w.in = in_spatial;
  w.k = n.attr_ints("kernel_shape", kernel);
  if (w.k.empty()) ctx.fail("attribute kernel_shape is required");
  if (w.k.size() != r)
    ctx.fail("kernel_shape " + list(w.k) + " does not match " + std::to_string(r) +
             " spatial dims of the input");
  if (!kernel.empty() && w.k != kernel)
    ctx.fail("kernel_shape " + list(w.k) + " differs from the weights' " + list(kernel));
  w.s = n.attr_ints("strides", std::vector<int64_t>(r, 1));
  w.d = has_dilations ? n.attr_ints("dilations", std::vector<int64_t>(r, 1))
                      : std::vector<int64_t>(r, 1);
  std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(2 * r, 0));
  if (w.s.size() != r)
    ctx.fail("strides " + list(w.s) + " must have " + std::to_string(r) + " values");
  if (w.d.size() != r)
    ctx.fail("dilations " + list(w.d) + " must have " + std::to_string(r) + " values");
  if (pads.size() != 2 * r)
    ctx.fail("pads " + list(pads) + " must have " + std::to_string(2 * r) + " values");
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  // Window arithmetic below stays far from int64 overflow, and kernels index in 32 bits.
  constexpr int64_t kMax = int64_t{1} << 31;
  auto in_range = [&](const std::vector<int64_t>& v, const char* attr) {
    for (int64_t x : v)
      if (x >= kMax || x <= -kMax) ctx.fail(std::string(attr) + " " + list(v) + " is out of range (|value| < 2^31)");
  };
  in_range(w.k, "kernel_shape");
  in_range(w.s, "strides");
  in_range(w.d, "dilations");
  in_range(pads, "pads");
  for (size_t i = 0; i < r; ++i) {
    if (w.k[i] < 1) ctx.fail("kernel_shape " + list(w.k) + " must be positive");
    if (w.s[i] < 1) ctx.fail("strides " + list(w.s) + " must be positive");
    if (w.d[i] < 1) ctx.fail("dilations " + list(w.d) + " must be positive");
    if (pads[i] < 0 || pads[i + r] < 0) ctx.fail("pads " + list(pads) + " must not be negative");
  }
  w.pb.resize(r);
  w.pe.resize(r);
  w.out.resize(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t ek = (w.k[i] - 1) * w.d[i] + 1, in = w.in[i], s = w.s[i];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      w.out[i] = ceil_div(in, s);
      const int64_t total = std::max<int64_t>(0, (w.out[i] - 1) * s + ek - in);
      w.pb[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pe[i] = total - w.pb[i];
      continue;
    }
    if (auto_pad == "VALID") {
      w.pb[i] = w.pe[i] = 0;
    } else if (auto_pad == "NOTSET") {
      w.pb[i] = pads[i];
      w.pe[i] = pads[i + r];
    } else {
      ctx.fail("auto_pad '" + auto_pad + "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
    }
    const int64_t span = in + w.pb[i] + w.pe[i] - ek;
    if (span < 0)
      ctx.fail("the window (kernel_shape " + list(w.k) + ", dilations " + list(w.d) +
               ") is larger than the padded input " + list(w.in));
    w.out[i] = (ceil_mode ? ceil_div(span, s) : span / s) + 1;
    // A last window that would start inside the end padding is dropped (as PyTorch does).
    if (ceil_mode && (w.out[i] - 1) * s >= in + w.pb[i]) --w.out[i];
  }
  return w;
}

ConvShape conv_shape(const OpContext& ctx, int x_slot, int w_slot, int bias_slot) {
  const Shape &x = ctx.in_shape(x_slot), &wt = ctx.in_shape(w_slot);
  if (x.size() < 3) ctx.fail("input X must have rank >= 3 (N, C, spatial...), got " + list(x));
  if (wt.size() != x.size())
    ctx.fail("weights " + list(wt) + " must have the rank of the input " + list(x));
  if (x.size() > 5) ctx.unsupported("convolutions over more than 3 spatial dims are not supported");
  ConvShape s;
  s.N = x[0];
  s.C = x[1];
  s.M = wt[0];
  s.G = ctx.node().attr_int("group", 1);
  if (s.G < 1 || s.C % s.G != 0 || s.M % s.G != 0)
    ctx.fail("group " + std::to_string(s.G) + " must divide the input channels (" +
             std::to_string(s.C) + ") and the output channels (" + std::to_string(s.M) + ")");
  if (wt[1] * s.G != s.C)
    ctx.fail("weights " + list(wt) + " expect " + std::to_string(wt[1] * s.G) +
             " input channels, X " + list(x) + " has " + std::to_string(s.C));
  if (bias_slot >= 0 && ctx.has_input(bias_slot) && ctx.in_shape(bias_slot) != Shape{s.M})
    ctx.fail("bias " + list(ctx.in_shape(bias_slot)) + " must have shape [" + std::to_string(s.M) + "]");
  s.w = window_geometry(ctx, spatial(x), spatial(wt), true, false);
  return s;
}

namespace {

// Float32 and float16 tensors (float16: stored as half, computed in float); all the same type.
void require_float(const OpContext& ctx, int i) {
  const DType t = ctx.in_type(i);
  if (t != DType::Float32 && t != DType::Float16)
    ctx.unsupported(std::string("only float32 and float16 are supported, input ") + std::to_string(i) + " is " +
                    ocl_infer::dtype_name(t));
  if (t != ctx.in_type(0)) ctx.fail("input " + std::to_string(i) + " has another type than input 0");
}

// ---- Conv ----------------------------------------------------------------------------------
void conv_infer(OpContext& ctx) {
  // Input 3 is ocl-infer's own: the per-channel scale of a Mul that the optimizer folds in after
  // shape inference (runtime/compiler/passes/fuse_channel_scale.cpp), never a model's.
  if (ctx.num_inputs() > 3) ctx.fail("Conv takes at most 3 inputs (X, W, B), got " + std::to_string(ctx.num_inputs()));
  // Output 1 is ocl-infer's own too (fuse_plane_mean, after shape inference).
  if (ctx.num_outputs() > 1) ctx.fail("Conv has one output, got " + std::to_string(ctx.num_outputs()));
  for (int i = 0; i < 3; ++i)
    if (ctx.has_input(i)) require_float(ctx, i);
  ConvShape s = conv_shape(ctx);
  Shape out{s.N, s.M};
  out.insert(out.end(), s.w.out.begin(), s.w.out.end());
  ctx.set_out(0, ctx.in_type(0), out);
}

std::string window_defines(const std::array<int64_t, 3>& k, const std::array<int64_t, 3>& s,
                           const std::array<int64_t, 3>& d) {
  std::string o;
  const char* axes[] = {"D", "H", "W"};
  for (int i = 0; i < 3; ++i)
    o += std::string(" -DK") + axes[i] + "=" + std::to_string(k[i]) + " -DS" + axes[i] + "=" +
         std::to_string(s[i]) + " -DD" + axes[i] + "=" + std::to_string(d[i]);
  return o;
}

// W [G*M_g][C_g][k...] packed as [G][oc_blocks][C_g*k...][ocb], zero past M_g.
HostFloats pack_conv_weights(const Tensor& wt, int64_t G, int64_t M_g, int64_t K, int ocb) {
  const int64_t blocks = (M_g + ocb - 1) / ocb;
  HostFloats p(static_cast<size_t>(G * blocks * K * ocb));
  const float* w = wt.data<float>();
  // Written in order, read as ocb row streams: the output-channel-major order wrote every value
  // ocb floats from the last (resnet18's weights took 40 ms of a 0.4 s warm start to pack).
  float* out = p.data();
  for (int64_t g = 0; g < G; ++g)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t rows = std::min<int64_t>(ocb, M_g - b * ocb);
      const float* src = w + (g * M_g + b * ocb) * K;
      for (int64_t k = 0; k < K; ++k, out += ocb) {
        for (int64_t j = 0; j < rows; ++j) out[j] = src[j * K + k];
        for (int64_t j = rows; j < ocb; ++j) out[j] = 0.0f;
      }
    }
  return p;
}

// ---- Conv: kernel variants ----------------------------------------------------------------
// Everything a conv variant needs to know about one node.
struct ConvDesc {
  ConvShape s;
  int64_t C_g = 0, M_g = 0;
  std::array<int64_t, 3> in3{}, out3{}, k3{}, st3{}, d3{}, pb3{};
  bool pointwise = false;  // 1x1 taps, stride 1, no padding (any rank): a plain GEMM over pixels
  bool has_bias = false;
  bool const_weights = false;  // the weights are a constant (transformed at plan time)
  // Input 3, a fused Mul's per-channel scale of X ([N or 1, C, 1...] or [C, 1...]): X's channel c
  // of image n is read times scale[n * scale_n + c].
  bool scaled = false;
  int64_t scale_n = 0;
  // Output 1, the mean of every output plane ([N, M, 1...]): a GlobalAveragePool of output 0 that
  // the optimizer fused in (runtime/compiler/passes/fuse_plane_mean.cpp).
  bool plane_mean = false;
  // Set by a variant whose kernel applied the epilogue's post-activation affine (pointwise);
  // conv_build applies it otherwise.
  mutable bool post_applied = false;
};

ConvDesc conv_desc(const OpContext& ctx) {
  ConvDesc d;
  d.s = conv_shape(ctx);
  const Window& w = d.s.w;
  d.C_g = d.s.C / d.s.G;
  d.M_g = d.s.M / d.s.G;
  d.in3 = to3(w.in, 1);
  d.out3 = to3(w.out, 1);
  d.k3 = to3(w.k, 1);
  d.st3 = to3(w.s, 1);
  d.d3 = to3(w.d, 1);
  d.pb3 = to3(w.pb, 0);
  d.pointwise = product(w.k) == 1 && product(w.s) == 1 &&
                std::all_of(w.pb.begin(), w.pb.end(), [](int64_t p) { return p == 0; }) &&
                std::all_of(w.pe.begin(), w.pe.end(), [](int64_t p) { return p == 0; });
  d.has_bias = ctx.has_input(2);
  d.const_weights = ctx.is_const(1);
  if (ctx.num_inputs() > 3 && ctx.has_input(3)) {
    const Shape& sc = ctx.in_shape(3);
    d.scaled = true;
    // [N, C, 1...] with N != 1 (an empty batch included): one scale per image; otherwise one
    // for all.
    d.scale_n = sc.size() == ctx.in_shape(0).size() && sc[0] != 1 ? d.s.C : 0;
    if (numel(sc) != (d.scale_n ? d.s.N : 1) * d.s.C)
      ctx.fail("the fused channel scale " + list(sc) + " does not match X " + list(ctx.in_shape(0)));
  }
  d.plane_mean = ctx.num_outputs() > 1 && ctx.has_output(1);
  return d;
}

// The operands and build options every variant shares.
// With a run-time epilogue (conv_f32_packed, conv_f32_pointwise: kernels/epilogue.cl) Relu/Clip
// are the bounds lo/hi and an absent residual is a null pointer, so that one program serves
// the convs of a network that differ only in those (resnet18: 11 conv programs -> 7).
struct ConvArgs {
  cl_mem x, bias, residual, y;
  std::string tail;  // bias and epilogue options
  float lo = 0, hi = 0;  // run-time epilogue bounds
  // The fused channel scale (a dummy buffer when there is none): kernels that apply it take
  // scale_opts (-DIN_SCALE and its storage type).
  cl_mem scale;
  int32_t scale_n = 0;
  std::string scale_opts;
};

int32_t i32(int64_t v) { return static_cast<int32_t>(v); }

// The packed and pointwise kernels' software prefetch (kernels/conv.cl, CPU_PREFETCH) where the
// device takes it: the input rows of the reduction step 4 steps ahead. 4 measured best of 2, 4, 8
// and 16 (1x1 convs over 48x48 planes, one core: 7.31-7.43 ms for 2-8 against 8.07-8.44 without;
// the same loop in C: 163 / 161 / 157 GFLOP/s for 4 / 8 / 16; 2-core Intel Xeon, AVX-512).
std::string prefetch_option(const DeviceCaps& c) { return c.cpu_prefetch ? " -DCPU_PREFETCH=4" : ""; }

ConvArgs conv_args(BuildContext& ctx, const ConvDesc& d, bool runtime_epilogue = false) {
  ConvArgs a;
  const Epilogue& epi = ctx.node().epilogue;
  a.x = ctx.in_buf(0);
  a.y = ctx.out_buf(0);
  a.bias = d.has_bias ? ctx.in_buf(2) : a.x;  // any valid buffer stands in for an absent one
  a.residual = epi.residual >= 0 ? ctx.value(epi.residual).mem : runtime_epilogue ? nullptr : a.x;
  a.tail = std::string(d.has_bias ? " -DHAS_BIAS" : "") +
           (runtime_epilogue ? epilogue_defines_runtime(epi, &a.lo, &a.hi) : epilogue_defines(epi)) +
           BuildContext::storage_option("XS", ctx.input(0).dtype) +
           BuildContext::storage_option("WS", ctx.input(1).dtype) +
           (d.has_bias ? BuildContext::storage_option("BS", ctx.input(2).dtype) : "") +
           (epi.residual >= 0 ? BuildContext::storage_option("RS", ctx.value(epi.residual).dtype) : "") +
           BuildContext::storage_option("YS", ctx.output(0).dtype);
  a.scale = d.scaled ? ctx.in_buf(3) : a.x;
  a.scale_n = static_cast<int32_t>(d.scale_n);
  if (d.scaled) a.scale_opts = " -DIN_SCALE" + BuildContext::storage_option("SS", ctx.input(3).dtype);
  return a;
}

// X with its column padding made real, in the plan's workspace: rows of `padded` values, the row's
// values from column d.pb3[2] (pad.cl's pad_rows; with a fused channel scale, conv.cl's
// conv_pad_rows_scaled, which also multiplies the values by it). The kernels that read the copy
// then need no column checks (and no scale). With `split` each row is stored as its even columns,
// then its odd ones (for pixvec's stride-2 reads).
cl_mem padded_input(BuildContext& ctx, const ConvDesc& d, const ConvArgs& a, int64_t padded, bool split) {
  const int64_t rows = d.s.N * d.s.C * d.in3[0] * d.in3[1];
  if (rows * padded > INT_MAX) ctx.unsupported("a padded conv input beyond 2^31 elements is not supported");
  const Operand xp = ctx.workspace(ctx.input(0).dtype, {rows, padded});
  const int64_t per_item = std::max<int64_t>(1, rows / 256);
  const size_t items = static_cast<size_t>((rows + per_item - 1) / per_item);
  if (d.scaled)
    ctx.launch("conv", "conv_pad_rows_scaled",
               "-DPAD_ROWS_SCALED" + BuildContext::storage_option("XS", ctx.input(0).dtype) + a.scale_opts, {items},
               {1}, a.x, xp.mem, a.scale, i32(rows), i32(d.in3[2]), i32(padded), i32(d.pb3[2]), i32(per_item),
               i32(d.in3[0] * d.in3[1]), i32(d.s.C), a.scale_n, i32(split ? 1 : 0));
  else
    ctx.launch("pad", "pad_rows", word_option(ctx, ctx.input(0).dtype), {items}, {1}, a.x, xp.mem, i32(rows),
               i32(d.in3[2]), i32(padded), i32(d.pb3[2]), i32(per_item), i32(split ? 1 : 0));
  return xp.mem;
}


// Output 1 of a conv with a fused GlobalAveragePool, as a launch of its own after the conv: the
// variants whose work-items do not own whole output planes (all but `depthwise` with one band).
void plane_mean_launch(BuildContext& ctx, const ConvDesc& d) {
  const int64_t plane = d.out3[0] * d.out3[1] * d.out3[2], planes = d.s.N * d.s.M;
  ctx.launch("conv", "conv_plane_mean",
             "-DPLANE_MEAN_ONLY" + BuildContext::storage_option("YS", ctx.output(0).dtype) +
                 BuildContext::storage_option("MS", ctx.output(1).dtype),
             {static_cast<size_t>(planes)}, {1}, ctx.out_buf(0), ctx.out_buf(1), plane, planes);
}

// A variant's run that leaves a fused GlobalAveragePool to plane_mean_launch.
template <void (*Run)(BuildContext&, const ConvDesc&, const VariantParams&)>
void then_plane_mean(BuildContext& ctx, const ConvDesc& d, const VariantParams& p) {
  Run(ctx, d, p);
  if (d.plane_mean) plane_mean_launch(ctx, d);
}

// W [G*M_g][C_g][k...] packed as [G][oc_blocks][C_g*k...][ocb], zero past M_g: as a constant at
// plan time, or by a kernel before every run when the weights are a model input.
// Constants are packed in the weights' storage type (-DPS=F16 then).
cl_mem packed_weights(BuildContext& ctx, const ConvDesc& d, int ocb, std::string* opts) {
  const int64_t blocks = (d.M_g + ocb - 1) / ocb, K = d.C_g * d.k3[0] * d.k3[1] * d.k3[2];
  if (ctx.is_const(1)) {
    const DType st = ctx.input(1).dtype;
    *opts += BuildContext::storage_option("PS", st);
    Tensor widened;
    return ctx.constant_floats(
        pack_conv_weights(as_float32(ctx.in_data(1), &widened), d.s.G, d.M_g, K, ocb), st);
  }
  cl_mem wp = ctx.scratch(DType::Float32, {d.s.G * blocks * K * ocb}).mem;
  ctx.launch("conv", "conv_f32_pack_weights", *opts,
             {static_cast<size_t>(d.s.G * blocks * ocb), static_cast<size_t>(K)}, {}, ctx.in_buf(1), wp,
             i32(d.M_g), i32(K), i32(blocks));
  return wp;
}

// depthwise: one input channel per group; bands of output rows x a few channels per work-item,
// OWB pixels per vector, the row geometry compiled in (one program per distinct width, stride and
// padding, which a network has only a handful of).
bool dw_applies(const ConvDesc& d, const DeviceCaps&) {
  return d.C_g == 1 && d.s.G > 1 && d.s.w.rank() <= 2 && !d.scaled;
}

VariantParams dw_defaults(const ConvDesc& d, const DeviceCaps&) {
  // 8 pixels per vector measured best on AVX-512 PoCL (16 costs more in border masks and overlap
  // than it saves).
  const DepthwiseSplit split = depthwise_split(d.s.N * d.s.M, d.out3[1] * d.out3[2]);
  return {{"owb", 8}, {"chans", static_cast<int>(split.chans)}, {"bands", static_cast<int>(split.bands)}, {"quick", 0}};
}

bool dw_valid(const ConvDesc& d, const DeviceCaps&, const VariantParams& p) {
  const int owb = p.at("owb");
  return (owb == 4 || owb == 8 || owb == 16) && p.at("chans") >= 1 && p.at("chans") <= 64 && p.at("bands") >= 1 &&
         p.at("bands") <= d.out3[1] &&
         (!p.count("quick") || p.at("quick") == 0 || (p.at("quick") == 1 && d.out3[2] >= owb));
}

// The largest ring of converted input rows (kernels/conv.cl, DW_RING) in floats of private memory
// per work-item.
constexpr int64_t kDwRingLimit = 16384;

void dw_run(BuildContext& ctx, const ConvDesc& d, const VariantParams& p) {
  const ConvArgs a = conv_args(ctx, d);
  const int64_t items = d.s.N * d.s.M, chans = p.at("chans"), bands = p.at("bands");
  const int64_t rows = (d.out3[1] + bands - 1) / bands;
  // A fused GlobalAveragePool: computed here when every work-item owns whole planes.
  const bool mean_here = d.plane_mean && rows >= d.out3[1];
  const auto options = [&](bool widths) {
    return "-DDEPTHWISE -DOWB=" + std::to_string(p.at("owb")) +
           (widths ? " -DIN_W=" + std::to_string(d.in3[2]) + " -DOUT_W=" + std::to_string(d.out3[2]) : "") +
           " -DPAD_W=" + std::to_string(d.pb3[2]) + window_defines(d.k3, d.st3, d.d3) + a.tail +
           (mean_here ? " -DPLANE_MEAN" + BuildContext::storage_option("MS", ctx.output(1).dtype) : "");
  };
  const bool quick = p.count("quick") && p.at("quick") == 1;
  // Float16 input on a CPU-shaped device: the input rows converted once into a ring of floats in
  // private memory (kernels/conv.cl, DW_RING), strides 1 and 2, 2-D, within kDwRingLimit floats.
  bool ring = false;
  if (!quick && ctx.input(0).dtype == DType::Float16 && ctx.caps().cpu_shaped() && d.st3[2] <= 2 && d.k3[0] == 1) {
    const int64_t owb = p.at("owb"), blocks = (d.out3[2] + owb - 1) / owb;
    const int64_t last = d.out3[2] >= owb ? std::min((blocks - 1) * owb, d.out3[2] - owb) : 0;
    const int64_t reach = last * d.st3[2] + (d.k3[2] - 1) * d.d3[2] + owb * d.st3[2];
    const int64_t row = (std::max(reach, d.pb3[2] + 16 * ((d.in3[2] + 15) / 16)) + 15) / 16 * 16;
    const int64_t slots = depthwise_ring_slots(d.k3[1], d.d3[1], d.st3[1]);
    ring = slots <= 64 && slots * row <= kDwRingLimit;
  }
  // The widths compiled in, with the quick kernel (widths at run time, the same values) as the
  // plan's first-run alternative where it applies (rows at least a vector wide).
  const std::string first_run = !quick && d.out3[2] >= p.at("owb") ? options(false) : "";
  ctx.launch_tiered("conv", "conv_f32_depthwise", options(!quick) + (ring ? " -DDW_RING" : ""), first_run,
                    {static_cast<size_t>((d.out3[1] + rows - 1) / rows), static_cast<size_t>((items + chans - 1) / chans)},
                    {1, 1}, a.x, ctx.in_buf(1), a.bias, a.residual, a.y, mean_here ? ctx.out_buf(1) : a.y, i32(d.s.C),
                    i32(d.in3[1]), i32(d.M_g), i32(d.out3[1]), i32(d.pb3[1]), i32(d.s.N * d.s.C), i32(rows),
                    i32(chans), i32(d.in3[2]), i32(d.out3[2]));
  if (d.plane_mean && !mean_here) plane_mean_launch(ctx, d);
}

// depthwise_wg: the GPU-shaped depthwise conv (kernels/conv_dw_wg.cl): one work-item per output
// pixel, work-groups of WX x WY pixels. Preferred on GPUs and accelerators, where the CPU-shaped
// kernel's row bands leave SIMD lanes idle; on CPUs only when forced or tuned.
bool dwg_applies(const ConvDesc& d, const DeviceCaps& c) {
  return c.max_work_group_size >= 16 && d.C_g == 1 && d.s.G > 1 && d.s.w.rank() <= 2 && !d.scaled;
}
bool dwg_preferred(const ConvDesc&, const DeviceCaps& c) { return !c.cpu_shaped(); }
bool dwg_valid(const ConvDesc&, const DeviceCaps& c, const VariantParams& p) {
  const int wx = p.at("wx"), wy = p.at("wy");
  return wx >= 1 && wy >= 1 && static_cast<size_t>(wx * wy) <= c.max_work_group_size;
}
VariantParams dwg_defaults(const ConvDesc& d, const DeviceCaps& c) {
  // 128 work-items: 32 along a row (or the row's width rounded up to 8), the rest down the plane.
  int wx = 32;
  while (wx > 8 && wx / 2 >= d.out3[2]) wx /= 2;
  int wy = 128 / wx;
  while (static_cast<size_t>(wx * wy) > c.max_work_group_size && wy > 1) wy /= 2;
  return {{"wx", wx}, {"wy", wy}};
}
void dwg_run(BuildContext& ctx, const ConvDesc& d, const VariantParams& p) {
  const ConvArgs a = conv_args(ctx, d);
  const size_t wx = static_cast<size_t>(p.at("wx")), wy = static_cast<size_t>(p.at("wy"));
  const std::string opts = "-DWX=" + std::to_string(wx) + " -DWY=" + std::to_string(wy) +
                           window_defines(d.k3, d.st3, d.d3) + a.tail;
  ctx.launch("conv_dw_wg", "conv_f32_depthwise_wg", opts,
             {round_up(static_cast<size_t>(d.out3[2]), wx), round_up(static_cast<size_t>(d.out3[1]), wy),
              static_cast<size_t>(d.s.N * d.s.M)},
             {wx, wy, 1}, a.x, ctx.in_buf(1), a.bias, a.residual, a.y, i32(d.s.C), i32(d.M_g), i32(d.in3[1]),
             i32(d.in3[2]), i32(d.out3[1]), i32(d.out3[2]), i32(d.pb3[1]), i32(d.pb3[2]));
}

// pointwise: 1x1 convs as a GEMM with vectors along the pixels (outputs stored as whole vectors;
// 2-4x the packed kernel's speed with few input channels). Needs at least PXB*PXV pixels.
bool pw_applies(const ConvDesc& d, const DeviceCaps&) { return d.pointwise && d.s.w.rank() <= 3; }

// Pixel vectors per work-item. With 16-float native vectors (AVX-512: 32 registers) up to 3 x 8
// accumulators fit; more vectors run faster per pixel (resnet50's 56x56 layers, Intel Xeon
// skylake-avx512, PoCL 3.1: 1 : 1.33 : 1.45 for pxv 1, 2, 3) but waste more on the last, partly
// overlapping block (7x7 = 49 pixels: 3 vectors compute 96). Picks the least estimated time.
int pw_default_pxv(int64_t pixels, const DeviceCaps& c) {
  if (!c.cpu_shaped() || c.native_vector_width_float < 16) return 1;
  static const double kSpeed[] = {1.0, 1.33, 1.45};
  int best = 1;
  double best_cost = 0;
  for (int pxv = 1; pxv <= 3 && pixels >= 16 * pxv; ++pxv) {
    const int64_t blocks = (pixels + 16 * pxv - 1) / (16 * pxv);
    const double cost = static_cast<double>(blocks * pxv) / kSpeed[pxv - 1];
    if (pxv == 1 || cost < best_cost) best = pxv, best_cost = cost;
  }
  return best;
}

// Work order: 0 = channel blocks vary fastest across work-items (neighbours share a block of
// input pixels), 1 = pixel blocks vary fastest (neighbours share a channel block's weights, which
// then come from memory once rather than once per pixel block). Pixels first once the weights
// pass half a core's L2: 1x1 convs at 7x7 with 0.6-4 MB of weights ran 20-25 % faster that way
// inside their models (efficientnet_b0's 1152 -> 192/320, mobilenet_v2's 960 -> 160/320,
// resnet50's 2048 -> 512; AMD EPYC Zen 5, PoCL 3.1), smaller ones the same either way.
int pw_default_order(const ConvDesc& d) {
  return d.M_g * d.C_g * 4 > (int64_t{512} << 10) ? 1 : 0;
}

// With 8-float native vectors (AVX2: 16 registers) 8 channels x 16 pixels held 16 ymm
// accumulators and spilled; 4 channels x 3 vectors of 8 pixels keep 12, with 3 loads and 4
// broadcasts per 12 FMAs: every 1x1 conv of mobilenet_v2 19-35 % faster per launch (their sum
// 5.96 -> 4.38 ms; 4 x 2 x 8 4.68 ms, 8 x 1 x 8 5.28 ms; AMD EPYC Zen 3, PoCL 3.1).
VariantParams pw_defaults(const ConvDesc& d, const DeviceCaps& c) {
  const int64_t pixels = product(d.s.w.in);
  if (c.cpu_shaped() && c.native_vector_width_float == 8)
    return {{"ocb", 4}, {"pxb", 8}, {"pxv", pixels >= 24 ? 3 : (pixels >= 16 ? 2 : 1)}, {"order", pw_default_order(d)}};
  // 16 pixels x 8 channels per vector step measured best on PoCL with 16-float vectors.
  return {{"ocb", d.M_g >= 6 ? 8 : 4},
          {"pxb", 16},
          {"pxv", pw_default_pxv(pixels, c)},
          {"order", pw_default_order(d)}};
}

bool pw_valid(const ConvDesc& d, const DeviceCaps&, const VariantParams& p) {
  const int ocb = p.at("ocb"), pxb = p.at("pxb"), pxv = p.at("pxv");
  const auto order = p.find("order");
  return (ocb == 4 || ocb == 8) && (pxb == 8 || pxb == 16) && pxv >= 1 && pxv <= 4 &&
         product(d.s.w.in) >= static_cast<int64_t>(pxb) * pxv &&
         (order == p.end() || order->second == 0 || order->second == 1);
}

bool pw_applies_with_defaults(const ConvDesc& d, const DeviceCaps& c) {
  return pw_applies(d, c) && pw_valid(d, c, pw_defaults(d, c));
}

// On planes of at most 64 pixels (7x7, 8x8) the pointwise kernel's pixel vectors overhang the
// plane (49 pixels: two 32-pixel blocks compute 64) while `packed`, a row of 7 pixels x 32
// channels per work-item, wastes nothing; but `packed` stores lane by lane, which only long
// reductions hide. Inside their models (AMD EPYC Zen 5, PoCL 3.1, per-node minima), `packed` ran
// resnet50's layer4 1x1 convs (2048 -> 512, 512 -> 2048) 20-27 % and mobilenet_v2's 960 -> 160
// projections 15-18 % faster, but expansions with 160-320 input channels (160 -> 960,
// 320 -> 1280) 4-20 % slower: hence 512 input channels or more. At 14x14 (196 pixels, three
// 48-pixel blocks and an overhanging fourth) the same held from 1024 input channels: resnet50's
// 1024 -> 256 convs 10-12 %, its and densenet121's 1024 -> 512 ones 19 % faster as `packed`
// (256 -> 1024 was 13-16 % slower). Not with a fused input scale
// (`packed` multiplies every input value it broadcasts: efficientnet_b0's 672 -> 192 projection
// 15 % slower). Kept to CPU devices with 16-lane vectors, where that register block is the default.
bool pw_preferred(const ConvDesc& d, const DeviceCaps& c) {
  const int64_t pixels = product(d.s.w.in);
  const bool packed_better = pixels <= 64 ? d.C_g >= 512 : pixels <= 196 && d.C_g >= 1024;
  return !(c.cpu_shaped() && c.native_vector_width_float >= 16 && packed_better && d.M_g >= 32 && !d.scaled);
}

void pw_run(BuildContext& ctx, const ConvDesc& d, const VariantParams& p) {
  const ConvArgs a = conv_args(ctx, d, true);
  const int ocb = p.at("ocb"), pxb = p.at("pxb"), pxv = p.at("pxv");
  const int64_t P = product(d.s.w.in), blocks = (d.M_g + ocb - 1) / ocb, pix = static_cast<int64_t>(pxb) * pxv;
  std::string opts = "-DOCB=" + std::to_string(ocb) + " -DPOINTWISE -DPXB=" + std::to_string(pxb) +
                     " -DPXV=" + std::to_string(pxv) + window_defines(d.k3, d.st3, d.d3) + a.tail + a.scale_opts +
                     prefetch_option(ctx.caps());
  cl_mem wp = packed_weights(ctx, d, ocb, &opts);
  // Pixel blocks first where the weights outgrow a core's cache (the rule of packed's `order`):
  // each channel block's weights then come from memory once, not once per pixel block.
  const bool pixels_first = (p.count("order") ? p.at("order") : pw_default_order(d)) == 1;
  size_t g0 = static_cast<size_t>(blocks), g1 = static_cast<size_t>((P + pix - 1) / pix);
  if (pixels_first) std::swap(g0, g1);
  const Epilogue& epi = ctx.node().epilogue;
  if (epi.has_post()) opts += " -DPOST_AFFINE";
  d.post_applied = true;
  ctx.launch("conv", "conv_f32_pointwise", opts, {g0, g1, static_cast<size_t>(d.s.N * d.s.G)},
             {1, 1, 1}, a.x, wp, a.bias, a.residual, a.y, i32(d.C_g), i32(P), i32(d.M_g), i32(d.s.G), i32(blocks),
             a.lo, a.hi, i32(pixels_first ? 1 : 0), a.scale, a.scale_n, epi.post_scale, epi.post_bias);
}

// pixvec: short reductions (3-channel stems): OCB channels x PXV vectors of 16 output pixels of
// a row per work-item, outputs stored as whole vectors, the input from a padded copy (pad_rows into
// the workspace, as packed:pad=1). Strides of 1 or 2 along the row; rows of at least PIX pixels.
bool pv_applies(const ConvDesc& d, const DeviceCaps&) {
  return !d.pointwise && d.st3[2] <= 2 && d.out3[2] >= 16;
}

// Preferred on CPUs for reductions of at most 160 and rows of at most 3 taps, where
// conv_f32_packed's 16 accumulators see few FMAs per store: squeezenet1_1's 3x3 stride-2 stem
// (K = 27, 64 channels) took 0.22-0.26 instead of 0.45 ms inside the model, its 16-channel 3x3
// expands 2-9 % less, resnet18's 1x1 stride-2 downsample (K = 64) ~10 % less; 32-channel stems
// (mobilenet_v2, efficientnet_b0) the same within noise. resnet18's 7x7 stem (K = 147) was 8-28 %
// slower than packed (seven overlapping unaligned loads per row and vector; AMD EPYC Zen 5).
// Not for 1x1 kernels: since packed takes 7-pixel blocks on 28-wide rows (no padded copy),
// resnet18's 1x1 stride-2 downsample ran 23 % faster as packed than as pixvec (82 -> 63 us), and
// it shares the program of the model's other 1x1 stride-2 conv.
bool pv_preferred(const ConvDesc& d, const DeviceCaps& c) {
  return c.cpu_shaped() && d.C_g * d.k3[0] * d.k3[1] * d.k3[2] <= 160 && d.k3[2] <= 3 && d.M_g >= 8 &&
         d.k3[1] * d.k3[2] > 1;
}

// 8 channels x 16 pixels are 16 accumulator registers of 8 floats on AVX2 (all of them: spilled);
// 4 channels there. The 3-channel stems with stride 2 (split rows), alternating processes (AMD EPYC
// Zen 3, PoCL 3.1): squeezenet1_1's 64-channel 0.73 -> 0.54 ms, mobilenet_v2's 32-channel
// 0.29 -> 0.24 ms; at stride 1 0.57 -> 0.42 and 0.26 -> 0.20 ms.
VariantParams pv_defaults(const ConvDesc& d, const DeviceCaps& c) {
  const bool narrow = c.cpu_shaped() && c.native_vector_width_float == 8;
  return {{"ocb", d.M_g >= 6 && !narrow ? 8 : 4}, {"pxv", pw_default_pxv(d.out3[2], c)}};
}

bool pv_valid(const ConvDesc& d, const DeviceCaps&, const VariantParams& p) {
  const int ocb = p.at("ocb"), pxv = p.at("pxv");
  return (ocb == 4 || ocb == 8) && pxv >= 1 && pxv <= 4 && d.out3[2] >= 16 * pxv;
}

void pv_run(BuildContext& ctx, const ConvDesc& d, const VariantParams& p) {
  const ConvArgs a = conv_args(ctx, d, true);
  const int ocb = p.at("ocb"), pxv = p.at("pxv");
  const int64_t pix = 16 * pxv, blocks = (d.M_g + ocb - 1) / ocb, px_blocks = (d.out3[2] + pix - 1) / pix;
  std::string opts = "-DOCB=" + std::to_string(ocb) + " -DPIXVEC -DPXV=" + std::to_string(pxv) +
                     window_defines(d.k3, d.st3, d.d3) + a.tail;
  cl_mem wp = packed_weights(ctx, d, ocb, &opts);
  // Every column read: the last block ends at OW (moved left).
  const int64_t padded = std::max(d.pb3[2] + d.in3[2], (d.out3[2] - 1) * d.st3[2] + (d.k3[2] - 1) * d.d3[2] + 1);
  const cl_mem xp = padded_input(ctx, d, a, padded, d.st3[2] == 2);
  ctx.launch("conv", "conv_f32_pixvec", opts,
             {static_cast<size_t>(blocks), static_cast<size_t>(px_blocks),
              static_cast<size_t>(d.s.N * d.s.G * d.out3[0] * d.out3[1])},
             {1, 1, 1}, xp, wp, a.bias, a.residual, a.y, i32(d.C_g), i32(d.in3[0]), i32(d.in3[1]), i32(padded),
             i32(d.M_g), i32(d.out3[0]), i32(d.out3[1]), i32(d.out3[2]), i32(d.s.G), i32(blocks), i32(d.pb3[0]),
             i32(d.pb3[1]), a.lo, a.hi);
}

// packed: the general implicit GEMM (any rank <= 3, groups, strides, dilations, padding): a
// work-item computes OCB output channels x OWB pixels of one output row.
bool packed_applies(const ConvDesc&, const DeviceCaps&) { return true; }

// Output channels per vector: the widest of 16/8/4 that the group's channels mostly fill.
int channel_block(int64_t m_g) { return m_g >= 12 ? 16 : (m_g >= 6 ? 8 : 4); }

// A pointwise conv runs as one long row covering every pixel.
std::array<int64_t, 3> packed_out3(const ConvDesc& d) {
  return d.pointwise ? std::array<int64_t, 3>{1, 1, product(d.s.w.in)} : d.out3;
}

// Work order: 0 = channel blocks vary fastest across work-items (neighbours share input rows),
// 1 = output rows vary fastest (neighbours share a channel block's weights). Rows first when the
// weights outgrow a core's cache: resnet18's layer4 convs (9.4 MB of weights, each block re-read
// by 7 rows) took 20 % less time, layer3 (2.4 MB) 5 %, while layers 1-2 (<= 0.6 MB) and the 7x7
// stem were 3-15 % slower that way (Intel Xeon, PoCL 3.1).
int packed_default_order(const ConvDesc& d) {
  const int64_t weight_bytes = d.M_g * d.C_g * d.k3[0] * d.k3[1] * d.k3[2] * 4;
  return weight_bytes > (int64_t{1} << 20) ? 1 : 0;
}

// Two channel vectors per work-item (16 accumulators of 16 floats, each input broadcast used
// twice) where the registers hold them: devices with 16-float native vectors (AVX-512 has 32
// such registers; AVX2's 16 would spill) and groups with at least two full vectors of channels.
// resnet18 on an Intel Xeon (skylake-avx512, PoCL 3.1): convs 32.2 -> 21.6 ms, every layer
// faster (the 7x7 stem 2.26 -> 1.57 ms); 4 vectors x 6 pixels and 3 x 6 were slower than 2 x 8.
//
// Except stride-1 spatial convs with small output planes (at most 64 pixels) and long reductions
// (>= 1024): one vector there. resnet18's layer4 3x3 convs (7x7 outputs, 2304-4608 reduction
// steps) ran 20-25 % faster per launch with one vector, resnet50's layer4 3x3 convs 12-26 %, while
// the same convs at 14x14 were 6-8 % slower and 1x1 convs at 7x7 37-48 % slower (AMD EPYC Zen 5,
// PoCL 3.1; `perf` puts the two-vector kernel's time on the weight loads). The strided ones
// (resnet18's layer4.0.conv1: 0.53 -> 0.41 ms) keep two vectors: that program is the one the
// earlier layers' strided convs use, and one more program cost resnet18's first run ~0.25 s.
bool packed_small_plane(const ConvDesc& d) {
  return !d.pointwise && d.k3[0] * d.k3[1] * d.k3[2] > 1 && d.st3[0] * d.st3[1] * d.st3[2] == 1 &&
         packed_out3(d)[0] * packed_out3(d)[1] * packed_out3(d)[2] <= 64 &&
         d.C_g * d.k3[0] * d.k3[1] * d.k3[2] >= 1024;
}

// On a 2-core Intel Xeon with AVX-512 and 2 MiB of L2 per core (PoCL 3.1) the same layer4 convs
// ran 18 % faster with two vectors (three of resnet18's, summed minima of four alternating
// profiles: 3.60-3.83 -> 2.95-3.09 ms). The two measurements agree with the weights a work-item
// streams: two vectors' rows (32 channels x 4608 steps x 4 bytes, 590 KB) within half the L2 there
// and not in Zen 5's 1 MiB. So one vector only where they would pass half the host's L2 (or it is
// not known); the two-vector program is then the one the 14x14 convs use (one program less).
bool packed_one_vector(const ConvDesc& d, const DeviceCaps& c, int ocb) {
  if (!packed_small_plane(d)) return false;
  const int64_t two_vector_weights = 2 * ocb * d.C_g * d.k3[0] * d.k3[1] * d.k3[2] * 4;
  return c.host_l2_bytes == 0 || two_vector_weights > static_cast<int64_t>(c.host_l2_bytes / 2);
}

int packed_default_ocv(const ConvDesc& d, const DeviceCaps& c, int ocb) {
  return c.cpu_shaped() && c.native_vector_width_float >= 16 && ocb == 16 && d.M_g >= 2 * ocb &&
                 !packed_one_vector(d, c, ocb)
             ? 2
             : 1;
}

// CPUs with 16 vector registers of 8 floats (AVX2): a 16-channel vector is two registers, so the
// default 8 (or 7) pixels x 16 channels keep 14-16 registers of accumulators beside the row's
// weights, and the compiler spills them to the stack inside the reduction loop (seen in the
// generated code). 4 pixels (8 registers) instead, for spatial kernels with 16-channel blocks;
// kernels wider than 3 taps take 2 x 8 channels, which runs the taps-outer loop (two weight
// registers per tap rather than all of the row's). Always from the padded copy: with 4-pixel
// blocks the checked loads (CHECK_COLUMNS) slowed every block, not only the border ones (the 7x7
// stem 1.70 ms padded, 2.43 checked; 3x3 convs 1.3-1.6x). Per conv (minima of alternating
// processes, AMD EPYC Zen 3, PoCL 3.1): resnet18's 3x3 stride-2 convs 1.27/1.21/1.21 ->
// 0.80/1.00/0.91 ms, resnet50's 2.57/2.47/2.56 -> 1.65-1.76/2.12/2.20 ms, the 7x7 stride-2 stem
// 2.43 -> 1.70 ms, a 5x5 conv 0.54 -> 0.47 ms; 12 accumulators (16 x 6, 8 x 12) spilled again and
// took 1.3-2x as long. Not for 7x7 planes with long reductions (packed_small_plane: each weight
// then serves 4 pixels instead of 7, resnet18's layer4 3x3 convs 1.39 -> 1.66 ms) nor 1x1 strided
// convs (within noise either way).
bool packed_narrow_registers(const ConvDesc& d, const DeviceCaps& c, int ocb) {
  return c.cpu_shaped() && c.native_vector_width_float == 8 && ocb == 16 && !d.pointwise &&
         d.k3[0] * d.k3[1] * d.k3[2] > 1 && !packed_small_plane(d);
}

// Pixels per work-item: 8, or 7 or 6 where they cover the row with fewer padded pixels and the
// reduction is long (14- and 28-wide rows as 2 and 4 blocks of 7 instead of 2 and 4 blocks of 8:
// resnet18's layer2/layer3 convs 5-30 % faster on the Xeon). With short reductions 8 stays: its
// blocks are stored through the transpose, which made squeezenet's 27-wide convs (K = 288) 20 %
// faster than 7 without it. Rows narrower than 8 take their width.
//
// `wide` (two 16-channel vectors per work-item on a device with 32 vector registers, and at most
// 3 taps per row): up to 13 pixels, 26 accumulators, still fit; rows of at most 13 pixels then
// take their width, and rows that 8 does not divide but one of 9-13 does take that (squeezenet1_1's
// 13-wide 3x3 convs 9-18 % faster per launch as one 13-pixel block than as blocks of 7 or 8, its
// 27-wide ones 8-9 % as three blocks of 9 than as four of 8; AMD EPYC Zen 5, PoCL 3.1).
int packed_default_owb(int64_t width, int64_t reduction, bool wide) {
  if (width <= (wide ? 13 : 8)) return static_cast<int>(width);
  // Rows that 7 divides and 8 does not (14, 28): blocks of 7 fit exactly, so no partial block
  // and no padded input copy (one launch less), and the program is the one the model's 7- and
  // 14-wide convs use already (one kernel less for PoCL to generate at the first run: resnet18's
  // 14-wide 1x1 stride-2 conv took its own 0.5 s). Per launch the same within noise (Zen 5).
  if (width % 8 != 0 && width % 7 == 0) return 7;
  if (wide && width % 8 != 0)
    for (int owb = 13; owb >= 9; --owb)
      if (width % owb == 0) return owb;
  if (reduction < 512) return 8;
  int best = 8;
  for (int owb : {7, 6})
    if ((width + owb - 1) / owb * owb < (width + best - 1) / best * best) best = owb;
  return best;
}

// Input columns one work-item reads from a row (kernels/conv.cl's SPAN).
int64_t packed_span(const ConvDesc& d, int owb) { return (owb - 1) * d.st3[2] + (d.k3[2] - 1) * d.d3[2] + 1; }

// Share of the work-items whose row segment leaves the input row (left padding, right padding,
// or a last block that runs past the output row): those take the kernel's checked path, a clamped
// load and a select for every column of every row they reduce over.
double packed_border_share(const ConvDesc& d, int owb) {
  // A pointwise conv runs as one row of every pixel (packed_out3): only a partial last block.
  const int64_t ow = packed_out3(d)[2], w = d.pointwise ? ow : d.in3[2], span = packed_span(d, owb),
                blocks = (ow + owb - 1) / owb;
  int64_t border = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t iw0 = b * owb * d.st3[2] - d.pb3[2];
    border += iw0 < 0 || iw0 + span > w;
  }
  return static_cast<double>(border) / static_cast<double>(blocks);
}

// Padding the input's columns once (pad_rows into the workspace, one extra launch) so that every
// work-item takes the unchecked path. On PoCL (AMD EPYC Zen 5) a border block cost about twice an
// interior one: from a padded copy, copy included, resnet18's 14- and 7-wide 3x3 convs (every
// block at a border) ran 25-35 % faster, its 28-wide ones (half) ~20 %, its 56-wide ones (2 of
// 7 blocks) 7-14 %, the 224-wide stem (2 of 14) ~3 %. Below a tenth the copy's time and memory
// (the workspace holds the largest padded input) are not worth it.
int packed_default_pad(const ConvDesc& d, int owb) {
  return !d.pointwise && packed_border_share(d, owb) >= 0.1 ? 1 : 0;
}

VariantParams packed_defaults(const ConvDesc& d, const DeviceCaps& c) {
  int ocb = channel_block(d.M_g);
  int ocv = packed_default_ocv(d, c, ocb);
  int owb = packed_default_owb(packed_out3(d)[2], d.C_g * d.k3[0] * d.k3[1] * d.k3[2], ocv == 2 && d.k3[2] <= 3);
  int pad = packed_default_pad(d, owb);
  if (packed_narrow_registers(d, c, ocb)) {
    owb = static_cast<int>(std::min<int64_t>(4, packed_out3(d)[2]));
    if (d.k3[2] > 3) {
      ocb = 8;
      ocv = 2;
    }
    pad = packed_border_share(d, owb) > 0 ? 1 : 0;
  }
  return {{"ocb", ocb}, {"owb", owb}, {"order", packed_default_order(d)}, {"ocv", ocv}, {"pad", pad}};
}

bool packed_valid(const ConvDesc& d, const DeviceCaps&, const VariantParams& p) {
  const int ocb = p.at("ocb"), owb = p.at("owb");
  const auto order = p.find("order"), ocv = p.find("ocv"), pad = p.find("pad");
  return (ocb == 4 || ocb == 8 || ocb == 16) && owb >= 1 && owb <= 16 &&
         (order == p.end() || order->second == 0 || order->second == 1) &&
         (ocv == p.end() || ocv->second == 1 || ocv->second == 2) &&
         (pad == p.end() || pad->second == 0 || (pad->second == 1 && !d.pointwise));
}

void packed_run(BuildContext& ctx, const ConvDesc& d, const VariantParams& p) {
  const ConvArgs a = conv_args(ctx, d, true);
  const int ocb = p.at("ocb"), owb = p.at("owb"), ocv = p.count("ocv") ? p.at("ocv") : 1;
  const int64_t blocks = (d.M_g + ocb * ocv - 1) / (ocb * ocv);
  const auto in3 = d.pointwise ? packed_out3(d) : d.in3;
  const auto out3 = packed_out3(d);
  const bool pad = (p.count("pad") ? p.at("pad") : packed_default_pad(d, owb)) == 1;
  // Without a padded copy, work-items whose row segment leaves the row need the checked loads.
  const bool check_columns = !pad && packed_border_share(d, owb) > 0;
  // With a padded copy the copy carries the fused channel scale; without, the kernel applies it.
  std::string opts = "-DOCB=" + std::to_string(ocb) + " -DOWB=" + std::to_string(owb) +
                     (ocv > 1 ? " -DOCV=" + std::to_string(ocv) : "") + (check_columns ? " -DCHECK_COLUMNS" : "") +
                     window_defines(d.k3, d.st3, d.d3) + a.tail + (pad ? "" : a.scale_opts) +
                     prefetch_option(ctx.caps());
  cl_mem wp = packed_weights(ctx, d, ocb * ocv, &opts);
  const bool rows_first = (p.count("order") ? p.at("order") : packed_default_order(d)) == 1;
  size_t g0 = static_cast<size_t>(blocks), g2 = static_cast<size_t>(d.s.N * d.s.G * out3[0] * out3[1]);
  if (rows_first) std::swap(g0, g2);
  const int64_t ow_blocks = (out3[2] + owb - 1) / owb;
  cl_mem x = a.x;
  int64_t width = in3[2], pad_w = d.pb3[2];
  if (pad) {
    // Every column any work-item reads, the last block's past the output row included (those
    // pixels are computed but not stored), exists in the copy: zeros around the row.
    const int64_t padded = std::max(d.pb3[2] + in3[2], (ow_blocks * owb - 1) * d.st3[2] + (d.k3[2] - 1) * d.d3[2] + 1);
    x = padded_input(ctx, d, a, padded, false);
    width = padded;
    pad_w = 0;
  }
  ctx.launch("conv", "conv_f32_packed", opts, {g0, static_cast<size_t>(ow_blocks), g2},
             {1, 1, 1}, x, wp, a.bias, a.residual, a.y, i32(d.C_g), i32(in3[0]), i32(in3[1]), i32(width),
             i32(d.M_g), i32(out3[0]), i32(out3[1]), i32(out3[2]), i32(d.s.G), i32(blocks), i32(d.pb3[0]),
             i32(d.pb3[1]), i32(pad_w), a.lo, a.hi, i32(rows_first ? 1 : 0), a.scale, a.scale_n);
}

// tiled: the GPU-shaped implicit GEMM (kernels/conv_tiled.cl), per image and group
// [M_g x K] x [K x pixels] on local-memory tiles; weights and input read in place.
bool tiled_applies(const ConvDesc& d, const DeviceCaps& c) {
  return c.max_work_group_size >= 16 && d.s.w.rank() <= 3;
}
// GPUs, except depthwise convs (one input channel per group: a GEMM with M = 1 wastes the tile).
bool tiled_preferred(const ConvDesc& d, const DeviceCaps& c) { return !c.cpu_shaped() && !(d.C_g == 1 && d.s.G > 1); }

bool tiled_valid(const ConvDesc&, const DeviceCaps& c, const VariantParams& v) {
  return tiled_params_fit(c, v);
}

VariantParams tiled_defaults(const ConvDesc& d, const DeviceCaps& c) {
  return tiled_params_default(c, d.M_g >= 64 && product(d.s.w.out) >= 64);
}

void tiled_run(BuildContext& ctx, const ConvDesc& d, const VariantParams& v) {
  const ConvArgs a = conv_args(ctx, d);
  const int ts = v.at("ts"), rm = v.at("rm"), rn = v.at("rn");
  const int64_t P = d.out3[0] * d.out3[1] * d.out3[2];
  const std::string opts = "-DTS=" + std::to_string(ts) + " -DRM=" + std::to_string(rm) + " -DRN=" +
                           std::to_string(rn) + " -DTK=" + std::to_string(v.at("tk")) +
                           window_defines(d.k3, d.st3, d.d3) + a.tail + a.scale_opts;
  const size_t wx = static_cast<size_t>(ts / rn), wy = static_cast<size_t>(ts / rm);
  ctx.launch("conv_tiled", "conv_f32_tiled", opts,
             {static_cast<size_t>((P + ts - 1) / ts) * wx, static_cast<size_t>((d.M_g + ts - 1) / ts) * wy,
              static_cast<size_t>(d.s.N * d.s.G)},
             {wx, wy, 1}, a.x, ctx.in_buf(1), a.bias, a.residual, a.y, i32(d.C_g), i32(d.in3[0]), i32(d.in3[1]),
             i32(d.in3[2]), i32(d.M_g), i32(d.out3[0]), i32(d.out3[1]), i32(d.out3[2]), i32(d.s.G), i32(d.pb3[0]),
             i32(d.pb3[1]), i32(d.pb3[2]), a.scale, a.scale_n);
}

std::string dims3(const std::array<int64_t, 3>& a) {
  return std::to_string(a[0]) + "x" + std::to_string(a[1]) + "x" + std::to_string(a[2]);
}

// "n1 c64 m64 g1 in1x56x56 k1x3x3 s1x1x1 d1x1x1 p0x1x1 out1x56x56 bias"
std::string conv_key(const ConvDesc& d) {
  return "n" + std::to_string(d.s.N) + " c" + std::to_string(d.s.C) + " m" + std::to_string(d.s.M) + " g" +
         std::to_string(d.s.G) + " in" + dims3(d.in3) + " k" + dims3(d.k3) + " s" + dims3(d.st3) + " d" +
         dims3(d.d3) + " p" + dims3(d.pb3) + " out" + dims3(d.out3) + (d.has_bias ? " bias" : "") +
         (d.const_weights ? "" : " wrun") + (d.scaled ? " scaled" : "") + (d.plane_mean ? " mean" : "");
}

// winograd: F(2x2, 3x3) for 3x3, stride 1, dilation 1, one group, constant weights
// (kernels/conv_winograd.cl): an input transform, 16 GEMMs over the channels with the weights
// transformed at plan time, an output transform with the epilogue. 2.25x fewer multiplies than
// the direct conv, for a workspace of 16 x tiles x (C + M) floats (winograd_tiles: tile rows
// padded to whole vectors of tiles).
int winograd_tile_vector(const ConvDesc& d) { return ((d.out3[2] + 1) / 2) % 8 == 0 ? 8 : 4; }
int64_t winograd_tiles(const ConvDesc& d) {
  const int64_t tv = winograd_tile_vector(d), tw = (d.out3[2] + 1) / 2;
  return d.s.N * ((d.out3[1] + 1) / 2) * ((tw + tv - 1) / tv * tv);
}
bool winograd_applies(const ConvDesc& d, const DeviceCaps&) {
  return d.s.M >= 4 && d.const_weights && !d.scaled && d.s.G == 1 && d.s.w.rank() == 2 && d.k3[1] == 3 &&
         d.k3[2] == 3 && d.st3[1] == 1 && d.st3[2] == 1 && d.d3[1] == 1 && d.d3[2] == 1 &&
         16 * winograd_tiles(d) * (d.s.C + d.s.M) <= INT_MAX;
}
// The default on CPU-shaped devices for convs with at least 16 input and 64 output channels and
// output planes of at least 10x10 (AMD EPYC Zen 3, AVX2, PoCL 3.1, per conv inside the models:
// resnet18's and resnet50's 3x3 convs at 56x56 0.82-0.90x the direct kernel's time, at 28x28 and
// 14x14 0.63-0.70x; densenet121's 128 -> 32 convs 1.02-1.09x, as the input transform outweighs the
// few output channels). With few input channels the GEMMs' reductions are short and the direct
// kernel's AVX2 block comes close: squeezenet1_1's 16 -> 64 convs at 55x55 0.43-0.45 ms as
// Winograd, 0.44-0.47 ms direct (in noisier minutes 0.81 vs 0.62: not settled); its 48 -> 192 at
// 13x13 0.16 vs 0.23 ms. At 7x7 (resnet18's layer4, 0.88x) the transformed weights (16/9 of the
// direct ones: 50 of resnet18's 72 MB) cost more of a warm start (their pages and transform, ~45
// ms) than the 0.45 ms they saved per run. Not where the workspace would pass 64 MiB (large images:
// a 1500x1500 plane of 16 -> 64 channels would take 2.9 GB; the direct conv needs none).
//
// Not on CPUs with 16-float vectors (AVX-512): there the direct kernel's register blocks are twice
// as wide and won at every layer (2-core Intel Xeon AVX-512, PoCL 3.1, conv=packed against the
// default, alternating --bench runs: resnet18 min 17.2-17.6 -> 15.3-15.4 ms, squeezenet1_1
// 4.9 -> 4.0 ms; per conv, resnet18's at 56x56 1.04-1.10 -> 0.81-0.87 ms, 28x28 0.89-0.91 ->
// 0.77-0.80, 14x14 0.80-0.82 -> 0.76). `ocl-infer tune` still measures it there.
bool winograd_preferred(const ConvDesc& d, const DeviceCaps& c) {
  return c.cpu_shaped() && c.native_vector_width_float < 16 && d.s.C >= 16 && d.s.M >= 64 &&
         d.out3[1] * d.out3[2] >= 100 && 16 * winograd_tiles(d) * (d.s.C + d.s.M) * 4 <= (int64_t{64} << 20);
}
VariantParams winograd_defaults(const ConvDesc&, const DeviceCaps&) { return {}; }

// U[xi][c][m] = (G g G^T)[xi] for weights g = W[m][c], G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1],
// as sums and halvings (in double), written straight into the GEMM's packed panels of nr output
// channels (GemmDesc::b_host_pack: B[xi][c][m]). As 16 x 3 x 3 products per (m, c) into a
// [16][C][M] tensor, then repacked, resnet18's transforms took 120 ms of a 0.25 s warm start.
void winograd_weights(const Tensor& w, int64_t M, int64_t C, int nr, int64_t npad, float* out) {
  const float* g = w.data<float>();
  const int64_t panels = npad / nr;
  // G applied to the three values a, b, c (a row or a column of taps).
  auto gmul = [](double a, double b, double c, double r[4]) {
    r[0] = a;
    r[1] = 0.5 * (a + b + c);
    r[2] = 0.5 * (a - b + c);
    r[3] = c;
  };
  for (int64_t c = 0; c < C; ++c)
    for (int64_t m = 0; m < M; ++m) {
      const float* k = g + (m * C + c) * 9;
      double t[4][3];  // G g: the columns of g through G
      for (int b = 0; b < 3; ++b) {
        double col[4];
        gmul(k[b], k[3 + b], k[6 + b], col);
        for (int i = 0; i < 4; ++i) t[i][b] = col[i];
      }
      for (int i = 0; i < 4; ++i) {
        double row[4];  // (G g) G^T: the rows of G g through G
        gmul(t[i][0], t[i][1], t[i][2], row);
        for (int j = 0; j < 4; ++j)
          out[(((i * 4 + j) * panels + m / nr) * C + c) * nr + m % nr] = static_cast<float>(row[j]);
      }
    }
}

void winograd_run(BuildContext& ctx, const ConvDesc& d, const VariantParams&) {
  const ConvArgs a = conv_args(ctx, d, true);
  const int64_t N = d.s.N, C = d.s.C, M = d.s.M, H = d.in3[1], W = d.in3[2], OH = d.out3[1], OW = d.out3[2];
  const int64_t TH = (OH + 1) / 2, TW = (OW + 1) / 2;
  // Tile rows padded to vectors of TV tiles: 8 where that pads nothing, else 4 (28 tiles: 7 x 4;
  // 14: 4 x 4, two padding tiles; 4: one vector). winograd_applies bounds 16 * Pp * (C + M).
  const int tv = winograd_tile_vector(d), mv = M % 8 == 0 ? 8 : 4;
  const int64_t TWP = (TW + tv - 1) / tv * tv, Pp = winograd_tiles(d);
  Tensor widened;
  const Tensor& w = as_float32(ctx.in_data(1), &widened);
  // Both temporaries in the plan's shared workspace: the products Mt [16][Pp][M] from element 0
  // (the GEMM writes its output from the start of a buffer), the transformed input V [16][C][Pp]
  // after them (read through the GEMM's A offsets). As two scratch buffers per conv they were
  // 42 MB of resnet18's plan.
  const int64_t v_off = 16 * Pp * M;
  cl_mem ws = ctx.workspace(DType::Float32, {v_off + 16 * Pp * C}).mem;
  cl_mem V = ws, Mt = ws;
  ctx.launch("conv_winograd", "winograd_input",
             "-DTV=" + std::to_string(tv) + BuildContext::storage_option("XS", ctx.input(0).dtype),
             {static_cast<size_t>(TH), static_cast<size_t>(N * C)}, {1, 1}, a.x, V,
             v_off, i32(C), i32(H), i32(W), i32(TH), i32(TWP), i32(d.pb3[1]), i32(d.pb3[2]), i32(Pp));
  GemmDesc g;
  g.M = Pp;
  g.N = M;
  g.K = C;
  g.a_rs = 1;  // V[xi] is [C][Pp]: the GEMM's A (Pp x C) read transposed
  g.a_ks = Pp;
  g.a_off.resize(16);
  g.b_index.resize(16);
  for (int64_t xi = 0; xi < 16; ++xi) {
    g.a_off[xi] = v_off + xi * Pp * C;
    g.b_index[xi] = xi;
  }
  g.b_host_pack = [&](int nr, int64_t npad, float* out) { winograd_weights(w, M, C, nr, npad, out); };
  g.b_count = 16;
  g.b_bs = C * M;
  g.b_ks = M;
  g.b_ns = 1;
  launch_gemm_packed(ctx, V, Mt, g);
  ctx.launch("conv_winograd", "winograd_output", "-DMV=" + std::to_string(mv) + a.tail,
             {static_cast<size_t>((M + mv - 1) / mv), static_cast<size_t>(TW), static_cast<size_t>(N * TH)}, {1, 1, 1},
             Mt, a.bias, a.residual, a.y, i32(M), i32(OH), i32(OW), i32(TH), i32(TWP), i32(Pp), a.lo, a.hi);
}

// Shape-generic defaults (KernelVariant::generic): build options that do not follow the row width,
// so that a session's plans for further input shapes reuse the programs compiled for the second
// one (PP-OCRv4's recognizer, a new width on the 2-core Xeon: 2.2-2.6 s of kernel compilation with
// the widths compiled in, 44-49 ms with these). The price is the depthwise kernel with the widths
// as arguments (quick=1): 2-2.3x the specialised one's time there (the recognizer's depthwise
// convs 5.3 -> 12.3 ms, the whole model 1.22x; the PP-OCRv4 detector 1.01x, mobilenet_v2 1.3x);
// without it, each new shape compiled its depthwise programs (2.2-2.6 s, as before).
VariantParams dw_generic(const ConvDesc&, const DeviceCaps&, VariantParams p) {
  p["quick"] = 1;  // the widths as arguments (where the rows are at least a vector wide: dw_valid)
  return p;
}

VariantParams pw_generic(const ConvDesc& d, const DeviceCaps&, VariantParams p) {
  const int64_t pixels = product(d.s.w.in);
  int pxv = 3;
  while (pxv > 1 && pixels < static_cast<int64_t>(p.at("pxb")) * pxv) --pxv;
  p["pxv"] = pxv;
  return p;
}

VariantParams pv_generic(const ConvDesc& d, const DeviceCaps&, VariantParams p) {
  p["pxv"] = d.out3[2] >= 32 ? 2 : 1;
  return p;
}

VariantParams packed_generic(const ConvDesc& d, const DeviceCaps& c, VariantParams p) {
  if (!packed_narrow_registers(d, c, p.at("ocb"))) {
    // 8 pixels, or 7 where 7 divides the row and 8 does not (7x7 and 14x14 planes): at most two
    // programs per conv.
    const int64_t w = packed_out3(d)[2];
    p["owb"] = static_cast<int>(w % 8 != 0 && w % 7 == 0 ? 7 : std::min<int64_t>(8, w));
  }
  // Never the checked loads (a build option): a padded copy wherever a block meets the border,
  // always where a fused input scale would otherwise move into the kernel's options.
  p["pad"] = !d.pointwise && (d.scaled || packed_border_share(d, p.at("owb")) > 0) ? 1 : 0;
  return p;
}

const KernelFamily<ConvDesc>& conv_family() {
  static const KernelFamily<ConvDesc> f{
      "conv",
      {
          {"tiled", "GPU-shaped implicit GEMM: TSxTS tiles per work-group in local memory, RMxRN per work-item",
           tiled_param_space(), tiled_applies, tiled_valid, tiled_defaults, then_plane_mean<tiled_run>, tiled_preferred},
          {"winograd", "F(2x2,3x3) for 3x3 stride-1 convs: transforms + 16 GEMMs over the channels", {},
           winograd_applies, nullptr, winograd_defaults, then_plane_mean<winograd_run>, winograd_preferred},
          {"depthwise_wg", "GPU-shaped depthwise (rank <= 2): one output pixel per work-item, WXxWY work-groups",
           {{"wx", {8, 16, 32, 64}}, {"wy", {1, 2, 4, 8}}}, dwg_applies, dwg_valid, dwg_defaults, then_plane_mean<dwg_run>,
           dwg_preferred},
          {"depthwise", "one input channel per group (rank <= 2): row bands x channels, pixel vectors",
           {{"owb", {4, 8, 16}}, {"chans", {1, 2, 4, 8}}, {"bands", {1, 2, 4, 8, 16}}, {"quick", {0, 1}}},
           dw_applies, dw_valid, dw_defaults, dw_run, nullptr, dw_generic},
          {"pointwise", "1x1, stride 1, unpadded: GEMM with vectors along the pixels",
           {{"ocb", {4, 8}}, {"pxb", {8, 16}}, {"pxv", {1, 2, 3}}, {"order", {0, 1}}},
           pw_applies_with_defaults, pw_valid, pw_defaults, then_plane_mean<pw_run>, pw_preferred, pw_generic},
          {"pixvec", "short reductions (3-channel stems), stride <= 2: OCB channels x PXV 16-pixel vectors of a row",
           {{"ocb", {4, 8}}, {"pxv", {1, 2, 3}}}, pv_applies, pv_valid, pv_defaults, then_plane_mean<pv_run>, pv_preferred,
           pv_generic},
          {"packed", "any conv: implicit GEMM, OCB channels x OWB pixels per work-item, packed weights",
           {{"ocb", {4, 8, 16}}, {"owb", {1, 2, 4, 8}}, {"order", {0, 1}}, {"ocv", {1, 2}}, {"pad", {0, 1}}},
           packed_applies, packed_valid, packed_defaults, then_plane_mean<packed_run>, nullptr, packed_generic},
      },
      conv_key};
  return f;
}

void conv_build(BuildContext& ctx) {
  const ConvDesc d = conv_desc(ctx);
  ctx.require_float_operands();
  if (product(d.s.w.out) * std::max(d.s.C, d.s.M) > INT_MAX || product(d.s.w.in) * d.s.C > INT_MAX)
    ctx.unsupported("feature maps beyond 2^31 elements per image are not supported");
  // Window extents and strides are compiled into the kernels (unrolled loops, register arrays):
  // refuse absurd ones here with one line instead of a compiler log.
  for (int i = 0; i < 3; ++i)
    if ((d.k3[i] - 1) * d.d3[i] + 1 > 1024 || d.st3[i] > 1024)
      ctx.unsupported("a window spanning " + std::to_string((d.k3[i] - 1) * d.d3[i] + 1) + " elements with stride " +
                      std::to_string(d.st3[i]) + " is not supported (at most 1024 each)");
  run_variant(ctx, conv_family(), d);
  // A post-activation scalar affine (fuse_post_affine) that the variant's kernel did not apply:
  // one in-place pass over the output.
  const Epilogue& epi = ctx.node().epilogue;
  if (epi.has_post() && !d.post_applied)
    launch_elementwise(ctx, "AFFINE", {ctx.output(0)}, ctx.output(0),
                       " -DALPHA=" + float_literal(epi.post_scale) + " -DBETA=" + float_literal(epi.post_bias));
}

double conv_flops(const OpContext& ctx) {
  // Each output element: (Cin/group) * prod(kernel) multiply-adds, plus one add for the bias.
  const Shape& w = ctx.in_shape(1);
  double k = 1;
  for (size_t d = 1; d < w.size(); ++d) k *= static_cast<double>(w[d]);
  return static_cast<double>(numel(ctx.out_shape(0))) * (2 * k + (ctx.has_input(2) ? 1 : 0));
}

// Folding a per-channel affine: W [M][C/g][k...] scales by output channel (its first dim).
int64_t conv_affine_channels(const OpContext& ctx) {
  if (!ctx.is_const(1) || (ctx.has_input(2) && !ctx.is_const(2)) || ctx.in_shape(1).size() < 3) return -1;
  return ctx.in_shape(1)[0];
}

void conv_scale_weights(const OpContext&, Tensor& w, const std::vector<double>& scale) {
  float* wd = w.data<float>();
  const int64_t C = static_cast<int64_t>(scale.size()), per = w.numel() / C;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k = 0; k < per; ++k) wd[c * per + k] = static_cast<float>(wd[c * per + k] * scale[c]);
}

const ChannelAffine kConvAffine{conv_affine_channels, conv_scale_weights, 1, 2, nullptr, nullptr};

// ---- ConvTranspose -------------------------------------------------------------------------
struct ConvTransposeShape {
  int64_t N, C, M_g, G;
  Window w;  // out, pb are the transposed conv's output size and start padding
};

ConvTransposeShape conv_transpose_shape(const OpContext& ctx) {
  const Node& n = ctx.node();
  const Shape &x = ctx.in_shape(0), &wt = ctx.in_shape(1);
  if (x.size() < 3) ctx.fail("input X must have rank >= 3 (N, C, spatial...), got " + list(x));
  if (wt.size() != x.size())
    ctx.fail("weights " + list(wt) + " must have the rank of the input " + list(x));
  if (x.size() > 5) ctx.unsupported("convolutions over more than 3 spatial dims are not supported");
  ConvTransposeShape s;
  s.N = x[0];
  s.C = x[1];
  s.G = n.attr_int("group", 1);
  s.M_g = wt[1];
  if (s.G < 1 || s.C % s.G != 0)
    ctx.fail("group " + std::to_string(s.G) + " must divide the input channels (" +
             std::to_string(s.C) + ")");
  if (wt[0] != s.C)
    ctx.fail("weights " + list(wt) + " expect " + std::to_string(wt[0]) + " input channels, X " +
             list(x) + " has " + std::to_string(s.C));
  if (ctx.has_input(2) && ctx.in_shape(2) != Shape{s.M_g * s.G})
    ctx.fail("bias " + list(ctx.in_shape(2)) + " must have shape [" + std::to_string(s.M_g * s.G) +
             "]");

  const size_t r = x.size() - 2;
  Window& w = s.w;
  w.in = spatial(x);
  w.k = n.attr_ints("kernel_shape", spatial(wt));
  if (w.k != spatial(wt))
    ctx.fail("kernel_shape " + list(w.k) + " differs from the weights' " + list(spatial(wt)));
  w.s = n.attr_ints("strides", std::vector<int64_t>(r, 1));
  w.d = n.attr_ints("dilations", std::vector<int64_t>(r, 1));
  std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(2 * r, 0));
  std::vector<int64_t> out_pad = n.attr_ints("output_padding", std::vector<int64_t>(r, 0));
  std::vector<int64_t> out_shape = n.attr_ints("output_shape", {});
  if (out_shape.size() == r + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (w.s.size() != r || w.d.size() != r || pads.size() != 2 * r || out_pad.size() != r ||
      (!out_shape.empty() && out_shape.size() != r))
    ctx.fail("strides, dilations, output_padding, output_shape (" + std::to_string(r) +
             " values) or pads (" + std::to_string(2 * r) + ") have the wrong length");
  for (const auto* v : {&w.k, &w.s, &w.d, &pads, &out_pad, &out_shape})
    for (int64_t x : *v)
      if (x >= (int64_t{1} << 31) || x <= -(int64_t{1} << 31))
        ctx.fail("kernel_shape, strides, dilations, pads, output_padding and output_shape must be below 2^31 in "
                 "magnitude, got " + list(*v));
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (!same && auto_pad != "NOTSET" && auto_pad != "VALID")
    ctx.fail("auto_pad '" + auto_pad + "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  w.pb.resize(r);
  w.pe.resize(r);
  w.out.resize(r);
  for (size_t i = 0; i < r; ++i) {
    if (w.k[i] < 1 || w.s[i] < 1 || w.d[i] < 1 || pads[i] < 0 || pads[i + r] < 0 || out_pad[i] < 0)
      ctx.fail(
          "kernel_shape, strides and dilations must be positive; pads and output_padding "
          "not negative");
    // The full (unpadded) extent that the input scatters into.
    const int64_t full = w.s[i] * (w.in[i] - 1) + out_pad[i] + (w.k[i] - 1) * w.d[i] + 1;
    if (same || !out_shape.empty()) {
      w.out[i] = !out_shape.empty() ? out_shape[i] : w.in[i] * w.s[i];
      const int64_t total = full - w.out[i];
      // With output_shape the pads attribute is ignored and the padding split as the spec's
      // equations say: SAME_UPPER puts the odd one at the end, everything else at the start (ONNX
      // Runtime likewise). An output longer than the full extent gets zeros at the end.
      if (same)
        w.pb[i] = auto_pad == "SAME_UPPER" ? floor_div(total, 2) : total - floor_div(total, 2);
      else
        w.pb[i] = total > 0 ? total - total / 2 : 0;
    } else {
      const bool valid = auto_pad == "VALID";
      w.pb[i] = valid ? 0 : pads[i];
      w.out[i] = full - (valid ? 0 : pads[i] + pads[i + r]);
    }
    w.pe[i] = full - w.out[i] - w.pb[i];
    if (w.out[i] < 1) ctx.fail("the output would be empty along spatial dim " + std::to_string(i));
  }
  return s;
}

void conv_transpose_infer(OpContext& ctx) {
  for (int i = 0; i < 3; ++i)
    if (ctx.has_input(i)) require_float(ctx, i);
  ConvTransposeShape s = conv_transpose_shape(ctx);
  Shape out{s.N, s.M_g * s.G};
  out.insert(out.end(), s.w.out.begin(), s.w.out.end());
  ctx.set_out(0, ctx.in_type(0), out);
}

void conv_transpose_build(BuildContext& ctx) {
  const ConvTransposeShape s = conv_transpose_shape(ctx);
  ctx.require_float_operands();
  const Window& w = s.w;
  const int64_t C_g = s.C / s.G, P = product(w.in), Q = s.M_g * product(w.k);
  if (s.N * s.G * P * Q > INT_MAX || s.N * s.M_g * s.G * product(w.out) > INT_MAX)
    ctx.unsupported("ConvTranspose intermediate beyond 2^31 elements is not supported");
  if (numel(ctx.out_shape(0)) == 0) return;

  // cols[n*G+g] = X[n][g]^T (P x C_g) times W[g] (C_g x Q).
  cl_mem cols = ctx.scratch(DType::Float32, {s.N * s.G * P * Q}).mem;
  GemmDesc d;
  d.M = P;
  d.N = Q;
  d.K = C_g;
  d.a_rs = 1;
  d.a_ks = P;
  d.a_off.resize(static_cast<size_t>(s.N * s.G));
  d.b_index.resize(d.a_off.size());
  for (int64_t b = 0; b < s.N * s.G; ++b) {
    d.a_off[b] = b * C_g * P;
    d.b_index[b] = b % s.G;
  }
  d.b_input = 1;
  d.b_ks = Q;
  d.b_ns = 1;
  d.b_bs = C_g * Q;
  d.b_count = s.G;
  d.a_storage = ctx.input(0).dtype;
  launch_gemm(ctx, ctx.in_buf(0), cols, d);

  auto in3 = to3(w.in, 1), out3 = to3(w.out, 1), k3 = to3(w.k, 1), st3 = to3(w.s, 1),
       d3 = to3(w.d, 1), pb3 = to3(w.pb, 0);
  std::vector<int32_t> p;
  for (auto* a : {&in3, &out3, &k3, &st3, &d3, &pb3})
    for (int64_t v : *a) p.push_back(static_cast<int32_t>(v));
  p.push_back(static_cast<int32_t>(s.M_g));
  p.push_back(static_cast<int32_t>(s.G));
  const bool has_bias = ctx.has_input(2);
  cl_mem y = ctx.out_buf(0);
  const std::string opts = std::string(has_bias ? "-DHAS_BIAS" : "") +
                           (has_bias ? BuildContext::storage_option("BS", ctx.input(2).dtype) : "") +
                           BuildContext::storage_option("YS", ctx.output(0).dtype);
  bool scatter = ctx.caps().is_cpu() && in3[0] == 1 && out3[0] == 1 && k3[0] == 1;
  for (int i = 1; i < 3; ++i)
    scatter &= k3[i] == st3[i] && d3[i] == 1 && pb3[i] >= 0 && out3[i] + pb3[i] <= in3[i] * k3[i];
  if (scatter) {
    ctx.launch("conv_transpose", "conv_transpose_f32_scatter2d", opts,
               {static_cast<size_t>(in3[1]), static_cast<size_t>(s.N * s.G)}, {1, 1}, cols,
               has_bias ? ctx.in_buf(2) : cols, y, ctx.params(p.data(), p.size() * sizeof(int32_t)));
    return;
  }
  ctx.launch("conv_transpose", "conv_transpose_f32_col2im", opts,
             {static_cast<size_t>(out3[2]), static_cast<size_t>(out3[0] * out3[1]),
              static_cast<size_t>(s.N * s.G * s.M_g)},
             {}, cols, has_bias ? ctx.in_buf(2) : cols, y, ctx.params(p.data(), p.size() * sizeof(int32_t)));
}

double conv_transpose_flops(const OpContext& ctx) {
  // Each input element scatters into (Cout/group) * prod(kernel) outputs.
  const Shape& w = ctx.in_shape(1);
  double k = 1;
  for (size_t d = 1; d < w.size(); ++d) k *= static_cast<double>(w[d]);
  return 2 * static_cast<double>(numel(ctx.in_shape(0))) * k +
         (ctx.has_input(2) ? static_cast<double>(numel(ctx.out_shape(0))) : 0);
}

// W is [Cin, Cout/group, k...]; output channel c of input channel ci is (ci / (Cin/group)) *
// Cout/group + co.
int64_t conv_transpose_affine_channels(const OpContext& ctx) {
  if (!ctx.is_const(1) || (ctx.has_input(2) && !ctx.is_const(2)) || ctx.in_shape(1).size() < 3) return -1;
  return ctx.in_shape(1)[1] * ctx.node().attr_int("group", 1);
}

void conv_transpose_scale_weights(const OpContext& ctx, Tensor& w, const std::vector<double>& scale) {
  const Shape& ws = w.shape;
  float* wd = w.data<float>();
  const int64_t group = ctx.node().attr_int("group", 1), cin = ws[0], cog = ws[1], per = numel(ws) / (cin * cog);
  for (int64_t ci = 0; ci < cin; ++ci)
    for (int64_t co = 0; co < cog; ++co) {
      const int64_t c = (ci / (cin / group)) * cog + co;
      for (int64_t k = 0; k < per; ++k) {
        float& x = wd[(ci * cog + co) * per + k];
        x = static_cast<float>(x * scale[c]);
      }
    }
}

const ChannelAffine kConvTransposeAffine{conv_transpose_affine_channels, conv_transpose_scale_weights, 1, 2, nullptr,
                                         nullptr};

}  // namespace

std::vector<VariantInfo> conv_variant_info() { return family_info(conv_family()); }

void add_conv_ops(std::vector<OpDef>& t) {
  t.push_back(
      OpDef("Conv", 1, conv_infer).build(conv_build).epilogue().flops(conv_flops).affine(&kConvAffine).any_storage());
  t.push_back(OpDef("ConvTranspose", 1, conv_transpose_infer)
                  .build(conv_transpose_build)
                  .flops(conv_transpose_flops)
                  .affine(&kConvTransposeAffine)
                  .any_storage());
}

}  // namespace oi
