// Bad models and bad inputs give specific errors of the right type, never a crash.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

template <typename E>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("WRONG TYPE: ") + e.what();
  }
  return "NO ERROR";
}

ocl_infer::Session load(const std::string& bytes) {
  return ocl_infer::Session::from_memory(bytes.data(), bytes.size());
}

ModelBuilder relu_model() {
  ModelBuilder m;
  m.input("x", DType::Float32, {2, 3}).output("y");
  m.node("Relu", {"x"}, {"y"});
  return m;
}

TEST(Errors, EmptyTruncatedAndGarbageModels) {
  EXPECT_NE(error_of<ocl_infer::ModelError>([] { load(""); }).find("empty"), std::string::npos);
  std::string good = relu_model().bytes();
  std::string msg = error_of<ocl_infer::ModelError>([&] { load(good.substr(0, good.size() / 2)); });
  EXPECT_NE(msg.find("not a valid ONNX model"), std::string::npos) << msg;
  msg = error_of<ocl_infer::ModelError>([] { load("this is not a protobuf at all, just text\n"); });
  EXPECT_NE(msg.find("not a valid ONNX model"), std::string::npos) << msg;
  msg = error_of<ocl_infer::ModelError>([] { ocl_infer::Session::from_file("/nonexistent/model.onnx"); });
  EXPECT_NE(msg.find("cannot open model"), std::string::npos) << msg;
  msg = error_of<ocl_infer::ModelError>([] { ocl_infer::Session::from_file("/tmp"); });
  EXPECT_NE(msg.find("is a directory"), std::string::npos) << msg;
  // A model file read from disk in one piece, also when it is not a regular file (a pipe).
  char tmpl[] = "/tmp/ocl-infer-model-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string file = std::string(tmpl) + "/m.onnx", fifo = std::string(tmpl) + "/p.onnx";
  std::ofstream(file, std::ios::binary) << good;
  EXPECT_EQ(ocl_infer::Session::from_file(file).inputs().size(), 1u);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(fifo, std::ios::binary) << good; });
  EXPECT_EQ(ocl_infer::Session::from_file(fifo).inputs().size(), 1u);
  writer.join();
  std::remove(file.c_str());
  std::remove(fifo.c_str());
  rmdir(tmpl);
}

