// Program bundles (runtime/backend/program_bundle.hpp): the option parser, the scan of file-scope
// names, two units of one source in one program on the device, a model planned with and without
// bundling (bit-identical, and against a CPU reference), the registry of what was bundled, and the
// process's pool of compiled programs that later sessions take their kernels from.
#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runtime/backend/cl_runtime.hpp"
#include "runtime/backend/program_bundle.hpp"
#include "tests/model_builder.hpp"
#include "tests/reference_ops.hpp"

using namespace testing_util;

namespace {

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// The caches' ledgers are read as numbers: hex16() round-trips, and anything but 16 hex digits is
// refused (the reader then skips the line).
TEST(Bundle, Hex16IdsRoundTripAndRejectOtherText) {
  for (uint64_t v : {0ull, 1ull, 0x0123456789abcdefull, ~0ull, 0x8000000000000000ull}) {
    uint64_t back = 42;
    ASSERT_TRUE(oi::parse_hex16(oi::hex16(v), &back)) << oi::hex16(v);
    EXPECT_EQ(back, v);
  }
  uint64_t v = 0;
  EXPECT_TRUE(oi::parse_hex16("00000000000000FF", &v));
  EXPECT_EQ(v, 255u);
  for (const char* bad : {"", "0123456789abcde", "0123456789abcdef0", "0123456789abcdeg", " 123456789abcdef",
                          "0123456789abcde\n", "-123456789abcdef"})
    EXPECT_FALSE(oi::parse_hex16(bad, &v)) << bad;
  EXPECT_FALSE(oi::parse_hex16(std::string_view("0123456789abcd\0f", 16), &v));
}

TEST(Bundle, ParsesOnlyDefinitions) {
  std::vector<std::pair<std::string, std::string>> d;
  ASSERT_TRUE(oi::parse_define_options(" -DA=1  -DB -DT_LOWEST=(-INFINITY) -DX=1.5e-3f", &d));
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0], std::make_pair(std::string("A"), std::string("1")));
  EXPECT_EQ(d[1], std::make_pair(std::string("B"), std::string("1")));
  EXPECT_EQ(d[2].second, "(-INFINITY)");
  EXPECT_EQ(d[3].second, "1.5e-3f");
  d.clear();
  EXPECT_TRUE(oi::parse_define_options("", &d));
  EXPECT_TRUE(d.empty());
  for (const char* bad : {"-cl-fast-relaxed-math", "-DA=1 -w", "-D A=1", "-DF(x)=x", "-DS=\"s\"", "-D"}) {
    d.clear();
    EXPECT_FALSE(oi::parse_define_options(bad, &d)) << bad;
  }
}

TEST(Bundle, ScanFindsFileScopeNames) {
  const std::string src = R"(
#ifndef GUARD_CL
#define GUARD_CL
#define STORE_TYPE(s) float
#define GEN(T) inline T twice_##T(T x) { return x + x; } \
  inline T thrice_##T(T x) { return 3 * x; }
GEN(float)
GEN(float4)
// a comment with a fake() { name; }
/* and a block comment: int fake2(void) {} */
typedef float real;
typedef __fp16 half_pair __attribute__((ext_vector_type(2)));
typedef struct tagged { int a; } tagged_t;
__constant float table[3] = {1.0f, 2.0f, 3.0f};
inline STORE_TYPE(YS) helper(const __global float* restrict p, int i) { if (i) { return p[i]; } return 0; }
__attribute__((always_inline)) inline void attributed(int x) {}
float prototype(float);
__kernel __attribute__((reqd_work_group_size(8, 1, 1))) void kern(__global float* y) { y[0] = helper(y, 1); }
#endif
)";
  const oi::SourceNames n = oi::scan_source_names(src);
  for (const char* g : {"twice_float", "thrice_float", "twice_float4", "thrice_float4", "real", "tagged", "tagged_t",
                        "half_pair", "table", "helper", "attributed", "prototype", "kern"})
    EXPECT_TRUE(has(n.globals, g)) << g;
  for (const char* not_g : {"fake", "fake2", "STORE_TYPE", "GEN", "float", "p", "i", "y", "x", "__attribute__"})
    EXPECT_FALSE(has(n.globals, not_g)) << not_g;
  for (const char* m : {"GUARD_CL", "STORE_TYPE", "GEN"}) EXPECT_TRUE(has(n.macros, m)) << m;
}

