// Compile helpers: processes that compile a plan's kernels into the driver's cache while the plan's
// first run compiles them too, from the other end.
//
// PoCL compiles each kernel at its first launch (0.1-0.8 s of LLVM work per kernel on a Zen 5 core)
// under one process-wide LLVM lock, so a first run compiles one kernel after another on one core
// however many the machine has; resnet18's first run spent ~2.5 of its ~3.5 s there. The driver
// keeps what it compiled in a disk cache that every process shares, written atomically. So, on a
// plan's first run, helper processes (the `ocl-infer` executable, started with a job file) build
// the same programs and launch the plan's kernels in reverse order on zero-filled buffers with the
// plan's own geometry, while the run goes forward; whatever a helper finished before the run gets
// there is a cache hit. The run never waits for a helper and kills them when it is done; a helper
// that fails changes nothing but the time.
//
// Only for drivers that keep their own cache (ClRuntime::driver_keeps_binaries()) and with a cache
// folder: a ledger there (compiled-<device>.txt) lists the kernel specialisations that runs have
// launched, so that later runs start no helper. $OCL_INFER_COMPILE_HELPERS=N caps the helpers
// (default: one per further CPU core, at most 3; 0 turns them off); $OCL_INFER_COMPILE_HELPER
// names the executable (default: `ocl-infer` beside the library or in ../bin).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

namespace oi {

class ClRuntime;
struct DeviceCaps;
struct Launch;
struct Plan;

class CompileHelpers {
 public:
  // Before a plan's first run: finds the plan's kernel specialisations missing from the ledger and
  // starts helpers for them when there are at least two. Null when helpers do not apply here
  // (driver, cache folder, setting); otherwise an object whose finished() records the plan.
  static std::unique_ptr<CompileHelpers> start(const Plan& plan, ClRuntime& cl,
                                               const std::function<void(const std::string&)>& log);
  // Kills the helpers still running and reaps them.
  ~CompileHelpers();
  CompileHelpers(const CompileHelpers&) = delete;
  CompileHelpers& operator=(const CompileHelpers&) = delete;

  // After the first run succeeded: stops the helpers and adds the plan's new specialisations to
  // the ledger.
  void finished();
  int helpers() const { return static_cast<int>(pids_.size()); }
  int new_kernels() const { return static_cast<int>(new_specs_.size()); }
  // Whether every kernel of the plan was in the ledger (a warm start); call before finished().
  bool warm() const { return new_specs_.empty(); }

 private:
  CompileHelpers() = default;
  void stop();
  std::string ledger_path_;
  std::vector<uint64_t> new_specs_;  // hashes of specialisations not in the ledger
  std::vector<pid_t> pids_;
  std::vector<std::string> jobs_;  // the helpers' job files
};

// After a plan's first run found every kernel in the driver's cache (a warm start) on a driver
// whose binaries ocl-infer does not store at build time (PoCL: reading one back compiles every
// kernel of the program again): starts one detached, low-priority process (the same executable)
// that builds the programs this runtime compiled from source once more (cache hits), reads their
// binaries back and writes them to ocl-infer's cache folder. The next start loads them as
// binaries, without the driver preprocessing each program's source (~20 ms a program, also from
// its cache): the GPT-style decoder's warm CLI process 0.25 -> 0.06 s on the 2-core Xeon. Each
// program is handed over once per runtime; one that another process is storing (a lock file beside
// its entry, younger than 10 minutes) is left to it. Nothing happens without a cache folder, with
// $OCL_INFER_STORE_BINARIES=0 or $OCL_INFER_COMPILE_HELPERS=0, or when no program waits. Returns
// the number of programs handed over.
int store_binaries_in_background(ClRuntime& cl, const std::function<void(const std::string&)>& log);

// Tier-up. On a driver that compiles each kernel at its first launch (PoCL), a plan's first run
// can use first-run kernels (Launch::first_run_options): the same values, far less code to
// generate (depthwise convs with the row widths as arguments: one program for every width of a
// network instead of one per width; mobilenet_v2's first run 3.5 -> 2.3 s). After that run a
// detached background process (the same executable, nice 10; its pid in a lock file) builds the
// plan's own programs in the bundle a fresh process makes of them, launches each kernel once into
// the driver's cache, adds them to the ledger and leaves a marker (tiered-<device>-<plan>.txt in
// the cache folder, with the bundle's units), or a .failed file when not every kernel compiled.
// At the start of a later run the session builds the plan again with its own kernels (loaded
// from the driver's cache; after a failure, or a helper that never ran, compiled at their first
// launch), and later processes start with them. Applies with a writable cache folder on such a
// driver, unless $OCL_INFER_FIRST_RUN_KERNELS=0 or $OCL_INFER_COMPILE_HELPERS=0.
bool first_run_kernels_apply(ClRuntime& cl);
// Which launches of a plan's first run take their kernel at the driver's lowest optimisation
// level (Launch options + kUnoptimizedFlag): pick_unoptimized (runtime/backend/program_bundle.hpp)
// over the launches' programs and work. Only launches that may run first-run kernels count
// (`eligible`).
std::vector<bool> unoptimized_first_run(const std::vector<Launch>& launches, const std::vector<bool>& eligible,
                                        const DeviceCaps& caps);

// "N launches ran first-run kernels (M of them unoptimised code)", for the log.
std::string first_run_summary(const Plan& plan);

// Names a plan by its launches with their own options (and the kernel sources, the device).
uint64_t tier_plan_id(const ClRuntime& cl, const std::vector<Launch>& launches);
enum class TierState {
  None,     // nothing known: no helper at it, no result
  Running,  // a live helper holds the lock
  Done,     // the plan's own kernels are compiled (`bundle`: the units of their bundle)
  Failed,   // a helper could not compile them all
};
TierState tier_state(const ClRuntime& cl, uint64_t plan_id,
                     std::vector<std::pair<std::string, std::string>>* bundle);
// Whether the ledger lists every launch of the plan with its own options (in Plan::tier_bundle):
// an earlier process ran them without first-run kernels.
bool own_kernels_known(const ClRuntime& cl, const Plan& plan);
// After the first run of `plan` with first-run kernels: starts the background process unless
// tier_state is other than None. Returns whether it started one.
bool start_tier_up(const Plan& plan, ClRuntime& cl, const std::function<void(const std::string&)>& log);

// The helper's side: runs the job in `job_path` (and deletes the file): a compile job, a tier-up
// job from start_tier_up, or a binary-store job from store_binaries_in_background. Returns the process's exit status: 0 done,
// 2 unreadable job, 3 the job is for other kernel sources or another device.
int compile_helper_main(const std::string& job_path);

}  // namespace oi
