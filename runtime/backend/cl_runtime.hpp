// Thin RAII layer over the OpenCL C API: device discovery, one context and in-order queue, device
// buffers, and a two-level program cache (memory by source+options, disk by a hash of source,
// options, device, driver and cache format).
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <atomic>

#include <functional>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ocl_infer/ocl_infer.hpp"
#include "runtime/backend/device_caps.hpp"

namespace oi {

const char* cl_error_name(cl_int err);
// Throws ocl_infer::DeviceError "<call> failed: <CL_ERROR_NAME>" when err != CL_SUCCESS.
void cl_check(cl_int err, const char* call);

// Source of an embedded kernel file ("elementwise" for kernels/elementwise.cl). When
// $OCL_INFER_KERNEL_DIR is set, the file is read from that folder instead. Throws when unknown.
std::string kernel_source(const std::string& name);
// 16 hex digits identifying the kernel sources this process compiles (for the tuning cache).
std::string kernel_sources_hash();
// FNV-1a, 64 bit (cache keys; whoever needs certainty stores the full key beside it), and a
// value as 16 hex digits.
uint64_t fnv1a(const std::string& s);
std::string hex16(uint64_t v);
// Whether `s` is 16 hex digits (a hex16() key read back from a file).
bool is_hex16(const std::string& s);
// The value of 16 hex digits (a hex16() key); false for anything else.
bool parse_hex16(std::string_view s, uint64_t* v);
// A whole file's bytes, empty when it cannot be read (the caches' ledgers: missing is empty).
std::string read_file_or_empty(const std::string& path);
// The tab-separated fields of a line of one of the cache folder's files, empty ones included (an
// empty line is one empty field).
std::vector<std::string> split_tabs(const std::string& line);
// What every program's build options end with ($OCL_INFER_EXTRA_BUILD_OPTIONS, with a leading
// space; "" when unset).
const std::string& build_options_suffix();

struct DeviceHandle {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  ocl_infer::DeviceInfo info;
};

// Reads the device's capabilities.
DeviceCaps query_caps(cl_device_id device);

// The process's shared contexts (one per device; see shared_context in cl_runtime.cpp):
// release_shared_contexts drops the process's references (ocl_infer::release_shared_contexts);
// shared_context_count says how many it holds (for tests).
void release_shared_contexts();
int shared_context_count();

// All devices of all platforms, in a stable order. Throws DeviceError when there is no platform.
std::vector<DeviceHandle> enumerate_devices();
// Resolves SessionOptions::device (see the public header). Throws DeviceError listing the devices
// when nothing matches.
DeviceHandle select_device(const std::string& spec);

// A device buffer; released when the last shared_ptr goes.
//
// Sub-buffers of one buffer are released in the reverse of their creation, whatever order their
// last references go in: a sub-buffer whose owner lets go while a later one lives is only marked,
// and released with the later ones. NVIDIA's 580 driver crashes (a null read in
// clReleaseMemObject) releasing a sub-buffer that overlaps one created after it once either was
// written; last-created-first it does not (tools/subbuffer_probe; docs/drivers.md, "GPUs").
struct DeviceBuffer {
  cl_mem mem = nullptr;
  size_t bytes = 0;
  std::shared_ptr<DeviceBuffer> parent;  // for sub-buffers
  // The host memory a CL_MEM_USE_HOST_PTR buffer reads (ClRuntime::upload_shared): kept alive,
  // and unchanged, while the buffer lives.
  std::shared_ptr<const void> host;
  ~DeviceBuffer();

  // A parent's sub-buffers in creation order, those no longer referenced marked released.
  struct SubBuffer {
    cl_mem mem;
    bool released;
  };
  std::mutex subs_mu;
  std::vector<SubBuffer> subs;
  void add_sub(cl_mem m);
  void release_sub(cl_mem m);
};
using BufferPtr = std::shared_ptr<DeviceBuffer>;

struct KernelDeleter {
  void operator()(cl_kernel k) const;
};
using KernelPtr = std::unique_ptr<std::remove_pointer_t<cl_kernel>, KernelDeleter>;

struct CompileStats {
  double compile_ms = 0;
  int built = 0;
  int cached = 0;
  int bundled = 0;  // (file, options) units built inside a program bundle (each bundle counts once in built/cached)
};

struct ProgramPool;  // the process's compiled programs, per shared context (cl_runtime.cpp)

class ClRuntime {
 public:
  // profiling: create the queue with CL_QUEUE_PROFILING_ENABLE.
  ClRuntime(const DeviceHandle& dev, const std::string& cache_dir,
            std::function<void(const std::string&)> log, bool profiling = false);
  ~ClRuntime();
  ClRuntime(const ClRuntime&) = delete;
  ClRuntime& operator=(const ClRuntime&) = delete;

