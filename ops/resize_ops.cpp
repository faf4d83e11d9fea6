// Resize (opsets 10, 11, 13, 18, 19) and Upsample (7, 9): nearest, linear and cubic over any set of
// dims, linear and cubic with antialias (Resize-18).
// The host maps every output coordinate of every resized dim to source taps and weights in double,
// exactly as the ONNX reference does; kernels/resize.cl only gathers and sums.
#include <algorithm>
#include <cmath>

#include "ops/copy_view.hpp"
#include "ops/elementwise.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

namespace {

using ocl_infer::shape_to_string;

constexpr int kMaxResized = 8;  // MAX_RESIZED in kernels/resize.cl

struct ResizeSpec {
  std::string mode;     // nearest | linear | cubic
  std::string coord;    // coordinate_transformation_mode
  std::string nearest;  // nearest_mode; "simple" for Upsample and Resize-10
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;  // Resize-18: linear and cubic taps widened by 1 / scale when shrinking
  double extrapolation = 0;
  std::vector<double> scales, roi;  // roi: rank starts then rank ends (tf_crop_and_resize)
  Shape out;
};

std::vector<double> float_values(OpContext& ctx, int i) {
  const Tensor& t = ctx.in_data(i);
  if (!is_float(t.dtype)) ctx.fail("input " + std::to_string(i) + " must be a float tensor");
  std::vector<double> v(t.numel());
  for (int64_t k = 0; k < t.numel(); ++k) v[k] = host_get_f(t, k);
  return v;
}

ResizeSpec resize_spec(OpContext& ctx) {
  const Node& n = ctx.node();
  const Shape& in = ctx.in_shape(0);
  const size_t r = in.size();
  const bool upsample = n.op_type == "Upsample";
  const bool v10 = upsample || ctx.opset() < 11;
  ResizeSpec s;
  s.mode = n.attr_string("mode", "nearest");
  if (s.mode == "bilinear") s.mode = "linear";  // Upsample-1 spelling
  if (s.mode != "nearest" && s.mode != "linear" && s.mode != "cubic")
    ctx.fail("mode must be nearest, linear or cubic, not '" + s.mode + "'");
  if (v10 && s.mode == "cubic") ctx.fail("mode cubic needs Resize opset 11 or later");
  if (v10) {
    s.coord = "asymmetric";
    s.nearest = "simple";
  } else {
    s.coord = n.attr_string("coordinate_transformation_mode", "half_pixel");
    s.nearest = n.attr_string("nearest_mode", "round_prefer_floor");
    s.cubic_a = n.attr_float("cubic_coeff_a", -0.75f);
    s.exclude_outside = n.attr_int("exclude_outside", 0) != 0;
    s.extrapolation = n.attr_float("extrapolation_value", 0.f);
    static const char* kCoords[] = {"half_pixel",           "asymmetric",         "align_corners",
                                    "pytorch_half_pixel",   "tf_half_pixel_for_nn", "tf_crop_and_resize",
                                    "half_pixel_symmetric"};
    bool known = false;
    for (const char* c : kCoords) known |= s.coord == c;
    if (!known) ctx.fail("unknown coordinate_transformation_mode '" + s.coord + "'");
    if (s.coord == "half_pixel_symmetric" && ctx.opset() < 19)
      ctx.fail("coordinate_transformation_mode 'half_pixel_symmetric' needs opset 19 or newer");
    if (s.nearest != "round_prefer_floor" && s.nearest != "round_prefer_ceil" &&
        s.nearest != "floor" && s.nearest != "ceil")
      ctx.fail("unknown nearest_mode '" + s.nearest + "'");
    // antialias (Resize-18) applies to linear and cubic; nearest has no filter to widen.
    s.antialias = ctx.opset() >= 18 && n.attr_int("antialias", 0) != 0 && s.mode != "nearest";
  }
  // Resize-18's axes: scales, sizes and roi name only these dims (the others keep their size).
  std::vector<int64_t> axes;
  if (!v10 && ctx.opset() >= 18 && n.has("axes")) {
    axes = ctx.axes(n.attr_ints("axes", {}), static_cast<int64_t>(r));
  } else {
    for (size_t d = 0; d < r; ++d) axes.push_back(static_cast<int64_t>(d));
  }
  const std::string policy = !v10 && ctx.opset() >= 18 ? n.attr_string("keep_aspect_ratio_policy", "stretch") : "stretch";
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    ctx.fail("keep_aspect_ratio_policy must be stretch, not_larger or not_smaller, not '" + policy + "'");
  // A per-axes list spread over every dim (`fill` for the dims axes leave out).
  auto spread = [&](const std::vector<double>& v, std::vector<double> fill) {
    for (size_t i = 0; i < axes.size() && i < v.size(); ++i) fill[axes[i]] = v[i];
    return fill;
  };

  // Scales from the attribute (Upsample-7), input 1 (Upsample-9, Resize-10) or input 2;
  // sizes from input 3.
  std::vector<double> scales;
  bool have_sizes = false;
  if (upsample && ctx.opset() < 9) {
    for (float f : n.attr_floats("scales", {})) scales.push_back(f);
  } else if (v10) {
    scales = float_values(ctx, 1);
  } else {
    if (ctx.has_input(2)) scales = float_values(ctx, 2);
    if (!scales.empty()) {
      if (scales.size() != axes.size())
        ctx.fail("scales must have one entry per " + std::string(n.has("axes") ? "axis of axes" : "input dim") + " (" +
                 std::to_string(axes.size()) + "), got " + std::to_string(scales.size()));
      scales = spread(scales, std::vector<double>(r, 1.0));
    }
    if (ctx.has_input(3)) {
      auto sizes = ctx.in_ints(3);
      if (!sizes.empty()) {
        if (!scales.empty()) ctx.fail("only one of scales and sizes may be given");
        if (sizes.size() != axes.size())
          ctx.fail("sizes " + shape_to_string(sizes) + " must have one entry per " +
                   (n.has("axes") ? "axis of axes " + shape_to_string(axes) : "input dim " + shape_to_string(in)));
        for (int64_t z : sizes)
          if (z < 0) ctx.fail("sizes " + shape_to_string(sizes) + " has a negative dim");
        std::vector<double> want(r);
        for (size_t d = 0; d < r; ++d) want[d] = static_cast<double>(in[d]);
        for (size_t i = 0; i < axes.size(); ++i) want[axes[i]] = static_cast<double>(sizes[i]);
        have_sizes = true;
        if (policy == "stretch") {
          for (size_t d = 0; d < r; ++d) {
            s.out.push_back(static_cast<int64_t>(want[d]));
            scales.push_back(in[d] == 0 ? 1.0 : want[d] / static_cast<double>(in[d]));
          }
        } else {
          // One scale for the axes, the smallest (not_larger) or largest (not_smaller) of
          // sizes / in; sizes then round(scale * in), half up.
          double scale = policy == "not_larger" ? INFINITY : 0.0;
          for (int64_t a : axes) {
            const double f = in[a] == 0 ? 1.0 : want[a] / static_cast<double>(in[a]);
            scale = policy == "not_larger" ? std::min(scale, f) : std::max(scale, f);
          }
          scales.assign(r, 1.0);
          for (size_t d = 0; d < r; ++d) s.out.push_back(in[d]);
          for (int64_t a : axes) {
            scales[a] = scale;
            s.out[a] = static_cast<int64_t>(scale * static_cast<double>(in[a]) + 0.5);
          }
        }
      }
    }
    if (s.coord == "tf_crop_and_resize") {
      s.roi = ctx.has_input(1) ? float_values(ctx, 1) : std::vector<double>{};
      if (s.roi.size() != 2 * axes.size())
        ctx.fail("roi must have 2 x " + std::string(n.has("axes") ? "the axes' count" : "rank") + " (" +
                 std::to_string(2 * axes.size()) + ") entries for tf_crop_and_resize");
      const std::vector<double> starts(s.roi.begin(), s.roi.begin() + axes.size()),
          ends(s.roi.begin() + axes.size(), s.roi.end());
      const std::vector<double> full_starts = spread(starts, std::vector<double>(r, 0.0)),
                                full_ends = spread(ends, std::vector<double>(r, 1.0));
      s.roi = full_starts;
      s.roi.insert(s.roi.end(), full_ends.begin(), full_ends.end());
    }
  }
  if (scales.size() != r)
    ctx.fail(std::string(have_sizes ? "sizes" : "scales") + " must have one entry per input dim " +
             shape_to_string(in) + ", got " + std::to_string(scales.size()));
  if (!have_sizes) {
    for (size_t d = 0; d < r; ++d) {
      if (!(scales[d] > 0) || static_cast<double>(in[d]) * scales[d] > 1e12)
        ctx.fail("scales must be positive and give a sane size");
      // floor(in * scale), in double like the reference (a float32 scale times an int dim).
      s.out.push_back(static_cast<int64_t>(std::floor(static_cast<double>(in[d]) * scales[d])));
    }
  }
  s.scales = scales;
  return s;
}

void resize_infer(OpContext& ctx) {
  ResizeSpec s = resize_spec(ctx);
  DType t = ctx.in_type(0);
  if (s.mode != "nearest" && t != DType::Float32 && t != DType::Float64 && t != DType::Float16)
    ctx.unsupported(std::string(s.mode) + " resize of " + ocl_infer::dtype_name(t) +
                    " tensors is not supported (float32 and float64 are)");
  // The per-dim index tables are int32 and built on the host, one entry per output coordinate.
  for (int64_t d : s.out)
    if (d >= (int64_t{1} << 31))
      ctx.unsupported("an output dim of " + std::to_string(d) + " (2^31 or more) is not supported: output " +
                      ocl_infer::shape_to_string(s.out));
  ctx.set_out(0, t, s.out);
}

// The taps of one output coordinate `x` of a dim of length `in` resized to `out`.
struct Taps {
  std::vector<int> idx;
  std::vector<double> w;
};

// The cubic convolution kernel (Keys) at distance u >= 0, with coefficient a.
double keys(double u, double a) {
  if (u <= 1) return ((a + 2) * u - (a + 3)) * u * u + 1;
  if (u < 2) return ((a * u - 5 * a) * u + 8 * a) * u - 4 * a;
  return 0;
}

std::vector<double> cubic_coeffs(double r, double a) {
  return {keys(r + 1, a), keys(r, a), keys(1 - r, a), keys(2 - r, a)};
}

// Taps per output coordinate of dim d: 1 (nearest), 2 (linear), 4 (cubic), or with antialias the
// filter's footprint widened by 1 / scale when the dim shrinks (the reference's
// 2 - 2 * (floor(-support / scale) + 1), support 1 for linear and 2 for cubic).
int taps_of(const ResizeSpec& s, size_t d) {
  if (s.mode == "nearest") return 1;
  const double support = s.mode == "linear" ? 1 : 2;
  if (!s.antialias) return static_cast<int>(2 * support);
  const double scale = std::min(s.scales[d], 1.0);
  return static_cast<int>(std::min(2 - 2 * (std::floor(-support / scale) + 1), double(1 << 30)));
}

Taps taps_for(const ResizeSpec& s, size_t d, int64_t x, int64_t in) {
  const double scale = s.scales[d];
  const double out_w = scale * static_cast<double>(in);  // the reference's output_width
  const double xd = static_cast<double>(x);
  double xo;
  if (s.coord == "half_pixel") {
    xo = (xd + 0.5) / scale - 0.5;
  } else if (s.coord == "pytorch_half_pixel") {
    xo = out_w > 1 ? (xd + 0.5) / scale - 0.5 : 0;
  } else if (s.coord == "align_corners") {
    xo = out_w == 1 ? 0 : xd * static_cast<double>(in - 1) / (out_w - 1);
  } else if (s.coord == "half_pixel_symmetric") {
    // Resize-19: half_pixel with the output's centre on the input's where the output size was
    // rounded down from in * scale.
    const double adjustment = static_cast<double>(s.out[d]) / out_w;
    xo = static_cast<double>(in) / 2 * (1 - adjustment) + (xd + 0.5) / scale - 0.5;
  } else if (s.coord == "tf_half_pixel_for_nn") {
    xo = (xd + 0.5) / scale;
  } else if (s.coord == "tf_crop_and_resize") {
    const double r0 = s.roi[d], r1 = s.roi[s.roi.size() / 2 + d];
    const double span = static_cast<double>(in - 1);
    xo = out_w > 1 ? xd * (r1 - r0) * span / (out_w - 1) : 0.5 * (r1 - r0) * span;
    xo += r0 * span;
  } else {  // asymmetric
    xo = xd / scale;
  }
  Taps t;
  auto clamp = [in](int64_t i) {
    return static_cast<int>(std::min<int64_t>(std::max<int64_t>(i, 0), in - 1));
  };
  if (s.coord == "tf_crop_and_resize" && (xo < 0 || xo > static_cast<double>(in - 1))) {
    const size_t taps = static_cast<size_t>(taps_of(s, d));
    t.idx.assign(taps, -1);
    t.w.assign(taps, 0);
    return t;
  }
  if (s.antialias) {
    // As the ONNX reference: the sample's left neighbour `base` (xo - 1 when xo is a whole
    // number), ratio = xo - base in (0, 1]; taps base + i for i in [start, start + n) weighted by
    // the filter at scale * (i - ratio), normalised to sum 1; indices clamped (edge padding).
    const double sc = std::min(scale, 1.0);
    double base = std::floor(xo), ratio = xo - base;
    if (ratio == 0) base -= 1, ratio = 1;
    const int n = taps_of(s, d), start = 1 - n / 2;
    double sum = 0;
    for (int i = start; i < start + n; ++i) {
      const double u = std::fabs(sc * (i - ratio));
      const double w = s.mode == "linear" ? std::max(0.0, 1 - u) : keys(u, s.cubic_a);
      t.idx.push_back(clamp(static_cast<int64_t>(base) + i));
      t.w.push_back(w);
      sum += w;
    }
    for (double& w : t.w) w /= sum;
    if (s.exclude_outside) {
      double kept = 0;
      for (int k = 0; k < n; ++k) {
        const int64_t i = static_cast<int64_t>(base) + start + k;
        if (i < 0 || i >= in) t.w[k] = 0;
        kept += t.w[k];
      }
      if (kept != 0)
        for (double& w : t.w) w /= kept;
    }
    return t;
  }
  const double fl = std::floor(xo);
  const double ratio = xo - fl;
  const int64_t i0 = static_cast<int64_t>(fl);
  if (s.mode == "nearest") {
    int64_t i;
    // "simple" is what ONNX Runtime does for Upsample and Resize-10, which predate nearest_mode:
    // truncate when enlarging, round up when shrinking.
    if (s.nearest == "simple")
      i = scale < 1 ? static_cast<int64_t>(std::ceil(xo)) : i0;
    else if (ratio == 0)
      i = i0;
    else if (s.nearest == "round_prefer_floor")
      i = ratio <= 0.5 ? i0 : i0 + 1;
    else if (s.nearest == "round_prefer_ceil")
      i = ratio < 0.5 ? i0 : i0 + 1;
    else if (s.nearest == "floor")
      i = i0;
    else
      i = i0 + 1;  // ceil
    t.idx = {clamp(i)};
    t.w = {1};
  } else if (s.mode == "linear") {
    t.idx = {clamp(i0), clamp(i0 + 1)};
    t.w = {1 - ratio, ratio};
  } else {
    t.w = cubic_coeffs(ratio, s.cubic_a);
    double sum = 0;
    for (int k = 0; k < 4; ++k) {
      const int64_t i = i0 - 1 + k;
      if (s.exclude_outside && (i < 0 || i >= in)) t.w[k] = 0;
      sum += t.w[k];
      t.idx.push_back(clamp(i));
    }
    if (s.exclude_outside && sum != 0)
      for (double& w : t.w) w /= sum;
  }
  return t;
}

void resize_build(BuildContext& ctx) {
  const ResizeSpec s = resize_spec(ctx);
  const Shape& in = ctx.in_shape(0);
  const Shape& out = ctx.out_shape(0);
  const int64_t n = numel(out);
  if (n == 0) return;
  const int ndim = static_cast<int>(in.size());
  for (int64_t d : in)
    if (d == 0)
      ctx.fail("cannot resize an empty input " + shape_to_string(in) + " to " +
               shape_to_string(out));
  // The tables hold taps_of(d) entries per output coordinate of each dim (antialiased shrinking
  // by a factor f: about 2f or 4f of them); refused before they are built where they would be huge.
  double entries = 0;
  for (int d = 0; d < ndim; ++d) entries += static_cast<double>(out[d]) * taps_of(s, static_cast<size_t>(d));
  if (entries > double(int64_t{1} << 27))
    ctx.unsupported("resizing " + shape_to_string(in) + " to " + shape_to_string(out) +
                    " takes tap tables of more than 2^27 entries (antialiased shrinking by a large factor)");

  // Tables for the dims whose mapping is not the identity, each with its own tap count.
  std::vector<int64_t> resized;  // (dim, table offset) pairs
  std::vector<int64_t> dim_taps;  // per resized dim
  std::vector<int32_t> tidx;
  std::vector<double> tw;
  for (int d = 0; d < ndim; ++d) {
    const int taps = taps_of(s, static_cast<size_t>(d));
    std::vector<int32_t> di;
    std::vector<double> dw;
    bool identity = in[d] == out[d];
    for (int64_t x = 0; x < out[d]; ++x) {
      Taps t = taps_for(s, d, x, in[d]);
      // The identity: one tap of weight 1 at x, the others weightless.
      int weighted = 0;
      for (size_t k = 0; k < t.w.size(); ++k)
        if (t.w[k] != 0) {
          ++weighted;
          identity &= t.idx[k] == x && t.w[k] == 1;
        }
      identity &= weighted == 1;
      di.insert(di.end(), t.idx.begin(), t.idx.end());
      dw.insert(dw.end(), t.w.begin(), t.w.end());
    }
    if (identity) continue;
    resized.insert(resized.end(), {d, static_cast<int64_t>(tidx.size())});
    dim_taps.push_back(taps);
    tidx.insert(tidx.end(), di.begin(), di.end());
    tw.insert(tw.end(), dw.begin(), dw.end());
  }
  const int k = static_cast<int>(resized.size() / 2);
  if (k > kMaxResized)
    ctx.unsupported("resizing more than " + std::to_string(kMaxResized) + " dims at once");
  // The kernel visits the product of the dims' tap counts per output (an int).
  double combos = 1;
  for (int64_t t : dim_taps) combos *= static_cast<double>(t);
  if (combos > double(1 << 24))
    ctx.unsupported(std::to_string(static_cast<int64_t>(combos)) + " taps per output over " + std::to_string(k) +
                    " resized dims (antialiased shrinking by a large factor) are more than this kernel takes (2^24)");
  if (tidx.empty()) tidx.push_back(0);  // OpenCL buffers may not be empty

  std::vector<int64_t> p = out;
  auto st = strides_of(in);
  p.insert(p.end(), st.begin(), st.end());
  p.insert(p.end(), resized.begin(), resized.end());
  p.insert(p.end(), dim_taps.begin(), dim_taps.end());
  cl_mem pm = ctx.params(p.data(), p.size() * sizeof(int64_t));
  cl_mem im = ctx.params(tidx.data(), tidx.size() * sizeof(int32_t));
  const size_t local = ctx.caps().linear_local();
  std::vector<size_t> global{round_up(static_cast<size_t>(n), local)};
  const DType t = ctx.in_type(0);
  const std::string idx = index_option({n, numel(in)});

  if (s.mode == "nearest" && ndim >= 2 && std::all_of(tidx.begin(), tidx.end(), [](int32_t i) { return i >= 0; }) &&
      (k == 0 || resized[0] >= ndim - 2)) {
    // Only rows and columns resized and every output inside the input: a row at a time.
    const int64_t ho = out[ndim - 2], wo = out[ndim - 1], hi = in[ndim - 2], wi = in[ndim - 1];
    std::vector<int32_t> tab(ho + wo);
    for (int64_t y = 0; y < ho; ++y) tab[y] = static_cast<int32_t>(y);
    for (int64_t x = 0; x < wo; ++x) tab[ho + x] = static_cast<int32_t>(x);
    for (int j = 0; j < k; ++j) {
      const int64_t d = resized[2 * j], off = resized[2 * j + 1];
      std::copy_n(tidx.begin() + off, out[d], tab.begin() + (d == ndim - 2 ? 0 : ho));
    }
    const int64_t planes = n / (ho * wo);
    const int xper = ctx.caps().is_cpu() ? static_cast<int>(wo) : 1;
    const size_t gx = static_cast<size_t>((wo + xper - 1) / xper);
    ctx.launch("resize", "resize_nearest_rows", word_option(ctx, ctx.input(0).dtype) + idx,
               {gx, static_cast<size_t>(ho), static_cast<size_t>(planes)},
               // One row per work-group on CPUs: a size the driver picks would differ by shape,
               // and PoCL generates code per work-group size.
               ctx.caps().is_cpu() ? std::vector<size_t>{1, 1, 1} : std::vector<size_t>{}, ctx.in_buf(0), ctx.out_buf(0),
               ctx.params(tab.data(), ho * sizeof(int32_t)), ctx.params(tab.data() + ho, wo * sizeof(int32_t)), static_cast<int32_t>(hi), static_cast<int32_t>(wi), static_cast<int32_t>(ho),
               static_cast<int32_t>(wo), static_cast<int32_t>(xper));
    return;
  }
  if (s.mode == "nearest") {
    Tensor extrap(t, {});
    host_set_f(extrap, 0, s.extrapolation);
    extrap = convert_elements(extrap, ctx.input(0).dtype);  // in the storage type
    ctx.launch("resize", "resize_nearest", word_option(ctx, ctx.input(0).dtype) + idx, global, {local},
               ctx.in_buf(0), ctx.out_buf(0), pm, im,
               ctx.params(extrap.bytes.data(), extrap.bytes.size()), static_cast<int32_t>(ndim),
               static_cast<int32_t>(k), n);
    return;
  }
  if (tw.empty()) tw.push_back(0);
  const bool fp64 = t == DType::Float64;
  const bool half = ctx.input(0).dtype == DType::Float16;
  const std::string opts =
      (fp64 ? "-DT=double -DACC=double -DUSE_FP64" : half ? "-DT=half -DS=F16 -DACC=float" : "-DT=float -DACC=float") +
      idx;
  if (!fp64 && ndim >= 2 && std::all_of(tidx.begin(), tidx.end(), [](int32_t i) { return i >= 0; }) &&
      (k == 0 || resized[0] >= ndim - 2)) {
    // Only rows and columns resized and every output inside the input (an image's linear or cubic
    // resize): resize_interp_rows, the rows' taps found once per row, none of resize_interp's
    // per-output index arithmetic over every dim (SSDlite's input Resize to 320x320: 4.4 ms there,
    // ONNX Runtime 0.47). Same taps, weights and summation order: the same bits.
    const int64_t ho = out[ndim - 2], wo = out[ndim - 1], hi = in[ndim - 2], wi = in[ndim - 1];
    int32_t ty = 1, tx = 1;
    std::vector<int32_t> yi(ho), xi(wo);
    std::vector<float> yw(ho, 1.0f), xw(wo, 1.0f);
    for (int64_t y = 0; y < ho; ++y) yi[y] = static_cast<int32_t>(y);
    for (int64_t x = 0; x < wo; ++x) xi[x] = static_cast<int32_t>(x);
    for (int j = 0; j < k; ++j) {
      const int64_t d = resized[2 * j], off = resized[2 * j + 1];
      const int32_t taps = static_cast<int32_t>(dim_taps[j]);
      const int64_t count = out[d] * taps;
      std::vector<int32_t> ti(tidx.begin() + off, tidx.begin() + off + count);
      std::vector<float> tf(tw.begin() + off, tw.begin() + off + count);
      if (d == ndim - 2) {
        ty = taps;
        yi = std::move(ti);
        yw = std::move(tf);
      } else {
        tx = taps;
        xi = std::move(ti);
        xw = std::move(tf);
      }
    }
    const int64_t planes = n / (ho * wo);
    const int xper = ctx.caps().is_cpu() ? static_cast<int>(wo) : 1;
    const size_t gx = static_cast<size_t>((wo + xper - 1) / xper);
    ctx.launch("resize", "resize_interp_rows", opts, {gx, static_cast<size_t>(ho), static_cast<size_t>(planes)},
               ctx.caps().is_cpu() ? std::vector<size_t>{1, 1, 1} : std::vector<size_t>{}, ctx.in_buf(0),
               ctx.out_buf(0), ctx.params(yi.data(), yi.size() * sizeof(int32_t)),
               ctx.params(yw.data(), yw.size() * sizeof(float)), ctx.params(xi.data(), xi.size() * sizeof(int32_t)),
               ctx.params(xw.data(), xw.size() * sizeof(float)), static_cast<int32_t>(hi), static_cast<int32_t>(wi),
               static_cast<int32_t>(ho), static_cast<int32_t>(wo), ty, tx, static_cast<int32_t>(xper));
    return;
  }
  cl_mem wm;
  if (fp64) {
    wm = ctx.params(tw.data(), tw.size() * sizeof(double));
  } else {
    std::vector<float> twf(tw.begin(), tw.end());
    wm = ctx.params(twf.data(), twf.size() * sizeof(float));
  }
  if (fp64)
    ctx.launch("resize", "resize_interp", opts, global, {local}, ctx.in_buf(0), ctx.out_buf(0), pm,
               im, wm, static_cast<int32_t>(ndim), static_cast<int32_t>(k),
               s.extrapolation, n);
  else
    ctx.launch("resize", "resize_interp", opts, global, {local}, ctx.in_buf(0), ctx.out_buf(0), pm,
               im, wm, static_cast<int32_t>(ndim), static_cast<int32_t>(k),
               static_cast<float>(s.extrapolation), n);
}

// One interpolation per output element.
double resize_flops(const OpContext& ctx) { return static_cast<double>(numel(ctx.out_shape(0))); }

}  // namespace

void add_resize_ops(std::vector<OpDef>& t) {
  // Scales and sizes come as inputs from Upsample-9 and Resize-10 on: needed at plan time.
  t.push_back(OpDef("Upsample", 7, resize_infer).build(resize_build).flops(resize_flops).shared_storage().any_storage());
  t.push_back(OpDef("Upsample", 9, resize_infer).build(resize_build).value_inputs({1}).flops(resize_flops).shared_storage().any_storage());
  t.push_back(OpDef("Resize", 10, resize_infer).build(resize_build).value_inputs({1}).flops(resize_flops).shared_storage().any_storage());
  // Resize-18: axes and keep_aspect_ratio_policy (resize_spec); Resize-19: the
  // half_pixel_symmetric coordinate transformation (taps_for).
  for (int v : {11, 18, 19})
    t.push_back(OpDef("Resize", v, resize_infer).build(resize_build).value_inputs({1, 2, 3}).flops(resize_flops).shared_storage().any_storage());
}

}  // namespace oi
