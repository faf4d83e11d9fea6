// Optimizer passes on tiny graphs: each rewrite happens (checked in the optimized graph's JSON
// dump) and the optimized model computes the same numbers as the unoptimized one (-O0).
#include <gtest/gtest.h>

#include <regex>

#include "runtime/backend/cl_runtime.hpp"
#include "tests/model_builder.hpp"
#include "tests/reference_ops.hpp"

using namespace testing_util;
using Shape = std::vector<int64_t>;

namespace {

struct Result {
  std::map<std::string, Tensor> out;
  std::vector<std::string> ops;  // per executed node, "Conv+BatchNormalization+Relu"
  std::string graph_json, plan_json;
};

Result run(const ModelBuilder& m, const std::map<std::string, Tensor>& feeds, int level,
           bool plan_memory = true) {
  std::string b = m.bytes();
  ocl_infer::SessionOptions opt;
  opt.optimization_level = level;
  opt.plan_memory = plan_memory;
  auto s = ocl_infer::Session::from_memory(b.data(), b.size(), opt);
  Result r;
  r.out = s.run(feeds);
  r.graph_json = s.dump("graph.json");
  r.plan_json = s.dump("plan.json");
  std::regex ops_re("\"ops\": \\[([^\\]]*)\\]");
  for (auto it = std::sregex_iterator(r.graph_json.begin(), r.graph_json.end(), ops_re); it != std::sregex_iterator(); ++it) {
    std::string list = (*it)[1], joined;
    std::regex item("\"([^\"]+)\"");
    for (auto j = std::sregex_iterator(list.begin(), list.end(), item); j != std::sregex_iterator(); ++j)
      joined += (joined.empty() ? "" : "+") + std::string((*j)[1]);
    r.ops.push_back(joined);
  }
  return r;
}

// Optimized vs -O0 within `tol` relative to max|ref|; returns the optimized result.
Result check_same(const ModelBuilder& m, const std::map<std::string, Tensor>& feeds, double tol = 1e-5) {
  Result ref = run(m, feeds, 0), opt = run(m, feeds, 1);
  for (auto& [name, t] : ref.out) EXPECT_LE(rel_error(opt.out.at(name), t), tol) << name;
  return opt;
}

Tensor conv_weight(std::mt19937& rng, int64_t co, int64_t ci, int64_t k) { return random_tensor({co, ci, k, k}, rng); }

// A float32 scalar constant.
Tensor scalar(float v) {
  Tensor t(DType::Float32, {});
  t.data<float>()[0] = v;
  return t;
}

TEST(Optimizer, RemovesIdentityAndDropout) {
  ModelBuilder m(13);
  m.input("x", DType::Float32, {2, 5}).output("y");
  m.node("Identity", {"x"}, {"a"});
  m.node("Dropout", {"a"}, {"b"});
  m.node("Relu", {"b"}, {"y"});
  std::mt19937 rng(1);
  auto r = check_same(m, {{"x", random_tensor({2, 5}, rng)}});
  EXPECT_EQ(r.ops, std::vector<std::string>{"Relu"});
}

// Constants with the same dtype, shape and bytes are uploaded once; the same bytes under another
// shape, or the same shape with other bytes, are not merged.
TEST(Optimizer, MergesOnlyIdenticalConstants) {
  std::mt19937 rng(11);
  const Tensor a = random_tensor({2, 3}, rng), c = random_tensor({2, 3}, rng);
  Tensor d = a;
  d.shape = {3, 2};
  ModelBuilder m(13);
  m.input("x", DType::Float32, {2, 3}).input("x2", DType::Float32, {3, 2}).output("p").output("q").output("r")
      .output("s");
  m.initializer("a", a).initializer("b", a).initializer("c", c).initializer("d", d);
  m.node("Mul", {"x", "a"}, {"p"});
  m.node("Mul", {"x", "b"}, {"q"});
  m.node("Mul", {"x", "c"}, {"r"});
  m.node("Mul", {"x2", "d"}, {"s"});
  auto r = check_same(m, {{"x", random_tensor({2, 3}, rng)}, {"x2", random_tensor({3, 2}, rng)}}, 0);
  EXPECT_NE(r.graph_json.find("\"1 duplicate constants merged\""), std::string::npos) << r.graph_json.substr(0, 600);
}

TEST(Optimizer, CancelsAndMergesTransposes) {
  ModelBuilder m(13);
  m.input("x", DType::Float32, {2, 3, 5}).output("y").output("z");
  attr_ints(m.node("Transpose", {"x"}, {"t1"}), "perm", {0, 2, 1});
  attr_ints(m.node("Transpose", {"t1"}, {"t2"}), "perm", {0, 2, 1});
  m.node("Relu", {"t2"}, {"y"});
  attr_ints(m.node("Transpose", {"x"}, {"u1"}), "perm", {1, 0, 2});
  attr_ints(m.node("Transpose", {"u1"}, {"z"}), "perm", {0, 2, 1});
  std::mt19937 rng(2);
  auto r = check_same(m, {{"x", random_tensor({2, 3, 5}, rng)}});
  EXPECT_EQ(r.ops, (std::vector<std::string>{"Relu", "Transpose+Transpose"}));
}

TEST(Optimizer, FoldsBatchNormAndPerChannelMulAddIntoConv) {
  std::mt19937 rng(3);
  ModelBuilder m(13);
  m.input("x", DType::Float32, {1, 3, 11, 7}).output("y");
  m.initializer("w", conv_weight(rng, 5, 3, 3)).initializer("b", random_tensor({5}, rng));
  m.initializer("gamma", random_tensor({5}, rng, 0.5f, 1.5f)).initializer("beta", random_tensor({5}, rng));
  m.initializer("mean", random_tensor({5}, rng)).initializer("var", random_tensor({5}, rng, 0.5f, 2.f));
  m.initializer("scale", random_tensor({5, 1, 1}, rng)).initializer("shift", random_tensor({1, 5, 1, 1}, rng));
  attr_ints(m.node("Conv", {"x", "w", "b"}, {"c"}), "pads", {1, 1, 1, 1});
  attr_f(m.node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"n"}), "epsilon", 1e-3f);
  m.node("Mul", {"n", "scale"}, {"s"});
  m.node("Add", {"shift", "s"}, {"y"});
  auto r = check_same(m, {{"x", random_tensor({1, 3, 11, 7}, rng)}});
  EXPECT_EQ(r.ops, std::vector<std::string>{"Conv+BatchNormalization+Mul+Add"});
}