  const ocl_infer::DeviceInfo& info() const { return dev_.info; }
  const DeviceCaps& caps() const { return caps_; }
  cl_context context() const { return context_; }
  cl_command_queue queue() const { return queue_; }
  // The disk cache directory of compiled programs ("" when off).
  const std::string& cache_dir() const { return cache_dir_; }
  cl_device_id device() const { return dev_.device; }
  bool has_fp64() const { return caps_.fp64; }
  // Options every program of this device is built with, after its own: correctly rounded
  // division and square root where the device offers them (DeviceCaps::correct_div_sqrt).
  std::string device_options() const;
  bool profiling() const { return profiling_; }

  // Allocates `bytes` (at least 1) of device memory. Throws DeviceError (out of memory names the
  // size) on failure.
  BufferPtr alloc(size_t bytes);
  // A view of bytes [offset, offset+bytes) of `parent`; offset must be a multiple of
  // base_addr_align(). The view keeps the parent alive.
  BufferPtr sub_buffer(const BufferPtr& parent, size_t offset, size_t bytes);
  // CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes.
  size_t base_addr_align() const { return caps_.base_addr_align_bytes; }
  // Allocates and fills synchronously from host memory.
  BufferPtr upload(const void* data, size_t bytes);
  // A read-only buffer with the contents of `data` (`bytes` long), which `owner` keeps alive and
  // nobody changes while the buffer lives. On CPU devices, with `data` aligned to 64 bytes, the
  // buffer uses that memory itself (CL_MEM_USE_HOST_PTR: no device allocation, no copy;
  // $OCL_INFER_ZERO_COPY=0 turns it off); otherwise it is upload().
  BufferPtr upload_shared(std::shared_ptr<const void> owner, const void* data, size_t bytes);
  // Milliseconds spent in upload() so far (allocation and the blocking write), all threads.
  double upload_ms() const { return upload_us_.load() / 1000.0; }

  // A new kernel object for `entry` in kernels/<file>.cl built with `options`. Programs are
  // cached in memory and on disk. Throws KernelBuildError with the build log.
  KernelPtr kernel(const std::string& file, const std::string& entry, const std::string& options);
  // With $OCL_INFER_PARALLEL_BUILDS=1: starts building kernels/<file>.cl with `options` on a
  // worker thread (at most one per CPU core), so that the programs of a plan build in parallel;
  // kernel() then waits for it. A no-op when the program exists or is under way, and by default.
  // Build errors surface from kernel().
  void prefetch(const std::string& file, const std::string& options);

  // Builds the programs of `units` ((file, options) as kernel() takes them) that no earlier call
  // built, as one program bundle (runtime/backend/program_bundle.hpp); kernel() then takes their
  // kernels from it. Fewer than two such units, or options other than -D definitions, are left to
  // kernel(); units whose options end with kUnoptimizedFlag (program_bundle.hpp) make a bundle of
  // their own, built with that flag. A bundle that fails to build is logged and its units are
  // built one by one later (with $OCL_INFER_BUNDLE_STRICT=1 that is an error when every unit builds
  // alone; the tests set it). $OCL_INFER_BUNDLE=0 turns bundling off.
  void build_bundle(const std::vector<std::pair<std::string, std::string>>& units);

  // The (file, options) units of the bundle that holds the unit (file, options), in the bundle's
  // order; empty when that unit is not in a bundle.
  std::vector<std::pair<std::string, std::string>> bundle_units(const std::string& file,
                                                                const std::string& options) const;
  // Builds exactly `units`, in this order, as one bundle, unless the first of them is bundled
  // already: the program another process built from the same units (a compile helper's). When it
  // does not build, bundle_units() of its units stays empty.
  void build_bundle_exact(const std::vector<std::pair<std::string, std::string>>& units);
  // The same, also when some of the units are in another bundle already (they keep their kernels
  // from it): a plan built again with its own kernels after a tier-up (runtime/exec/compile_helpers.hpp)
  // loads the bundle the background process compiled.
  void build_bundle_again(const std::vector<std::pair<std::string, std::string>>& units);
  // The bundle a process that has built nothing yet would make of `units` (a plan's, in its
  // order) with build_bundle: the units recorded for that plan, or those the registry lets in
  // (recorded now as that plan's); empty when it would make none.
  std::vector<std::pair<std::string, std::string>> fresh_bundle(
      const std::vector<std::pair<std::string, std::string>>& units);
  // Whether ocl-infer stores no binaries for this device because its driver keeps its own cache of
  // compiled kernels, which other processes share (PoCL). Decided once per device and driver.
  bool driver_keeps_binaries() { return !storing_binaries(); }
  // Format version, device name, platform, driver and device version: what binaries and
  // decisions kept on disk belong to.
  std::string device_key() const;

