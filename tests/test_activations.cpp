// Every row of the activation table (ops/core/activation.hpp), as a plain ONNX op and fused into a
// conv's epilogue, against reference formulas written out here from the ONNX definitions with
// <cmath>, independent of the table: a wrong row cannot pass its own test. A new row without a
// reference below fails the test.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "ops/core/activation.hpp"
#include "tests/model_builder.hpp"
#include "tests/reference_ops.hpp"

using namespace testing_util;

namespace {

struct Reference {
  int opset;  // to run the op at
  std::vector<std::pair<std::string, float>> attrs;
  std::function<double(double)> f;
};

// The ONNX definitions, with the attribute values the test sets (not the defaults, so that a row
// reading the wrong attribute fails).
const std::map<std::string, Reference>& references() {
  static const std::map<std::string, Reference> r = {
      {"Relu", {13, {}, [](double x) { return std::max(x, 0.0); }}},
      {"LeakyRelu", {13, {{"alpha", 0.15f}}, [](double x) { return x < 0 ? 0.15f * x : x; }}},
      {"Sigmoid", {13, {}, [](double x) { return 1 / (1 + std::exp(-x)); }}},
      {"Tanh", {13, {}, [](double x) { return std::tanh(x); }}},
      {"HardSigmoid", {13, {{"alpha", 0.3f}, {"beta", 0.4f}}, [](double x) { return std::clamp(0.3f * x + 0.4f, 0.0, 1.0); }}},
      {"HardSwish", {14, {}, [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); }}},
      {"Elu", {13, {{"alpha", 0.7f}}, [](double x) { return x < 0 ? 0.7f * (std::exp(x) - 1) : x; }}},
      {"Celu", {13, {{"alpha", 1.5f}}, [](double x) { return std::max(0.0, x) + std::min(0.0, 1.5f * (std::exp(x / 1.5f) - 1)); }}},
      {"Selu", {13, {{"alpha", 1.5f}, {"gamma", 1.2f}}, [](double x) { return x > 0 ? 1.2f * x : 1.2f * (1.5f * std::exp(x) - 1.5f); }}},
      {"Softplus", {13, {}, [](double x) { return std::log(1 + std::exp(x)); }}},
      {"Softsign", {13, {}, [](double x) { return x / (1 + std::fabs(x)); }}},
      {"ThresholdedRelu", {13, {{"alpha", 0.5f}}, [](double x) { return x > 0.5f ? x : 0.0; }}},
      {"Shrink", {9, {{"lambd", 1.25f}, {"bias", 0.75f}}, [](double x) { return x < -1.25 ? x + 0.75f : x > 1.25 ? x - 0.75f : 0.0; }}},
      // Clip's bounds are inputs from opset 11.
      {"Clip", {13, {}, [](double x) { return std::clamp(x, -0.5, 2.5); }}},
      {"Mish", {18, {}, [](double x) { return x * std::tanh(std::log(1 + std::exp(x))); }}},
      {"Swish", {24, {{"alpha", 0.7f}}, [](double x) { return x / (1 + std::exp(-0.7f * x)); }}},
      // A fused pattern only (x * Sigmoid(x)): see FusedPatterns below.
      {"Silu", {13, {}, [](double x) { return x / (1 + std::exp(-x)); }}},
      // Gelu-20, also fused from its Erf form (FusedPatterns); GeluTanh is Gelu with approximate "tanh".
      {"Gelu", {20, {}, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }}},
      {"GeluTanh", {20, {}, [](double x) {
         return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
       }}},
  };
  return r;
}

// The ONNX op type that applies a row ("" for fused patterns only).
std::string op_of(const oi::ActivationDef* a) {
  if (a->onnx_op) return a->onnx_op;
  return std::string(a->name) == "GeluTanh" ? "Gelu" : "";
}

// Adds the activation node of row `row` reading `in` and writing `out`.
void add_activation(ModelBuilder& m, const std::string& row, const Reference& ref, const std::string& in,
                    const std::string& out) {
  const std::string op = row == "GeluTanh" ? "Gelu" : row == "Clip" ? "Clip" : op_of(oi::activation_named(row));
  if (op == "Clip") {
    Tensor lo(DType::Float32, {}), hi(DType::Float32, {});
    lo.data<float>()[0] = -0.5f;
    hi.data<float>()[0] = 2.5f;
    m.initializer("lo", lo).initializer("hi", hi);
    m.node("Clip", {in, "lo", "hi"}, {out});
    return;
  }
  auto& n = m.node(op, {in}, {out});
  for (auto& [a, v] : ref.attrs) attr_f(n, a, v);
  if (row == "GeluTanh") attr_s(n, "approximate", "tanh");
}

