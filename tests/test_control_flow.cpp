// Control flow (If, Loop, Scan) and plans cut into segments, against references computed in the
// test: an If on a scalar model input (inlined, one plan per value), an If whose condition is
// computed on the device (a segment boundary, branch plans cached), a nested If inside a Loop, a
// while-loop whose condition the body computes on the device, a 0-trip Loop, a Slice whose end is
// computed from the data, and the malformed forms that must fail with a clear error.
#include <gtest/gtest.h>

#include <functional>
#include <numeric>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

using Shape = std::vector<int64_t>;

onnx::GraphProto* graph_attr(onnx::NodeProto& n, const std::string& name) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(name);
  return a->mutable_g();
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, const std::vector<std::string>& ins,
                          const std::vector<std::string>& outs) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(g->name() + "_" + op + "_" + std::to_string(g->node_size()));
  for (auto& i : ins) n->add_input(i);
  for (auto& o : outs) n->add_output(o);
  return n;
}

void add_io(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name, DType t,
            const Shape& shape, bool typed = true) {
  auto* vi = list->Add();
  vi->set_name(name);
  if (!typed) return;
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int>(t));
  auto* sh = tt->mutable_shape();
  for (auto d : shape) sh->add_dim()->set_dim_value(d);
}

void add_const(onnx::GraphProto* g, const std::string& name, const Tensor& t) {
  auto* tp = g->add_initializer();
  tp->set_name(name);
  tp->set_data_type(static_cast<int>(t.dtype));
  for (auto d : t.shape) tp->add_dims(d);
  tp->set_raw_data(t.bytes.data(), t.bytes.size());
}

Tensor scalar_i64(int64_t v) {
  Tensor t(DType::Int64, {});
  t.data<int64_t>()[0] = v;
  return t;
}

Tensor scalar_f(float v) {
  Tensor t(DType::Float32, {});
  t.data<float>()[0] = v;
  return t;
}

Tensor scalar_bool(bool v) {
  Tensor t(DType::Bool, {});
  t.bytes[0] = v;
  return t;
}

Tensor filled(const Shape& s, std::function<float(int64_t)> f) {
  Tensor t(DType::Float32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = f(i);
  return t;
}

void expect_equal(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape, want.shape) << what;
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], tol * std::max(1.0f, std::fabs(want.data<float>()[i])))
        << what << " at " << i;
}

struct Log {
  std::vector<std::string> lines;
  ocl_infer::SessionOptions options() {
    ocl_infer::SessionOptions o;
    o.log = [this](const std::string& l) { lines.push_back(l); };
    return o;
  }
  int count(const std::string& s) const {
    int n = 0;
    for (auto& l : lines) n += l.find(s) != std::string::npos;
    return n;
  }
};

// y = sr == 16000 ? x * 2 : relu(x + bias); both branches read x and bias from the outer scope.
ModelBuilder if_on_scalar_input() {
  ModelBuilder m;
  m.input("x", DType::Float32, {3, 5}).input("sr", DType::Int64, {}).output("y");
  m.initializer("rate", scalar_i64(16000)).initializer("two", scalar_f(2)).initializer("bias", scalar_f(-0.25f));
  m.node("Equal", {"sr", "rate"}, {"cond"});
  auto& n = m.node("If", {"cond"}, {"y"});
  auto* t = graph_attr(n, "then_branch");
  add_node(t, "Mul", {"x", "two"}, {"t_y"});
  add_io(t->mutable_output(), "t_y", DType::Float32, {3, 5});
  auto* e = graph_attr(n, "else_branch");
  add_node(e, "Add", {"x", "bias"}, {"e_sum"});
  add_node(e, "Relu", {"e_sum"}, {"e_y"});
  add_io(e->mutable_output(), "e_y", DType::Float32, {3, 5});
  return m;
}