TEST(Optimizer, BatchNormWithoutFoldableProducerStays) {
  std::mt19937 rng(4);
  ModelBuilder m(13);
  m.input("x", DType::Float32, {1, 2, 5, 5}).input("z", DType::Float32, {1, 3, 5, 5}).output("y");
  m.initializer("gamma", random_tensor({5}, rng, 0.5f, 1.5f)).initializer("beta", random_tensor({5}, rng));
  m.initializer("mean", random_tensor({5}, rng)).initializer("var", random_tensor({5}, rng, 0.5f, 2.f));
  attr_i(m.node("Concat", {"x", "z"}, {"c"}), "axis", 1);
  m.node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"n"});
  m.node("Relu", {"n"}, {"y"});
  auto r = check_same(m, {{"x", random_tensor({1, 2, 5, 5}, rng)}, {"z", random_tensor({1, 3, 5, 5}, rng)}});
  // A scale-and-shift kernel that applies the Relu too (DenseNet's pattern).
  EXPECT_EQ(r.ops, (std::vector<std::string>{"Concat", "BatchNormalization+Relu"}));
}

TEST(Optimizer, FoldsZeroPadIntoConv) {
  std::mt19937 rng(5);
  ModelBuilder m(13);
  m.input("x", DType::Float32, {1, 2, 9, 8}).output("y");
  m.initializer("w", conv_weight(rng, 4, 2, 3));
  std::vector<int64_t> pads{0, 0, 1, 0, 0, 0, 2, 1};
  Tensor pt(DType::Int64, {8});
  std::memcpy(pt.bytes.data(), pads.data(), 64);
  m.initializer("pads", pt);
  m.node("Pad", {"x", "pads"}, {"p"});
  attr_ints(m.node("Conv", {"p", "w"}, {"y"}), "strides", {2, 2});
  auto r = check_same(m, {{"x", random_tensor({1, 2, 9, 8}, rng)}});
  EXPECT_EQ(r.ops, std::vector<std::string>{"Pad+Conv"});
}

TEST(Optimizer, FusesActivationsIntoConv) {
  std::mt19937 rng(6);
  for (std::string act : {"Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish", "Clip"}) {
    ModelBuilder m(14);
    m.input("x", DType::Float32, {1, 3, 7, 9}).output("y");
    m.initializer("w", conv_weight(rng, 6, 3, 3));
    m.node("Conv", {"x", "w"}, {"c"});
    if (act == "Clip") {
      Tensor lo(DType::Float32, {}), hi(DType::Float32, {});
      lo.data<float>()[0] = 0.f;
      hi.data<float>()[0] = 6.f;
      m.initializer("lo", lo).initializer("hi", hi);
      m.node("Clip", {"c", "lo", "hi"}, {"y"});
    } else {
      m.node(act, {"c"}, {"y"});
    }
    auto r = check_same(m, {{"x", random_tensor({1, 3, 7, 9}, rng, -2, 2)}});
    EXPECT_EQ(r.ops, std::vector<std::string>{"Conv+" + act}) << act;
  }
}

TEST(Optimizer, FusesDecomposedSiluAndGelu) {
  std::mt19937 rng(7);
  {
    ModelBuilder m(13);
    m.input("x", DType::Float32, {1, 4, 6, 6}).output("y");
    m.initializer("w", conv_weight(rng, 5, 4, 1));
    m.node("Conv", {"x", "w"}, {"c"});
    m.node("Sigmoid", {"c"}, {"s"});
    m.node("Mul", {"c", "s"}, {"y"});
    auto r = check_same(m, {{"x", random_tensor({1, 4, 6, 6}, rng)}});
    EXPECT_EQ(r.ops, std::vector<std::string>{"Conv+Sigmoid+Mul"});
  }
  {
    ModelBuilder m(13);
    m.input("a", DType::Float32, {3, 8}).output("y");
    m.initializer("b", random_tensor({8, 5}, rng));
    m.initializer("sqrt2", scalar(1.4142135f)).initializer("one", scalar(1.f)).initializer("half", scalar(0.5f));
    m.node("MatMul", {"a", "b"}, {"x"});
    m.node("Div", {"x", "sqrt2"}, {"d"});
    m.node("Erf", {"d"}, {"e"});
    m.node("Add", {"e", "one"}, {"p"});
    m.node("Mul", {"x", "p"}, {"q"});
    m.node("Mul", {"q", "half"}, {"y"});
    auto r = check_same(m, {{"a", random_tensor({3, 8}, rng)}});
    EXPECT_EQ(r.ops, std::vector<std::string>{"MatMul+Div+Erf+Add+Mul+Mul"});
  }
}

