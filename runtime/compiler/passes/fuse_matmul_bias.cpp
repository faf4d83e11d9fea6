// MatMul(A, B) + bias, with a 2-D A and a constant per-column bias, is a Gemm with C = bias: one
// kernel that adds the bias (and, after fuse_activation, applies the activation) while storing.
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
      if (a.size() != 2 || g.values[mm.inputs[1]].shape.size() != 2 || g.values[add.outputs[0]].shape != out) continue;
      const int64_t n = out[1];
      bool per_column = (bs.size() == 1 && bs[0] == n) || (bs.size() == 2 && bs[0] == 1 && bs[1] == n);
      if (!per_column) continue;
      mm.op_type = "Gemm";
      mm.inputs.push_back(bias);
      absorb(mm, add);
      mm.covers.front().second = "MatMul";
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
