// Per-layer profiling: accumulation of OpenCL event timings over runs, one record per launch (FLOP
// and byte counts come from the op registry's traits, see ops/core/op_def.hpp).
#pragma once

#include <string>
#include <vector>

#include "ocl_infer/ocl_infer.hpp"
#include "runtime/exec/plan.hpp"

namespace oi {

class ProfileAccumulator {
 public:
  // Starts over for `plan` (called on every re-plan and by reset_profile()).
  void reset(const Plan& plan) { reset(std::vector<const Plan*>{&plan}, {}); }
  // Adds one inference: `events` has one completed event per launch, in order.
  void add_run(const Plan& plan, const std::vector<cl_event>& events, double wall_us) {
    add_run(std::vector<std::vector<cl_event>>{events}, {}, wall_us);
  }

  // A model planned in segments: the launches of each plan in order, and after plan k (for k <
  // syncs.size()) one row for the host sync between it and the next ("host:sync", op type
  // "HostSync", its label as node name: what was read back and evaluated). Starts over when
  // `plans` differ from the current chain (another branch taken), else keeps accumulating.
  void reset(const std::vector<const Plan*>& plans, const std::vector<std::string>& syncs);
  bool same_chain(const std::vector<const Plan*>& plans) const { return plans == chain_; }
  // `events[k]` for plan k; `sync_us[k]` the host time of sync k.
  void add_run(const std::vector<std::vector<cl_event>>& events, const std::vector<double>& sync_us, double wall_us);

  const std::vector<ocl_infer::LayerProfile>& layers() const { return layers_; }
  const std::vector<double>& inference_us() const { return inference_us_; }
  const std::vector<double>& wall_us() const { return wall_us_; }
  const std::vector<double>& kernel_sum_us() const { return kernel_sum_us_; }

 private:
  std::vector<ocl_infer::LayerProfile> layers_;
  std::vector<double> sum_us_;
  std::vector<double> inference_us_, wall_us_, kernel_sum_us_;
  std::vector<const Plan*> chain_;
  std::vector<int> sync_after_;  // by row: the sync index for host-sync rows, else -1
  std::vector<int> row_of_;      // by event (launches and syncs in chain order): its row
};

}  // namespace oi
