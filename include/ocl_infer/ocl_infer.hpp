// ocl-infer public API: the one header an application includes.
//
// A Session loads an ONNX model, plans it for the shapes of the inputs it is fed, and runs it on
// one OpenCL device. Everything that can go wrong is reported by throwing ocl_infer::Error (or one
// of its subclasses); nothing in the library aborts or exits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace ocl_infer {

// ---------------------------------------------------------------------------------------------
// Errors. Every message is one line that names what was wrong (and the node, when there is one);
// control characters, newlines included, that came from a model file are escaped (\xNN) so they
// never reach a terminal raw. Only a kernel build error has more lines: the compiler's log.
// Escapes control characters; with keep_lines, newlines and tabs stay.
std::string printable_message(const std::string& what, bool keep_lines = false);
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(printable_message(what)) {}

 protected:
  Error(const std::string& what, bool keep_lines) : std::runtime_error(printable_message(what, keep_lines)) {}
};
// The model file is missing, not ONNX, truncated, inconsistent or refers to absent values.
class ModelError : public Error {
 public:
  using Error::Error;
};
// The model uses operators (or attributes) this runtime does not implement; the message lists all.
class UnsupportedError : public Error {
 public:
  using Error::Error;
};
// The caller fed an input of the wrong name, rank, shape or dtype, or a bad option.
class InputError : public Error {
 public:
  using Error::Error;
};
// An OpenCL call failed (the message names the call and the CL error), no device exists, or the
// device ran out of memory.
class DeviceError : public Error {
 public:
  using Error::Error;

 protected:
  DeviceError(const std::string& what, bool keep_lines) : Error(what, keep_lines) {}
};
// An OpenCL program failed to build; the message includes the build log (several lines).
class KernelBuildError : public DeviceError {
 public:
  explicit KernelBuildError(const std::string& what) : DeviceError(what, true) {}
};

// ---------------------------------------------------------------------------------------------
// Element types, numbered as in ONNX's TensorProto.DataType.
enum class DType : int32_t {
  Undefined = 0,
  Float32 = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Float64 = 11,
  UInt32 = 12,
  UInt64 = 13,
  // Stored as the upper 16 bits of a float32; only Cast and CastLike (and moving it unchanged)
  // take it on the device.
  BFloat16 = 16,
};

// Bytes per element; 0 for Undefined and String.
size_t dtype_size(DType t);
// ONNX-style lower-case name ("float32", "int64", ...).
const char* dtype_name(DType t);

// A dense, row-major tensor in host memory. Owns its bytes.
struct Tensor {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  Tensor() = default;
  // Zero-filled. Throws InputError for a negative dim or a size beyond 2^48 bytes.
  Tensor(DType t, std::vector<int64_t> s);
  int64_t numel() const;
  template <typename T>
  T* data() {
    return reinterpret_cast<T*>(bytes.data());
  }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(bytes.data());
  }
};

// IEEE binary16 <-> float32, for float16 tensors (Tensor::data<uint16_t>()): half_to_float is exact;
// float_to_half rounds to nearest even, and values beyond the float16 range become +-inf.
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);

// "[1,3,224,224]"; a negative dim prints as its symbolic name when given, else "?".
std::string shape_to_string(const std::vector<int64_t>& shape);

// ---------------------------------------------------------------------------------------------
// Devices.
struct DeviceInfo {
  int index = 0;  // position in list_devices(), usable as SessionOptions::device
  std::string name, vendor, platform, driver_version, device_version, opencl_c_version;
  std::string type;  // "GPU", "CPU", "ACCELERATOR" or "OTHER"
  uint64_t global_mem_bytes = 0;
  uint64_t max_alloc_bytes = 0;
  uint32_t compute_units = 0;
  bool fp64 = false;  // cl_khr_fp64: float64 arithmetic runs here (else it is an UnsupportedError)
  bool fp16 = false;  // cl_khr_fp16 (float16 storage works without it, converted in the kernels)
};

// Every OpenCL device of every platform. Throws DeviceError when no platform is installed.
std::vector<DeviceInfo> list_devices();

