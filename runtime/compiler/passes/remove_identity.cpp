// Identity and inference-mode Dropout compute nothing: their readers read the input instead.
#include "runtime/compiler/optimizer.hpp"

namespace oi {

int pass_remove_identity(Graph& g, std::string* detail) {
  int removed = 0;
  for (auto& n : g.nodes) {
    if (n.removed || (n.op_type != "Identity" && n.op_type != "Dropout") || !n.domain.empty()) continue;
    if (n.inputs.empty() || n.inputs[0] < 0 || n.outputs.empty() || n.outputs[0] < 0) continue;
    // Dropout's mask output must be unused, and a graph output keeps its producer (its name is
    // part of the model's interface).
    if (n.outputs.size() > 1 && n.outputs[1] >= 0 && g.is_read(n.outputs[1])) continue;
    bool is_output = false;
    for (int o : g.outputs) is_output |= o == n.outputs[0];
    if (is_output) continue;
    replace_uses(g, n.outputs[0], n.inputs[0]);
    n.removed = true;
    ++removed;
  }
  if (detail) *detail = std::to_string(removed) + " Identity/Dropout removed";
  return removed;
}

}  // namespace oi
