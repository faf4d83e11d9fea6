// Random generators: what can be checked of random numbers -- shapes and types, ranges, the first
// two moments of 200,000 draws within 5 standard errors, Bernoulli's 0 and 1 probabilities exact,
// a seed that reproduces the runs of another session, runs of one session that differ, and a
// missing seed that differs between sessions. (The ONNX test data's expected values are numpy's
// draws; see tools/onnx_conformance.cpp.)
#include <gtest/gtest.h>

#include <cmath>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

using Shape = std::vector<int64_t>;

struct Moments {
  double mean = 0, var = 0, lo = 1e300, hi = -1e300;
};

Moments moments(const Tensor& t) {
  Moments m;
  const int64_t n = t.numel();
  auto at = [&](int64_t i) -> double {
    switch (t.dtype) {
      case DType::Float32: return t.data<float>()[i];
      case DType::Float64: return t.data<double>()[i];
      case DType::Float16: return ocl_infer::half_to_float(t.data<uint16_t>()[i]);
      case DType::Int64: return static_cast<double>(t.data<int64_t>()[i]);
      case DType::Bool: return t.data<uint8_t>()[i];
      default: ADD_FAILURE() << "dtype"; return 0;
    }
  };
  for (int64_t i = 0; i < n; ++i) {
    const double v = at(i);
    m.mean += v;
    m.lo = std::min(m.lo, v);
    m.hi = std::max(m.hi, v);
  }
  m.mean /= static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) m.var += (at(i) - m.mean) * (at(i) - m.mean);
  m.var /= static_cast<double>(n - 1);
  return m;
}

ModelBuilder generator(const std::string& op, const Shape& shape, float a, float b, bool seed, int dtype = 0) {
  ModelBuilder m(15);
  m.input("unused", DType::Float32, {1}).output("y");
  auto& n = m.node(op, {}, {"y"});
  attr_ints(n, "shape", shape);
  attr_f(n, op == "RandomNormal" ? "mean" : "low", a);
  attr_f(n, op == "RandomNormal" ? "scale" : "high", b);
  if (seed) attr_f(n, "seed", 7);
  if (dtype) attr_i(n, "dtype", dtype);
  return m;
}

const std::map<std::string, Tensor> kNoInput{{"unused", Tensor(DType::Float32, {1})}};
constexpr int64_t kDraws = 200000;

TEST(Random, UniformAndNormalMoments) {
  {
    auto y = run_model(generator("RandomUniform", {400, 500}, -2, 3, true), kNoInput).at("y");
    ASSERT_EQ(y.shape, (Shape{400, 500}));
    const Moments m = moments(y);
    EXPECT_GE(m.lo, -2.0);
    EXPECT_LT(m.hi, 3.0);
    EXPECT_NEAR(m.mean, 0.5, 5 * std::sqrt(25.0 / 12 / kDraws));
    EXPECT_NEAR(m.var, 25.0 / 12, 0.02 * 25.0 / 12);
  }
  if (!test_device().fp64) {  // (rusticl) a clear error, not a build log
    EXPECT_THROW(run_model(generator("RandomNormal", {kDraws}, 1.5, 0.5, true, static_cast<int>(DType::Float64)), kNoInput),
                 ocl_infer::UnsupportedError);
  } else {
    auto y = run_model(generator("RandomNormal", {kDraws}, 1.5, 0.5, true, static_cast<int>(DType::Float64)), kNoInput).at("y");
    ASSERT_EQ(y.dtype, DType::Float64);
    const Moments m = moments(y);
    EXPECT_NEAR(m.mean, 1.5, 5 * 0.5 / std::sqrt(static_cast<double>(kDraws)));
    EXPECT_NEAR(m.var, 0.25, 0.02 * 0.25);
    // Tails: about 0.27 % of normal draws lie beyond 3 sigma.
    int64_t beyond = 0;
    for (int64_t i = 0; i < y.numel(); ++i) beyond += std::fabs(y.data<double>()[i] - 1.5) > 1.5;
    EXPECT_NEAR(static_cast<double>(beyond) / kDraws, 0.0027, 0.0006);
  }
}

TEST(Random, LikeAndBernoulli) {
  std::mt19937 rng(1);
  const Tensor like = random_tensor({300, 700}, rng);
  {
    ModelBuilder m(15);
    m.input("x", DType::Float32, like.shape).output("y");
    m.node("RandomNormalLike", {"x"}, {"y"});
    auto y = run_model(m, {{"x", like}}).at("y");
    ASSERT_EQ(y.shape, like.shape);
    ASSERT_EQ(y.dtype, DType::Float32);
    EXPECT_NEAR(moments(y).mean, 0.0, 5 / std::sqrt(static_cast<double>(y.numel())));
  }
  for (float p : {0.0f, 1.0f, 0.3f}) {
    Tensor probs(DType::Float32, {kDraws});
    std::fill(probs.data<float>(), probs.data<float>() + kDraws, p);
    for (DType out : {DType::Float32, DType::Int64, DType::Bool}) {
      ModelBuilder m(15);
      m.input("p", DType::Float32, {kDraws}).output("y");
      attr_i(m.node("Bernoulli", {"p"}, {"y"}), "dtype", static_cast<int>(out));
      auto y = run_model(m, {{"p", probs}}).at("y");
      ASSERT_EQ(y.dtype, out);
      const Moments mo = moments(y);
      EXPECT_GE(mo.lo, 0.0);
      EXPECT_LE(mo.hi, 1.0);
      if (p == 0 || p == 1) EXPECT_EQ(mo.mean, p) << "p " << p;
      else EXPECT_NEAR(mo.mean, p, 5 * std::sqrt(p * (1 - p) / kDraws)) << "p " << p;
    }
  }
}

bool same(const Tensor& a, const Tensor& b) { return a.bytes == b.bytes; }

TEST(Random, SeedsAndRuns) {
  const ModelBuilder seeded = generator("RandomUniform", {1000}, 0, 1, true);
  auto a = open_session(seeded), b = open_session(seeded);
  const Tensor a1 = a.run(kNoInput).at("y"), a2 = a.run(kNoInput).at("y");
  const Tensor b1 = b.run(kNoInput).at("y"), b2 = b.run(kNoInput).at("y");
  EXPECT_TRUE(same(a1, b1)) << "a seed gives the same first run in every session";
  EXPECT_TRUE(same(a2, b2)) << "... and the same second run";
  EXPECT_FALSE(same(a1, a2)) << "each run draws new numbers";
  const ModelBuilder unseeded = generator("RandomUniform", {1000}, 0, 1, false);
  EXPECT_FALSE(same(open_session(unseeded).run(kNoInput).at("y"), open_session(unseeded).run(kNoInput).at("y")))
      << "without a seed, sessions differ";
}

TEST(Random, Errors) {
  ModelBuilder m(15);
  m.input("unused", DType::Float32, {1}).output("y");
  m.node("RandomUniform", {}, {"y"});  // no shape
  EXPECT_THROW(run_model(m, kNoInput), ocl_infer::ModelError);
  ModelBuilder b(15);
  b.input("p", DType::Int64, {3}).output("y");
  b.node("Bernoulli", {"p"}, {"y"});
  Tensor p(DType::Int64, {3});
  EXPECT_THROW(run_model(b, {{"p", p}}), ocl_infer::ModelError);
}

}  // namespace
