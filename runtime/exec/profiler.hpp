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
  void reset(const Plan& plan);
  // Adds one inference: `events` has one completed event per launch, in order.
  void add_run(const Plan& plan, const std::vector<cl_event>& events, double wall_us);

  const std::vector<ocl_infer::LayerProfile>& layers() const { return layers_; }
  const std::vector<double>& inference_us() const { return inference_us_; }
  const std::vector<double>& wall_us() const { return wall_us_; }
  const std::vector<double>& kernel_sum_us() const { return kernel_sum_us_; }

 private:
  std::vector<ocl_infer::LayerProfile> layers_;
  std::vector<double> sum_us_;
  std::vector<double> inference_us_, wall_us_, kernel_sum_us_;
};

}  // namespace oi
