#include "runtime/backend/keep_warm.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace oi {

namespace {

constexpr uint64_t kCheckpointEvery = 16;

}  // namespace

int KeepWarm::resolve(int requested, bool cpu_device, unsigned compute_units, std::string* why, bool* adaptive) {
  auto say = [&](const std::string& s) {
    if (why) *why = s;
  };
  if (adaptive) *adaptive = false;
  if (requested >= 0) {
    say("set by the session options");
    return std::min(requested, 1000);
  }
  if (const char* e = std::getenv("OCL_INFER_KEEP_WARM"); e && *e) {
    char* end = nullptr;
    const long v = std::strtol(e, &end, 10);
    if (end && *end == '\0' && v >= 0) {
      say("set by $OCL_INFER_KEEP_WARM");
      return static_cast<int>(std::min(v, 1000L));
    }
    say("$OCL_INFER_KEEP_WARM='" + std::string(e) + "' is not a count >= 0; using the default");
  } else {
    say("default for this device type");
  }
  // 12 (6 before 2026-12-05): a GPT-style decoder's 18 short kernels (2-20 us) ran at a median of
  // 0.41-0.46 ms with 6 markers, 0.34-0.35 with none and 0.31-0.32 with 8-16, where each marker
  // took longer than the Zen 5 machine's 0.7 us and 6 ran out before the next kernel came; CNNs
  // (mobilenet_v2, squeezenet1_1, EfficientNet-Lite0) and a BERT-like encoder within noise of 6
  // (2-core AMD EPYC Zen 3, PoCL 3.1).
  const int n = cpu_device && compute_units >= 2 ? 12 : 0;
  if (adaptive && n > 0) {
    *adaptive = true;
    if (why) *why += "; the first " + std::to_string(kTrialRuns) + " runs after the first try them against none";
  }
  return n;
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

int KeepWarm::trial_runs_left() const {
  if (!adaptive_) return 0;
  return kTrialRuns - static_cast<int>(trial_on_.size() + trial_off_.size());
}

std::string KeepWarm::record_run(const void* plan, double ms) {
  if (!adaptive_) return "";
  if (plan != trial_plan_) {
    trial_plan_ = plan;
    trial_on_.clear();
    trial_off_.clear();
  }
  // begin() chose this run's setting from the runs recorded before it.
  (run_markers_ > 0 ? trial_on_ : trial_off_).push_back(ms);
  if (trial_runs_left() > 0) return "";
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t h = v.size() / 2;
    return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
  };
  const double on = median(trial_on_), off = median(trial_off_);
  const int tried = per_launch_;
  adaptive_ = false;
  // Markers stay unless they were slower: where they pay for CNNs it is by a few percent
  // (resnet18 2-3 % on this Xeon), where they cost it is by far more (the GPT-style decoder 2.3x).
  if (on > off) per_launch_ = 0;
  char line[200];
  std::snprintf(line, sizeof line, "%d idle-worker markers per kernel launch: median %.3f ms over %zu runs, without "
                "%.3f ms over %zu: %s", tried, on, trial_on_.size(), off, trial_off_.size(),
                per_launch_ ? "kept" : "off from now on");
  return line;
}

KeepWarm::~KeepWarm() {
  for (auto& c : checkpoints_) clReleaseEvent(c.second);
  if (queue_) {
    clFinish(queue_);  // at most one run's markers, well under a millisecond
    clReleaseCommandQueue(queue_);
  }
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

void KeepWarm::begin(size_t launches) {
  if (!queue_) return;
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

void KeepWarm::end() {
  if (queue_) clFlush(queue_);
}

}  // namespace oi
