// GridSample, RoiAlign and MaxUnpool against CPU references written here from the ONNX operator
// definitions (coordinates in float as the ONNX reference computes them, sums in double). Odd and
// prime sizes; GridSample in every mode x padding x align_corners with grid points far outside;
// RoiAlign avg and max, both coordinate modes, rois partly outside the image, sampling_ratio 0
// and 2; MaxUnpool with and without output_shape and fed by a MaxPool; and the errors.
// Tolerance 2e-5 relative to the output's range (float arithmetic of at most 16 taps or a few
// hundred samples).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

using Shape = std::vector<int64_t>;

Tensor int64s(const Shape& shape, const std::vector<int64_t>& v) {
  Tensor t(DType::Int64, shape);
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}

float round_input(float v) {
  return fp16_mode() ? to_half(v) : v;
}

// ---- GridSample reference -------------------------------------------------------------------
struct GsMode {
  std::string mode, padding;
  bool align = false;
};

float reflect(float x, float lo, float hi) {
  const float span = hi - lo;
  if (span <= 0) return lo;
  float d = x < lo ? lo - x : x > hi ? x - hi : 0;
  if (d == 0) return x;
  const float flips = std::trunc(d / span);
  const float rest = d - flips * span;
  const bool even = std::fmod(flips, 2.0f) == 0;
  if (x < lo) return even ? lo + rest : hi - rest;
  return even ? hi - rest : lo + rest;
}

Tensor grid_sample_reference(const Tensor& x, const Tensor& grid, const GsMode& m) {
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t Ho = grid.shape[1], Wo = grid.shape[2];
  Tensor y(DType::Float32, {N, C, Ho, Wo});
  const float a = -0.75f;
  auto cubic = [a](float t) {  // Keys kernel weight at distance t
    t = std::fabs(t);
    if (t < 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
    if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
    return 0.0f;
  };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t oh = 0; oh < Ho; ++oh)
        for (int64_t ow = 0; ow < Wo; ++ow) {
          const float* g = grid.data<float>() + ((n * Ho + oh) * Wo + ow) * 2;
          float pos[2];  // y, x
          const int64_t len[2] = {H, W};
          for (int d = 0; d < 2; ++d) {
            const float gv = g[1 - d];
            const float L = static_cast<float>(len[d]);
            float p = m.align ? (gv + 1) / 2.0f * (L - 1) : ((gv + 1) * L - 1) / 2.0f;
            if (m.mode == "nearest") p = std::nearbyint(p);
            const float lo = m.align ? 0.0f : -0.5f, hi = m.align ? L - 1 : L - 0.5f;
            if (p < lo || p > hi) {
              if (m.padding == "border") p = std::min(std::max(p, 0.0f), L - 1);
              if (m.padding == "reflection") p = reflect(p, lo, hi);
            }
            pos[d] = p;
          }
          auto pixel = [&](int64_t iy, int64_t ix) -> double {
            const int64_t idx[2] = {iy, ix};
            int64_t at[2];
            for (int d = 0; d < 2; ++d) {
              int64_t i = idx[d];
              const float L = static_cast<float>(len[d]);
              if (m.padding == "zeros") {
                if (i < 0 || i >= len[d]) return 0.0;
              } else if (m.padding == "border") {
                i = std::min<int64_t>(std::max<int64_t>(i, 0), len[d] - 1);
              } else {
                i = static_cast<int64_t>(reflect(static_cast<float>(i), m.align ? 0.0f : -0.5f,
                                                 m.align ? L - 1 : L - 0.5f));
                i = std::min<int64_t>(std::max<int64_t>(i, 0), len[d] - 1);
              }
              at[d] = i;
            }
            return x.data<float>()[((n * C + c) * H + at[0]) * W + at[1]];
          };
          double v = 0;
          if (m.mode == "nearest") {
            v = pixel(static_cast<int64_t>(pos[0]), static_cast<int64_t>(pos[1]));
          } else {
            const int64_t y0 = static_cast<int64_t>(std::floor(pos[0])),
                          x0 = static_cast<int64_t>(std::floor(pos[1]));
            const int lo = m.mode == "bilinear" ? 0 : -1, hi = m.mode == "bilinear" ? 1 : 2;
            for (int j = lo; j <= hi; ++j)
              for (int k = lo; k <= hi; ++k) {
                const float dy = pos[0] - static_cast<float>(y0 + j),
                            dx = pos[1] - static_cast<float>(x0 + k);
                const double w = m.mode == "bilinear"
                                     ? (1.0 - std::fabs(dy)) * (1.0 - std::fabs(dx))
                                     : static_cast<double>(cubic(dy)) * cubic(dx);
                if (w != 0) v += w * pixel(y0 + j, x0 + k);
              }
          }
          y.data<float>()[((n * C + c) * Ho + oh) * Wo + ow] = static_cast<float>(v);
        }
  return y;
}