// HardSwish spelled out (paddle2onnx: x * Clip(x + 3, 0, 6) / 6; others divide the Clip first or
// multiply by 1/6) fuses into the conv; a Clip to 5, an intermediate that is also read elsewhere
// or a + 2 keep their nodes. Inputs span [-5, 5] so both Clip bounds are crossed.
TEST(Optimizer, FusesDecomposedHardSwish) {
  std::mt19937 rng(17);
  // order: 0 = (x * c) / 6, 1 = x * (c / 6), 2 = (x * c) * (1/6), 3 = x * (c * (1/6)).
  struct Case {
    int order;
    float add, hi;
    bool extra_reader, fused;
  };
  for (const Case& c : {Case{0, 3, 6, false, true}, Case{1, 3, 6, false, true}, Case{2, 3, 6, false, true},
                        Case{3, 3, 6, false, true}, Case{0, 3, 5, false, false}, Case{0, 2, 6, false, false},
                        Case{1, 3, 6, true, false}}) {
    ModelBuilder m(13);
    m.input("x", DType::Float32, {1, 3, 7, 9}).output("y");
    if (c.extra_reader) m.output("c");
    m.initializer("w", conv_weight(rng, 6, 3, 3)).initializer("b", random_tensor({6}, rng));
    m.initializer("three", scalar(c.add)).initializer("zero", scalar(0)).initializer("six", scalar(c.hi));
    m.initializer("k", scalar(c.order >= 2 ? 1.0f / 6 : 6.0f));
    attr_ints(m.node("Conv", {"x", "w", "b"}, {"v"}), "pads", {1, 1, 1, 1});
    m.node("Add", {"v", "three"}, {"t"});
    m.node("Clip", {"t", "zero", "six"}, {"c"});
    const char* scale = c.order >= 2 ? "Mul" : "Div";
    if (c.order % 2 == 0) {
      m.node("Mul", {"c", "v"}, {"p"});
      m.node(scale, {"p", "k"}, {"y"});
    } else {
      m.node(scale, {"c", "k"}, {"d"});
      m.node("Mul", {"v", "d"}, {"y"});
    }
    auto r = check_same(m, {{"x", random_tensor({1, 3, 7, 9}, rng, -1.5f, 1.5f)}});
    const std::string trace = "order " + std::to_string(c.order) + " add " + std::to_string(c.add) + " hi " +
                              std::to_string(c.hi) + (c.extra_reader ? " clip read elsewhere" : "");
    if (c.fused)
      EXPECT_EQ(r.ops, std::vector<std::string>{std::string("Conv+Add+Clip+Mul+") + scale}) << trace;
    else
      EXPECT_GT(r.ops.size(), 1u) << trace;
  }
}

// Constant Mul/Add in front of an unpadded conv fold into its weights (PP-LCNet's learnable affine
// blocks before a 1x1 conv): scalars, per-channel [C,1,1] values into a grouped conv, a 3x3 VALID
// conv, Add before Mul. Not folded: a padded conv (its zero border would see the shift), a Mul
// whose output is also read elsewhere.
TEST(Optimizer, FoldsInputAffineIntoUnpaddedConv) {
  std::mt19937 rng(19);
  struct Case {
    const char* name;
    int64_t k, group;
    bool padded, per_channel, add_first, shared, folded;
  };
  for (const Case& c : {Case{"scalar 1x1", 1, 1, false, false, false, false, true},
                        Case{"per-channel grouped 1x1", 1, 2, false, true, false, false, true},
                        Case{"3x3 valid, add first", 3, 1, false, true, true, false, true},
                        Case{"3x3 padded", 3, 1, true, false, false, false, false},
                        Case{"mul read elsewhere", 1, 1, false, false, false, true, false}}) {
    ModelBuilder m(13);
    m.input("x", DType::Float32, {2, 4, 7, 9}).output("y");
    if (c.shared) m.output("s");
    m.initializer("w0", conv_weight(rng, 6, 4, 3)).initializer("w1", random_tensor({5 * c.group, 6 / c.group, c.k, c.k}, rng));
    m.initializer("b1", random_tensor({5 * c.group}, rng));
    m.initializer("scale", c.per_channel ? random_tensor({6, 1, 1}, rng, 0.5f, 2.f) : random_tensor({1}, rng, 0.5f, 2.f));
    m.initializer("shift", c.per_channel ? random_tensor({6, 1, 1}, rng) : random_tensor({}, rng));
    attr_ints(m.node("Conv", {"x", "w0"}, {"c0"}), "pads", {1, 1, 1, 1});
    m.node("Relu", {"c0"}, {"r"});
    if (c.add_first) {
      m.node("Add", {"shift", "r"}, {"s"});
      m.node("Mul", {"s", "scale"}, {"a"});
    } else {
      m.node("Mul", {"r", "scale"}, {"s"});
      m.node("Add", {"s", "shift"}, {"a"});
    }
    auto& conv = m.node("Conv", {"a", "w1", "b1"}, {"y"});
    attr_i(conv, "group", c.group);
    if (c.padded) attr_ints(conv, "pads", {1, 1, 1, 1});
    auto r = check_same(m, {{"x", random_tensor({2, 4, 7, 9}, rng)}});
    if (c.folded)
      EXPECT_EQ(r.ops, (std::vector<std::string>{"Conv+Relu", c.add_first ? "Add+Mul+Conv" : "Mul+Add+Conv"})) << c.name;
    else
      EXPECT_GT(r.ops.size(), 2u) << c.name;
  }
}