// Two units of one source with different definitions, in one program: each unit's kernel sees its
// own values, helpers and constants.
TEST(Bundle, TwoUnitsOfOneSourceOnTheDevice) {
  const std::string src = R"(
#ifndef SCALE
#define SCALE 1.0f
#endif
#define GEN(T) inline T scaled_##T(T x) { return x * SCALE + OFFSET; }
GEN(float)
__constant float bias[2] = {0.25f, 0.5f};
typedef float real;
inline real add_bias(real v, int i) { return v + bias[i & 1]; }
__kernel void apply(__global float* y) {
  const int i = get_global_id(0);
  y[i] = add_bias(scaled_float(y[i]), i);
}
)";
  const std::vector<oi::BundleUnit> units = {{src, "-DSCALE=2.0f -DOFFSET=1.0f"}, {src, "-DOFFSET=-3.0f"}};
  const std::string combined = oi::bundle_source(units);
  oi::ClRuntime rt(oi::select_device(""), "off", nullptr);
  cl_int err = CL_SUCCESS;
  const char* s = combined.c_str();
  const size_t len = combined.size();
  cl_program prog = clCreateProgramWithSource(rt.context(), 1, &s, &len, &err);
  ASSERT_EQ(err, CL_SUCCESS);
  cl_device_id dev = rt.device();
  err = clBuildProgram(prog, 1, &dev, "", nullptr, nullptr);
  if (err != CL_SUCCESS) {
    size_t n = 0;
    clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
    std::string log(n, '\0');
    clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
    FAIL() << log << "\n" << combined;
  }
  const float in[4] = {1, 2, 3, 4};
  const float scale[2] = {2, 1}, offset[2] = {1, -3};
  for (int u = 0; u < 2; ++u) {
    cl_kernel k = clCreateKernel(prog, ("apply" + oi::bundle_suffix(u)).c_str(), &err);
    ASSERT_EQ(err, CL_SUCCESS) << "unit " << u;
    auto buf = rt.upload(in, sizeof in);
    ASSERT_EQ(clSetKernelArg(k, 0, sizeof(cl_mem), &buf->mem), CL_SUCCESS);
    const size_t global = 4;
    ASSERT_EQ(clEnqueueNDRangeKernel(rt.queue(), k, 1, nullptr, &global, nullptr, 0, nullptr, nullptr), CL_SUCCESS);
    float out[4];
    ASSERT_EQ(clEnqueueReadBuffer(rt.queue(), buf->mem, CL_TRUE, 0, sizeof out, out, 0, nullptr, nullptr), CL_SUCCESS);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(out[i], in[i] * scale[u] + offset[u] + (i & 1 ? 0.5f : 0.25f)) << "unit " << u << " element " << i;
    clReleaseKernel(k);
  }
  clReleaseProgram(prog);
}

