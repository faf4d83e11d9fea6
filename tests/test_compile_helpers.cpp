// Compile helpers (runtime/exec/compile_helpers.hpp, through ocl_infer::run_compile_helper): a plan's first run starts helper processes
// that compile its kernels into the driver's cache. The run's results must not depend on them (a
// helper that fails or does nothing changes only the time), the ledger must stop later runs from
// starting helpers, a helper must really compile the job's kernels into the driver's cache, and a
// job it cannot trust must be refused.
//
// This binary gives PoCL a fresh cache folder of its own before any OpenCL call, so that its first
// runs really compile.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/backend/cl_runtime.hpp"
#include "runtime/backend/program_bundle.hpp"
#include "tests/model_builder.hpp"
#include "tests/reference_ops.hpp"

using namespace testing_util;

namespace {

std::string make_temp_dir(const char* what) {
  std::string t = std::string("/tmp/ocl-infer-") + what + "-XXXXXX";
  if (!mkdtemp(t.data())) return "";
  return t;
}

// PoCL reads POCL_CACHE_DIR once, at its first use in the process; its cache is what helpers
// fill, so it is on here even where the caller turned it off (tools/sanitize.sh).
const std::string kPoclCache = [] {
  std::string d = make_temp_dir("helpers-pocl");
  setenv("POCL_CACHE_DIR", d.c_str(), 1);
  setenv("POCL_KERNEL_CACHE", "1", 1);
  return d;
}();

// The files below `dir` whose names end with `suffix`, recursively.
void find_files(const std::string& dir, const std::string& suffix, std::vector<std::string>* out) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = dir + "/" + name;
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) find_files(path, suffix, out);
    else if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out->push_back(path);
  }
  closedir(d);
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// build/ocl-infer, beside this test's folder (build/tests).
std::string cli_path() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "";
  std::string p(self, static_cast<size_t>(n));
  p = p.substr(0, p.rfind('/'));
  return p.substr(0, p.rfind('/')) + "/ocl-infer";
}

// A model of several distinct kernels: convs of three shapes (the last k x k), a max pool, a
// sigmoid. A k no earlier test used makes programs that this process has not compiled yet.
struct Model {
  ModelBuilder m;
  Tensor x, w1, w2, w3;
  int64_t k;
  Model(uint32_t seed, int64_t k_ = 5) : k(k_) {
    std::mt19937 rng(seed);
    x = random_tensor({1, 6, 13, 11}, rng);
    w1 = random_tensor({16, 6, 3, 3}, rng);
    w2 = random_tensor({8, 16, 1, 1}, rng);
    w3 = random_tensor({5, 8, k, k}, rng);
    m.input("x", DType::Float32, {1, 6, 13, 11}).output("y");
    m.initializer("w1", w1).initializer("w2", w2).initializer("w3", w3);
    attr_ints(m.node("Conv", {"x", "w1"}, {"c1"}), "pads", {1, 1, 1, 1});
    m.node("Relu", {"c1"}, {"r1"});
    m.node("Conv", {"r1", "w2"}, {"c2"});
    attr_ints(m.node("Conv", {"c2", "w3"}, {"c3"}), "pads", {k / 2, k / 2, k / 2, k / 2});
    attr_ints(m.node("MaxPool", {"c3"}, {"p"}), "kernel_shape", {2, 2});
    m.node("Sigmoid", {"p"}, {"y"});
  }
  // The CPU reference: conv, relu, conv, conv, 2x2 max pool (stride 1), sigmoid.
  Tensor reference() const {
    const Tensor c1 = reference::unary(reference::conv2d(x, w1, nullptr, 1, 1), reference::relu);
    const Tensor c3 =
        reference::conv2d(reference::conv2d(c1, w2, nullptr, 0, 1), w3, nullptr, static_cast<int>(k / 2), 1);
    const int64_t C = c3.shape[1], H = c3.shape[2], W = c3.shape[3];
    Tensor y(DType::Float32, {1, C, H - 1, W - 1});
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h + 1 < H; ++h)
        for (int64_t w = 0; w + 1 < W; ++w) {
          float mx = -INFINITY;
          for (int64_t dh = 0; dh < 2; ++dh)
            for (int64_t dw = 0; dw < 2; ++dw) mx = std::max(mx, c3.data<float>()[(c * H + h + dh) * W + w + dw]);
          y.data<float>()[(c * (H - 1) + h) * (W - 1) + w] = 1.0f / (1.0f + std::exp(-mx));
        }
    return y;
  }
};

struct RunResult {
  Tensor y;
  std::vector<std::string> log;
  bool helpers_started() const {
    for (const auto& l : log)
      if (l.find("helper process") != std::string::npos) return true;
    return false;
  }
};

