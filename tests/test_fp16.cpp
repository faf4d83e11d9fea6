// Precision::Float16 (float16 storage, float32 arithmetic) on what it is for and against what it
// must not do: long mixed-sign reductions, a K=4096 MatMul, a 20,000-wide Softmax and a
// normalisation of offset data, where a naive all-fp16 pipeline (fp16 accumulation) loses the
// result. Each test computes that naive fp16 result on the host too and checks that it misses the
// tolerance by a wide margin, so the tolerance is tight enough to fail. Also: float16 models,
// the fp32_ops policy, constants beyond float16's range, and memory halved in the plan.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

using ocl_infer::Precision;

float h(double v) { return to_half(static_cast<float>(v)); }

ocl_infer::Session session(const ModelBuilder& m, Precision p, std::vector<std::string> fp32_ops = {},
                           std::function<void(const std::string&)> log = {}) {
  ocl_infer::SessionOptions opt;
  opt.precision = p;
  opt.fp32_ops = std::move(fp32_ops);
  opt.log = std::move(log);
  const std::string b = m.bytes();
  return ocl_infer::Session::from_memory(b.data(), b.size(), opt);
}

// Half-representable values uniform in [lo, hi).
std::vector<float> halves(int64_t n, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = h(d(rng));
  return v;
}

