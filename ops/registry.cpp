// The operator registry: a plain table of rows keyed by (domain, op type, since_version), filled
// once from each op family's file.
#include <algorithm>
#include <map>

#include "ops/core/op_def.hpp"

namespace oi {

// Each family file appends its rows.
void add_elementwise_ops(std::vector<OpDef>& t);
void add_tensor_ops(std::vector<OpDef>& t);
void add_conv_ops(std::vector<OpDef>& t);
void add_gemm_ops(std::vector<OpDef>& t);
void add_pool_ops(std::vector<OpDef>& t);
void add_norm_ops(std::vector<OpDef>& t);
void add_reduce_ops(std::vector<OpDef>& t);
void add_resize_ops(std::vector<OpDef>& t);
void add_quant_ops(std::vector<OpDef>& t);
void add_scatter_ops(std::vector<OpDef>& t);
void add_topk_ops(std::vector<OpDef>& t);
void add_sample_ops(std::vector<OpDef>& t);
void add_einsum_ops(std::vector<OpDef>& t);
void add_dynamic_ops(std::vector<OpDef>& t);
void add_control_ops(std::vector<OpDef>& t);
void add_rnn_ops(std::vector<OpDef>& t);
void add_sequence_ops(std::vector<OpDef>& t);
void add_text_ops(std::vector<OpDef>& t);
void add_loss_ops(std::vector<OpDef>& t);
void add_audio_ops(std::vector<OpDef>& t);
void add_linalg_ops(std::vector<OpDef>& t);
void add_random_ops(std::vector<OpDef>& t);
void add_attention_ops(std::vector<OpDef>& t);
void add_llm_ops(std::vector<OpDef>& t);

namespace {

const std::vector<OpDef>& table() {
  static const std::vector<OpDef> rows = [] {
    std::vector<OpDef> t;
    add_elementwise_ops(t);
    add_tensor_ops(t);
    add_conv_ops(t);
    add_gemm_ops(t);
    add_pool_ops(t);
    add_norm_ops(t);
    add_reduce_ops(t);
    add_resize_ops(t);
    add_quant_ops(t);
    add_scatter_ops(t);
    add_topk_ops(t);
    add_sample_ops(t);
    add_einsum_ops(t);
    add_dynamic_ops(t);
    add_control_ops(t);
    add_rnn_ops(t);
    add_sequence_ops(t);
    add_text_ops(t);
    add_loss_ops(t);
    add_audio_ops(t);
    add_linalg_ops(t);
    add_random_ops(t);
    add_attention_ops(t);
    add_llm_ops(t);
    return t;
  }();
  return rows;
}

std::string canonical_domain(const std::string& d) { return d == "ai.onnx" ? "" : d; }

// The ONNX schema versions after opset 18 of the default-domain operators this registry
// implements, up to kMaxOpset (onnx 1.23's onnx.defs.get_all_schemas_with_history()), except the
// versions a registry row implements itself (Gelu-20, Attention-23/24/25, ...). `change`
// names what a version changed beyond new element types; nullptr: only new element types
// (bfloat16, float8, 4-bit, strings, bool), which the operators' dtype checks refuse where they
// do not run them, and documentation. A version with a change runs only where the operator has a
// row for it or a later one; else a node of it, in a model importing that opset or a newer one,
// is an unsupported operator (schema_change says why), never run with the older semantics.
struct NewerSchema {
  const char* op;
  int version;
  const char* change;
};
constexpr NewerSchema kNewerSchemas[] = {
    {"Acos", 22, nullptr}, {"Acosh", 22, nullptr}, {"Asin", 22, nullptr}, {"Asinh", 22, nullptr},
    {"Atan", 22, nullptr}, {"Atanh", 22, nullptr},
    {"AveragePool", 19, "the dilations attribute"}, {"AveragePool", 22, nullptr},
    {"Bernoulli", 22, nullptr},
    {"Cast", 19, nullptr}, {"Cast", 21, nullptr}, {"Cast", 23, nullptr}, {"Cast", 24, nullptr}, {"Cast", 25, nullptr},
    {"CastLike", 19, nullptr}, {"CastLike", 21, nullptr}, {"CastLike", 23, nullptr}, {"CastLike", 24, nullptr},
    {"CastLike", 25, nullptr},
    {"Constant", 19, nullptr}, {"Constant", 21, nullptr}, {"Constant", 23, nullptr}, {"Constant", 24, nullptr},
    {"Constant", 25, nullptr},
    {"ConstantOfShape", 20, nullptr}, {"ConstantOfShape", 21, nullptr}, {"ConstantOfShape", 23, nullptr},
    {"ConstantOfShape", 24, nullptr}, {"ConstantOfShape", 25, nullptr},
    {"Conv", 22, nullptr}, {"ConvTranspose", 22, nullptr}, {"Cos", 22, nullptr}, {"Cosh", 22, nullptr},
    {"DFT", 20, "the axis as an input"},
    {"DequantizeLinear", 19, nullptr}, {"DequantizeLinear", 21, "blocked quantization (block_size)"},
    {"DequantizeLinear", 23, "the output_dtype attribute"}, {"DequantizeLinear", 24, nullptr},
    {"DequantizeLinear", 25, nullptr},
    {"Det", 22, nullptr}, {"Dropout", 22, nullptr}, {"Elu", 22, nullptr}, {"Equal", 19, nullptr},
    {"EyeLike", 22, nullptr},
    {"Flatten", 21, nullptr}, {"Flatten", 23, nullptr}, {"Flatten", 24, nullptr}, {"Flatten", 25, nullptr},
    {"GRU", 22, nullptr}, {"GlobalAveragePool", 22, nullptr}, {"GlobalLpPool", 22, nullptr},
    {"GlobalMaxPool", 22, nullptr},
    {"GridSample", 20, "the modes linear and cubic and N-D grids"}, {"GridSample", 22, nullptr},
    {"HardSigmoid", 22, nullptr}, {"HardSwish", 22, nullptr},
    {"Identity", 19, nullptr}, {"Identity", 21, nullptr}, {"Identity", 23, nullptr}, {"Identity", 24, nullptr},
    {"Identity", 25, nullptr},
    {"If", 19, nullptr}, {"If", 21, nullptr}, {"If", 23, nullptr}, {"If", 24, nullptr}, {"If", 25, nullptr},
    {"InstanceNormalization", 22, nullptr}, {"IsInf", 20, nullptr}, {"IsNaN", 20, nullptr},
    {"LSTM", 22, nullptr},
    {"Loop", 19, nullptr}, {"Loop", 21, nullptr}, {"Loop", 23, nullptr}, {"Loop", 24, nullptr}, {"Loop", 25, nullptr},
    {"LpNormalization", 22, nullptr}, {"LpPool", 22, nullptr}, {"MaxPool", 22, nullptr}, {"MaxUnpool", 22, nullptr},
    {"Mish", 22, nullptr},
    {"NegativeLogLikelihoodLoss", 22, nullptr},
    {"Pad", 19, "the wrap mode"}, {"Pad", 21, nullptr}, {"Pad", 23, nullptr}, {"Pad", 24, nullptr},
    {"Pad", 25, nullptr},
    {"QLinearMatMul", 21, nullptr},
    {"QuantizeLinear", 19, nullptr}, {"QuantizeLinear", 21, "blocked quantization and output_dtype"},
    {"QuantizeLinear", 23, "the precision attribute"}, {"QuantizeLinear", 24, nullptr},
    {"QuantizeLinear", 25, nullptr},
    {"RNN", 22, nullptr}, {"RandomNormal", 22, nullptr}, {"RandomNormalLike", 22, nullptr},
    {"RandomUniform", 22, nullptr}, {"RandomUniformLike", 22, nullptr},
    {"ReduceMax", 20, nullptr}, {"ReduceMin", 20, nullptr},
    {"Reshape", 19, nullptr}, {"Reshape", 21, nullptr}, {"Reshape", 23, nullptr}, {"Reshape", 24, nullptr},
    {"Reshape", 25, nullptr},
    {"Resize", 19, "the half_pixel_symmetric coordinate transformation"},
    {"RoiAlign", 22, nullptr}, {"Round", 22, nullptr},
    {"Scan", 19, nullptr}, {"Scan", 21, nullptr}, {"Scan", 23, nullptr}, {"Scan", 24, nullptr}, {"Scan", 25, nullptr},
    {"Selu", 22, nullptr},
    {"Shape", 19, nullptr}, {"Shape", 21, nullptr}, {"Shape", 23, nullptr}, {"Shape", 24, nullptr},
    {"Shape", 25, nullptr},
    {"Sin", 22, nullptr}, {"Sinh", 22, nullptr},
    {"Size", 19, nullptr}, {"Size", 21, nullptr}, {"Size", 23, nullptr}, {"Size", 24, nullptr}, {"Size", 25, nullptr},
    {"Softplus", 22, nullptr}, {"Softsign", 22, nullptr}, {"SplitToSequence", 24, nullptr},
    {"Squeeze", 21, nullptr}, {"Squeeze", 23, nullptr}, {"Squeeze", 24, nullptr}, {"Squeeze", 25, nullptr},
    {"Tan", 22, nullptr}, {"ThresholdedRelu", 22, nullptr}, {"TopK", 24, nullptr},
    {"Transpose", 21, nullptr}, {"Transpose", 23, nullptr}, {"Transpose", 24, nullptr},
    {"Transpose", 25, nullptr},
    {"Unsqueeze", 21, nullptr}, {"Unsqueeze", 23, nullptr}, {"Unsqueeze", 24, nullptr},
    {"Unsqueeze", 25, nullptr},
};

// The newest row for (domain, op_type) at `opset`, ignoring newer schema versions.
const OpDef* newest_row(const std::string& dom, const std::string& op_type, int64_t opset) {
  const OpDef* best = nullptr;
  for (const OpDef& d : table())
    if (d.domain == dom && op_type == d.op_type && d.since_version <= opset &&
        (!best || d.since_version > best->since_version))
      best = &d;
  return best;
}

// The first schema version after `row` and up to `opset` that changed more than element types
// (nullptr: none).
const NewerSchema* unimplemented_change(const OpDef& row, int64_t opset) {
  if (!row.domain.empty()) return nullptr;
  const NewerSchema* first = nullptr;
  for (const NewerSchema& s : kNewerSchemas)
    if (s.change && row.op_type == s.op && s.version > row.since_version && s.version <= opset &&
        (!first || s.version < first->version))
      first = &s;
  return first;
}

}  // namespace

const OpDef* find_op(const std::string& domain, const std::string& op_type, int64_t opset) {
  const OpDef* best = newest_row(canonical_domain(domain), op_type, opset);
  return best && !unimplemented_change(*best, opset) ? best : nullptr;
}

std::string schema_change(const std::string& domain, const std::string& op_type, int64_t opset) {
  const OpDef* best = newest_row(canonical_domain(domain), op_type, opset);
  if (!best) return "";
  const NewerSchema* s = unimplemented_change(*best, opset);
  return s ? op_type + "-" + std::to_string(s->version) + " (" + s->change + ") is not implemented" : "";
}

const OpDef* find_op(const Graph& g, const Node& n) {
  return find_op(n.domain, n.op_type, g.opset(n.domain));
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> r;
  for (const OpDef& d : table()) r.push_back(d.domain.empty() ? d.op_type : d.domain + "." + d.op_type);
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

std::vector<OpCatalogRow> op_catalog() {
  std::map<std::pair<std::string, std::string>, OpCatalogRow> rows;
  for (const OpDef& d : table()) {
    OpCatalogRow& r = rows[{d.domain, d.op_type}];
    r.domain = d.domain;
    r.op_type = d.op_type;
    if (r.since_versions.empty() || d.since_version > r.since_versions.back()) r.traits = d.traits;
    r.since_versions.push_back(d.since_version);
    r.has_kernel |= d.build_fn != nullptr;
  }
  std::vector<OpCatalogRow> out;
  for (auto& [key, r] : rows) {
    std::sort(r.since_versions.begin(), r.since_versions.end());
    r.since_versions.erase(std::unique(r.since_versions.begin(), r.since_versions.end()), r.since_versions.end());
    if (r.domain.empty()) {
      r.max_opset = kMaxOpset;
      if (const OpDef* newest = newest_row("", r.op_type, kMaxOpset))
        if (const NewerSchema* s = unimplemented_change(*newest, kMaxOpset)) r.max_opset = s->version - 1;
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace oi