RunResult run(const ModelBuilder& m, const Tensor& x, const std::string& cache_dir) {
  RunResult r;
  ocl_infer::SessionOptions so;
  so.cache_dir = cache_dir;
  so.tuning_cache = "off";
  so.log = [&r](const std::string& line) { r.log.push_back(line); };
  const std::string bytes = m.bytes();
  // Each run as a new process starts: no programs kept from the earlier runs, only the caches.
  ocl_infer::release_shared_contexts();
  auto s = ocl_infer::Session::from_memory(bytes.data(), bytes.size(), so);
  r.y = s.run({{"x", x}}).at("y");
  return r;
}

RunResult run(const Model& model, const std::string& cache_dir) { return run(model.m, model.x, cache_dir); }

// Sets an environment variable for one scope (then restores what it was).
struct ScopedEnv {
  std::string name;
  bool had = false;
  std::string old;
  ScopedEnv(const std::string& n, const std::string& v) : name(n) {
    if (const char* e = std::getenv(n.c_str())) had = true, old = e;
    setenv(n.c_str(), v.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had) setenv(name.c_str(), old.c_str(), 1);
    else unsetenv(name.c_str());
  }
};

// A depthwise 3x3 conv of `channels` channels (weights `w` [channels, 1, 3, 3]), padding `pad` on
// every side, stride `stride`.
void depthwise_conv(ModelBuilder& m, const std::string& in, const std::string& w, const std::string& out,
                    int64_t channels, int64_t pad, int64_t stride) {
  auto& c = m.node("Conv", {in, w}, {out});
  attr_ints(c, "pads", {pad, pad, pad, pad});
  attr_ints(c, "strides", {stride, stride});
  attr_i(c, "group", channels);
}

// Whether a line of the log contains `what`.
bool said(const std::vector<std::string>& log, const std::string& what) {
  for (const auto& l : log)
    if (l.find(what) != std::string::npos) return true;
  return false;
}

// Session options with a cache folder, no tuning cache, and the log collected in *log.
ocl_infer::SessionOptions logging_options(const std::string& cache_dir, std::vector<std::string>* log) {
  ocl_infer::SessionOptions so;
  so.cache_dir = cache_dir;
  so.tuning_cache = "off";
  so.log = [log](const std::string& line) { log->push_back(line); };
  return so;
}

// Helpers compile into a driver's own cache of kernels (PoCL's); where the driver keeps none
// (NVIDIA's: ocl-infer stores the programs' binaries itself) no helper starts, and the tests that
// expect one do not apply.
bool helpers_apply() {
  static const bool apply = [] {
    const RunResult r = run(Model(3), make_temp_dir("helpers-device"));
    for (const auto& l : r.log)
      if (l.find("kernel cache: storing program binaries") != std::string::npos) return false;
    return true;
  }();
  return apply;
}
#define SKIP_UNLESS_HELPERS_APPLY() \
  if (!helpers_apply()) GTEST_SKIP() << "the device's driver keeps no compiled kernels of its own"

TEST(CompileHelpers, FirstRunStartsHelpersResultsUnchangedLedgerStopsTheNext) {
  SKIP_UNLESS_HELPERS_APPLY();
  // The helpers with the plan's own kernels (no tier-up behind the run; unoptimised first runs:
  // UnoptimisedFirstRunThenTierUp).
  const ScopedEnv own("OCL_INFER_FIRST_RUN_UNOPTIMIZED", "0");
  ASSERT_FALSE(kPoclCache.empty());
  const ScopedEnv helpers("OCL_INFER_COMPILE_HELPERS", "1");  // also on a one-core machine
  const Model model(3);
  const std::string dir = make_temp_dir("helpers-cache");
  const RunResult first = run(model, dir);
  EXPECT_TRUE(first.helpers_started()) << "a new plan on PoCL, with a cache folder";
  EXPECT_LT(reference::rel_error(first.y, model.reference()), 1e-5);
  // The ledger lists the plan's kernel specialisations, one 16-hex-digit line each.
  std::vector<std::string> ledgers;
  find_files(dir, ".txt", &ledgers);
  std::string ledger;
  for (const auto& f : ledgers)
    if (f.find("/compiled-") != std::string::npos) ledger = read_text(f);
  std::istringstream lines(ledger);
  int n = 0;
  for (std::string line; std::getline(lines, line); ++n)
    EXPECT_TRUE(line.size() == 16 && line.find_first_not_of("0123456789abcdef") == std::string::npos) << line;
  EXPECT_GE(n, 4) << "three convs, a pool, a sigmoid";
  // No job file is left behind.
  std::vector<std::string> files;
  find_files(dir, "", &files);
  for (const auto& f : files) EXPECT_EQ(f.find("/job-"), std::string::npos) << f;
  // The same plan again: everything is in the ledger, no helper; the same bits.
  const RunResult second = run(model, dir);
  EXPECT_FALSE(second.helpers_started());
  EXPECT_EQ(second.y.bytes, first.y.bytes);
  // Without helpers, in a fresh cache folder: the same bits.
  const ScopedEnv off("OCL_INFER_COMPILE_HELPERS", "0");
  const RunResult none = run(model, make_temp_dir("helpers-none"));
  EXPECT_FALSE(none.helpers_started());
  EXPECT_EQ(none.y.bytes, first.y.bytes);
}