// Convs of three shapes and a max pool: one bundle of their programs, the same bits as separate
// programs, and the CPU reference.
TEST(Bundle, ModelBundledMatchesSeparateProgramsAndReference) {
  std::mt19937 rng(7);
  const Tensor x = random_tensor({1, 6, 13, 11}, rng);
  const Tensor w1 = random_tensor({16, 6, 3, 3}, rng), w2 = random_tensor({8, 16, 1, 1}, rng),
               w3 = random_tensor({5, 8, 5, 5}, rng);
  ModelBuilder m;
  m.input("x", DType::Float32, {1, 6, 13, 11}).output("y");
  m.initializer("w1", w1).initializer("w2", w2).initializer("w3", w3);
  attr_ints(m.node("Conv", {"x", "w1"}, {"c1"}), "pads", {1, 1, 1, 1});
  m.node("Relu", {"c1"}, {"r1"});
  m.node("Conv", {"r1", "w2"}, {"c2"});
  attr_ints(m.node("Conv", {"c2", "w3"}, {"c3"}), "pads", {2, 2, 2, 2});
  auto& pool = m.node("MaxPool", {"c3"}, {"y"});
  attr_ints(pool, "kernel_shape", {3, 3});
  attr_ints(pool, "pads", {1, 1, 1, 1});
  const std::string bytes = m.bytes();

  auto run = [&](bool bundle, ocl_infer::SessionStats* st) {
    setenv("OCL_INFER_BUNDLE", bundle ? "1" : "0", 1);
    ocl_infer::release_shared_contexts();  // as a new process: no programs kept from the other run
    ocl_infer::SessionOptions so;
    so.cache_dir = "off";
    so.tuning_cache = "off";
    auto s = ocl_infer::Session::from_memory(bytes.data(), bytes.size(), so);
    auto out = s.run({{"x", x}}).at("y");
    *st = s.stats();
    return out;
  };
  ocl_infer::SessionStats bundled_stats, separate_stats;
  const Tensor bundled = run(true, &bundled_stats);
  const Tensor separate = run(false, &separate_stats);
  unsetenv("OCL_INFER_BUNDLE");
  EXPECT_GE(bundled_stats.programs_bundled, 3) << "the three convs and the pool differ in their options";
  EXPECT_EQ(bundled_stats.programs_built, 1);
  EXPECT_EQ(separate_stats.programs_bundled, 0);
  EXPECT_EQ(separate_stats.programs_built, bundled_stats.programs_bundled);
  ASSERT_EQ(bundled.bytes.size(), separate.bytes.size());
  EXPECT_EQ(bundled.bytes, separate.bytes) << "bundling changes which program holds a kernel, nothing else";

  // Reference: conv, relu, conv, conv, then 3x3 max pool with padding 1, stride 1.
  const Tensor c1 = reference::unary(reference::conv2d(x, w1, nullptr, 1, 1), reference::relu);
  const Tensor c3 = reference::conv2d(reference::conv2d(c1, w2, nullptr, 0, 1), w3, nullptr, 2, 1);
  Tensor want(DType::Float32, c3.shape);
  const int64_t C = c3.shape[1], H = c3.shape[2], W = c3.shape[3];
  for (int64_t c = 0; c < C; ++c)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w) {
        float mx = -INFINITY;
        for (int64_t dh = -1; dh <= 1; ++dh)
          for (int64_t dw = -1; dw <= 1; ++dw)
            if (h + dh >= 0 && h + dh < H && w + dw >= 0 && w + dw < W)
              mx = std::max(mx, c3.data<float>()[(c * H + h + dh) * W + w + dw]);
        want.data<float>()[(c * H + h) * W + w] = mx;
      }
  EXPECT_LT(reference::rel_error(bundled, want), 1e-4);
}

