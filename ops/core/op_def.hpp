// What the compiler knows about an operator: its registry row (OpDef) with named traits, and the
// context its shape inference, host evaluation and trait functions see (OpContext). Nothing here
// sees OpenCL; the device side of an op (its build function) gets a BuildContext, declared in
// ops/build_context.hpp.
//
// Each op family file provides, per op:
//   infer(ctx): check attributes and input dtypes/shapes, set every output's dtype and shape;
//   host(ctx):  compute the outputs on the host from constant inputs (shape arithmetic, folding);
//   build(ctx): append the OpenCL kernel launches that compute the outputs on the device.
// All of them throw through ctx.fail()/ctx.unsupported(), which name the node.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "runtime/ir/graph.hpp"

namespace oi {

class BuildContext;

// Read access to one node of a graph, and (for infer/host only) write access to its outputs.
class OpContext {
 public:
  // Infer and host evaluation: may set the node's outputs.
  OpContext(Graph& g, int node_index) : g_(g), mut_(&g), node_(g.nodes[node_index]), index_(node_index) {}
  // Traits and build: read-only.
  OpContext(const Graph& g, int node_index) : g_(g), node_(g.nodes[node_index]), index_(node_index) {}
  virtual ~OpContext() = default;

  const Node& node() const { return node_; }
  int node_index() const { return index_; }
  const Graph& graph() const { return g_; }
  int64_t opset() const { return g_.opset(node_.domain); }

  int num_inputs() const { return static_cast<int>(node_.inputs.size()); }
  int num_outputs() const { return static_cast<int>(node_.outputs.size()); }
  bool has_input(int i) const { return i >= 0 && i < num_inputs() && node_.inputs[i] >= 0; }
  bool has_output(int i) const { return i >= 0 && i < num_outputs() && node_.outputs[i] >= 0; }
  const Value& in(int i) const;        // throws when absent
  const Value& out_value(int i) const;  // throws when absent
  const Shape& in_shape(int i) const { return in(i).shape; }
  const Shape& out_shape(int i) const { return out_value(i).shape; }
  DType in_type(int i) const { return in(i).dtype; }
  bool is_const(int i) const { return has_input(i) && in(i).data != nullptr; }
  // The constant value of input i; fails with "input i (name) must be a constant" otherwise.
  const Tensor& in_data(int i) const;
  // Constant integer input as int64 values (any integer dtype).
  std::vector<int64_t> in_ints(int i) const;

  // Sets output i's type and shape (infer only). Refuses negative dims and absurd sizes before
  // anything is allocated.
  void set_out(int i, DType t, const Shape& s);
  // Host evaluation: sets output i's type, shape and data.
  void set_out_data(int i, Tensor t);

  [[noreturn]] void fail(const std::string& msg) const;         // ModelError
  [[noreturn]] void unsupported(const std::string& msg) const;  // UnsupportedError
  void require(bool cond, const std::string& msg) const {
    if (!cond) fail(msg);
  }
  // Normalises a possibly negative axis against `rank`; fails when out of range.
  int64_t axis(int64_t a, int64_t rank) const;
  // A list of axes normalised against `rank`; fails when one is out of range or listed twice.
  std::vector<int64_t> axes(std::vector<int64_t> list, int64_t rank) const;

 private:
  Value& out_mut(int i);

