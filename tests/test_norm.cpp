// Normalizations and Softmax/LogSoftmax/Hardmax against CPU references on random shapes (odd and
// prime sizes), plus error cases.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

using Shape = std::vector<int64_t>;

float* f(Tensor& t) {
  return t.data<float>();
}
const float* f(const Tensor& t) {
  return t.data<float>();
}

int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d) p *= s[d];
  return p;
}

// ---- BatchNormalization ----
Tensor ref_batchnorm(const Tensor& x, const Tensor& sc, const Tensor& b, const Tensor& mean,
                     const Tensor& var, float eps) {
  Tensor y(DType::Float32, x.shape);
  const int64_t c_n = x.shape[1], s = prod(x.shape, 2, x.shape.size());
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t c = (i / s) % c_n;
    f(y)[i] = (f(x)[i] - f(mean)[c]) / std::sqrt(f(var)[c] + eps) * f(sc)[c] + f(b)[c];
  }
  return y;
}

TEST(BatchNorm, ConstantAndRuntimeParametersMatchReference) {
  std::mt19937 rng(1);
  for (Shape s : {Shape{2, 3, 5, 7}, Shape{3, 4}, Shape{1, 5, 3, 3, 3}, Shape{2, 13, 17}}) {
    for (bool constant : {true, false}) {
      const int64_t c = s[1];
      Tensor x = random_tensor(s, rng, -3, 3), sc = random_tensor({c}, rng, 0.5f, 2),
             b = random_tensor({c}, rng), mean = random_tensor({c}, rng),
             var = random_tensor({c}, rng, 0.1f, 2);
      ModelBuilder m(15);
      m.input("x", DType::Float32, s).output("y");
      std::map<std::string, Tensor> feeds{{"x", x}};
      const char* names[] = {"scale", "b", "mean", "var"};
      const Tensor* vals[] = {&sc, &b, &mean, &var};
      for (int k = 0; k < 4; ++k) {
        if (constant)
          m.initializer(names[k], *vals[k]);
        else {
          m.input(names[k], DType::Float32, {c});
          feeds[names[k]] = *vals[k];
        }
      }
      attr_f(m.node("BatchNormalization", {"x", "scale", "b", "mean", "var"}, {"y"}), "epsilon",
             1e-3f);
      auto out = run_model(m, feeds);
      EXPECT_LE(rel_error(out.at("y"), ref_batchnorm(x, sc, b, mean, var, 1e-3f)), 1e-5)
          << ocl_infer::shape_to_string(s) << (constant ? " constant" : " runtime");
    }
  }
}

