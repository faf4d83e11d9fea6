#include "runtime/backend/keep_warm.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace oi {

namespace {

constexpr uint64_t kCheckpointEvery = 16;

// The spinners' counters, 64-byte lines that are never freed. A kernel's CL_RUNNING callback
// writes its session's counter, and OpenCL does not promise that callbacks have run when clFinish
// returns (rusticl calls them from a thread of its own, and calls a user event's at its completion):
// a counter freed with its session was written after the free (heap corruption at exit, 1 run in
// 3 of test_keep_warm on rusticl). A session's counter goes back to this pool and serves a later
// session; a late callback then raises that session's count early, so a spinner returns early,
// as if its kernel had started. At most as many lines as sessions alive at once.
struct CounterPool {
  std::mutex mu;
  std::vector<int*> free;
};
CounterPool& counter_pool() {
  static CounterPool* pool = new CounterPool;  // never destroyed: reachable to the end
  return *pool;
}
int* take_counter() {
  CounterPool& p = counter_pool();
  std::lock_guard<std::mutex> lock(p.mu);
  if (!p.free.empty()) {
    int* c = p.free.back();
    p.free.pop_back();
    return c;
  }
  return static_cast<int*>(std::aligned_alloc(64, 64));
}
void give_back_counter(int* c) {
  CounterPool& p = counter_pool();
  std::lock_guard<std::mutex> lock(p.mu);
  p.free.push_back(c);
}

}  // namespace

KeepWarm::Setting KeepWarm::resolve(int requested, bool cpu_device, unsigned compute_units) {
  Setting s;
  auto spin = [&](std::string why) {
    if (compute_units < 2) {
      s.why = why + "; off: one compute unit, where a spinner would hold the only worker";
      return s;
    }
    s.spin = true;
    s.why = why;
    return s;
  };
  if (requested == kSpin) return spin("set by the session options");
  if (requested >= 0) {
    s.markers = std::min(requested, 1000);
    s.why = "set by the session options";
    return s;
  }
  std::string why = "default for this device type";
  if (requested != kAuto) why = "keep_warm " + std::to_string(requested) + " is not a setting; using the default";
  if (const char* e = std::getenv("OCL_INFER_KEEP_WARM"); requested == kAuto && e && *e) {
    const std::string v = e;
    char* end = nullptr;
    const long n = std::strtol(e, &end, 10);
    if (v == "spin") return spin("set by $OCL_INFER_KEEP_WARM");
    if (v != "auto") {
      if (end && *end == '\0' && n >= 0) {
        s.markers = static_cast<int>(std::min(n, 1000L));
        s.why = "set by $OCL_INFER_KEEP_WARM";
        return s;
      }
      why = "$OCL_INFER_KEEP_WARM='" + v + "' is not spin, auto or a count >= 0; using the default";
    }
  }
  if (!cpu_device || compute_units < 2) {
    s.why = why;
    return s;
  }
  // The spinner, tried against none. It replaced 12 markers per launch (6 before 2026-12-05),
  // which the workers completed while the host was still enqueueing the run rather than in the gaps
  // between kernels: within noise on the 2-core Xeon, 4-20 % on the AMD EPYC VMs.
  s.spin = true;
  s.adaptive = true;
  s.why = why + "; " + std::to_string(kTrialRuns) + " runs after the first " + std::to_string(kTrialSkip + 1) +
          " try it against none";
  return s;
}

KeepWarm::KeepWarm(ClRuntime& cl, int markers_per_launch, bool adaptive)
    : per_launch_(std::max(markers_per_launch, 0)), adaptive_(adaptive && markers_per_launch > 0) {
  if (per_launch_ == 0) return;
  cl_int err = CL_SUCCESS;
  queue_ = clCreateCommandQueue(cl.context(), cl.device(), 0, &err);
  if (err != CL_SUCCESS || !queue_) {
    queue_ = nullptr;
    per_launch_ = 0;
    adaptive_ = false;
  }
}

KeepWarm::KeepWarm(ClRuntime& cl, const Setting& setting)
    : KeepWarm(cl, setting.spin ? 1 : setting.markers, setting.adaptive) {
  if (!setting.spin || per_launch_ == 0) return;
  spin_ = true;
  cl_ = &cl;
  main_queue_ = cl.queue();
  // The counter lives in host memory that the spinners read in place (a CPU device's buffers with
  // CL_MEM_USE_HOST_PTR are that memory; where a driver copies instead, the spinners see no change
  // and run to their bound, which the adaptive trial would find slower).
  counter_ = take_counter();
  cl_int err = CL_SUCCESS;
  if (counter_) {
    __atomic_store_n(counter_, 0, __ATOMIC_RELEASE);
    counter_mem_ = clCreateBuffer(cl.context(), CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR, 64, counter_, &err);
  }
  if (!counter_ || err != CL_SUCCESS || !counter_mem_) {
    counter_mem_ = nullptr;
    per_launch_ = 0;
    adaptive_ = false;
  }
}

