#include "runtime/exec/profiler.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace oi {

void ProfileAccumulator::reset(const std::vector<const Plan*>& plans, const std::vector<std::string>& syncs) {
  layers_.clear();
  sync_after_.clear();
  row_of_.clear();
  inference_us_.clear();
  wall_us_.clear();
  kernel_sum_us_.clear();
  chain_ = plans;
  for (size_t k = 0; k < plans.size(); ++k) {
    const Plan& plan = *plans[k];
    const Graph& g = plan.graph();
    // A node's launches of one kernel (a recurrent layer's steps) share the row of the first.
    std::map<std::pair<int, std::string>, int> row_of_kernel;
    for (size_t i = 0; i < plan.launches.size(); ++i) {
      const Launch& l = plan.launches[i];
      auto key = std::make_pair(l.node, l.kernel_name);
      if (auto it = row_of_kernel.find(key); it != row_of_kernel.end()) {
        ocl_infer::LayerProfile& r = layers_[it->second];
        r.launches++;
        r.flops += l.flops;
        r.bytes += l.bytes;
        row_of_.push_back(it->second);
        continue;
      }
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
        for (auto& [key2, v] : l.variant.params)
          r.variant += (first ? ":" : ",") + key2 + "=" + std::to_string(v), first = false;
        r.variant_source = l.variant.source;
      }
      r.global = l.global;
      r.local = l.local;
      r.flops = l.flops;
      r.bytes = l.bytes;
      row_of_kernel[key] = static_cast<int>(layers_.size());
      row_of_.push_back(static_cast<int>(layers_.size()));
      layers_.push_back(std::move(r));
      sync_after_.push_back(-1);
    }
    if (k < syncs.size()) {
      ocl_infer::LayerProfile r;
      r.index = static_cast<int>(layers_.size());
      r.node_names.push_back(syncs[k]);
      r.op_types.push_back("HostSync");
      r.kernel = "host:sync";
      row_of_.push_back(static_cast<int>(layers_.size()));
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
  if (events.size() != row_of_.size()) return;
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
  // Per row in this run: summed duration, and the start of its first launch.
  std::vector<double> row_us(layers_.size(), 0);
  std::vector<cl_ulong> row_start(layers_.size(), 0);
  std::vector<bool> row_seen(layers_.size(), false);
  for (size_t i = 0; i < events.size(); ++i) {
    const int row = row_of_[i];
    auto& r = layers_[row];
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
    row_us[row] += std::max(us, 0.0);
    if (!row_seen[row]) row_start[row] = start[i], row_seen[row] = true;
  }
  for (size_t row = 0; row < layers_.size(); ++row) {
    auto& r = layers_[row];
    const double us = row_us[row];
    r.min_us = r.runs == 0 ? us : std::min(r.min_us, us);
    r.max_us = r.runs == 0 ? us : std::max(r.max_us, us);
    sum_us_[row] += us;
    r.runs++;
    r.avg_us = sum_us_[row] / r.runs;
    r.start_us = (static_cast<double>(row_start[row]) - static_cast<double>(first)) / 1000.0;
    r.last_us = us;
  }
  (void)launches;
  inference_us_.push_back(last >= first ? (static_cast<double>(last) - static_cast<double>(first)) / 1000.0 : 0);
  wall_us_.push_back(wall_us);
  kernel_sum_us_.push_back(run_sum);
}

}  // namespace oi
