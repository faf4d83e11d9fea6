#include "tools/precision_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <sstream>

#include "tools/cli_io.hpp"
#include "tools/profile_report.hpp"

namespace cli {

namespace {

using ocl_infer::DType;
using ocl_infer::Tensor;

// Any numeric tensor as doubles (float16 widened).
std::vector<double> values(const Tensor& t) {
  std::vector<double> r(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (t.dtype) {
      case DType::Float32: r[i] = t.data<float>()[i]; break;
      case DType::Float64: r[i] = t.data<double>()[i]; break;
      case DType::Float16: r[i] = ocl_infer::half_to_float(t.data<uint16_t>()[i]); break;
      case DType::Int64: r[i] = static_cast<double>(t.data<int64_t>()[i]); break;
      case DType::Int32: r[i] = t.data<int32_t>()[i]; break;
      default: r[i] = NAN;
    }
  }
  return r;
}

}  // namespace

ValueError compare_values(const Tensor& ref, const Tensor& got) {
  ValueError e;
  if (ref.shape != got.shape) {
    e.max_abs = e.max_rel = INFINITY;
    e.cosine = NAN;
    return e;
  }
  const auto a = values(ref), b = values(got);
  double max_ref = 0, dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) != std::isnan(b[i])) e.nan_mismatch = true;
    if (std::isfinite(a[i]) && !std::isfinite(b[i])) ++e.overflowed;
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) continue;
    max_ref = std::max(max_ref, std::fabs(a[i]));
    e.max_abs = std::max(e.max_abs, std::fabs(a[i] - b[i]));
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  e.max_ref = max_ref;
  e.max_rel = max_ref > 0 ? e.max_abs / max_ref : e.max_abs;
  e.cosine = na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : (na == nb ? 1.0 : 0.0);
  if (e.nan_mismatch || e.overflowed) e.max_rel = e.max_abs = INFINITY;
  return e;
}

PrecisionReport check_precision(ocl_infer::Session& reference, ocl_infer::Session& candidate,
                                const std::map<std::string, Tensor>& feeds, double threshold, int top_k) {
  ocl_infer::RunOptions all;
  all.fetch = {"*"};
  auto ref = reference.run(feeds, all);
  auto got = candidate.run(feeds, all);
  PrecisionReport r;
  r.threshold = threshold;
  for (const auto& node : candidate.executed_nodes()) {
    NodeReport n;
    n.name = node.name;
    n.covers = node.covers;
    n.op_types = node.op_types;
    for (const auto& out : node.outputs) {
      auto a = ref.find(out), b = got.find(out);
      if (a == ref.end() || b == got.end()) continue;
      const bool numeric = a->second.dtype == DType::Float32 || a->second.dtype == DType::Float16 ||
                           a->second.dtype == DType::Float64;
      if (!numeric) continue;
      const ValueError e = compare_values(a->second, b->second);
      if (n.value.empty() || e.max_rel > n.error.max_rel) {
        n.value = out;
        n.error = e;
      }
    }
    if (n.value.empty()) continue;  // nothing comparable (integer outputs, or fused differently)
    n.flagged = !(n.error.max_rel <= threshold);
    if (n.flagged && r.first_flagged < 0) r.first_flagged = static_cast<int>(r.nodes.size());
    r.nodes.push_back(std::move(n));
  }
  for (const auto& info : candidate.outputs()) {
    OutputReport o;
    o.name = info.name;
    o.error = compare_values(ref.at(info.name), got.at(info.name));
    // Top-k agreement over the last axis of the first row, for score-like outputs.
    const auto a = values(ref.at(info.name)), b = values(got.at(info.name));
    const int64_t n = ref.at(info.name).shape.empty() ? 1 : ref.at(info.name).shape.back();
    if (n > 1 && static_cast<int64_t>(a.size()) >= n) {
      const int k = static_cast<int>(std::min<int64_t>(top_k, n));
      auto top = [&](const std::vector<double>& v) {
        std::vector<int64_t> idx(static_cast<size_t>(n));
        std::iota(idx.begin(), idx.end(), 0);
        std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int64_t i, int64_t j) { return v[i] > v[j]; });
        idx.resize(k);
        return idx;
      };
      o.top_ref = top(a);
      o.top_got = top(b);
      o.top1_same = o.top_ref[0] == o.top_got[0];
      int common = 0;
      for (auto i : o.top_ref) common += std::count(o.top_got.begin(), o.top_got.end(), i) > 0;
      o.topk_overlap = common;
    }
    r.outputs.push_back(std::move(o));
  }
  return r;
}

