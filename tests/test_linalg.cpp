// ReverseSequence and Det against references written here: both axis orders, ragged lengths
// including 0 and the whole sequence, int64 and float data, a length beyond the sequence (run-time
// and constant); determinants of random, singular, permutation, 1x1 and batched matrices against a
// cofactor-free double-precision elimination with full pivoting, and non-square input.
#include <gtest/gtest.h>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

using Shape = std::vector<int64_t>;

Tensor lens_tensor(const std::vector<int64_t>& v) {
  Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}

TEST(ReverseSequence, BothAxisOrdersAndRaggedLengths) {
  std::mt19937 rng(1);
  for (int batch_axis : {0, 1}) {
    const int64_t B = 4, T = 6, inner = 3;
    const Shape s = batch_axis == 0 ? Shape{B, T, inner} : Shape{T, B, inner};
    const Tensor x = random_tensor(s, rng);
    const std::vector<int64_t> lens{0, 6, 1, 4};
    ModelBuilder m(13);
    m.input("x", DType::Float32, s).input("lens", DType::Int64, {B}).output("y");
    auto& n = m.node("ReverseSequence", {"x", "lens"}, {"y"});
    attr_i(n, "batch_axis", batch_axis);
    attr_i(n, "time_axis", 1 - batch_axis);
    auto out = run_model(m, {{"x", x}, {"lens", lens_tensor(lens)}});
    Tensor want(DType::Float32, s);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t k = 0; k < inner; ++k) {
          const int64_t st = t < lens[b] ? lens[b] - 1 - t : t;
          auto at = [&](int64_t tt) { return batch_axis == 0 ? (b * T + tt) * inner + k : (tt * B + b) * inner + k; };
          want.data<float>()[at(t)] = x.data<float>()[at(st)];
        }
    EXPECT_LE(rel_error(out.at("y"), want), 0.0) << "batch_axis " << batch_axis;
  }
}

TEST(ReverseSequence, LengthBeyondTheSequence) {
  const Tensor x(DType::Int64, {3, 2});
  ModelBuilder m(13);
  m.input("x", DType::Int64, {3, 2}).input("lens", DType::Int64, {2}).output("y");
  m.node("ReverseSequence", {"x", "lens"}, {"y"});
  Tensor xv(DType::Int64, {3, 2});
  for (int i = 0; i < 6; ++i) xv.data<int64_t>()[i] = i;
  try {
    run_model(m, {{"x", xv}, {"lens", lens_tensor({1, 4})}});
    ADD_FAILURE() << "no error";
  } catch (const ocl_infer::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("sequence_lens"), std::string::npos) << e.what();
  }
  ModelBuilder c(13);
  c.input("x", DType::Int64, {3, 2}).initializer("lens", lens_tensor({1, 4})).output("y");
  c.node("ReverseSequence", {"x", "lens"}, {"y"});
  EXPECT_THROW(run_model(c, {{"x", xv}}), ocl_infer::ModelError);
}

// Gaussian elimination with full pivoting in double.
double det_reference(std::vector<double> a, int64_t m) {
  double det = 1;
  for (int64_t c = 0; c < m; ++c) {
    int64_t pr = c, pc = c;
    for (int64_t r = c; r < m; ++r)
      for (int64_t k = c; k < m; ++k)
        if (std::fabs(a[r * m + k]) > std::fabs(a[pr * m + pc])) pr = r, pc = k;
    if (a[pr * m + pc] == 0) return 0;
    if (pr != c) {
      for (int64_t k = 0; k < m; ++k) std::swap(a[pr * m + k], a[c * m + k]);
      det = -det;
    }
    if (pc != c) {
      for (int64_t r = 0; r < m; ++r) std::swap(a[r * m + pc], a[r * m + c]);
      det = -det;
    }
    det *= a[c * m + c];
    for (int64_t r = c + 1; r < m; ++r) {
      const double f = a[r * m + c] / a[c * m + c];
      for (int64_t k = c; k < m; ++k) a[r * m + k] -= f * a[c * m + k];
    }
  }
  return det;
}

TEST(Det, RandomSingularPermutationAndBatched) {
  std::mt19937 rng(2);
  for (int64_t m : {1, 2, 3, 7, 12}) {
    const int64_t batch = 5;
    Tensor x = random_tensor({batch, m, m}, rng);
    // Matrix 1: singular (two equal rows); matrix 2: a permutation (det +-1).
    if (m > 1)
      for (int64_t k = 0; k < m; ++k) x.data<float>()[m * m + m + k] = x.data<float>()[m * m + k];
    for (int64_t r = 0; r < m; ++r)
      for (int64_t k = 0; k < m; ++k) x.data<float>()[2 * m * m + r * m + k] = k == (r + 1) % m ? 1.0f : 0.0f;
    ModelBuilder b(13);
    b.input("x", DType::Float32, x.shape).output("d");
    b.node("Det", {"x"}, {"d"});
    auto out = run_model(b, {{"x", x}});
    ASSERT_EQ(out.at("d").shape, Shape{batch});
    for (int64_t g = 0; g < batch; ++g) {
      std::vector<double> a(x.data<float>() + g * m * m, x.data<float>() + (g + 1) * m * m);
      const double want = det_reference(a, m);
      EXPECT_NEAR(out.at("d").data<float>()[g], want, 1e-5 * std::max(1.0, std::fabs(want)) + (fp16_mode() ? 2e-3 * std::fabs(want) : 0))
          << "m " << m << " matrix " << g;
    }
  }
}

TEST(Det, NonSquareIsAnError) {
  ModelBuilder b(13);
  b.input("x", DType::Float32, {2, 3, 4}).output("d");
  b.node("Det", {"x"}, {"d"});
  std::mt19937 rng(3);
  EXPECT_THROW(run_model(b, {{"x", random_tensor({2, 3, 4}, rng)}}), ocl_infer::ModelError);
}

}  // namespace