Tensor tensor(const std::vector<int64_t>& shape, const std::vector<float>& v) {
  Tensor t(DType::Float32, shape);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

// Bound on float32 accumulation error for a sum of n terms of total magnitude `abs_sum` (a
// generous sqrt(n) model: 4 sqrt(n) 2^-24 abs_sum), plus one float16 rounding of the result.
double fp32_sum_tolerance(double exact, double abs_sum, int64_t n) {
  return half_rounding(exact) + 4 * std::sqrt(static_cast<double>(n)) * std::ldexp(abs_sum, -24);
}

// Float16 storage converts on the device, with the CPU's conversion instructions where the kernel
// compiler offers them and with integer code elsewhere (kernels/storage.cl; the test_fp16_soft
// ctest forces the integer code): every one of the 65,536 halves to float32 bit-exact, and float32
// values around every rounding boundary (each half, each midpoint between neighbours: ties go to
// even, one float ulp either side, the overflow threshold, subnormals, float denormals) to half
// bit-exact against the host's conversions; NaN stays NaN (its payload may differ).
TEST(Fp16, EveryHalfAndEveryRoundingBoundaryConvertsExactly) {
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> f;
  for (uint32_t b = 0; b < 0x7c00; ++b) {
    const float lo = ocl_infer::half_to_float(static_cast<uint16_t>(b)),
                hi = ocl_infer::half_to_float(static_cast<uint16_t>(b + 1));
    const float mid = static_cast<float>((static_cast<double>(lo) + hi) / 2);
    for (float v : {lo, mid, std::nextafter(mid, 0.f), std::nextafter(mid, 1e30f)}) {
      f.push_back(v);
      f.push_back(-v);
    }
  }
  for (float v : {65504.f, 65519.99f, 65520.f, 1e5f, 3e38f, INFINITY, 1e-45f, 1e-39f, 2.9e-8f, 3e-8f, 0.f})
    f.push_back(v), f.push_back(-v);
  f.push_back(NAN);
  ModelBuilder m(13);
  const int64_t nf = static_cast<int64_t>(f.size());
  m.input("h", DType::Float16, {65536}).input("f", DType::Float32, {nf}).output("hf").output("fh");
  attr_i(m.node("Cast", {"h"}, {"hf"}), "to", static_cast<int>(DType::Float32));
  attr_i(m.node("Cast", {"f"}, {"fh"}), "to", static_cast<int>(DType::Float16));
  Tensor th(DType::Float16, {65536});
  std::copy(all.begin(), all.end(), th.data<uint16_t>());
  const auto out = session(m, Precision::Float32).run({{"h", th}, {"f", tensor({nf}, f)}});
  const Tensor &hf = out.at("hf"), &fh = out.at("fh");
  int wrong = 0;
  for (size_t i = 0; i < all.size() && wrong < 10; ++i) {
    const float want = ocl_infer::half_to_float(all[i]), got = hf.data<float>()[i];
    const bool ok = std::isnan(want) ? std::isnan(got) : std::memcmp(&want, &got, 4) == 0;
    if (!ok) ++wrong, ADD_FAILURE() << "half 0x" << std::hex << all[i] << " -> " << got << ", want " << want;
  }
  for (size_t i = 0; i < f.size() && wrong < 10; ++i) {
    const uint16_t want = ocl_infer::float_to_half(f[i]), got = fh.data<uint16_t>()[i];
    const bool ok = std::isnan(f[i]) ? (got & 0x7c00) == 0x7c00 && (got & 0x3ff) : got == want;
    if (!ok)
      ++wrong, ADD_FAILURE() << "float " << f[i] << " (0x" << std::hex << [&] { uint32_t u; std::memcpy(&u, &f[i], 4); return u; }()
                             << ") -> half 0x" << got << ", want 0x" << want;
  }
}

TEST(Fp16, LongMixedSignReductionsKeepFloat32Accumulation) {
  std::mt19937 rng(1);
  const int64_t rows = 3, K = 16384;
  // Row 0 drifts upward (sum about 12,000: float16's spacing there, 8, swallows every term of an
  // fp16 running sum, which stalls near 4096); row 1 climbs to about 6,000 and comes back to near
  // zero (the partial sums' rounding stays in the result); row 2 is a plain random walk (checked
  // for accuracy only: fp16 accumulation is merely poor there).
  std::vector<float> xs = halves(K, rng, -0.5f, 2.0f), up = halves(K / 2, rng, 0.0f, 1.5f),
                     down = halves(K / 2, rng, -1.5f, 0.0f), walk = halves(K, rng, -1.0f, 1.0f);
  xs.insert(xs.end(), up.begin(), up.end());
  xs.insert(xs.end(), down.begin(), down.end());
  xs.insert(xs.end(), walk.begin(), walk.end());
  for (const std::string op : {"ReduceSum", "ReduceMean"}) {
    // Neg before and after: the reduction reads and writes float16 storage (graph inputs and
    // outputs themselves stay float32).
    ModelBuilder m(12);  // axes as an attribute
    m.input("x", DType::Float32, {rows, K}).output("y");
    m.node("Neg", {"x"}, {"nx"});
    auto& r = m.node(op, {"nx"}, {"r"});
    attr_ints(r, "axes", {1});
    attr_i(r, "keepdims", 0);
    m.node("Neg", {"r"}, {"y"});
    auto s = session(m, Precision::Float16);
    const Tensor y = s.run({{"x", tensor({rows, K}, xs)}}).at("y");
    ASSERT_EQ(y.numel(), rows);
    const double scale = op == "ReduceMean" ? 1.0 / K : 1.0;
    for (int64_t i = 0; i < rows; ++i) {
      double exact = 0, abs_sum = 0;
      float naive = 0;
      for (int64_t k = 0; k < K; ++k) {
        const float v = xs[i * K + k];
        exact += v;
        abs_sum += std::fabs(v);
        naive = h(naive + v);
      }
      exact *= scale;
      const double tol = fp32_sum_tolerance(exact, abs_sum * scale, K);
      EXPECT_LE(std::fabs(y.data<float>()[i] - exact), tol) << op << " row " << i << ": " << y.data<float>()[i]
                                                            << " vs " << exact;
      // fp16 accumulation misses by far more than the tolerance (the test can fail).
      if (i < 2) {
        EXPECT_GT(std::fabs(naive * scale - exact), 20 * tol) << op << " naive fp16 " << naive * scale;
      }
    }
  }
}

TEST(Fp16, MatMulWithLongInnerDimension) {
  std::mt19937 rng(2);
  const int64_t M = 5, K = 4096, N = 7;
  const std::vector<float> a = halves(M * K, rng, 0.25f, 1.25f), b = halves(K * N, rng, 0.25f, 1.25f);
  ModelBuilder m(13);
  m.input("a", DType::Float32, {M, K}).output("y");
  m.initializer("b", tensor({K, N}, b));
  m.node("Neg", {"a"}, {"na"});
  m.node("MatMul", {"na", "b"}, {"p"});
  m.node("Neg", {"p"}, {"y"});
  auto s = session(m, Precision::Float16);
  const Tensor y = s.run({{"a", tensor({M, K}, a)}}).at("y");
  int naive_misses = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double exact = 0, abs_sum = 0;
      float naive = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double p = static_cast<double>(a[i * K + k]) * b[k * N + j];
        exact += p;
        abs_sum += std::fabs(p);
        naive = h(naive + h(p));
      }
      const double tol = fp32_sum_tolerance(exact, abs_sum, K);
      EXPECT_LE(std::fabs(y.data<float>()[i * N + j] - exact), tol) << i << "," << j;
      naive_misses += std::fabs(naive - exact) > 10 * tol;
    }
  EXPECT_EQ(naive_misses, M * N) << "fp16 accumulation should miss every element";
}

