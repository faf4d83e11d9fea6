// Identical constants (same type, shape and bytes) are uploaded once.
#include <algorithm>
#include <functional>
#include <map>
#include <string_view>
#include <unordered_map>

#include "runtime/compiler/optimizer.hpp"

namespace oi {

int pass_dedupe_constants(Graph& g, std::string* detail) {
  int merged = 0;
  std::vector<bool> used(g.values.size(), false);
  for (auto& n : g.nodes) {
    if (n.removed) continue;
    for (int in : n.inputs)
      if (in >= 0) used[in] = true;
    if (n.epilogue.residual >= 0) used[n.epilogue.residual] = true;
  }
  for (int o : g.outputs) used[o] = false;  // graph outputs keep their own value
  // Only constants of one dtype and shape can be twins: most weights have a shape of their own,
  // and are never hashed (hashing resnet18's 46 MB of weights was ~6 % of a warm start).
  std::map<std::pair<int, Shape>, std::vector<int>> by_shape;
  for (size_t v = 0; v < g.values.size(); ++v)
    if (used[v] && g.values[v].data) by_shape[{static_cast<int>(g.values[v].dtype), g.values[v].shape}].push_back(static_cast<int>(v));
  for (auto& [key, ids] : by_shape) {
    if (ids.size() < 2) continue;
    std::unordered_map<size_t, std::vector<int>> by_hash;
    for (int v : ids) {  // ascending ids: the first of equal constants stays
      // The hash reads the first and last 256 bytes only (equal hashes are compared in full):
      // weights of one shape differ within their first values, and hashing all of them cost
      // resnet18's warm start ~5 %.
      const auto& bytes = g.values[v].data->bytes;
      const char* b = reinterpret_cast<const char*>(bytes.data());
      const size_t span = std::min<size_t>(bytes.size(), 256);
      const size_t h = std::hash<std::string_view>{}(std::string_view(b, span)) * 31 +
                       std::hash<std::string_view>{}(std::string_view(b + bytes.size() - span, span));
      auto& same = by_hash[h];
      int twin = -1;
      for (int id : same)
        if (g.values[id].data->bytes == bytes) twin = id;
      if (twin >= 0) {
        replace_uses(g, v, twin);
        ++merged;
      } else {
        same.push_back(v);
      }
    }
  }
  if (detail) *detail = std::to_string(merged) + " duplicate constants merged";
  return merged;
}

}  // namespace oi