TEST(Errors, AllUnsupportedOpsAreListed) {
  ModelBuilder m;
  m.input("x", DType::Float32, {2, 3}).output("y");
  m.node("FancyOpA", {"x"}, {"a"});
  m.node("FancyOpB", {"a"}, {"b"});
  m.node("FancyOpA", {"b"}, {"y"});
  std::string msg = error_of<ocl_infer::UnsupportedError>([&] { load(m.bytes()); });
  EXPECT_NE(msg.find("2 unsupported operators"), std::string::npos) << msg;
  EXPECT_NE(msg.find("FancyOpA (opset 17): nodes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("FancyOpB (opset 17)"), std::string::npos) << msg;
}

// Opsets up to 25 load; 26 is refused by name. Every schema change after opset 18 of the
// registry's operators is implemented (ops/registry.cpp kNewerSchemas): each operator runs up to
// opset 25, and the versions that changed semantics have their own rows.
TEST(Errors, NewerOpsets) {
  for (int opset : {19, 22, 25}) {
    ModelBuilder m(opset);
    m.input("x", DType::Float32, {3}).output("y");
    auto& pad = m.node("Pad", {"x", "pads"}, {"y"});
    attr_s(pad, "mode", "wrap");
    Tensor pads(DType::Int64, {2});
    pads.data<int64_t>()[0] = 2;
    pads.data<int64_t>()[1] = 1;
    m.initializer("pads", pads);
    const float xs[] = {1, 2, 3};
    Tensor y = run_model(m, {{"x", make_tensor(DType::Float32, {3}, xs)}}).at("y");
    const std::vector<float> want = {2, 3, 1, 2, 3, 1};  // wrap: as if the input were a ring
    ASSERT_EQ(y.numel(), 6);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(y.data<float>()[i], want[i]) << "opset " << opset << " at " << i;
  }
  ModelBuilder newer(26);
  newer.input("x", DType::Float32, {2}).output("y");
  newer.node("Relu", {"x"}, {"y"});
  const std::string msg = error_of<ocl_infer::UnsupportedError>([&] { load(newer.bytes()); });
  EXPECT_NE(msg.find("imports opset 26"), std::string::npos) << msg;
  for (const auto& op : ocl_infer::operator_catalog()) {
    if (op.domain == "ai.onnx") {
      EXPECT_EQ(op.max_opset, 25) << op.op_type << " stops before opset 25";
    }
  }
  // Before opset 19 the wrap mode is not Pad's.
  ModelBuilder old(18);
  old.input("x", DType::Float32, {3}).output("y");
  attr_s(old.node("Pad", {"x", "pads"}, {"y"}), "mode", "wrap");
  Tensor pads(DType::Int64, {2});
  old.initializer("pads", pads);
  const std::string old_msg = error_of<ocl_infer::Error>([&] {
    const float xs[] = {1, 2, 3};
    run_model(old, {{"x", make_tensor(DType::Float32, {3}, xs)}});
  });
  EXPECT_NE(old_msg.find("needs opset 19"), std::string::npos) << old_msg;
}

TEST(Errors, DanglingReferenceAndCycle) {
  ModelBuilder m;
  m.input("x", DType::Float32, {2}).output("y");
  m.node("Add", {"x", "nowhere"}, {"y"});
  std::string msg = error_of<ocl_infer::ModelError>([&] { load(m.bytes()); });
  EXPECT_NE(msg.find("'nowhere'"), std::string::npos) << msg;

  ModelBuilder c;
  c.input("x", DType::Float32, {2}).output("y");
  c.node("Add", {"x", "b"}, {"a"});
  c.node("Relu", {"a"}, {"b"});
  c.node("Relu", {"a"}, {"y"});
  msg = error_of<ocl_infer::ModelError>([&] { load(c.bytes()); });
  EXPECT_NE(msg.find("cycle"), std::string::npos) << msg;
}

TEST(Errors, InitializerSizeMismatchAndAbsurdDims) {
  ModelBuilder m;
  m.input("x", DType::Float32, {4}).output("y");
  m.node("Add", {"x", "w"}, {"y"});
  auto* init = m.proto().mutable_graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(1);
  init->add_dims(4);
  init->set_raw_data(std::string(12, '\0'));
  std::string msg = error_of<ocl_infer::ModelError>([&] { load(m.bytes()); });
  EXPECT_NE(msg.find("raw data holds 12 bytes"), std::string::npos) << msg;

  ModelBuilder a;
  a.input("x", DType::Float32, {4}).output("y");
  a.node("Add", {"x", "w"}, {"y"});
  auto* big = a.proto().mutable_graph()->add_initializer();
  big->set_name("w");
  big->set_data_type(1);
  big->add_dims(1000000);
  big->add_dims(1000000);
  msg = error_of<ocl_infer::ModelError>([&] { load(a.bytes()); });
  EXPECT_NE(msg.find("beyond the memory limit"), std::string::npos) << msg;
}

TEST(Errors, WrongInputsAreRejected) {
  auto s = load(relu_model().bytes());
  Tensor good(DType::Float32, {2, 3});
  EXPECT_NE(error_of<ocl_infer::InputError>([&] { s.run({}); }).find("'x' was not given"), std::string::npos);
  EXPECT_NE(error_of<ocl_infer::InputError>([&] { s.run({{"x", good}, {"z", good}}); }).find("no input named 'z'"), std::string::npos);
  Tensor wrong_type(DType::Int64, {2, 3});
  EXPECT_NE(error_of<ocl_infer::InputError>([&] { s.run({{"x", wrong_type}}); }).find("must be float32"), std::string::npos);
  Tensor wrong_rank(DType::Float32, {6});
  EXPECT_NE(error_of<ocl_infer::InputError>([&] { s.run({{"x", wrong_rank}}); }).find("rank 2"), std::string::npos);
  Tensor short_data(DType::Float32, {2, 3});
  short_data.bytes.resize(8);
  EXPECT_NE(error_of<ocl_infer::InputError>([&] { s.run({{"x", short_data}}); }).find("holds 8 bytes"), std::string::npos);
}

TEST(Errors, MissingDeviceIsReported) {
  ocl_infer::SessionOptions opt;
  opt.device = "no-such-device-xyz";
  std::string b = relu_model().bytes();
  std::string msg = error_of<ocl_infer::DeviceError>([&] { ocl_infer::Session::from_memory(b.data(), b.size(), opt); });
  EXPECT_NE(msg.find("no OpenCL device matches"), std::string::npos) << msg;
}

TEST(Session, ReplansWhenTheBatchChanges) {
  ModelBuilder m;
  m.input("x", DType::Float32, {-1, 3}).output("y");
  m.node("Relu", {"x"}, {"y"});
  auto s = load(m.bytes());
  for (int64_t batch : {1, 4, 2}) {
    Tensor x(DType::Float32, {batch, 3});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 5) - 2.f;
    auto out = s.run({{"x", x}});
    ASSERT_EQ(out.at("y").shape, (std::vector<int64_t>{batch, 3}));
    for (int64_t i = 0; i < x.numel(); ++i)
      EXPECT_EQ(out.at("y").data<float>()[i], std::max(0.f, x.data<float>()[i]));
  }
}

// Input shapes that alternate: the plan of each is kept and taken back (SessionStats::plans_kept,
// plan_reuses), with its own buffers, so every run still computes its own inputs' results. With a
// memory limit too small to keep a second plan, none is kept and the results are the same.
TEST(Session, KeepsThePlansOfAlternatingShapes) {
  // The plans below take 1.5-2 KiB of device memory each (activations, weights, scratch).
  constexpr uint64_t kSmallLimit = 4096;
  ModelBuilder m;
  m.input("x", DType::Float32, {-1, 8}).output("y").output("z");
  Tensor w(DType::Float32, {8, 16}), b(DType::Float32, {16});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = static_cast<float>((i * 7) % 11) / 11.f - 0.5f;
  for (int64_t i = 0; i < b.numel(); ++i) b.data<float>()[i] = static_cast<float>(i % 3) * 0.25f - 0.25f;
  m.initializer("w", w).initializer("b", b);
  m.node("MatMul", {"x", "w"}, {"t"});
  m.node("Add", {"t", "b"}, {"u"});
  m.node("Relu", {"u"}, {"y"});
  m.node("Sigmoid", {"x"}, {"z"});
  const std::vector<int64_t> batches = {1, 5, 1, 5, 3, 1, 3, 5};
  // No limit, then one that holds a plan (a few KiB) but not a quarter of the limit besides.
  for (const uint64_t limit : {uint64_t{0}, uint64_t{kSmallLimit}}) {
    ocl_infer::SessionOptions o;
    o.max_memory_bytes = limit;
    const std::string bytes = m.bytes();
    auto s = ocl_infer::Session::from_memory(bytes.data(), bytes.size(), o);
    int run = 0;
    for (int64_t batch : batches) {
      Tensor x(DType::Float32, {batch, 8});
      for (int64_t i = 0; i < x.numel(); ++i)
        x.data<float>()[i] = static_cast<float>((i * 13 + run * 5) % 17) / 8.f - 1.f;
      auto out = s.run({{"x", x}});
      ++run;
      ASSERT_EQ(out.at("y").shape, (std::vector<int64_t>{batch, 16}));
      for (int64_t r = 0; r < batch; ++r)
        for (int64_t c = 0; c < 16; ++c) {
          double acc = b.data<float>()[c];
          for (int64_t k = 0; k < 8; ++k) acc += double(x.data<float>()[r * 8 + k]) * w.data<float>()[k * 16 + c];
          EXPECT_NEAR(out.at("y").data<float>()[r * 16 + c], std::max(0.0, acc), 1e-5) << "run " << run;
        }
      for (int64_t i = 0; i < x.numel(); ++i)
        EXPECT_NEAR(out.at("z").data<float>()[i], 1.0 / (1.0 + std::exp(-double(x.data<float>()[i]))), 1e-6);
    }
    // Three shapes: planned once each, the other five runs took a kept plan back; with the small
    // limit every change of shape planned again.
    EXPECT_EQ(s.stats().plan_reuses, limit ? 0 : 5);
    EXPECT_EQ(s.stats().plans_kept, limit ? 0 : 2);
  }
}

// Lists the files of a folder (names only).
std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    closedir(d);
  }
  return names;
}

// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  ScopedEnv(const char* n, const char* v) : name(n) { setenv(n, v, 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
};

// Whether program binaries are stored is measured once per device (on a probe program) and kept
// in the cache folder; the second session then either loads the stored binaries or builds again,
// and nothing else is written. A damaged decision file is measured again.
// A driver that stops long loops early (Mesa 22.3's llvmpipe: 65,535 iterations) would return
// wrong numbers without an error. The probe's verdict is kept in the cache folder; PoCL runs loops
// to the end. A verdict of "stops early" (written here, as rusticl's probe writes it) refuses the
// device with a DeviceError unless OCL_INFER_ALLOW_LOOP_LIMIT=1, which runs with a warning; a
// damaged verdict is measured again.
TEST(Errors, DeviceThatStopsLongLoopsIsRefused) {
  std::vector<std::string> dirs;
  for (int i = 0; i < 3; ++i) {
    char tmpl[] = "/tmp/ocl-infer-loops-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dirs.push_back(tmpl);
  }
  ModelBuilder m;
  m.input("x", DType::Float32, {3}).output("y");
  m.node("Relu", {"x"}, {"y"});
  const std::string b = m.bytes();
  Tensor x(DType::Float32, {3});
  for (int i = 0; i < 3; ++i) x.data<float>()[i] = static_cast<float>(i) - 1.f;
  auto open = [&](const std::string& dir, std::vector<std::string>* log = nullptr) {
    ocl_infer::SessionOptions opt;
    opt.cache_dir = dir;
    if (log) opt.log = [log](const std::string& line) { log->push_back(line); };
    return ocl_infer::Session::from_memory(b.data(), b.size(), opt);
  };
  auto verdict_file = [&](const std::string& dir) {
    for (auto& f : files_in(dir))
      if (f.rfind("loops-", 0) == 0) return f;
    return std::string();
  };
  auto first_line = [](const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
  };
  EXPECT_EQ(open(dirs[0]).run({{"x", x}}).at("y").data<float>()[2], 1.f);
  const std::string name = verdict_file(dirs[0]);
  ASSERT_FALSE(name.empty()) << "no loop verdict in " << dirs[0];
  EXPECT_EQ(first_line(dirs[0] + "/" + name).rfind("loops 1 ", 0), 0u) << first_line(dirs[0] + "/" + name);

  std::ofstream(dirs[1] + "/" + name) << "loops 0 (a probe loop of 70000 iterations ran 65535)\n";
  try {
    open(dirs[1]);
    ADD_FAILURE() << "a device that stops long loops early was accepted";
  } catch (const ocl_infer::DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("stops long loops early (a probe loop of 70000 iterations ran 65535)"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("OCL_INFER_ALLOW_LOOP_LIMIT=1"), std::string::npos) << e.what();
  }
  {
    ScopedEnv allow("OCL_INFER_ALLOW_LOOP_LIMIT", "1");
    std::vector<std::string> log;
    EXPECT_EQ(open(dirs[1], &log).run({{"x", x}}).at("y").data<float>()[2], 1.f);
    bool warned = false;
    for (auto& l : log) warned |= l.rfind("warning: ", 0) == 0 && l.find("stops long loops") != std::string::npos;
    EXPECT_TRUE(warned) << "no warning when running on a device that stops loops early";
  }

  std::ofstream(dirs[2] + "/" + name) << "loops banana\n";
  EXPECT_EQ(open(dirs[2]).run({{"x", x}}).at("y").data<float>()[2], 1.f);
  EXPECT_EQ(first_line(dirs[2] + "/" + name).rfind("loops 1 ", 0), 0u) << "a damaged verdict was not measured again";
  for (auto& d : dirs) {
    for (auto& f : files_in(d)) std::remove((d + "/" + f).c_str());
    rmdir(d.c_str());
  }
}