  const Graph& g_;
  Graph* mut_ = nullptr;
  const Node& node_;
  int index_;
};

// How a producer absorbs a per-output-channel affine y' = y * scale[c] + shift[c] into its
// constant weights and bias (BatchNormalization and per-channel Mul/Add folding). The pass asks
// these instead of knowing each op's weight layout.
struct ChannelAffine {
  // Output channels of this node, or -1 when it cannot absorb an affine (e.g. weights that are
  // not constants, a Gemm whose C is not per column).
  int64_t (*channels)(const OpContext& ctx) = nullptr;
  // Multiplies the weights (input `weight_input`, a copy the pass owns) by scale per channel.
  void (*scale_weights)(const OpContext& ctx, Tensor& w, const std::vector<double>& scale) = nullptr;
  int weight_input = 1;
  int bias_input = 2;
  // Factor the node applies to its bias input (Gemm's beta; 1 for convs). After folding the bias
  // holds the final values, so the pass sets the attribute `bias_scale_attr` to 1 when named.
  double (*bias_scale)(const OpContext& ctx) = nullptr;
  const char* bias_scale_attr = nullptr;
};

// Facts about an op that the compiler (passes, shape resolution, the buffer planner) and the
// profiler ask, instead of switching on op names.
struct OpTraits {
  // Inputs whose *values* determine output shapes: they must be known at plan time.
  std::vector<int> value_inputs;
  // host() needs only input shapes, not data (Shape, Size).
  bool host_needs_shapes_only = false;
  // host() is not used to fold the node before the optimizer runs: a pass wants to see the node
  // (DequantizeLinear of constant weights, which fuse_qdq turns into integer kernels) and folds it
  // itself when it does not fuse it.
  bool fold_late = false;
  // Output 0 is input 0's bytes under another shape (Reshape, Squeeze, ...): no kernel, the buffer
  // planner shares the storage.
  bool view = false;
  // Output 0 may overwrite input 0 or 1 when that input has the output's shape and storage type
  // and dies at this node (each output element is computed from the same input element only).
  bool inplace = false;
  // build() honours Node::epilogue (a fused activation / residual add) on output 0.
  bool takes_epilogue = false;
  // build() reads and writes every float operand in whatever storage the plan gives it (float32 or
  // float16, each operand on its own), converting in registers: the precision policy may then
  // store its operands as float16.
  bool any_float_storage = false;
  // The node's float operands of the input's dtype share one storage type: data movement (copies,
  // gathers, padding), and kernels written for one storage type (normalizations, reductions).
  bool shared_float_storage = false;
  // Element offset at which output k is one contiguous run of input 0 (a Slice or Split piece),
  // or -1. The planner may then make output k a view (no copy).
  int64_t (*output_view_offset)(const OpContext& ctx, int k) = nullptr;
  // Element offset at which input k lands in output 0 when it is one contiguous block of it
  // (Concat along the outermost non-1 axis), or -1. The planner may then let input k's producer
  // write straight into output 0.
  int64_t (*input_offset_in_output)(const OpContext& ctx, int k) = nullptr;
  // Floating-point operations for the node's resolved shapes (a multiply-add counts 2); nullptr:
  // data movement, 0.
  double (*flops)(const OpContext& ctx) = nullptr;
  // Non-null: the node can absorb a following per-channel affine into its weights.
  const ChannelAffine* affine = nullptr;
  // Output shapes depend on input *values* (NonZero, NonMaxSuppression, Unique, Compress): the
  // compiler calls infer() and host() only once every input is known on the host. When an input
  // is computed on the device, the plan ends a segment before the node, the session reads the
  // node's inputs back after that segment runs and evaluates the node on the host, and the next
  // segment is planned for the shapes it produced (see runtime/exec/segments).
  bool data_dependent = false;
  // Control flow (If, Loop, Scan): called by the compiler once the node's value inputs are known
  // (constants); replaces the node in `g` by the nodes it stands for (the branch taken, one loop
  // iteration, ...) and returns true, or returns false to leave it (then infer() explains why).
  bool (*expand)(Graph& g, int node) = nullptr;
  // The node may read sequence values (Value::sequence): the sequence ops, and control flow that
  // passes them into a subgraph.
  bool takes_sequences = false;
};

using InferFn = void (*)(OpContext&);
using HostFn = void (*)(OpContext&);
using BuildFn = void (*)(BuildContext&);

// The domain of the nodes that only ocl-infer's own passes make (FusedAttention).
inline constexpr const char* kOclInferDomain = "ai.ocl_infer";

// A registry row, keyed by (domain, op type, since_version). Built with named setters:
//   OpDef("Conv", 1, conv_infer).build(conv_build).epilogue().flops(conv_flops)
struct OpDef {
  std::string domain;  // "" for the default ONNX domain
  std::string op_type;
  int since_version = 1;
  InferFn infer_fn = nullptr;
  HostFn host_fn = nullptr;    // may be nullptr
  BuildFn build_fn = nullptr;  // nullptr when host always applies (e.g. Shape)
  OpTraits traits;