TEST(ControlFlow, IfOnScalarInputIsInlinedPerValue) {
  ModelBuilder m = if_on_scalar_input();
  Log log;
  auto s = open_session(m, log.options());
  std::mt19937 rng(5);
  Tensor x = random_tensor({3, 5}, rng);
  for (int round = 0; round < 2; ++round)
    for (int64_t sr : {16000, 8000}) {
      auto out = s.run({{"x", x}, {"sr", scalar_i64(sr)}});
      Tensor want = filled({3, 5}, [&](int64_t i) {
        const float v = x.data<float>()[i];
        return sr == 16000 ? v * 2 : std::max(0.0f, v - 0.25f);
      });
      expect_equal(out.at("y"), want, 1e-6, "sr " + std::to_string(sr));
    }
  // The condition is known at plan time: no segment, no host sync.
  EXPECT_EQ(log.count("segment"), 0);
  EXPECT_EQ(s.dump("plan").find("host sync"), std::string::npos);
}

// cond = ReduceSum(x) > 0 is computed on the device (x is too large to fold into a plan), so the
// plan ends there: the session reads the condition back and plans the branch taken once.
TEST(ControlFlow, IfOnDeviceConditionRunsInSegments) {
  const Shape xs{64, 80};
  ModelBuilder m;
  m.input("x", DType::Float32, xs).output("y").output("s");
  m.initializer("zero", scalar_f(0)).initializer("three", scalar_f(3));
  attr_i(m.node("ReduceSum", {"x"}, {"s"}), "keepdims", 0);
  m.node("Greater", {"s", "zero"}, {"cond"});
  auto& n = m.node("If", {"cond"}, {"y"});
  auto* t = graph_attr(n, "then_branch");
  add_node(t, "Mul", {"x", "three"}, {"t_y"});
  add_io(t->mutable_output(), "t_y", DType::Float32, xs);
  auto* e = graph_attr(n, "else_branch");
  add_node(e, "Neg", {"x"}, {"e_y"});
  add_io(e->mutable_output(), "e_y", DType::Float32, xs);
  Log log;
  auto s = open_session(m, log.options());
  std::mt19937 rng(7);
  for (int round = 0; round < 2; ++round)
    for (float sign : {1.0f, -1.0f}) {
      Tensor x = random_tensor(xs, rng, 0, 1);
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] *= sign;
      auto out = s.run({{"x", x}});
      Tensor want = filled(xs, [&](int64_t i) { return sign > 0 ? x.data<float>()[i] * 3 : -x.data<float>()[i]; });
      expect_equal(out.at("y"), want, 1e-6, "sign " + std::to_string(sign));
      double sum = 0;
      for (int64_t i = 0; i < x.numel(); ++i) sum += x.data<float>()[i];
      EXPECT_NEAR(out.at("s").data<float>()[0], sum, 1e-3 * std::fabs(sum));
    }
  // Two branches planned once each; the second round finds both in the cache.
  EXPECT_EQ(log.count("segment 1: planned"), 2);
  EXPECT_EQ(log.count("segment 1: plan found in the cache"), 2);
  const std::string plan = s.dump("plan");
  EXPECT_NE(plan.find("host sync after segment 0: read back 'cond'"), std::string::npos) << plan;
}

