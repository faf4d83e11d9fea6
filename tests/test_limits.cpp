// Hostile sizes and files: every one ends quickly in a clear error, before anything big is
// allocated (peak RSS is checked), and memory limits hold for the whole plan.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>

#include "runtime/compiler/memory_planner.hpp"
#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

// Peak resident set size of this process, bytes.
uint64_t peak_rss() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_maxrss) * 1024;
}

struct Outcome {
  std::string error;  // what(), or "NO ERROR" / "WRONG TYPE: ..."
  double seconds;
  uint64_t rss_growth;
};

template <typename E>
Outcome outcome(const std::function<void()>& f) {
  const uint64_t rss0 = peak_rss();
  const auto t0 = std::chrono::steady_clock::now();
  Outcome o{"NO ERROR", 0, 0};
  try {
    f();
  } catch (const E& e) {
    o.error = e.what();
  } catch (const std::exception& e) {
    o.error = std::string("WRONG TYPE: ") + e.what();
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  o.rss_growth = peak_rss() - rss0;
  return o;
}

ocl_infer::Session load(const std::string& bytes, uint64_t max_memory = 0) {
  ocl_infer::SessionOptions opt;
  opt.max_memory_bytes = max_memory;
  return ocl_infer::Session::from_memory(bytes.data(), bytes.size(), opt);
}

void expect_quick(const Outcome& o, const std::string& needle) {
  EXPECT_NE(o.error.find(needle), std::string::npos) << o.error;
  // A bound against hangs and huge allocations, not a timing: it includes opening the device
  // (NVIDIA's driver with six test processes beside it: 1.07 s).
  EXPECT_LT(o.seconds, 5.0) << o.error;
  EXPECT_LT(o.rss_growth, uint64_t{200} << 20) << o.error;
}

// An initializer claiming 2 GiB with 4 bytes of data: refused before anything is allocated.
TEST(Limits, InitializerClaimingMoreThanItHolds) {
  ModelBuilder m;
  m.input("x", DType::Float32, {1}).output("y");
  auto& mp = m.proto();
  auto* init = mp.mutable_graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(1);
  init->add_dims(int64_t{1} << 29);
  init->set_raw_data(std::string(4, '\0'));
  m.node("Add", {"x", "w"}, {"y"});
  expect_quick(outcome<ocl_infer::ModelError>([&] { load(m.bytes()); }), "raw data holds 4 bytes");
  // Beyond the limit it is refused for that reason, however it is stored.
  init->clear_dims();
  init->add_dims(int64_t{1} << 40);
  init->add_dims(int64_t{1} << 40);
  expect_quick(outcome<ocl_infer::ModelError>([&] { load(m.bytes()); }), "beyond the memory limit");
}

// Activations beyond the limit: a DeviceError that names the plan's needs and the largest tensors.
TEST(Limits, PlanBeyondTheMemoryLimit) {
  ModelBuilder m;
  m.input("x", DType::Float32, {1, 16, 256, 256}).output("y");
  m.node("Relu", {"x"}, {"a"});
  m.node("Sigmoid", {"a"}, {"b"});
  m.node("Add", {"a", "b"}, {"y"});
  std::mt19937 rng(1);
  Tensor x = random_tensor({1, 16, 256, 256}, rng);
  Outcome o = outcome<ocl_infer::DeviceError>([&] { load(m.bytes(), 8 << 20).run({{"x", x}}); });
  EXPECT_NE(o.error.find("out of device memory"), std::string::npos) << o.error;
  EXPECT_NE(o.error.find("largest tensors"), std::string::npos) << o.error;
  // The same with room to spare runs.
  EXPECT_NO_THROW(load(m.bytes(), 64 << 20).run({{"x", x}}));
  // A single value beyond the limit is refused at shape inference.
  o = outcome<ocl_infer::ModelError>([&] { load(m.bytes(), 1 << 20).run({{"x", x}}); });
  EXPECT_NE(o.error.find("more than the memory limit"), std::string::npos) << o.error;
}

TEST(Limits, ResizeToHugeSizes) {
  ModelBuilder m(13);
  m.input("x", DType::Float32, {1, 1, 2, 1}).output("y");
  Tensor sizes(DType::Int64, {4});
  int64_t s[4] = {1, 1, int64_t{1} << 31, 1};
  std::memcpy(sizes.bytes.data(), s, sizeof s);
  m.initializer("sizes", sizes);
  m.node("Resize", {"x", "", "", "sizes"}, {"y"});
  Tensor x(DType::Float32, {1, 1, 2, 1});
  expect_quick(outcome<ocl_infer::Error>([&] { load(m.bytes()).run({{"x", x}}); }), "2^31");
}

// External data: only regular files inside the model's folder, and only the bytes asked for.
TEST(Limits, ExternalDataStaysInTheModelFolder) {
  char tmpl[] = "/tmp/ocl-infer-ext-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  auto model_with = [&](const std::string& location, const std::string& offset = "", const std::string& length = "") {
    ModelBuilder m;
    m.input("x", DType::Float32, {4}).output("y");
    auto* init = m.proto().mutable_graph()->add_initializer();
    init->set_name("w");
    init->set_data_type(1);
    init->add_dims(4);
    init->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* e = init->add_external_data();
    e->set_key("location");
    e->set_value(location);
    if (!offset.empty()) {
      e = init->add_external_data();
      e->set_key("offset");
      e->set_value(offset);
    }
    if (!length.empty()) {
      e = init->add_external_data();
      e->set_key("length");
      e->set_value(length);
    }
    m.node("Add", {"x", "w"}, {"y"});
    const std::string path = dir + "/model.onnx";
    std::ofstream(path, std::ios::binary) << m.bytes();
    return path;
  };
  std::ofstream(dir + "/w.bin", std::ios::binary) << std::string(16 + 8, '\x01');
  // A good one loads and reads only its 16 bytes (at offset 8).
  EXPECT_NO_THROW(ocl_infer::Session::from_file(model_with("w.bin", "8", "16")));
  auto err = [&](const std::string& path) {
    return outcome<ocl_infer::ModelError>([&] { ocl_infer::Session::from_file(path); }).error;
  };
  ASSERT_EQ(symlink("/etc/passwd", (dir + "/link.bin").c_str()), 0);
  EXPECT_NE(err(model_with("link.bin")).find("leads outside the model folder"), std::string::npos);
  ASSERT_EQ(mkfifo((dir + "/fifo.bin").c_str(), 0600), 0);
  EXPECT_NE(err(model_with("fifo.bin")).find("not a regular file"), std::string::npos);
  EXPECT_NE(err(model_with("../../etc/passwd")).find("outside the model folder"), std::string::npos);
  EXPECT_NE(err(model_with("/etc/passwd")).find("relative path"), std::string::npos);
  EXPECT_NE(err(model_with("w.bin", "1000")).find("beyond the end"), std::string::npos);
  EXPECT_NE(err(model_with("w.bin", "abc")).find("not a non-negative integer"), std::string::npos);
  EXPECT_NE(err(model_with("w.bin", "0", "4000000000000")).find("does not match"), std::string::npos);
  EXPECT_NE(err(model_with("w.bin", "16", "16")).find("runs past the end"), std::string::npos);
  for (const char* f : {"model.onnx", "w.bin", "link.bin", "fifo.bin"}) unlink((dir + "/" + f).c_str());
  rmdir(dir.c_str());
}

