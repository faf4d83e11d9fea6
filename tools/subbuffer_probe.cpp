// Sub-buffer lifetimes on one OpenCL driver: each case creates sub-buffers of one buffer the way
// the memory planner does (regions that repeat, overlap, or cover the whole buffer), writes them
// with a kernel, and releases everything in a stated order, in a child process of its own, so a
// driver that crashes in a release names the case (and prints the reference counts it reported
// up to then). Found NVIDIA's 580 driver crashing where PoCL and rusticl do not
// (docs/drivers.md, "GPUs").
//
//   subbuffer_probe [--device N]
//
// Devices are numbered as `ocl-infer --list-devices` numbers them.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tools/probe_device.hpp"

namespace {

const char* kSource =
    "__kernel void fill(__global float* p, float v) { p[get_global_id(0)] = v; }\n"
    "__kernel void copy(__global const float* x, __global float* y) { y[get_global_id(0)] = x[get_global_id(0)]; }\n";

void check(cl_int err, const char* what) { probe::check("subbuffer_probe", err, what); }

cl_uint refs(cl_mem m) {
  cl_uint n = 0;
  clGetMemObjectInfo(m, CL_MEM_REFERENCE_COUNT, sizeof n, &n, nullptr);
  return n;
}

struct Region {
  size_t offset, bytes;
};

struct Case {
  const char* name;
  std::vector<Region> subs;  // in floats x 1024 (4 KiB units), of a 64 KiB parent
  bool release_parent_first;
  bool release_kernel_last;  // the kernel (its arguments set to the sub-buffers) outlives them
  bool transfers = false;    // also clEnqueueWriteBuffer into, and clEnqueueReadBuffer from, each sub-buffer
  bool chain = false;        // also a copy kernel from each sub-buffer into the next
  unsigned fill = ~0u;       // which sub-buffers the fill kernel writes (bit i: sub-buffer i)
  bool reverse = false;      // sub-buffers released last-created first
  bool touch = false;        // a blocking read from each sub-buffer just before its release
  bool read_parent = true;   // the parent read back (and checked) after the writes
};

// Runs one case in a fresh context; returns normally only when every call returned.
void run_case(int device_index, const Case& c, bool say_device) {
  std::string name;
  cl_device_id dev = probe::device("subbuffer_probe", device_index, &name);
  if (say_device) std::printf("    device: %s\n", name.c_str());
  const probe::Setup cl = probe::setup("subbuffer_probe", dev, kSource);
  cl_context ctx = cl.ctx;
  cl_command_queue q = cl.queue;
  cl_program prog = cl.prog;
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(prog, "fill", &err);
  check(err, "clCreateKernel");
  const size_t unit = 4096, parent_bytes = 16 * unit;
  cl_mem parent = clCreateBuffer(ctx, CL_MEM_READ_WRITE, parent_bytes, nullptr, &err);
  check(err, "clCreateBuffer");
  std::vector<cl_mem> subs;
  for (const Region& r : c.subs) {
    cl_buffer_region region{r.offset * unit, r.bytes * unit};
    cl_mem s = clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    check(err, "clCreateSubBuffer");
    std::printf("    sub-buffer at %zu, %zu bytes: %p%s; parent refcount %u\n", region.origin, region.size,
                static_cast<void*>(s), s == parent ? " (the parent itself)" : "", refs(parent));
    subs.push_back(s);
  }
  float v = 1;
  for (size_t i = 0; i < subs.size(); ++i, v += 1) {
    if (!(c.fill >> i & 1)) continue;
    check(clSetKernelArg(k, 0, sizeof(cl_mem), &subs[i]), "clSetKernelArg");
    check(clSetKernelArg(k, 1, sizeof v, &v), "clSetKernelArg");
    const size_t n = c.subs[i].bytes * unit / sizeof(float);
    check(clEnqueueNDRangeKernel(q, k, 1, nullptr, &n, nullptr, 0, nullptr, nullptr), "clEnqueueNDRangeKernel");
  }
  if (c.transfers)
    for (size_t i = 0; i < subs.size(); ++i) {
      std::vector<float> buf(c.subs[i].bytes * unit / sizeof(float), static_cast<float>(i + 1));
      check(clEnqueueWriteBuffer(q, subs[i], CL_TRUE, 0, buf.size() * sizeof(float), buf.data(), 0, nullptr, nullptr),
            "clEnqueueWriteBuffer");
      check(clEnqueueReadBuffer(q, subs[i], CL_TRUE, 0, buf.size() * sizeof(float), buf.data(), 0, nullptr, nullptr),
            "clEnqueueReadBuffer");
    }
  cl_kernel copy = nullptr;
  if (c.chain) {
    copy = clCreateKernel(prog, "copy", &err);
    check(err, "clCreateKernel");
    for (size_t i = 0; i + 1 < subs.size(); ++i) {
      check(clSetKernelArg(copy, 0, sizeof(cl_mem), &subs[i]), "clSetKernelArg");
      check(clSetKernelArg(copy, 1, sizeof(cl_mem), &subs[i + 1]), "clSetKernelArg");
      const size_t n = std::min(c.subs[i].bytes, c.subs[i + 1].bytes) * unit / sizeof(float);
      check(clEnqueueNDRangeKernel(q, copy, 1, nullptr, &n, nullptr, 0, nullptr, nullptr), "clEnqueueNDRangeKernel");
    }
    check(clFinish(q), "clFinish");
    clReleaseKernel(copy);
    // Rewrite them in order so that the check below holds.
    v = 1;
    for (size_t i = 0; i < subs.size(); ++i, v += 1) {
      check(clSetKernelArg(k, 0, sizeof(cl_mem), &subs[i]), "clSetKernelArg");
      check(clSetKernelArg(k, 1, sizeof v, &v), "clSetKernelArg");
      const size_t n = c.subs[i].bytes * unit / sizeof(float);
      check(clEnqueueNDRangeKernel(q, k, 1, nullptr, &n, nullptr, 0, nullptr, nullptr), "clEnqueueNDRangeKernel");
    }
  }
  std::vector<float> host(parent_bytes / sizeof(float));
  if (c.read_parent) {
    check(clEnqueueReadBuffer(q, parent, CL_TRUE, 0, parent_bytes, host.data(), 0, nullptr, nullptr),
          "clEnqueueReadBuffer");
    // The last sub-buffer written wins where regions overlap.
    int wrong = 0;
    for (size_t i = 0; i < host.size(); ++i) {
      float want = 0;
      for (size_t s = 0; s < c.subs.size(); ++s)
        if ((c.fill >> s & 1) && i * sizeof(float) >= c.subs[s].offset * unit &&
            i * sizeof(float) < (c.subs[s].offset + c.subs[s].bytes) * unit)
          want = static_cast<float>(s + 1);
      if (want != 0 && host[i] != want) ++wrong;
    }
    std::printf("    written: %s\n", wrong ? "WRONG values" : "as expected");
  } else {
    check(clFinish(q), "clFinish");
  }
  std::fflush(stdout);
  if (c.reverse) std::reverse(subs.begin(), subs.end());
  if (!c.release_kernel_last) clReleaseKernel(k);
  if (c.release_parent_first) {
    std::printf("    release parent (refcount %u)\n", refs(parent));
    std::fflush(stdout);
    clReleaseMemObject(parent);
  }
  for (cl_mem s : subs) {
    if (c.touch) {
      float one = 0;
      check(clEnqueueReadBuffer(q, s, CL_TRUE, 0, sizeof one, &one, 0, nullptr, nullptr), "clEnqueueReadBuffer");
    }
    std::printf("    release sub-buffer %p (refcount %u)\n", static_cast<void*>(s), refs(s));
    std::fflush(stdout);
    clReleaseMemObject(s);
  }
  if (!c.release_parent_first) {
    std::printf("    release parent (refcount %u)\n", refs(parent));
    std::fflush(stdout);
    clReleaseMemObject(parent);
  }
  if (c.release_kernel_last) {
    std::printf("    release kernel\n");
    std::fflush(stdout);
    clReleaseKernel(k);
  }
  clReleaseProgram(prog);
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
}

}  // namespace

