// Gemm and MatMul against direct CPU loops on odd/prime sizes: transposes, alpha/beta, every C
// broadcast, 1-D operands, batch broadcasting, B both constant (packed at plan time) and an input.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <ctime>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

struct GemmCase {
  int64_t M, N, K;
  bool ta, tb;
  float alpha, beta;
  std::vector<int64_t> c;  // C's shape; {-1}: no C
};

TEST(Gemm, MatchesReference) {
  std::mt19937 rng(21);
  const std::vector<GemmCase> cases = {
      {7, 37, 13, false, false, 1.0f, 1.0f, {7, 37}},
      {7, 37, 13, true, false, 0.5f, 2.0f, {37}},
      {5, 3, 11, false, true, 1.0f, 1.0f, {5, 1}},
      {1, 1000, 67, false, true, 1.0f, 1.0f, {1000}},
      {67, 65, 129, true, true, -1.5f, 0.25f, {}},
      {3, 17, 2, false, false, 1.0f, 1.0f, {-1}},
      {13, 33, 19, false, true, 2.0f, 0.0f, {13, 33}},
      {2, 6, 5, false, false, 1.0f, 1.0f, {1, 1}},
      // C broadcast along N over whole 32- and 64-column panels (a strided C read in the vector
      // epilogue), and a full C there (contiguous rows).
      {9, 64, 10, false, false, 1.0f, 0.5f, {9, 1}},
      {9, 64, 10, false, false, 1.0f, 0.5f, {9, 64}},
  };
  int k = 0;
  for (const GemmCase& c : cases)
    for (bool constant : {true, false}) {
      if (fp16_sampled_out(k++)) continue;
      const std::vector<int64_t> as =
          c.ta ? std::vector<int64_t>{c.K, c.M} : std::vector<int64_t>{c.M, c.K};
      const std::vector<int64_t> bs =
          c.tb ? std::vector<int64_t>{c.N, c.K} : std::vector<int64_t>{c.K, c.N};
      const bool has_c = c.c != std::vector<int64_t>{-1};
      Tensor a = random_tensor(as, rng), b = random_tensor(bs, rng);
      Tensor cc = has_c ? random_tensor(c.c, rng) : Tensor();
      ModelBuilder m;
      m.input("a", DType::Float32, as).output("y");
      std::map<std::string, Tensor> feeds{{"a", a}};
      if (constant) {
        m.initializer("b", b);
        if (has_c) m.initializer("c", cc);
      } else {
        m.input("b", DType::Float32, bs);
        feeds["b"] = b;
        if (has_c) {
          m.input("c", DType::Float32, c.c);
          feeds["c"] = cc;
        }
      }
      std::vector<std::string> ins{"a", "b"};
      if (has_c) ins.push_back("c");
      auto& node = m.node("Gemm", ins, {"y"});
      attr_i(node, "transA", c.ta);
      attr_i(node, "transB", c.tb);
      attr_f(node, "alpha", c.alpha);
      attr_f(node, "beta", c.beta);

      Tensor ref(DType::Float32, {c.M, c.N});
      for (int64_t i = 0; i < c.M; ++i)
        for (int64_t j = 0; j < c.N; ++j) {
          double acc = 0;
          for (int64_t k = 0; k < c.K; ++k)
            acc += static_cast<double>(a.data<float>()[c.ta ? k * c.M + i : i * c.K + k]) *
                   b.data<float>()[c.tb ? j * c.K + k : k * c.N + j];
          acc *= c.alpha;
          if (has_c) {
            const int64_t c0 = c.c.size() == 2 ? c.c[0] : 1, c1 = c.c.empty() ? 1 : c.c.back();
            acc += c.beta * cc.data<float>()[(c0 == 1 ? 0 : i) * c1 + (c1 == 1 ? 0 : j)];
          }
          ref.data<float>()[i * c.N + j] = static_cast<float>(acc);
        }
      auto out = run_model(m, feeds);
      EXPECT_LE(rel_error(out.at("y"), ref), 1e-5)
          << c.M << "x" << c.N << "x" << c.K << " transA " << c.ta << " transB " << c.tb
          << (constant ? " constant" : " input") << " B";
    }
}

