#include "runtime/profiler.hpp"

#include <algorithm>
#include <cmath>

namespace oi {

namespace {

int64_t elems(const Graph& g, int v) { return v < 0 ? 0 : numel(g.values[v].shape); }

}  // namespace

double node_flops(const Graph& g, const Node& n) {
  auto in_shape = [&](size_t i) -> const Shape& { return g.values[n.inputs[i]].shape; };
  const std::string& op = n.op_type;
  if (n.outputs.empty() || n.outputs[0] < 0) return 0;
  const Shape& out = g.values[n.outputs[0]].shape;
  const double out_elems = static_cast<double>(numel(out));
  if (op == "Conv" && n.inputs.size() >= 2) {
    // Each output element: (Cin/group) * prod(kernel) multiply-adds, plus one add for the bias.
    const Shape& w = in_shape(1);
    double k = 1;
    for (size_t d = 1; d < w.size(); ++d) k *= static_cast<double>(w[d]);
    bool bias = n.inputs.size() > 2 && n.inputs[2] >= 0;
    return out_elems * (2 * k + (bias ? 1 : 0));
  }
  if (op == "ConvTranspose" && n.inputs.size() >= 2) {
    // Each input element scatters into (Cout/group) * prod(kernel) outputs.
    const Shape& w = in_shape(1);
    double k = 1;
    for (size_t d = 1; d < w.size(); ++d) k *= static_cast<double>(w[d]);
    bool bias = n.inputs.size() > 2 && n.inputs[2] >= 0;
    return 2 * static_cast<double>(elems(g, n.inputs[0])) * k + (bias ? out_elems : 0);
  }
  if (op == "Gemm" && n.inputs.size() >= 2) {
    const Shape& a = in_shape(0);
    int64_t k = n.attr_int("transA", 0) ? a[0] : a[1];
    bool c = n.inputs.size() > 2 && n.inputs[2] >= 0;
    return out_elems * (2.0 * static_cast<double>(k) + (c ? 1 : 0));
  }
  if (op == "MatMul" && n.inputs.size() >= 2) {
    const Shape& a = in_shape(0);
    int64_t k = a.empty() ? 1 : a.back();
    return out_elems * 2.0 * static_cast<double>(k);
  }
  if (op == "MaxPool" || op == "AveragePool" || op == "LpPool") {
    double k = 1;
    for (auto d : n.attr_ints("kernel_shape", {})) k *= static_cast<double>(d);
    return out_elems * k;
  }
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool" || op.rfind("Reduce", 0) == 0 ||
      op == "ArgMax" || op == "ArgMin")
    return static_cast<double>(elems(g, n.inputs[0]));
  if (op == "BatchNormalization" || op == "InstanceNormalization" || op == "LayerNormalization")
    return 2 * out_elems;
  if (op == "Softmax" || op == "LogSoftmax") return 3 * out_elems;
  static const char* movement[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity",
                                   "Dropout", "Concat", "Split", "Slice", "Transpose", "Expand",
                                   "Tile", "Gather", "Pad", "DepthToSpace", "SpaceToDepth",
                                   "Cast", "Shape", "Constant", "ConstantOfShape", "Range"};
  for (const char* m : movement)
    if (op == m) return 0;
  return out_elems;  // elementwise
}

double node_bytes(const Graph& g, const Node& n) {
  double b = 0;
  for (int v : n.inputs)
    if (v >= 0) b += static_cast<double>(elems(g, v) * ocl_infer::dtype_size(g.values[v].dtype));
  for (int v : n.outputs)
    if (v >= 0) b += static_cast<double>(elems(g, v) * ocl_infer::dtype_size(g.values[v].dtype));
  return b;
}

void ProfileAccumulator::reset(const Plan& plan) {
  layers_.clear();
  sum_us_.assign(plan.launches.size(), 0);
  inference_us_.clear();
  wall_us_.clear();
  kernel_sum_us_.clear();
  const Graph& g = plan.graph;
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
