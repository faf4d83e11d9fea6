#include "runtime/executor.hpp"

namespace oi {

std::map<std::string, Tensor> execute(Plan& plan, ClRuntime& cl,
                                      const std::map<int, const Tensor*>& inputs,
                                      std::vector<cl_event>* events) {
  cl_command_queue q = cl.queue();
  for (auto& [id, t] : inputs) {
    const BufferPtr& b = plan.buffers[id];
    if (!b || plan.graph.values[id].data || t->bytes.empty()) continue;
    // Non-blocking: the caller's tensor outlives the blocking read-back below.
    cl_check(clEnqueueWriteBuffer(q, b->mem, CL_FALSE, 0, t->bytes.size(), t->bytes.data(), 0,
                                  nullptr, nullptr),
             "clEnqueueWriteBuffer(input)");
  }
  if (events) events->assign(plan.launches.size(), nullptr);
  for (size_t i = 0; i < plan.launches.size(); ++i) {
    const Launch& l = plan.launches[i];
    cl_int err = clEnqueueNDRangeKernel(q, l.kernel.get(), static_cast<cl_uint>(l.global.size()),
                                        nullptr, l.global.data(),
                                        l.local.empty() ? nullptr : l.local.data(), 0, nullptr,
                                        events ? &(*events)[i] : nullptr);
    if (err != CL_SUCCESS)
      throw ocl_infer::DeviceError(describe_node(plan.graph, plan.graph.nodes[l.node]) + ": " +
                                   "clEnqueueNDRangeKernel(" + l.kernel_name + ") failed: " +
                                   cl_error_name(err));
  }
  std::map<std::string, Tensor> out;
  for (int o : plan.graph.outputs) {
    const Value& v = plan.graph.values[o];
    if (out.count(v.name)) continue;
    if (v.data) {
      out[v.name] = *v.data;
      continue;
    }
    Tensor t(v.dtype, v.shape);
    if (!t.bytes.empty())
      cl_check(clEnqueueReadBuffer(q, plan.buffers[o]->mem, CL_FALSE, 0, t.bytes.size(),
                                   t.bytes.data(), 0, nullptr, nullptr),
               "clEnqueueReadBuffer(output)");
    out[v.name] = std::move(t);
  }
  cl_check(clFinish(q), "clFinish");
  return out;
}

}  // namespace oi