  // Totals so far (compile_ms sums the builds' own times, which overlap when parallel).
  CompileStats compile_stats() const;

  // Whether the driver runs long loops to the end. Mesa 22.3's rusticl on llvmpipe stops every
  // loop after 65,535 iterations (its graphics shaders' loop limiter), silently: a kernel with a
  // long reduction then returns wrong numbers. Measured once per device and driver by a probe
  // kernel (cached in the cache folder as loops-<device>.txt, and per process). On such a device
  // this throws DeviceError, unless $OCL_INFER_ALLOW_LOOP_LIMIT=1, which logs a warning instead
  // (for testing the GPU-shaped kernels, whose loops are short, on rusticl).
  void check_loops();

  // Programs this runtime compiled from source without storing their binaries (the driver's
  // binary read-back is slow: PoCL compiles every kernel again to hand it out), kept so that a
  // background process can store them later (runtime/exec/binary_store.hpp): a PoCL start that
  // loads them as binaries skips the driver's preprocessing of each program's source (~20 ms a
  // program, even from its cache). Empty without a cache folder or with $OCL_INFER_STORE_BINARIES=0.
  struct UnstoredProgram {
    std::string file, src, options;
  };
  // Hands them over (and forgets them).
  std::vector<UnstoredProgram> take_unstored_programs();
  // The path of a program's disk cache entry ("" without a cache folder).
  std::string cache_entry_path(const std::string& file, const std::string& src, const std::string& options) const {
    return cache_entry(file, src, options).first;
  }
  // Builds `src` (the driver's cache answers, if it built it before), reads its binary back,
  // checks that the binary loads again with the same kernels, and writes the disk cache entry
  // that load_or_build_source would find. False when the driver gives no binary, the binary does
  // not load back, or there is no cache folder.
  bool store_program_binary(const UnstoredProgram& p);