TEST(Fp16, WideSoftmaxAndNormalisationOfOffsetData) {
  std::mt19937 rng(3);
  {
    // Softmax over 20,000 logits: each probability is about 5e-5; an fp16 running sum of the
    // exponentials stalls once its spacing exceeds the terms.
    const int64_t n = 20000;
    const std::vector<float> x = halves(n, rng, -2.0f, 2.0f);
    ModelBuilder m(13);
    m.input("x", DType::Float32, {1, n}).output("y");
    m.node("Neg", {"x"}, {"nx"});
    attr_i(m.node("Softmax", {"nx"}, {"p"}), "axis", -1);
    m.node("Neg", {"p"}, {"y"});
    auto s = session(m, Precision::Float16);
    const Tensor y = s.run({{"x", tensor({1, n}, x)}}).at("y");
    double mx = -INFINITY, z = 0;
    for (float v : x) mx = std::max<double>(mx, -v);
    for (float v : x) z += std::exp(-v - mx);
    float naive_z = 0;
    for (float v : x) naive_z = h(naive_z + h(std::exp(-v - mx)));
    double err = 0, naive_err = 0, tol = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double want = -std::exp(-x[i] - mx) / z;
      // exp and the division in float32 (a few ulp), one float16 rounding of p.
      const double t = half_rounding(want) + 1e-6 * std::fabs(want);
      err = std::max(err, std::fabs(y.data<float>()[i] - want) / t);
      naive_err = std::max(naive_err, std::fabs(-h(std::exp(-x[i] - mx)) / naive_z - want) / t);
      tol = std::max(tol, t);
    }
    EXPECT_LE(err, 1.0) << "worst error in units of the element's tolerance";
    EXPECT_GT(naive_err, 20.0) << "fp16 accumulation of the denominator should fail";
  }
  {
    // LayerNormalization of values near 200 with spread 1: variance as E[x^2] - E[x]^2 in fp16
    // is lost entirely (x^2 ~ 40000, spacing 32); the kernel's float32 statistics keep it.
    const int64_t rows = 4, n = 3001;
    std::vector<float> x = halves(rows * n, rng, 199.0f, 201.0f);
    ModelBuilder m(17);
    m.input("x", DType::Float32, {rows, n}).output("y");
    Tensor gamma(DType::Float32, {n}), beta(DType::Float32, {n});
    for (int64_t i = 0; i < n; ++i) gamma.data<float>()[i] = 1.0f, beta.data<float>()[i] = 0.0f;
    m.initializer("g", gamma).initializer("b", beta);
    m.node("Neg", {"x"}, {"nx"});
    attr_i(m.node("LayerNormalization", {"nx", "g", "b"}, {"ln"}), "axis", -1);
    m.node("Neg", {"ln"}, {"y"});
    auto s = session(m, Precision::Float16);
    const Tensor y = s.run({{"x", tensor({rows, n}, x)}}).at("y");
    for (int64_t r = 0; r < rows; ++r) {
      double mean = 0, var = 0;
      float naive_sq = 0, naive_sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        mean += x[r * n + i];
        naive_sum = h(naive_sum + h(x[r * n + i] / n));
        naive_sq = h(naive_sq + h(static_cast<double>(x[r * n + i]) * x[r * n + i] / n));
      }
      mean /= n;
      for (int64_t i = 0; i < n; ++i) var += (x[r * n + i] - mean) * (x[r * n + i] - mean);
      var /= n;
      const double naive_var = static_cast<double>(h(naive_sq - h(naive_sum * naive_sum)));
      EXPECT_GT(std::fabs(naive_var - var), 10 * var) << "naive fp16 variance " << naive_var << " vs " << var;
      double err = 0;
      for (int64_t i = 0; i < n; ++i) {
        // -(-x - (-mean)) / sqrt(var + eps) = (x - mean) / sqrt(var + eps)
        const double want = (x[r * n + i] - mean) / std::sqrt(var + 1e-5);
        // One fp16 rounding of the output, float32 statistics over n terms of ~200 (relative
        // 2^-24 sqrt(n) on the mean, amplified by 200 / std in the centred value).
        const double t = half_rounding(want) + 4 * std::sqrt(double(n)) * std::ldexp(200.0, -24) / std::sqrt(var);
        err = std::max(err, std::fabs(y.data<float>()[r * n + i] - want) / t);
      }
      EXPECT_LE(err, 1.0) << "row " << r;
    }
  }
}

