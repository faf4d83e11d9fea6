// What one kernel boundary costs on an OpenCL device: a chain of N short kernels on one in-order
// queue against the same work as one launch. On PoCL each boundary wakes the worker threads that
// went to sleep when the previous kernel ran out of work-groups; in a VM that costs 10-20 us, which
// is what separates a small model's kernel sum from its end-to-end latency (see the README,
// "Speed"). With --warm M, M empty markers per launch go to a second in-order queue, as the
// runtime's keep-warm does (runtime/backend/keep_warm.hpp): an idle worker completes markers
// instead of sleeping.
//
//   launch_overhead [--device N] [--groups G] [--launches N] [--iters K] [--warm M]
//
// Devices are numbered as `ocl-infer --list-devices` numbers them (platforms in order, then their
// devices). Each figure is the minimum over 30 repetitions, in microseconds.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <CL/cl_ext.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tools/probe_device.hpp"

namespace {

// A busy loop of K dependent FMAs per work-item, whose result is stored (nothing is dead).
const char* kSource =
    "__kernel void spin(__global float* y, int iters) {\n"
    "  float a = (float)get_global_id(0), b = 1.0001f;\n"
    "  for (int i = 0; i < iters; ++i) { a = fma(a, b, 0.5f); b = fma(b, 0.9999f, 0.0001f); }\n"
    "  y[get_global_id(0)] = a + b;\n"
    "}\n"
    "__kernel void idle_spin(volatile __global int* flag, int target, int bound) {\n"
    "  for (int i = 0; i < bound; ++i)\n"
    "    if ((int)((uint)*flag - (uint)target) >= 0) return;\n"
    "}\n";

void check(cl_int err, const char* what) { probe::check("launch_overhead", err, what); }

}  // namespace

