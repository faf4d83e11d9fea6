// Sequence ops (SequenceEmpty/Construct/Insert/Erase/At/Length, SplitToSequence,
// ConcatFromSequence, SequenceMap) against references computed here: list edits with negative
// positions, splits by a scalar chunk, by sizes and into single slices with keepdims 0, a
// zero-size axis, stacking 100 elements on a new negative axis, an element read by several
// consumers and by the sequence, a sequence carried through a while-loop whose condition is
// computed on the device (so the sequence crosses plan segments), SequenceMap over two sequences,
// and the errors.
#include <gtest/gtest.h>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

using Shape = std::vector<int64_t>;

Tensor scalar_i64(int64_t v) {
  Tensor t(DType::Int64, {});
  t.data<int64_t>()[0] = v;
  return t;
}

Tensor ints(const Shape& v) {
  Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
  for (size_t k = 0; k < v.size(); ++k) t.data<int64_t>()[k] = v[k];
  return t;
}

Tensor filled(const Shape& s, const std::function<float(int64_t)>& f) {
  Tensor t(DType::Float32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = f(i);
  return t;
}

// x [rows, cols] -> columns [c0, c1) of it.
Tensor columns(const Tensor& x, int64_t c0, int64_t c1) {
  const int64_t rows = x.shape[0], cols = x.shape[1];
  return filled({rows, c1 - c0}, [&](int64_t i) { return x.data<float>()[(i / (c1 - c0)) * cols + c0 + i % (c1 - c0)]; });
}

void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape, want.shape) << what;
  EXPECT_LE(rel_error(got, want), 1e-6) << what;
}

TEST(Sequence, ListEditsWithNegativePositions) {
  // s = [a, b, c]; insert d at -1 -> [a, b, d, c]; erase at -3 -> [a, d, c]; at(-2) = d, at(2) = c.
  ModelBuilder m(13);
  for (const char* n : {"a", "b", "c", "d"}) m.input(n, DType::Float32, {2, 3});
  m.output("second").output("third").output("len").output("sum");
  m.initializer("m1", scalar_i64(-1)).initializer("m3", scalar_i64(-3)).initializer("m2", scalar_i64(-2));
  m.initializer("two", scalar_i64(2));
  m.node("SequenceConstruct", {"a", "b", "c"}, {"s"});
  m.node("SequenceInsert", {"s", "d", "m1"}, {"s2"});
  m.node("SequenceErase", {"s2", "m3"}, {"s3"});
  m.node("SequenceAt", {"s3", "m2"}, {"second"});
  m.node("SequenceAt", {"s3", "two"}, {"third"});
  m.node("SequenceLength", {"s3"}, {"len"});
  // "a" is read by the sequence and by another consumer.
  m.node("Add", {"a", "second"}, {"sum"});
  std::mt19937 rng(1);
  std::map<std::string, Tensor> in;
  for (const char* n : {"a", "b", "c", "d"}) in[n] = random_tensor({2, 3}, rng);
  auto out = run_model(m, in);
  expect_same(out.at("second"), in["d"], "at(-2)");
  expect_same(out.at("third"), in["c"], "at(2)");
  EXPECT_EQ(out.at("len").data<int64_t>()[0], 3);
  expect_same(out.at("sum"), filled({2, 3}, [&](int64_t i) { return in["a"].data<float>()[i] + in["d"].data<float>()[i]; }),
              "a + d");
}

