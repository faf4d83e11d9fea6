// --check-precision: the same model and inputs run in fp32 and in a lower precision, compared node
// by node (every value an executed node writes, fetched as it is produced), to find the layer
// that loses the accuracy. Uses the public API only.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ocl_infer/ocl_infer.hpp"

namespace cli {

struct ValueError {
  // Over the elements finite in both; max_abs and max_rel are inf when shapes differ, a NaN
  // appears on one side only or an element overflowed.
  double max_abs = 0;  // max |candidate - reference|
  double max_rel = 0;  // max_abs / max |reference|
  double max_ref = 0;
  double cosine = 1;   // of the two tensors as vectors
  bool nan_mismatch = false;
  int64_t overflowed = 0;  // elements finite in the reference but inf/NaN in the candidate
};

// Compares two tensors of the same shape (float32, float16, float64 or integers).
ValueError compare_values(const ocl_infer::Tensor& reference, const ocl_infer::Tensor& candidate);

struct NodeReport {
  std::string name;
  std::vector<std::string> covers, op_types;
  std::string value;  // the output compared (the worst of the node's outputs)
  ValueError error;
  bool flagged = false;
};

struct OutputReport {
  std::string name;
  ValueError error;
  std::vector<int64_t> top_ref, top_got;  // top-k indices along the last axis (score outputs)
  bool top1_same = true;
  int topk_overlap = 0;
};

struct PrecisionReport {
  double threshold = 1e-2;
  std::vector<NodeReport> nodes;  // in execution order
  int first_flagged = -1;
  std::vector<OutputReport> outputs;
};

// Runs `reference` (fp32) and `candidate` on `feeds`; both sessions must plan the same graph
// (same optimizer options).
PrecisionReport check_precision(ocl_infer::Session& reference, ocl_infer::Session& candidate,
                                const std::map<std::string, ocl_infer::Tensor>& feeds, double threshold,
                                int top_k);

std::string format_precision_report(const PrecisionReport& r, const std::string& precision);
std::string precision_report_json(const PrecisionReport& r, const std::string& precision);

}  // namespace cli