// Helpers that fail at once, crash, or never finish (killed when the run ends) change nothing.
TEST(CompileHelpers, FailingHelpersChangeNothing) {
  SKIP_UNLESS_HELPERS_APPLY();
  // The helpers with the plan's own kernels (no tier-up behind the run; unoptimised first runs:
  // UnoptimisedFirstRunThenTierUp).
  const ScopedEnv own("OCL_INFER_FIRST_RUN_UNOPTIMIZED", "0");
  const ScopedEnv helpers("OCL_INFER_COMPILE_HELPERS", "1");
  const Model model(5);
  const Tensor want = model.reference();
  const std::string scripts = make_temp_dir("helpers-scripts");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"exits", "#!/bin/sh\nexit 1\n"},
      {"crashes", "#!/bin/sh\nkill -SEGV $$\n"},
      {"hangs", "#!/bin/sh\nexec sleep 600\n"},
  };
  for (const auto& [name, body] : cases) {
    const std::string path = scripts + "/" + name + ".sh";
    std::ofstream(path) << body;
    chmod(path.c_str(), 0755);
    const ScopedEnv exe("OCL_INFER_COMPILE_HELPER", path);
    const RunResult r = run(model, make_temp_dir("helpers-failing"));
    EXPECT_TRUE(r.helpers_started()) << name;
    EXPECT_LT(reference::rel_error(r.y, want), 1e-5) << name;
  }
  // A helper executable that does not exist: no helper, the same result.
  const ScopedEnv exe("OCL_INFER_COMPILE_HELPER", scripts + "/missing");
  const RunResult r = run(model, make_temp_dir("helpers-missing"));
  EXPECT_FALSE(r.helpers_started());
  EXPECT_LT(reference::rel_error(r.y, want), 1e-5);
}

// The job of the one compile helper that a first run of (m, x) starts, saved by a wrapper around
// the helper executable in `dir` (not the tier-up's job, which the same executable gets after the
// run); empty when none was saved.
std::string saved_job(const ModelBuilder& m, const Tensor& x, const std::string& dir) {
  const std::string saved = dir + "/saved-job.txt", wrapper = dir + "/wrapper.sh";
  std::ofstream(wrapper) << "#!/bin/sh\nhead -n 1 \"$2\" | grep -q 'compile job' && cp \"$2\" '" << saved
                         << "'\nexec '" << cli_path() << "' \"$@\"\n";
  chmod(wrapper.c_str(), 0755);
  {
    const ScopedEnv helpers("OCL_INFER_COMPILE_HELPERS", "1");
    const ScopedEnv exe("OCL_INFER_COMPILE_HELPER", wrapper);
    const RunResult r = run(m, x, dir + "/cache");
    if (!r.helpers_started()) return "";
  }
  // The wrapper may still be copying when the run has ended and killed it: wait a little.
  for (int i = 0; i < 50 && access(saved.c_str(), R_OK) != 0; ++i) usleep(100000);
  return read_text(saved);
}

// The job's launches as (kernel, options).
std::set<std::pair<std::string, std::string>> job_kernels(const std::string& job) {
  std::set<std::pair<std::string, std::string>> kernels;
  std::istringstream in(job);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::istringstream f(line);
    for (std::string field; std::getline(f, field, '\t');) fields.push_back(field);
    if (fields.size() >= 4 && fields[0] == "launch") kernels.insert({fields[2], fields[3]});
  }
  return kernels;
}

// A helper compiles the kernels of its job into the driver's cache: the job a run wrote (saved by
// a wrapper), given to `ocl-infer --compile-helper` with an empty PoCL cache of its own, leaves a
// compiled kernel there for each kernel the job names.
TEST(CompileHelpers, HelperCompilesTheJobsKernelsIntoTheDriversCache) {
  SKIP_UNLESS_HELPERS_APPLY();
  // The helpers with the plan's own kernels (no tier-up behind the run; unoptimised first runs:
  // UnoptimisedFirstRunThenTierUp).
  const ScopedEnv own("OCL_INFER_FIRST_RUN_UNOPTIMIZED", "0");
  const std::string cli = cli_path();
  ASSERT_EQ(access(cli.c_str(), X_OK), 0) << cli;
  const std::string dir = make_temp_dir("helpers-job");
  const Model model(9, 7);
  const std::string job = saved_job(model.m, model.x, dir);
  ASSERT_FALSE(job.empty()) << "no helper started, or the wrapper saved no job";
  std::set<std::string> kernels;
  for (const auto& k : job_kernels(job)) kernels.insert(k.first);
  EXPECT_GE(kernels.size(), 4u) << job.substr(0, 2000);
  // The helper on a copy (it deletes its job), with a PoCL cache of its own, started by this
  // process (the shell execs it): a helper whose parent is not the job's gives up.
  const std::string copy = dir + "/job-copy.txt", pocl = dir + "/pocl";
  std::string mine = job;
  const size_t at = mine.find("\nparent\t");
  ASSERT_NE(at, std::string::npos);
  mine.replace(at, mine.find('\n', at + 1) - at, "\nparent\t" + std::to_string(getpid()));
  std::ofstream(copy) << mine;
  const std::string cmd =
      "exec env POCL_KERNEL_CACHE=1 POCL_CACHE_DIR='" + pocl + "' '" + cli + "' --compile-helper '" + copy + "'";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << cmd;
  EXPECT_EQ(WEXITSTATUS(status), 0) << cmd;
  EXPECT_NE(access(copy.c_str(), F_OK), 0) << "the helper deletes its job";
  std::vector<std::string> compiled;
  find_files(pocl, ".so", &compiled);
  EXPECT_GE(compiled.size(), kernels.size()) << "one compiled kernel per launch of the job";
}