// A Loop of 4 iterations whose body holds an If on the iteration number's parity (folded at plan
// time: the iteration number is a constant of each unrolled step), a carried value and a scan
// output.
TEST(ControlFlow, NestedIfInsideLoop) {
  ModelBuilder m;
  m.input("v0", DType::Float32, {5}).output("v").output("trace");
  m.initializer("M", scalar_i64(4)).initializer("two_i", scalar_i64(2)).initializer("zero_i", scalar_i64(0));
  m.initializer("two", scalar_f(2));
  auto& loop = m.node("Loop", {"M", "", "v0"}, {"v", "trace"});
  auto* b = graph_attr(loop, "body");
  add_io(b->mutable_input(), "i", DType::Int64, {});
  add_io(b->mutable_input(), "c_in", DType::Bool, {});
  add_io(b->mutable_input(), "v_in", DType::Float32, {5}, false);
  add_node(b, "Mod", {"i", "two_i"}, {"parity"});
  add_node(b, "Equal", {"parity", "zero_i"}, {"even"});
  auto* inner = add_node(b, "If", {"even"}, {"v_out"});
  auto* t = graph_attr(*inner, "then_branch");
  add_node(t, "Mul", {"v_in", "two"}, {"t_v"});
  add_io(t->mutable_output(), "t_v", DType::Float32, {5});
  auto* e = graph_attr(*inner, "else_branch");
  add_const(e, "one_in_branch", scalar_f(1));  // a subgraph initializer
  add_node(e, "Add", {"v_in", "one_in_branch"}, {"e_v"});
  add_io(e->mutable_output(), "e_v", DType::Float32, {5});
  add_node(b, "Identity", {"c_in"}, {"c_out"});
  add_node(b, "Sigmoid", {"v_out"}, {"scan_v"});
  add_io(b->mutable_output(), "c_out", DType::Bool, {});
  add_io(b->mutable_output(), "v_out", DType::Float32, {5});
  add_io(b->mutable_output(), "scan_v", DType::Float32, {5});
  Tensor v0 = filled({5}, [](int64_t i) { return 0.5f * static_cast<float>(i) - 1; });
  auto out = open_session(m).run({{"v0", v0}});
  std::vector<float> v(v0.data<float>(), v0.data<float>() + 5);
  Tensor trace(DType::Float32, {4, 5});
  for (int it = 0; it < 4; ++it)
    for (int k = 0; k < 5; ++k) {
      v[k] = it % 2 == 0 ? v[k] * 2 : v[k] + 1;
      trace.data<float>()[it * 5 + k] = 1 / (1 + std::exp(-v[k]));
    }
  expect_equal(out.at("v"), make_tensor(DType::Float32, {5}, v.data()), 1e-6, "v");
  expect_equal(out.at("trace"), trace, 1e-6, "trace");
}

// A while loop: v doubles while sum(v) < 100; the body computes the condition on the device, so
// every iteration ends a segment. Runs with the same iteration count plan nothing new.
ModelBuilder while_loop() {
  ModelBuilder m;
  m.input("x", DType::Float32, {4}).output("v").output("trace");
  m.initializer("go", scalar_bool(true)).initializer("two", scalar_f(2)).initializer("limit", scalar_f(100));
  auto& loop = m.node("Loop", {"", "go", "x"}, {"v", "trace"});
  auto* b = graph_attr(loop, "body");
  add_io(b->mutable_input(), "i", DType::Int64, {});
  add_io(b->mutable_input(), "c_in", DType::Bool, {});
  add_io(b->mutable_input(), "v_in", DType::Float32, {4}, false);
  add_node(b, "Mul", {"v_in", "two"}, {"v_out"});
  auto* rs = add_node(b, "ReduceSum", {"v_out"}, {"total"});
  attr_i(*rs, "keepdims", 0);
  add_node(b, "Less", {"total", "limit"}, {"c_out"});
  add_node(b, "Identity", {"v_out"}, {"scan_v"});
  add_io(b->mutable_output(), "c_out", DType::Bool, {});
  add_io(b->mutable_output(), "v_out", DType::Float32, {4});
  add_io(b->mutable_output(), "scan_v", DType::Float32, {4});
  return m;
}

TEST(ControlFlow, WhileLoopWithDeviceCondition) {
  Log log;
  auto s = open_session(while_loop(), log.options());
  for (int round = 0; round < 2; ++round)
    for (float start : {1.0f, 10.0f, 30.0f}) {
      Tensor x = filled({4}, [&](int64_t i) { return start + static_cast<float>(i) * 0.25f; });
      auto out = s.run({{"x", x}});
      std::vector<float> v(x.data<float>(), x.data<float>() + 4), trace;
      for (;;) {
        for (float& e : v) e *= 2;
        trace.insert(trace.end(), v.begin(), v.end());
        if (!(std::accumulate(v.begin(), v.end(), 0.0f) < 100)) break;
      }
      expect_equal(out.at("v"), make_tensor(DType::Float32, {4}, v.data()), 1e-6, "v");
      expect_equal(out.at("trace"),
                   make_tensor(DType::Float32, {static_cast<int64_t>(trace.size() / 4), 4}, trace.data()), 1e-6,
                   "trace");
    }
  EXPECT_GT(log.count("plan found in the cache"), 0);
  const int planned = log.count("planned in");
  auto again = s.run({{"x", filled({4}, [](int64_t) { return 1.0f; })}});
  EXPECT_EQ(log.count("planned in"), planned) << "the same iteration count planned again";
}