// Constant BatchNormalization over planes of 16+ values takes bn_rows (64 values a work-item on
// CPU devices, 8 on GPUs, a row's last chunk element by element): against the reference on rows
// shorter than a chunk, with a partial last chunk and whole ones, batch > 1, 3-D and 1-D spatial
// dims; with a fused Relu (DenseNet's pre-activation BN + ReLU after a Concat) and a fused
// residual add; the plan must name the kernel, and BN over [N, C] (planes of one) keeps
// bn_scale_shift.
TEST(BatchNorm, RowsKernelMatchesReference) {
  std::mt19937 rng(5);
  for (Shape s : {Shape{1, 3, 4, 4}, Shape{2, 5, 9, 13}, Shape{1, 4, 8, 16}, Shape{1, 2, 56, 56}, Shape{1, 3, 3, 5, 7},
                  Shape{2, 3, 77}, Shape{1, 6, 1, 16}, Shape{3, 7}}) {
    const int64_t c = s[1];
    const int64_t block = prod(s, 2, s.size());
    Tensor x = random_tensor(s, rng, -3, 3), sc = random_tensor({c}, rng, 0.5f, 2), b = random_tensor({c}, rng),
           mean = random_tensor({c}, rng), var = random_tensor({c}, rng, 0.1f, 2);
    for (int epi = 0; epi < 3; ++epi) {  // none, Relu, residual add + Relu
      ModelBuilder m(15);
      m.input("x", DType::Float32, s).output("y");
      m.initializer("scale", sc).initializer("b", b).initializer("mean", mean).initializer("var", var);
      attr_f(m.node("BatchNormalization", {"x", "scale", "b", "mean", "var"}, {epi ? "bn" : "y"}), "epsilon", 1e-3f);
      Tensor want = ref_batchnorm(x, sc, b, mean, var, 1e-3f);
      if (epi == 1) m.node("Relu", {"bn"}, {"y"});
      if (epi == 2) {
        m.node("Add", {"bn", "x"}, {"sum"});
        m.node("Relu", {"sum"}, {"y"});
      }
      for (int64_t i = 0; i < want.numel(); ++i) {
        if (epi == 2) f(want)[i] += f(x)[i];
        if (epi) f(want)[i] = std::max(f(want)[i], 0.0f);
      }
      auto session = open_session(m, ocl_infer::SessionOptions{});
      const Tensor y = session.run({{"x", x}}).at("y");
      const std::string what = ocl_infer::shape_to_string(s) + " epilogue " + std::to_string(epi);
      EXPECT_LE(rel_error(y, want), fp16_mode() ? 2e-3 : 1e-5) << what;
      const std::string plan = session.dump("plan");
      EXPECT_EQ(plan.find("bn_rows") != std::string::npos, block >= 16) << what << "\n" << plan;
      if (epi == 0) {
        EXPECT_EQ(plan.find("bn_scale_shift") != std::string::npos, block < 16) << what << "\n" << plan;
      }
    }
  }
}

TEST(BatchNorm, TrainingModeIsUnsupportedAndBadShapesFail) {
  Tensor one(DType::Float32, {3});
  for (int k = 0; k < 3; ++k) f(one)[k] = 1;
  ModelBuilder m(15);
  m.input("x", DType::Float32, {2, 3, 4}).output("y");
  for (const char* n : {"scale", "b", "mean", "var"}) m.initializer(n, one);
  attr_i(m.node("BatchNormalization", {"x", "scale", "b", "mean", "var"}, {"y"}), "training_mode",
         1);
  Tensor x(DType::Float32, {2, 3, 4});
  EXPECT_THROW(run_model(m, {{"x", x}}), ocl_infer::UnsupportedError);

  ModelBuilder bad(15);
  bad.input("x", DType::Float32, {2, 5, 4}).output("y");
  for (const char* n : {"scale", "b", "mean", "var"}) bad.initializer(n, one);
  bad.node("BatchNormalization", {"x", "scale", "b", "mean", "var"}, {"y"});
  Tensor x5(DType::Float32, {2, 5, 4});
  EXPECT_THROW(run_model(bad, {{"x", x5}}), ocl_infer::ModelError);
}

// ---- row normalizations ----
// Normalizes x viewed as [rows, len] where `row_of(i)` and the caller's layout agree: here every
// reference works on contiguous rows after an explicit gather.
void normalize_rows(const std::vector<std::vector<int64_t>>& rows, const Tensor& x, Tensor& y,
                    float eps, bool std_plus_eps, std::vector<float>* means = nullptr,
                    std::vector<float>* invs = nullptr) {
  for (auto& r : rows) {
    double s = 0, q = 0;
    for (int64_t i : r) s += f(x)[i];
    double mean = s / r.size();
    for (int64_t i : r) q += (f(x)[i] - mean) * (f(x)[i] - mean);
    double var = q / r.size();
    double inv = std_plus_eps ? 1 / (std::sqrt(var) + eps) : 1 / std::sqrt(var + eps);
    for (int64_t i : r) f(y)[i] = static_cast<float>((f(x)[i] - mean) * inv);
    if (means) means->push_back(static_cast<float>(mean));
    if (invs) invs->push_back(static_cast<float>(inv));
  }
}

