// What an operator implementation sees, and the registry row that describes it.
//
// Each op file provides up to three functions:
//   infer(ctx): check attributes and input dtypes/shapes, set every output's dtype and shape;
//   host(ctx):  compute the outputs on the host from constant inputs (shape arithmetic, folding);
//   build(ctx): append the OpenCL kernel launches that compute the outputs on the device.
// All three throw through ctx.fail()/ctx.unsupported(), which name the node.
#pragma once

#include <string>
#include <vector>

#include "runtime/cl_runtime.hpp"
#include "runtime/graph.hpp"

namespace oi {

struct Launch {
  KernelPtr kernel;
  std::string kernel_name;  // "<file>:<entry>" for dumps and profiles
  std::vector<size_t> global;
  std::vector<size_t> local;  // empty: let the driver choose
  int node = -1;
  // Work of this launch for the profiler; the planner fills them in from the node's shapes
  // (attributed to a node's last launch).
  double flops = 0;
  double bytes = 0;
};

// What the build step may allocate and launch. Implemented by the planner.
class DeviceBuilder {
 public:
  virtual ~DeviceBuilder() = default;
  virtual ClRuntime& cl() = 0;
  virtual cl_mem buffer_of(int value) = 0;          // allocates on first use; uploads constants
  virtual void alias(int out_value, int in_value) = 0;  // out shares in's buffer (a view)
  virtual cl_mem params(const void* data, size_t bytes) = 0;  // small constant buffer owned by plan
  virtual void add_launch(Launch l) = 0;
};

class OpContext {
 public:
  OpContext(Graph& g, int node_index, DeviceBuilder* dev = nullptr)
      : g_(g), node_(g.nodes[node_index]), index_(node_index), dev_(dev) {}

  const Node& node() const { return node_; }
  Graph& graph() { return g_; }
  int64_t opset() const { return g_.opset(node_.domain); }

  int num_inputs() const { return static_cast<int>(node_.inputs.size()); }
  int num_outputs() const { return static_cast<int>(node_.outputs.size()); }
  bool has_input(int i) const { return i < num_inputs() && node_.inputs[i] >= 0; }
  bool has_output(int i) const { return i < num_outputs() && node_.outputs[i] >= 0; }
  const Value& in(int i) const;   // throws when absent
  Value& out(int i);              // throws when absent
  const Shape& in_shape(int i) const { return in(i).shape; }
  DType in_type(int i) const { return in(i).dtype; }
  bool is_const(int i) const { return has_input(i) && in(i).data != nullptr; }
  // The constant value of input i; fails with "input i (name) must be a constant" otherwise.
  const Tensor& in_data(int i) const;
  // Constant integer input as int64 values (any integer dtype).
  std::vector<int64_t> in_ints(int i) const;

  // Sets output i's type and shape. Refuses negative dims and absurd sizes before anything is
  // allocated.
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

  // Device side (valid in build only).
  DeviceBuilder& dev() const;
  cl_mem in_buf(int i) const { return dev().buffer_of(node_.inputs[i]); }
  cl_mem out_buf(int i) const { return dev().buffer_of(node_.outputs[i]); }
  // Builds (or fetches) kernels/<file>.cl:<entry> with `options`, sets `args`, appends a launch
  // over `global` (skipped when any global dim is 0).
  template <typename... Args>
  void launch(const std::string& file, const std::string& entry, const std::string& options,
              std::vector<size_t> global, std::vector<size_t> local, const Args&... args);

 private:
  static void set_arg(cl_kernel k, cl_uint i, cl_mem m);
  static void set_arg(cl_kernel k, cl_uint i, int32_t v);
  static void set_arg(cl_kernel k, cl_uint i, int64_t v);
  static void set_arg(cl_kernel k, cl_uint i, float v);
  static void set_arg(cl_kernel k, cl_uint i, double v);
  void push(KernelPtr k, const std::string& name, std::vector<size_t> global,
            std::vector<size_t> local);

  Graph& g_;
  const Node& node_;
  int index_;
  DeviceBuilder* dev_;
};

template <typename... Args>
void OpContext::launch(const std::string& file, const std::string& entry,
                       const std::string& options, std::vector<size_t> global,
                       std::vector<size_t> local, const Args&... args) {
  for (size_t g : global)
    if (g == 0) return;
  KernelPtr k = dev().cl().kernel(file, entry, options);
  cl_uint i = 0;
  (set_arg(k.get(), i++, args), ...);
  push(std::move(k), file + ":" + entry, std::move(global), std::move(local));
}

// A registry row.
struct OpDef {
  const char* op_type;
  int since_version;
  void (*infer)(OpContext&);
  void (*host)(OpContext&);   // may be nullptr
  void (*build)(OpContext&);  // may be nullptr when host always applies (e.g. Shape)
  // Bit i set: input i's *value* determines output shapes, so it must be known at plan time.
  uint32_t value_inputs = 0;
  // host() needs only input shapes, not data (Shape, Size).
  bool host_needs_shapes_only = false;
  // Output 0 is a view of input 0 (build calls alias(), no kernel): the buffer planner shares the
  // bytes.
  bool view = false;
  // Output 0 may be written over input 0 or 1 when that input has the output's shape and type and
  // dies at this node (pure elementwise kernels).
  bool inplace = false;
  // build() honours Node::epilogue (fused activation / residual add) on output 0.
  bool epilogue = false;
  // For ops that may be views at an offset (Slice, Split): the byte offset at which output `k`
  // is a contiguous run of input 0's bytes, or -1. When the buffer planner makes it a view it
  // sets bit k of Node::outputs_are_views and build() skips that output.
  int64_t (*view_offset)(OpContext& ctx, int k) = nullptr;
};

// Highest since_version <= opset for (domain, op_type); nullptr when unsupported.
const OpDef* find_op(const std::string& domain, const std::string& op_type, int64_t opset);
// Every op type the registry knows (for --list-ops and docs).
std::vector<std::string> supported_ops();

// OpenCL C type that stores `t` ("float", "long", "uchar" for bool ...); fails for types the
// device kernels do not handle.
const char* cl_type(DType t);
bool is_float(DType t);
bool is_integer(DType t);  // signed or unsigned integers, not bool

// Broadcast shapes numpy-style; returns false when incompatible.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape* out);
// Row-major strides of `s` (in elements).
std::vector<int64_t> strides_of(const Shape& s);

}  // namespace oi