TEST(KernelCache, BinaryStorageDecisionIsMeasuredAndKept) {
  char tmpl[] = "/tmp/ocl-infer-cache-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  // The decision at build time only: no background binary store after a warm start (which would
  // add entries after a "no"; CompileHelpers.WarmStartStoresBinariesInTheBackground tests it).
  ScopedEnv no_helpers("OCL_INFER_COMPILE_HELPERS", "0");
  // Four programs: all stored after a "yes", none after a "no".
  ModelBuilder m;
  m.input("x", DType::Float32, {3}).output("y");
  m.node("Relu", {"x"}, {"a"});
  m.node("Sigmoid", {"a"}, {"b"});
  m.node("Softmax", {"b"}, {"c"});
  attr_i(m.node("ReduceSum", {"c"}, {"y"}), "keepdims", 0);
  const std::string b = m.bytes();
  ocl_infer::SessionOptions opt;
  opt.cache_dir = dir;
  opt.optimization_level = 0;  // one kernel each
  Tensor x(DType::Float32, {3});
  for (int i = 0; i < 3; ++i) x.data<float>()[i] = static_cast<float>(i) - 1.f;
  auto decision = [&]() -> std::pair<int, std::string> {
    for (auto& f : files_in(dir))
      if (f.rfind("store-binaries-", 0) == 0) {
        std::ifstream in(dir + "/" + f);
        std::string word;
        int v = -1;
        in >> word >> v;
        return {v, f};
      }
    return {-1, ""};
  };
  // Rounds 0 and 1 build the four programs one by one, rounds 2 and 3 as one bundle.
  for (int round = 0; round < 4; ++round) {
    ScopedEnv bundle("OCL_INFER_BUNDLE", round < 2 ? "0" : "1");
    int programs = 0;
    // Each session as a new process starts: no programs kept from earlier sessions.
    ocl_infer::release_shared_contexts();
    {
      auto s = ocl_infer::Session::from_memory(b.data(), b.size(), opt);
      EXPECT_NEAR(s.run({{"x", x}}).at("y").data<float>()[0], 1.f, 1e-6);  // a softmax sums to 1
      programs = s.stats().programs_built;
      if (round < 2) {
        EXPECT_GE(programs, 4);
      } else {
        EXPECT_EQ(programs, 1);
        EXPECT_GE(s.stats().programs_bundled, 4);
      }
    }
    auto [store, file] = decision();
    ASSERT_TRUE(store == 0 || store == 1) << "no decision file in " << dir;
    ocl_infer::release_shared_contexts();
    {
      auto s = ocl_infer::Session::from_memory(b.data(), b.size(), opt);
      EXPECT_NEAR(s.run({{"x", x}}).at("y").data<float>()[0], 1.f, 1e-6);
      // Binaries written while measuring stay valid and are loaded; after a "no", none are added.
      int bins = 0;
      for (auto& f : files_in(dir)) bins += f.size() > 4 && f.compare(f.size() - 4, 4, ".bin") == 0;
      EXPECT_EQ(s.stats().programs_cached, bins);
      if (store) {
        EXPECT_EQ(bins, programs);
      } else {
        EXPECT_EQ(bins, 0) << "binaries stored although the decision says not to";
      }
    }
    // Damage the decision and drop the entries: the next session measures again.
    std::ofstream(dir + "/" + file, std::ios::trunc) << "store-binaries banana\n";
    for (auto& f : files_in(dir))
      if (f.rfind("store-binaries-", 0) != 0) std::remove((dir + "/" + f).c_str());
  }
  for (auto& f : files_in(dir)) std::remove((dir + "/" + f).c_str());
  rmdir(dir.c_str());
}