TEST(LayerNorm, MatchesReferenceWithStatsOutputs) {
  std::mt19937 rng(2);
  struct Case {
    Shape x;
    int64_t axis;
    Shape scale;  // may broadcast over the leading normalized dims
    bool bias;
  };
  for (const Case& c : {Case{{2, 5, 97}, -1, {97}, true}, Case{{3, 7, 11}, 1, {7, 11}, false},
                        Case{{4, 6, 13}, 1, {13}, true}, Case{{2, 3, 5, 7}, 0, {2, 3, 5, 7}, true},
                        Case{{3, 1031}, 1, {1031}, true}}) {
    const size_t axis = c.axis < 0 ? c.axis + c.x.size() : c.axis;
    const int64_t rows = prod(c.x, 0, axis), len = prod(c.x, axis, c.x.size());
    Tensor x = random_tensor(c.x, rng, -2, 5), sc = random_tensor(c.scale, rng),
           b = random_tensor(c.scale, rng);
    ModelBuilder m(17);
    m.input("x", DType::Float32, c.x)
        .initializer("scale", sc)
        .output("y")
        .output("mean")
        .output("inv");
    if (c.bias) m.initializer("b", b);
    auto& n = m.node("LayerNormalization", {"x", "scale", c.bias ? "b" : ""}, {"y", "mean", "inv"});
    attr_i(n, "axis", c.axis);
    attr_f(n, "epsilon", 1e-4f);
    auto out = run_model(m, {{"x", x}});

    std::vector<std::vector<int64_t>> row_idx(rows);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < len; ++j) row_idx[r].push_back(r * len + j);
    Tensor y(DType::Float32, c.x);
    std::vector<float> means, invs;
    normalize_rows(row_idx, x, y, 1e-4f, false, &means, &invs);
    const int64_t sn = sc.numel();
    for (int64_t i = 0; i < y.numel(); ++i)
      f(y)[i] = f(y)[i] * f(sc)[i % len % sn] + (c.bias ? f(b)[i % len % sn] : 0.f);
    Shape stats(c.x.begin(), c.x.begin() + axis);
    stats.resize(c.x.size(), 1);
    Tensor mt = make_tensor(DType::Float32, stats, means.data());
    Tensor it = make_tensor(DType::Float32, stats, invs.data());
    EXPECT_LE(rel_error(out.at("y"), y), 1e-5) << ocl_infer::shape_to_string(c.x);
    EXPECT_LE(rel_error(out.at("mean"), mt), 1e-5) << ocl_infer::shape_to_string(c.x);
    EXPECT_LE(rel_error(out.at("inv"), it), 1e-4) << ocl_infer::shape_to_string(c.x);
  }
}

TEST(LayerNorm, BadAxisIsModelError) {
  ModelBuilder m(17);
  Tensor sc(DType::Float32, {4});
  m.input("x", DType::Float32, {2, 4}).initializer("scale", sc).output("y");
  attr_i(m.node("LayerNormalization", {"x", "scale"}, {"y"}), "axis", 2);
  Tensor x(DType::Float32, {2, 4});
  EXPECT_THROW(run_model(m, {{"x", x}}), ocl_infer::ModelError);
}

TEST(InstanceNorm, MatchesReference) {
  std::mt19937 rng(3);
  for (Shape s : {Shape{2, 3, 7, 11}, Shape{1, 5, 97}, Shape{3, 2, 3, 4, 5}}) {
    const int64_t c_n = s[1], sp = prod(s, 2, s.size());
    Tensor x = random_tensor(s, rng, -1, 4), sc = random_tensor({c_n}, rng),
           b = random_tensor({c_n}, rng);
    ModelBuilder m(6);
    m.input("x", DType::Float32, s).initializer("scale", sc).initializer("b", b).output("y");
    attr_f(m.node("InstanceNormalization", {"x", "scale", "b"}, {"y"}), "epsilon", 1e-3f);
    auto out = run_model(m, {{"x", x}});
    std::vector<std::vector<int64_t>> rows(s[0] * c_n);
    for (int64_t i = 0; i < x.numel(); ++i) rows[i / sp].push_back(i);
    Tensor y(DType::Float32, s);
    normalize_rows(rows, x, y, 1e-3f, false);
    for (int64_t i = 0; i < y.numel(); ++i) {
      int64_t c = (i / sp) % c_n;
      f(y)[i] = f(y)[i] * f(sc)[c] + f(b)[c];
    }
    EXPECT_LE(rel_error(out.at("y"), y), 1e-5) << ocl_infer::shape_to_string(s);
  }
}

