// Graph optimizer: passes that rewrite a resolved Graph (shapes known, constants folded) into a
// smaller one that computes the same numbers. Each pass lives in runtime/compiler/passes/<name>.cpp.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "runtime/ir/graph.hpp"

namespace oi {

struct PassReport {
  std::string pass;
  int changes = 0;
  std::string detail;  // e.g. "20 BatchNormalization folded into Conv"
};

struct OptimizerOptions {
  int level = 1;                     // 0: no passes
  std::set<std::string> disabled;    // pass names to skip
};

// Runs the enabled passes in order on `g` (marking removed nodes, not compacting).
std::vector<PassReport> optimize(Graph& g, const OptimizerOptions& opt);

// Names of every pass, in the order they run.
std::vector<std::string> optimizer_passes();

// ---- the passes (each returns how many rewrites it made) ----
int pass_remove_identity(Graph& g, std::string* detail);
int pass_dedupe_constants(Graph& g, std::string* detail);
int pass_fuse_qdq(Graph& g, std::string* detail);
int pass_fold_batchnorm(Graph& g, std::string* detail);
int pass_fold_pad(Graph& g, std::string* detail);
int pass_cancel_transposes(Graph& g, std::string* detail);
int pass_fuse_layernorm(Graph& g, std::string* detail);
int pass_fuse_attention(Graph& g, std::string* detail);
int pass_fuse_matmul_bias(Graph& g, std::string* detail);
int pass_fuse_residual(Graph& g, std::string* detail);
int pass_fuse_activation(Graph& g, std::string* detail);
int pass_fold_input_affine(Graph& g, std::string* detail);
int pass_fuse_post_affine(Graph& g, std::string* detail);
int pass_fuse_channel_scale(Graph& g, std::string* detail);
int pass_fuse_plane_mean(Graph& g, std::string* detail);

// Helpers for passes (who reads a value: Graph::uses / Graph::sole_reader).
// Replaces every read of `from` by `to` in live nodes (not graph outputs).
void replace_uses(Graph& g, int from, int to);
// Records that `into` now also computes `absorbed` (for dumps and profiles).
void absorb(Node& into, const Node& absorbed);
// A float32 constant value.
bool is_const_f32(const Graph& g, int v);
// Per-channel values of a float32 constant that broadcasts against an output of rank `out_rank`
// ([N, C, ...], or [M, C] for Gemm) along axis 1 only, or a single value; empty when it does not.
std::vector<double> per_channel(const Graph& g, int v, int64_t C, size_t out_rank);

}  // namespace oi