// With profiling, a segmented run's profile lists each segment's kernels and one row per host
// sync, in order, with the sync's host time.
TEST(ControlFlow, ProfileShowsHostSyncs) {
  ModelBuilder m = while_loop();
  ocl_infer::SessionOptions o;
  o.profiling = true;
  auto s = open_session(m, o);
  Tensor x = filled({4}, [](int64_t i) { return 10.0f + static_cast<float>(i); });  // 2 iterations
  for (int k = 0; k < 3; ++k) s.run({{"x", x}});
  auto layers = s.profile();
  int syncs = 0, kernels_after_sync = 0;
  for (auto& l : layers) {
    if (l.kernel == "host:sync") {
      ++syncs;
      ASSERT_EQ(l.op_types, std::vector<std::string>{"HostSync"});
      EXPECT_NE(l.node_names[0].find("read back"), std::string::npos) << l.node_names[0];
      EXPECT_EQ(l.runs, 3);
      EXPECT_GT(l.avg_us, 0);
    } else if (syncs > 0) {
      ++kernels_after_sync;
      EXPECT_EQ(l.runs, 3);
    }
  }
  EXPECT_EQ(syncs, 2) << "one sync per iteration's condition";
  EXPECT_GT(kernels_after_sync, 0);
}

TEST(ControlFlow, ZeroTripLoop) {
  ModelBuilder m;
  m.input("x", DType::Float32, {3}).output("v").output("trace");
  m.initializer("M", scalar_i64(0)).initializer("two", scalar_f(2));
  auto& loop = m.node("Loop", {"M", "", "x"}, {"v", "trace"});
  auto* b = graph_attr(loop, "body");
  add_io(b->mutable_input(), "i", DType::Int64, {});
  add_io(b->mutable_input(), "c_in", DType::Bool, {});
  add_io(b->mutable_input(), "v_in", DType::Float32, {3}, false);
  add_node(b, "Mul", {"v_in", "two"}, {"v_out"});
  add_node(b, "Identity", {"c_in"}, {"c_out"});
  add_node(b, "Identity", {"v_out"}, {"scan_v"});
  add_io(b->mutable_output(), "c_out", DType::Bool, {});
  add_io(b->mutable_output(), "v_out", DType::Float32, {3});
  add_io(b->mutable_output(), "scan_v", DType::Float32, {3});
  Tensor x = filled({3}, [](int64_t i) { return static_cast<float>(i) + 0.5f; });
  auto out = open_session(m).run({{"x", x}});
  expect_equal(out.at("v"), x, 0, "v");
  EXPECT_EQ(out.at("trace").numel(), 0);
}

// Scan over the rows of x with a running sum as its state (as ONNX's test_scan9_sum), reversed.
TEST(ControlFlow, ScanReverseRunningSum) {
  const int64_t steps = 7, width = 3;
  ModelBuilder m;
  m.input("init", DType::Float32, {width}).input("xs", DType::Float32, {steps, width}).output("sum").output("ys");
  auto& scan = m.node("Scan", {"init", "xs"}, {"sum", "ys"});
  attr_i(scan, "num_scan_inputs", 1);
  attr_ints(scan, "scan_input_directions", {1});
  auto* b = graph_attr(scan, "body");
  add_io(b->mutable_input(), "acc", DType::Float32, {width});
  add_io(b->mutable_input(), "row", DType::Float32, {width});
  add_node(b, "Add", {"acc", "row"}, {"acc_out"});
  add_node(b, "Identity", {"acc_out"}, {"y"});
  add_io(b->mutable_output(), "acc_out", DType::Float32, {width});
  add_io(b->mutable_output(), "y", DType::Float32, {width});
  std::mt19937 rng(3);
  Tensor init = random_tensor({width}, rng), xs = random_tensor({steps, width}, rng);
  auto out = open_session(m).run({{"init", init}, {"xs", xs}});
  std::vector<float> acc(init.data<float>(), init.data<float>() + width);
  Tensor ys(DType::Float32, {steps, width});
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t k = 0; k < width; ++k) {
      acc[k] += xs.data<float>()[(steps - 1 - t) * width + k];
      ys.data<float>()[t * width + k] = acc[k];
    }
  expect_equal(out.at("sum"), make_tensor(DType::Float32, {width}, acc.data()), 1e-5, "sum");
  expect_equal(out.at("ys"), ys, 1e-5, "ys");
}

