// What an op's build function sees: the node (read-only, through OpContext), the device buffers of
// its operands in their planned storage types, the plan's per-step facts (inputs already in place,
// outputs that are views), and ways to add kernel launches, scratch buffers and constants. build()
// never changes the graph: everything it makes belongs to the plan.
#pragma once

#include <cstddef>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "ops/core/op_def.hpp"
#include "runtime/backend/cl_runtime.hpp"

namespace oi {

// Host memory aligned to a cache line: constants made of it are read in place by CPU devices
// (ClRuntime::upload_shared), as fast as the driver's own allocations; a constant from unaligned
// memory is copied (vector loads across cache lines cost resnet18 3 %).
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::size_t kAlign = 64;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(kAlign)));
  }
  void deallocate(T* p, std::size_t) { ::operator delete(p, std::align_val_t(kAlign)); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const CacheLineAllocator<U>&) const { return false; }
};
// Floats computed on the host for the device (packed weights).
using HostFloats = std::vector<float, CacheLineAllocator<float>>;

// A tensor on the device as a kernel sees it: its buffer, shape and storage type.
struct Operand {
  cl_mem mem = nullptr;
  Shape shape;
  DType dtype = DType::Undefined;  // the storage type (the plan's, not necessarily the graph's)
  int64_t numel() const { return oi::numel(shape); }
};

// Which kernel variant a launch uses and why (for dumps and profiles; see ops/variants.hpp).
struct VariantUse {
  std::string family;   // "conv"
  std::string variant;  // "packed"
  std::map<std::string, int> params;
  std::string source;   // "heuristic", "forced", or "heuristic (forced ... does not apply)"
};

// A kernel argument recorded while building, set on the kernel when the launch is resolved.
struct KernelArg {
  enum class Kind { Mem, Int32, Int64, Float32, Float64 } kind = Kind::Mem;
  cl_mem mem = nullptr;
  int64_t i = 0;
  double f = 0;
};

struct Launch {
  // Null until resolve_launch(): programs build in parallel while the plan is made.
  KernelPtr kernel;
  std::string file, entry, options;
  // Options of a kernel of the same file and entry point, arguments and sizes that the driver
  // compiles faster and that computes the same values (the same sums in the same order), for a
  // plan's first run (runtime/exec/compile_helpers.hpp); empty where there is none. `tiered_options`
  // holds the launch's own options while the plan runs the first-run kernel in their place.
  std::string first_run_options, tiered_options;
  std::vector<KernelArg> args;
  std::string kernel_name;  // "<file>:<entry>" for dumps and profiles
  std::vector<size_t> global;
  std::vector<size_t> local;  // empty: let the driver choose
  int node = -1;
  int step = -1;
  VariantUse variant;  // empty family: a kernel without variants
  // Work of this launch for the profiler (attributed to a node's last launch).
  double flops = 0;
  double bytes = 0;
};

// Implemented by the plan builder (runtime/exec): owns every buffer and launch.
class PlanSink {
 public:
  virtual ~PlanSink() = default;
  virtual ClRuntime& cl() = 0;
  // The device buffer of a graph value (activations are placed by the buffer planner; constants
  // are uploaded on first use), in the value's storage type.
  virtual cl_mem buffer_of(int value) = 0;
  virtual DType storage_of(int value) const = 0;
  // A device buffer of `bytes` owned by the plan, contents undefined (at least 4 bytes).
  virtual cl_mem scratch(size_t bytes) = 0;
  // A device buffer of at least `bytes` shared by every step of the plan: its contents are
  // defined only between the launches of the step that wrote them (the queue is in order), so
  // that temporaries of one step cost no memory beyond the largest. One region per step.
  virtual cl_mem workspace(size_t bytes) = 0;
  // A device buffer holding a copy of `bytes` (packed weights, kernel parameter blocks).
  virtual cl_mem constant(const void* data, size_t bytes) = 0;
  // The same for bytes that `owner` keeps alive and unchanged: a CPU device reads them in place.
  virtual cl_mem constant_shared(std::shared_ptr<const void> owner, const void* data, size_t bytes) = 0;
  // A 4-byte flag checked after every run (see BuildContext::error_flag).
  virtual cl_mem error_flag(int node, const std::string& what) = 0;
  virtual void add_launch(Launch l) = 0;
  virtual bool input_in_place(int step, int slot) const = 0;
  virtual bool output_is_view(int step, int slot) const = 0;
  // The variant forced for `family` by the session ("" when none), as "name[:p=v,...]".
  virtual std::string forced_variant(const std::string& family) const = 0;
  // Whether the plan prefers kernels whose build options do not depend on the tensors' sizes
  // (PlanOptions::shape_generic): the same programs then serve other input shapes.
  virtual bool shape_generic() const { return false; }

