// The project's own graph: what the ONNX loader produces and what shape inference, the optimizer
// and the planner work on. No protobuf type is visible from here.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ocl_infer/ocl_infer.hpp"

namespace oi {

// The newest opset of the default ONNX domain a model may import (onnx/loader.cpp refuses newer
// ones: their operators may mean something else there). Operators whose schema changed after
// their newest registry row in ways the registry does not implement are refused one by one
// (ops/registry.cpp, kNewerSchemas).
constexpr int kMaxOpset = 25;

using ocl_infer::DType;
using ocl_infer::Tensor;
using Shape = std::vector<int64_t>;

struct Graph;

struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Floats, Ints, Strings, Graph, Other };
  Kind kind = Kind::Other;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::shared_ptr<Tensor> t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  // Kind::Graph: a subgraph (If's branches, Loop's and Scan's bodies), see Graph::captures.
  std::shared_ptr<const Graph> g;
};

// A row of the activation table (ops/core/activation.hpp); the IR only points at it.
struct ActivationDef;

// Work fused into a producing node (conv, gemm, matmul, normalization): applied to each output
// element before it is stored, as y = act(x + residual).
struct Epilogue {
  const ActivationDef* act = nullptr;  // nullptr: identity
  float alpha = 0, beta = 0;           // the activation's parameters (Clip: min/max)
  int residual = -1;                   // value id added before the activation, same shape as the output
  // y = post_scale * act(x + residual) + post_bias (Conv only, pass fuse_post_affine: scalar Mul /
  // Add after a 1x1 conv's activation, PP-LCNet's learnable affine blocks).
  float post_scale = 1, post_bias = 0;
  bool has_post() const { return post_scale != 1 || post_bias != 0; }
  bool empty() const { return act == nullptr && residual < 0 && !has_post(); }
};

struct Node {
  std::string name;  // never empty: the loader names anonymous nodes "<op_type>_<index>"
  std::string op_type;
  std::string domain;  // "" for the default ONNX domain
  std::map<std::string, Attribute> attrs;
  std::vector<int> inputs;  // value ids; -1 marks an omitted optional input
  std::vector<int> outputs;  // value ids; -1 marks an omitted optional output
  // The original ONNX nodes this node computes after fusion, "name" and "op_type" pairs; empty
  // means just itself.
  std::vector<std::pair<std::string, std::string>> covers;
  Epilogue epilogue;
  bool removed = false;  // deleted by an optimizer pass; skipped everywhere

  bool has(const std::string& a) const { return attrs.count(a) != 0; }
  // Typed attribute getters; throw ModelError naming the node when the attribute has another kind.
  int64_t attr_int(const std::string& a, int64_t def) const;
  float attr_float(const std::string& a, float def) const;
  std::string attr_string(const std::string& a, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& a, const std::vector<int64_t>& def) const;
  std::vector<float> attr_floats(const std::string& a, const std::vector<float>& def) const;
  const Tensor* attr_tensor(const std::string& a) const;  // nullptr when absent
};

struct Value {
  std::string name;
  DType dtype = DType::Undefined;
  Shape shape;                         // -1 for dims not yet known
  std::vector<std::string> dim_names;  // symbolic names of open dims (model inputs/outputs)
  bool shape_known = false;
  std::shared_ptr<const Tensor> data;  // host data when the value is a constant
  int producer = -1;                   // node index, -1 for graph inputs and initializers
  // Non-null: the value is an ONNX sequence whose elements are these value ids (dtype is their
  // element type, shape unused). Sequences exist only while the compiler resolves the graph: every
  // sequence op expands into nodes on the elements (ops/sequence_ops.cpp), so a plan never holds
  // one. A node reading a sequence counts as reading each element.
  std::shared_ptr<const std::vector<int>> sequence;
};

struct Graph {
  std::vector<Value> values;
  std::vector<Node> nodes;  // in a valid topological order after load
  std::vector<int> inputs;  // non-constant model inputs
  std::vector<int> outputs;
  // The graph outputs' types and shapes as the file declares them (by position in `outputs`;
  // dtype Undefined where none is declared): what Session::outputs() reports before shape
  // inference has run. Shape inference, not these, decides the plan.
  std::vector<Value> declared_outputs;
  std::map<std::string, int> opsets;  // domain -> version
  std::string producer;               // producer_name + version, for messages
  int64_t ir_version = 0;
  uint64_t constant_bytes = 0;  // bytes of the initializers the loader read (the model's graph only)
  // Subgraphs only: values this graph reads from enclosing scopes (no producer, no data here).
  // Every subgraph attribute of a node has the same captures, in the same order, and the node
  // lists the enclosing scope's values for them as its last inputs, after its ONNX inputs: so
  // liveness, ordering and buffer lifetimes see a subgraph's outer reads as the node's reads.
  std::vector<int> captures;

  int64_t opset(const std::string& domain = "") const;
  int find_value(const std::string& name) const;  // -1 when absent
  // Drops removed nodes and recomputes every value's producer.
  void compact();
  // Every read of value `v` by a live node: one entry per input slot that names `v`, and one with
  // slot kResidual for a node whose fused epilogue adds `v`. Graph outputs are not listed (see
  // is_output). This is the only definition of "who reads a value": passes that rewrite a value
  // away must see every read, fused ones included.
  struct Use {
    int node;
    int slot;
  };
  static constexpr int kResidual = -1;
  std::vector<Use> uses(int v) const;
  bool is_output(int v) const;
  // True when `v` is read by any live node or is a graph output.
  bool is_read(int v) const;
  // The one live node that reads `v`, when it reads it exactly once and nothing else does (no
  // other node, no graph output); else -1.
  int sole_reader(int v) const;
  int add_value(const std::string& name);
  // A new constant value holding `t` (shape and dtype from it); returns its id.
  int add_constant(const std::string& name, Tensor t);
};

// The number of ONNX inputs of a node: its inputs less the captures of its subgraphs.
int formal_inputs(const Node& n);
// The node's first subgraph attribute, or nullptr.
const Graph* first_subgraph(const Node& n);

// "Conv+BatchNormalization+Relu" for a fused node, else its op type.
std::string covered_ops(const Node& n);

// Helpers shared by every stage.
int64_t numel(const Shape& s);
bool is_float(DType t);
bool is_integer(DType t);  // signed or unsigned integers, not bool
// Broadcast shapes numpy-style; returns false when incompatible.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape* out);
// Row-major strides of `s` (in elements).
std::vector<int64_t> strides_of(const Shape& s);
std::string describe_node(const Graph& g, const Node& n);  // "node 'conv_3' (Conv, opset 13)"

}  // namespace oi