// y = x[0 : argmax(x) + 1]: the Slice's end is computed on the device from the data.
TEST(ControlFlow, SliceEndComputedFromData) {
  const int64_t n = 5003;
  ModelBuilder m;
  m.input("x", DType::Float32, {n}).output("y");
  m.initializer("zero", ocl_infer::Tensor(DType::Int64, {1})).initializer("one", scalar_i64(1));
  auto& am = m.node("ArgMax", {"x"}, {"am"});
  attr_i(am, "keepdims", 1);
  m.node("Add", {"am", "one"}, {"end"});
  m.node("Slice", {"x", "zero", "end"}, {"y"});
  Log log;
  auto s = open_session(m, log.options());
  std::mt19937 rng(11);
  for (int64_t peak : {int64_t{0}, int64_t{17}, n - 1, int64_t{17}}) {
    Tensor x = random_tensor({n}, rng);
    x.data<float>()[peak] = 5;
    auto out = s.run({{"x", x}});
    Tensor want(DType::Float32, {peak + 1});
    std::copy(x.data<float>(), x.data<float>() + peak + 1, want.data<float>());
    expect_equal(out.at("y"), want, 0, "peak " + std::to_string(peak));
  }
  EXPECT_EQ(log.count("segment 1: planned"), 3);
}

// A conv model whose tail branches on a value computed on the device: fetching intermediate values
// works across segments, and the int8 quantizer (which fetches every activation while it
// calibrates) writes a model that keeps the If, runs, and stays close to fp32.
TEST(ControlFlow, QuantizedModelWithDeviceIf) {
  const Shape xs{1, 3, 40, 40};
  ModelBuilder m;
  m.input("x", DType::Float32, xs).output("y");
  std::mt19937 rng(21);
  m.initializer("w", random_tensor({8, 3, 3, 3}, rng, -0.5f, 0.5f)).initializer("b", random_tensor({8}, rng, -0.1f, 0.1f));
  m.initializer("level", scalar_f(0.1f)).initializer("two", scalar_f(2));
  auto& conv = m.node("Conv", {"x", "w", "b"}, {"c"});
  attr_ints(conv, "pads", {1, 1, 1, 1});
  m.node("Relu", {"c"}, {"r"});
  attr_i(m.node("ReduceMean", {"r"}, {"mean"}), "keepdims", 0);
  m.node("Greater", {"mean", "level"}, {"cond"});
  auto& n = m.node("If", {"cond"}, {"y"});
  auto* t = graph_attr(n, "then_branch");
  add_node(t, "Mul", {"r", "two"}, {"t_y"});
  add_io(t->mutable_output(), "t_y", DType::Float32, {1, 8, 40, 40});
  auto* e = graph_attr(n, "else_branch");
  add_node(e, "Sigmoid", {"r"}, {"e_y"});
  add_io(e->mutable_output(), "e_y", DType::Float32, {1, 8, 40, 40});
  auto s = open_session(m);
  Tensor x = random_tensor(xs, rng);
  ocl_infer::RunOptions ro;
  ro.fetch = {"r", "cond"};
  auto out = s.run({{"x", x}}, ro);
  ASSERT_TRUE(out.count("r") && out.count("cond"));
  float mean = 0;
  for (int64_t i = 0; i < out.at("r").numel(); ++i) mean += out.at("r").data<float>()[i];
  mean /= static_cast<float>(out.at("r").numel());
  EXPECT_EQ(out.at("cond").bytes[0] != 0, mean > 0.1f);

  const std::string path = testing::TempDir() + "/if_model.onnx";
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_TRUE(f);
    const std::string b = m.bytes();
    std::fwrite(b.data(), 1, b.size(), f);
    std::fclose(f);
  }
  std::vector<std::map<std::string, Tensor>> calib;
  for (int k = 0; k < 4; ++k) calib.push_back({{"x", random_tensor(xs, rng)}});
  const std::string q = ocl_infer::quantize_model(path, calib);
  {
    onnx::ModelProto qp;
    ASSERT_TRUE(qp.ParseFromString(q));
    int ifs = 0, dq = 0;
    for (auto& node : qp.graph().node()) {
      ifs += node.op_type() == "If";
      dq += node.op_type() == "DequantizeLinear";
      if (node.op_type() == "If") {
        EXPECT_EQ(node.input_size(), 1) << "captures written as inputs";
      }
    }
    EXPECT_EQ(ifs, 1);
    EXPECT_GT(dq, 0) << "nothing was quantized";
  }
  auto qs = ocl_infer::Session::from_memory(q.data(), q.size(), {});
  for (auto& c : calib) {
    const Tensor want = s.run(c).at("y");
    const Tensor got = qs.run(c).at("y");
    ASSERT_EQ(got.shape, want.shape);
    float mx = 0, err = 0;
    for (int64_t i = 0; i < want.numel(); ++i) {
      mx = std::max(mx, std::fabs(want.data<float>()[i]));
      err = std::max(err, std::fabs(got.data<float>()[i] - want.data<float>()[i]));
    }
    EXPECT_LT(err, 0.05f * mx) << "int8 vs fp32";
  }
}

