#include "runtime/exec/profiler.hpp"

#include <algorithm>
#include <cmath>

namespace oi {

void ProfileAccumulator::reset(const Plan& plan) {
  layers_.clear();
  sum_us_.assign(plan.launches.size(), 0);
  inference_us_.clear();
  wall_us_.clear();
  kernel_sum_us_.clear();
  const Graph& g = plan.graph();
  for (size_t i = 0; i < plan.launches.size(); ++i) {
    const Launch& l = plan.launches[i];
    ocl_infer::LayerProfile r;
    r.index = static_cast<int>(i);
    const Node& n = g.nodes[l.node];
    if (n.covers.empty()) {
      r.node_names.push_back(n.name);
      r.op_types.push_back(n.op_type);
    }
    for (auto& [name, op] : n.covers) {
      r.node_names.push_back(name);
      r.op_types.push_back(op);
    }
    if (!n.outputs.empty() && n.outputs[0] >= 0) r.output_shape = g.values[n.outputs[0]].shape;
    r.kernel = l.kernel_name;
    if (!l.variant.family.empty()) {
      r.variant = l.variant.family + "=" + l.variant.variant;
      bool first = true;
      for (auto& [k, v] : l.variant.params) r.variant += (first ? ":" : ",") + k + "=" + std::to_string(v), first = false;
      r.variant_source = l.variant.source;
    }
    r.global = l.global;
    r.local = l.local;
    r.flops = l.flops;
    r.bytes = l.bytes;
    layers_.push_back(std::move(r));
  }
}

void ProfileAccumulator::add_run(const Plan& plan, const std::vector<cl_event>& events,
                                 double wall_us) {
  if (events.size() != layers_.size()) return;
  std::vector<cl_ulong> start(events.size()), end(events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    cl_check(clGetEventProfilingInfo(events[i], CL_PROFILING_COMMAND_START, sizeof(cl_ulong),
                                     &start[i], nullptr),
             "clGetEventProfilingInfo(START)");
    cl_check(clGetEventProfilingInfo(events[i], CL_PROFILING_COMMAND_END, sizeof(cl_ulong),
                                     &end[i], nullptr),
             "clGetEventProfilingInfo(END)");
  }
  cl_ulong first = events.empty() ? 0 : *std::min_element(start.begin(), start.end());
  cl_ulong last = events.empty() ? 0 : *std::max_element(end.begin(), end.end());
  double run_sum = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    auto& r = layers_[i];
    double us = (static_cast<double>(end[i]) - static_cast<double>(start[i])) / 1000.0;
    if (start[i] == 0 || end[i] == 0) r.timestamp_problem = "zero timestamp";
    else if (end[i] < start[i]) r.timestamp_problem = "negative duration";
    else if (end[i] == start[i]) r.timestamp_problem = "zero duration";
    else if (i > 0 && start[i] < end[i - 1] && end[i - 1] != 0)
      r.timestamp_problem = "overlaps the previous kernel on an in-order queue";
    us = std::max(us, 0.0);
    run_sum += us;
    r.min_us = r.runs == 0 ? us : std::min(r.min_us, us);
    r.max_us = r.runs == 0 ? us : std::max(r.max_us, us);
    sum_us_[i] += us;
    r.runs++;
    r.avg_us = sum_us_[i] / r.runs;
    r.start_us = (static_cast<double>(start[i]) - static_cast<double>(first)) / 1000.0;
    r.last_us = us;
  }
  inference_us_.push_back((static_cast<double>(last) - static_cast<double>(first)) / 1000.0);
  wall_us_.push_back(wall_us);
  kernel_sum_us_.push_back(run_sum);
}

}  // namespace oi