// Sessions on one device share one OpenCL context per process, which the process keeps after its
// last session goes, so that later sessions find the driver's compiler set up (PoCL: its kernel
// library, parsed at the first build from source: about 110 MB and 0.4-0.5 s to read), and with
// it the kernel programs its sessions compiled (up to 256 programs, the oldest dropped first), so
// that a later session with the same kernels compiles none. This drops the process's references:
// each context, its programs and that memory go when its last session does (to the allocator;
// glibc's malloc_trim(0) hands it back to the system); later sessions make a new one and compile
// (or load from the disk caches) as a new process would. Safe to call at any time, from any
// thread.
void release_shared_contexts();

// Float32: every tensor in float32. Float16: float32 tensors inside the model stored as float16
// (half the memory and bytes moved), every arithmetic and accumulation still in float32; inputs
// and outputs keep their types.
enum class Precision { Float32, Float16 };

// SessionOptions::keep_warm: the idle-worker spin kernel, without a trial against none.
constexpr int kKeepWarmSpin = -2;

struct SessionOptions {
  // "" takes $OCL_INFER_DEVICE when set, else picks the first GPU or accelerator, else the first
  // CPU device. A decimal number picks that index of list_devices(); anything else picks the first
  // device whose name contains it (case-insensitive).
  std::string device;
  Precision precision = Precision::Float32;
  // With Precision::Float16: op types whose nodes keep float32 storage for all their tensors
  // ("Softmax", "LayerNormalization", ...). Unknown op types are an InputError.
  std::vector<std::string> fp32_ops;
  // Directory for compiled-kernel binaries; "" = $OCL_INFER_CACHE_DIR, else $XDG_CACHE_HOME/ocl-infer,
  // else ~/.cache/ocl-infer. "off" disables the disk cache.
  std::string cache_dir;
  // Receives progress and diagnostics (device chosen, compile progress); may be empty. Notices of
  // slow work ("compiling ...", after a second or two of a first compile) come from a helper thread.
  std::function<void(const std::string&)> log;
  // Records per-kernel OpenCL event timings on every run (see Session::profile()). Off by default;
  // when off the queue is created without profiling and no events are made.
  bool profiling = false;
  // Graph optimizer: 0 runs no passes (for debugging and comparisons), 1 runs them all except
  // those named in disabled_passes (see `ocl-infer --help` for their names).
  int optimization_level = 1;
  std::vector<std::string> disabled_passes;
  // Place activations in one device arena by liveness; false gives every tensor its own buffer.
  bool plan_memory = true;
  // Memory the session may use, in bytes: every size that comes from the model (constants, each
  // value's shape) and the plan's device memory (activations + weights + scratch) are checked
  // against it before anything is allocated. 0: the device's global memory, or the memory the host
  // can still give this process (MemAvailable, the cgroup limit, RLIMIT_AS) when that is less (the
  // model is read while the device opens: its constants are checked against the host's share as
  // they are read, and against the device's once it is open).
  uint64_t max_memory_bytes = 0;
  // Forces kernel variants, for tests, comparisons and tuning experiments:
  // "family=variant[:param=value,...];..." e.g. "conv=packed:ocb=8,owb=4;gemm=packed:mr=4" (see
  // kernel_variants() for what exists). A forced variant is used where it applies, with its other
  // parameters at their defaults; elsewhere the default choice stands (--dump plan says which).
  // Empty: $OCL_INFER_VARIANT when set, else the default choice per device.
  std::string kernel_variants;
  // Autotuning. The tuning cache file: "" = $OCL_INFER_TUNING_CACHE when set, else tuning.tsv in
  // the kernel cache directory (see cache_dir; none when that is "off"); "off": no file. Tuned
  // results in it are used whenever they exist for this device, driver and kernel sources.
  std::string tuning_cache;
  // Measure the kernel variants of every problem (conv, gemm, pool, norm shapes) that has no
  // tuned result while planning, keep the fastest, and save them to the tuning cache. Planning
  // then takes seconds to minutes; later sessions reuse the results without this flag.
  bool tune = false;
  // Stop measuring new problems after this many seconds of tuning (0: no limit); the rest keep
  // the heuristics.
  double tune_budget_seconds = 0;
  // On a driver that compiles each kernel at its first launch (PoCL), a plan whose kernels are not
  // compiled yet runs its first run on first-run kernels (quick variants, and unoptimised code
  // where that costs little: a 1.5-2x faster cold start) while a background process compiles the
  // plan's own, which later runs take up (docs/cli.md, "Compile helpers"). false: the plan's own
  // kernels from the first run (what a benchmark of a cold cache wants to measure).
  bool first_run_kernels = true;
  // Keeping a CPU driver's idle worker threads busy between the kernels of a run (docs/cli.md,
  // "Kernel boundaries on CPU devices"): PoCL's workers sleep when a kernel runs out of
  // work-groups, and waking one costs 10-40 us in a VM. -1 (automatic): $OCL_INFER_KEEP_WARM when
  // set ("spin" or a number of markers), else on CPU devices with two or more compute units a
  // one-work-item spin kernel on a second queue before each kernel, which returns when that kernel
  // starts, tried against none on the runs after the first (Stats::keep_warm_trial_runs) and
  // dropped where slower; off elsewhere. -2 (kKeepWarmSpin): the spinner, not tried. 0: off. N > 0:
  // N empty markers per kernel launch on a second queue (the mechanism before the spinner). Not
  // used on a plan's first run (its kernels are being compiled then).
  int keep_warm = -1;
  // Model inputs whose values decide shapes or control flow (a Reshape's shape, an If's condition
  // such as a sample rate) are folded into the plan when they have at most this many elements:
  // each distinct value then gets its own plan (cached), with the branch inlined. Larger ones, or
  // all with 0, are computed on the device and the plan is cut into segments where their result
  // is needed (docs/architecture.md, "Control flow and data-dependent shapes").
  int64_t plan_time_input_limit = 4096;
  // Kernels for new input shapes. Some kernels take sizes as build options (a depthwise conv's row
  // widths, register blocks chosen for a row width), so on PoCL each new shape compiles kernels
  // (seconds). -1: the first shape's plan gets those specialised kernels, the plans of later
  // shapes kernels with the sizes at run time where one exists (compiled once, then shared by
  // every further shape; some run slower, e.g. depthwise convs); $OCL_INFER_SHAPE_GENERIC=0 / 1
  // overrides. 0: always specialised. 1: shape-generic from the first plan.
  int shape_generic = -1;
};