// A float16 model as the usual converters write it: float16 input, weights and bias, a Cast to
// float32 for one output and a float16 output. Runs in both precisions with the same result
// (ONNX float16 arithmetic: each op's output rounded to float16).
TEST(Fp16, Float16ModelRunsInBothPrecisions) {
  std::mt19937 rng(4);
  const int64_t C = 5, M = 6, H = 9, W = 7;
  auto f16 = [](const std::vector<int64_t>& shape, const std::vector<float>& v) {
    Tensor t(DType::Float16, shape);
    for (size_t i = 0; i < v.size(); ++i) t.data<uint16_t>()[i] = ocl_infer::float_to_half(v[i]);
    return t;
  };
  const auto xv = halves(C * H * W, rng, -1, 1), wv = halves(M * C * 9, rng, -0.5f, 0.5f), bv = halves(M, rng, -1, 1);
  ModelBuilder m(13);
  m.input("x", DType::Float16, {1, C, H, W}).output("y16").output("y32");
  m.initializer("w", f16({M, C, 3, 3}, wv)).initializer("b", f16({M}, bv));
  attr_ints(m.node("Conv", {"x", "w", "b"}, {"c"}), "pads", {1, 1, 1, 1});
  m.node("Relu", {"c"}, {"y16"});
  attr_i(m.node("Cast", {"y16"}, {"y32"}), "to", static_cast<int>(DType::Float32));
  // Reference: conv in double on the half values, then one float16 rounding (Conv's output),
  // which Relu and the Cast keep.
  std::vector<double> exact(M * H * W);
  for (int64_t o = 0; o < M; ++o)
    for (int64_t i = 0; i < H; ++i)
      for (int64_t j = 0; j < W; ++j) {
        double acc = bv[o];
        for (int64_t c = 0; c < C; ++c)
          for (int64_t ki = 0; ki < 3; ++ki)
            for (int64_t kj = 0; kj < 3; ++kj) {
              const int64_t ii = i + ki - 1, jj = j + kj - 1;
              if (ii < 0 || ii >= H || jj < 0 || jj >= W) continue;
              acc += static_cast<double>(xv[(c * H + ii) * W + jj]) * wv[((o * C + c) * 3 + ki) * 3 + kj];
            }
        exact[(o * H + i) * W + j] = std::max(acc, 0.0);
      }
  for (Precision p : {Precision::Float32, Precision::Float16}) {
    auto s = session(m, p);
    auto out = s.run({{"x", f16({1, C, H, W}, xv)}});
    const Tensor &y16 = out.at("y16"), &y32 = out.at("y32");
    ASSERT_EQ(y16.dtype, DType::Float16);
    ASSERT_EQ(y32.dtype, DType::Float32);
    for (int64_t k = 0; k < M * H * W; ++k) {
      const double got16 = ocl_infer::half_to_float(y16.data<uint16_t>()[k]);
      // float32 accumulation over 45 terms (< 1e-6 here), then the float16 rounding of the output.
      const double tol = half_rounding(exact[k]) + 1e-6;
      EXPECT_NEAR(got16, exact[k], tol) << k;
      EXPECT_EQ(static_cast<double>(y32.data<float>()[k]), got16) << "the Cast of y16 must be exact";
    }
  }
}

// The storage type the plan dump gives a value ("  NAME arena ... float16 live ...").
std::string storage_of(const std::string& plan, const std::string& value) {
  const std::string key = "\n  " + value + " ";
  const size_t at = plan.find(key);
  if (at == std::string::npos) return "(not in plan)";
  const std::string line = plan.substr(at + 1, plan.find('\n', at + 1) - at - 1);
  if (line.find(" float16 ") != std::string::npos) return "float16";
  if (line.find(" float32 ") != std::string::npos) return "float32";
  return line;
}