namespace {

std::string num(double v) {
  char b[32];
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  std::snprintf(b, sizeof b, "%.3e", v);
  return b;
}

std::string cosine(double v) {
  char b[32];
  if (!std::isfinite(v)) return "n/a";
  std::snprintf(b, sizeof b, "%.6f", v);
  return b;
}

std::string json_num(double v) { return std::isfinite(v) ? num(v) : "null"; }

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

}  // namespace

std::string format_precision_report(const PrecisionReport& r, const std::string& precision) {
  std::ostringstream os;
  char line[512];
  std::snprintf(line, sizeof line, "%4s  %-44s %-28s %11s %11s %10s  %s\n", "#", "node", "op", "max abs err",
                "max rel err", "cosine", "");
  os << "precision check: " << precision << " against fp32, per executed node (rel = max |err| / max |fp32|)\n"
     << line;
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    const NodeReport& n = r.nodes[i];
    std::string name = join(n.covers, "+"), op = join(n.op_types, "+");
    if (name.size() > 44) name = name.substr(0, 41) + "...";
    if (op.size() > 28) op = op.substr(0, 25) + "...";
    const std::string flag = n.error.overflowed
                                 ? "!! " + std::to_string(n.error.overflowed) + " values inf/NaN (finite in fp32)"
                                 : n.flagged ? "!! above threshold" : "";
    std::snprintf(line, sizeof line, "%4zu  %-44s %-28s %11s %11s %10s  %s\n", i, name.c_str(), op.c_str(),
                  num(n.error.max_abs).c_str(), num(n.error.max_rel).c_str(), cosine(n.error.cosine).c_str(),
                  flag.c_str());
    os << line;
  }
  os << "threshold " << num(r.threshold) << ": " << std::count_if(r.nodes.begin(), r.nodes.end(), [](auto& n) {
    return n.flagged;
  }) << " of " << r.nodes.size() << " nodes above it";
  if (r.first_flagged >= 0) os << "; first: #" << r.first_flagged << " '" << r.nodes[r.first_flagged].name << "'";
  os << "\n";
  for (const OutputReport& o : r.outputs) {
    os << "output '" << o.name << "': max abs err " << num(o.error.max_abs) << ", max rel err "
       << num(o.error.max_rel) << ", cosine " << cosine(o.error.cosine);
    if (o.error.overflowed) os << ", " << o.error.overflowed << " values inf/NaN (finite in fp32)";
    if (!o.top_ref.empty())
      os << ", top-1 " << (o.top1_same ? "same" : "DIFFERENT") << ", top-" << o.top_ref.size() << " overlap "
         << o.topk_overlap << "/" << o.top_ref.size();
    os << "\n";
  }
  return os.str();
}

std::string precision_report_json(const PrecisionReport& r, const std::string& precision) {
  std::ostringstream os;
  os << "{\"precision\": \"" << precision << "\", \"reference\": \"fp32\", \"threshold\": " << json_num(r.threshold)
     << ", \"first_flagged\": " << r.first_flagged << ", \"nodes\": [";
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    const NodeReport& n = r.nodes[i];
    os << (i ? ",\n  " : "\n  ") << "{\"index\": " << i << ", \"name\": \"" << json_escape(n.name) << "\", \"nodes\": [";
    for (size_t k = 0; k < n.covers.size(); ++k) os << (k ? ", " : "") << "\"" << json_escape(n.covers[k]) << "\"";
    os << "], \"op_types\": [";
    for (size_t k = 0; k < n.op_types.size(); ++k) os << (k ? ", " : "") << "\"" << json_escape(n.op_types[k]) << "\"";
    os << "], \"value\": \"" << json_escape(n.value) << "\", \"max_abs_error\": " << json_num(n.error.max_abs)
       << ", \"max_rel_error\": " << json_num(n.error.max_rel) << ", \"cosine\": " << json_num(n.error.cosine)
       << ", \"overflowed\": " << n.error.overflowed << ", \"flagged\": " << (n.flagged ? "true" : "false") << "}";
  }
  os << "\n], \"outputs\": [";
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    const OutputReport& o = r.outputs[i];
    os << (i ? ", " : "") << "{\"name\": \"" << json_escape(o.name) << "\", \"max_abs_error\": " << json_num(o.error.max_abs)
       << ", \"max_rel_error\": " << json_num(o.error.max_rel) << ", \"cosine\": " << json_num(o.error.cosine)
       << ", \"overflowed\": " << o.error.overflowed;
    if (!o.top_ref.empty())
      os << ", \"top1_same\": " << (o.top1_same ? "true" : "false") << ", \"topk_overlap\": " << o.topk_overlap
         << ", \"k\": " << o.top_ref.size();
    os << "}";
  }
  os << "]}\n";
  return os.str();
}

}  // namespace cli