TEST(Limits, HostileAttributesAndOpsets) {
  // Conv strides near 2^62: a one-line error naming the attribute.
  ModelBuilder m(13);
  m.input("x", DType::Float32, {1, 1, 5, 5}).output("y");
  std::mt19937 rng(2);
  m.initializer("w", random_tensor({1, 1, 3, 3}, rng));
  attr_ints(m.node("Conv", {"x", "w"}, {"y"}), "strides", {int64_t{1} << 62, 1});
  Tensor x(DType::Float32, {1, 1, 5, 5});
  std::string e = outcome<ocl_infer::ModelError>([&] { load(m.bytes()).run({{"x", x}}); }).error;
  EXPECT_NE(e.find("strides"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  // A huge but representable dilation: refused before a kernel is compiled for it.
  ModelBuilder d(13);
  d.input("x", DType::Float32, {1, 1, 5, 5000}).output("y");
  d.initializer("w", random_tensor({1, 1, 1, 3}, rng));
  auto& conv = d.node("Conv", {"x", "w"}, {"y"});
  attr_ints(conv, "dilations", {1, 2000});
  Tensor xd(DType::Float32, {1, 1, 5, 5000});
  e = outcome<ocl_infer::UnsupportedError>([&] { load(d.bytes()).run({{"x", xd}}); }).error;
  EXPECT_NE(e.find("window spanning"), std::string::npos) << e;
  // Opsets newer than implemented.
  ModelBuilder o(99);
  o.input("x", DType::Float32, {2}).output("y");
  o.node("Relu", {"x"}, {"y"});
  e = outcome<ocl_infer::UnsupportedError>([&] { load(o.bytes()); }).error;
  EXPECT_NE(e.find("opset 99"), std::string::npos) << e;
}

TEST(Limits, SmallerSemanticErrors) {
  // Constant Gather indices out of range are an error (ONNX), not a silent 0.
  ModelBuilder g(13);
  g.input("x", DType::Float32, {3, 2}).output("y");
  Tensor idx(DType::Int64, {2});
  idx.data<int64_t>()[0] = 1;
  idx.data<int64_t>()[1] = 7;
  g.initializer("i", idx);
  g.node("Gather", {"x", "i"}, {"y"});
  std::string e = outcome<ocl_infer::ModelError>([&] { load(g.bytes()).run({{"x", Tensor(DType::Float32, {3, 2})}}); }).error;
  EXPECT_NE(e.find("out of range"), std::string::npos) << e;
  // Reflect padding wider than the input.
  ModelBuilder p(13);
  p.input("x", DType::Float32, {1, 3}).output("y");
  Tensor pads(DType::Int64, {4});
  int64_t pv[4] = {0, 3, 0, 0};
  std::memcpy(pads.bytes.data(), pv, sizeof pv);
  p.initializer("pads", pads);
  attr_s(p.node("Pad", {"x", "pads"}, {"y"}), "mode", "reflect");
  e = outcome<ocl_infer::ModelError>([&] { load(p.bytes()).run({{"x", Tensor(DType::Float32, {1, 3})}}); }).error;
  EXPECT_NE(e.find("smaller than the input"), std::string::npos) << e;
  // Integer division by zero on the device is reported, naming the node.
  ModelBuilder dv(13);
  dv.input("a", DType::Int32, {4}).input("b", DType::Int32, {4}).output("y");
  dv.node("Div", {"a", "b"}, {"y"});
  Tensor a(DType::Int32, {4}), b(DType::Int32, {4});
  for (int i = 0; i < 4; ++i) a.data<int32_t>()[i] = 10 + i, b.data<int32_t>()[i] = i == 2 ? 0 : 3;
  auto s = load(dv.bytes());
  e = outcome<ocl_infer::InputError>([&] { s.run({{"a", a}, {"b", b}}); }).error;
  EXPECT_NE(e.find("division by zero"), std::string::npos) << e;
  b.data<int32_t>()[2] = 5;
  auto out = s.run({{"a", a}, {"b", b}});
  EXPECT_EQ(out.at("y").data<int32_t>()[2], 12 / 5);
  // Control characters from the file never reach a message raw.
  ModelBuilder c;
  c.input("x", DType::Float32, {2}).output("y");
  c.node("Evil\x1b[31mOp", {"x"}, {"y"});
  e = outcome<ocl_infer::UnsupportedError>([&] { load(c.bytes()); }).error;
  EXPECT_EQ(e.find('\x1b'), std::string::npos) << e;
  EXPECT_NE(e.find("\\x1b"), std::string::npos) << e;
}

}  // namespace

namespace {

// Activations that need more than the device's largest allocation go into several arenas (each at
// most that big) instead of one buffer per tensor; the plan stays sound.
TEST(Limits, ArenaSplitsAtTheLargestAllocation) {
  // A chain x -> a -> b -> c -> y of 1000-byte values, with x also read at the end: at most three
  // are live at once.
  oi::Graph g;
  std::vector<int> ids;
  for (const char* n : {"x", "a", "b", "c", "y"}) {
    const int id = g.add_value(n);
    g.values[id].dtype = DType::Float32;
    g.values[id].shape = {250};
    g.values[id].shape_known = true;
    ids.push_back(id);
  }
  g.inputs = {ids[0]};
  g.outputs = {ids[4]};
  for (int k = 0; k < 4; ++k) {
    oi::Node n;
    n.name = "n" + std::to_string(k);
    n.op_type = "Relu";
    n.inputs = {ids[k]};
    if (k == 3) n.inputs.push_back(ids[0]);
    n.outputs = {ids[k + 1]};
    g.nodes.push_back(n);
    g.values[ids[k + 1]].producer = k;
  }
  std::vector<oi::PlanNodeTraits> traits(4);
  const std::vector<int> steps{0, 1, 2, 3};
  const std::vector<DType> storage(g.values.size(), DType::Float32);
  oi::MemoryPlan one = oi::plan_memory(g, steps, traits, storage, 64);
  EXPECT_EQ(one.arena_sizes.size(), 1u);
  EXPECT_EQ(oi::check_memory_plan(one), "");
  oi::MemoryPlan split = oi::plan_memory(g, steps, traits, storage, 64, true, 2048);
  EXPECT_GT(split.arena_sizes.size(), 1u);
  for (size_t a : split.arena_sizes) EXPECT_LE(a, 2048u);
  EXPECT_EQ(oi::check_memory_plan(split), "");
}

}  // namespace
