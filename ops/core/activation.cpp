#include "ops/core/activation.hpp"

#include <cmath>
#include <limits>

#include "runtime/ir/host_math.hpp"

namespace oi {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double hard_sigmoid(double x, double a, double b) { return std::max(0.0, std::min(1.0, a * x + b)); }

// The host formulas follow the kernel macros in kernels/activation.cl.
const ActivationDef kRows[] = {
    // name, onnx op, since, kernel macro, alpha, beta, integers, vector_exact, host
    {"Relu", "Relu", 1, "RELU", {}, {}, true, true,
     [](double x, double, double) { return x < 0 ? 0.0 : x; }},
    {"Clip", "Clip", 1, "CLIP", {"min", -kInf}, {"max", kInf}, false, true,
     [](double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }},
    {"LeakyRelu", "LeakyRelu", 1, "LEAKYRELU", {"alpha", 0.01f}, {}, false, false,
     [](double x, double a, double) { return x < 0 ? a * x : x; }},
    {"Sigmoid", "Sigmoid", 1, "SIGMOID", {}, {}, false, false,
     [](double x, double, double) { return sigmoid(x); }, "sigmoid_fast"},
    {"Tanh", "Tanh", 1, "TANH", {}, {}, false, false, [](double x, double, double) { return std::tanh(x); }},
    {"HardSigmoid", "HardSigmoid", 1, "HARDSIGMOID", {"alpha", 0.2f}, {"beta", 0.5f}, false, false,
     hard_sigmoid},
    // HardSwish has no attributes: alpha and beta are fixed (x * HardSigmoid(x) with 1/6, 1/2);
    // the decomposed pattern x * HardSigmoid(x) carries its own.
    {"HardSwish", "HardSwish", 14, "HARDSWISH", {nullptr, 1.0f / 6}, {nullptr, 0.5f}, false, false,
     [](double x, double a, double b) { return x * hard_sigmoid(x, a, b); }},
    {"Elu", "Elu", 1, "ELU", {"alpha", 1.0f}, {}, false, false,
     [](double x, double a, double) { return x < 0 ? a * (std::exp(x) - 1) : x; }},
    {"Celu", "Celu", 12, "CELU", {"alpha", 1.0f}, {}, false, false,
     [](double x, double a, double) { return std::max(0.0, x) + std::min(0.0, a * (std::exp(x / a) - 1)); }},
    {"Selu", "Selu", 1, "SELU", {"alpha", 1.67326319217681884765625f}, {"gamma", 1.05070102214813232421875f},
     false, false, [](double x, double a, double g) { return x <= 0 ? g * (a * std::exp(x) - a) : g * x; }},
    {"Softplus", "Softplus", 1, "SOFTPLUS", {}, {}, false, false,
     [](double x, double, double) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }},
    {"Softsign", "Softsign", 1, "SOFTSIGN", {}, {}, false, false,
     [](double x, double, double) { return x / (1 + std::fabs(x)); }},
    {"ThresholdedRelu", "ThresholdedRelu", 10, "THRESHOLDEDRELU", {"alpha", 1.0f}, {}, false, false,
     [](double x, double a, double) { return x > a ? x : 0.0; }},
    // Shrink takes integers too: the macro then computes in float and the store truncates, as
    // ONNX Runtime does (static_cast<T>(x + bias) with a float bias).
    {"Shrink", "Shrink", 9, "SHRINK", {"lambd", 0.5f}, {"bias", 0.0f}, true, false,
     [](double x, double l, double b) { return x < -l ? x + b : x > l ? x - b : 0.0; }},
    {"Mish", "Mish", 18, "MISH", {}, {}, false, false, [](double x, double, double) {
       return x * std::tanh(x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)));
     }},
    {"Swish", "Swish", 24, "SWISH", {"alpha", 1.0f}, {}, false, false,
     [](double x, double a, double) { return x * sigmoid(a * x); }},
    // x * Sigmoid(x): a fused pattern only (Swish with alpha 1).
    {"Silu", nullptr, 0, "SILU", {}, {}, false, false, [](double x, double, double) { return x * sigmoid(x); },
     "silu_fast"},
    // Gelu-20 (approximate "none"), also the fused Erf form; with approximate "tanh" the node is
    // GeluTanh (activation_of_node).
    {"Gelu", "Gelu", 20, "GELU", {}, {}, false, false,
     [](double x, double, double) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, "gelu_fast"},
    {"GeluTanh", nullptr, 0, "GELU_TANH", {}, {}, false, false, [](double x, double, double) {
       return 0.5 * x * (1 + std::tanh(std::sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
     }},
    {nullptr, nullptr, 0, nullptr, {}, {}, false, false, nullptr},
};

// The scalar value of a constant input, or NaN.
double scalar_input(const Graph& g, const Node& n, size_t k) {
  if (k >= n.inputs.size() || n.inputs[k] < 0) return NAN;
  const Value& v = g.values[n.inputs[k]];
  if (!v.data || numel(v.shape) != 1) return NAN;
  return host_get_f(*v.data, 0);
}

}  // namespace

const ActivationDef* activations() { return kRows; }

const ActivationDef* activation_for_op(const std::string& op_type) {
  for (const ActivationDef* a = kRows; a->name; ++a)
    if (a->onnx_op && op_type == a->onnx_op) return a;
  return nullptr;
}

const ActivationDef* activation_named(const std::string& name) {
  for (const ActivationDef* a = kRows; a->name; ++a)
    if (name == a->name) return a;
  return nullptr;
}

bool activation_of_node(const Graph& g, const Node& n, Epilogue* e) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return false;
  const ActivationDef* a = activation_for_op(n.op_type);
  if (!a || g.opset(n.domain) < a->since_version) return false;
  if (n.op_type == "Gelu") {
    const std::string approx = n.attr_string("approximate", "none");
    if (approx == "tanh") a = activation_named("GeluTanh");
    else if (approx != "none") return false;
  }
  double alpha = a->alpha.attr ? n.attr_float(a->alpha.attr, a->alpha.def) : a->alpha.def;
  double beta = a->beta.attr ? n.attr_float(a->beta.attr, a->beta.def) : a->beta.def;
  if (n.op_type == "Clip" && g.opset(n.domain) >= 11) {
    // Opset 11 moved min and max from attributes to optional inputs: they must be constants.
    alpha = -kInf;
    beta = kInf;
    if (n.inputs.size() > 1 && n.inputs[1] >= 0) alpha = scalar_input(g, n, 1);
    if (n.inputs.size() > 2 && n.inputs[2] >= 0) beta = scalar_input(g, n, 2);
    if (std::isnan(alpha) || std::isnan(beta)) return false;
  } else {
    // Every other activation has one data input.
    for (size_t k = 1; k < n.inputs.size(); ++k)
      if (n.inputs[k] >= 0) return false;
  }
  // Clip with min > max sets every value to max (Clip-11 and later say so; Clip-6 is the same
  // min(max(x, min), max)). The kernels clamp as x < min ? min : x > max ? max : x, which gives min
  // below it; with min lowered to max both give max, and NaN still passes.
  if (n.op_type == "Clip" && alpha > beta) alpha = beta;
  e->act = a;
  e->alpha = static_cast<float>(alpha);
  e->beta = static_cast<float>(beta);
  return true;
}

}  // namespace oi