int KeepWarm::trial_runs_left() const {
  if (!adaptive_) return 0;
  return kTrialSkip - trial_skipped_ + kTrialRuns - static_cast<int>(trial_on_.size() + trial_off_.size());
}

std::string KeepWarm::record_run(const void* plan, double ms) {
  if (!adaptive_) return "";
  if (plan != trial_plan_) {
    trial_plan_ = plan;
    trial_skipped_ = 0;
    trial_on_.clear();
    trial_off_.clear();
  }
  // The runs right after a plan's first still settle (memory touched for the first time, caches):
  // they would weigh on whichever setting they ran with.
  if (trial_skipped_ < kTrialSkip) {
    ++trial_skipped_;
    return "";
  }
  // begin() chose this run's setting from the runs recorded before it: with, without, with, ...
  (run_markers_ > 0 ? trial_on_ : trial_off_).push_back(ms);
  if (trial_runs_left() > 0) return "";
  // Each run with against the run without that followed it: the median of those ratios, so that a
  // machine whose speed drifts during the trial (a shared VM) weighs on both sides alike.
  std::vector<double> ratios;
  for (size_t k = 0; k < std::min(trial_on_.size(), trial_off_.size()); ++k)
    ratios.push_back(trial_off_[k] > 0 ? trial_on_[k] / trial_off_[k] : 1.0);
  std::sort(ratios.begin(), ratios.end());
  const size_t h = ratios.size() / 2;
  const double ratio = ratios.empty() ? 1.0 : ratios.size() % 2 ? ratios[h] : 0.5 * (ratios[h - 1] + ratios[h]);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t m = v.size() / 2;
    return v.empty() ? 0.0 : v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
  };
  const double on = median(trial_on_), off = median(trial_off_);
  const int tried = per_launch_;
  adaptive_ = false;
  // Kept unless slower by more than kTrialTolerance: where the spinner pays for CNNs it is by 3-10 %
  // (2-core Xeon, 200-run A/B), while single runs there vary by 10-20 %, so 8 pairs can tip a real
  // gain either way; where keep-warm costs it is by far more (12 markers per launch made a
  // GPT-style decoder of 1-5 us kernels 2.3x slower there; the spinner 1.05x in a 200-run A/B,
  // 1.2x in its trials).
  if (ratio > kTrialTolerance) per_launch_ = 0;
  char line[240];
  const std::string what = spin_ ? "the idle-worker spinner" : std::to_string(tried) + " idle-worker markers per kernel launch";
  std::snprintf(line, sizeof line, "%s: median %.3f ms over %zu runs, without %.3f ms over %zu (median ratio %.3f): %s",
                what.c_str(), on, trial_on_.size(), off, trial_off_.size(), ratio, per_launch_ ? "kept" : "off from now on");
  return line;
}

KeepWarm::~KeepWarm() {
  for (auto& c : checkpoints_) clReleaseEvent(c.second);
  // No spinner waits for anything any more. (Callbacks may still come: see take_counter.)
  if (main_queue_ && counter_mem_) clFinish(main_queue_);
  release_spinners();
  if (queue_) {
    clFinish(queue_);  // at most one run's markers, well under a millisecond
    clReleaseCommandQueue(queue_);
  }
  spinner_.reset();
  if (counter_mem_) clReleaseMemObject(counter_mem_);
  if (counter_) give_back_counter(counter_);
  finished();
}

void KeepWarm::poll() {
  while (!checkpoints_.empty()) {
    cl_int status = CL_QUEUED;
    if (clGetEventInfo(checkpoints_.front().second, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                       nullptr) != CL_SUCCESS)
      status = CL_COMPLETE;  // a broken event is not worth waiting for
    if (status != CL_COMPLETE && status >= 0) break;
    completed_ = checkpoints_.front().first;
    clReleaseEvent(checkpoints_.front().second);
    checkpoints_.pop_front();
  }
}

