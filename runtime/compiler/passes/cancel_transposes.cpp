// Two adjacent Transposes compose into one, or vanish when they cancel.
#include "runtime/compiler/optimizer.hpp"

namespace oi {

int pass_cancel_transposes(Graph& g, std::string* detail) {
  int cancelled = 0, merged = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& a = g.nodes[i];
    if (a.removed || a.op_type != "Transpose" || a.outputs.empty() || a.inputs.empty() || a.inputs[0] < 0) continue;
    int r = g.sole_reader(a.outputs[0]);
    if (r < 0 || g.nodes[r].op_type != "Transpose") continue;
    Node& b = g.nodes[r];
    const size_t rank = g.values[a.inputs[0]].shape.size();
    auto perm_of = [&](const Node& n) {
      std::vector<int64_t> p = n.attr_ints("perm", {});
      if (p.empty())
        for (size_t k = 0; k < rank; ++k) p.push_back(static_cast<int64_t>(rank - 1 - k));
      return p;
    };
    std::vector<int64_t> p1 = perm_of(a), p2 = perm_of(b);
    if (p1.size() != rank || p2.size() != rank) continue;
    std::vector<int64_t> c(rank);
    bool identity = true;
    for (size_t k = 0; k < rank; ++k) {
      c[k] = p1[p2[k]];
      identity &= c[k] == static_cast<int64_t>(k);
    }
    bool b_is_output = false;
    for (int o : g.outputs) b_is_output |= o == b.outputs[0];
    if (identity && !b_is_output) {
      replace_uses(g, b.outputs[0], a.inputs[0]);
      a.removed = b.removed = true;
      ++cancelled;
    } else {
      Attribute at;
      at.kind = Attribute::Kind::Ints;
      at.ints = c;
      a.attrs["perm"] = at;
      absorb(a, b);
      a.outputs[0] = b.outputs[0];
      b.removed = true;
      ++merged;
    }
  }
  if (detail)
    *detail = std::to_string(cancelled) + " Transpose pairs cancelled, " + std::to_string(merged) + " merged";
  return cancelled + merged;
}

}  // namespace oi
