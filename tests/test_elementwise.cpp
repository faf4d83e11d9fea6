// Elementwise ops against a CPU reference on random shapes, including odd and prime sizes and
// broadcasting.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

float ref_unary(const std::string& op, float x) {
  if (op == "Relu") return x > 0 ? x : 0;
  if (op == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (op == "Tanh") return std::tanh(x);
  if (op == "Exp") return std::exp(x);
  if (op == "Abs") return std::fabs(x);
  if (op == "Neg") return -x;
  if (op == "Erf") return std::erf(x);
  if (op == "Softplus") return std::log1p(std::exp(x));
  if (op == "HardSwish") return x * std::max(0.f, std::min(1.f, x / 6 + 0.5f));
  return NAN;
}

TEST(Elementwise, UnaryOpsMatchReference) {
  std::mt19937 rng(1);
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp", "Abs", "Neg", "Erf", "Softplus", "HardSwish"}) {
    for (auto shape : std::vector<std::vector<int64_t>>{{1}, {7}, {3, 5, 11}, {2, 3, 13, 17}}) {
      ModelBuilder m;
      m.input("x", DType::Float32, shape).output("y");
      m.node(op, {"x"}, {"y"});
      Tensor x = random_tensor(shape, rng, -4, 4);
      Tensor ref(DType::Float32, shape);
      for (int64_t i = 0; i < x.numel(); ++i) ref.data<float>()[i] = ref_unary(op, x.data<float>()[i]);
      auto out = run_model(m, {{"x", x}});
      EXPECT_LE(rel_error(out.at("y"), ref), 1e-5) << op << " " << ocl_infer::shape_to_string(shape);
    }
  }
}

// The element of an operand of shape s (numpy broadcasting) that output element i of `out` reads.
int64_t broadcast_index(const std::vector<int64_t>& s, const std::vector<int64_t>& out, int64_t i) {
  int64_t idx = 0, stride = 1;
  for (size_t d = out.size(); d-- > 0;) {
    int64_t coord = i % out[d];
    i /= out[d];
    size_t off = out.size() - s.size();
    if (d >= off) {
      if (s[d - off] != 1) idx += coord * stride;
      stride *= s[d - off];
    }
  }
  return idx;
}

TEST(Elementwise, BinaryBroadcastMatchesReference) {
  std::mt19937 rng(2);
  struct Case {
    std::vector<int64_t> a, b, out;
  };
  for (auto c : std::vector<Case>{{{2, 3, 5}, {2, 3, 5}, {2, 3, 5}},
                                  {{2, 3, 5}, {1}, {2, 3, 5}},
                                  {{2, 1, 7}, {3, 1}, {2, 3, 7}},
                                  {{13}, {5, 1, 13}, {5, 1, 13}},
                                  // Chunks per work-item (ew_binary_chunk): 16 with a per-channel
                                  // block, 4 with a block of 28, 8 same-shape, 16 with a scalar,
                                  // the block on the left operand; a block of 1 falls back.
                                  {{2, 3, 4, 16}, {2, 3, 1, 1}, {2, 3, 4, 16}},
                                  {{1, 5, 7, 4}, {1, 5, 1, 1}, {1, 5, 7, 4}},
                                  {{3, 8}, {3, 8}, {3, 8}},
                                  {{2, 16}, {1}, {2, 16}},
                                  {{2, 3, 1, 1}, {2, 3, 4, 16}, {2, 3, 4, 16}},
                                  // Blocks ending at the last dim step along the chunk (48 and
                                  // 32 elements; [1,1,4,8] skips the output's leading 1); one of 13
                                  // does not divide and falls back; a [5,1,7] block across an
                                  // output dim of extent 1.
                                  {{6, 8}, {4, 6, 8}, {4, 6, 8}},
                                  {{1, 1, 4, 8}, {1, 3, 4, 8}, {1, 3, 4, 8}},
                                  {{5, 1, 7}, {2, 5, 1, 7}, {2, 5, 1, 7}},
                                  {{4, 6, 1}, {4, 6, 8}, {4, 6, 8}},
                                  // The same blocks on the right operand (block sizes are kernel
                                  // arguments: one program for all shapes).
                                  {{4, 6, 8}, {6, 8}, {4, 6, 8}},
                                  {{1, 3, 4, 8}, {1, 1, 4, 8}, {1, 3, 4, 8}},
                                  {{2, 3, 4, 16}, {1, 3, 1, 1}, {2, 3, 4, 16}},
                                  // A row per work-item (ew_binary_rows): blocks of 49, 9 (left
                                  // operand, batch 2) and 25 (rank-3 operand) that 4 does not divide.
                                  {{1, 5, 7, 7}, {1, 5, 1, 1}, {1, 5, 7, 7}},
                                  {{1, 5, 1, 1}, {2, 5, 3, 3}, {2, 5, 3, 3}},
                                  {{2, 3, 5, 5}, {3, 1, 1}, {2, 3, 5, 5}}}) {
    for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
      ModelBuilder m;
      m.input("a", DType::Float32, c.a).input("b", DType::Float32, c.b).output("y");
      m.node(op, {"a", "b"}, {"y"});
      Tensor a = random_tensor(c.a, rng), b = random_tensor(c.b, rng, 0.5f, 2.f);
      Tensor ref(DType::Float32, c.out);
      const auto st = broadcast_index;
      for (int64_t i = 0; i < ref.numel(); ++i) {
        float x = a.data<float>()[st(c.a, c.out, i)], y = b.data<float>()[st(c.b, c.out, i)];
        std::string o = op;
        ref.data<float>()[i] = o == "Add" ? x + y : o == "Sub" ? x - y : o == "Mul" ? x * y : x / y;
      }
      auto out = run_model(m, {{"a", a}, {"b", b}});
      EXPECT_LE(rel_error(out.at("y"), ref), 1e-6) << op;
    }
  }
}

