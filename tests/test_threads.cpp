// Thread safety (see the contract on ocl_infer::Session): N threads x M runs on one shared session,
// starting with concurrent first runs (lazy planning), and on one session per thread; every
// output bit-exact against the same inputs run single-threaded; sessions made and destroyed in
// several threads at once on the shared context. Also built and run under
// ThreadSanitizer by tools/sanitize.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <thread>

#include "runtime/backend/cl_runtime.hpp"
#include "tests/model_builder.hpp"
#include "tests/reference_ops.hpp"

using namespace testing_util;

namespace {

constexpr int kThreads = 4, kRuns = 20;

struct NetWeights {
  Tensor w1, b1, w2;
};

ModelBuilder small_net(std::mt19937& rng, NetWeights* weights) {
  ModelBuilder m(13);
  weights->w1 = random_tensor({8, 3, 3, 3}, rng, -0.3f, 0.3f);
  weights->b1 = random_tensor({8}, rng);
  weights->w2 = random_tensor({8, 8, 1, 1}, rng, -0.3f, 0.3f);
  m.input("x", DType::Float32, {1, 3, 12, 12}).output("y").output("feat");
  m.initializer("w1", weights->w1).initializer("b1", weights->b1);
  m.initializer("w2", weights->w2);
  m.initializer("fc", random_tensor({8 * 6 * 6, 10}, rng, -0.1f, 0.1f)).initializer("fcb", random_tensor({10}, rng));
  Tensor shape(DType::Int64, {2});
  shape.data<int64_t>()[0] = 1;
  shape.data<int64_t>()[1] = 8 * 6 * 6;
  m.initializer("shape", shape);
  attr_ints(m.node("Conv", {"x", "w1", "b1"}, {"c1"}), "pads", {1, 1, 1, 1});
  m.node("Relu", {"c1"}, {"r1"});
  auto& pool = m.node("MaxPool", {"r1"}, {"p1"});
  attr_ints(pool, "kernel_shape", {2, 2});
  attr_ints(pool, "strides", {2, 2});
  m.node("Conv", {"p1", "w2"}, {"c2"});
  m.node("Add", {"c2", "p1"}, {"feat"});
  m.node("Reshape", {"feat", "shape"}, {"flat"});
  m.node("Gemm", {"flat", "fc", "fcb"}, {"logits"});
  attr_i(m.node("Softmax", {"logits"}, {"y"}), "axis", 1);
  return m;
}

// `feat` of small_net on the CPU: conv + bias, relu, 2x2 max pool, 1x1 conv, plus the pool.
Tensor reference_feat(const Tensor& x, const NetWeights& w) {
  const Tensor r1 = reference::unary(reference::conv2d(x, w.w1, &w.b1, 1, 1), reference::relu);
  Tensor p1(DType::Float32, {1, 8, 6, 6});
  for (int64_t c = 0; c < 8; ++c)
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t j = 0; j < 6; ++j) {
        float v = -INFINITY;
        for (int64_t di = 0; di < 2; ++di)
          for (int64_t dj = 0; dj < 2; ++dj) v = std::max(v, reference::at(r1, (c * 12 + 2 * i + di) * 12 + 2 * j + dj));
        p1.data<float>()[(c * 6 + i) * 6 + j] = v;
      }
  return reference::binary(reference::conv2d(p1, w.w2, nullptr, 0, 1), p1, [](double a, double b) { return a + b; });
}

struct Fixture {
  std::string bytes;
  std::vector<Tensor> inputs;                          // one per (thread, run)
  std::vector<std::map<std::string, Tensor>> expect;  // single-threaded results
};

Fixture make_fixture() {
  std::mt19937 rng(42);
  Fixture f;
  NetWeights weights;
  f.bytes = small_net(rng, &weights).bytes();
  auto s = ocl_infer::Session::from_memory(f.bytes.data(), f.bytes.size());
  for (int i = 0; i < kThreads * kRuns; ++i) {
    f.inputs.push_back(random_tensor({1, 3, 12, 12}, rng));
    f.expect.push_back(s.run({{"x", f.inputs.back()}}));
  }
  // The single-threaded results the threads must reproduce bit for bit are themselves checked
  // against the CPU reference (float32 sums in another order: 1e-5 of the largest value).
  for (int i = 0; i < kThreads * kRuns; i += 7)
    EXPECT_LT(reference::rel_error(f.expect[i].at("feat"), reference_feat(f.inputs[i], weights)), 1e-5) << "input " << i;
  return f;
}

