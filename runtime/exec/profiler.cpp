#include "runtime/exec/profiler.hpp"

#include <algorithm>
#include <cmath>

namespace oi {

void ProfileAccumulator::reset(const std::vector<const Plan*>& plans, const std::vector<std::string>& syncs) {
  layers_.clear();
  sync_after_.clear();
  inference_us_.clear();
  wall_us_.clear();
  kernel_sum_us_.clear();
  chain_ = plans;
  for (size_t k = 0; k < plans.size(); ++k) {
    const Plan& plan = *plans[k];
    const Graph& g = plan.graph();
    for (size_t i = 0; i < plan.launches.size(); ++i) {
      const Launch& l = plan.launches[i];
      ocl_infer::LayerProfile r;
      r.index = static_cast<int>(layers_.size());
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
        for (auto& [key, v] : l.variant.params)
          r.variant += (first ? ":" : ",") + key + "=" + std::to_string(v), first = false;
        r.variant_source = l.variant.source;
      }
      r.global = l.global;
      r.local = l.local;
      r.flops = l.flops;
      r.bytes = l.bytes;
      layers_.push_back(std::move(r));
      sync_after_.push_back(-1);
    }
    if (k < syncs.size()) {
      ocl_infer::LayerProfile r;
      r.index = static_cast<int>(layers_.size());
      r.node_names.push_back(syncs[k]);
      r.op_types.push_back("HostSync");
      r.kernel = "host:sync";
      layers_.push_back(std::move(r));
      sync_after_.push_back(static_cast<int>(k));
    }
  }
  sum_us_.assign(layers_.size(), 0);
}

void ProfileAccumulator::add_run(const std::vector<std::vector<cl_event>>& plan_events, const std::vector<double>& sync_us,
                                 double wall_us) {
  // Flattened: one entry per row, an event for launches and a host time for syncs.
  std::vector<cl_event> events;
  std::vector<double> host_us;
  size_t launches = 0;
  for (size_t k = 0; k < plan_events.size(); ++k) {
    for (cl_event e : plan_events[k]) {
      events.push_back(e);
      host_us.push_back(-1);
    }
    launches += plan_events[k].size();
    if (k < sync_us.size()) {
      events.push_back(nullptr);
      host_us.push_back(sync_us[k]);
    }
  }
  if (events.size() != layers_.size()) return;
  std::vector<cl_ulong> start(events.size(), 0), end(events.size(), 0);
  for (size_t i = 0; i < events.size(); ++i) {
    if (!events[i]) continue;
    cl_check(clGetEventProfilingInfo(events[i], CL_PROFILING_COMMAND_START, sizeof(cl_ulong),
                                     &start[i], nullptr),
             "clGetEventProfilingInfo(START)");
    cl_check(clGetEventProfilingInfo(events[i], CL_PROFILING_COMMAND_END, sizeof(cl_ulong),
                                     &end[i], nullptr),
             "clGetEventProfilingInfo(END)");
  }
  cl_ulong first = 0, last = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    if (!events[i]) continue;
    first = first == 0 ? start[i] : std::min(first, start[i]);
    last = std::max(last, end[i]);
  }
  // A host sync starts where the previous kernel ended (device clock) and lasts its host time.
  cl_ulong prev_end = first;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i]) {
      prev_end = end[i];
      continue;
    }
    start[i] = prev_end;
    end[i] = prev_end + static_cast<cl_ulong>(host_us[i] * 1000.0);
    prev_end = end[i];
  }
  double run_sum = 0;
  size_t prev_kernel = SIZE_MAX;
  for (size_t i = 0; i < events.size(); ++i) {
    auto& r = layers_[i];
    double us = events[i] ? (static_cast<double>(end[i]) - static_cast<double>(start[i])) / 1000.0 : host_us[i];
    if (events[i]) {
      if (start[i] == 0 || end[i] == 0) r.timestamp_problem = "zero timestamp";
      else if (end[i] < start[i]) r.timestamp_problem = "negative duration";
      else if (end[i] == start[i]) r.timestamp_problem = "zero duration";
      else if (prev_kernel != SIZE_MAX && start[i] < end[prev_kernel] && end[prev_kernel] != 0)
        r.timestamp_problem = "overlaps the previous kernel on an in-order queue";
      prev_kernel = i;
      run_sum += std::max(us, 0.0);
    }
    us = std::max(us, 0.0);
    r.min_us = r.runs == 0 ? us : std::min(r.min_us, us);
    r.max_us = r.runs == 0 ? us : std::max(r.max_us, us);
    sum_us_[i] += us;
    r.runs++;
    r.avg_us = sum_us_[i] / r.runs;
    r.start_us = (static_cast<double>(start[i]) - static_cast<double>(first)) / 1000.0;
    r.last_us = us;
  }
  (void)launches;
  inference_us_.push_back(last >= first ? (static_cast<double>(last) - static_cast<double>(first)) / 1000.0 : 0);
  wall_us_.push_back(wall_us);
  kernel_sum_us_.push_back(run_sum);
}

}  // namespace oi