// Where with broadcast operands: an attention mask [1,1,T,T] against [1,H,T,T] scores and a
// scalar (ew_ternary_chunk), blocks with an inner extent, and shapes no chunk divides (ew_ternary).
TEST(Elementwise, WhereBroadcastMatchesReference) {
  std::mt19937 rng(5);
  struct Case {
    std::vector<int64_t> c, x, y, out;
  };
  for (const Case& k : std::vector<Case>{{{1, 1, 8, 8}, {1}, {1, 4, 8, 8}, {1, 4, 8, 8}},
                                         {{8, 8}, {2, 3, 8, 8}, {1}, {2, 3, 8, 8}},
                                         {{1, 1, 4, 4}, {1, 2, 4, 4}, {1, 2, 4, 4}, {1, 2, 4, 4}},
                                         {{2, 1, 1}, {2, 3, 16}, {1, 3, 16}, {2, 3, 16}},
                                         {{1, 1, 5, 5}, {1}, {1, 3, 5, 5}, {1, 3, 5, 5}},
                                         {{3, 1}, {1, 7}, {3, 7}, {3, 7}}}) {
    ModelBuilder m;
    m.input("c", DType::Bool, k.c).input("x", DType::Float32, k.x).input("y", DType::Float32, k.y).output("z");
    m.node("Where", {"c", "x", "y"}, {"z"});
    Tensor c(DType::Bool, k.c);
    std::bernoulli_distribution coin(0.5);
    for (int64_t i = 0; i < c.numel(); ++i) c.data<uint8_t>()[i] = coin(rng);
    Tensor x = random_tensor(k.x, rng), y = random_tensor(k.y, rng);
    Tensor ref(DType::Float32, k.out);
    for (int64_t i = 0; i < ref.numel(); ++i)
      ref.data<float>()[i] = c.data<uint8_t>()[broadcast_index(k.c, k.out, i)]
                                 ? x.data<float>()[broadcast_index(k.x, k.out, i)]
                                 : y.data<float>()[broadcast_index(k.y, k.out, i)];
    auto out = run_model(m, {{"c", c}, {"x", x}, {"y", y}});
    EXPECT_EQ(out.at("z").bytes, ref.bytes) << ocl_infer::shape_to_string(k.out);  // a selection: exact
  }
}

TEST(Elementwise, WrongInputShapeIsAClearError) {
  ModelBuilder m;
  m.input("x", DType::Float32, {2, 3}).output("y");
  m.node("Relu", {"x"}, {"y"});
  Tensor x(DType::Float32, {3, 2});
  try {
    run_model(m, {{"x", x}});
    FAIL() << "expected an InputError";
  } catch (const ocl_infer::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("must have shape [2,3]"), std::string::npos) << e.what();
  }
}

