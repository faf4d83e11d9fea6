// Keeps a CPU driver's idle worker threads awake between the kernels of one run.
//
// PoCL's pthread driver hands out a kernel's work-groups to its worker threads; a worker that
// finds no work-group left (the other worker still finishing the kernel's last ones) sleeps on a
// condition variable, and is woken when the next kernel of the in-order queue becomes ready. In
// the 2-core VMs of development (PoCL 3.1) that wake-up takes 10-40 us (a futex wake-up measured
// alone: median 39 us, p90 85 us, on the 2-core Xeon), so a kernel shorter than that runs on one
// core: squeezenet1_1's 1x1 convs (30-100 us) took as long with two workers as with one.
//
// Two ways to give the idle worker something to do, both on a second in-order queue:
//
// - Spin (the default on CPU devices with two or more compute units): before each kernel K of a
//   run, a one-work-item kernel (kernels/keep_warm.cl) that reads a counter until it reaches K's
//   number. A host callback on K's event raises the counter when K starts (CL_RUNNING; PoCL calls
//   it on the worker that starts K, before K's work-groups are handed out). The spinner before K
//   becomes ready when the one before it returns, that is when the previous kernel starts; the
//   driver serves ready kernels' work-groups first, so a worker takes it only when it has run out
//   of the previous kernel's work-groups, and leaves it as K starts. Each spinner gives up after
//   a bounded number of reads (so a counter that never comes costs time, never a hang), and at
//   most compute units - 1 sessions of the process spin at once. A chain of 100 kernels of 64
//   work-groups: 11 us per kernel boundary without, 4.8-5.7 with; of 2 work-groups: 2.6 against
//   3.0 us a launch (the spinner's own cost).
// - Markers: N empty markers per kernel launch. A worker completes marker after marker (~0.7 us
//   each on an AMD EPYC Zen 5, ~1.7 on the Xeon). They are ready as soon as they are enqueued, so
//   the workers also complete them while the host is still enqueueing the run, not only in the
//   gaps. On the 2-core AMD EPYC VMs they took 4-20 % off small CNNs; on the 2-core Xeon they were
//   within noise, and a GPT-style decoder of 18 kernels of 1-5 us took 0.63 ms (median) with 12
//   markers against 0.27 with none.
//
// The executor calls begin() before a run, after_launch() after each kernel it enqueues, end()
// after the last, and finished() once the run's queue is finished. Markers left
// over from the previous run count against this run's supply, so at most one run's worth is ever
// outstanding (checked through an event on every 16th marker). A failed enqueue switches keep-warm
// off. Where no setting is asked for (adaptive), kTrialRuns runs of a plan (after its first and
// kTrialSkip more) alternate between the spinner and none, and it stays unless the median of the
// ratios of neighbouring runs' wall times (with / without) is above kTrialTolerance.
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
  // How a session keeps the idle workers busy.
  struct Setting {
    bool spin = false;  // the spin kernel
    int markers = 0;    // else markers per launch (0: off)
    bool adaptive = false;  // tried against none on the first runs (record_run)
    std::string why;    // where the setting comes from (for the log)
    bool on() const { return spin || markers > 0; }
  };
  // SessionOptions::keep_warm: kAuto, kSpin, 0 (off) or a number of markers.
  static constexpr int kAuto = -1;
  static constexpr int kSpin = -2;

  KeepWarm(ClRuntime& cl, const Setting& setting);
  // markers_per_launch 0: does nothing. adaptive: choose between markers_per_launch and none by
  // timing the first runs (record_run).
  KeepWarm(ClRuntime& cl, int markers_per_launch, bool adaptive = false);
  ~KeepWarm();
  KeepWarm(const KeepWarm&) = delete;
  KeepWarm& operator=(const KeepWarm&) = delete;

  // The markers per launch in use (while the trial runs: the count being tried against none).
  int markers_per_launch() const { return spin_ ? 0 : per_launch_; }
  // Whether the spin kernel is in use (while the trial runs: being tried against none).
  bool spinning() const { return spin_ && per_launch_ > 0; }
  // The markers per launch of the run begun last (0 on an adaptive trial's run without).
  int markers_this_run() const { return spin_ ? 0 : run_markers_; }
  // Whether the run begun last spins (it may not: a trial run without, or another session of the
  // process spinning already).
  bool spinning_this_run() const { return spin_run_; }
  // Spinners enqueued so far; kernels announced to them, and the counter they read (kernels
  // started: equal to announced() once the run's queue is finished and no callback went missing).
  uint64_t spinners() const { return spinners_; }
  uint32_t announced() const { return announced_; }
  int started() const { return counter_ ? __atomic_load_n(counter_, __ATOMIC_ACQUIRE) : 0; }
  // Runs of the adaptive trial still to come (0: decided, or a fixed count).
  int trial_runs_left() const;
  static constexpr int kTrialRuns = 24;  // alternating, after kTrialSkip runs that count for neither
  static constexpr int kTrialSkip = 2;
  // Kept unless the median ratio (with / without) is above this.
  static constexpr double kTrialTolerance = 1.02;
  // Markers enqueued so far, and how many of them may still be pending (an upper bound: their
  // completion is seen through an event on every 16th).
  uint64_t enqueued() const { return enqueued_; }
  uint64_t outstanding() const { return enqueued_ - completed_; }
  // Before a run of `launches` kernels: this run may enqueue markers_per_launch x launches, less
  // those of earlier runs that may still be pending.
  void begin(size_t launches);
  // After each kernel of the run: up to markers_per_launch markers, within that allowance.
  void feed();
  // Whether this run spins for a kernel of `work_groups` work-groups (a kernel of one has no work
  // for a second worker). Then after_launch() needs its event.
  bool spins_for(size_t work_groups) const { return spin_run_ && work_groups > 1; }
  // After each kernel of the run was enqueued. spin: `event` is the kernel's where spins_for() said
  // so (null otherwise): a callback on it raises the counter as the kernel starts, and a spinner
  // waiting for that goes on the second queue. markers: feed().
  void after_launch(cl_event event);
  // After the run's last kernel.
  void end();
  // Once the run's queue is finished (or the run was abandoned): lets another session spin.
  void finished();
  // Waits for the second queue: every spinner returns, at its kernel's start or at its bound.
  void drain();
  // After a whole run of `plan` (its wall time, outputs read back): counts towards the adaptive
  // trial, which restarts when the plan changes. Returns what was decided when this run ended the
  // trial (a line for the log), else "".
  std::string record_run(const void* plan, double ms);

  // The setting for a device: `requested` (SessionOptions::keep_warm) when not kAuto, else
  // $OCL_INFER_KEEP_WARM ("spin", or a number of markers) when set, else the spinner on CPU
  // devices with two or more compute units (where a kernel's work-groups are shared by worker
  // threads that sleep when idle), tried against none (adaptive), and off elsewhere. The spinner
  // is never used with one compute unit: it would hold the only worker until its bound.
  static Setting resolve(int requested, bool cpu_device, unsigned compute_units);

 private:
  void poll();
  void stop_spinning();
  void release_spinners();

  ClRuntime* cl_ = nullptr;
  cl_command_queue queue_ = nullptr;
  cl_command_queue main_queue_ = nullptr;
  bool spin_ = false;      // spin mode (per_launch_ > 0 while it is on)
  bool spin_run_ = false;  // this run spins
  bool holds_token_ = false;
  int* counter_ = nullptr;  // kernels started (host memory the spinners read)
  cl_mem counter_mem_ = nullptr;
  KernelPtr spinner_;
  uint32_t announced_ = 0;  // kernels announced to spinners so far
  uint64_t spinners_ = 0;
  int per_launch_ = 0;
  int run_markers_ = 0;  // this run's markers per launch (per_launch_, or 0 on a trial run without)
  bool adaptive_ = false;
  const void* trial_plan_ = nullptr;
  std::vector<double> trial_on_, trial_off_;  // wall times (ms) of the trial's runs
  int trial_skipped_ = 0;
  uint64_t enqueued_ = 0;   // markers enqueued since the start
  uint64_t completed_ = 0;  // markers known to be complete (by their checkpoint events)
  uint64_t budget_ = 0;     // markers this run may still enqueue
  std::deque<std::pair<uint64_t, cl_event>> checkpoints_;  // (markers enqueued up to it, its event)
};

}  // namespace oi
