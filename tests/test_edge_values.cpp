// Edge values and attributes that a fuzz of single operators against ONNX Runtime 1.32 found
// computed wrongly without an error (2026-12-07): NaN through Max / Min / Sign / MaxPool, Clip with
// min > max, float -> uint32 casts of negatives, int64 constants folded through double, the
// elementwise part of reductions with noop_with_empty_axes, Slice steps near INT64_MAX, Pad's wrap
// with negative pads, ConvTranspose's output_shape with the default auto_pad. Each case runs on
// the device and, where the op folds, with constant inputs on the host; expected values are ONNX
// Runtime's (which agree with numpy and the ONNX reference here).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

Tensor floats(const std::vector<int64_t>& shape, const std::vector<float>& v) {
  return make_tensor(DType::Float32, shape, v.data());
}

Tensor int64s(const std::vector<int64_t>& shape, const std::vector<int64_t>& v) {
  return make_tensor(DType::Int64, shape, v.data());
}

std::vector<float> as_floats(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

// Equal, with NaN equal to NaN.
void expect_same(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << what << " [" << i << "] = " << got[i];
    else EXPECT_EQ(got[i], want[i]) << what << " [" << i << "]";
  }
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

}  // namespace

// Max / Min give NaN where either operand is NaN (they kept the first operand when only the second
// was NaN), two and three inputs; Sign(NaN) is NaN (it was 0).
TEST(EdgeValues, NanThroughMaxMinAndSign) {
  ModelBuilder m(13);
  m.input("a", DType::Float32, {4}).input("b", DType::Float32, {4}).input("c", DType::Float32, {4});
  m.output("mx").output("mn").output("mx3").output("sg");
  m.node("Max", {"a", "b"}, {"mx"});
  m.node("Min", {"a", "b"}, {"mn"});
  m.node("Max", {"a", "b", "c"}, {"mx3"});
  m.node("Sign", {"a"}, {"sg"});
  const Tensor a = floats({4}, {kNaN, 1, -2, 3}), b = floats({4}, {1, kNaN, kNaN, 2}), c = floats({4}, {0, 0, 0, kNaN});
  auto out = run_model(m, {{"a", a}, {"b", b}, {"c", c}});
  expect_same(as_floats(out.at("mx")), {kNaN, kNaN, kNaN, 3}, "Max");
  expect_same(as_floats(out.at("mn")), {kNaN, kNaN, kNaN, 2}, "Min");
  expect_same(as_floats(out.at("mx3")), {kNaN, kNaN, kNaN, kNaN}, "Max of three");
  expect_same(as_floats(out.at("sg")), {kNaN, 1, -1, 1}, "Sign");
}

// ScatterND's max / min reductions give NaN where the kept value or an update is NaN (an update's
// NaN was dropped), on the device and folded.
TEST(EdgeValues, ScatterReductionsPropagateNan) {
  for (const bool constant : {false, true}) {
    ModelBuilder m(18);
    m.input("dummy", DType::Float32, {1}).output("d").output("mx").output("mn");
    m.node("Identity", {"dummy"}, {"d"});
    const std::vector<float> data = {1, kNaN, 3, 4}, upd = {kNaN, 5, 2};
    if (constant) m.initializer("x", floats({4}, data)).initializer("u", floats({3}, upd));
    else m.input("x", DType::Float32, {4}).input("u", DType::Float32, {3});
    m.initializer("i", int64s({3, 1}, {0, 1, 2}));
    attr_s(m.node("ScatterND", {"x", "i", "u"}, {"mx"}), "reduction", "max");
    attr_s(m.node("ScatterND", {"x", "i", "u"}, {"mn"}), "reduction", "min");
    std::map<std::string, Tensor> feeds{{"dummy", floats({1}, {0})}};
    if (!constant) {
      feeds["x"] = floats({4}, data);
      feeds["u"] = floats({3}, upd);
    }
    auto out = run_model(m, feeds);
    expect_same(as_floats(out.at("mx")), {kNaN, kNaN, 3, 4}, constant ? "max folded" : "max");
    expect_same(as_floats(out.at("mn")), {kNaN, kNaN, 2, 4}, constant ? "min folded" : "min");
  }
}