Tensor run_grid_sample(const Tensor& x, const Tensor& grid, const GsMode& m) {
  ModelBuilder b(16);
  b.input("x", DType::Float32, x.shape).input("grid", DType::Float32, grid.shape).output("y");
  auto& n = b.node("GridSample", {"x", "grid"}, {"y"});
  attr_s(n, "mode", m.mode);
  attr_s(n, "padding_mode", m.padding);
  attr_i(n, "align_corners", m.align ? 1 : 0);
  return run_model(b, {{"x", x}, {"grid", grid}}).at("y");
}

// Grid points mostly in [-1.3, 1.3], some far outside (|g| up to 1e4; reflection up to 40, where
// float reflection is still exact enough to compare).
Tensor random_grid(const Shape& shape, std::mt19937& rng, bool reflection) {
  Tensor g = random_tensor(shape, rng, -1.3f, 1.3f);
  std::uniform_int_distribution<int> pick(0, 9);
  const float far[] = {
      -40.0f, -3.7f, 2.9f, 17.3f, reflection ? 40.0f : 1e4f, reflection ? -23.1f : -1e4f};
  for (int64_t e = 0; e < g.numel(); ++e)
    if (pick(rng) == 0)
      g.data<float>()[e] = round_input(far[e % 6] * (1 + 0.01f * static_cast<float>(pick(rng))));
  return g;
}

TEST(GridSample, EveryModePaddingAndAlignment) {
  std::mt19937 rng(3);
  int combo = 0;
  for (const char* mode : {"bilinear", "nearest", "bicubic"})
    for (const char* pad : {"zeros", "border", "reflection"})
      for (bool align : {false, true}) {
        if (fp16_sampled_out(combo++)) continue;
        GsMode m{mode, pad, align};
        Tensor x = random_tensor({2, 3, 7, 11}, rng);
        Tensor grid = random_grid({2, 5, 13, 2}, rng, m.padding == "reflection");
        Tensor want = grid_sample_reference(x, grid, m);
        Tensor got = run_grid_sample(x, grid, m);
        EXPECT_LE(rel_error(got, want), 2e-5) << mode << "/" << pad << "/align " << align;
      }
}

TEST(GridSample, OddShapesAndSinglePixels) {
  std::mt19937 rng(4);
  for (const Shape& xs : {Shape{1, 1, 1, 1}, Shape{1, 2, 1, 5}, Shape{3, 1, 13, 2}})
    for (const char* mode : {"bilinear", "nearest", "bicubic"})
      for (const char* pad : {"zeros", "border", "reflection"}) {
        GsMode m{mode, pad, xs[2] == 13};
        Tensor x = random_tensor(xs, rng);
        Tensor grid = random_grid({xs[0], 3, 1, 2}, rng, m.padding == "reflection");
        EXPECT_LE(rel_error(run_grid_sample(x, grid, m), grid_sample_reference(x, grid, m)), 2e-5)
            << mode << "/" << pad << " " << ocl_infer::shape_to_string(xs);
      }
}

// ---- RoiAlign reference ---------------------------------------------------------------------
struct RoiMode {
  bool max = false, half_pixel = true;
  int64_t out_h = 3, out_w = 4, sampling_ratio = 0;
  float scale = 1;
  int opset = 16;
};