 private:
  // The disk cache entry of a program: its path ("" without a cache folder) and full key.
  std::pair<std::string, std::string> cache_entry(const std::string& file, const std::string& src,
                                                  const std::string& options) const;
  std::vector<UnstoredProgram> unstored_;  // guarded by mu_
  std::atomic<long long> upload_us_{0};
  cl_program program(const std::string& file, const std::string& options);
  // The process's program pool (see ProgramPool in cl_runtime.cpp): a program built by an earlier
  // runtime, retained for the caller (null when none); a program this runtime built, handed to
  // the pool; a pooled bundle holding the unit, taken into bundled_ (false when none);
  // whether the pool has the unit at all. Lock order: mu_ before the pool's.
  cl_program pooled_program(const std::string& key);
  void pool_program(const std::string& key, cl_program p, size_t bytes);
  bool adopt_pooled_bundle(const std::string& file, const std::string& options);
  bool in_pool(const std::string& file, const std::string& options) const;
  // Loads from the disk cache or compiles; thread-safe.
  cl_program load_or_build(const std::string& file, const std::string& options);
  // The same for any source; `file` names it in the cache and the log (kBundleName for a bundle).
  cl_program load_or_build_source(const std::string& file, const std::string& src, const std::string& options);
  static constexpr const char* kBundleName = "bundle";
  // Which of `todo` go into the bundle. Without a cache folder, all. Otherwise a registry there
  // (bundles-<device>.txt: the units built on their own so far, those built in bundles, and, per
  // plan, the units it bundled) decides: a plan seen before bundles what it bundled then (the
  // driver's cache has that program); a new one bundles the units not built on their own before
  // (those the driver's cache has as programs of their own), and a small new plan only units that
  // no earlier program built. `plan_units`: how many units the plan has in all (0: todo's), which
  // decides whether it is small (a first run's optimised units are a part of a large plan).
  std::vector<std::pair<std::string, std::string>> choose_bundle_units(
      const std::vector<std::pair<std::string, std::string>>& todo, size_t plan_units = 0);
  // The units that nothing has built yet, each once, in the plan's order, that can go into a
  // bundle (-D options only): the same model makes the same bundle, which the driver's cache
  // then knows.
  std::vector<std::pair<std::string, std::string>> unbuilt_units(
      const std::vector<std::pair<std::string, std::string>>& units) const;
  // New plans of at most this many units leave units that an earlier bundle built to their own
  // programs (see choose_bundle_units).
  static constexpr size_t kSmallPlanUnits = 4;
  // The id naming a unit (source, options, device, driver); 16 hex digits in the registry.
  uint64_t unit_id(const std::string& file, const std::string& options_with_extra) const;
  // Reads the registry once; called with registry_mu_ held.
  void load_registry();
  void append_registry(const std::string& lines);
  // Records that kernels/<file>.cl with these options was built as a program of its own.
  void note_separate_build(const std::string& file, const std::string& options_with_extra);
  // Builds `units` as one bundle and registers them.
  void build_bundle_now(const std::vector<std::pair<std::string, std::string>>& units, bool strict);
  // clBuildProgram on this device with `options` + device_options() (every build and every load of
  // a stored binary).
  cl_int build_program(cl_program p, const std::string& options) const;
  cl_program build_from_source(const std::string& src, const std::string& options,
                               const std::string& file);
  // Whether programs built from source go to the disk cache (see store_binaries_).
  bool storing_binaries();
  // Reads the binary of `prog` back from the driver and writes the cache entry.
  void store_binary(cl_program prog, const std::string& path, const std::string& full_key);
  // Measures, on a probe build of a small program, whether this driver hands out binaries
  // cheaply, and keeps the decision in policy_path_. Called with policy_mu_ held.
  void decide_binary_storage();
  // The same decision measured on an already built probe program (the loop probe), by the time
  // its binary takes to read back; nothing when there is no cache folder or a decision exists.
  void decide_binary_storage_on(cl_program prog);
  // policy_path_ and a decision read from it into store_binaries_. Called with policy_mu_ held.
  void read_binary_policy();
  // Sets store_binaries_, writes the decision file and logs why (build_ms < 0: not measured).
  void record_binary_policy(double read_ms, double build_ms, bool fast);

  DeviceHandle dev_;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  DeviceCaps caps_;
  bool profiling_ = false;
  std::string cache_dir_;
  std::function<void(const std::string&)> log_;
  std::shared_ptr<ProgramPool> pool_;  // null once the context is no longer the shared one
  std::map<std::string, cl_program> programs_;
  std::map<std::string, std::shared_future<cl_program>> pending_;  // prefetched, by the same key
  // Units built in a bundle, by file + '\n' + options (without the extra options): the bundle and
  // the suffix of the unit's kernel names in it.
  std::map<std::string, std::pair<cl_program, std::string>> bundled_;
  std::vector<cl_program> bundles_;
  std::map<cl_program, std::vector<std::pair<std::string, std::string>>> bundle_units_;  // by bundle
  // The bundle registry (see choose_bundle_units), read on first use.
  std::mutex registry_mu_;
  std::string registry_path_;
  // Ids (hex16 in the file) as numbers: a long-used cache has tens of thousands of lines, read at
  // every start.
  std::unordered_set<uint64_t> separate_units_, bundled_units_;
  std::unordered_map<uint64_t, std::unordered_set<uint64_t>> plan_bundles_;
  mutable std::mutex mu_;       // programs_, pending_, stats_
  std::mutex log_mu_;           // log_ from worker threads
  std::mutex slots_mu_;         // worker slots
  std::condition_variable slots_cv_;
  int free_slots_ = 0;
  CompileStats stats_;
  // Storing binaries in the disk cache: 1 yes, 0 no, -1 not decided yet. Drivers that compile
  // kernels lazily (PoCL: at the first launch) compile every kernel of a program again, without
  // specialisation, to hand out its binary, which cost 0.55 s per program against a 0.2 s build;
  // such drivers keep their own cache. A probe program measures this once per device and the
  // decision is kept in the cache directory ($OCL_INFER_STORE_BINARIES=1|0 overrides it).
  int store_binaries_ = -1;
  std::string policy_path_;
  std::mutex policy_mu_;
};

}  // namespace oi