// The registry in the cache folder: a plan bundles the units that were not built on their own
// before (those the driver's cache holds as programs of their own), and a plan seen before makes
// the same choice again; a damaged registry changes only which programs are built together.
TEST(Bundle, RegistryKeepsUnitsBuiltAloneOnTheirOwn) {
  char tmpl[] = "/tmp/ocl-infer-bundle-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::mt19937 rng(11);
  const Tensor x = random_tensor({1, 5, 13, 11}, rng), w = random_tensor({7, 5, 3, 3}, rng);
  ModelBuilder single;
  single.input("x", DType::Float32, {1, 5, 13, 11}).output("y");
  single.node("Sigmoid", {"x"}, {"y"});
  ModelBuilder multi;
  multi.input("x", DType::Float32, {1, 5, 13, 11}).output("y");
  multi.initializer("w", w);
  multi.node("Sigmoid", {"x"}, {"s"});
  attr_ints(multi.node("Conv", {"s", "w"}, {"c"}), "pads", {1, 1, 1, 1});
  attr_ints(multi.node("MaxPool", {"c"}, {"y"}), "kernel_shape", {2, 2});
  auto run = [&](const ModelBuilder& m, ocl_infer::SessionStats* st) {
    const std::string bytes = m.bytes();
    ocl_infer::SessionOptions so;
    so.cache_dir = dir;
    so.tuning_cache = "off";
    so.kernel_variants = "conv=packed:pad=0";  // three units: no padded copy of the conv's input
    ocl_infer::release_shared_contexts();  // each run as a new process (only the disk's registry)
    auto s = ocl_infer::Session::from_memory(bytes.data(), bytes.size(), so);
    auto out = s.run({{"x", x}}).at("y");
    *st = s.stats();
    return out;
  };
  ocl_infer::SessionStats st;
  const Tensor first = run(multi, &st);  // a new plan, nothing built alone yet: all three bundled
  EXPECT_EQ(st.programs_bundled, 3);
  run(single, &st);  // one unit: built alone, and recorded
  EXPECT_EQ(st.programs_bundled, 0);
  EXPECT_EQ(st.programs_built + st.programs_cached, 1);
  // `multi` again: a plan seen before bundles what it bundled then.
  EXPECT_EQ(run(multi, &st).bytes, first.bytes);
  EXPECT_EQ(st.programs_bundled, 3);
  EXPECT_EQ(st.programs_built + st.programs_cached, 1);
  // A new plan with the same units (another order of the registry's lines would do the same): the
  // registry without its plan lines keeps only the unit built alone.
  std::vector<std::string> files;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) files.push_back(e->d_name);
    closedir(d);
  }
  std::string registry;
  for (const std::string& f : files)
    if (f.rfind("bundles-", 0) == 0) registry = dir + "/" + f;
  ASSERT_FALSE(registry.empty()) << "no registry in " << dir;
  auto keep_lines = [&](const std::string& kinds) {
    std::ifstream in(registry);
    std::string line, kept;
    while (std::getline(in, line))
      if (line.size() > 2 && line[1] == ' ' && kinds.find(line[0]) != std::string::npos) kept += line + "\n";
    in.close();
    std::ofstream(registry, std::ios::trunc) << kept << "garbage\np short\n\x01\x02 p\n";
  };
  // Only the unit built alone remembered: the conv and the pool go into a bundle.
  keep_lines("s");
  EXPECT_EQ(run(multi, &st).bytes, first.bytes);
  EXPECT_EQ(st.programs_bundled, 2) << "the Sigmoid was built alone before: the conv and the pool are bundled";
  EXPECT_EQ(st.programs_built + st.programs_cached, 2);
  // Without its plan line, `multi` is a new small plan whose units were all built before (the
  // Sigmoid alone, the conv and the pool in the first bundle): no bundle, three programs.
  keep_lines("su");
  EXPECT_EQ(run(multi, &st).bytes, first.bytes);
  EXPECT_EQ(st.programs_bundled, 0);
  EXPECT_EQ(st.programs_built + st.programs_cached, 3);
  for (const std::string& f : files)
    if (f != "." && f != "..") std::remove((dir + "/" + f).c_str());
  std::remove(registry.c_str());
  rmdir(dir.c_str());
}