// Erf runs on a polynomial approximation (kernels/activation.cl), not the library call: checked
// densely against double precision. Tolerance: 2 float roundings of the result (2^-23 relative)
// plus 2^-26 absolute near 0.5 where the series hands over to 1 - erfc.
TEST(Elementwise, ErfWithinTwoRoundingsEverywhere) {
  if (fp16_mode()) GTEST_SKIP() << "exact values of the float32 kernel (values beyond float16's range)";
  std::vector<float> xs;
  for (float x = -6.f; x <= 6.f; x += 1.f / 512) xs.push_back(x);
  for (float x : {1e-30f, -1e-30f, 1e-8f, 0.0f, -0.0f, 0.49999997f, 0.5f, 0.50000006f, 3.9f, 4.0f, 10.f, 1e30f,
                  -1e30f, INFINITY, -INFINITY})
    xs.push_back(x);
  const int64_t n = static_cast<int64_t>(xs.size());
  ModelBuilder m;
  m.input("x", DType::Float32, {n}).output("y");
  m.node("Erf", {"x"}, {"y"});
  const Tensor got = run_model(m, {{"x", make_tensor(DType::Float32, {n}, xs.data())}}).at("y");
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double want = std::erf(static_cast<double>(xs[i])), g = got.data<float>()[i];
    const double tol = std::ldexp(std::fabs(want), -22) + std::ldexp(1.0, -26);
    EXPECT_NEAR(g, want, tol) << "erf(" << xs[i] << ")";
    worst = std::max(worst, std::fabs(g - want) / std::max(std::fabs(want), 1e-30));
  }
  std::printf("erf: worst relative error %.3g over %lld values\n", worst, static_cast<long long>(n));
  // NaN stays NaN.
  const float nan = NAN;
  ModelBuilder m1;
  m1.input("x", DType::Float32, {1}).output("y");
  m1.node("Erf", {"x"}, {"y"});
  EXPECT_TRUE(std::isnan(run_model(m1, {{"x", make_tensor(DType::Float32, {1}, &nan)}}).at("y").data<float>()[0]));
}

// Pow with a constant exponent of 2, 3 or 0.5 runs as multiplications or sqrt: same values as
// std::pow, including negative bases, signed zeros and infinities; other exponents keep pow().
// Sigmoid (and the SiLU of fused epilogues) run on an inlined exp (kernels/activation.cl), not the
// library call: checked densely against double precision, standalone and fused into a conv
// epilogue on whole vectors. Tolerance: 3 float roundings relative plus (1e-37 + |x| 1e-38)
// absolute (e^x saturates outside [-87, 88]), NaN kept, +-inf give 0/1 (Sigmoid) and NaN/inf
// (SiLU).
TEST(Elementwise, SigmoidAndSiluWithinThreeRoundingsEverywhere) {
  if (fp16_mode()) GTEST_SKIP() << "exact values of the float32 kernel (values beyond float16's range)";
  std::vector<float> xs;
  for (float x = -100.f; x <= 100.f; x += 1.f / 64) xs.push_back(x);
  for (float x : {1e-30f, -1e-30f, 0.0f, -0.0f, 86.9f, 87.5f, 88.5f, 89.f, -86.9f, -87.5f, -88.5f, -89.f, 1e30f,
                  -1e30f, INFINITY, -INFINITY, NAN})
    xs.push_back(x);
  while (xs.size() % 16) xs.push_back(0.25f);
  const int64_t n = static_cast<int64_t>(xs.size());
  auto check = [&](const Tensor& got, bool silu, const char* what) {
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      // SiLU(-inf) = -inf * 0: NaN, as x * sigmoid(x) gives in PyTorch and ONNX Runtime.
      const double x = xs[i], s = 1 / (1 + std::exp(-x)), want = silu ? x * s : s;
      const double g = got.data<float>()[i];
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(g)) << what << "(" << x << ") = " << g;
        continue;
      }
      if (std::isinf(want)) {
        EXPECT_EQ(g, want) << what << "(" << x << ")";
        continue;
      }
      EXPECT_NEAR(g, want, std::ldexp(std::fabs(want), -21) + 1e-37 + std::fabs(x) * 1e-38) << what << "(" << x << ")";
      if (std::fabs(want) > 1e-30) worst = std::max(worst, std::fabs(g - want) / std::fabs(want));
    }
    std::printf("%s: worst relative error %.3g over %lld values\n", what, worst, static_cast<long long>(n));
  };
  const Tensor x = make_tensor(DType::Float32, {n}, xs.data());
  {
    ModelBuilder m;
    m.input("x", DType::Float32, {n}).output("y");
    m.node("Sigmoid", {"x"}, {"y"});
    check(run_model(m, {{"x", x}}).at("y"), false, "sigmoid");
  }
  // x * Sigmoid(x) after a 1x1 conv with weight 1 fuses into the conv's epilogue (vectors of 16).
  ModelBuilder m;
  m.input("x", DType::Float32, {1, 1, 1, n}).output("y");
  const float one = 1.0f;
  m.initializer("w", make_tensor(DType::Float32, {1, 1, 1, 1}, &one));
  m.node("Conv", {"x", "w"}, {"c"});
  m.node("Sigmoid", {"c"}, {"s"});
  m.node("Mul", {"c", "s"}, {"y"});
  Tensor x4 = x;
  x4.shape = {1, 1, 1, n};
  check(run_model(m, {{"x", x4}}).at("y"), true, "silu (fused)");
}