Tensor roi_align_reference(const Tensor& x, const Tensor& rois, const std::vector<int64_t>& batch,
                           const RoiMode& m) {
  const int64_t C = x.shape[1], H = x.shape[2], W = x.shape[3], R = rois.shape[0];
  Tensor y(DType::Float32, {R, C, m.out_h, m.out_w});
  const float off = m.half_pixel ? 0.5f : 0.0f;
  for (int64_t r = 0; r < R; ++r) {
    const float* box = rois.data<float>() + r * 4;
    const float x1 = box[0] * m.scale - off, y1 = box[1] * m.scale - off;
    float rw = box[2] * m.scale - off - x1, rh = box[3] * m.scale - off - y1;
    if (!m.half_pixel) rw = std::max(rw, 1.0f), rh = std::max(rh, 1.0f);
    const float bh = rh / static_cast<float>(m.out_h), bw = rw / static_cast<float>(m.out_w);
    const int64_t gh = m.sampling_ratio > 0
                           ? m.sampling_ratio
                           : static_cast<int64_t>(std::ceil(rh / static_cast<float>(m.out_h)));
    const int64_t gw = m.sampling_ratio > 0
                           ? m.sampling_ratio
                           : static_cast<int64_t>(std::ceil(rw / static_cast<float>(m.out_w)));
    for (int64_t c = 0; c < C; ++c) {
      const float* plane = x.data<float>() + (batch[r] * C + c) * H * W;
      for (int64_t ph = 0; ph < m.out_h; ++ph)
        for (int64_t pw = 0; pw < m.out_w; ++pw) {
          double sum = 0, best = 0;
          bool any = false;
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              float sy = y1 + static_cast<float>(ph) * bh +
                         (static_cast<float>(iy) + 0.5f) * bh / static_cast<float>(gh);
              float sx = x1 + static_cast<float>(pw) * bw +
                         (static_cast<float>(ix) + 0.5f) * bw / static_cast<float>(gw);
              double corner[4] = {0, 0, 0, 0};  // the weighted terms w_k * v_k
              if (!(sy < -1 || sy > static_cast<float>(H) || sx < -1 ||
                    sx > static_cast<float>(W))) {
                sy = std::max(sy, 0.0f);
                sx = std::max(sx, 0.0f);
                int64_t y0 = static_cast<int64_t>(sy), x0 = static_cast<int64_t>(sx);
                int64_t y1i = y0 + 1, x1i = x0 + 1;
                if (y0 >= H - 1) y0 = y1i = H - 1, sy = static_cast<float>(y0);
                if (x0 >= W - 1) x0 = x1i = W - 1, sx = static_cast<float>(x0);
                const double ly = sy - static_cast<float>(y0), lx = sx - static_cast<float>(x0);
                corner[0] = (1 - ly) * (1 - lx) * plane[y0 * W + x0];
                corner[1] = (1 - ly) * lx * plane[y0 * W + x1i];
                corner[2] = ly * (1 - lx) * plane[y1i * W + x0];
                corner[3] = ly * lx * plane[y1i * W + x1i];
              }
              const double v =
                  std::max(std::max(corner[0], corner[1]), std::max(corner[2], corner[3]));
              best = any ? std::max(best, v) : v;
              any = true;
              sum += corner[0] + corner[1] + corner[2] + corner[3];
            }
          const double out =
              m.max ? best : sum / static_cast<double>(std::max<int64_t>(gh * gw, 1));
          y.data<float>()[((r * C + c) * m.out_h + ph) * m.out_w + pw] = static_cast<float>(out);
        }
    }
  }
  return y;
}

Tensor run_roi_align(const Tensor& x, const Tensor& rois, const std::vector<int64_t>& batch,
                     const RoiMode& m) {
  ModelBuilder b(m.opset);
  const int64_t R = rois.shape[0];
  b.input("x", DType::Float32, x.shape)
      .input("rois", DType::Float32, rois.shape)
      .input("b", DType::Int64, {R});
  b.output("y");
  auto& n = b.node("RoiAlign", {"x", "rois", "b"}, {"y"});
  attr_s(n, "mode", m.max ? "max" : "avg");
  if (m.opset >= 16)
    attr_s(n, "coordinate_transformation_mode", m.half_pixel ? "half_pixel" : "output_half_pixel");
  attr_i(n, "output_height", m.out_h);
  attr_i(n, "output_width", m.out_w);
  attr_i(n, "sampling_ratio", m.sampling_ratio);
  attr_f(n, "spatial_scale", m.scale);
  return run_model(b, {{"x", x}, {"rois", rois}, {"b", int64s({R}, batch)}}).at("y");
}

// Boxes over a W x H image (in input coordinates before spatial_scale), some partly or wholly
// outside it, one degenerate (zero width).
Tensor random_rois(int64_t R, float W, float H, std::mt19937& rng) {
  Tensor t(DType::Float32, {R, 4});
  std::uniform_real_distribution<float> ux(-0.3f * W, 1.1f * W), uy(-0.3f * H, 1.1f * H),
      len(0.5f, 0.8f * W);
  for (int64_t r = 0; r < R; ++r) {
    float* b = t.data<float>() + r * 4;
    b[0] = round_input(ux(rng));
    b[1] = round_input(uy(rng));
    b[2] = round_input(r == 1 ? b[0] : b[0] + len(rng));
    b[3] = round_input(b[1] + len(rng) * H / W);
  }
  return t;
}