TEST(MeanVarianceNorm, DefaultAxesMatchReference) {
  std::mt19937 rng(4);
  Shape s{3, 5, 7, 2};
  Tensor x = random_tensor(s, rng, -1, 3);
  ModelBuilder m(13);
  m.input("x", DType::Float32, s).output("y");
  m.node("MeanVarianceNormalization", {"x"}, {"y"});
  auto out = run_model(m, {{"x", x}});
  // Default axes {0, 2, 3}: one row per channel.
  std::vector<std::vector<int64_t>> rows(s[1]);
  for (int64_t i = 0; i < x.numel(); ++i) rows[(i / (s[2] * s[3])) % s[1]].push_back(i);
  Tensor y(DType::Float32, s);
  normalize_rows(rows, x, y, 1e-9f, true);
  EXPECT_LE(rel_error(out.at("y"), y), 1e-5);
}

TEST(Lrn, MatchesReference) {
  std::mt19937 rng(5);
  for (int size : {1, 3, 4, 5}) {
    Shape s{2, 7, 5, 3};
    Tensor x = random_tensor(s, rng, -2, 2);
    ModelBuilder m(13);
    m.input("x", DType::Float32, s).output("y");
    auto& n = m.node("LRN", {"x"}, {"y"});
    attr_i(n, "size", size);
    attr_f(n, "alpha", 0.002f);
    attr_f(n, "beta", 0.6f);
    attr_f(n, "bias", 1.5f);
    auto out = run_model(m, {{"x", x}});
    Tensor y(DType::Float32, s);
    const int64_t c_n = s[1], sp = s[2] * s[3];
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t c = (i / sp) % c_n;
      double sq = 0;
      for (int64_t k = c - (size - 1) / 2; k <= c + size / 2; ++k)
        if (k >= 0 && k < c_n) sq += std::pow(f(x)[i + (k - c) * sp], 2);
      f(y)[i] = static_cast<float>(f(x)[i] / std::pow(1.5 + 0.002 / size * sq, 0.6));
    }
    EXPECT_LE(rel_error(out.at("y"), y), 1e-5) << "size " << size;
  }
}

// ---- Softmax, LogSoftmax, Hardmax ----
// x viewed as [outer, len, inner].
Tensor ref_softmax(const std::string& op, const Tensor& x, int64_t outer, int64_t len,
                   int64_t inner) {
  Tensor y(DType::Float32, x.shape);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return (o * len + k) * inner + i; };
      double m = -INFINITY, s = 0;
      int64_t arg = 0;
      for (int64_t k = 0; k < len; ++k) {
        if (f(x)[at(k)] > m) arg = k;
        m = std::max<double>(m, f(x)[at(k)]);
      }
      for (int64_t k = 0; k < len; ++k) s += std::exp(f(x)[at(k)] - m);
      for (int64_t k = 0; k < len; ++k) {
        double v = f(x)[at(k)];
        f(y)[at(k)] = static_cast<float>(op == "Softmax"      ? std::exp(v - m) / s
                                         : op == "LogSoftmax" ? v - m - std::log(s)
                                                              : (k == arg ? 1.0 : 0.0));
      }
    }
  return y;
}