// Two launches of one kernel with the same sizes, from two units of the model's bundle (two
// depthwise convs of different widths: the grid is (1, channels) for both), are two kernels the
// helper must compile. The job once named only the first: the second was taken for a repeat.
TEST(CompileHelpers, JobNamesEachUnitsKernelOfABundle) {
  SKIP_UNLESS_HELPERS_APPLY();
  std::mt19937 rng(21);
  ModelBuilder m;
  const Tensor x = random_tensor({1, 8, 9, 10}, rng), w1 = random_tensor({8, 1, 3, 3}, rng),
               w2 = random_tensor({8, 1, 3, 3}, rng);
  m.input("x", DType::Float32, {1, 8, 9, 10}).output("y");
  m.initializer("w1", w1).initializer("w2", w2);
  depthwise_conv(m, "x", "w1", "c1", 8, 1, 1);
  depthwise_conv(m, "c1", "w2", "y", 8, 0, 1);
  const std::string job = saved_job(m, x, make_temp_dir("helpers-units"));
  ASSERT_FALSE(job.empty()) << "no helper started, or the wrapper saved no job";
  std::set<std::string> depthwise;
  for (const auto& [kernel, options] : job_kernels(job))
    if (kernel.find("depthwise") != std::string::npos) depthwise.insert(options);
  EXPECT_EQ(depthwise.size(), 2u) << job.substr(0, 3000);
  // And the run is right, helpers or not.
  const Tensor want = reference::conv2d(reference::conv2d(x, w1, nullptr, 1, 8), w2, nullptr, 0, 8);
  EXPECT_LT(reference::rel_error(run(m, x, make_temp_dir("helpers-units-run")).y, want), 1e-5);
}