struct Outcome {
  std::map<std::string, Tensor> out;
  std::string graph_json;
};

Outcome run(const ModelBuilder& m, const std::map<std::string, Tensor>& feeds, int level) {
  ocl_infer::SessionOptions opt;
  opt.optimization_level = level;
  auto s = open_session(m, opt);
  Outcome r;
  r.out = s.run(feeds);
  r.graph_json = s.dump("graph.json");
  return r;
}

TEST(Activations, EveryRowHasAReference) {
  for (const oi::ActivationDef* a = oi::activations(); a->name; ++a)
    EXPECT_TRUE(references().count(a->name)) << "activation '" << a->name << "' has no reference formula in this test";
}

TEST(Activations, ElementwiseMatchesReference) {
  // -8..8 in small steps, plus large magnitudes where naive formulas overflow.
  std::vector<float> xs;
  for (float x = -8.f; x <= 8.f; x += 0.0625f) xs.push_back(x);
  for (float x : {-90.f, -50.f, -20.f, 20.f, 50.f, 90.f, 0.0f, -0.0f}) xs.push_back(x);
  // 265 values (one per work-item), then, for rows with vector functions such as Sigmoid, 272
  // (chunks of 16 per work-item: ew_unary_chunk applies them to whole vectors).
  for (float x : {0x1p-10f, -0x1p-10f, 87.5f, -87.5f, 3.25f, -3.25f, 0.375f, 100.f, -100.f}) {  // exact in fp16
    if (xs.size() % 16 == 0) break;
    xs.push_back(x);
  }
  for (const int64_t n : {int64_t{265}, static_cast<int64_t>(xs.size())}) {
    for (const oi::ActivationDef* a = oi::activations(); a->name; ++a) {
      if (op_of(a).empty() || !references().count(a->name)) continue;
      if (n % 16 == 0 && !a->vector_fn) continue;  // the chunk case is for the vector functions
      const Reference& ref = references().at(a->name);
      ModelBuilder m(ref.opset);
      m.input("x", DType::Float32, {n}).output("y");
      add_activation(m, a->name, ref, "x", "y");
      Tensor x = make_tensor(DType::Float32, {n}, xs.data());
      Tensor want = reference::unary(x, ref.f);
      for (int level : {0, 1}) {
        if (fp16_sampled_out(level + static_cast<int>(a - oi::activations()))) continue;
        Tensor got = run(m, {{"x", x}}, level).out.at("y");
        for (int64_t i = 0; i < n; ++i) {
          const double w = want.data<float>()[i], g = got.data<float>()[i];
          // fp16 mode: the output is stored once as float16 (one rounding of w on top).
          const double storage = fp16_mode() ? half_rounding(w) : 0.0;
          EXPECT_NEAR(g, w, 2e-6 * std::max(1.0, std::fabs(w)) + storage) << a->name << "(" << xs[i] << ")";
        }
      }
    }
  }
}

// Every row folded on the host: the activation of a constant is computed at plan time (no kernel
// left in the graph) with the same formula.
TEST(Activations, FoldedMatchesReference) {
  std::vector<float> xs;
  for (float x = -4.f; x <= 4.f; x += 0.125f) xs.push_back(x);
  const int64_t n = static_cast<int64_t>(xs.size());
  Tensor x = make_tensor(DType::Float32, {n}, xs.data());
  for (const oi::ActivationDef* a = oi::activations(); a->name; ++a) {
    // Clip's row in ops/elementwise.cpp (run-time bounds, integers) has no host evaluation.
    if (op_of(a).empty() || !references().count(a->name) || std::string(a->name) == "Clip") continue;
    const Reference& ref = references().at(a->name);
    ModelBuilder m(ref.opset);
    m.input("z", DType::Float32, {n}).output("y").initializer("x", x);
    add_activation(m, a->name, ref, "x", "c");
    m.node("Add", {"c", "z"}, {"y"});
    Tensor zero(DType::Float32, {n});
    Outcome r = run(m, {{"z", zero}}, 1);
    const std::string nodes = r.graph_json.substr(0, r.graph_json.find("\"stats\""));
    EXPECT_EQ(nodes.find("\"" + op_of(a) + "\""), std::string::npos) << a->name << " was not folded: " << nodes;
    EXPECT_NE(nodes.find("\"Add\""), std::string::npos) << nodes;
    Tensor want = reference::unary(x, ref.f);
    const Tensor& got = r.out.at("y");
    for (int64_t i = 0; i < n; ++i) {
      const double w = want.data<float>()[i];
      EXPECT_NEAR(got.data<float>()[i], w, 2e-6 * std::max(1.0, std::fabs(w)) + (fp16_mode() ? half_rounding(w) : 0.0))
          << a->name << "(" << xs[i] << ") folded";
    }
  }
}