TEST(Softmax, AllVariantsMatchReference) {
  std::mt19937 rng(6);
  struct Case {
    Shape s;
    int64_t axis;
    int opset;
  };
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    for (const Case& c : {Case{{3, 37, 5}, 1, 13}, Case{{3, 37, 5}, 0, 13},
                          Case{{3, 37, 5}, -1, 13}, Case{{4, 1000}, -1, 13}, Case{{2, 3, 4}, 1, 11},
                          Case{{5, 7, 3}, 0, 11}, Case{{2, 3, 41}, 2, 11},
                          // Contiguous rows on CPU devices (softmax_rows_vec): whole 16-, 8- and
                          // 4-wide vectors, and a row too short for a vector.
                          Case{{1, 4, 6, 64}, -1, 13}, Case{{3, 8}, -1, 13}, Case{{5, 4}, 1, 13},
                          Case{{4, 3}, -1, 13},
                          // An axis before the last on CPU devices (softmax_inner_vec): inner runs
                          // of whole 16-, 8- and 4-wide vectors, with a shorter last run, and
                          // YOLOv8's DFL shape (16 bins over [1,16,4,N]).
                          Case{{2, 5, 37}, 1, 13}, Case{{3, 6, 9}, 1, 13}, Case{{2, 3, 5, 1}, 1, 13},
                          Case{{1, 16, 4, 84}, 1, 13}}) {
      const size_t axis = c.axis < 0 ? c.axis + c.s.size() : c.axis;
      int64_t outer = prod(c.s, 0, axis), len, inner;
      if (c.opset < 13) {  // coerced to 2-D at axis
        len = prod(c.s, axis, c.s.size());
        inner = 1;
      } else {
        len = c.s[axis];
        inner = prod(c.s, axis + 1, c.s.size());
      }
      // Large values check the max subtraction.
      Tensor x = random_tensor(c.s, rng, -50, 50);
      ModelBuilder m(c.opset);
      m.input("x", DType::Float32, c.s).output("y");
      attr_i(m.node(op, {"x"}, {"y"}), "axis", c.axis);
      auto out = run_model(m, {{"x", x}});
      EXPECT_LE(rel_error(out.at("y"), ref_softmax(op, x, outer, len, inner)), 1e-5)
          << op << " " << ocl_infer::shape_to_string(c.s) << " axis " << c.axis << " opset "
          << c.opset;
    }
  }
}

// Masked attention rows: -inf entries (exp 0, LogSoftmax -inf) among finite ones, in the vector
// part of a row and in its tail; opset 13 Softmax and LogSoftmax over the last axis.
TEST(Softmax, MinusInfinityEntriesAsAttentionMasks) {
  std::mt19937 rng(8);
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (int64_t len : {64, 19, 7}) {
      const Shape s{2, 5, len};
      Tensor x = random_tensor(s, rng, -8, 8);
      for (int64_t r = 0; r < 10; ++r)
        for (int64_t k = 0; k < len; ++k)
          if (k > r + 1) f(x)[r * len + k] = -INFINITY;  // causal-style: row r sees r + 2 entries
      // The last row's maximum in its last entry (a row's tail past its vectors): exp(100 - 8)
      // overflows float unless that entry is in the maximum.
      f(x)[10 * len - 1] = 100.0f;
      ModelBuilder m(13);
      m.input("x", DType::Float32, s).output("y");
      attr_i(m.node(op, {"x"}, {"y"}), "axis", -1);
      auto out = run_model(m, {{"x", x}});
      const Tensor want = ref_softmax(op, x, 10, len, 1);
      for (int64_t i = 0; i < x.numel(); ++i) {
        const float g = f(out.at("y"))[i], w = f(want)[i];
        if (std::isinf(w)) EXPECT_EQ(g, w) << op << " len " << len << " at " << i;
        else  // the suite's float32 tolerance, plus one float16 rounding in the fp16 run
          EXPECT_NEAR(g, w, 1e-5 * std::max(1.0f, std::fabs(w)) + (fp16_mode() ? half_rounding(w) : 0.0))
              << op << " len " << len << " at " << i;
      }
    }
}

TEST(Softmax, IntegerInputIsModelError) {
  ModelBuilder m(13);
  m.input("x", DType::Int32, {2, 3}).output("y");
  m.node("Softmax", {"x"}, {"y"});
  Tensor x(DType::Int32, {2, 3});
  EXPECT_THROW(run_model(m, {{"x", x}}), ocl_infer::ModelError);
}

}  // namespace