// The separable MaxPool (stride 1) skips a NaN after a pass's first tap, as the other MaxPool
// kernels do ([3, NaN, 1, 2] gave 2: the maximum of what followed the NaN).
TEST(EdgeValues, MaxPoolSeparableSkipsNanAfterTheFirstTap) {
  ModelBuilder m(13);
  m.input("x", DType::Float32, {1, 1, 4}).output("y").output("g");
  auto& p = m.node("MaxPool", {"x"}, {"y"});
  attr_ints(p, "kernel_shape", {4});
  m.node("GlobalMaxPool", {"x"}, {"g"});
  for (const auto& [x, want] : std::vector<std::pair<std::vector<float>, float>>{
           {{3, kNaN, 1, 2}, 3.f}, {{1, kNaN, 0, -1}, 1.f}, {{-5, 2, kNaN, 7}, 7.f}}) {
    auto out = run_model(m, {{"x", floats({1, 1, 4}, x)}});
    EXPECT_EQ(out.at("y").data<float>()[0], want) << x[0] << "," << x[1] << "," << x[2] << "," << x[3];
    EXPECT_EQ(out.at("g").data<float>()[0], want);
  }
}

// Clip with constant min above max sets every value to max (it gave min below max); run-time
// bounds already did.
TEST(EdgeValues, ClipWithMinAboveMaxGivesMax) {
  for (const bool fused : {false, true}) {
    ModelBuilder m(13);
    m.input("x", DType::Float32, {7}).output("y");
    m.initializer("lo", floats({}, {2})).initializer("hi", floats({}, {-1}));
    // Also as a conv epilogue: Clip after a 1x1 conv (the fused activation's bounds).
    std::string in = "x";
    if (fused) {
      m.initializer("w", floats({7, 1, 1}, {1, 1, 1, 1, 1, 1, 1}));
      m.node("Reshape", {"x", "shape"}, {"x3"});
      m.initializer("shape", int64s({3}, {1, 7, 1}));
      auto& c = m.node("Conv", {"x3", "w"}, {"c"});
      attr_i(c, "group", 7);
      in = "c";
    }
    m.node("Clip", {in, "lo", "hi"}, {"y"});
    auto out = run_model(m, {{"x", floats({7}, {-3, -1, 0, 0.5f, 1, 2, 5})}});
    expect_same(as_floats(out.at("y")), std::vector<float>(7, -1.f), fused ? "fused Clip" : "Clip");
  }
}

// float -> uint32 through int64, as the host fold and ONNX Runtime: negatives wrap (every negative
// gave 0xFFFFFFFF on the device).
TEST(EdgeValues, CastOfNegativeFloatsToUint32Wraps) {
  ModelBuilder m(13);
  m.input("x", DType::Float32, {5}).output("y");
  auto& c = m.node("Cast", {"x"}, {"y"});
  attr_i(c, "to", onnx::TensorProto::UINT32);
  auto out = run_model(m, {{"x", floats({5}, {-2.5f, -1.7f, -0.5f, 300.2f, -300.7f})}});
  const std::vector<uint32_t> want = {4294967294u, 4294967295u, 0u, 300u, 4294966996u};
  ASSERT_EQ(out.at("y").numel(), 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(out.at("y").data<uint32_t>()[i], want[i]) << i;
}

// int64 constants fold exactly (Neg, Abs, Max went through double: 2^53 + 1 became 2^53 and
// INT64_MAX became INT64_MIN); the same nodes on a run-time input agree.
TEST(EdgeValues, Int64ConstantsFoldExactly) {
  const std::vector<int64_t> v = {(int64_t{1} << 53) + 1, -std::numeric_limits<int64_t>::max(),
                                  (int64_t{1} << 62) + 1};
  for (const bool constant : {true, false}) {
    ModelBuilder m(13);
    m.input("dummy", DType::Float32, {1}).output("neg").output("abs").output("mx").output("sum").output("d");
    if (constant) m.initializer("v", int64s({3}, v));
    else m.input("v", DType::Int64, {3});
    m.initializer("z", int64s({3}, {0, 0, 0}));
    m.node("Neg", {"v"}, {"neg"});
    m.node("Abs", {"v"}, {"abs"});
    m.node("Max", {"v", "z"}, {"mx"});
    m.node("Sum", {"v", "z", "z"}, {"sum"});
    m.node("Identity", {"dummy"}, {"d"});
    std::map<std::string, Tensor> feeds{{"dummy", floats({1}, {0})}};
    if (!constant) feeds["v"] = int64s({3}, v);
    auto out = run_model(m, feeds);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(out.at("neg").data<int64_t>()[i], -v[i]) << i << (constant ? " folded" : "");
      EXPECT_EQ(out.at("abs").data<int64_t>()[i], v[i] < 0 ? -v[i] : v[i]) << i;
      EXPECT_EQ(out.at("mx").data<int64_t>()[i], std::max<int64_t>(v[i], 0)) << i;
      EXPECT_EQ(out.at("sum").data<int64_t>()[i], v[i]) << i;
    }
  }
}