// The process keeps the programs its sessions compiled (ProgramPool in cl_runtime.cpp): a later
// session with the same kernels compiles nothing, one that shares some of them compiles only the
// rest (taking the others from an earlier session's bundle), sessions on several threads at once
// share them, and after release_shared_contexts() a session compiles again. Same bits throughout,
// and the CPU reference. (No disk cache: every program a session does not find in the pool is a
// build.)
TEST(Bundle, LaterSessionsTakeTheProcessesPrograms) {
  std::mt19937 rng(23);
  const Tensor x = random_tensor({1, 5, 13, 11}, rng), w = random_tensor({7, 5, 3, 3}, rng);
  ModelBuilder multi;  // three units: one bundle
  multi.input("x", DType::Float32, {1, 5, 13, 11}).output("y");
  multi.initializer("w", w);
  multi.node("Sigmoid", {"x"}, {"s"});
  attr_ints(multi.node("Conv", {"s", "w"}, {"c"}), "pads", {1, 1, 1, 1});
  attr_ints(multi.node("MaxPool", {"c"}, {"y"}), "kernel_shape", {2, 2});
  ModelBuilder part;  // the same Sigmoid, then a Tanh of its own
  part.input("x", DType::Float32, {1, 5, 13, 11}).output("y");
  part.node("Sigmoid", {"x"}, {"s"});
  part.node("Tanh", {"s"}, {"y"});
  auto run = [&](const ModelBuilder& m, ocl_infer::SessionStats* st) {
    const std::string bytes = m.bytes();
    ocl_infer::SessionOptions so;
    so.cache_dir = "off";
    so.tuning_cache = "off";
    so.optimization_level = 0;  // no fusion: the Sigmoid is a unit of its own in both models
    so.kernel_variants = "conv=packed:pad=0";
    auto s = ocl_infer::Session::from_memory(bytes.data(), bytes.size(), so);
    auto out = s.run({{"x", x}}).at("y");
    if (st) *st = s.stats();
    return out;
  };
  const Tensor sig = reference::unary(x, [](double v) { return 1 / (1 + std::exp(-v)); });
  const Tensor c = reference::conv2d(sig, w, nullptr, 1, 1);
  Tensor want(DType::Float32, {1, 7, 12, 10});  // 2x2 windows, stride 1
  for (int64_t o = 0; o < 7; ++o)
    for (int64_t h = 0; h < 12; ++h)
      for (int64_t v = 0; v < 10; ++v) {
        float mx = -INFINITY;
        for (int64_t dh = 0; dh < 2; ++dh)
          for (int64_t dv = 0; dv < 2; ++dv) mx = std::max(mx, c.data<float>()[(o * 13 + h + dh) * 11 + v + dv]);
        want.data<float>()[(o * 12 + h) * 10 + v] = mx;
      }
  const Tensor want_part = reference::unary(sig, [](double v) { return std::tanh(v); });

  ocl_infer::release_shared_contexts();
  ocl_infer::SessionStats st;
  const Tensor first = run(multi, &st);
  EXPECT_EQ(st.programs_built, 1);
  EXPECT_EQ(st.programs_bundled, 3);
  EXPECT_LT(reference::rel_error(first, want), 1e-5);
  // The same model again: every kernel from the first session's bundle.
  EXPECT_EQ(run(multi, &st).bytes, first.bytes);
  EXPECT_EQ(st.programs_built, 0);
  EXPECT_EQ(st.programs_bundled, 0);
  // The Sigmoid from that bundle, the Tanh built alone (one unit: no bundle).
  const Tensor p1 = run(part, &st);
  EXPECT_EQ(st.programs_built, 1);
  EXPECT_EQ(st.programs_bundled, 0);
  EXPECT_LT(reference::rel_error(p1, want_part), 1e-5);
  // The Tanh's own program too.
  EXPECT_EQ(run(part, &st).bytes, p1.bytes);
  EXPECT_EQ(st.programs_built, 0);
  EXPECT_EQ(st.programs_cached, 1) << "the Tanh's program, from the pool";
  // Four threads at once, half of them on each model.
  std::vector<Tensor> outs(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([&, t] { outs[t] = run(t % 2 ? part : multi, nullptr); });
  for (auto& t : threads) t.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(outs[t].bytes, (t % 2 ? p1 : first).bytes) << "thread " << t;
  // A new context: compiled again, the same bits.
  ocl_infer::release_shared_contexts();
  EXPECT_EQ(run(multi, &st).bytes, first.bytes);
  EXPECT_EQ(st.programs_built, 1);
  EXPECT_EQ(st.programs_bundled, 3);
}

}  // namespace