// numpy-style matmul reference.
Tensor matmul_reference(const Tensor& a, const Tensor& b) {
  std::vector<int64_t> as = a.shape, bs = b.shape;
  const bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as.insert(as.begin(), 1);
  if (b1) bs.push_back(1);
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  std::vector<int64_t> ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  const size_t r = std::max(ab.size(), bb.size());
  ab.insert(ab.begin(), r - ab.size(), 1);
  bb.insert(bb.begin(), r - bb.size(), 1);
  std::vector<int64_t> batch(r), out;
  for (size_t i = 0; i < r; ++i) batch[i] = std::max(ab[i], bb[i]);
  out = batch;
  if (!a1) out.push_back(M);
  if (!b1) out.push_back(N);
  Tensor y(DType::Float32, out);
  int64_t nb = 1;
  for (int64_t d : batch) nb *= d;
  for (int64_t i = 0; i < nb; ++i) {
    int64_t rem = i, ai = 0, bi = 0, astr = 1, bstr = 1;
    for (size_t d = r; d-- > 0;) {
      const int64_t coord = rem % batch[d];
      rem /= batch[d];
      if (ab[d] != 1) ai += coord * astr;
      if (bb[d] != 1) bi += coord * bstr;
      astr *= ab[d];
      bstr *= bb[d];
    }
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += static_cast<double>(a.data<float>()[(ai * M + m) * K + k]) *
                 b.data<float>()[(bi * K + k) * N + n];
        y.data<float>()[(i * M + m) * N + n] = static_cast<float>(acc);
      }
  }
  return y;
}

TEST(MatMul, MatchesReference) {
  std::mt19937 rng(22);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{7, 13}, {13, 37}},
      {{13}, {13, 5}},
      {{3, 13}, {13}},
      {{29}, {29}},
      {{2, 1, 5, 7}, {3, 7, 11}},
      {{3, 5, 7}, {7, 11}},
      {{4, 3, 17}, {4, 17, 33}},
      {{1, 9}, {2, 3, 9, 6}},
      {{67, 129}, {129, 65}},
  };
  int k = 0;
  for (auto& [as, bs] : cases)
    for (bool constant : {true, false}) {
      if (fp16_sampled_out(k++)) continue;
      Tensor a = random_tensor(as, rng), b = random_tensor(bs, rng);
      ModelBuilder m;
      m.input("a", DType::Float32, as).output("y");
      std::map<std::string, Tensor> feeds{{"a", a}};
      if (constant) {
        m.initializer("b", b);
      } else {
        m.input("b", DType::Float32, bs);
        feeds["b"] = b;
      }
      m.node("MatMul", {"a", "b"}, {"y"});
      auto out = run_model(m, feeds);
      EXPECT_LE(rel_error(out.at("y"), matmul_reference(a, b)), 1e-5)
          << ocl_infer::shape_to_string(as) << " x " << ocl_infer::shape_to_string(bs)
          << (constant ? " constant" : " input") << " B, got "
          << ocl_infer::shape_to_string(out.at("y").shape);
    }
}

