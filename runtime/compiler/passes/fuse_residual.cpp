// Conv -> Add(other): the conv adds the residual while writing its result (the activation that
// usually follows fuses next, giving y = act(conv + residual) in one kernel).
#include "ops/core/op_def.hpp"
#include "runtime/compiler/optimizer.hpp"

namespace oi {

int pass_fuse_residual(Graph& g, std::string* detail) {
  int fused = 0;
  for (size_t ai = 0; ai < g.nodes.size(); ++ai) {
    Node& add = g.nodes[ai];
    if (add.removed || add.op_type != "Add" || add.inputs.size() != 2 || add.outputs.empty()) continue;
    const int out = add.outputs[0];
    if (g.values[out].dtype != DType::Float32) continue;
    // Pick the operand whose producer can take an epilogue and runs after the other operand is
    // ready; prefer the later producer so the residual is computed by then.
    int best = -1, best_other = -1;
    for (int k = 0; k < 2; ++k) {
      int x = add.inputs[k], other = add.inputs[1 - k];
      if (x < 0 || other < 0 || x == other) continue;
      if (g.values[x].shape != g.values[out].shape || g.values[other].shape != g.values[out].shape) continue;
      int pi = g.values[x].producer;
      if (pi < 0 || g.nodes[pi].removed || !g.nodes[pi].epilogue.empty()) continue;
      const Node& p = g.nodes[pi];
      const OpDef* def = find_op(g, p);
      if (!def || !def->traits.takes_epilogue || g.sole_reader(x) != static_cast<int>(ai)) continue;
      int op = g.values[other].producer;
      if (op >= pi) continue;  // the residual would not exist yet when p runs
      if (pi > best) best = pi, best_other = other;
    }
    if (best < 0) continue;
    Node& p = g.nodes[best];
    p.epilogue.residual = best_other;
    absorb(p, add);
    p.outputs[0] = out;
    g.values[out].producer = best;
    add.removed = true;
    ++fused;
  }
  if (detail) *detail = std::to_string(fused) + " residual Add fused into the producing kernel";
  return fused;
}

}  // namespace oi
