// Per-layer profiling: FLOP/byte counts per node, accumulation of OpenCL event timings over runs,
// and the report formats (table, JSON, CSV, Chrome trace, HTML).
#pragma once

#include <string>
#include <vector>

#include "ocl_infer/ocl_infer.hpp"
#include "runtime/plan.hpp"

namespace oi {

// Floating-point operations of one node for its resolved shapes (a multiply-add counts as 2).
// Conv, ConvTranspose, Gemm and MatMul are exact; elementwise and pooling ops are counted per
// output element (times the window for pools); data movement counts 0.
double node_flops(const Graph& g, const Node& n);
// Bytes the node reads (non-empty inputs) and writes (outputs), from tensor sizes.
double node_bytes(const Graph& g, const Node& n);

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
