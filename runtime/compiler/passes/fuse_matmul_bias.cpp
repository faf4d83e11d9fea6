// MatMul(A, B) + bias with a constant per-column bias: one kernel that adds the bias (and, after
// fuse_activation, applies the activation) while storing. With 2-D operands the MatMul becomes a
// Gemm with C = bias; with batched operands (transformer Linear layers: [B, T, K] x [K, N]) the
// MatMul keeps its type and takes the bias as a third input, which only this pass creates.
#include "runtime/compiler/optimizer.hpp"

namespace oi {

int pass_fuse_matmul_bias(Graph& g, std::string* detail) {
  int fused = 0;
  for (size_t ai = 0; ai < g.nodes.size(); ++ai) {
    Node& add = g.nodes[ai];
    if (add.removed || add.op_type != "Add" || add.inputs.size() != 2 || add.outputs.empty()) continue;
    for (int k = 0; k < 2; ++k) {
      const int x = add.inputs[k], bias = add.inputs[1 - k];
      if (x < 0 || bias < 0 || !g.values[bias].data || g.values[bias].dtype != DType::Float32) continue;
      const int pi = g.values[x].producer;
      if (pi < 0 || g.nodes[pi].removed || g.nodes[pi].op_type != "MatMul" || !g.nodes[pi].epilogue.empty())
        continue;
      Node& mm = g.nodes[pi];
      if (mm.inputs.size() != 2 || g.sole_reader(x) != static_cast<int>(ai)) continue;
      const Shape &a = g.values[mm.inputs[0]].shape, &out = g.values[x].shape, &bs = g.values[bias].shape;
      const Shape& b = g.values[mm.inputs[1]].shape;
      if (a.size() < 2 || b.size() < 2 || out.size() < 2 || g.values[add.outputs[0]].shape != out) continue;
      if (g.values[bias].dtype != g.values[x].dtype) continue;
      // The bias must vary along the columns only: [N] or [1, ..., 1, N] of at most out's rank.
      const int64_t n = out.back();
      bool per_column = !bs.empty() && bs.size() <= out.size() && bs.back() == n;
      for (size_t i = 0; i + 1 < bs.size(); ++i) per_column &= bs[i] == 1;
      if (!per_column) continue;
      const bool plain = a.size() == 2 && b.size() == 2;
      if (plain) {
        mm.op_type = "Gemm";
        absorb(mm, add);
        mm.covers.front().second = "MatMul";
      } else {
        absorb(mm, add);
      }
      mm.inputs.push_back(bias);
      mm.outputs[0] = add.outputs[0];
      g.values[mm.outputs[0]].producer = pi;
      add.removed = true;
      ++fused;
      break;
    }
  }
  if (detail) *detail = std::to_string(fused) + " MatMul + bias Add turned into Gemm";
  return fused;
}

}  // namespace oi