// Tier-up (runtime/exec/compile_helpers.hpp): a cold plan with depthwise convs runs their quick
// kernels first, a background process compiles the plan's own, and the session then builds the
// plan again with them (at the start of a later run); the values stay the same bits. A second
// session starts with its own kernels; with $OCL_INFER_FIRST_RUN_KERNELS=0 nothing of this happens.
TEST(CompileHelpers, FirstRunKernelsThenTierUp) {
  SKIP_UNLESS_HELPERS_APPLY();
  const ScopedEnv helpers("OCL_INFER_COMPILE_HELPERS", "1");
  // No binary store in the background: it compiles kernels again to read their binaries back,
  // which the count of compiled kernels below would take for the tier-up's.
  const ScopedEnv no_store("OCL_INFER_STORE_BINARIES", "0");
  std::mt19937 rng(23);
  ModelBuilder m;
  const Tensor x = random_tensor({1, 8, 12, 20}, rng), w1 = random_tensor({8, 1, 3, 3}, rng),
               w2 = random_tensor({8, 1, 3, 3}, rng);
  m.input("x", DType::Float32, {1, 8, 12, 20}).output("y");
  m.initializer("w1", w1).initializer("w2", w2);
  depthwise_conv(m, "x", "w1", "c1", 8, 1, 1);
  m.node("Relu", {"c1"}, {"r1"});
  depthwise_conv(m, "r1", "w2", "c2", 8, 1, 2);
  // A layer norm in work-groups (forced below): its program is built while the plan is lowered
  // (to ask its work-group size), so it stays out of the bundle a fresh process makes; the
  // tier-up's bundle must match that one.
  Tensor ones(DType::Float32, {10}), zeros(DType::Float32, {10});
  for (int i = 0; i < 10; ++i) ones.data<float>()[i] = 1.0f, zeros.data<float>()[i] = 0.0f;
  m.initializer("scale", ones).initializer("shift", zeros);
  m.node("LayerNormalization", {"c2", "scale", "shift"}, {"y"});
  // The stride-2 conv: every second row and column of the stride-1 one (the same padding).
  const Tensor full = reference::conv2d(reference::unary(reference::conv2d(x, w1, nullptr, 1, 8), reference::relu),
                                        w2, nullptr, 1, 8);
  Tensor want(DType::Float32, {1, 8, 6, 10});
  for (int64_t c = 0; c < 8; ++c)
    for (int64_t h = 0; h < 6; ++h) {
      float* row = want.data<float>() + (c * 6 + h) * 10;
      double sum = 0, sq = 0;
      for (int64_t w = 0; w < 10; ++w) sum += row[w] = full.data<float>()[(c * 12 + 2 * h) * 20 + 2 * w];
      for (int64_t w = 0; w < 10; ++w) sq += (row[w] - sum / 10) * (row[w] - sum / 10);
      for (int64_t w = 0; w < 10; ++w) row[w] = static_cast<float>((row[w] - sum / 10) / std::sqrt(sq / 10 + 1e-5));
    }
  const std::string dir = make_temp_dir("helpers-tier");
  std::vector<std::string> log;
  ocl_infer::SessionOptions so = logging_options(dir, &log);
  so.kernel_variants = "norm=group";
  const std::string bytes = m.bytes();
  auto s = ocl_infer::Session::from_memory(bytes.data(), bytes.size(), so);
  // The stride-2 conv's output rows (10) are wider than a vector (8): both convs have quick kernels.
  const Tensor first = s.run({{"x", x}}).at("y");
  ASSERT_TRUE(said(log, "2 launches ran first-run kernels")) << testing::PrintToString(log);
  EXPECT_LT(reference::rel_error(first, want), 1e-5);
  // Later runs until the background process is done (it compiles two kernels and a few others).
  bool swapped = false;
  for (int i = 0; i < 600 && !swapped; ++i) {
    usleep(100000);
    const Tensor y = s.run({{"x", x}}).at("y");
    EXPECT_EQ(y.bytes, first.bytes) << "run " << i;
    swapped = said(log, "the plan's own kernels are compiled; plan built again");
  }
  ASSERT_TRUE(swapped) << "no tier-up within 60 s: " << testing::PrintToString(log);
  // The session's plan built again and a new session load the background process's programs and
  // kernels from the driver's cache: PoCL compiles nothing new for them.
  std::vector<std::string> kernels_before;
  find_files(kPoclCache, ".so", &kernels_before);
  EXPECT_EQ(s.run({{"x", x}}).at("y").bytes, first.bytes);
  std::vector<std::string> log2;
  so.log = [&log2](const std::string& line) { log2.push_back(line); };
  auto s2 = ocl_infer::Session::from_memory(bytes.data(), bytes.size(), so);
  EXPECT_EQ(s2.run({{"x", x}}).at("y").bytes, first.bytes);
  EXPECT_FALSE(said(log2, "first-run kernels")) << testing::PrintToString(log2);
  EXPECT_FALSE(said(log2, "helper process")) << "every kernel is in the ledger: " << testing::PrintToString(log2);
  // So does a session without first-run kernels, which finds the bundle through the registry.
  {
    const ScopedEnv off("OCL_INFER_FIRST_RUN_KERNELS", "0");
    auto s2b = ocl_infer::Session::from_memory(bytes.data(), bytes.size(), so);
    EXPECT_EQ(s2b.run({{"x", x}}).at("y").bytes, first.bytes);
  }
  std::vector<std::string> kernels_after;
  find_files(kPoclCache, ".so", &kernels_after);
  EXPECT_EQ(kernels_after.size(), kernels_before.size()) << "kernels compiled again after the tier-up";
  for (const auto& k : kernels_after)
    if (std::find(kernels_before.begin(), kernels_before.end(), k) == kernels_before.end())
      ADD_FAILURE() << "compiled after the tier-up: " << k;
  // Turned off: the plan's own kernels from the first run.
  const ScopedEnv off("OCL_INFER_FIRST_RUN_KERNELS", "0");
  std::vector<std::string> log3;
  so.cache_dir = make_temp_dir("helpers-tier-off");
  so.log = [&log3](const std::string& line) { log3.push_back(line); };
  auto s3 = ocl_infer::Session::from_memory(bytes.data(), bytes.size(), so);
  EXPECT_EQ(s3.run({{"x", x}}).at("y").bytes, first.bytes);
  EXPECT_FALSE(said(log3, "first-run kernels")) << testing::PrintToString(log3);
}