// Mean is defined on float tensors only: an integer Mean is refused (the device path scaled by
// 1/n as an integer, 0).
TEST(EdgeValues, IntegerMeanIsAModelError) {
  ModelBuilder m(13);
  m.input("a", DType::Int32, {3}).input("b", DType::Int32, {3}).output("y");
  m.node("Mean", {"a", "b"}, {"y"});
  const int32_t one[3] = {1, 2, 3};
  try {
    run_model(m, {{"a", make_tensor(DType::Int32, {3}, one)}, {"b", make_tensor(DType::Int32, {3}, one)}});
    ADD_FAILURE() << "no error";
  } catch (const ocl_infer::ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("Mean takes float tensors"), std::string::npos) << e.what();
  }
}

// noop_with_empty_axes and no axes: the reductions with an elementwise part still apply it
// (ReduceSumSquare squared nothing, ReduceL1 / L2 took no magnitude, ReduceLogSum no log).
TEST(EdgeValues, NoopReductionsKeepTheirElementwisePart) {
  const std::vector<float> x = {-1.5f, 2, -3, 0.25f};
  const std::map<std::string, std::vector<float>> want = {
      {"ReduceSumSquare", {2.25f, 4, 9, 0.0625f}},
      {"ReduceL1", {1.5f, 2, 3, 0.25f}},
      {"ReduceL2", {1.5f, 2, 3, 0.25f}},
      {"ReduceLogSum", {kNaN, std::log(2.f), kNaN, std::log(0.25f)}},
      {"ReduceSum", x},
      {"ReduceMax", x}};
  for (const bool constant : {false, true}) {
    ModelBuilder m(18);
    m.input("dummy", DType::Float32, {1}).output("d");
    m.node("Identity", {"dummy"}, {"d"});
    if (constant) m.initializer("x", floats({4}, x));
    else m.input("x", DType::Float32, {4});
    m.initializer("axes", int64s({0}, {}));
    for (const auto& [op, w] : want) {
      auto& n = m.node(op, {"x", "axes"}, {op});
      attr_i(n, "noop_with_empty_axes", 1);
      m.output(op);
    }
    std::map<std::string, Tensor> feeds{{"dummy", floats({1}, {0})}};
    if (!constant) feeds["x"] = floats({4}, x);
    auto out = run_model(m, feeds);
    for (const auto& [op, w] : want) {
      const std::vector<float> got = as_floats(out.at(op));
      ASSERT_EQ(got.size(), w.size()) << op;
      for (size_t i = 0; i < w.size(); ++i) {
        if (std::isnan(w[i])) EXPECT_TRUE(std::isnan(got[i])) << op << " [" << i << "]";
        else EXPECT_NEAR(got[i], w[i], 1e-6) << op << " [" << i << "]" << (constant ? " folded" : "");
      }
    }
  }
}