TEST(RoiAlign, AvgAndMaxBothCoordinateModes) {
  std::mt19937 rng(6);
  int combo = 0;
  for (bool max : {false, true})
    for (bool half : {true, false})
      for (int64_t ratio : {0, 2})
        for (float scale : {1.0f, 0.25f}) {
          if (fp16_sampled_out(combo++)) continue;
          RoiMode m;
          m.max = max;
          m.half_pixel = half;
          m.sampling_ratio = ratio;
          m.scale = scale;
          m.out_h = ratio ? 3 : 2;
          m.out_w = ratio ? 5 : 7;
          Tensor x = random_tensor({2, 3, 11, 13}, rng);
          const float img = 13 / scale;
          Tensor rois = random_rois(7, img, 11 / scale, rng);
          std::vector<int64_t> batch{0, 1, 1, 0, 1, 0, 0};
          const Tensor want = roi_align_reference(x, rois, batch, m);
          EXPECT_LE(rel_error(run_roi_align(x, rois, batch, m), want), 2e-5)
              << (max ? "max" : "avg") << (half ? " half_pixel" : " output_half_pixel") << " ratio "
              << ratio << " scale " << scale;
        }
}

TEST(RoiAlign, Opset10IsOutputHalfPixel) {
  std::mt19937 rng(8);
  Tensor x = random_tensor({1, 5, 17, 9}, rng);
  Tensor rois = random_rois(3, 9, 17, rng);
  RoiMode m;
  m.opset = 10;
  m.half_pixel = false;
  m.out_h = 1;
  m.out_w = 3;
  EXPECT_LE(
      rel_error(run_roi_align(x, rois, {0, 0, 0}, m), roi_align_reference(x, rois, {0, 0, 0}, m)),
      2e-5);
}

// ---- MaxUnpool ------------------------------------------------------------------------------
Tensor run_max_unpool(const Tensor& x, const Tensor& idx, const Shape& kernel, const Shape& strides,
                      const Shape& pads, const Shape& output_shape, int opset = 11) {
  ModelBuilder b(opset);
  b.input("x", DType::Float32, x.shape).input("i", DType::Int64, idx.shape).output("y");
  std::vector<std::string> ins{"x", "i"};
  if (!output_shape.empty()) {
    b.initializer("s", int64s({static_cast<int64_t>(output_shape.size())}, output_shape));
    ins.push_back("s");
  }
  auto& n = b.node("MaxUnpool", ins, {"y"});
  attr_ints(n, "kernel_shape", kernel);
  if (!strides.empty()) attr_ints(n, "strides", strides);
  if (!pads.empty()) attr_ints(n, "pads", pads);
  return run_model(b, {{"x", x}, {"i", idx}}).at("y");
}

// Indices as a non-overlapping MaxPool would give them: one random position of each window of
// the unpooled output (flattened over the whole output tensor).
Tensor window_indices(const Shape& xs, const Shape& out, const Shape& k, const Shape& s,
                      std::mt19937& rng) {
  Tensor idx(DType::Int64, xs);
  int64_t e = 0;
  for (int64_t nc = 0; nc < xs[0] * xs[1]; ++nc)
    for (int64_t h = 0; h < xs[2]; ++h)
      for (int64_t w = 0; w < xs[3]; ++w, ++e) {
        std::uniform_int_distribution<int64_t> dh(0, k[0] - 1), dw(0, k[1] - 1);
        const int64_t oh = std::min(h * s[0] + dh(rng), out[2] - 1),
                      ow = std::min(w * s[1] + dw(rng), out[3] - 1);
        idx.data<int64_t>()[e] = (nc * out[2] + oh) * out[3] + ow;
      }
  return idx;
}

// The indices address the unpooled tensor of shape `inferred` (4-D); an output_shape `out` larger
// than that pads it at the end of each dim (ONNX's test data:
// test_maxunpool_export_with_output_shape).
Tensor unpool_reference(const Tensor& x, const Tensor& idx, const Shape& inferred, Shape out = {}) {
  if (out.empty()) out = inferred;
  Tensor y(DType::Float32, out);
  std::fill(y.data<float>(), y.data<float>() + y.numel(), 0.0f);
  for (int64_t e = 0; e < x.numel(); ++e) {
    int64_t j = idx.data<int64_t>()[e];
    const int64_t w = j % inferred[3], h = (j / inferred[3]) % inferred[2],
                  nc = j / (inferred[3] * inferred[2]);
    y.data<float>()[(nc * out[2] + h) * out[3] + w] = x.data<float>()[e];
  }
  return y;
}