namespace {

// Sessions of this process whose run spins now (at most compute units - 1, so that a worker is
// always free for the kernels).
std::atomic<int> g_spinning{0};

void CL_CALLBACK kernel_started(cl_event, cl_int, void* counter) {
  __atomic_fetch_add(static_cast<int*>(counter), 1, __ATOMIC_RELEASE);
}

// Reads of the counter before a spinner gives up: 0.2-0.27 ms on the 2-core Xeon (a spinner whose
// kernel never starts, test_keep_warm), longer than a worker's wake-up there (9-85 us).
constexpr int kSpinBound = 1 << 17;

}  // namespace

void KeepWarm::release_spinners() {
  // Far ahead of every target announced so far: each pending spinner returns at its next read.
  if (counter_) __atomic_store_n(counter_, static_cast<int>(announced_ + (1u << 30)), __ATOMIC_RELEASE);
}

void KeepWarm::stop_spinning() {
  per_launch_ = 0;
  spin_run_ = false;
  adaptive_ = false;
  release_spinners();
  if (queue_) clFlush(queue_);
}

void KeepWarm::begin(size_t launches) {
  if (!queue_) return;
  if (spin_) {
    spin_run_ = false;
    finished();
    if (per_launch_ == 0) return;
    // The adaptive trial alternates: spinning while it has no more runs than none.
    if (adaptive_ && trial_on_.size() > trial_off_.size()) {
      run_markers_ = 0;
      return;
    }
    run_markers_ = per_launch_;
    if (!spinner_) {
      try {
        spinner_ = cl_->kernel("keep_warm", "idle_spin", "");
      } catch (const std::exception&) {
        stop_spinning();
        return;
      }
      const int bound = kSpinBound;
      if (clSetKernelArg(spinner_.get(), 0, sizeof counter_mem_, &counter_mem_) != CL_SUCCESS ||
          clSetKernelArg(spinner_.get(), 2, sizeof bound, &bound) != CL_SUCCESS) {
        stop_spinning();
        return;
      }
    }
    const int limit = std::max(1, static_cast<int>(cl_->caps().compute_units) - 1);
    int now = g_spinning.load();
    while (now < limit && !g_spinning.compare_exchange_weak(now, now + 1)) {
    }
    if (now >= limit) {  // other sessions spin: this run sleeps between kernels
      run_markers_ = 0;
      return;
    }
    holds_token_ = true;
    spin_run_ = true;
    return;
  }
  poll();
  const uint64_t pending = enqueued_ - completed_;
  // The adaptive trial alternates: with markers while they have no more runs than none.
  run_markers_ = adaptive_ && trial_on_.size() > trial_off_.size() ? 0 : per_launch_;
  const uint64_t want = static_cast<uint64_t>(run_markers_) * launches;
  budget_ = want > pending ? want - pending : 0;
}

void KeepWarm::feed() {
  if (!queue_) return;
  for (int i = 0; i < run_markers_ && budget_ > 0; ++i, --budget_) {
    const bool checkpoint = (enqueued_ + 1) % kCheckpointEvery == 0;
    cl_event ev = nullptr;
    if (clEnqueueMarkerWithWaitList(queue_, 0, nullptr, checkpoint ? &ev : nullptr) != CL_SUCCESS) {
      // Only an optimisation: stop feeding; what is queued completes on its own.
      budget_ = 0;
      per_launch_ = run_markers_ = 0;
      adaptive_ = false;
      clFlush(queue_);
      return;
    }
    ++enqueued_;
    if (checkpoint) checkpoints_.emplace_back(enqueued_, ev);
  }
}

void KeepWarm::after_launch(cl_event event) {
  if (!spin_) {
    feed();
    return;
  }
  if (!spin_run_ || !event) return;
  // The kernel's callback raises the counter to its number as it starts (at once if it has started
  // already); then its spinner, which returns as soon as the counter is there.
  if (clSetEventCallback(event, CL_RUNNING, kernel_started, counter_) != CL_SUCCESS) {
    stop_spinning();
    finished();
    return;
  }
  const int target = static_cast<int>(++announced_);
  const size_t one = 1;
  if (clSetKernelArg(spinner_.get(), 1, sizeof target, &target) != CL_SUCCESS ||
      clEnqueueNDRangeKernel(queue_, spinner_.get(), 1, nullptr, &one, &one, 0, nullptr, nullptr) != CL_SUCCESS) {
    stop_spinning();
    finished();
    return;
  }
  ++spinners_;
}

void KeepWarm::end() {
  if (queue_) clFlush(queue_);
}

void KeepWarm::drain() {
  if (queue_) clFinish(queue_);
}

void KeepWarm::finished() {
  if (!holds_token_) return;
  holds_token_ = false;
  g_spinning.fetch_sub(1);
}

}  // namespace oi