TEST(Sequence, SplitToSequenceForms) {
  std::mt19937 rng(2);
  const Tensor x = random_tensor({3, 7}, rng);
  // A scalar chunk: 3 + 3 + 1 columns.
  {
    ModelBuilder m(13);
    m.input("x", DType::Float32, {3, 7}).output("last").output("n");
    m.initializer("chunk", scalar_i64(3)).initializer("m1", scalar_i64(-1));
    attr_i(m.node("SplitToSequence", {"x", "chunk"}, {"s"}), "axis", 1);
    m.node("SequenceAt", {"s", "m1"}, {"last"});
    m.node("SequenceLength", {"s"}, {"n"});
    auto out = run_model(m, {{"x", x}});
    expect_same(out.at("last"), columns(x, 6, 7), "last chunk");
    EXPECT_EQ(out.at("n").data<int64_t>()[0], 3);
  }
  // Sizes [2, 0, 5], concatenated back in reverse on axis -1.
  {
    ModelBuilder m(13);
    m.input("x", DType::Float32, {3, 7}).output("y");
    m.initializer("sizes", ints({2, 0, 5})).initializer("zero", scalar_i64(0));
    attr_i(m.node("SplitToSequence", {"x", "sizes"}, {"s"}), "axis", -1);
    m.node("SequenceAt", {"s", "zero"}, {"first"});
    m.node("SequenceErase", {"s", "zero"}, {"rest"});
    m.node("SequenceInsert", {"rest", "first"}, {"rotated"});
    attr_i(m.node("ConcatFromSequence", {"rotated"}, {"y"}), "axis", -1);
    auto out = run_model(m, {{"x", x}});
    Tensor want(DType::Float32, {3, 7});
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t c = 0; c < 7; ++c) want.data<float>()[r * 7 + c] = x.data<float>()[r * 7 + (c + 2) % 7];
    expect_same(out.at("y"), want, "rotated");
  }
  // No split: single rows, keepdims 0, stacked again on a new axis 1 (a transpose).
  {
    ModelBuilder m(13);
    m.input("x", DType::Float32, {3, 7}).output("y");
    auto& s = m.node("SplitToSequence", {"x"}, {"s"});
    attr_i(s, "keepdims", 0);
    auto& c = m.node("ConcatFromSequence", {"s"}, {"y"});
    attr_i(c, "axis", -1);
    attr_i(c, "new_axis", 1);
    auto out = run_model(m, {{"x", x}});
    expect_same(out.at("y"), filled({7, 3}, [&](int64_t i) { return x.data<float>()[(i % 3) * 7 + i / 3]; }), "transpose");
  }
}

TEST(Sequence, HundredElementsStacked) {
  ModelBuilder m(13);
  std::vector<std::string> names;
  for (int k = 0; k < 100; ++k) {
    names.push_back("x" + std::to_string(k));
    m.input(names.back(), DType::Float32, {4});
  }
  m.output("y");
  m.node("SequenceConstruct", names, {"s"});
  auto& c = m.node("ConcatFromSequence", {"s"}, {"y"});
  attr_i(c, "axis", 0);
  attr_i(c, "new_axis", 1);
  std::mt19937 rng(3);
  std::map<std::string, Tensor> in;
  for (auto& n : names) in[n] = random_tensor({4}, rng);
  auto out = run_model(m, in);
  expect_same(out.at("y"), filled({100, 4}, [&](int64_t i) { return in[names[i / 4]].data<float>()[i % 4]; }), "stack");
}

onnx::GraphProto* graph_attr(onnx::NodeProto& n, const std::string& name) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(name);
  return a->mutable_g();
}