TEST(MaxUnpool, WithAndWithoutOutputShape) {
  std::mt19937 rng(10);
  const Shape xs{2, 3, 5, 7};
  Tensor x = random_tensor(xs, rng);
  // Default size: (in - 1) * stride - pads + kernel = 10 x 14 for kernel 2, stride 2; 9 x 13 with
  // pads 1.
  const Shape out{2, 3, 10, 14};
  Tensor idx = window_indices(xs, out, {2, 2}, {2, 2}, rng);
  Tensor got = run_max_unpool(x, idx, {2, 2}, {2, 2}, {}, {});
  EXPECT_LE(rel_error(got, unpool_reference(x, idx, out)), 0) << "no output_shape";
  const Shape padded{2, 3, 9, 13};
  Tensor idx_p = window_indices(xs, padded, {2, 2}, {2, 2}, rng);
  EXPECT_LE(rel_error(run_max_unpool(x, idx_p, {2, 2}, {2, 2}, {0, 0, 1, 1}, {}, 9),
                      unpool_reference(x, idx_p, padded)),
            0)
      << "pads, opset 9";
  const Shape bigger{2, 3, 11, 17};
  EXPECT_LE(rel_error(run_max_unpool(x, idx, {2, 2}, {2, 2}, {}, bigger),
                      unpool_reference(x, idx, out, bigger)),
            0)
      << "output_shape";
  EXPECT_LE(
      rel_error(run_max_unpool(x, idx, {2, 2}, {2, 2}, {}, out), unpool_reference(x, idx, out)), 0)
      << "output_shape equal to the default";
}

TEST(MaxUnpool, InvertsMaxPoolIndices) {
  std::mt19937 rng(12);
  Tensor x = random_tensor({1, 2, 6, 10}, rng);
  ModelBuilder b(11);
  b.input("x", DType::Float32, x.shape).output("y");
  auto& p = b.node("MaxPool", {"x"}, {"p", "i"});
  attr_ints(p, "kernel_shape", {2, 2});
  attr_ints(p, "strides", {2, 2});
  auto& u = b.node("MaxUnpool", {"p", "i"}, {"y"});
  attr_ints(u, "kernel_shape", {2, 2});
  attr_ints(u, "strides", {2, 2});
  Tensor got = run_model(b, {{"x", x}}).at("y");
  Tensor want(DType::Float32, x.shape);
  for (int64_t nc = 0; nc < 2; ++nc)
    for (int64_t h = 0; h < 6; h += 2)
      for (int64_t w = 0; w < 10; w += 2) {
        int64_t best = -1;
        for (int64_t dh = 0; dh < 2; ++dh)
          for (int64_t dw = 0; dw < 2; ++dw) {
            const int64_t e = (nc * 6 + h + dh) * 10 + w + dw;
            want.data<float>()[e] = 0;
            if (best < 0 || x.data<float>()[e] > x.data<float>()[best]) best = e;
          }
        want.data<float>()[best] = x.data<float>()[best];
      }
  EXPECT_LE(rel_error(got, want), 0);
}

// ---- Errors ---------------------------------------------------------------------------------
template <typename Fn>
void expect_error(Fn fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing '" << needle << "'";
  } catch (const ocl_infer::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(SampleOps, BadInputsAreErrors) {
  std::mt19937 rng(14);
  expect_error(
      [&] {
        run_grid_sample(random_tensor({2, 3, 5}, rng), random_tensor({2, 4, 4, 2}, rng),
                        {"bilinear", "zeros", false});
      },
      "must be 4-D");
  expect_error(
      [&] {
        run_grid_sample(random_tensor({2, 3, 5, 5}, rng), random_tensor({2, 4, 4, 3}, rng),
                        {"bilinear", "zeros", false});
      },
      "grid must be");
  expect_error(
      [&] {
        run_grid_sample(random_tensor({1, 1, 5, 5}, rng), random_tensor({1, 4, 4, 2}, rng),
                        {"linear", "zeros", false});
      },
      "mode must be");
  RoiMode m;
  expect_error(
      [&] {
        run_roi_align(random_tensor({1, 2, 5, 5}, rng), random_tensor({3, 5}, rng), {0, 0, 0}, m);
      },
      "rois must be");
  // A batch index beyond N is found when the kernel runs.
  expect_error(
      [&] {
        run_roi_align(random_tensor({2, 2, 5, 5}, rng), random_rois(3, 5, 5, rng), {0, 2, 1}, m);
      },
      "batch index is out of range");
  Tensor x = random_tensor({1, 1, 2, 2}, rng);
  expect_error(
      [&] {
        run_max_unpool(x, int64s({1, 1, 2, 2}, {0, 1, 2, 99}), {2, 2}, {2, 2}, {}, {});
      },
      "out of range");
  expect_error(
      [&] {
        run_max_unpool(x, int64s({1, 1, 2, 2}, {0, 1, 2, 3}), {2, 2}, {2, 2}, {}, {1, 1, 4});
      },
      "output_shape");
}

}  // namespace