int main(int argc, char** argv) {
  int device_index = 0, launches = 50, iters = 600, warm = 0;
  bool cmdbuf = false;
  int spin = 0;
  size_t groups = 64;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> long {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "launch_overhead: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 10);
      if (!end || *end || v < 0 || v > 100000000) {
        std::fprintf(stderr, "launch_overhead: %s: '%s' is not a count\n", a.c_str(), argv[i]);
        std::exit(2);
      }
      return v;
    };
    if (a == "--device") device_index = static_cast<int>(value());
    else if (a == "--groups") groups = static_cast<size_t>(std::max(1L, value()));
    else if (a == "--launches") launches = static_cast<int>(std::max(2L, value()));
    else if (a == "--iters") iters = static_cast<int>(value());
    else if (a == "--warm") warm = static_cast<int>(value());
    else if (a == "--cmdbuf") cmdbuf = true;
    else if (a == "--spin") spin = static_cast<int>(value());
    else {
      std::fprintf(stderr, "usage: launch_overhead [--device N] [--groups G] [--launches N] [--iters K] [--warm M] [--cmdbuf]\n");
      return 2;
    }
  }
  std::string name;
  cl_device_id dev = probe::device("launch_overhead", device_index, &name);
  const probe::Setup cl = probe::setup("launch_overhead", dev, kSource);
  cl_context ctx = cl.ctx;
  cl_command_queue q = cl.queue;
  cl_program prog = cl.prog;
  cl_int err = CL_SUCCESS;
  cl_command_queue markers = clCreateCommandQueue(ctx, dev, 0, &err);
  check(err, "clCreateCommandQueue");
  cl_kernel k = clCreateKernel(prog, "spin", &err);
  check(err, "clCreateKernel");
  cl_mem y = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(float) * groups * launches, nullptr, &err);
  check(err, "clCreateBuffer");
  check(clSetKernelArg(k, 0, sizeof y, &y), "clSetKernelArg");
  check(clSetKernelArg(k, 1, sizeof iters, &iters), "clSetKernelArg");
  // Minimum wall time of `n` launches of `g` work-groups of one work-item, then clFinish.
  // --spin B: before each launch, a one-work-item kernel on the second queue that loops up to B
  // times until a flag reaches the launch's number; the flag is set by the launch's CL_RUNNING
  // callback. An idle worker spins there instead of sleeping.
  alignas(64) static volatile cl_int flag_word[16] = {};
  cl_mem flag = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR, 64, const_cast<cl_int*>(flag_word), &err);
  check(err, "clCreateBuffer(flag)");
  cl_kernel sk = clCreateKernel(prog, "idle_spin", &err);
  check(err, "clCreateKernel(idle_spin)");
  check(clSetKernelArg(sk, 0, sizeof flag, &flag), "clSetKernelArg");
  check(clSetKernelArg(sk, 2, sizeof spin, &spin), "clSetKernelArg");
  static cl_int seq = 0;
  auto on_running = [](cl_event, cl_int, void* data) {
    __atomic_store_n(&flag_word[0], static_cast<cl_int>(reinterpret_cast<intptr_t>(data)), __ATOMIC_RELEASE);
  };
  auto run = [&](size_t g, int n) {
    double best = 1e30;
    for (int r = 0; r < 30; ++r) {
      check(clFinish(markers), "clFinish");  // the last repetition's leftover markers
      const auto t0 = std::chrono::steady_clock::now();
      const size_t local = 1;
      for (int i = 0; i < n; ++i) {
        if (spin) {
          const size_t one = 1;
          const cl_int target = ++seq;
          check(clSetKernelArg(sk, 1, sizeof target, &target), "clSetKernelArg");
          check(clEnqueueNDRangeKernel(markers, sk, 1, nullptr, &one, &one, 0, nullptr, nullptr), "spin");
          cl_event ev = nullptr;
          check(clEnqueueNDRangeKernel(q, k, 1, nullptr, &g, &local, 0, nullptr, &ev), "clEnqueueNDRangeKernel");
          check(clSetEventCallback(ev, CL_RUNNING, on_running, reinterpret_cast<void*>(static_cast<intptr_t>(target))),
                "clSetEventCallback");
          clReleaseEvent(ev);
          continue;
        }
        check(clEnqueueNDRangeKernel(q, k, 1, nullptr, &g, &local, 0, nullptr, nullptr), "clEnqueueNDRangeKernel");
        for (int m = 0; m < warm; ++m)
          check(clEnqueueMarkerWithWaitList(markers, 0, nullptr, nullptr), "clEnqueueMarkerWithWaitList");
      }
      check(clFinish(q), "clFinish");
      best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      __atomic_store_n(&flag_word[0], ++seq, __ATOMIC_RELEASE);  // releases the last spinner
    }
    return best;
  };
  // The same chain recorded once in a cl_khr_command_buffer (each command after the previous one's
  // sync point) and enqueued as one command.
  auto run_cmdbuf = [&](size_t g, int n) {
    cl_platform_id platform = nullptr;
    check(clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof platform, &platform, nullptr), "clGetDeviceInfo");
    auto fn = [&](const char* f) {
      void* p = clGetExtensionFunctionAddressForPlatform(platform, f);
      if (!p) {
        std::fprintf(stderr, "launch_overhead: the device has no %s (cl_khr_command_buffer)\n", f);
        std::exit(1);
      }
      return p;
    };
    auto create = reinterpret_cast<clCreateCommandBufferKHR_fn>(fn("clCreateCommandBufferKHR"));
    auto record = reinterpret_cast<clCommandNDRangeKernelKHR_fn>(fn("clCommandNDRangeKernelKHR"));
    auto finalize = reinterpret_cast<clFinalizeCommandBufferKHR_fn>(fn("clFinalizeCommandBufferKHR"));
    auto enqueue = reinterpret_cast<clEnqueueCommandBufferKHR_fn>(fn("clEnqueueCommandBufferKHR"));
    auto release = reinterpret_cast<clReleaseCommandBufferKHR_fn>(fn("clReleaseCommandBufferKHR"));
    cl_command_buffer_khr buf = create(1, &q, nullptr, &err);
    check(err, "clCreateCommandBufferKHR");
    cl_sync_point_khr last = 0;
    const size_t local = 1;
    for (int i = 0; i < n; ++i) {
      cl_sync_point_khr point = 0;
      check(record(buf, nullptr, nullptr, k, 1, nullptr, &g, &local, i ? 1 : 0, i ? &last : nullptr, &point, nullptr),
            "clCommandNDRangeKernelKHR");
      last = point;
    }
    check(finalize(buf), "clFinalizeCommandBufferKHR");
    double best = 1e30;
    for (int r = 0; r < 30; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      check(enqueue(1, &q, buf, 0, nullptr, nullptr), "clEnqueueCommandBufferKHR");
      check(clFinish(q), "clFinish");
      best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    release(buf);
    return best;
  };
  run(groups * launches, 1);  // code generation and warm-up
  const double one = run(groups, 1), chain = run(groups, launches), fused = run(groups * launches, 1);
  std::printf("device %d: %s\n", device_index, name.c_str());
  std::printf("%zu work-groups x %d FMA pairs per kernel: one launch %.1f us; %d launches in a row %.1f us "
              "(%.1f per launch); the same work as one launch %.1f us\n",
              groups, iters, one, launches, chain, chain / launches, fused);
  std::printf("cost of a kernel boundary: %.1f us%s\n", (chain - fused) / (launches - 1),
              warm ? (" (with " + std::to_string(warm) + " markers per launch on a second queue)").c_str()
              : spin ? " (with an idle-worker spin kernel before each launch)" : "");
  if (cmdbuf) {
    const double recorded = run_cmdbuf(groups, launches);
    std::printf("the %d launches as one command buffer: %.1f us (%.1f per launch); a kernel boundary there %.1f us\n",
                launches, recorded, recorded / launches, (recorded - fused) / (launches - 1));
  }
  clReleaseMemObject(y);
  clReleaseKernel(k);
  clReleaseProgram(prog);
  clFinish(markers);
  clReleaseCommandQueue(markers);
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  return 0;
}