// Scalar Mul/Add after a 1x1 conv's activation that feed a padded (depthwise) conv become the 1x1
// conv's post-activation affine: applied by the pointwise kernel as it stores, by an in-place pass
// after any other variant (forced packed, a stride-2 1x1 conv), and Add-then-Mul composes. Each
// against the unoptimized graph.
TEST(Optimizer, FusesPostActivationAffineAfterPointwiseConv) {
  std::mt19937 rng(23);
  struct Case {
    const char* name;
    int64_t stride;
    bool add_first;
    const char* variants;
  };
  for (const Case& c : {Case{"pointwise", 1, false, ""}, Case{"add first", 1, true, ""},
                        Case{"forced packed", 1, false, "conv=packed"}, Case{"stride 2", 2, false, ""}}) {
    ModelBuilder m(13);
    m.input("x", DType::Float32, {1, 8, 10, 12}).output("y");
    m.initializer("w1", conv_weight(rng, 16, 8, 1)).initializer("b1", random_tensor({16}, rng));
    m.initializer("wd", random_tensor({16, 1, 3, 3}, rng)).initializer("s", scalar(0.73f)).initializer("t", scalar(-0.41f));
    attr_ints(m.node("Conv", {"x", "w1", "b1"}, {"c"}), "strides", {c.stride, c.stride});
    m.node("Relu", {"c"}, {"r"});
    if (c.add_first) {
      m.node("Add", {"t", "r"}, {"u"});
      m.node("Mul", {"u", "s"}, {"a"});
    } else {
      m.node("Mul", {"s", "r"}, {"u"});
      m.node("Add", {"u", "t"}, {"a"});
    }
    auto& dw = m.node("Conv", {"a", "wd"}, {"y"});
    attr_i(dw, "group", 16);
    attr_ints(dw, "pads", {1, 1, 1, 1});
    const std::map<std::string, Tensor> feeds{{"x", random_tensor({1, 8, 10, 12}, rng)}};
    std::string bytes = m.bytes();
    ocl_infer::SessionOptions o0, o1;
    o0.optimization_level = 0;
    o1.kernel_variants = c.variants;
    auto ref = ocl_infer::Session::from_memory(bytes.data(), bytes.size(), o0).run(feeds).at("y");
    auto s1 = ocl_infer::Session::from_memory(bytes.data(), bytes.size(), o1);
    EXPECT_LE(rel_error(s1.run(feeds).at("y"), ref), 1e-5) << c.name;
    const std::string graph = s1.dump("graph.json");
    EXPECT_NE(graph.find(c.add_first ? "\"Conv\", \"Relu\", \"Add\", \"Mul\"" : "\"Conv\", \"Relu\", \"Mul\", \"Add\""),
              std::string::npos)
        << c.name << ": " << graph;
  }
}

TEST(Optimizer, FusesResidualAddThenActivation) {
  std::mt19937 rng(8);
  ModelBuilder m(13);
  m.input("x", DType::Float32, {1, 4, 9, 9}).output("y");
  m.initializer("w1", conv_weight(rng, 4, 4, 3)).initializer("w2", conv_weight(rng, 4, 4, 3));
  attr_ints(m.node("Conv", {"x", "w1"}, {"c1"}), "pads", {1, 1, 1, 1});
  m.node("Relu", {"c1"}, {"r1"});
  attr_ints(m.node("Conv", {"r1", "w2"}, {"c2"}), "pads", {1, 1, 1, 1});
  m.node("Add", {"c2", "x"}, {"s"});
  m.node("Relu", {"s"}, {"y"});
  auto r = check_same(m, {{"x", random_tensor({1, 4, 9, 9}, rng)}});
  EXPECT_EQ(r.ops, (std::vector<std::string>{"Conv+Relu", "Conv+Add+Relu"}));
}

// Squeeze-and-excitation: a per-channel Mul(x, s) feeding a Conv becomes the conv's input scale
// (fuse_channel_scale): the 1x1 conv (pointwise kernel), a padded 3x3 conv (packed: the padded copy
// carries the scale), short-reduction convs on wide rows (pixvec; at stride 2 its copy splits the
// rows into even and odd columns), s as [N, C, 1, 1] per image,
// [1, C, 1, 1] and [C, 1, 1], Mul(s, x) as well as Mul(x, s); every conv variant that applies,
// forced. Not fused: a Mul read by something else too, a grouped conv, a scale that varies over
// the rows.
TEST(Optimizer, FoldsPerChannelScaleIntoTheNextConv) {
  std::mt19937 rng(21);
  const int64_t C = 8;
  for (int64_t N : {1, 2}) {
    ModelBuilder m(13);
    m.input("x", DType::Float32, {N, C, 9, 37}).output("y1").output("y2").output("y3").output("y4").output("y5");
    m.output("y6");
    m.initializer("we", conv_weight(rng, C, C, 1)).initializer("wse", conv_weight(rng, C, C, 1));
    m.initializer("w1", conv_weight(rng, 6, C, 1)).initializer("w3", conv_weight(rng, 5, C, 3));
    m.initializer("wv", conv_weight(rng, 16, C, 3)).initializer("b1", random_tensor({6}, rng));
    m.initializer("sc", random_tensor({C, 1, 1}, rng, 0.5f, 1.5f));
    m.node("Conv", {"x", "we"}, {"e"});
    m.node("Sigmoid", {"e"}, {"r"});  // the tensor being scaled
    m.node("GlobalAveragePool", {"r"}, {"g"});
    m.node("Conv", {"g", "wse"}, {"gs"});
    m.node("Sigmoid", {"gs"}, {"s"});  // [N, C, 1, 1], one scale per image and channel
    m.node("Mul", {"r", "s"}, {"m1"});
    m.node("Conv", {"m1", "w1", "b1"}, {"y1"});  // pointwise
    m.node("Mul", {"s", "r"}, {"m3"});
    attr_ints(m.node("Conv", {"m3", "w3"}, {"y2"}), "pads", {1, 1, 1, 1});  // packed, padded copy
    m.node("Mul", {"r", "sc"}, {"mv"});
    attr_ints(m.node("Conv", {"mv", "wv"}, {"y3"}), "pads", {1, 2, 1, 0});  // constant [C, 1, 1] scale
    m.node("Mul", {"s", "r"}, {"m6"});
    auto& strided = m.node("Conv", {"m6", "wv"}, {"y6"});  // stride 2: 37 + 3 -> 19 pixels
    attr_ints(strided, "pads", {1, 2, 0, 1});
    attr_ints(strided, "strides", {2, 2});
    m.node("Mul", {"r", "s"}, {"m4"});  // read twice: stays
    m.node("Conv", {"m4", "w1"}, {"y5"});
    m.node("Add", {"m4", "r"}, {"a4"});
    m.node("ReduceSum", {"a4"}, {"y4"});
    const Tensor x = random_tensor({N, C, 9, 37}, rng);
    auto r = check_same(m, {{"x", x}});
    int fused = 0;
    for (auto& ops : r.ops) fused += ops == "Mul+Conv";
    EXPECT_EQ(fused, 4) << r.graph_json;
    const auto want = run(m, {{"x", x}}, 0).out;
    for (const char* force : {"conv=packed:pad=0", "conv=packed:pad=1", "conv=tiled", "conv=pixvec", "conv=pointwise"}) {
      std::string b = m.bytes();
      ocl_infer::SessionOptions opt;
      opt.kernel_variants = force;
      auto s = ocl_infer::Session::from_memory(b.data(), b.size(), opt);
      auto got = s.run({{"x", x}});
      for (auto& [name, t] : want) EXPECT_LE(rel_error(got.at(name), t), 1e-5) << name << " with " << force;
    }
  }
  // Not fused: a grouped conv; a scale that varies along the rows.
  ModelBuilder m(13);
  m.input("x", DType::Float32, {1, C, 6, 6}).output("y1").output("y2");
  m.initializer("wg", conv_weight(rng, C, C / 2, 3)).initializer("w", conv_weight(rng, 4, C, 1));
  m.initializer("s", random_tensor({1, C, 1, 1}, rng)).initializer("rows", random_tensor({1, C, 6, 1}, rng));
  m.node("Mul", {"x", "s"}, {"m1"});
  auto& g = m.node("Conv", {"m1", "wg"}, {"y1"});
  attr_i(g, "group", 2);
  attr_ints(g, "pads", {1, 1, 1, 1});
  m.node("Mul", {"x", "rows"}, {"m2"});
  m.node("Conv", {"m2", "w"}, {"y2"});
  auto r = check_same(m, {{"x", random_tensor({1, C, 6, 6}, rng)}});
  for (auto& ops : r.ops) EXPECT_NE(ops, "Mul+Conv") << r.graph_json;
}

