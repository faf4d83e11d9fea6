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
    "}\n";

void check(cl_int err, const char* what) { probe::check("launch_overhead", err, what); }

}  // namespace

int main(int argc, char** argv) {
  int device_index = 0, launches = 50, iters = 600, warm = 0;
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
    else {
      std::fprintf(stderr, "usage: launch_overhead [--device N] [--groups G] [--launches N] [--iters K] [--warm M]\n");
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
  auto run = [&](size_t g, int n) {
    double best = 1e30;
    for (int r = 0; r < 30; ++r) {
      check(clFinish(markers), "clFinish");  // the last repetition's leftover markers
      const auto t0 = std::chrono::steady_clock::now();
      const size_t local = 1;
      for (int i = 0; i < n; ++i) {
        check(clEnqueueNDRangeKernel(q, k, 1, nullptr, &g, &local, 0, nullptr, nullptr), "clEnqueueNDRangeKernel");
        for (int m = 0; m < warm; ++m)
          check(clEnqueueMarkerWithWaitList(markers, 0, nullptr, nullptr), "clEnqueueMarkerWithWaitList");
      }
      check(clFinish(q), "clFinish");
      best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  run(groups * launches, 1);  // code generation and warm-up
  const double one = run(groups, 1), chain = run(groups, launches), fused = run(groups * launches, 1);
  std::printf("device %d: %s\n", device_index, name.c_str());
  std::printf("%zu work-groups x %d FMA pairs per kernel: one launch %.1f us; %d launches in a row %.1f us "
              "(%.1f per launch); the same work as one launch %.1f us\n",
              groups, iters, one, launches, chain, chain / launches, fused);
  std::printf("cost of a kernel boundary: %.1f us%s\n", (chain - fused) / (launches - 1),
              warm ? (" (with " + std::to_string(warm) + " markers per launch on a second queue)").c_str() : "");
  clReleaseMemObject(y);
  clReleaseKernel(k);
  clReleaseProgram(prog);
  clFinish(markers);
  clReleaseCommandQueue(markers);
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  return 0;
}