// A plan of several programs runs its first run on unoptimised code (the driver's lowest
// optimisation level: fast to compile, slow to run), with the same bits as the plan's own kernels;
// the tier-up then brings the own kernels, and the values stay the same.
TEST(CompileHelpers, UnoptimisedFirstRunThenTierUp) {
  SKIP_UNLESS_HELPERS_APPLY();
  const ScopedEnv helpers("OCL_INFER_COMPILE_HELPERS", "1");
  const ScopedEnv on("OCL_INFER_FIRST_RUN_UNOPTIMIZED", "1");
  const Model model(41, 3);
  const std::string bytes = model.m.bytes();
  Tensor own;
  {
    const ScopedEnv off("OCL_INFER_FIRST_RUN_KERNELS", "0");
    std::vector<std::string> log;
    auto s = ocl_infer::Session::from_memory(bytes.data(), bytes.size(),
                                             logging_options(make_temp_dir("helpers-o0-own"), &log));
    own = s.run({{"x", model.x}}).at("y");
    EXPECT_FALSE(said(log, "first-run kernels")) << testing::PrintToString(log);
  }
  EXPECT_LT(reference::rel_error(own, model.reference()), 1e-5);
  std::vector<std::string> log;
  auto s = ocl_infer::Session::from_memory(bytes.data(), bytes.size(),
                                           logging_options(make_temp_dir("helpers-o0"), &log));
  const Tensor first = s.run({{"x", model.x}}).at("y");
  ASSERT_TRUE(said(log, "of them unoptimised code")) << testing::PrintToString(log);
  EXPECT_TRUE(said(log, "-cl-opt-disable")) << "a program built so: " << testing::PrintToString(log);
  EXPECT_EQ(first.bytes, own.bytes) << "unoptimised code computes the same bits";
  bool swapped = false;
  for (int i = 0; i < 600 && !swapped; ++i) {
    usleep(100000);
    EXPECT_EQ(s.run({{"x", model.x}}).at("y").bytes, own.bytes) << "run " << i;
    swapped = said(log, "the plan's own kernels are compiled; plan built again");
  }
  ASSERT_TRUE(swapped) << "no tier-up within 60 s: " << testing::PrintToString(log);
  EXPECT_EQ(s.run({{"x", model.x}}).at("y").bytes, own.bytes);
}

// Which launches go unoptimised: programs whose guessed slowdown is small, cheapest first, within
// the plan's budget; none on a GPU, in a plan of few programs, or when turned off.
TEST(CompileHelpers, UnoptimisedFirstRunPicksCheapPrograms) {
  const ScopedEnv on("OCL_INFER_FIRST_RUN_UNOPTIMIZED", "1");
  oi::DeviceCaps cpu;
  cpu.type = oi::DeviceClass::CPU;
  cpu.compute_units = 2;
  cpu.native_vector_width_float = 16;  // 32 lanes: 128 GFLOP/s guessed, 150 ms at 16x = 1.2 GFLOP
  std::vector<oi::UnoptimizedCandidate> launches;
  const auto add = [&launches](const std::string& program, double flops) {
    launches.push_back({program, flops, 0, true});
  };
  for (int i = 0; i < 6; ++i) add("small" + std::to_string(i), 1e7);  // 1.25 ms each
  add("big", 2e9);                                                   // 250 ms
  for (int i = 0; i < 3; ++i) add("shared", 5e8);                    // 62.5 ms each, 187.5 together
  add("small0", 1e7);
  launches.back().eligible = false;
  launches.push_back({"copy", 0, 1e8, true});  // 100 MB: 6.25 ms at 16 GB/s, 100 ms at 16x
  std::vector<bool> pick = oi::pick_unoptimized(launches, cpu);
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(pick[i]) << i;
  EXPECT_FALSE(pick[6]) << "a program whose launch is guessed 250 ms slower";
  for (int i = 7; i < 10; ++i) EXPECT_FALSE(pick[i]) << "three launches of one program: 187.5 ms together";
  EXPECT_FALSE(pick[10]) << "not eligible";
  EXPECT_TRUE(pick[11]) << "100 ms of copying, guessed";
  // The plan's budget (500 ms): of twelve programs of 100 ms each, five.
  std::vector<oi::UnoptimizedCandidate> many;
  for (int i = 0; i < 12; ++i) many.push_back({"p" + std::to_string(i), 8e8, 0, true});
  pick = oi::pick_unoptimized(many, cpu);
  EXPECT_EQ(std::count(pick.begin(), pick.end(), true), 5);
  // Five programs: none.
  many.erase(many.begin() + 5, many.end());
  for (auto& l : many) l.flops = 1e6;
  pick = oi::pick_unoptimized(many, cpu);
  EXPECT_EQ(std::count(pick.begin(), pick.end(), true), 0);
  // A GPU, or turned off: none.
  oi::DeviceCaps gpu = cpu;
  gpu.type = oi::DeviceClass::GPU;
  pick = oi::pick_unoptimized(launches, gpu);
  EXPECT_EQ(std::count(pick.begin(), pick.end(), true), 0);
  const ScopedEnv off("OCL_INFER_FIRST_RUN_UNOPTIMIZED", "0");
  pick = oi::pick_unoptimized(launches, cpu);
  EXPECT_EQ(std::count(pick.begin(), pick.end(), true), 0);
}