TEST(Fp16, Fp32OpsPolicyKeepsListedOpsInFloat32) {
  std::mt19937 rng(5);
  const std::vector<float> xv = halves(2 * 37, rng, -3, 3);
  ModelBuilder m(13);
  m.input("x", DType::Float32, {2, 37}).output("y");
  m.node("Neg", {"x"}, {"a"});
  attr_i(m.node("Softmax", {"a"}, {"p"}), "axis", -1);
  m.node("Neg", {"p"}, {"y"});
  for (bool keep : {false, true}) {
    auto s = session(m, Precision::Float16, keep ? std::vector<std::string>{"Softmax"} : std::vector<std::string>{});
    const Tensor y = s.run({{"x", tensor({2, 37}, xv)}}).at("y");
    const std::string plan = s.dump("plan");
    EXPECT_NE(plan.find("precision fp16"), std::string::npos) << plan;
    // Softmax reads a and writes p: both float32 under the policy, float16 otherwise.
    EXPECT_EQ(storage_of(plan, "a"), keep ? "float32" : "float16") << plan;
    EXPECT_EQ(storage_of(plan, "p"), keep ? "float32" : "float16") << plan;
    for (int64_t r = 0; r < 2; ++r) {
      double mx = -INFINITY, z = 0;
      for (int64_t i = 0; i < 37; ++i) mx = std::max<double>(mx, -xv[r * 37 + i]);
      for (int64_t i = 0; i < 37; ++i) z += std::exp(-xv[r * 37 + i] - mx);
      for (int64_t i = 0; i < 37; ++i) {
        const double want = -std::exp(-xv[r * 37 + i] - mx) / z;
        // Under the policy nothing on the path is rounded to float16 (x and -x are halves).
        const double tol = (keep ? 0.0 : std::ldexp(std::fabs(want), -11)) + 1e-6 * std::fabs(want) + 1e-9;
        EXPECT_NEAR(y.data<float>()[r * 37 + i], want, tol) << (keep ? "fp32_ops Softmax" : "fp16");
      }
    }
  }
  ocl_infer::SessionOptions bad;
  bad.precision = Precision::Float16;
  bad.fp32_ops = {"Softmax", "NoSuchOp"};
  const std::string b = m.bytes();
  try {
    ocl_infer::Session::from_memory(b.data(), b.size(), bad);
    FAIL() << "an unknown op type in fp32_ops must be refused";
  } catch (const ocl_infer::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("NoSuchOp"), std::string::npos) << e.what();
  }
}

TEST(Fp16, ConstantsBeyondFloat16RangeStayFloat32AndAreReported) {
  // c has values that would be infinity in float16; the products fit. Stored as float16, c would
  // turn them into infinities.
  ModelBuilder m(13);
  m.input("x", DType::Float32, {4}).output("y");
  m.initializer("c", tensor({4}, {70000.0f, 1.0e5f, -2.0e5f, 3.0f}));
  m.node("Neg", {"x"}, {"nx"});
  m.node("Mul", {"nx", "c"}, {"p"});
  m.node("Neg", {"p"}, {"y"});
  std::vector<std::string> log;
  auto s = session(m, Precision::Float16, {}, [&](const std::string& line) { log.push_back(line); });
  const std::vector<float> xv = {h(1e-3f), h(-1e-3f), h(2e-4f), 0.5f};
  const Tensor y = s.run({{"x", tensor({4}, xv)}}).at("y");
  const float c[4] = {70000.0f, 1.0e5f, -2.0e5f, 3.0f};
  for (int i = 0; i < 4; ++i) {
    const double want = static_cast<double>(xv[i]) * c[i];
    EXPECT_NEAR(y.data<float>()[i], want, std::ldexp(std::fabs(want), -11) + 1e-6) << i;
  }
  bool reported = false;
  for (auto& l : log) reported |= l.find("'c'") != std::string::npos && l.find("float32") != std::string::npos;
  EXPECT_TRUE(reported) << "the session log should say that constant 'c' stays float32";
  EXPECT_EQ(storage_of(s.dump("plan"), "p"), "float16");
}