// The squeeze-and-excitation scale fused into a conv with an open batch run on an empty batch:
// the scale [0, C, 1, 1] is per image (none of them), the output [0, M, H, W]; then the same
// plan shape family on 3 images against the unfused graph.
TEST(Optimizer, FusedChannelScaleTakesAnEmptyBatch) {
  std::mt19937 rng(22);
  const int64_t C = 8;
  ModelBuilder m(13);
  m.input("x", DType::Float32, {-1, C, 6, 6}).output("y");
  m.initializer("we", conv_weight(rng, C, C, 1)).initializer("wse", conv_weight(rng, C, C, 1));
  m.initializer("w", conv_weight(rng, 4, C, 1));
  m.node("Conv", {"x", "we"}, {"e"});
  m.node("GlobalAveragePool", {"e"}, {"g"});
  m.node("Conv", {"g", "wse"}, {"gs"});
  m.node("Sigmoid", {"gs"}, {"s"});
  m.node("Mul", {"e", "s"}, {"m"});
  m.node("Conv", {"m", "w"}, {"y"});
  auto r = check_same(m, {{"x", random_tensor({3, C, 6, 6}, rng)}});
  EXPECT_NE(std::find(r.ops.begin(), r.ops.end(), "Mul+Conv"), r.ops.end()) << r.graph_json;
  const std::string b = m.bytes();
  auto s = ocl_infer::Session::from_memory(b.data(), b.size());
  const auto out = s.run({{"x", Tensor(DType::Float32, {0, C, 6, 6})}});
  EXPECT_EQ(out.at("y").shape, (Shape{0, 4, 6, 6}));
}

// A GlobalAveragePool of a depthwise conv's output becomes the conv's second output
// (fuse_plane_mean): with SiLU fused first (the pool averages the activated values), with the
// conv's output read by another conv too, and with it a graph output itself (the means then
// checked against the output's own planes averaged on the host in double); channel multiplier 2,
// stride 2, planes whose size 8 does not divide (the sum's tail), N = 1 and 2. Every conv
// variant that applies, forced: `depthwise` with one band computes the means in its kernel, with
// bands (and every other variant) a separate plane-mean launch does; fp16 storage too. Not fused:
// a grouped conv that is not depthwise.
TEST(Optimizer, FusesGlobalAveragePoolIntoDepthwiseConv) {
  std::mt19937 rng(31);
  const int64_t C = 6;
  for (int64_t N : {1, 2}) {
    ModelBuilder m(13);
    m.input("x", DType::Float32, {N, C, 9, 20}).output("g1").output("y2").output("y3").output("g3");
    m.initializer("wd", random_tensor({2 * C, 1, 3, 3}, rng)).initializer("bd", random_tensor({2 * C}, rng));
    m.initializer("w1", conv_weight(rng, 5, 2 * C, 1)).initializer("w3", random_tensor({C, 1, 5, 5}, rng));
    auto& d = m.node("Conv", {"x", "wd", "bd"}, {"d"});
    attr_i(d, "group", C);
    attr_ints(d, "pads", {1, 1, 1, 1});
    attr_ints(d, "strides", {2, 2});
    m.node("Sigmoid", {"d"}, {"sd"});
    m.node("Mul", {"d", "sd"}, {"e"});  // SiLU, fused into the conv first
    m.node("GlobalAveragePool", {"e"}, {"g1"});
    m.node("Conv", {"e", "w1"}, {"y2"});  // a second reader of the conv's output
    auto& d3 = m.node("Conv", {"x", "w3"}, {"y3"});  // a graph output and pooled
    attr_i(d3, "group", C);
    attr_ints(d3, "pads", {2, 2, 2, 2});
    m.node("GlobalAveragePool", {"y3"}, {"g3"});
    const Tensor x = random_tensor({N, C, 9, 20}, rng);
    auto r = check_same(m, {{"x", x}});
    int fused = 0;
    for (auto& ops : r.ops) fused += ops.find("Conv") == 0 && ops.find("GlobalAveragePool") != std::string::npos;
    EXPECT_EQ(fused, 2) << r.graph_json;
    const auto want = run(m, {{"x", x}}, 0).out;
    for (const char* force : {"conv=depthwise:bands=1", "conv=depthwise:bands=2,chans=1", "conv=depthwise:chans=4,owb=4",
                              "conv=depthwise:bands=1,quick=1", "conv=depthwise_wg", "conv=packed", "conv=tiled"}) {
      for (auto precision : {ocl_infer::Precision::Float32, ocl_infer::Precision::Float16}) {
        std::string b = m.bytes();
        ocl_infer::SessionOptions opt;
        opt.kernel_variants = force;
        opt.precision = precision;
        auto s = ocl_infer::Session::from_memory(b.data(), b.size(), opt);
        auto got = s.run({{"x", x}});
        const double tol = precision == ocl_infer::Precision::Float16 ? 1e-2 : 1e-5;
        for (auto& [name, t] : want) EXPECT_LE(rel_error(got.at(name), t), tol) << name << " with " << force;
        // g3 against the planes of this run's own y3.
        const Tensor& y3 = got.at("y3");
        const int64_t planes = N * C, plane = y3.numel() / planes;
        for (int64_t p = 0; p < planes; ++p) {
          double sum = 0;
          for (int64_t i = 0; i < plane; ++i) sum += y3.data<float>()[p * plane + i];
          EXPECT_NEAR(got.at("g3").data<float>()[p], sum / plane, 1e-5 * (1 + std::fabs(sum / plane)))
              << "plane " << p << " with " << force;
        }
      }
    }
  }
  // Not fused: a grouped conv with two input channels per group.
  ModelBuilder m(13);
  m.input("x", DType::Float32, {1, 4, 6, 6}).output("g");
  m.initializer("w", random_tensor({4, 2, 3, 3}, rng));
  auto& g = m.node("Conv", {"x", "w"}, {"c"});
  attr_i(g, "group", 2);
  m.node("GlobalAveragePool", {"c"}, {"g"});
  auto r = check_same(m, {{"x", random_tensor({1, 4, 6, 6}, rng)}});
  for (auto& ops : r.ops) EXPECT_EQ(ops.find("GlobalAveragePool"), ops.find("Conv") == 0 ? std::string::npos : 0u) << ops;
}