void add_io(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name) {
  list->Add()->set_name(name);
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

// v doubles while sum(v) < limit; every iteration appends v to a sequence. The condition is
// computed on the device, so each iteration ends a plan segment and the sequence's elements cross
// the cuts; after the loop the sequence is stacked.
TEST(Sequence, CarriedThroughDeviceConditionedLoop) {
  ModelBuilder m(13);
  m.input("x", DType::Float32, {3}).input("limit", DType::Float32, {}).output("stacked").output("count");
  m.initializer("go", []() {
    Tensor t(DType::Bool, {});
    t.data<uint8_t>()[0] = 1;
    return t;
  }());
  m.initializer("two", []() {
    Tensor t(DType::Float32, {});
    t.data<float>()[0] = 2;
    return t;
  }());
  attr_i(m.node("SequenceEmpty", {}, {"empty"}), "dtype", static_cast<int>(DType::Float32));
  auto& loop = m.node("Loop", {"", "go", "x", "empty"}, {"v", "seq"});
  auto* b = graph_attr(loop, "body");
  for (const char* n : {"i", "c_in", "v_in", "s_in"}) add_io(b->mutable_input(), n);
  add_node(b, "Mul", {"v_in", "two"}, {"v_out"});
  add_node(b, "SequenceInsert", {"s_in", "v_out"}, {"s_out"});
  auto* rs = add_node(b, "ReduceSum", {"v_out"}, {"total"});
  attr_i(*rs, "keepdims", 0);
  add_node(b, "Less", {"total", "limit"}, {"c_out"});
  for (const char* n : {"c_out", "v_out", "s_out"}) add_io(b->mutable_output(), n);
  auto& c = m.node("ConcatFromSequence", {"seq"}, {"stacked"});
  attr_i(c, "axis", 0);
  attr_i(c, "new_axis", 1);
  m.node("SequenceLength", {"seq"}, {"count"});
  auto s = open_session(m);
  for (float limit : {10.0f, 100.0f, 10.0f}) {
    const Tensor x = filled({3}, [](int64_t i) { return 0.5f + static_cast<float>(i); });
    Tensor lim(DType::Float32, {});
    lim.data<float>()[0] = limit;
    auto out = s.run({{"x", x}, {"limit", lim}});
    std::vector<float> v(x.data<float>(), x.data<float>() + 3), rows;
    int64_t n = 0;
    for (;;) {
      for (float& e : v) e *= 2;
      rows.insert(rows.end(), v.begin(), v.end());
      ++n;
      if (!(v[0] + v[1] + v[2] < limit)) break;
    }
    EXPECT_EQ(out.at("count").data<int64_t>()[0], n) << "limit " << limit;
    expect_same(out.at("stacked"), make_tensor(DType::Float32, {n, 3}, rows.data()), "limit " + std::to_string(limit));
  }
}

TEST(Sequence, MapOverTwoSequences) {
  // SequenceMap(body: y = a * b + t) over [x0, x1] and [y0, y1] with a tensor t.
  ModelBuilder m(17);
  for (const char* n : {"x0", "x1", "y0", "y1", "t"}) m.input(n, DType::Float32, {5});
  m.output("r1");
  m.initializer("one", scalar_i64(1));
  m.node("SequenceConstruct", {"x0", "x1"}, {"xs"});
  m.node("SequenceConstruct", {"y0", "y1"}, {"ys"});
  auto& map = m.node("SequenceMap", {"xs", "ys", "t"}, {"rs"});
  auto* body = graph_attr(map, "body");
  for (const char* n : {"a", "b", "c"}) add_io(body->mutable_input(), n);
  add_node(body, "Mul", {"a", "b"}, {"ab"});
  add_node(body, "Add", {"ab", "c"}, {"r"});
  add_io(body->mutable_output(), "r");
  m.node("SequenceAt", {"rs", "one"}, {"r1"});
  std::mt19937 rng(4);
  std::map<std::string, Tensor> in;
  for (const char* n : {"x0", "x1", "y0", "y1", "t"}) in[n] = random_tensor({5}, rng);
  auto out = run_model(m, in);
  expect_same(out.at("r1"), filled({5}, [&](int64_t i) {
                return in["x1"].data<float>()[i] * in["y1"].data<float>()[i] + in["t"].data<float>()[i];
              }),
              "x1 * y1 + t");
}

TEST(Sequence, Errors) {
  auto fails = [](ModelBuilder& m, const std::map<std::string, Tensor>& in, const std::string& needle) {
    try {
      run_model(m, in);
      ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const ocl_infer::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  std::mt19937 rng(5);
  const Tensor a = random_tensor({2}, rng);
  {
    ModelBuilder m(13);
    m.input("a", DType::Float32, {2}).output("y");
    m.initializer("five", scalar_i64(5));
    m.node("SequenceConstruct", {"a", "a"}, {"s"});
    m.node("SequenceAt", {"s", "five"}, {"y"});
    fails(m, {{"a", a}}, "position 5 is out of range for a sequence of 2");
  }
  {
    ModelBuilder m(13);
    m.input("a", DType::Float32, {2}).output("y");
    m.node("SequenceEmpty", {}, {"s"});
    attr_i(m.node("ConcatFromSequence", {"s"}, {"y"}), "axis", 0);
    fails(m, {{"a", a}}, "concatenates an empty sequence");
  }
  {
    ModelBuilder m(13);
    m.input("a", DType::Float32, {2}).input("i", DType::Int64, {2}).output("y");
    m.node("SequenceConstruct", {"a", "i"}, {"y"});
    fails(m, {{"a", a}, {"i", ints({1, 2})}}, "different types");
  }
  {
    ModelBuilder m(13);
    m.input("a", DType::Float32, {2}).output("y");
    m.node("SequenceConstruct", {"a"}, {"s"});
    m.node("Relu", {"s"}, {"y"});
    fails(m, {{"a", a}}, "reads a sequence");
  }
  {
    ModelBuilder m(13);
    m.input("a", DType::Float32, {2}).output("s");
    m.node("SequenceConstruct", {"a"}, {"s"});
    fails(m, {{"a", a}}, "is a sequence");
  }
  {
    ModelBuilder m(13);
    m.input("a", DType::Float32, {2}).output("y");
    m.initializer("sizes", ints({1, 2}));
    m.node("SplitToSequence", {"a", "sizes"}, {"s"});
    attr_i(m.node("ConcatFromSequence", {"s"}, {"y"}), "axis", 0);
    fails(m, {{"a", a}}, "split sizes add up to 3");
  }
}

}  // namespace