// Shrink is defined for integers: computed in float, truncated when stored (as ONNX Runtime).
TEST(Activations, ShrinkOnIntegers) {
  const std::vector<int32_t> xs = {-7, -3, -2, -1, 0, 1, 2, 3, 9, 100000, -100000};
  const int64_t n = static_cast<int64_t>(xs.size());
  std::vector<int32_t> want;
  for (int32_t v : xs) want.push_back(v < -1.5 ? static_cast<int32_t>(v + 2.5) : v > 1.5 ? static_cast<int32_t>(v - 2.5) : 0);
  for (bool folded : {false, true}) {
    ModelBuilder m(9);
    Tensor x = make_tensor(DType::Int32, {n}, xs.data());
    if (folded) {
      m.input("z", DType::Int32, {n}).initializer("x", x).output("y");
      auto& s = m.node("Shrink", {"x"}, {"c"});
      attr_f(s, "lambd", 1.5f);
      attr_f(s, "bias", 2.5f);
      m.node("Add", {"c", "z"}, {"y"});
    } else {
      m.input("x", DType::Int32, {n}).output("y");
      auto& s = m.node("Shrink", {"x"}, {"y"});
      attr_f(s, "lambd", 1.5f);
      attr_f(s, "bias", 2.5f);
    }
    Tensor feed = folded ? Tensor(DType::Int32, {n}) : x;
    Tensor got = run_model(m, {{folded ? "z" : "x", feed}}).at("y");
    ASSERT_EQ(got.dtype, DType::Int32);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(got.data<int32_t>()[i], want[i]) << "Shrink(" << xs[i] << ") folded=" << folded;
  }
}

TEST(Activations, FusedIntoConvMatchesReference) {
  std::mt19937 rng(5);
  for (const oi::ActivationDef* a = oi::activations(); a->name; ++a) {
    if (op_of(a).empty() || !references().count(a->name)) continue;
    const Reference& ref = references().at(a->name);
    ModelBuilder m(ref.opset);
    m.input("x", DType::Float32, {1, 3, 9, 7}).output("y");
    Tensor w = random_tensor({8, 3, 3, 3}, rng), b = random_tensor({8}, rng);
    m.initializer("w", w).initializer("b", b);
    attr_ints(m.node("Conv", {"x", "w", "b"}, {"c"}), "pads", {1, 1, 1, 1});
    add_activation(m, a->name, ref, "c", "y");
    Tensor x = random_tensor({1, 3, 9, 7}, rng, -2, 2);
    Tensor want = reference::unary(reference::conv2d(x, w, &b, 1, 1), ref.f);
    Outcome r = run(m, {{"x", x}}, 1);
    EXPECT_LE(testing_util::rel_error(r.out.at("y"), want), 1e-5) << a->name;
    EXPECT_NE(r.graph_json.find("\"ops\": [\"Conv\", \"" + op_of(a) + "\"]"), std::string::npos)
        << a->name << " did not fuse: " << r.graph_json;
  }
}

TEST(Activations, FusedPatterns) {
  std::mt19937 rng(6);
  Tensor w = random_tensor({4, 5}, rng);
  auto scalar = [](float v) {
    Tensor t(DType::Float32, {});
    t.data<float>()[0] = v;
    return t;
  };
  for (const std::string pattern : {"Silu", "Gelu"}) {
    ModelBuilder m(13);
    m.input("a", DType::Float32, {6, 4}).output("y").initializer("w", w);
    m.node("MatMul", {"a", "w"}, {"x"});
    if (pattern == "Silu") {
      m.node("Sigmoid", {"x"}, {"s"});
      m.node("Mul", {"x", "s"}, {"y"});
    } else {
      m.initializer("sqrt2", scalar(1.4142135f)).initializer("one", scalar(1.f)).initializer("half", scalar(0.5f));
      m.node("Div", {"x", "sqrt2"}, {"d"});
      m.node("Erf", {"d"}, {"e"});
      m.node("Add", {"e", "one"}, {"p"});
      m.node("Mul", {"x", "p"}, {"q"});
      m.node("Mul", {"q", "half"}, {"y"});
    }
    Tensor a = random_tensor({6, 4}, rng, -3, 3);
    Tensor want = reference::unary(reference::matmul(a, w), references().at(pattern).f);
    Outcome r = run(m, {{"a", a}}, 1);
    EXPECT_LE(testing_util::rel_error(r.out.at("y"), want), 1e-5) << pattern;
    EXPECT_EQ(r.graph_json.find("\"Erf\"]"), std::string::npos);
  }
}

}  // namespace
