// Keeps a CPU driver's idle worker threads awake between the kernels of one run.
//
// PoCL's pthread driver hands out a kernel's work-groups to its worker threads; a worker that
// finds no work-group left (the other worker still finishing the kernel's last ones) sleeps on a
// condition variable, and is woken when the next kernel of the in-order queue becomes ready. In the
// 2-core AMD EPYC Zen 5 VM of development (PoCL 3.1) that wake-up takes 10-25 us, so every kernel
// boundary cost about 14 us of one core -- 15-20 % of a small CNN's latency (mobilenet_v2 has 55
// kernels in ~3 ms).
//
// KeepWarm gives the idle worker something to do instead: a second in-order queue holding a chain
// of empty markers. A worker completes marker after marker (~0.7 us each; the driver serves ready
// kernels before other commands) and takes the next kernel's work-groups as soon as they exist.
// It costs the host ~0.4 us per marker to enqueue (same machine), and no CPU time that the workers
// would have spent on kernels.
//
// The executor feeds markers_per_launch markers after each kernel it enqueues; markers left over
// from the previous run count against this run's supply, so at most one run's worth is ever
// outstanding (checked through an event on every 16th marker). A failed enqueue switches it off.
//
// Whether they pay depends on the machine: on the 2-core AMD EPYC VMs they took 4-20 % off small
// CNNs, on a 2-core Intel Xeon (AVX-512) VM the same CNNs ran within noise with and without, and a
// GPT-style decoder of 18 kernels of 1-5 us took 0.63 ms (median) with 12 markers against 0.27
// with none: each marker cost ~1.7 us there, on the host and on the workers. So where no count is
// set (adaptive), the first kTrialRuns runs of a plan after its first alternate between the
// markers and none, and the markers stay unless their median wall time was the larger.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>
#include <string>
#include <utility>

#include "runtime/backend/cl_runtime.hpp"

namespace oi {

class KeepWarm {
 public:
  // markers_per_launch 0: does nothing. adaptive: choose between markers_per_launch and none by
  // timing the first runs (record_run).
  KeepWarm(ClRuntime& cl, int markers_per_launch, bool adaptive = false);
  ~KeepWarm();
  KeepWarm(const KeepWarm&) = delete;
  KeepWarm& operator=(const KeepWarm&) = delete;

  // The markers per launch in use (while the trial runs: the count being tried against none).
  int markers_per_launch() const { return per_launch_; }
  // The markers per launch of the run begun last (0 on an adaptive trial's run without).
  int markers_this_run() const { return run_markers_; }
  // Runs of the adaptive trial still to come (0: decided, or a fixed count).
  int trial_runs_left() const;
  static constexpr int kTrialRuns = 10;
  // Markers enqueued so far, and how many of them may still be pending (an upper bound: their
  // completion is seen through an event on every 16th).
  uint64_t enqueued() const { return enqueued_; }
  uint64_t outstanding() const { return enqueued_ - completed_; }
  // Before a run of `launches` kernels: this run may enqueue markers_per_launch x launches, less
  // those of earlier runs that may still be pending.
  void begin(size_t launches);
  // After each kernel of the run: up to markers_per_launch markers, within that allowance.
  void feed();
  // After the run's last kernel.
  void end();
  // After a whole run of `plan` (its wall time, outputs read back): counts towards the adaptive
  // trial, which restarts when the plan changes. Returns what was decided when this run ended the
  // trial (a line for the log), else "".
  std::string record_run(const void* plan, double ms);

  // Markers per kernel launch for a device: `requested` when >= 0, else $OCL_INFER_KEEP_WARM when
  // it is a number >= 0, else 12 on CPU devices with two or more compute units (where a kernel's
  // work-groups are shared by worker threads that sleep when idle), else 0. `why` says which;
  // `adaptive` (when given) is set where the default of 12 applies: to be tried against none.
  static int resolve(int requested, bool cpu_device, unsigned compute_units, std::string* why,
                     bool* adaptive = nullptr);

 private:
  void poll();

  cl_command_queue queue_ = nullptr;
  int per_launch_ = 0;
  int run_markers_ = 0;  // this run's markers per launch (per_launch_, or 0 on a trial run without)
  bool adaptive_ = false;
  const void* trial_plan_ = nullptr;
  std::vector<double> trial_on_, trial_off_;  // wall times (ms) of the trial's runs
  uint64_t enqueued_ = 0;   // markers enqueued since the start
  uint64_t completed_ = 0;  // markers known to be complete (by their checkpoint events)
  uint64_t budget_ = 0;     // markers this run may still enqueue
  std::deque<std::pair<uint64_t, cl_event>> checkpoints_;  // (markers enqueued up to it, its event)
};

}  // namespace oi