// One kernel variant of a family (conv, gemm, pool), for SessionOptions::kernel_variants.
struct KernelVariantInfo {
  std::string family, variant, summary;
  std::map<std::string, std::vector<int>> params;  // parameter -> candidate values
};
// Every kernel variant the runtime has.
std::vector<KernelVariantInfo> kernel_variants();
// Every ONNX op type the runtime implements, sorted ("domain.Op" outside the default domain).
std::vector<std::string> supported_operators();
// One operator of the registry, for documentation (docs/operators.md is generated from these).
struct OperatorInfo {
  std::string domain;              // "ai.onnx" for the default domain
  std::string op_type;
  std::vector<int> since_versions; // the opset versions whose form is implemented, ascending
  int max_opset = 0;               // the newest opset of the domain a model may import (0: no limit)
  bool fp16_storage = false;       // with Precision::Float16 its float tensors may be float16
  std::vector<std::string> notes;  // how it runs, when that is not one plain kernel
};
// Every operator the runtime implements, sorted by domain and op type.
std::vector<OperatorInfo> operator_catalog();

// Options of one Session::run call.
struct RunOptions {
  // Intermediate values to return besides the model outputs, by name: any value an executed node
  // writes (see Session::executed_nodes(); "*" alone fetches all of them). Each is read back right
  // after the kernel that writes it, so the run keeps its buffer reuse. Values that the optimizer
  // fused away do not exist (run with optimization_level 0 to see every ONNX value).
  std::vector<std::string> fetch;
};

// A node of the current plan as it executes: after fusion one node may cover several ONNX nodes.
struct ExecutedNode {
  std::string name;
  std::vector<std::string> covers;    // the ONNX nodes it computes (itself when not fused)
  std::vector<std::string> op_types;  // their op types
  std::vector<std::string> outputs;   // the values it writes (fetchable with RunOptions::fetch)
};

// Name, element type and shape of a model input or output. Dims that the model leaves open are -1
// and carry their symbolic name in dim_names (empty string when unnamed).
struct ValueInfo {
  std::string name;
  DType dtype = DType::Undefined;
  std::vector<int64_t> shape;
  std::vector<std::string> dim_names;
};

