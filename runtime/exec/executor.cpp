#include "runtime/exec/executor.hpp"

#include <algorithm>

#include "runtime/ir/host_math.hpp"

namespace oi {

namespace {

// Enqueues a non-blocking read of value `v` into a new tensor in its storage type (the caller
// finishes the queue, then converts to the graph's dtype where they differ).
Tensor read_value(const Plan& plan, cl_command_queue q, int v) {
  const Value& val = plan.graph().values[v];
  if (val.data) return *val.data;
  Tensor t(plan.compiled.storage[v], val.shape);
  if (!t.bytes.empty()) {
    const BufferPtr& b = plan.buffers[v];
    if (!b) throw ocl_infer::Error("internal: value '" + val.name + "' has no device buffer to read");
    cl_check(clEnqueueReadBuffer(q, b->mem, CL_FALSE, 0, t.bytes.size(), t.bytes.data(), 0, nullptr, nullptr),
             "clEnqueueReadBuffer");
  }
  return t;
}

// A failed enqueue or finish: allocation failures (drivers may allocate at first use) become "out
// of device memory" with what the plan needs; anything else names the call.
[[noreturn]] void fail(const Plan& plan, ClRuntime& cl, cl_int err, const std::string& what) {
  if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES || err == CL_OUT_OF_HOST_MEMORY)
    throw ocl_infer::DeviceError("out of device memory while running (" + what + ": " + cl_error_name(err) +
                                 "): the plan needs " + std::to_string(plan.activation_bytes) + " bytes of activations, " +
                                 std::to_string(plan.weight_bytes) + " of weights and " +
                                 std::to_string(plan.scratch_bytes) + " of scratch; the device has " +
                                 std::to_string(cl.info().global_mem_bytes) + " bytes (--max-memory lowers the limit)");
  throw ocl_infer::DeviceError(what + " failed: " + cl_error_name(err));
}

}  // namespace

std::map<std::string, Tensor> execute(Plan& plan, ClRuntime& cl, const std::map<int, const Tensor*>& inputs,
                                      std::vector<cl_event>* events, const std::vector<int>& fetch,
                                      KeepWarm* warm) {
  cl_command_queue q = cl.queue();
  const Graph& g = plan.graph();
  for (auto& [id, t] : inputs) {
    const BufferPtr& b = plan.buffers[id];
    if (!b || g.values[id].data || t->bytes.empty()) continue;
    // Non-blocking: the caller's tensor outlives the blocking read-back below.
    cl_check(clEnqueueWriteBuffer(q, b->mem, CL_FALSE, 0, t->bytes.size(), t->bytes.data(), 0, nullptr, nullptr),
             "clEnqueueWriteBuffer(input)");
  }
  // Fetched values by the step that writes them (-1: inputs and constants, read up front).
  std::map<int, std::vector<int>> fetch_at;
  for (int v : fetch) {
    int at = -1;
    for (size_t k = 0; k < plan.compiled.steps.size() && at < 0; ++k) {
      const Node& n = g.nodes[plan.compiled.steps[k].node];
      if (std::find(n.outputs.begin(), n.outputs.end(), v) != n.outputs.end()) at = static_cast<int>(k);
    }
    fetch_at[at].push_back(v);
  }
  std::map<std::string, Tensor> out;
  // Reads are enqueued in order; the vector keeps each tensor's bytes where the read writes them.
  std::vector<std::pair<std::string, Tensor>> fetched;
  fetched.reserve(fetch.size());
  auto read_fetched = [&](int step) {
    auto it = fetch_at.find(step);
    if (it == fetch_at.end()) return;
    for (int v : it->second) fetched.emplace_back(g.values[v].name, read_value(plan, q, v));
  };
  read_fetched(-1);
  const cl_int zero = 0;
  for (auto& f : plan.error_flags)
    cl_check(clEnqueueFillBuffer(q, f.flag->mem, &zero, sizeof zero, 0, sizeof zero, 0, nullptr, nullptr),
             "clEnqueueFillBuffer(error flag)");
  if (events) events->assign(plan.launches.size(), nullptr);
  // Lets another session's runs spin once this one is finished or abandoned.
  struct WarmRun {
    KeepWarm* w;
    ~WarmRun() {
      if (w) w->finished();
    }
  } warm_run{warm};
  if (warm) warm->begin(plan.launches.size());
  for (size_t s = 0; s < plan.step_launches.size(); ++s) {
    for (size_t i = plan.step_launches[s].first; i < plan.step_launches[s].second; ++i) {
      const Launch& l = plan.launches[i];
      // With the spinner: the kernel's event carries the callback that ends its spinner, which is
      // enqueued after it (a spinner never waits for a kernel the host has yet to enqueue).
      size_t groups = 1;
      for (size_t d = 0; d < l.global.size(); ++d)
        groups *= l.global[d] / (d < l.local.size() && l.local[d] ? l.local[d] : 1);
      const bool spin = warm && warm->spins_for(groups);
      cl_event ev = nullptr;
      cl_int err = clEnqueueNDRangeKernel(q, l.kernel.get(), static_cast<cl_uint>(l.global.size()), nullptr,
                                          l.global.data(), l.local.empty() ? nullptr : l.local.data(), 0, nullptr,
                                          events ? &(*events)[i] : spin ? &ev : nullptr);
      if (err != CL_SUCCESS)
        fail(plan, cl, err, describe_node(g, g.nodes[l.node]) + ": clEnqueueNDRangeKernel(" + l.kernel_name + ")");
      if (warm) warm->after_launch(spin ? (events ? (*events)[i] : ev) : nullptr);
      if (ev) clReleaseEvent(ev);
    }
    read_fetched(static_cast<int>(s));
  }
  if (warm) warm->end();
  for (int o : g.outputs) {
    const Value& v = g.values[o];
    if (out.count(v.name)) continue;
    out[v.name] = read_value(plan, q, o);
  }
  std::vector<cl_int> flags(plan.error_flags.size(), 0);
  for (size_t k = 0; k < flags.size(); ++k)
    cl_check(clEnqueueReadBuffer(q, plan.error_flags[k].flag->mem, CL_FALSE, 0, sizeof(cl_int), &flags[k], 0, nullptr,
                                 nullptr),
             "clEnqueueReadBuffer(error flag)");
  if (cl_int err = clFinish(q); err != CL_SUCCESS) fail(plan, cl, err, "clFinish");
  for (size_t k = 0; k < flags.size(); ++k)
    if (flags[k])
      throw ocl_infer::InputError(describe_node(g, g.nodes[plan.error_flags[k].node]) + ": " +
                                  plan.error_flags[k].what);
  for (auto& [name, t] : fetched) {
    const DType want = g.values[g.find_value(name)].dtype;
    out.emplace(name, t.dtype == want ? std::move(t) : convert_elements(t, want));
  }
  return out;
}

}  // namespace oi
