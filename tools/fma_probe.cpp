// The arithmetic ceiling of an OpenCL device as its compiler leaves it: kernels that do nothing but
// independent FMAs in registers (no memory traffic in the loop), timed with the wall clock (some
// drivers report zero event timestamps). It bounds what any kernel variant can reach there: Mesa
// 22.3's rusticl on llvmpipe gave 1.07-1.11 GFLOP/s on the 2-core AMD EPYC Zen 5 VM of development,
// where PoCL 3.1 gave 27 (scalar8) and 208 (vector8) with the same kernels (see the README, "Status
// and measurements").
//
//   fma_probe [--device N] [--items N] [--repeat N]
//
// Devices are numbered as `ocl-infer --list-devices` numbers them. An FMA counts as 2 FLOP.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tools/probe_device.hpp"

namespace {

constexpr int kIters = 2048;  // FMAs per chain

// Both do 8 x 2048 FMAs per work-item. scalar8: eight scalar chains (a compiler that vectorizes
// across work-items fills its lanes from neighbouring work-items); vector8: eight float8 chains
// of 256 steps (independent of such vectorization: 64 FMAs in flight per work-item).
const char* kSource =
    "__kernel void scalar8(__global float* y, int iters) {\n"
    "  float a0 = get_global_id(0), a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5,\n"
    "        a6 = a0 + 6, a7 = a0 + 7;\n"
    "  for (int i = 0; i < iters; ++i) {\n"
    "    a0 = fma(a0, 0.999f, 0.5f); a1 = fma(a1, 0.999f, 0.5f); a2 = fma(a2, 0.999f, 0.5f);\n"
    "    a3 = fma(a3, 0.999f, 0.5f); a4 = fma(a4, 0.999f, 0.5f); a5 = fma(a5, 0.999f, 0.5f);\n"
    "    a6 = fma(a6, 0.999f, 0.5f); a7 = fma(a7, 0.999f, 0.5f);\n"
    "  }\n"
    "  y[get_global_id(0)] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;\n"
    "}\n"
    "__kernel void vector8(__global float* y, int iters) {\n"
    "  const float8 m = (float8)0.999f, c = (float8)0.5f;\n"
    "  float8 a0 = (float8)(get_global_id(0)) + (float8)(0, 1, 2, 3, 4, 5, 6, 7), a1 = a0 + 1, a2 = a0 + 2,\n"
    "         a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;\n"
    "  for (int i = 0; i < iters; i += 8) {\n"
    "    a0 = fma(a0, m, c); a1 = fma(a1, m, c); a2 = fma(a2, m, c); a3 = fma(a3, m, c);\n"
    "    a4 = fma(a4, m, c); a5 = fma(a5, m, c); a6 = fma(a6, m, c); a7 = fma(a7, m, c);\n"
    "  }\n"
    "  const float8 s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;\n"
    "  y[get_global_id(0)] = s.s0 + s.s1 + s.s2 + s.s3 + s.s4 + s.s5 + s.s6 + s.s7;\n"
    "}\n";

void check(cl_int err, const char* what) { probe::check("fma_probe", err, what); }

}  // namespace

int main(int argc, char** argv) {
  int device_index = 0, repeat = 5;
  size_t items = 8192;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc || (a != "--device" && a != "--items" && a != "--repeat")) {
      std::fprintf(stderr, "usage: fma_probe [--device N] [--items N] [--repeat N]\n");
      return 2;
    }
    char* end = nullptr;
    const long v = std::strtol(argv[++i], &end, 10);
    if (!end || *end || v < 0 || v > 100000000) {
      std::fprintf(stderr, "fma_probe: %s: '%s' is not a count\n", a.c_str(), argv[i]);
      return 2;
    }
    if (a == "--device") device_index = static_cast<int>(v);
    else if (a == "--items") items = static_cast<size_t>(std::max(64L, v / 64 * 64));
    else repeat = static_cast<int>(std::max(1L, v));
  }
  std::string name;
  cl_device_id dev = probe::device("fma_probe", device_index, &name);
  const probe::Setup cl = probe::setup("fma_probe", dev, kSource);
  cl_context ctx = cl.ctx;
  cl_command_queue q = cl.queue;
  cl_program prog = cl.prog;
  cl_int err = CL_SUCCESS;
  cl_mem y = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(float) * items, nullptr, &err);
  check(err, "clCreateBuffer");
  std::printf("device %d: %s\n", device_index, name.c_str());
  const int iters = kIters;
  for (const char* entry : {"scalar8", "vector8"}) {
    cl_kernel k = clCreateKernel(prog, entry, &err);
    check(err, "clCreateKernel");
    check(clSetKernelArg(k, 0, sizeof y, &y), "clSetKernelArg");
    check(clSetKernelArg(k, 1, sizeof iters, &iters), "clSetKernelArg");
    for (size_t local : {size_t{8}, size_t{64}}) {
      double best = 1e30;
      for (int r = 0; r <= repeat; ++r) {  // the first launch generates code: not timed
        const auto t0 = std::chrono::steady_clock::now();
        check(clEnqueueNDRangeKernel(q, k, 1, nullptr, &items, &local, 0, nullptr, nullptr), "clEnqueueNDRangeKernel");
        check(clFinish(q), "clFinish");
        if (r > 0) best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      std::printf("%-8s work-groups of %2zu: %7.2f GFLOP/s\n", entry, local, items * 8.0 * kIters * 2 / best / 1e9);
    }
    clReleaseKernel(k);
  }
  clReleaseMemObject(y);
  clReleaseProgram(prog);
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  return 0;
}
