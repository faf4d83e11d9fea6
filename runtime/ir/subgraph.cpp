#include "runtime/ir/subgraph.hpp"

#include <map>

namespace oi {

std::vector<Node> copy_subgraph(Graph& g, const Graph& body, const std::vector<int>& inputs,
                                const std::vector<int>& captures, const std::string& prefix,
                                std::vector<int>* outputs) {
  if (inputs.size() != body.inputs.size())
    throw ocl_infer::ModelError(prefix + ": the subgraph has " + std::to_string(body.inputs.size()) +
                                " inputs, the node gives it " + std::to_string(inputs.size()));
  if (captures.size() != body.captures.size())
    throw ocl_infer::Error("internal: " + prefix + ": capture count mismatch");
  std::vector<int> map(body.values.size(), -1);
  for (size_t k = 0; k < inputs.size(); ++k) map[body.inputs[k]] = inputs[k];
  for (size_t k = 0; k < captures.size(); ++k) map[body.captures[k]] = captures[k];
  auto id_of = [&](int b) {
    if (b < 0) return -1;
    if (map[b] >= 0) return map[b];
    const Value& bv = body.values[b];
    const int id = g.add_value(prefix + "/" + bv.name);
    Value& v = g.values[id];
    v.dtype = bv.dtype;
    if (bv.data) {
      v.data = bv.data;
      v.shape = bv.shape;
      v.shape_known = true;
    }
    map[b] = id;
    return id;
  };
  std::vector<Node> r;
  for (const Node& bn : body.nodes) {
    if (bn.removed) continue;
    Node n = bn;
    n.name = prefix + "/" + bn.name;
    for (int& i : n.inputs) i = id_of(i);
    for (int& o : n.outputs) o = id_of(o);
    if (n.epilogue.residual >= 0) n.epilogue.residual = id_of(n.epilogue.residual);
    r.push_back(std::move(n));
  }
  outputs->clear();
  for (int o : body.outputs) outputs->push_back(id_of(o));
  return r;
}

void replace_node(Graph& g, int at, std::vector<Node> nodes) {
  g.nodes.erase(g.nodes.begin() + at);
  g.nodes.insert(g.nodes.begin() + at, std::make_move_iterator(nodes.begin()), std::make_move_iterator(nodes.end()));
  for (auto& v : g.values) v.producer = -1;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int o : g.nodes[i].outputs)
      if (o >= 0) g.values[o].producer = static_cast<int>(i);
}

Node make_node(const std::string& op_type, const std::string& name, std::vector<int> inputs, std::vector<int> outputs) {
  Node n;
  n.op_type = op_type;
  n.name = name;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  return n;
}

}  // namespace oi