// A helper that never runs (a helper executable that fails at once): the session does not keep
// its first-run kernels; after 5 s without a helper it builds the plan with its own kernels.
TEST(CompileHelpers, FirstRunKernelsWithoutAHelperGoBackToTheOwn) {
  SKIP_UNLESS_HELPERS_APPLY();
  const ScopedEnv helpers("OCL_INFER_COMPILE_HELPERS", "1");
  const ScopedEnv exe("OCL_INFER_COMPILE_HELPER", "/bin/false");
  std::mt19937 rng(31);
  ModelBuilder m;
  const Tensor x = random_tensor({1, 6, 10, 17}, rng), w = random_tensor({6, 1, 3, 3}, rng);
  m.input("x", DType::Float32, {1, 6, 10, 17}).output("y");
  m.initializer("w", w);
  depthwise_conv(m, "x", "w", "y", 6, 1, 1);
  std::vector<std::string> log;
  ocl_infer::SessionOptions so = logging_options(make_temp_dir("helpers-tier-none"), &log);
  const std::string bytes = m.bytes();
  auto s = ocl_infer::Session::from_memory(bytes.data(), bytes.size(), so);
  const Tensor first = s.run({{"x", x}}).at("y");
  EXPECT_LT(reference::rel_error(first, reference::conv2d(x, w, nullptr, 1, 6)), 1e-5);
  ASSERT_TRUE(said(log, "1 launches ran first-run kernels")) << testing::PrintToString(log);
  bool own = false;
  for (int i = 0; i < 100 && !own; ++i) {
    usleep(100000);
    EXPECT_EQ(s.run({{"x", x}}).at("y").bytes, first.bytes);
    own = said(log, "no background process took it up");
  }
  EXPECT_TRUE(own) << testing::PrintToString(log);
  EXPECT_EQ(s.run({{"x", x}}).at("y").bytes, first.bytes);
}

// The same for a model that runs in segments (NonZero's output shape depends on the data): the
// first segment's plan runs the quick kernels and tiers up; a new session starts with its own.
TEST(CompileHelpers, FirstRunKernelsInASegmentedModel) {
  SKIP_UNLESS_HELPERS_APPLY();
  const ScopedEnv helpers("OCL_INFER_COMPILE_HELPERS", "1");
  std::mt19937 rng(29);
  ModelBuilder m;
  const Tensor x = random_tensor({1, 8, 9, 24}, rng), w = random_tensor({8, 1, 3, 3}, rng);
  m.input("x", DType::Float32, {1, 8, 9, 24}).output("y").output("nz");
  m.initializer("w", w);
  depthwise_conv(m, "x", "w", "y", 8, 1, 1);
  m.node("Relu", {"y"}, {"r"});
  m.node("NonZero", {"r"}, {"nz"});
  const Tensor want = reference::conv2d(x, w, nullptr, 1, 8);
  const std::string dir = make_temp_dir("helpers-tier-seg");
  std::vector<std::string> log;
  ocl_infer::SessionOptions so = logging_options(dir, &log);
  const std::string bytes = m.bytes();
  std::map<std::string, Tensor> first;
  {
    auto s = ocl_infer::Session::from_memory(bytes.data(), bytes.size(), so);
    first = s.run({{"x", x}});
  }
  ASSERT_TRUE(said(log, "1 launches ran first-run kernels")) << testing::PrintToString(log);
  EXPECT_LT(reference::rel_error(first.at("y"), want), 1e-5);
  int64_t positive = 0;
  for (int64_t i = 0; i < want.numel(); ++i) positive += want.data<float>()[i] > 0;
  EXPECT_EQ(first.at("nz").shape, (std::vector<int64_t>{4, positive}));
  // The background process outlives the session; its marker appears.
  std::vector<std::string> markers;
  for (int i = 0; i < 600 && markers.empty(); ++i) {
    usleep(100000);
    find_files(dir, ".txt", &markers);
    markers.erase(std::remove_if(markers.begin(), markers.end(),
                                 [](const std::string& f) { return f.find("/tiered-") == std::string::npos; }),
                  markers.end());
  }
  ASSERT_EQ(markers.size(), 1u) << "no tier-up marker within 60 s";
  std::vector<std::string> log2;
  so.log = [&log2](const std::string& line) { log2.push_back(line); };
  auto s2 = ocl_infer::Session::from_memory(bytes.data(), bytes.size(), so);
  const auto second = s2.run({{"x", x}});
  EXPECT_FALSE(said(log2, "first-run kernels")) << testing::PrintToString(log2);
  EXPECT_EQ(second.at("y").bytes, first.at("y").bytes);
  EXPECT_EQ(second.at("nz").bytes, first.at("nz").bytes);
}

