// Identical constants (same type, shape and bytes) are uploaded once.
#include <functional>
#include <map>

#include "runtime/compiler/optimizer.hpp"

namespace oi {

int pass_dedupe_constants(Graph& g, std::string* detail) {
  std::map<std::tuple<int, Shape, size_t>, std::vector<int>> seen;  // (dtype, shape, hash) -> ids
  int merged = 0;
  std::vector<bool> used(g.values.size(), false);
  for (auto& n : g.nodes) {
    if (n.removed) continue;
    for (int in : n.inputs)
      if (in >= 0) used[in] = true;
    if (n.epilogue.residual >= 0) used[n.epilogue.residual] = true;
  }
  for (int o : g.outputs) used[o] = false;  // graph outputs keep their own value
  for (size_t v = 0; v < g.values.size(); ++v) {
    const Value& val = g.values[v];
    if (!used[v] || !val.data) continue;
    const auto& bytes = val.data->bytes;
    size_t h = std::hash<std::string>{}(std::string(bytes.begin(), bytes.end()));
    auto& ids = seen[{static_cast<int>(val.dtype), val.shape, h}];
    int twin = -1;
    for (int id : ids)
      if (g.values[id].data->bytes == bytes) twin = id;
    if (twin >= 0) {
      replace_uses(g, static_cast<int>(v), twin);
      ++merged;
    } else {
      ids.push_back(static_cast<int>(v));
    }
  }
  if (detail) *detail = std::to_string(merged) + " duplicate constants merged";
  return merged;
}

}  // namespace oi
