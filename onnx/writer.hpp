// oi::Graph -> serialized ONNX ModelProto (the quantizer writes its QDQ models through this).
#pragma once

#include <map>
#include <string>

#include "runtime/ir/graph.hpp"

namespace oi {

// Serializes the live nodes of `g` (in their order, which must be topological), its inputs and
// outputs, and every constant a live node reads as an initializer (raw little-endian data). Graph
// outputs whose dtype the graph does not know take it from `output_types` (by name). Throws
// ModelError for what it cannot write: subgraph attributes (If/Loop bodies), string tensors, a
// graph output without a known type.
std::string save_onnx(const Graph& g, const std::map<std::string, DType>& output_types = {});

}  // namespace oi
