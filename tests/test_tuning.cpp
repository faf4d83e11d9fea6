// The autotuner and its cache (runtime/exec/tuner.hpp): tuning measures and records, later
// sessions use the results, tuned plans compute the same numbers, and the cache file survives
// corruption, truncation, foreign and stale entries and concurrent writers.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "runtime/backend/device_caps.hpp"
#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

// A conv (with bias and Relu) feeding a Gemm: two tuned families, a CPU reference.
struct Net {
  ModelBuilder model{13};
  Tensor x, w, b, fc;
  Tensor reference;
};

Net make_net() {
  std::mt19937 rng(31);
  Net n;
  n.x = random_tensor({1, 3, 9, 11}, rng);
  n.w = random_tensor({5, 3, 3, 3}, rng, -0.5f, 0.5f);
  n.b = random_tensor({5}, rng);
  n.fc = random_tensor({5 * 9 * 11, 7}, rng, -0.1f, 0.1f);
  n.model.input("x", DType::Float32, {1, 3, 9, 11}).output("y");
  n.model.initializer("w", n.w).initializer("b", n.b).initializer("fc", n.fc);
  attr_ints(n.model.node("Conv", {"x", "w", "b"}, {"c"}), "pads", {1, 1, 1, 1});
  n.model.node("Relu", {"c"}, {"r"});
  n.model.node("Flatten", {"r"}, {"f"});
  n.model.node("MatMul", {"f", "fc"}, {"y"});
  // Reference: conv 3x3 pad 1 + bias, relu, then the product, in double.
  std::vector<double> act(5 * 9 * 11);
  for (int m = 0; m < 5; ++m)
    for (int y = 0; y < 9; ++y)
      for (int x = 0; x < 11; ++x) {
        double acc = n.b.data<float>()[m];
        for (int c = 0; c < 3; ++c)
          for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx) {
              const int iy = y + ky - 1, ix = x + kx - 1;
              if (iy < 0 || iy >= 9 || ix < 0 || ix >= 11) continue;
              acc += static_cast<double>(n.x.data<float>()[(c * 9 + iy) * 11 + ix]) *
                     n.w.data<float>()[((m * 3 + c) * 3 + ky) * 3 + kx];
            }
        act[(m * 9 + y) * 11 + x] = std::max(acc, 0.0);
      }
  n.reference = Tensor(DType::Float32, {1, 7});
  for (int j = 0; j < 7; ++j) {
    double acc = 0;
    for (size_t k = 0; k < act.size(); ++k) acc += act[k] * n.fc.data<float>()[k * 7 + j];
    n.reference.data<float>()[j] = static_cast<float>(acc);
  }
  return n;
}

struct Outcome {
  Tensor y;
  ocl_infer::SessionStats stats;
  std::string plan_json, log;
};

Outcome run(const Net& n, const std::string& cache, bool tune) {
  ocl_infer::SessionOptions opt;
  opt.tuning_cache = cache;
  opt.tune = tune;
  auto log = std::make_shared<std::string>();
  opt.log = [log](const std::string& m) { *log += m + "\n"; };
  auto s = open_session(n.model, opt);
  Outcome r;
  r.y = s.run({{"x", n.x}}).at("y");
  r.stats = s.stats();
  r.plan_json = s.dump("plan.json");
  r.log = *log;
  return r;
}

// Executed steps (nodes) whose launches use a tuned choice (a variant may take several launches).
int tuned_steps(const std::string& plan_json) {
  std::set<std::string> steps;
  std::istringstream in(plan_json);
  const std::regex step_re("\"step\": ([0-9]+)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (line.find("\"source\": \"tuned\"") != std::string::npos && std::regex_search(line, m, step_re))
      steps.insert(m[1]);
  }
  return static_cast<int>(steps.size());
}

int count(const std::string& text, const std::string& what) {
  int c = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++c;
  return c;
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "ocl_infer_tuning_" + std::to_string(::getpid()) + "_" + name + ".tsv";
}

std::string read_file(const std::string& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_file(const std::string& p, const std::string& text) { std::ofstream(p, std::ios::trunc) << text; }

// Every line after the header has six tab-separated fields.
void expect_well_formed(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line, "ocl-infer tuning cache v1");
  while (std::getline(in, line)) EXPECT_EQ(std::count(line.begin(), line.end(), '\t'), 5) << line;
}

TEST(Tuning, TunesSavesAndReuses) {
  const Net n = make_net();
  const std::string path = temp_path("reuse");
  std::remove(path.c_str());
  const Outcome tuned = run(n, path, true);
  EXPECT_GE(tuned.stats.tuned_problems, 2);  // the conv and the product
  EXPECT_LE(rel_error(tuned.y, n.reference), 1e-5);
  EXPECT_EQ(tuned_steps(tuned.plan_json), 2) << tuned.plan_json;
  EXPECT_NE(tuned.log.find("tune: conv"), std::string::npos) << tuned.log;
  EXPECT_NE(tuned.log.find("results saved"), std::string::npos) << tuned.log;
  const std::string text = read_file(path);
  expect_well_formed(text);
  EXPECT_GE(count(text, "\n"), 3);

  // A later session without tuning uses the results and measures nothing.
  const Outcome again = run(n, path, false);
  EXPECT_EQ(again.stats.tuned_problems, 0);
  EXPECT_EQ(tuned_steps(again.plan_json), 2);
  EXPECT_LE(rel_error(again.y, n.reference), 1e-5);
  // Without the cache: the heuristics.
  const Outcome plain = run(n, "off", false);
  EXPECT_EQ(tuned_steps(plain.plan_json), 0);
  EXPECT_LE(rel_error(plain.y, n.reference), 1e-5);
  std::remove(path.c_str());
}