// MatMul -> Add(residual) -> Tanh and Gemm -> Relu fuse into the product's epilogue.
TEST(MatMul, FusedEpilogueMatchesReference) {
  std::mt19937 rng(23);
  Tensor a = random_tensor({2, 5, 7}, rng), b = random_tensor({7, 19}, rng),
         r = random_tensor({2, 5, 19}, rng);
  ModelBuilder m;
  m.input("a", DType::Float32, {2, 5, 7}).input("r", DType::Float32, {2, 5, 19}).output("y");
  m.initializer("b", b);
  m.node("MatMul", {"a", "b"}, {"p"});
  m.node("Add", {"p", "r"}, {"s"});
  m.node("Tanh", {"s"}, {"y"});
  Tensor ref = matmul_reference(a, b);
  for (int64_t i = 0; i < ref.numel(); ++i)
    ref.data<float>()[i] = std::tanh(ref.data<float>()[i] + r.data<float>()[i]);
  auto s = open_session(m);
  auto out = s.run({{"a", a}, {"r", r}});
  EXPECT_LE(rel_error(out.at("y"), ref), 1e-5);
  EXPECT_NE(s.dump("graph").find("MatMul+Add+Tanh"), std::string::npos) << s.dump("graph");

  Tensor a2 = random_tensor({3, 7}, rng), c = random_tensor({19}, rng);
  ModelBuilder g;
  g.input("a", DType::Float32, {3, 7}).output("y");
  g.initializer("b", b).initializer("c", c);
  g.node("Gemm", {"a", "b", "c"}, {"p"});
  g.node("Relu", {"p"}, {"y"});
  Tensor ref2 = matmul_reference(a2, b);
  for (int64_t i = 0; i < ref2.numel(); ++i)
    ref2.data<float>()[i] = std::max(0.0f, ref2.data<float>()[i] + c.data<float>()[i % 19]);
  auto out2 = run_model(g, {{"a", a2}});
  EXPECT_LE(rel_error(out2.at("y"), ref2), 1e-5);
}

TEST(MatMul, InnerDimensionMismatchIsAModelError) {
  ModelBuilder m;
  m.input("a", DType::Float32, {3, 4}).input("b", DType::Float32, {5, 6}).output("y");
  m.node("MatMul", {"a", "b"}, {"y"});
  try {
    run_model(m, {{"a", Tensor(DType::Float32, {3, 4})}, {"b", Tensor(DType::Float32, {5, 6})}});
    FAIL() << "expected a ModelError";
  } catch (const ocl_infer::ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("inner dimensions differ"), std::string::npos) << e.what();
  }
}

TEST(Gemm, BadCShapeIsAModelError) {
  ModelBuilder m;
  m.input("a", DType::Float32, {3, 4}).input("b", DType::Float32, {4, 6}).output("y");
  m.input("c", DType::Float32, {2, 6});
  m.node("Gemm", {"a", "b", "c"}, {"y"});
  EXPECT_THROW(run_model(m, {{"a", Tensor(DType::Float32, {3, 4})},
                             {"b", Tensor(DType::Float32, {4, 6})},
                             {"c", Tensor(DType::Float32, {2, 6})}}),
               ocl_infer::ModelError);
}

// ---- timing (not run by default: --gtest_also_run_disabled_tests) ---------------------------
double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Best wall-clock rate and the rate per CPU-second of all the process's threads (steadier on a
// shared machine) of A [M,K] x constant B [K,N].
void time_matmul(int64_t M, int64_t K, int64_t N, int reps) {
  std::mt19937 rng(5);
  ModelBuilder m;
  m.input("a", DType::Float32, {M, K}).output("y");
  m.initializer("b", random_tensor({K, N}, rng));
  m.node("MatMul", {"a", "b"}, {"y"});
  std::string bytes = m.bytes();
  auto s = ocl_infer::Session::from_memory(bytes.data(), bytes.size());
  std::map<std::string, Tensor> feeds{{"a", random_tensor({M, K}, rng)}};
  s.run(feeds);
  double best = 1e30;
  const double cpu0 = cpu_seconds();
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    s.run(feeds);
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double cpu = (cpu_seconds() - cpu0) / reps, flops = 2.0 * M * N * K;
  std::printf("matmul %ldx%ldx%ld: %.1f GFLOP/s wall, %.1f per CPU-second, %.3f ms\n",
              static_cast<long>(M), static_cast<long>(K), static_cast<long>(N), flops / best * 1e-9,
              flops / cpu * 1e-9, best * 1e3);
}

TEST(MatMul, DISABLED_Timing) {
  time_matmul(256, 256, 256, 20);
  time_matmul(512, 512, 512, 10);
  time_matmul(1024, 1024, 1024, 5);
  time_matmul(128, 768, 768, 20);
  time_matmul(1, 2048, 1000, 50);
}

}  // namespace