TEST(Optimizer, MatMulBiasAndActivationBecomeOneGemm) {
  std::mt19937 rng(11);
  ModelBuilder m(13);
  m.input("a", DType::Float32, {7, 13}).output("y");
  m.initializer("b", random_tensor({13, 5}, rng)).initializer("bias", random_tensor({5}, rng));
  m.node("MatMul", {"a", "b"}, {"x"});
  m.node("Add", {"x", "bias"}, {"z"});
  m.node("Relu", {"z"}, {"y"});
  auto r = check_same(m, {{"a", random_tensor({7, 13}, rng)}});
  EXPECT_EQ(r.ops, std::vector<std::string>{"MatMul+Add+Relu"});
}

Tensor scalar_tensor(float v) {
  Tensor t(DType::Float32, {});
  t.data<float>()[0] = v;
  return t;
}

// y = GELU(x @ w + bias) in double, x [rows, K] (leading dims flattened), w [K, N].
Tensor linear_gelu_reference(const Tensor& x, const Tensor& w, const Tensor& bias, bool gelu) {
  const int64_t K = w.shape[0], N = w.shape[1], rows = x.numel() / K;
  Shape ys = x.shape;
  ys.back() = N;
  Tensor y(DType::Float32, ys);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t n = 0; n < N; ++n) {
      double acc = bias.data<float>()[n % bias.numel()];
      for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(x.data<float>()[r * K + k]) * w.data<float>()[k * N + n];
      y.data<float>()[r * N + n] = static_cast<float>(gelu ? 0.5 * acc * (1 + std::erf(acc / std::sqrt(2.0))) : acc);
    }
  return y;
}

// A transformer Linear layer: a batched MatMul [B, T, K] x [K, N] plus bias, then the Erf GELU,
// becomes one MatMul kernel (bias and GELU in its epilogue). N = 40 covers both the whole-panel
// vector epilogue and the partial last panel.
TEST(Optimizer, BatchedMatMulBiasGeluIsOneKernel) {
  std::mt19937 rng(21);
  for (bool bias_3d : {false, true}) {
    ModelBuilder m(13);
    m.input("a", DType::Float32, {2, 5, 16}).output("y");
    Tensor w = random_tensor({16, 40}, rng), bias = random_tensor(bias_3d ? Shape{1, 1, 40} : Shape{40}, rng);
    m.initializer("w", w).initializer("bias", bias);
    m.initializer("sqrt2", scalar_tensor(1.4142135f)).initializer("one", scalar_tensor(1.f));
    m.initializer("half", scalar_tensor(0.5f));
    m.node("MatMul", {"a", "w"}, {"mm"});
    m.node("Add", {"mm", "bias"}, {"x"});
    m.node("Div", {"x", "sqrt2"}, {"d"});
    m.node("Erf", {"d"}, {"e"});
    m.node("Add", {"e", "one"}, {"p"});
    m.node("Mul", {"x", "p"}, {"q"});
    m.node("Mul", {"q", "half"}, {"y"});
    Tensor a = random_tensor({2, 5, 16}, rng, -2, 2);
    auto r = check_same(m, {{"a", a}});
    EXPECT_EQ(r.ops, std::vector<std::string>{"MatMul+Add+Div+Erf+Add+Mul+Mul"});
    EXPECT_LE(rel_error(r.out.at("y"), linear_gelu_reference(a, w, bias, true)), 1e-5);
  }
  // The MatMul's output also read elsewhere: nothing fuses, same numbers.
  ModelBuilder m(13);
  m.input("a", DType::Float32, {3, 4, 9}).output("y").output("mm");
  Tensor w = random_tensor({9, 7}, rng), bias = random_tensor({7}, rng);
  m.initializer("w", w).initializer("bias", bias);
  m.node("MatMul", {"a", "w"}, {"mm"});
  m.node("Add", {"mm", "bias"}, {"y"});
  Tensor a = random_tensor({3, 4, 9}, rng);
  auto r = check_same(m, {{"a", a}});
  EXPECT_EQ(r.ops, (std::vector<std::string>{"MatMul", "Add"}));
  EXPECT_LE(rel_error(r.out.at("y"), linear_gelu_reference(a, w, bias, false)), 1e-5);
}