TEST(Tuning, BadCacheFilesFallBackToTheHeuristics) {
  const Net n = make_net();
  const std::string path = temp_path("bad");
  std::remove(path.c_str());
  run(n, path, true);
  const std::string good = read_file(path);
  std::istringstream in(good);
  std::string header, first;
  std::getline(in, header);
  std::getline(in, first);
  const std::string device = first.substr(0, 16), sources = first.substr(17, 16);

  struct Case {
    std::string name, text, notice;
    int tuned;  // launches that still use a tuned choice
  };
  const std::string other_device = "0123456789abcdef", other_sources = "fedcba9876543210";
  std::string stale = good, foreign = good;
  for (size_t p = stale.find(sources); p != std::string::npos; p = stale.find(sources, p + 1))
    stale.replace(p, 16, other_sources);
  for (size_t p = foreign.find(device); p != std::string::npos; p = foreign.find(device, p + 1))
    foreign.replace(p, 16, other_device);  // as after a driver update: another device key
  std::string bogus = header + "\n";
  {
    std::istringstream lines(good.substr(header.size() + 1));
    for (std::string l; std::getline(lines, l);) {
      auto f = l.find('\t', 34);  // after device, sources, family
      f = l.find('\t', f + 1);    // after the problem key
      bogus += l.substr(0, f + 1) + "nonexistent:x=1" + l.substr(l.find('\t', f + 1)) + "\n";
    }
  }
  const Case cases[] = {
      {"garbage", std::string("\x01\x02garbage\xff\n", 12), "not a tuning cache", 0},
      {"truncated", good.substr(0, good.size() / 2), "", -1},
      {"unreadable lines", good + "not\ta\tvalid line\n\t\t\t\t\t\n", "unreadable line", 2},
      {"stale sources", stale, "other kernel sources", 0},
      {"another device", foreign, "", 0},
      {"choices that do not exist", bogus, "", 0},
      {"empty", "", "not a tuning cache", 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    write_file(path, c.text);
    const Outcome r = run(n, path, false);
    EXPECT_LE(rel_error(r.y, n.reference), 1e-5);
    if (!c.notice.empty()) {
      EXPECT_NE(r.log.find(c.notice), std::string::npos) << r.log;
    }
    if (c.tuned >= 0) {
      EXPECT_EQ(tuned_steps(r.plan_json), c.tuned) << r.plan_json;
    }
  }
  // Tuning over another device's entries keeps them.
  write_file(path, foreign);
  run(n, path, true);
  const std::string merged = read_file(path);
  expect_well_formed(merged);
  EXPECT_NE(merged.find(other_device), std::string::npos);
  EXPECT_NE(merged.find(device), std::string::npos);
  std::remove(path.c_str());
}

TEST(Tuning, ConcurrentTunersLeaveAWellFormedFile) {
  const Net n = make_net();
  const std::string path = temp_path("concurrent");
  std::remove(path.c_str());
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) threads.emplace_back([&] { run(n, path, true); });
  for (auto& t : threads) t.join();
  const std::string text = read_file(path);
  expect_well_formed(text);
  const Outcome r = run(n, path, false);
  EXPECT_EQ(tuned_steps(r.plan_json), 2);
  EXPECT_LE(rel_error(r.y, n.reference), 1e-5);
  std::remove(path.c_str());
}

// Without tuning, the kernel shape follows the device: CPU-shaped kernels on CPUs whose driver asks
// for explicit vectors, GPU-shaped ones elsewhere -- including a CPU driver that prefers a float
// vector width of 1 (llvmpipe through rusticl maps work-items onto SIMD lanes).
TEST(Tuning, UntunedKernelShapeFollowsTheDevice) {
  oi::DeviceCaps c;
  c.type = oi::DeviceClass::CPU;
  c.preferred_vector_width_float = 16;  // PoCL on AVX-512
  EXPECT_TRUE(c.cpu_shaped());
  c.preferred_vector_width_float = 4;
  EXPECT_TRUE(c.cpu_shaped());
  c.preferred_vector_width_float = 1;  // llvmpipe
  EXPECT_FALSE(c.cpu_shaped());
  c.type = oi::DeviceClass::GPU;
  for (uint32_t w : {1u, 4u}) {
    c.preferred_vector_width_float = w;
    EXPECT_FALSE(c.cpu_shaped());
  }
  // This machine's device: the log says which shape it gets, and the conv is planned accordingly.
  const Net n = make_net();
  const Outcome r = run(n, "off", false);
  EXPECT_LE(rel_error(r.y, n.reference), 1e-5);
  const bool cpu = r.log.find("; CPU-shaped kernels") != std::string::npos;
  EXPECT_NE(cpu, r.log.find("; GPU-shaped kernels where they exist") != std::string::npos) << r.log;
  const bool tiled = r.plan_json.find("\"family\": \"conv\", \"name\": \"tiled\"") != std::string::npos;
  EXPECT_NE(cpu, tiled) << r.plan_json;
}

TEST(Tuning, BudgetStopsMeasuring) {
  const Net n = make_net();
  ocl_infer::SessionOptions opt;
  opt.tuning_cache = "off";
  opt.tune = true;
  opt.tune_budget_seconds = 1e-9;  // the first problem starts the clock, nothing after it runs
  auto s = open_session(n.model, opt);
  EXPECT_LE(rel_error(s.run({{"x", n.x}}).at("y"), n.reference), 1e-5);
  EXPECT_EQ(s.stats().tuned_problems, 1);
  opt.tune_budget_seconds = -1;
  EXPECT_THROW(open_session(n.model, opt), ocl_infer::InputError);
}

}  // namespace