// Measured start-up costs of a session, milliseconds.
struct SessionStats {
  double load_ms = 0;         // parsing the model file
  double plan_ms = 0;         // last shape inference + kernel selection + buffer allocation
  double compile_ms = 0;      // program builds (included in plan_ms)
  // plan_ms by phase: shape inference, optimizer passes and memory planning; lowering to kernel
  // launches (kernel choice, weight packing, tuning), of which uploading constants; building or
  // loading the programs and creating their kernels.
  double graph_ms = 0, lower_ms = 0, upload_ms = 0, programs_ms = 0;
  int programs_built = 0;     // compiled from source
  int programs_cached = 0;    // loaded from the disk cache
  int programs_bundled = 0;   // kernel programs built inside one combined program (counted once above)
  int kernel_launches = 0;    // per inference in the current plan
  // Autotuning during the last planning (SessionOptions::tune): problems measured, how many got
  // a faster choice than the device-class heuristic, seconds spent, and the summed kernel times of
  // the measured problems with the heuristic's and the tuned choices (one launch each, ms).
  int tuned_problems = 0, tuned_improved = 0;
  double tuning_seconds = 0, heuristic_kernel_ms = 0, tuned_kernel_ms = 0;
  std::string tuning_cache;  // the tuning cache file in use ("" when none)
  int keep_warm = 0;         // idle-worker markers per kernel launch in use (0: off)
  bool keep_warm_spin = false;  // the idle-worker spin kernel in use (SessionOptions::keep_warm)
  // Runs left in the automatic keep-warm trial (SessionOptions::keep_warm = -1 on CPU devices: the
  // first runs after the first alternate between the spinner and none; then the faster stays), 0 when
  // decided or set. A benchmark's warm-up should cover them.
  int keep_warm_trial_runs = 0;
  // Plans for other input shapes kept for reuse (a run with one of those shapes again takes its
  // plan back instead of planning), and how many runs so far took a kept plan back.
  int plans_kept = 0;
  int plan_reuses = 0;
};

// One kernel launch of a plan, as measured by the profiler.
struct LayerProfile {
  int index = 0;                        // position in the plan's launch order
  std::vector<std::string> node_names;  // the ONNX nodes this kernel computes (several if fused)
  std::vector<std::string> op_types;
  std::vector<int64_t> output_shape;
  std::string kernel;                   // "<file>:<entry>"
  // "conv=packed:ocb=8,owb=8" for kernels chosen among variants (empty otherwise), and why:
  // "heuristic", "tuned" or "forced".
  std::string variant, variant_source;
  std::vector<size_t> global, local;    // local empty = chosen by the driver
  int runs = 0;                         // inferences aggregated
  double avg_us = 0, min_us = 0, max_us = 0;
  double start_us = 0;                  // offset of the last run's start from that run's first kernel
  double last_us = 0;                   // duration in the last run (with start_us: its timeline)
  // Launches summed into this row: a node's launches of one kernel are one row (a recurrent
  // layer's steps); times, flops and bytes are those of all of them together.
  int launches = 1;
  double flops = 0;                     // floating-point operations per run of the row (0 if not counted)
  double bytes = 0;                     // bytes read + written per run of the row (estimate from tensor sizes)
  // Event timestamps the driver returned that cannot be right (zero or negative durations, or a
  // start before the previous kernel's end on an in-order queue); empty when all were sane.
  std::string timestamp_problem;
};

// Thread safety: every member function may be called from several threads at once. run() calls
// on one session are serialised (one inference at a time per session, each returning the same
// results as if called alone); sessions share no state but the process's one OpenCL context per
// device (each has its own command queue, buffers and kernels; the context keeps the driver's
// compiler set up between sessions), so a session per thread runs in parallel.
// Moving or destroying a session while another thread uses it is not allowed.
class Session {
 public:
  // Throws ModelError / UnsupportedError / DeviceError.
  static Session from_file(const std::string& path, const SessionOptions& options = {});
  static Session from_memory(const void* data, size_t size, const SessionOptions& options = {},
                             const std::string& model_dir = "");
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;
  const DeviceInfo& device() const;