  // Tuning (see ops/variants.hpp, runtime/exec/tuner.hpp); the defaults are "no tuner".
  // The tuned choice "variant:p=v,..." for a problem, "" when none.
  virtual std::string tuned_choice(const std::string& family, const std::string& key) const {
    (void)family, (void)key;
    return "";
  }
  // Whether to measure candidates for a problem without a tuned choice.
  virtual bool tuning() const { return false; }
  // A trial: the launches (and buffers) added after trial_begin() are run by trial_time() and
  // removed again by trial_end(). trial_time returns the best of several wall-clock runs in ms,
  // or infinity once a run takes longer than give_up_ms.
  virtual void trial_begin() {}
  virtual double trial_time(double give_up_ms) {
    (void)give_up_ms;
    return 0;
  }
  virtual void trial_end() {}
  virtual void tuned_result(const std::string& family, const std::string& key, const std::string& choice, double ms,
                            double heuristic_ms, int candidates) {
    (void)family, (void)key, (void)choice, (void)ms, (void)heuristic_ms, (void)candidates;
  }
  virtual void tuning_progress(const std::string& line) { (void)line; }
};

// Creates the launch's kernel (waiting for its program's build) and sets its arguments; a no-op
// once done. Throws KernelBuildError (with the build log) or DeviceError.
void resolve_launch(ClRuntime& cl, Launch& l);

class BuildContext : public OpContext {
 public:
  BuildContext(const Graph& g, int node_index, int step, PlanSink& sink)
      : OpContext(g, node_index), step_(step), sink_(sink) {}

  ClRuntime& cl() const { return sink_.cl(); }
  const DeviceCaps& caps() const { return sink_.cl().caps(); }
  int step() const { return step_; }

  Operand input(int i) const;   // throws when absent
  Operand output(int i) const;  // throws when absent
  Operand value(int id) const;  // any graph value (a fused residual)
  cl_mem in_buf(int i) const { return input(i).mem; }
  cl_mem out_buf(int i) const { return output(i).mem; }
  // A temporary of `shape` x `dtype`, owned by the plan.
  Operand scratch(DType dtype, const Shape& shape) const;
  // A temporary of `shape` x `dtype` in the plan's shared workspace (PlanSink::workspace): valid
  // only within this step; at most one per step.
  Operand workspace(DType dtype, const Shape& shape) const;
  // A constant tensor uploaded once (packed weights, folded parameters, bounds).
  Operand constant(const Tensor& t) const;
  // Copied to the device.
  cl_mem constant_floats(const std::vector<float>& data) const;
  // Read in place on CPU devices (no copy), uploaded elsewhere.
  cl_mem constant_floats(HostFloats data) const;
  // A small read-only block of kernel parameters.
  cl_mem params(const void* data, size_t bytes) const { return sink_.constant(data, bytes); }
  // A device int, cleared before every run, that kernels set to non-zero when the data makes the
  // node's result undefined; the run then fails with "node ...: <what>".
  cl_mem error_flag(const std::string& what) const { return sink_.error_flag(node_index(), what); }