  OpDef(std::string op, int since, InferFn infer, std::string dom = "")
      : domain(std::move(dom)), op_type(std::move(op)), since_version(since), infer_fn(infer) {}
  OpDef& host(HostFn f) { return host_fn = f, *this; }
  OpDef& build(BuildFn f) { return build_fn = f, *this; }
  OpDef& value_inputs(std::initializer_list<int> slots) { return traits.value_inputs = slots, *this; }
  OpDef& host_shapes_only() { return traits.host_needs_shapes_only = true, *this; }
  OpDef& fold_late() { return traits.fold_late = true, *this; }
  OpDef& view() { return traits.view = true, *this; }
  OpDef& inplace(bool on = true) { return traits.inplace = on, *this; }
  OpDef& epilogue() { return traits.takes_epilogue = true, *this; }
  OpDef& any_storage() { return traits.any_float_storage = true, *this; }
  OpDef& shared_storage() { return traits.shared_float_storage = true, *this; }
  OpDef& output_views(int64_t (*f)(const OpContext&, int)) { return traits.output_view_offset = f, *this; }
  OpDef& input_slices(int64_t (*f)(const OpContext&, int)) { return traits.input_offset_in_output = f, *this; }
  OpDef& flops(double (*f)(const OpContext&)) { return traits.flops = f, *this; }
  OpDef& affine(const ChannelAffine* a) { return traits.affine = a, *this; }
  OpDef& data_dependent() { return traits.data_dependent = true, *this; }
  OpDef& expands(bool (*f)(Graph&, int)) { return traits.expand = f, *this; }
  OpDef& sequences() { return traits.takes_sequences = true, *this; }
};

// Highest since_version <= opset for (domain, op_type); nullptr when unsupported. "ai.onnx" is the
// default domain.
const OpDef* find_op(const std::string& domain, const std::string& op_type, int64_t opset);
// The row for a graph node (its domain's opset from the graph); nullptr when unsupported.
const OpDef* find_op(const Graph& g, const Node& n);
// Why find_op refuses an operator the registry has rows for: "Pad-19 (the wrap mode) is not
// implemented" where the opset has a newer schema version than the rows implement; else "".
std::string schema_change(const std::string& domain, const std::string& op_type, int64_t opset);
// Every op type the registry knows, "domain.Op" outside the default domain (for docs).
std::vector<std::string> supported_ops();
// The registry's rows for docs (ocl-infer --list-ops): by (domain, op type), the since_versions
// implemented, and the traits the docs mention.
struct OpCatalogRow {
  std::string domain, op_type;
  std::vector<int> since_versions;  // ascending
  OpTraits traits;                  // of the newest row
  bool has_kernel = false;          // some row builds device kernels (else host or expansion only)
  int max_opset = 0;                // default domain: the newest opset it runs at; else 0 (no limit)
};
std::vector<OpCatalogRow> op_catalog();

// Floating-point operations of a node for its resolved shapes (from its OpTraits::flops; 0 for
// data movement and unknown ops).
double node_flops(const Graph& g, int node_index);
// Bytes the node reads (non-empty inputs, a fused residual) and writes (outputs), from tensor sizes
// and the graph's dtypes.
double node_bytes(const Graph& g, int node_index);

}  // namespace oi