  // Runs the model. `inputs` must hold every model input by name; the session re-plans when an
  // input's shape (or the value of a shape-determining input) differs from the last run. Returns
  // every model output by name, in host memory. Throws InputError for bad inputs.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs);
  // The same, also returning the intermediate values named in `options.fetch` (InputError for a
  // name no executed node writes, listing what fusion made of it).
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs, const RunOptions& options);

  // The executed nodes of the last-planned shapes, in execution order (empty before the first
  // run).
  std::vector<ExecutedNode> executed_nodes() const;

  // Dumps of the pipeline stages for the last-planned shapes: "graph" and "plan" as text,
  // "graph.json" and "plan.json" in the schemas documented in README.md.
  std::string dump(const std::string& what) const;

  SessionStats stats() const;

  // Per-kernel-launch timings accumulated over the runs since the session was made or
  // reset_profile() was called; empty unless SessionOptions::profiling was set. One record per
  // launch of the current plan, in execution order.
  std::vector<LayerProfile> profile() const;
  void reset_profile();
  // Device time of whole inferences (first kernel start to last kernel end), microseconds, one per
  // profiled run.
  std::vector<double> profiled_inference_us() const;
  // Sum of the kernel times of each profiled run, microseconds (compare with
  // profiled_inference_us(): the difference is the idle time between kernels).
  std::vector<double> profiled_kernel_sum_us() const;
  // Wall-clock time of whole inferences (run() entry to return), microseconds, one per profiled run.
  std::vector<double> profiled_wall_us() const;

 private:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------------------------
// Post-training quantization: an fp32 model and calibration inputs -> a standard QDQ ONNX model
// (QuantizeLinear/DequantizeLinear pairs, as ONNX Runtime's static quantizer writes them) that this
// runtime runs with integer kernels and that ONNX Runtime loads too.
struct QuantizeOptions {
  // How an activation's range comes from its calibration values: "minmax" (the extremes),
  // "percentile" (the `percentile` and 100 - `percentile` points of the values), "entropy" (the
  // clipping threshold that minimises the KL divergence between the value histogram and its
  // quantized version, as TensorRT's calibrator does).
  std::string method = "minmax";
  double percentile = 99.999;
  // Weights: int8, symmetric, one scale per output channel (false: one per tensor).
  bool per_channel = true;
  // Activations: UInt8 (asymmetric, the default) or Int8 (symmetric).
  DType activation_type = DType::UInt8;
  // Node names left in float (their inputs, outputs and weights are not quantized for them).
  std::vector<std::string> exclude_nodes;
  // Device, caches and memory limit of the calibration runs (the optimizer is turned off there).
  SessionOptions session;
  // Called after each calibration input with (done, total); may be empty.
  std::function<void(size_t done, size_t total)> progress;
};

// What quantize_model did.
struct QuantizeReport {
  struct Range {
    std::string tensor;
    float min = 0, max = 0;  // the calibrated range (before widening it to include 0)
    float scale = 0;
    int zero_point = 0;
  };
  size_t calibration_inputs = 0;
  std::vector<Range> activations;          // every quantized activation, in graph order
  int weights_quantized = 0;               // Conv / Gemm / MatMul weights made int8
  int biases_quantized = 0;                // their biases made int32
  std::vector<std::string> float_nodes;    // "name (Op)" of nodes left in float
  std::vector<std::string> excluded;       // the exclude_nodes that exist
};

// Quantizes the fp32 model at `model_path`: runs it on every calibration input (each a map of all
// model inputs, as Session::run takes them), collects the ranges of the activations around Conv,
// Gemm, MatMul, Add, Concat, pooling and reshaping ops, and returns the serialized QDQ model.
// Throws InputError for an empty calibration set or bad options, ModelError / UnsupportedError as
// Session does, and ModelError for a model that is already quantized.
std::string quantize_model(const std::string& model_path, const std::vector<std::map<std::string, Tensor>>& calibration,
                           const QuantizeOptions& options = {}, QuantizeReport* report = nullptr);

// Whether the model at `path` is already quantized (QuantizeLinear / DequantizeLinear, QLinear*,
// ConvInteger / MatMulInteger nodes): it then runs in int8 as it is. Throws ModelError.
bool model_is_quantized(const std::string& path);

// Reads a serialized ONNX TensorProto file (the .pb files of the ONNX test data). Throws
// InputError when the file is unreadable or malformed.
Tensor read_tensor_proto(const std::string& path);

const char* version();

// A compile helper's work (docs/cli.md, "Compile helpers"): a session's first run on a driver such as
// PoCL starts `ocl-infer --compile-helper JOB` to compile its kernels in parallel. An application
// that names its own executable as the helper ($OCL_INFER_COMPILE_HELPER) calls this from main()
// when argv[1] is "--compile-helper", with argv[2], and exits with the returned status (0 done, 2
// unreadable job, 3 a job for other kernel sources or another device). It deletes the job file.
int run_compile_helper(const std::string& job_path);

}  // namespace ocl_infer