  // Fails (unsupported, naming the operand) unless every present input and output is stored as
  // `t`: the storage type comes from the plan, and a family's kernels handle the types they do.
  void require_storage(DType t) const;
  // Fails unless every present input and output is float32 or float16 (in the graph and in
  // storage): for kernels that compute in float and load/store through kernels/storage.cl.
  void require_float_operands() const;
  // " -D<macro>=F16 -D<macro>_HALF" when `storage` is float16, else "" (kernels/storage.cl's F32
  // default; the _HALF define lets kernels take paths that convert once).
  static std::string storage_option(const char* macro, DType storage);
  // Floats computed on the host (packed weights), uploaded in `storage` (float32, or float16
  // rounded to nearest even).
  cl_mem constant_floats(HostFloats data, DType storage) const;

  // Plan facts for this step.
  bool input_in_place(int slot) const { return sink_.input_in_place(step_, slot); }
  bool output_is_view(int slot) const { return sink_.output_is_view(step_, slot); }
  std::string forced_variant(const std::string& family) const { return sink_.forced_variant(family); }
  bool shape_generic() const { return sink_.shape_generic(); }
  PlanSink& sink() const { return sink_; }

  // Records the variant used by the launches that follow (until the next call).
  void use_variant(VariantUse v) { variant_ = std::move(v); }

  // Appends a launch of kernels/<file>.cl:<entry> built with `options`, with `args`, over
  // `global` (skipped when any global dim is 0). The program starts building in the background;
  // the plan builder creates the kernel and sets the arguments when it resolves the launch.
  template <typename... Args>
  void launch(const std::string& file, const std::string& entry, const std::string& options,
              std::vector<size_t> global, std::vector<size_t> local, const Args&... args);
  // The same with `first_run_options` (see Launch; "" for none).
  template <typename... Args>
  void launch_tiered(const std::string& file, const std::string& entry, const std::string& options,
                     const std::string& first_run_options, std::vector<size_t> global, std::vector<size_t> local,
                     const Args&... args);

 private:
  static KernelArg arg(cl_mem m) { return {KernelArg::Kind::Mem, m, 0, 0}; }
  static KernelArg arg(int32_t v) { return {KernelArg::Kind::Int32, nullptr, v, 0}; }
  static KernelArg arg(int64_t v) { return {KernelArg::Kind::Int64, nullptr, v, 0}; }
  static KernelArg arg(float v) { return {KernelArg::Kind::Float32, nullptr, 0, v}; }
  static KernelArg arg(double v) { return {KernelArg::Kind::Float64, nullptr, 0, v}; }
  void push(const std::string& file, const std::string& entry, const std::string& options,
            std::vector<KernelArg> args, std::vector<size_t> global, std::vector<size_t> local,
            const std::string& first_run_options = "");
  // Fails (unsupported) when `options` ask for float64 arithmetic (-DUSE_FP64) on a device without
  // cl_khr_fp64, before anything is compiled (else the build log is the user's only message).
  void require_fp64_support(const std::string& options);

  int step_;
  PlanSink& sink_;
  VariantUse variant_;
};

template <typename... Args>
void BuildContext::launch(const std::string& file, const std::string& entry, const std::string& options,
                          std::vector<size_t> global, std::vector<size_t> local, const Args&... args) {
  for (size_t g : global)
    if (g == 0) return;
  require_fp64_support(options);
  cl().prefetch(file, options);
  push(file, entry, options, std::vector<KernelArg>{arg(args)...}, std::move(global), std::move(local));
}

template <typename... Args>
void BuildContext::launch_tiered(const std::string& file, const std::string& entry, const std::string& options,
                                 const std::string& first_run_options, std::vector<size_t> global,
                                 std::vector<size_t> local, const Args&... args) {
  for (size_t g : global)
    if (g == 0) return;
  require_fp64_support(options);
  require_fp64_support(first_run_options);
  push(file, entry, options, std::vector<KernelArg>{arg(args)...}, std::move(global), std::move(local),
       first_run_options);
}

// OpenCL C type that stores `t` ("float", "long", "uchar" for bool ...); fails for types the
// device kernels do not handle.
const char* cl_type(DType t);

}  // namespace oi