// Steps near INT64_MAX take one element (the element count overflowed to 0, or to a negative
// dimension in a multi-axis slice).
TEST(EdgeValues, SliceWithHugeSteps) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  struct Case {
    std::vector<int64_t> starts, ends, axes, steps;
    std::vector<int64_t> shape;
    std::vector<float> want;  // for x = 0, 1, 2, ... of shape [4, 5]
  };
  const std::vector<Case> cases = {
      {{0}, {kMax}, {1}, {kMax}, {4, 1}, {0, 5, 10, 15}},
      {{-kMax}, {kMax}, {1}, {kMax}, {4, 1}, {0, 5, 10, 15}},
      {{-1}, {-100}, {1}, {-kMax}, {4, 1}, {4, 9, 14, 19}},
      {{-1, 1}, {-7, 4}, {1, 0}, {-kMax, 3}, {1, 1}, {9}},
  };
  for (const Case& c : cases) {
    ModelBuilder m(13);
    m.input("x", DType::Float32, {4, 5}).output("y");
    m.initializer("s", int64s({static_cast<int64_t>(c.starts.size())}, c.starts));
    m.initializer("e", int64s({static_cast<int64_t>(c.ends.size())}, c.ends));
    m.initializer("a", int64s({static_cast<int64_t>(c.axes.size())}, c.axes));
    m.initializer("t", int64s({static_cast<int64_t>(c.steps.size())}, c.steps));
    m.node("Slice", {"x", "s", "e", "a", "t"}, {"y"});
    std::vector<float> xv(20);
    for (int i = 0; i < 20; ++i) xv[i] = static_cast<float>(i);
    auto out = run_model(m, {{"x", floats({4, 5}, xv)}});
    EXPECT_EQ(out.at("y").shape, c.shape) << c.steps[0];
    if (out.at("y").shape == c.shape) expect_same(as_floats(out.at("y")), c.want, "Slice");
  }
}

// wrap crops first, then wraps around what is left ([0..4] with pads -1 / +2 gave [1,2,3,4,0,1]);
// a dim cropped to nothing and padded again is refused.
TEST(EdgeValues, PadWrapCropsBeforeWrapping) {
  for (const bool constant : {false, true}) {
    ModelBuilder m(19);
    m.input("dummy", DType::Float32, {1}).output("d").output("y").output("y2");
    m.node("Identity", {"dummy"}, {"d"});
    const std::vector<float> xv = {0, 1, 2, 3, 4};
    if (constant) m.initializer("x", floats({5}, xv));
    else m.input("x", DType::Float32, {5});
    m.initializer("p", int64s({2}, {-1, 2})).initializer("p2", int64s({2}, {3, -2}));
    attr_s(m.node("Pad", {"x", "p"}, {"y"}), "mode", "wrap");
    attr_s(m.node("Pad", {"x", "p2"}, {"y2"}), "mode", "wrap");
    std::map<std::string, Tensor> feeds{{"dummy", floats({1}, {0})}};
    if (!constant) feeds["x"] = floats({5}, xv);
    auto out = run_model(m, feeds);
    expect_same(as_floats(out.at("y")), {1, 2, 3, 4, 1, 2}, constant ? "folded" : "device");
    // [0, 1, 2] left by the crop, wrapped 3 to the left: 0 1 2 | 0 1 2.
    expect_same(as_floats(out.at("y2")), {0, 1, 2, 0, 1, 2}, constant ? "folded" : "device");
  }
  ModelBuilder bad(19);
  bad.input("x", DType::Float32, {3}).output("y");
  bad.initializer("p", int64s({2}, {-3, 2}));
  attr_s(bad.node("Pad", {"x", "p"}, {"y"}), "mode", "wrap");
  EXPECT_THROW(run_model(bad, {{"x", floats({3}, {1, 2, 3})}}), ocl_infer::ModelError);
}

// ConvTranspose with output_shape and the default auto_pad: the pads attribute is ignored and the
// total padding split with the odd one at the start (it was all taken from the end).
TEST(EdgeValues, ConvTransposeOutputShapeSplitsThePadding) {
  ModelBuilder m(13);
  m.input("x", DType::Float32, {1, 1, 3}).output("y");
  m.initializer("w", floats({1, 1, 3}, {1, 10, 100}));
  auto& n = m.node("ConvTranspose", {"x", "w"}, {"y"});
  attr_ints(n, "strides", {2});
  attr_ints(n, "output_shape", {5});
  auto out = run_model(m, {{"x", floats({1, 1, 3}, {1, 2, 3})}});
  // Full result 1 10 102 20 203 30 300 (7 long); 2 of padding: one from each end.
  expect_same(as_floats(out.at("y")), {10, 102, 20, 203, 30}, "ConvTranspose");
}
