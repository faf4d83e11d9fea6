// Graph surgery for control flow: copying a subgraph (an If branch, a Loop or Scan body) into its
// enclosing graph, and replacing a node by a list of nodes. The compiler uses these to inline a
// branch whose condition is known and to unroll loops whose trip count is known.
#pragma once

#include <string>
#include <vector>

#include "runtime/ir/graph.hpp"

namespace oi {

// The nodes of `body` copied into `g`'s value space: body input k reads `inputs[k]`, body capture
// k reads `captures[k]` (value ids of g), every other body value becomes a new value of g named
// "<prefix>/<name>" (constants keep their data). Nodes are renamed "<prefix>/<name>". Returns the
// nodes, in order, and sets `outputs` to the g value ids of the body's outputs (which may be
// inputs, captures or constants). Throws ModelError when the counts do not match.
std::vector<Node> copy_subgraph(Graph& g, const Graph& body, const std::vector<int>& inputs,
                                const std::vector<int>& captures, const std::string& prefix,
                                std::vector<int>* outputs);

// Replaces node `at` by `nodes` (in order) and recomputes every value's producer (removed nodes
// included: their outputs may be folded constants). Node indices after `at` shift.
void replace_node(Graph& g, int at, std::vector<Node> nodes);

// A node of the default domain with one output (for control-flow rewrites).
Node make_node(const std::string& op_type, const std::string& name, std::vector<int> inputs, std::vector<int> outputs);

}  // namespace oi