// Sets an environment variable for one scope (the fp16 weight policy is read at plan time).
struct ScopedEnv {
  std::string name;
  ScopedEnv(const std::string& n, const std::string& v) : name(n) { setenv(n.c_str(), v.c_str(), 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
};

// A small conv net; the graph input and output stay float32 and are a small part of it.
ModelBuilder conv_net(std::mt19937& rng) {
  ModelBuilder m(13);
  m.input("x", DType::Float32, {1, 8, 32, 32}).output("y");
  m.node("Neg", {"x"}, {"nx"});  // the float32 input is converted by the first kernel
  std::string prev = "nx";
  for (int l = 0; l < 4; ++l) {
    const std::string w = "w" + std::to_string(l), b = "b" + std::to_string(l), o = "c" + std::to_string(l);
    m.initializer(w, tensor({16, l ? 16 : 8, 3, 3}, halves(16 * (l ? 16 : 8) * 9, rng, -0.2f, 0.2f)));
    m.initializer(b, tensor({16}, halves(16, rng, -0.1f, 0.1f)));
    attr_ints(m.node("Conv", {prev, w, b}, {o}), "pads", {1, 1, 1, 1});
    m.node("Relu", {o}, {o + "r"});
    prev = o + "r";
  }
  m.node("GlobalAveragePool", {prev}, {"y"});
  return m;
}

double plan_number(const std::string& plan, const std::string& key) {
  const size_t at = plan.find(key);
  return at == std::string::npos ? -1 : std::stod(plan.substr(at + key.size()));
}

// Weights and activations take half the bytes with float16 weights.
TEST(Fp16, PlanHalvesWeightAndActivationBytes) {
  const ScopedEnv half("OCL_INFER_FP16_WEIGHTS", "half");
  std::mt19937 rng(6);
  const ModelBuilder m = conv_net(rng);
  const auto number = plan_number;
  const Tensor x = tensor({1, 8, 32, 32}, halves(8 * 32 * 32, rng, -1, 1));
  auto s32 = session(m, Precision::Float32), s16 = session(m, Precision::Float16);
  const Tensor y32 = s32.run({{"x", x}}).at("y"), y16 = s16.run({{"x", x}}).at("y");
  const std::string p32 = s32.dump("plan"), p16 = s16.dump("plan");
  const double w32 = number(p32, "weight bytes: "), w16 = number(p16, "weight bytes: ");
  const double a32 = number(p32, "peak activation bytes: "), a16 = number(p16, "peak activation bytes: ");
  ASSERT_GT(w32, 0);
  ASSERT_GT(a32, 0);
  EXPECT_LE(w16, 0.55 * w32) << p16;
  EXPECT_LE(a16, 0.55 * a32) << p16;
  // Four layers of float16 activations: within a few float16 roundings of float32.
  EXPECT_LE(rel_error(y16, y32), 4 * std::ldexp(1.0, -11));
}

// Weights widened at plan time (the default on CPU devices without cl_khr_fp16): the values of
// float16 weights, stored as float32 -- the same results as float16 weights, weight bytes as in
// float32, activations still halved, and the session log says so.
TEST(Fp16, WidenedWeightsGiveTheResultsOfFloat16Weights) {
  std::mt19937 rng(7);
  const ModelBuilder m = conv_net(rng);
  const Tensor x = tensor({1, 8, 32, 32}, halves(8 * 32 * 32, rng, -1, 1));
  Tensor y_half, y_wide;
  std::string plan_half, plan_wide, plan32;
  std::vector<std::string> log;
  {
    const ScopedEnv e("OCL_INFER_FP16_WEIGHTS", "half");
    auto s = session(m, Precision::Float16);
    y_half = s.run({{"x", x}}).at("y");
    plan_half = s.dump("plan");
  }
  {
    const ScopedEnv e("OCL_INFER_FP16_WEIGHTS", "widen");
    auto s = session(m, Precision::Float16, {}, [&](const std::string& line) { log.push_back(line); });
    y_wide = s.run({{"x", x}}).at("y");
    plan_wide = s.dump("plan");
  }
  auto s32 = session(m, Precision::Float32);
  const Tensor y32 = s32.run({{"x", x}}).at("y");
  plan32 = s32.dump("plan");
  // The same weight values and float32 arithmetic: equal up to the kernels' summation order.
  EXPECT_LE(rel_error(y_wide, y_half), 1e-6);
  EXPECT_LE(rel_error(y_wide, y32), 4 * std::ldexp(1.0, -11));
  EXPECT_NEAR(plan_number(plan_wide, "weight bytes: "), plan_number(plan32, "weight bytes: "),
              0.05 * plan_number(plan32, "weight bytes: "));
  EXPECT_LE(plan_number(plan_wide, "peak activation bytes: "), 0.55 * plan_number(plan32, "peak activation bytes: "));
  bool said = false;
  for (auto& l : log) said |= l.find("rounded to float16 values and stored as float32") != std::string::npos;
  EXPECT_TRUE(said) << "the session log should say that the weights were widened";
}

}  // namespace