// A warm start on PoCL (every kernel in the ledger) hands the programs it compiled from source to
// a background process, which stores their binaries in the cache folder; the next start loads
// them as binaries, with the same results.
TEST(CompileHelpers, WarmStartStoresBinariesInTheBackground) {
  SKIP_UNLESS_HELPERS_APPLY();
  const ScopedEnv helpers("OCL_INFER_COMPILE_HELPERS", "1");
  const ScopedEnv policy("OCL_INFER_STORE_BINARIES", "background");  // whatever the programs cost
  // The cold start with the plan's own kernels (no tier-up: its background process would make the
  // later starts load its bundle from the driver's cache instead).
  const ScopedEnv own("OCL_INFER_FIRST_RUN_UNOPTIMIZED", "0");
  const Model model(13, 9);
  const std::string dir = make_temp_dir("helpers-store");
  const RunResult cold = run(model, dir);
  EXPECT_LT(reference::rel_error(cold.y, model.reference()), 1e-5);
  EXPECT_FALSE(said(cold.log, "background process stores")) << "a cold start stores nothing";
  const RunResult warm = run(model, dir);
  ASSERT_TRUE(said(warm.log, "background process stores")) << "a warm start on PoCL with a cache folder";
  EXPECT_EQ(warm.y.bytes, cold.y.bytes);
  // The store runs detached: wait for its entries (and for its locks to go).
  std::vector<std::string> bins, locks;
  for (int i = 0; i < 1200; ++i) {
    bins.clear(), locks.clear();
    find_files(dir, ".bin", &bins);
    find_files(dir, ".lock", &locks);
    std::vector<std::string> jobs;
    find_files(dir, "", &jobs);
    bool job_left = false;
    for (const auto& f : jobs)  // store-PID-XXXXXX, not the policy file store-binaries-*.txt
      job_left |= f.find("/store-") != std::string::npos && f.find("/store-binaries-") == std::string::npos;
    if (!bins.empty() && locks.empty() && !job_left) break;
    usleep(100000);
  }
  ASSERT_FALSE(bins.empty()) << "no binary stored within 120 s";
  const RunResult binary = run(model, dir);
  EXPECT_TRUE(said(binary.log, "loaded from the cache"));
  EXPECT_EQ(binary.y.bytes, cold.y.bytes);
  // With the store turned off, a warm start hands nothing over.
  const ScopedEnv off("OCL_INFER_STORE_BINARIES", "0");
  const std::string other = make_temp_dir("helpers-store-off");
  run(model, other);
  EXPECT_FALSE(said(run(model, other).log, "background process stores"));
}

// Jobs a helper cannot trust: unreadable, damaged, for other kernel sources or another device.
TEST(CompileHelpers, HelperRefusesForeignOrDamagedJobs) {
  const std::string dir = make_temp_dir("helpers-bad");
  auto helper_on = [&](const std::string& text) {
    const std::string path = dir + "/job.txt";
    std::ofstream(path) << text;
    const int rc = ocl_infer::run_compile_helper(path);
    EXPECT_NE(access(path.c_str(), F_OK), 0) << "the job file is deleted whatever it held";
    return rc;
  };
  EXPECT_EQ(ocl_infer::run_compile_helper(dir + "/missing.txt"), 2);
  EXPECT_EQ(helper_on(""), 2);
  EXPECT_EQ(helper_on("not a job\n"), 2);
  const std::string head = "ocl-infer compile job 1\n", parent = "parent\t" + std::to_string(getppid()) + "\n";
  EXPECT_EQ(helper_on(head + "sources\t0000000000000000\ndevice\t0\t0000000000000000\n" + parent), 3);
  EXPECT_EQ(helper_on(head + "sources\t" + oi::kernel_sources_hash() + "\ndevice\t0\t0000000000000000\n" + parent), 3)
      << "another device's key";
  EXPECT_EQ(helper_on(head + "sources\t" + oi::kernel_sources_hash() + "\ndevice\t999\t0000000000000000\n" + parent),
            3);
  EXPECT_EQ(helper_on(head + "sources\t" + oi::kernel_sources_hash() + "\ndevice\t0\t0000000000000000\n"), 2)
      << "no parent line";
  // The right device, then a damaged launch record.
  const oi::DeviceHandle dev = oi::enumerate_devices().at(0);
  std::string key;
  {
    oi::ClRuntime cl(dev, "off", nullptr);
    key = oi::hex16(oi::fnv1a(cl.device_key()));
  }
  const std::string good = head + "sources\t" + oi::kernel_sources_hash() + "\ndevice\t0\t" + key + "\n" + parent;
  EXPECT_EQ(helper_on(good), 0) << "no launch: nothing to do";
  EXPECT_EQ(helper_on(good + "launch\tx\n"), 2);
  EXPECT_EQ(helper_on(good + "launch\tconv\tconv_f32_packed\t-DOCB=16\nbogus\t1\nend\n"), 2);
  // Binary-store jobs: damaged, or for another device.
  const std::string store = "ocl-infer binary-store job 1\n";
  EXPECT_EQ(helper_on(store), 2);
  EXPECT_EQ(helper_on(store + "sources\t" + oi::kernel_sources_hash() + "\ndevice\t0\t0000000000000000\t" + dir +
                      "\n"),
            3);
  EXPECT_EQ(helper_on(store + "sources\t" + oi::kernel_sources_hash() + "\ndevice\t0\t" + key + "\t" + dir +
                      "\nprogram\tx\t999\t0\t" + dir + "/x.bin\nshort"),
            2);
  // A launch of a kernel that does not exist: skipped, not fatal.
  EXPECT_EQ(helper_on(good + "launch\tnosuchfile\tk\t\nbundle\t0\nglobal\t1\t1\nlocal\t0\nend\n"), 0);
}

}  // namespace
