// Presentation of profiler records: a text table, JSON, CSV, Chrome trace events and a
// self-contained HTML page. Schemas are documented in README.md ("Profiling").
#pragma once

#include <string>
#include <vector>

#include "ocl_infer/ocl_infer.hpp"

namespace cli {

struct ProfileSummary {
  std::string model, device;
  std::string precision = "fp32";  // the session's SessionOptions::precision: fp32 or fp16
  int iterations = 0, warmup = 0;
  double kernel_sum_us = 0;    // sum of per-layer averages
  double device_us = 0;        // median device time of a whole inference (first start to last end)
  double wall_us = 0;          // median wall-clock time of run()
  double host_us = 0;          // median over runs of (wall-clock - that run's kernel times)
  ocl_infer::SessionStats startup;
  double first_inference_ms = 0;
};

// `s` with JSON string escapes (quotes, backslashes, control characters).
std::string json_escape(const std::string& s);

// Fills the derived fields of `s` from the session's profile.
ProfileSummary summarize(const ocl_infer::Session& session, const std::string& model, int iterations,
                         int warmup, double first_inference_ms);

// The table: sorted by average time (or in execution order), with a footer of totals, host
// overhead, the device, the per-op-type share and start-up costs.
std::string format_profile_table(const std::vector<ocl_infer::LayerProfile>& layers,
                                 const ProfileSummary& s, bool execution_order);

std::string profile_json(const std::vector<ocl_infer::LayerProfile>& layers, const ProfileSummary& s);
std::string profile_csv(const std::vector<ocl_infer::LayerProfile>& layers);
std::string profile_trace(const std::vector<ocl_infer::LayerProfile>& layers, const ProfileSummary& s);
std::string profile_html(const std::vector<ocl_infer::LayerProfile>& layers, const ProfileSummary& s);

// Per-op-type share: "Conv" -> microseconds (fused kernels count under "Conv+Relu" etc.).
std::vector<std::pair<std::string, double>> time_by_op_type(const std::vector<ocl_infer::LayerProfile>& layers);

}  // namespace cli
