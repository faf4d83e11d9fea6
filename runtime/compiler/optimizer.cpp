#include "runtime/compiler/optimizer.hpp"

#include "ops/core/op_def.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

namespace {

struct PassRow {
  const char* name;
  int (*run)(Graph&, std::string*);
};

// Order matters: QDQ chains become integer kernels first (and leftover DequantizeLinear of
// constants become float constants that later passes can fold); BatchNormalization folds before
// activations fuse, residual adds fuse before the activation that follows them
// (y = act(conv + r)); attention fuses before a mask Add could become a MatMul's residual; constant
// Mul/Add left in front of an unpadded conv (after activations took theirs) fold into its weights
// before a per-image channel scale there becomes the conv's input scale; what is left after a 1x1
// conv becomes that conv's post-activation affine.
const PassRow kPasses[] = {
    {"remove_identity", pass_remove_identity},
    {"dedupe_constants", pass_dedupe_constants},
    {"fuse_qdq", pass_fuse_qdq},
    {"cancel_transposes", pass_cancel_transposes},
    {"fold_pad", pass_fold_pad},
    {"fold_batchnorm", pass_fold_batchnorm},
    {"fuse_layernorm", pass_fuse_layernorm},
    {"fuse_attention", pass_fuse_attention},
    {"fuse_matmul_bias", pass_fuse_matmul_bias},
    {"fuse_residual", pass_fuse_residual},
    {"fuse_activation", pass_fuse_activation},
    {"fold_input_affine", pass_fold_input_affine},
    {"fuse_post_affine", pass_fuse_post_affine},
    {"fuse_channel_scale", pass_fuse_channel_scale},
    {"fuse_plane_mean", pass_fuse_plane_mean},
};

}  // namespace

std::vector<std::string> optimizer_passes() {
  std::vector<std::string> r;
  for (auto& p : kPasses) r.push_back(p.name);
  return r;
}

std::vector<PassReport> optimize(Graph& g, const OptimizerOptions& opt) {
  std::vector<PassReport> reports;
  if (opt.level <= 0) return reports;
  for (auto& p : kPasses) {
    if (opt.disabled.count(p.name)) continue;
    PassReport r;
    r.pass = p.name;
    r.changes = p.run(g, &r.detail);
    reports.push_back(r);
  }
  return reports;
}

void replace_uses(Graph& g, int from, int to) {
  for (auto& n : g.nodes) {
    if (n.removed) continue;
    for (auto& in : n.inputs)
      if (in == from) in = to;
    if (n.epilogue.residual == from) n.epilogue.residual = to;
  }
}

bool is_const_f32(const Graph& g, int v) {
  return v >= 0 && g.values[v].data && g.values[v].dtype == DType::Float32;
}

std::vector<double> per_channel(const Graph& g, int v, int64_t C, size_t out_rank) {
  if (!is_const_f32(g, v)) return {};
  const Tensor& t = *g.values[v].data;
  std::vector<double> r(C);
  if (t.numel() == 1) {
    for (auto& x : r) x = host_get_f(t, 0);
    return r;
  }
  // Shapes like [C,1,1], [1,C,1,1] (rank <= out_rank, channel at axis 1 of the output).
  if (t.shape.size() > out_rank) return {};
  Shape padded(out_rank - t.shape.size(), 1);
  padded.insert(padded.end(), t.shape.begin(), t.shape.end());
  for (size_t d = 0; d < out_rank; ++d)
    if ((d == 1 && padded[d] != C) || (d != 1 && padded[d] != 1)) return {};
  for (int64_t c = 0; c < C; ++c) r[c] = host_get_f(t, c);
  return r;
}

void absorb(Node& into, const Node& absorbed) {
  if (into.covers.empty()) into.covers.push_back({into.name, into.op_type});
  if (absorbed.covers.empty()) into.covers.push_back({absorbed.name, absorbed.op_type});
  else into.covers.insert(into.covers.end(), absorbed.covers.begin(), absorbed.covers.end());
}

}  // namespace oi