int compare(const std::map<std::string, Tensor>& got, const std::map<std::string, Tensor>& want) {
  int bad = 0;
  for (auto& [name, t] : want) bad += got.count(name) == 0 || got.at(name).bytes != t.bytes;
  return bad;
}

// Runs body(t) in kThreads threads at once; body adds its wrong outputs to `wrong`. Expects no
// wrong output and no exception in any thread.
void in_threads(const std::function<void(int t, std::atomic<int>& wrong)>& body) {
  std::atomic<int> wrong{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        body(t, wrong);
      } catch (const std::exception&) {
        ++errors;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(errors.load(), 0);
}

TEST(Threads, SharedSessionFromTheFirstRun) {
  const Fixture f = make_fixture();
  auto s = ocl_infer::Session::from_memory(f.bytes.data(), f.bytes.size());
  in_threads([&](int t, std::atomic<int>& wrong) {
    for (int r = 0; r < kRuns; ++r) {
      const int i = t * kRuns + r;
      wrong += compare(s.run({{"x", f.inputs[i]}}), f.expect[i]);
      if (r % 5 == 0) {
        s.profile();  // readers of session state alongside runs
        s.stats();
        s.dump("plan");
      }
    }
  });
}

TEST(Threads, SessionPerThread) {
  const Fixture f = make_fixture();
  in_threads([&](int t, std::atomic<int>& wrong) {
    auto s = ocl_infer::Session::from_memory(f.bytes.data(), f.bytes.size());
    for (int r = 0; r < kRuns; ++r) {
      const int i = t * kRuns + r;
      wrong += compare(s.run({{"x", f.inputs[i]}}), f.expect[i]);
    }
  });
}

// Sessions on one device share the process's OpenCL context: sessions made, run and destroyed in
// several threads at once (half of them profiling, so with another kind of queue), each building
// its programs while others release theirs, still give the single-threaded results.
TEST(Threads, SessionsComeAndGoOnOneContext) {
  const Fixture f = make_fixture();
  in_threads([&](int t, std::atomic<int>& wrong) {
    for (int cycle = 0; cycle < 3; ++cycle) {
      ocl_infer::SessionOptions o;
      o.profiling = (t + cycle) % 2 == 0;
      auto s = ocl_infer::Session::from_memory(f.bytes.data(), f.bytes.size(), o);
      for (int r = 0; r < 2; ++r) {
        const int i = t * kRuns + cycle * 2 + r;
        wrong += compare(s.run({{"x", f.inputs[i]}}), f.expect[i]);
      }
    }
  });
}

// release_shared_contexts: sessions alive keep working on their context (it goes with the last
// of them); the next session makes a new one; calls racing with sessions being made are safe.
TEST(Threads, ReleaseSharedContexts) {
  const Fixture f = make_fixture();
  auto a = ocl_infer::Session::from_memory(f.bytes.data(), f.bytes.size());
  EXPECT_GE(oi::shared_context_count(), 1);
  ocl_infer::release_shared_contexts();
  EXPECT_EQ(oi::shared_context_count(), 0);
  EXPECT_EQ(compare(a.run({{"x", f.inputs[0]}}), f.expect[0]), 0);
  auto b = ocl_infer::Session::from_memory(f.bytes.data(), f.bytes.size());
  EXPECT_EQ(oi::shared_context_count(), 1);
  EXPECT_EQ(compare(b.run({{"x", f.inputs[1]}}), f.expect[1]), 0);
  EXPECT_EQ(compare(a.run({{"x", f.inputs[2]}}), f.expect[2]), 0);
  in_threads([&](int t, std::atomic<int>& wrong) {
    if (t % 2) {
      for (int i = 0; i < 20; ++i) ocl_infer::release_shared_contexts();
      return;
    }
    auto s = ocl_infer::Session::from_memory(f.bytes.data(), f.bytes.size());
    wrong += compare(s.run({{"x", f.inputs[t]}}), f.expect[t]);
  });
}

}  // namespace