// The LayerNorm that exporters write out before opset 17 becomes one LayerNormalization kernel:
// with Pow or Mul for the square, axes as an attribute (opset 13) or an input (opset 18), over one
// or two trailing dims, with and without scale and shift. Patterns that differ stay unfused.
TEST(Optimizer, FusesDecomposedLayerNorm) {
  std::mt19937 rng(22);
  struct Case {
    std::string name;
    int opset;
    Shape x;
    std::vector<int64_t> axes;
    bool pow, gamma, beta;
    bool fuses;
  };
  const Case cases[] = {
      {"pow, scale and shift, last axis", 13, {2, 7, 24}, {-1}, true, true, true, true},
      {"mul square, no affine, axes input", 18, {3, 5, 13}, {2}, false, false, false, true},
      {"two trailing axes, scale only", 13, {2, 3, 4, 10}, {-2, -1}, true, true, false, true},
      {"rows of 96 (float8 path), many rows", 13, {1, 9, 11, 96}, {-1}, true, true, true, true},
      {"mean over a middle axis", 13, {2, 6, 5}, {1}, true, true, true, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ModelBuilder m(c.opset);
    const int axis = c.fuses ? static_cast<int>(c.x.size() - c.axes.size()) : 1;
    const Shape ns(c.x.begin() + (c.fuses ? axis : static_cast<int>(c.x.size()) - 1), c.x.end());
    Tensor g = random_tensor(ns, rng, 0.5f, 1.5f), b = random_tensor(ns, rng);
    m.input("x", DType::Float32, c.x).output("y");
    m.initializer("eps", scalar_tensor(1e-5f)).initializer("two", scalar_tensor(2.f));
    auto reduce = [&](const std::string& in, const std::string& out) {
      if (c.opset >= 18) {
        Tensor axes(DType::Int64, {static_cast<int64_t>(c.axes.size())});
        for (size_t i = 0; i < c.axes.size(); ++i) axes.data<int64_t>()[i] = c.axes[i];
        m.initializer(out + "_axes", axes);
        m.node("ReduceMean", {in, out + "_axes"}, {out});
      } else {
        attr_ints(m.node("ReduceMean", {in}, {out}), "axes", c.axes);
      }
    };
    reduce("x", "mean");
    m.node("Sub", {"x", "mean"}, {"d"});
    if (c.pow) m.node("Pow", {"d", "two"}, {"sq"});
    else m.node("Mul", {"d", "d"}, {"sq"});
    reduce("sq", "var");
    m.node("Add", {"var", "eps"}, {"ve"});
    m.node("Sqrt", {"ve"}, {"sd"});
    std::string last = c.gamma || c.beta ? "n" : "y";
    m.node("Div", {"d", "sd"}, {last});
    if (c.gamma) {
      m.initializer("g", g);
      m.node("Mul", {last, "g"}, {c.beta ? "ng" : "y"});
      last = "ng";
    }
    if (c.beta) {
      m.initializer("b", b);
      m.node("Add", {c.gamma ? "ng" : "n", "b"}, {"y"});
    }
    Tensor x = random_tensor(c.x, rng, -3, 5);
    auto r = check_same(m, {{"x", x}});
    const bool fused = r.ops.size() == 1 && r.ops[0].find("ReduceMean+Sub") == 0;
    EXPECT_EQ(fused, c.fuses) << ::testing::PrintToString(r.ops);
    if (c.fuses) {
      EXPECT_NE(r.plan_json.find("norm_rows"), std::string::npos);  // the LayerNormalization kernel
      EXPECT_LE(rel_error(r.out.at("y"), reference::normalize_rows(x, axis, 1e-5, c.gamma ? &g : nullptr, c.beta ? &b : nullptr)),
                1e-5);
    }
  }
  // The centred value also a graph output: not fused, same numbers.
  ModelBuilder m(13);
  m.input("x", DType::Float32, {4, 8}).output("y").output("d");
  m.initializer("eps", scalar_tensor(1e-5f)).initializer("two", scalar_tensor(2.f));
  attr_ints(m.node("ReduceMean", {"x"}, {"mean"}), "axes", {-1});
  m.node("Sub", {"x", "mean"}, {"d"});
  m.node("Pow", {"d", "two"}, {"sq"});
  attr_ints(m.node("ReduceMean", {"sq"}, {"var"}), "axes", {-1});
  m.node("Add", {"var", "eps"}, {"ve"});
  m.node("Sqrt", {"ve"}, {"sd"});
  m.node("Div", {"d", "sd"}, {"y"});
  Tensor x = random_tensor({4, 8}, rng);
  auto r = check_same(m, {{"x", x}});
  EXPECT_GT(r.ops.size(), 1u);
  EXPECT_LE(rel_error(r.out.at("y"), reference::normalize_rows(x, 1, 1e-5, nullptr, nullptr)), 1e-5);
}

TEST(Planner, BitIdenticalWithAndWithoutMemoryPlanning) {
  std::mt19937 rng(9);
  ModelBuilder m(13);
  m.input("x", DType::Float32, {1, 3, 16, 16}).output("y").output("mid");
  m.initializer("w1", conv_weight(rng, 8, 3, 3)).initializer("w2", conv_weight(rng, 8, 8, 3));
  attr_ints(m.node("Conv", {"x", "w1"}, {"a"}), "pads", {1, 1, 1, 1});
  m.node("Sigmoid", {"a"}, {"b"});
  m.node("Exp", {"b"}, {"mid"});
  attr_ints(m.node("Conv", {"b", "w2"}, {"c"}), "pads", {1, 1, 1, 1});
  m.node("Tanh", {"c"}, {"d"});
  m.node("Add", {"d", "b"}, {"e"});
  m.node("Abs", {"e"}, {"f"});
  m.node("Flatten", {"f"}, {"y"});
  std::map<std::string, Tensor> feeds{{"x", random_tensor({1, 3, 16, 16}, rng)}};
  for (int level : {0, 1}) {
    Result on = run(m, feeds, level, true), off = run(m, feeds, level, false);
    for (auto& [name, t] : off.out) EXPECT_EQ(on.out.at(name).bytes, t.bytes) << name << " at -O" << level;
    EXPECT_NE(on.plan_json.find("\"memory_planned\": true"), std::string::npos);
    EXPECT_NE(off.plan_json.find("\"memory_planned\": false"), std::string::npos);
  }
}

// The planner's tensors are sub-buffers of one arena, dropped in whatever order the plan's vectors
// go; the driver sees them released last-created first (NVIDIA's 580 driver crashes otherwise when
// they overlap: cl_runtime.hpp). Also checks that the bytes written through overlapping
// sub-buffers land where they should.
TEST(Planner, SubBuffersReleasedLastCreatedFirst) {
  oi::ClRuntime rt(oi::select_device(""), "off", nullptr);
  const size_t align = std::max<size_t>(rt.base_addr_align(), 4);
  oi::BufferPtr arena = rt.alloc(4 * align);
  oi::BufferPtr a = rt.sub_buffer(arena, 0, 3 * align), b = rt.sub_buffer(arena, align, 3 * align),
                c = rt.sub_buffer(arena, 2 * align, align);
  const cl_mem b_mem = b->mem, c_mem = c->mem;
  std::vector<unsigned char> ones(3 * align, 1), twos(3 * align, 2), back(4 * align);
  ASSERT_EQ(clEnqueueWriteBuffer(rt.queue(), a->mem, CL_TRUE, 0, ones.size(), ones.data(), 0, nullptr, nullptr), CL_SUCCESS);
  ASSERT_EQ(clEnqueueWriteBuffer(rt.queue(), b->mem, CL_TRUE, 0, twos.size(), twos.data(), 0, nullptr, nullptr), CL_SUCCESS);
  ASSERT_EQ(clEnqueueReadBuffer(rt.queue(), arena->mem, CL_TRUE, 0, back.size(), back.data(), 0, nullptr, nullptr), CL_SUCCESS);
  EXPECT_EQ(back[0], 1);
  EXPECT_EQ(back[align], 2);
  EXPECT_EQ(back[4 * align - 1], 2);
  a.reset();  // created first, dropped first: kept until b and c go
  ASSERT_EQ(arena->subs.size(), 3u);
  EXPECT_TRUE(arena->subs[0].released);
  cl_uint refs = 0;
  EXPECT_EQ(clGetMemObjectInfo(c_mem, CL_MEM_REFERENCE_COUNT, sizeof refs, &refs, nullptr), CL_SUCCESS);
  EXPECT_EQ(refs, 1u);
  c.reset();  // the last created: released at once
  ASSERT_EQ(arena->subs.size(), 2u);
  EXPECT_EQ(arena->subs[1].mem, b_mem);
  EXPECT_FALSE(arena->subs[1].released);
  b.reset();  // takes a with it
  EXPECT_TRUE(arena->subs.empty());
}

TEST(Planner, ConcatInputsAreWrittenInPlace) {
  // A SqueezeNet fire module: two convs whose outputs only feed the Concat.
  std::mt19937 rng(10);
  ModelBuilder m(13);
  m.input("x", DType::Float32, {1, 8, 12, 12}).output("y");
  m.initializer("w1", conv_weight(rng, 32, 8, 1)).initializer("w3", conv_weight(rng, 32, 8, 3));
  m.node("Conv", {"x", "w1"}, {"a"});
  m.node("Relu", {"a"}, {"ar"});
  attr_ints(m.node("Conv", {"x", "w3"}, {"b"}), "pads", {1, 1, 1, 1});
  m.node("Relu", {"b"}, {"br"});
  attr_i(m.node("Concat", {"ar", "br"}, {"c"}), "axis", 1);
  m.node("Sigmoid", {"c"}, {"y"});
  std::map<std::string, Tensor> feeds{{"x", random_tensor({1, 8, 12, 12}, rng)}};
  Result planned = run(m, feeds, 1, true), unplanned = run(m, feeds, 1, false), ref = run(m, feeds, 0, false);
  EXPECT_NE(planned.plan_json.find("\"concat_inputs_in_place\": 2"), std::string::npos) << planned.plan_json;
  EXPECT_EQ(planned.out.at("y").bytes, unplanned.out.at("y").bytes);
  EXPECT_LE(rel_error(planned.out.at("y"), ref.out.at("y")), 1e-5);
}

TEST(Planner, ContiguousSliceAndSplitAreViews) {
  std::mt19937 rng(12);
  ModelBuilder m(13);
  m.input("x", DType::Float32, {1, 64, 6, 8}).output("y").output("z");
  m.node("Sigmoid", {"x"}, {"s"});
  // Channel halves of an N=1 tensor are contiguous runs (a ShuffleNet-style split).
  attr_i(m.node("Split", {"s"}, {"a", "b"}), "axis", 1);
  m.node("Tanh", {"a"}, {"ta"});
  m.node("Exp", {"b"}, {"eb"});
  m.node("Add", {"ta", "eb"}, {"y"});
  Tensor starts(DType::Int64, {1}), ends(DType::Int64, {1}), axes(DType::Int64, {1});
  starts.data<int64_t>()[0] = 16;
  ends.data<int64_t>()[0] = 48;
  axes.data<int64_t>()[0] = 1;
  m.initializer("starts", starts).initializer("ends", ends).initializer("axes", axes);
  m.node("Slice", {"s", "starts", "ends", "axes"}, {"c"});
  m.node("Relu", {"c"}, {"z"});
  std::map<std::string, Tensor> feeds{{"x", random_tensor({1, 64, 6, 8}, rng)}};
  Result planned = run(m, feeds, 1, true), unplanned = run(m, feeds, 1, false);
  EXPECT_NE(planned.plan_json.find("\"slice_views\": 3"), std::string::npos) << planned.plan_json;
  for (auto& [name, t] : unplanned.out) EXPECT_EQ(planned.out.at(name).bytes, t.bytes) << name;
}

}  // namespace
