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
    return t;
  }();
  return rows;
}

std::string canonical_domain(const std::string& d) { return d == "ai.onnx" ? "" : d; }

}  // namespace

const OpDef* find_op(const std::string& domain, const std::string& op_type, int64_t opset) {
  const std::string dom = canonical_domain(domain);
  const OpDef* best = nullptr;
  for (const OpDef& d : table())
    if (d.domain == dom && op_type == d.op_type && d.since_version <= opset &&
        (!best || d.since_version > best->since_version))
      best = &d;
  return best;
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
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace oi