TEST(KernelCache, TruncatedOrForeignEntriesFallBackToCompiling) {
  // The entries' handling, on every driver: store binaries whatever the measurement says.
  ScopedEnv store("OCL_INFER_STORE_BINARIES", "1");
  char tmpl[] = "/tmp/ocl-infer-cache-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  ModelBuilder m;
  m.input("x", DType::Float32, {5}).output("y");
  m.node("Sigmoid", {"x"}, {"y"});
  std::string b = m.bytes();
  ocl_infer::SessionOptions opt;
  opt.cache_dir = dir;
  Tensor x(DType::Float32, {5});
  for (int i = 0; i < 5; ++i) x.data<float>()[i] = static_cast<float>(i) - 2.f;
  auto expect_sigmoid = [&](const Tensor& y) {
    for (int i = 0; i < 5; ++i) EXPECT_NEAR(y.data<float>()[i], 1.f / (1.f + std::exp(2.f - i)), 1e-6);
  };
  // Every session as a new process starts (release_shared_contexts: no programs kept from the
  // earlier sessions), so that each one meets the disk cache.
  ocl_infer::release_shared_contexts();
  {
    auto s = ocl_infer::Session::from_memory(b.data(), b.size(), opt);
    expect_sigmoid(s.run({{"x", x}}).at("y"));
    EXPECT_EQ(s.stats().programs_built, 1);
  }
  ocl_infer::release_shared_contexts();
  {
    auto s = ocl_infer::Session::from_memory(b.data(), b.size(), opt);
    expect_sigmoid(s.run({{"x", x}}).at("y"));
    EXPECT_EQ(s.stats().programs_cached, 1) << "the second session should load the cached binary";
  }
  // Truncate every entry, then overwrite them with garbage: each time the session must compile
  // again and compute the same numbers.
  std::vector<std::string> files;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') files.push_back(dir + "/" + e->d_name);
    closedir(d);
  }
  ASSERT_FALSE(files.empty());
  for (const char* damage : {"truncate", "garbage"}) {
    for (auto& f : files) {
      std::string content;
      {
        std::ifstream in(f, std::ios::binary);
        content.assign(std::istreambuf_iterator<char>(in), {});
      }
      std::ofstream out(f, std::ios::binary | std::ios::trunc);
      if (std::string(damage) == "truncate") out << content.substr(0, content.size() / 2);
      else out << std::string(content.size(), 'x');
    }
    ocl_infer::release_shared_contexts();
    auto s = ocl_infer::Session::from_memory(b.data(), b.size(), opt);
    expect_sigmoid(s.run({{"x", x}}).at("y"));
    EXPECT_EQ(s.stats().programs_built, 1) << damage;
  }
  for (auto& f : files) std::remove(f.c_str());
  rmdir(dir.c_str());
}

}  // namespace