int main(int argc, char** argv) {
  int device_index = 0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--device") && i + 1 < argc) {
      device_index = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: subbuffer_probe [--device N]\n");
      return 2;
    }
  }
  // No OpenCL call in this process: a driver need not survive fork() once initialised.
  // Found on NVIDIA's 580 driver: releasing one of two partly overlapping sub-buffers that a
  // kernel wrote crashes it ("overlapping regions"); the cases after it narrow that down.
  auto with = [](Case c, auto f) { f(c); return c; };
  const Case overlap{"overlapping regions", {{0, 12}, {4, 12}}, false, false};
  const Case cases[] = {
      {"two disjoint halves", {{0, 8}, {8, 8}}, false, false},
      {"the whole buffer", {{0, 16}}, false, false},
      {"one region twice", {{0, 4}, {0, 4}}, false, false},
      {"one region three times, then others", {{0, 4}, {4, 4}, {0, 4}, {0, 4}, {8, 8}}, false, false},
      {"disjoint halves, parent released first", {{0, 8}, {8, 8}}, true, false},
      {"disjoint halves, kernel released last", {{0, 8}, {8, 8}}, false, true},
      {"transfers into and out of sub-buffers", {{0, 4}, {4, 4}, {8, 8}}, false, false, true},
      {"a copy kernel from each sub-buffer into the next", {{0, 4}, {4, 4}, {8, 8}}, false, false, false, true},
      {"overlapping regions, transfers and copies", {{0, 8}, {4, 8}, {0, 16}, {8, 4}}, false, false, true, true},
      overlap,
      with(overlap, [](Case& c) { c.name = "overlapping, neither written"; c.fill = 0; }),
      with(overlap, [](Case& c) { c.name = "overlapping, the first written"; c.fill = 1; }),
      with(overlap, [](Case& c) { c.name = "overlapping, the second written"; c.fill = 2; }),
      with(overlap, [](Case& c) { c.name = "overlapping, parent not read"; c.read_parent = false; }),
      with(overlap, [](Case& c) { c.name = "overlapping, released in reverse"; c.reverse = true; }),
      with(overlap, [](Case& c) { c.name = "overlapping, parent released first"; c.release_parent_first = true; }),
      with(overlap, [](Case& c) { c.name = "overlapping, each read before release"; c.touch = true; }),
      with(overlap, [](Case& c) { c.name = "overlapping, transfers"; c.transfers = true; }),
      with(overlap, [](Case& c) { c.name = "overlapping, transfers only"; c.transfers = true; c.fill = 0; }),
      {"nested: one inside another", {{0, 16}, {4, 4}}, false, false},
      {"nested, released in reverse", {{0, 16}, {4, 4}}, false, false, false, false, ~0u, true},
      {"three in a chain of overlaps", {{0, 8}, {4, 8}, {8, 8}}, false, false},
  };
  int failed = 0;
  for (const Case& c : cases) {
    std::printf("case: %s\n", c.name);
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
      run_case(device_index, c, &c == cases);
      std::fflush(stdout);
      _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) {
      std::printf("  CRASHED (signal %d: %s)\n", WTERMSIG(status), strsignal(WTERMSIG(status)));
      ++failed;
    } else if (WEXITSTATUS(status) != 0) {
      std::printf("  FAILED (exit %d)\n", WEXITSTATUS(status));
      ++failed;
    } else {
      std::printf("  ok\n");
    }
    std::fflush(stdout);
  }
  std::printf("%d of %zu cases failed\n", failed, sizeof cases / sizeof *cases);
  return failed ? 1 : 0;
}
