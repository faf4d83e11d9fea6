// The audio front-end: DFT, STFT, HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix.
//
// DFT and STFT run on the device: as a matrix product of the frames with the DFT matrix (the gemm
// family) where the layout allows, else (kernels/audio.cl) one work-item per output bin, a direct
// sum over the samples with float32 accumulation and a twiddle table computed in double on the
// host (angle index k*n mod L in integers, so long transforms keep their accuracy). The window
// functions and MelWeightMatrix take only scalar inputs, which the plan knows (they are value
// inputs: a size computed on the device ends a plan segment), so they are computed on the host as
// constants of the plan, in double, and stored in their output_datatype.
#include <cmath>

#include "ops/build_context.hpp"
#include "ops/elementwise.hpp"
#include "ops/gemm_ops.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

namespace {

using ocl_infer::dtype_name;
using ocl_infer::shape_to_string;

constexpr double kPi = 3.14159265358979323846;

int64_t scalar_int(const OpContext& ctx, int i, const char* what) {
  const Tensor& t = ctx.in_data(i);
  if (t.numel() != 1) ctx.fail(std::string(what) + " must be a scalar, it has shape " + shape_to_string(t.shape));
  if (is_float(t.dtype)) ctx.fail(std::string(what) + " must be an integer");
  return host_get_i(t, 0);
}

double scalar_num(const OpContext& ctx, int i, const char* what) {
  const Tensor& t = ctx.in_data(i);
  if (t.numel() != 1) ctx.fail(std::string(what) + " must be a scalar, it has shape " + shape_to_string(t.shape));
  return host_get_f(t, 0);
}

DType output_datatype(const OpContext& ctx) {
  const auto t = static_cast<DType>(ctx.node().attr_int("output_datatype", static_cast<int64_t>(DType::Float32)));
  if (t != DType::Float32 && t != DType::Float16 && t != DType::Float64 && !is_integer(t))
    ctx.unsupported(std::string("output_datatype ") + dtype_name(t));
  return t;
}

Tensor typed(const std::vector<double>& v, const Shape& shape, DType t) {
  Tensor r(t, shape);
  for (size_t i = 0; i < v.size(); ++i) host_set_f(r, static_cast<int64_t>(i), v[i]);
  return r;
}

// ---- windows -----------------------------------------------------------------------------------
int64_t window_size(const OpContext& ctx) {
  const int64_t n = scalar_int(ctx, 0, "size");
  if (n < 0 || n > (int64_t{1} << 28)) ctx.fail("size " + std::to_string(n) + " is out of range");
  return n;
}

void window_infer(OpContext& ctx) {
  if (!ctx.is_const(0)) ctx.unsupported("the window size is computed on the device; this plan cannot read it back");
  ctx.set_out(0, output_datatype(ctx), {window_size(ctx)});
}

void window_host(OpContext& ctx) {
  const int64_t n = window_size(ctx);
  const bool periodic = ctx.node().attr_int("periodic", 1) != 0;
  const double N = periodic ? static_cast<double>(n) : static_cast<double>(n - 1);
  const std::string& op = ctx.node().op_type;
  std::vector<double> w(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    const double x = N > 0 ? 2 * kPi * static_cast<double>(k) / N : 0;
    if (op == "HannWindow") w[k] = 0.5 - 0.5 * std::cos(x);
    else if (op == "HammingWindow") w[k] = 25.0 / 46 - (1 - 25.0 / 46) * std::cos(x);
    else w[k] = 0.42 - 0.5 * std::cos(x) + 0.08 * std::cos(2 * x);
  }
  ctx.set_out_data(0, typed(w, {n}, output_datatype(ctx)));
}

// ---- MelWeightMatrix -----------------------------------------------------------------------------
struct MelSpec {
  int64_t bins, dft_length, rate;
  double lower, upper;
};

MelSpec mel_spec(const OpContext& ctx) {
  for (int i = 0; i < 5; ++i)
    if (!ctx.is_const(i)) ctx.unsupported("input " + std::to_string(i) + " is computed on the device; this plan cannot read it back");
  MelSpec s{scalar_int(ctx, 0, "num_mel_bins"), scalar_int(ctx, 1, "dft_length"), scalar_int(ctx, 2, "sample_rate"),
            scalar_num(ctx, 3, "lower_edge_hertz"), scalar_num(ctx, 4, "upper_edge_hertz")};
  if (s.bins <= 0 || s.bins > 1 << 20) ctx.fail("num_mel_bins " + std::to_string(s.bins) + " must be in [1, 2^20]");
  if (s.dft_length <= 0 || s.dft_length > 1 << 24) ctx.fail("dft_length " + std::to_string(s.dft_length) + " must be positive");
  if (s.rate <= 0) ctx.fail("sample_rate " + std::to_string(s.rate) + " must be positive");
  if (!(s.lower >= 0) || !(s.upper > s.lower) || !(s.upper <= s.rate / 2.0 + 1e-6))
    ctx.fail("the band must satisfy 0 <= lower_edge_hertz < upper_edge_hertz <= sample_rate / 2");
  return s;
}

void mel_infer(OpContext& ctx) {
  const MelSpec s = mel_spec(ctx);
  ctx.set_out(0, output_datatype(ctx), {s.dft_length / 2 + 1, s.bins});
}

// As the ONNX reference computes it: bin edges equally spaced in mel (num_mel_bins + 2 of them,
// the step being the band over num_mel_bins + 2), mapped to DFT bins by floor((L + 1) f / rate),
// triangles between neighbouring edges (a zero-width rise is a single 1).
void mel_host(OpContext& ctx) {
  const MelSpec s = mel_spec(ctx);
  const int64_t rows = s.dft_length / 2 + 1;
  const auto mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  const double lo = mel(s.lower), step = (mel(s.upper) - lo) / static_cast<double>(s.bins + 2);
  std::vector<int64_t> edge(static_cast<size_t>(s.bins + 2));
  for (int64_t k = 0; k < s.bins + 2; ++k) {
    const double hz = 700 * (std::pow(10.0, (static_cast<double>(k) * step + lo) / 2595) - 1);
    edge[k] = static_cast<int64_t>(std::floor(static_cast<double>(s.dft_length + 1) * hz / static_cast<double>(s.rate)));
  }
  std::vector<double> w(static_cast<size_t>(rows * s.bins), 0.0);
  auto at = [&](int64_t row, int64_t col) -> double& {
    if (row < 0 || row >= rows) ctx.fail("a mel band edge falls outside the spectrum (bin " + std::to_string(row) + ")");
    return w[row * s.bins + col];
  };
  for (int64_t i = 0; i < s.bins; ++i) {
    const int64_t left = edge[i], center = edge[i + 1], right = edge[i + 2];
    if (center == left) {
      at(center, i) = 1;
    } else {
      for (int64_t j = left; j <= center; ++j)
        at(j, i) = static_cast<double>(j - left) / static_cast<double>(center - left);
    }
    for (int64_t j = center; j < right; ++j) at(j, i) = static_cast<double>(right - j) / static_cast<double>(right - center);
  }
  ctx.set_out_data(0, typed(w, {rows, s.bins}, output_datatype(ctx)));
}

// ---- DFT -----------------------------------------------------------------------------------------
struct DftSpec {
  int64_t outer = 1, n_in = 0, inner = 1, complex = 1, length = 0, bins = 0, axis = 1;
  bool inverse = false, onesided = false;
};

void require_float_signal(const OpContext& ctx, int i, const char* what) {
  const DType t = ctx.in_type(i);
  if (t != DType::Float32 && t != DType::Float16)
    ctx.unsupported(std::string(what) + " of type " + dtype_name(t) + " (float32 and float16 are supported)");
}

DftSpec dft_spec(const OpContext& ctx) {
  DftSpec s;
  require_float_signal(ctx, 0, "input");
  const Shape& x = ctx.in_shape(0);
  const int64_t rank = static_cast<int64_t>(x.size());
  if (rank < 2) ctx.fail("input must have rank >= 2 ([..., signal, 1 or 2]), not " + shape_to_string(x));
  s.complex = x.back();
  if (s.complex != 1 && s.complex != 2) ctx.fail("the last dim of input must be 1 (real) or 2 (complex), not " + std::to_string(s.complex));
  // DFT-20 moves axis to an input (a scalar, default -2: the last signal dim).
  int64_t axis = ctx.node().attr_int("axis", 1);
  if (ctx.opset() >= 20) {
    axis = -2;
    if (ctx.has_input(2)) {
      if (!ctx.is_const(2)) ctx.unsupported("an axis computed on the device; this plan cannot read it back");
      axis = scalar_int(ctx, 2, "axis");
    }
  }
  if (axis < -rank || axis >= rank) ctx.fail("axis " + std::to_string(axis) + " is out of range for " + shape_to_string(x));
  if (axis < 0) axis += rank;
  if (axis == rank - 1) ctx.fail("axis must not be the last dim (it holds the real and imaginary parts)");
  s.axis = axis;
  for (int64_t k = 0; k < axis; ++k) s.outer *= x[k];
  for (int64_t k = axis + 1; k < rank - 1; ++k) s.inner *= x[k];
  s.n_in = x[axis];
  s.length = s.n_in;
  s.inverse = ctx.node().attr_int("inverse", 0) != 0;
  s.onesided = ctx.node().attr_int("onesided", 0) != 0;
  // inverse + onesided: the inverse of a real signal's one-sided spectrum (numpy's irfft), a
  // real output of dft_length samples (default 2 (bins - 1)).
  const bool irfft = s.inverse && s.onesided;
  if (irfft) s.length = 2 * (s.n_in - 1);
  if (ctx.has_input(1)) {
    if (!ctx.is_const(1)) ctx.unsupported("dft_length is computed on the device; this plan cannot read it back");
    s.length = scalar_int(ctx, 1, "dft_length");
  }
  if (s.length <= 0) ctx.fail("the DFT length must be positive, not " + std::to_string(s.length));
  if (s.length > int64_t{1} << 26) ctx.fail("the DFT length " + std::to_string(s.length) + " is too large");
  if (s.onesided && !s.inverse && s.complex == 2) ctx.fail("onesided output needs a real input (the last dim 1)");
  s.bins = irfft ? s.length : s.onesided ? s.length / 2 + 1 : s.length;
  return s;
}

void dft_infer(OpContext& ctx) {
  const DftSpec s = dft_spec(ctx);
  Shape out = ctx.in_shape(0);
  out[s.axis] = s.bins;
  out.back() = s.inverse && s.onesided ? 1 : 2;
  ctx.set_out(0, ctx.in_type(0), out);
}

// cos/sin of 2 pi m / L for m in [0, L), interleaved.
std::vector<float> twiddles(int64_t length) {
  std::vector<float> t(static_cast<size_t>(2 * length));
  for (int64_t m = 0; m < length; ++m) {
    const double a = 2 * kPi * static_cast<double>(m) / static_cast<double>(length);
    t[2 * m] = static_cast<float>(std::cos(a));
    t[2 * m + 1] = static_cast<float>(std::sin(a));
  }
  return t;
}

// The launch shared by DFT and STFT: sample n of transform (o, i) is at
// (o / frames) * batch_stride + (o % frames) * frame_stride + n * n_stride + i * complex.
struct DftLaunch {
  int64_t transforms = 0, frames = 1, batch_stride = 0, frame_stride = 0, n_stride = 0, inner = 1, complex = 1;
  int64_t samples = 0, length = 0, bins = 0;
  bool inverse = false;
  bool irfft = false;  // one-sided spectrum in, real signal out (dft_direct only)
  cl_mem window = nullptr;
  DType window_storage = DType::Float32;
};

// The transform as a matrix product (the gemm family's kernels) when each transform's samples are
// one strided row (inner 1; complex samples contiguous) and the window, if any, is a constant: A =
// the frames (overlapping rows for an STFT), B = [samples * cplx, bins * 2] the DFT matrix with the
// window and 1/L folded in. 2-core Xeon, 16,000 samples, frame 400, step 160: 7.5 ms direct, see
// the README for the product. Returns false when the shape does not fit.
bool dft_as_gemm(BuildContext& ctx, const DftLaunch& d, const Tensor* window) {
  const int64_t K = d.samples * d.complex, N = d.bins * 2;
  if (d.inner != 1 || (d.complex == 2 && d.n_stride != 2) || (d.window && !window) || K * N > (int64_t{1} << 22))
    return false;
  if (ctx.input(0).dtype != DType::Float32 && ctx.input(0).dtype != DType::Float16) return false;
  Tensor b(DType::Float32, {K, N});
  const double sign = d.inverse ? 1 : -1, scale = d.inverse ? 1.0 / static_cast<double>(d.length) : 1.0;
  Tensor widened;
  const Tensor* w = window ? &as_float32(*window, &widened) : nullptr;
  for (int64_t n = 0; n < d.samples; ++n) {
    const double wn = (w ? w->data<float>()[n] : 1.0) * scale;
    for (int64_t k = 0; k < d.bins; ++k) {
      const double a = 2 * kPi * static_cast<double>((k * n) % d.length) / static_cast<double>(d.length);
      const double c = std::cos(a) * wn, s = sign * std::sin(a) * wn;
      // (xr + i xi)(c + i s) = (xr c - xi s) + i (xr s + xi c)
      float* row = b.data<float>() + n * d.complex * N;
      row[2 * k] = static_cast<float>(c);
      row[2 * k + 1] = static_cast<float>(s);
      if (d.complex == 2) {
        row[N + 2 * k] = static_cast<float>(-s);
        row[N + 2 * k + 1] = static_cast<float>(c);
      }
    }
  }
  const int64_t batches = d.transforms / d.frames;
  GemmDesc g;
  g.M = d.frames;
  g.N = N;
  g.K = K;
  g.a_rs = d.frame_stride;
  g.a_ks = 1;
  if (d.complex == 1) g.a_ks = d.n_stride;
  g.a_off.resize(static_cast<size_t>(batches));
  for (int64_t i = 0; i < batches; ++i) g.a_off[static_cast<size_t>(i)] = i * d.batch_stride;
  if (d.frames == 1) g.a_rs = K;  // one row per batch: any row stride
  g.b_host = &b;
  g.b_ks = N;
  g.b_ns = 1;
  g.a_storage = ctx.input(0).dtype;
  g.y_storage = ctx.output(0).dtype;
  launch_gemm(ctx, ctx.in_buf(0), ctx.out_buf(0), g);
  return true;
}

void launch_dft(BuildContext& ctx, const DftLaunch& d, const Tensor* window = nullptr) {
  if (d.transforms == 0 || d.bins == 0 || d.inner == 0) return;
  if (!d.irfft && dft_as_gemm(ctx, d, window)) return;
  for (int64_t v : {d.transforms * d.bins * d.inner * 2, d.length * d.length})
    if (v > (int64_t{1} << 62)) ctx.unsupported("a transform this large");
  const std::string opts = BuildContext::storage_option("SX", ctx.input(0).dtype) +
                           BuildContext::storage_option("SY", ctx.output(0).dtype) +
                           BuildContext::storage_option("SW", d.window_storage) + (d.inverse ? " -DINVERSE" : "") +
                           (d.irfft ? " -DIRFFT" : "") + (d.window ? " -DWINDOW" : "");
  const cl_mem tw = ctx.constant_floats(twiddles(d.length));
  ctx.launch("audio", "dft_direct", opts,
             {static_cast<size_t>(d.bins), static_cast<size_t>(d.inner), static_cast<size_t>(d.transforms)}, {},
             ctx.in_buf(0), ctx.out_buf(0), tw, d.window ? d.window : tw, d.frames, d.batch_stride, d.frame_stride,
             d.n_stride, d.complex, d.samples, d.length, d.bins);
}

void dft_build(BuildContext& ctx) {
  const DftSpec s = dft_spec(ctx);
  DftLaunch d;
  d.transforms = s.outer;
  d.batch_stride = s.n_in * s.inner * s.complex;
  d.n_stride = s.inner * s.complex;
  d.inner = s.inner;
  d.complex = s.complex;
  d.samples = std::min(s.n_in, s.length);  // dft_length pads with zeros or truncates
  d.length = s.length;
  d.bins = s.bins;
  d.inverse = s.inverse;
  d.irfft = s.inverse && s.onesided;
  if (d.irfft) d.samples = std::min(s.n_in, s.length / 2 + 1);  // the bins a length-L real signal has
  launch_dft(ctx, d);
}

double dft_flops(const OpContext& ctx) {
  const DftSpec s = dft_spec(ctx);
  return 8.0 * static_cast<double>(s.outer * s.inner * s.bins * std::min(s.n_in, s.length));
}

// ---- STFT ----------------------------------------------------------------------------------------
struct StftSpec {
  int64_t batch = 0, signal = 0, complex = 1, step = 0, frame = 0, frames = 0, bins = 0;
  bool window = false;
};

StftSpec stft_spec(const OpContext& ctx) {
  StftSpec s;
  require_float_signal(ctx, 0, "signal");
  const Shape& x = ctx.in_shape(0);
  if (x.size() != 3 || (x[2] != 1 && x[2] != 2))
    ctx.fail("signal must be [batch, length, 1 or 2], not " + shape_to_string(x));
  s.batch = x[0];
  s.signal = x[1];
  s.complex = x[2];
  if (!ctx.has_input(1)) ctx.fail("frame_step is required");
  if (!ctx.is_const(1)) ctx.unsupported("frame_step is computed on the device; this plan cannot read it back");
  s.step = scalar_int(ctx, 1, "frame_step");
  if (s.step <= 0) ctx.fail("frame_step must be positive, not " + std::to_string(s.step));
  s.window = ctx.has_input(2);
  if (s.window) {
    require_float_signal(ctx, 2, "window");
    if (ctx.in_shape(2).size() != 1) ctx.fail("window must be 1-D, not " + shape_to_string(ctx.in_shape(2)));
    s.frame = ctx.in_shape(2)[0];
  }
  if (ctx.has_input(3)) {
    if (!ctx.is_const(3)) ctx.unsupported("frame_length is computed on the device; this plan cannot read it back");
    const int64_t fl = scalar_int(ctx, 3, "frame_length");
    if (s.window && fl != s.frame)
      ctx.fail("frame_length " + std::to_string(fl) + " does not match the window's length " + std::to_string(s.frame));
    s.frame = fl;
  }
  if (!s.window && !ctx.has_input(3)) ctx.fail("needs a window or a frame_length");
  if (s.frame <= 0) ctx.fail("the frame length must be positive, not " + std::to_string(s.frame));
  if (s.frame > s.signal)
    ctx.fail("the frame length " + std::to_string(s.frame) + " is longer than the signal (" + std::to_string(s.signal) + ")");
  const bool onesided = ctx.node().attr_int("onesided", 1) != 0;
  if (onesided && s.complex == 2) ctx.fail("onesided output needs a real signal (the last dim 1); set onesided = 0");
  s.frames = 1 + (s.signal - s.frame) / s.step;
  s.bins = onesided ? s.frame / 2 + 1 : s.frame;
  return s;
}

void stft_infer(OpContext& ctx) {
  const StftSpec s = stft_spec(ctx);
  ctx.set_out(0, ctx.in_type(0), {s.batch, s.frames, s.bins, 2});
}

void stft_build(BuildContext& ctx) {
  const StftSpec s = stft_spec(ctx);
  DftLaunch d;
  d.transforms = s.batch * s.frames;
  d.frames = s.frames;
  d.batch_stride = s.signal * s.complex;
  d.frame_stride = s.step * s.complex;
  d.n_stride = s.complex;
  d.complex = s.complex;
  d.samples = s.frame;
  d.length = s.frame;
  d.bins = s.bins;
  if (s.window) {
    d.window = ctx.in_buf(2);
    d.window_storage = ctx.input(2).dtype;
  }
  launch_dft(ctx, d, s.window && ctx.is_const(2) ? &ctx.in_data(2) : nullptr);
}

double stft_flops(const OpContext& ctx) {
  const StftSpec s = stft_spec(ctx);
  return 8.0 * static_cast<double>(s.batch * s.frames * s.bins * s.frame);
}

}  // namespace

void add_audio_ops(std::vector<OpDef>& t) {
  for (const char* w : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    t.push_back(OpDef(w, 17, window_infer).host(window_host).value_inputs({0}));
  t.push_back(OpDef("MelWeightMatrix", 17, mel_infer).host(mel_host).value_inputs({0, 1, 2, 3, 4}));
  t.push_back(OpDef("DFT", 17, dft_infer).build(dft_build).value_inputs({1}).flops(dft_flops).any_storage());
  t.push_back(OpDef("DFT", 20, dft_infer).build(dft_build).value_inputs({1, 2}).flops(dft_flops).any_storage());
  t.push_back(OpDef("STFT", 17, stft_infer).build(stft_build).value_inputs({1, 3}).flops(stft_flops).any_storage());
}

}  // namespace oi