TEST(Elementwise, PowWithConstantExponent) {
  if (fp16_mode()) GTEST_SKIP() << "exact values of the float32 kernel (values beyond float16's range)";
  std::vector<float> xs;
  for (float x = -5.f; x <= 5.f; x += 0.37f) xs.push_back(x);
  for (float x : {0.0f, -0.0f, INFINITY, -INFINITY, 1e20f, -1e20f, 1e-20f}) xs.push_back(x);
  const int64_t n = static_cast<int64_t>(xs.size());
  for (float e : {2.0f, 3.0f, 0.5f, 1.5f, -1.0f}) {
    ModelBuilder m;
    Tensor et(DType::Float32, {});
    et.data<float>()[0] = e;
    m.input("x", DType::Float32, {n}).output("y").initializer("e", et);
    m.node("Pow", {"x", "e"}, {"y"});
    const Tensor got = run_model(m, {{"x", make_tensor(DType::Float32, {n}, xs.data())}}).at("y");
    for (int64_t i = 0; i < n; ++i) {
      const float want = std::pow(xs[i], e), g = got.data<float>()[i];
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(g)) << "pow(" << xs[i] << ", " << e << ") = " << g;
        continue;
      }
      if (std::isinf(want) || want == 0) {
        EXPECT_EQ(g, want) << "pow(" << xs[i] << ", " << e << ")";
        EXPECT_EQ(std::signbit(g), std::signbit(want)) << "pow(" << xs[i] << ", " << e << ")";
        continue;
      }
      const double tol = std::ldexp(std::fabs(want), -21);
      EXPECT_NEAR(g, want, tol) << "pow(" << xs[i] << ", " << e << ")";
    }
  }
}

}  // namespace

// bfloat16 through Cast on the device and folded on the host: float32 -> bfloat16 rounds to
// nearest even (ties at half an ulp go to the even neighbour), keeps infinities and NaN, and
// bfloat16 -> float32 is exact; any other op on a bfloat16 tensor is refused.
namespace {

uint16_t bf16_reference(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint32_t lower = x & 0xffffu, upper = x >> 16;
  // Round half to even, written out as the three cases.
  if (lower > 0x8000u || (lower == 0x8000u && (upper & 1u))) return static_cast<uint16_t>(upper + 1);
  return static_cast<uint16_t>(upper);
}

}  // namespace

TEST(Elementwise, BFloat16Casts) {
  std::vector<float> v{0.0f, -0.0f, 1.0f, 1.00390625f /* tie, even: down */, 1.01171875f /* tie, odd: up */,
                       3.14159265f, -2.7182818f, 1e-40f, 3.3e38f, INFINITY, -INFINITY, NAN, 65504.0f, 1e-3f};
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> d(-1000, 1000);
  for (int i = 0; i < 200; ++i) v.push_back(d(rng));
  const int64_t n = static_cast<int64_t>(v.size());
  Tensor x(DType::Float32, {n});
  std::copy(v.begin(), v.end(), x.data<float>());
  for (bool folded : {false, true}) {
    ModelBuilder m(13);
    if (folded) m.initializer("x", x);
    else m.input("x", DType::Float32, {n});
    m.output("bf").output("back");
    attr_i(m.node("Cast", {"x"}, {"bf"}), "to", static_cast<int>(DType::BFloat16));
    attr_i(m.node("Cast", {"bf"}, {"back"}), "to", static_cast<int>(DType::Float32));
    ocl_infer::SessionOptions opt;  // not run_model: fp16 mode would cast x itself first
    const std::string bytes = m.bytes();
    auto s = ocl_infer::Session::from_memory(bytes.data(), bytes.size(), opt);
    auto out = folded ? s.run({}) : s.run({{"x", x}});
    ASSERT_EQ(out.at("bf").dtype, DType::BFloat16);
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t want = bf16_reference(v[i]);
      EXPECT_EQ(out.at("bf").data<uint16_t>()[i], want) << "element " << i << " = " << v[i] << (folded ? " (folded)" : "");
      const uint32_t bits = static_cast<uint32_t>(want) << 16;
      float back;
      std::memcpy(&back, &bits, 4);
      if (std::isnan(back)) EXPECT_TRUE(std::isnan(out.at("back").data<float>()[i]));
      else EXPECT_EQ(out.at("back").data<float>()[i], back) << "element " << i;
    }
  }
  ModelBuilder bad(13);
  bad.input("x", DType::Float32, {n}).output("y");
  attr_i(bad.node("Cast", {"x"}, {"bf"}), "to", static_cast<int>(DType::BFloat16));
  bad.node("Add", {"bf", "bf"}, {"y"});
  const std::string bytes = bad.bytes();
  EXPECT_THROW(ocl_infer::Session::from_memory(bytes.data(), bytes.size()).run({{"x", x}}), ocl_infer::UnsupportedError);
}