TEST(ControlFlow, MalformedControlFlowFailsClearly) {
  {
    ModelBuilder m;
    m.input("c", DType::Bool, {}).output("y");
    m.initializer("a", scalar_f(1));
    auto& n = m.node("If", {"c"}, {"y"});
    auto* t = graph_attr(n, "then_branch");
    add_node(t, "Identity", {"a"}, {"t1"});
    add_node(t, "Identity", {"a"}, {"t2"});
    add_io(t->mutable_output(), "t1", DType::Float32, {});
    add_io(t->mutable_output(), "t2", DType::Float32, {});
    auto* e = graph_attr(n, "else_branch");
    add_node(e, "Identity", {"a"}, {"e1"});
    add_io(e->mutable_output(), "e1", DType::Float32, {});
    try {
      open_session(m).run({{"c", scalar_bool(true)}});
      FAIL() << "branches with different output counts ran";
    } catch (const ocl_infer::ModelError& e) {
      EXPECT_NE(std::string(e.what()).find("then_branch has 2 outputs, the node has 1"), std::string::npos) << e.what();
    }
  }
  {
    ModelBuilder m;
    m.input("x", DType::Float32, {2}).output("v");
    auto& loop = m.node("Loop", {"", "", "x"}, {"v"});
    auto* b = graph_attr(loop, "body");
    add_io(b->mutable_input(), "i", DType::Int64, {});
    add_io(b->mutable_input(), "c_in", DType::Bool, {});
    add_io(b->mutable_input(), "v_in", DType::Float32, {2});
    add_node(b, "Identity", {"c_in"}, {"c_out"});
    add_node(b, "Identity", {"v_in"}, {"v_out"});
    add_io(b->mutable_output(), "c_out", DType::Bool, {});
    add_io(b->mutable_output(), "v_out", DType::Float32, {2});
    try {
      open_session(m).run({{"x", Tensor(DType::Float32, {2})}});
      FAIL() << "a loop without trip count or condition ran";
    } catch (const ocl_infer::ModelError& e) {
      EXPECT_NE(std::string(e.what()).find("never ends"), std::string::npos) << e.what();
    }
  }
  {  // A branch reading a name no scope defines.
    ModelBuilder m;
    m.input("c", DType::Bool, {}).output("y");
    auto& n = m.node("If", {"c"}, {"y"});
    auto* t = graph_attr(n, "then_branch");
    add_node(t, "Identity", {"nowhere"}, {"t1"});
    add_io(t->mutable_output(), "t1", DType::Float32, {});
    auto* e = graph_attr(n, "else_branch");
    add_node(e, "Identity", {"nowhere"}, {"e1"});
    add_io(e->mutable_output(), "e1", DType::Float32, {});
    try {
      open_session(m);
      FAIL() << "a branch reading an undefined value loaded";
    } catch (const ocl_infer::ModelError& e) {
      EXPECT_NE(std::string(e.what()).find("'nowhere'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
