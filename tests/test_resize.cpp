// Resize/Upsample against a CPU reference that resizes one dim at a time (separable 1-D passes),
// on odd and prime shapes, up and down, for every mode and coordinate transformation. Tolerance:
// 1e-5 relative to the data's range (float32 accumulation of at most 4^k weighted terms).
#include <gtest/gtest.h>

#include <cmath>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

using Shape = std::vector<int64_t>;

struct Mode {
  std::string mode = "nearest";
  std::string coord = "half_pixel";
  std::string nearest = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;  // Resize-18: linear / cubic filters stretched by 1 / scale when shrinking
};

// Source coordinate of output index x, as the ONNX operator description defines it.
double source_x(const Mode& m, int64_t x, double scale, int64_t in, int64_t out) {
  if (m.coord == "asymmetric") return x / scale;
  if (m.coord == "align_corners") return out == 1 ? 0 : x * double(in - 1) / double(out - 1);
  if (m.coord == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0;
  if (m.coord == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  return (x + 0.5) / scale - 0.5;  // half_pixel
}

double cubic(double t, double a) {  // Keys kernel
  t = std::fabs(t);
  if (t < 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

// Resizes dim `d` of x (row-major, shape s) to `out` elements.
std::vector<double> resize_dim(const std::vector<double>& x, Shape& s, size_t d, int64_t out,
                               double scale, const Mode& m) {
  int64_t outer = 1, inner = 1, in = s[d];
  for (size_t k = 0; k < d; ++k) outer *= s[k];
  for (size_t k = d + 1; k < s.size(); ++k) inner *= s[k];
  std::vector<double> y(outer * out * inner);
  auto at = [&](int64_t o, int64_t i, int64_t k) {
    i = std::min(std::max<int64_t>(i, 0), in - 1);
    return x[(o * in + i) * inner + k];
  };
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < out; ++j) {
      double xs = source_x(m, j, scale, in, out);
      for (int64_t k = 0; k < inner; ++k) {
        double v = 0;
        if (m.mode == "nearest") {
          double f = std::floor(xs);
          int64_t i;
          if (m.nearest == "floor")
            i = int64_t(f);
          else if (m.nearest == "ceil")
            i = int64_t(std::ceil(xs));
          else if (m.nearest == "round_prefer_ceil")
            i = int64_t(std::floor(xs + 0.5));
          else
            i = int64_t(std::ceil(xs - 0.5));  // round_prefer_floor
          v = at(o, i, k);
        } else if (m.antialias) {
          // The filter over every input index it reaches: weight f(sc * (i - xs)) with sc =
          // min(scale, 1), f the triangle (support 1) or the Keys kernel (support 2); indices
          // past the ends read the edge (or, with exclude_outside, weigh nothing); weights sum
          // to 1.
          const double sc = std::min(scale, 1.0), reach = (m.mode == "linear" ? 1 : 2) / sc;
          double wsum = 0, acc = 0;
          for (int64_t i = int64_t(std::floor(xs - reach)); i <= int64_t(std::ceil(xs + reach)); ++i) {
            const double u = sc * (double(i) - xs);
            double w = m.mode == "linear" ? std::max(0.0, 1 - std::fabs(u)) : cubic(u, m.cubic_a);
            if (m.exclude_outside && (i < 0 || i >= in)) w = 0;
            wsum += w;
            acc += w * at(o, i, k);
          }
          v = acc / wsum;
        } else if (m.mode == "linear") {
          double f = std::floor(xs);
          v = at(o, int64_t(f), k) * (1 - (xs - f)) + at(o, int64_t(f) + 1, k) * (xs - f);
        } else {
          double f = std::floor(xs), wsum = 0, acc = 0;
          for (int64_t t = -1; t <= 2; ++t) {
            int64_t i = int64_t(f) + t;
            double w = cubic(xs - double(i), m.cubic_a);
            if (m.exclude_outside && (i < 0 || i >= in)) w = 0;
            wsum += w;
            acc += w * at(o, i, k);
          }
          v = m.exclude_outside ? acc / wsum : acc;
        }
        y[(o * out + j) * inner + k] = v;
      }
    }
  s[d] = out;
  return y;
}

Tensor reference(const Tensor& x, const Shape& out, const std::vector<double>& scales,
                 const Mode& m) {
  std::vector<double> v(x.numel());
  for (int64_t i = 0; i < x.numel(); ++i) v[i] = x.data<float>()[i];
  Shape s = x.shape;
  // Every dim goes through the 1-D resize, as in the ONNX reference: with some modes even a
  // scale of 1 moves data (tf_half_pixel_for_nn with ceil).
  for (size_t d = 0; d < s.size(); ++d) v = resize_dim(v, s, d, out[d], scales[d], m);
  Tensor y(DType::Float32, out);
  for (int64_t i = 0; i < y.numel(); ++i) y.data<float>()[i] = static_cast<float>(v[i]);
  return y;
}

Tensor floats(const std::vector<float>& v) {
  Tensor t(DType::Float32, {static_cast<int64_t>(v.size())});
  for (size_t k = 0; k < v.size(); ++k) t.data<float>()[k] = v[k];
  return t;
}

Tensor int64s(const Shape& v) {
  Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
  for (size_t k = 0; k < v.size(); ++k) t.data<int64_t>()[k] = v[k];
  return t;
}

// Runs Resize-13 with either `sizes` (scales empty) or `scales`.
Tensor run_resize(const Tensor& x, const Mode& m, const Shape& sizes,
                  const std::vector<float>& scales) {
  ModelBuilder b(m.antialias ? 18 : 13);
  b.input("x", DType::Float32, x.shape).output("y");
  std::vector<std::string> ins{"x", ""};
  if (!scales.empty()) {
    b.initializer("scales", floats(scales));
    ins.push_back("scales");
  } else {
    b.initializer("sizes", int64s(sizes));
    ins.insert(ins.end(), {"", "sizes"});
  }
  auto& n = b.node("Resize", ins, {"y"});
  attr_s(n, "mode", m.mode);
  attr_s(n, "coordinate_transformation_mode", m.coord);
  attr_s(n, "nearest_mode", m.nearest);
  attr_f(n, "cubic_coeff_a", static_cast<float>(m.cubic_a));
  attr_i(n, "exclude_outside", m.exclude_outside);
  if (m.antialias) attr_i(n, "antialias", 1);
  return run_model(b, {{"x", x}}).at("y");
}

void check(const Tensor& x, const Mode& m, const Shape& out_sizes) {
  std::vector<double> sc;
  for (size_t d = 0; d < out_sizes.size(); ++d) sc.push_back(double(out_sizes[d]) / x.shape[d]);
  Tensor want = reference(x, out_sizes, sc, m);
  Tensor got = run_resize(x, m, out_sizes, {});
  EXPECT_LE(rel_error(got, want), 1e-5)
      << m.mode << "/" << m.coord << "/" << m.nearest << " " << ocl_infer::shape_to_string(x.shape)
      << " -> " << ocl_infer::shape_to_string(out_sizes);
}

TEST(Resize, NearestModesMatchReference) {
  std::mt19937 rng(21);
  Tensor x = random_tensor({2, 3, 5, 7}, rng);
  for (std::string coord : {"half_pixel", "asymmetric", "align_corners", "tf_half_pixel_for_nn"})
    for (std::string nm : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})
      for (Shape out : {Shape{2, 3, 11, 13}, Shape{2, 3, 3, 4}}) {
        Mode m;
        m.coord = coord;
        m.nearest = nm;
        check(x, m, out);
      }
}

// Nearest takes a row kernel when only the last two dims change and a general one otherwise
// (a channel or batch dim resized, one dim only, rank 2 and 5): both against the reference.
TEST(Resize, NearestOnAnyDimsMatchesReference) {
  std::mt19937 rng(27);
  Mode m;
  check(random_tensor({2, 3, 5, 7}, rng), m, {2, 5, 5, 14});   // channels too: general kernel
  check(random_tensor({2, 3, 5, 7}, rng), m, {4, 3, 10, 7});   // batch and rows
  check(random_tensor({2, 3, 5, 7}, rng), m, {2, 3, 5, 15});   // columns only
  check(random_tensor({2, 3, 5, 7}, rng), m, {2, 3, 9, 7});    // rows only
  check(random_tensor({6, 9}, rng), m, {13, 4});               // rank 2
  check(random_tensor({1, 2, 3, 5, 4}, rng), m, {1, 2, 3, 9, 2});
  check(random_tensor({1, 2, 3, 5, 4}, rng), m, {1, 2, 6, 5, 4});
  m.coord = "align_corners";
  check(random_tensor({1, 4, 1, 1}, rng), m, {1, 4, 3, 2});    // a 1 x 1 plane repeated
}

TEST(Resize, LinearMatchesReference) {
  std::mt19937 rng(22);
  Tensor x = random_tensor({2, 3, 7, 11}, rng);
  for (std::string coord : {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"})
    for (Shape out : {Shape{2, 3, 13, 17}, Shape{2, 3, 5, 1}, Shape{2, 3, 7, 23}}) {
      Mode m;
      m.mode = "linear";
      m.coord = coord;
      check(x, m, out);
    }
}

TEST(Resize, CubicMatchesReference) {
  std::mt19937 rng(23);
  Tensor x = random_tensor({1, 2, 5, 7}, rng);
  for (bool exclude : {false, true})
    for (Shape out : {Shape{1, 2, 11, 13}, Shape{1, 2, 3, 4}}) {
      Mode m;
      m.mode = "cubic";
      m.exclude_outside = exclude;
      m.cubic_a = exclude ? -0.5 : -0.75;
      check(x, m, out);
    }
}

// Antialias (Resize-18): shrinking by 1.2x to 7x, different factors per dim, one dim growing (the
// plain filter there), exclude_outside, three coordinate modes; against the reference's filter
// written over input indices rather than the operator's tap tables.
TEST(Resize, AntialiasMatchesReference) {
  std::mt19937 rng(28);
  Tensor x = random_tensor({1, 2, 29, 41}, rng);
  for (std::string mode : {"linear", "cubic"})
    for (std::string coord : {"half_pixel", "pytorch_half_pixel", "asymmetric"})
      for (bool exclude : {false, true})
        for (Shape out : {Shape{1, 2, 7, 9}, Shape{1, 2, 24, 6}, Shape{1, 2, 4, 50}, Shape{1, 2, 29, 13}}) {
          Mode m;
          m.mode = mode;
          m.coord = coord;
          m.exclude_outside = exclude;
          m.antialias = true;
          check(x, m, out);
        }
}

// Without shrinking, antialias changes nothing: the same values as the plain filters.
TEST(Resize, AntialiasWhenGrowingIsThePlainFilter) {
  std::mt19937 rng(29);
  Tensor x = random_tensor({1, 1, 6, 5}, rng);
  for (std::string mode : {"linear", "cubic"}) {
    Mode m;
    m.mode = mode;
    Tensor plain = run_resize(x, m, {1, 1, 13, 11}, {});
    m.antialias = true;
    EXPECT_LE(rel_error(run_resize(x, m, {1, 1, 13, 11}, {}), plain), 1e-6) << mode;
  }
}

// Linear and cubic resizes of rows and columns only, every output inside the input, take
// resize_interp_rows (the rows' taps once per row); the general kernel visits the same taps in the
// same order. The same tensor with a trailing dim of 1 ([.., H, W, 1]) resizes through the general
// kernel where H changes: both must give the same bits, and the plans must name their kernels.
TEST(Resize, RowsKernelGivesTheGeneralKernelsBits) {
  std::mt19937 rng(30);
  const Tensor x = random_tensor({2, 3, 9, 14}, rng);
  Tensor x5 = x;
  x5.shape = {2, 3, 9, 14, 1};
  const struct {
    std::string mode, coord;
    bool exclude, antialias;
    Shape out;
  } cases[] = {{"linear", "half_pixel", false, false, {2, 3, 20, 31}}, {"linear", "align_corners", false, false, {2, 3, 4, 5}},
               {"linear", "pytorch_half_pixel", false, false, {2, 3, 9, 1}}, {"linear", "asymmetric", false, false, {2, 3, 9, 37}},
               {"linear", "half_pixel", false, false, {2, 3, 17, 14}},  // rows only
               {"cubic", "half_pixel", true, false, {2, 3, 19, 8}},     {"cubic", "asymmetric", false, false, {2, 3, 30, 30}},
               {"linear", "half_pixel", false, true, {2, 3, 4, 6}},     {"cubic", "half_pixel", false, true, {2, 3, 5, 13}}};
  for (const auto& c : cases) {
    auto model = [&](const Shape& in, const Shape& out) {
      ModelBuilder b(c.antialias ? 18 : 13);
      b.input("x", DType::Float32, in).output("y");
      b.initializer("sizes", int64s(out));
      auto& n = b.node("Resize", {"x", "", "", "sizes"}, {"y"});
      attr_s(n, "mode", c.mode);
      attr_s(n, "coordinate_transformation_mode", c.coord);
      attr_i(n, "exclude_outside", c.exclude);
      if (c.antialias) attr_i(n, "antialias", 1);
      return b;
    };
    Shape out5 = c.out;
    out5.push_back(1);
    auto rows = open_session(model(x.shape, c.out), ocl_infer::SessionOptions{});
    auto general = open_session(model(x5.shape, out5), ocl_infer::SessionOptions{});
    const std::string what = c.mode + "/" + c.coord + (c.antialias ? " antialias " : " ") + ocl_infer::shape_to_string(c.out);
    const Tensor a = rows.run({{"x", x}}).at("y"), g = general.run({{"x", x5}}).at("y");
    EXPECT_NE(rows.dump("plan").find("resize_interp_rows"), std::string::npos) << what;
    // (Columns only: [.., H, W, 1] resizes only its next-to-last dim, which the rows kernel takes.)
    if (c.out[2] != x.shape[2]) {
      EXPECT_EQ(general.dump("plan").find("resize_interp_rows"), std::string::npos) << what;
      EXPECT_EQ(a.bytes, g.bytes) << what;
    }
    std::vector<double> sc;
    for (size_t d = 0; d < c.out.size(); ++d) sc.push_back(double(c.out[d]) / x.shape[d]);
    Mode m;
    m.mode = c.mode;
    m.coord = c.coord;
    m.exclude_outside = c.exclude;
    m.antialias = c.antialias;
    if (c.mode == "cubic") m.cubic_a = -0.75;
    EXPECT_LE(rel_error(a, reference(x, c.out, sc, m)), fp16_mode() ? 1e-3 : 1e-5) << what;
  }
}

TEST(Resize, TrilinearOnThreeDims) {
  std::mt19937 rng(24);
  Tensor x = random_tensor({1, 2, 3, 5, 4}, rng);
  Mode m;
  m.mode = "linear";
  check(x, m, {1, 2, 7, 2, 9});
}

TEST(Resize, ScalesGiveFlooredSizes) {
  std::mt19937 rng(25);
  Tensor x = random_tensor({1, 1, 5, 7}, rng);
  Mode m;
  m.mode = "linear";
  Tensor got = run_resize(x, m, {}, {1, 1, 1.5f, 0.6f});
  Tensor want = reference(x, {1, 1, 7, 4}, {1, 1, 1.5f, 0.6f}, m);
  EXPECT_LE(rel_error(got, want), 1e-5);
}

TEST(Resize, UpsampleNearestRepeats) {
  std::mt19937 rng(26);
  Tensor x = random_tensor({1, 2, 3, 5}, rng);
  ModelBuilder b(9);
  b.input("x", DType::Float32, x.shape).initializer("s", floats({1, 1, 2, 3})).output("y");
  b.node("Upsample", {"x", "s"}, {"y"});
  Tensor got = run_model(b, {{"x", x}}).at("y");
  Tensor want(DType::Float32, {1, 2, 6, 15});
  for (int64_t i = 0; i < want.numel(); ++i) {
    int64_t w = i % 15, h = i / 15 % 6, c = i / 90;
    want.data<float>()[i] = x.data<float>()[(c * 3 + h / 2) * 5 + w / 3];
  }
  EXPECT_EQ(rel_error(got, want), 0);
}

// Nearest moves elements without arithmetic, so any dtype works; Upsample-7 takes its scales
// from an attribute.
TEST(Resize, Upsample7NearestOnUint8) {
  Tensor x(DType::UInt8, {1, 1, 2, 3});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<uint8_t>()[i] = static_cast<uint8_t>(200 + i);
  ModelBuilder b(7);
  b.input("x", DType::UInt8, x.shape).output("y");
  auto& n = b.node("Upsample", {"x"}, {"y"});
  auto* a = n.add_attribute();
  a->set_name("scales");
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float f : {1.f, 1.f, 2.f, 2.f}) a->add_floats(f);
  Tensor got = run_model(b, {{"x", x}}).at("y");
  ASSERT_EQ(got.shape, (Shape{1, 1, 4, 6}));
  for (int64_t i = 0; i < got.numel(); ++i) {
    int64_t h = i / 6, w = i % 6;
    EXPECT_EQ(got.data<uint8_t>()[i], x.data<uint8_t>()[(h / 2) * 3 + w / 2]) << i;
  }
}

TEST(Resize, WrongScalesLengthIsAModelError) {
  Tensor x(DType::Float32, {1, 1, 4, 4});
  Mode m;
  EXPECT_THROW(run_resize(x, m, {}, {2, 2}), ocl_infer::ModelError);
}

TEST(Resize, CubicBeforeOpset11IsAModelError) {
  ModelBuilder b(10);
  b.input("x", DType::Float32, {1, 1, 2, 2}).initializer("s", floats({1, 1, 2, 2})).output("y");
  attr_s(b.node("Resize", {"x", "s"}, {"y"}), "mode", "cubic");
  try {
    run_model(b, {{"x", Tensor(DType::Float32, {1, 1, 2, 2})}});
    FAIL() << "expected a ModelError";
  } catch (const ocl_infer::ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("cubic"), std::string::npos) << e.what();
  }
}

}  // namespace
