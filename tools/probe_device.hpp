// Device selection for the standalone OpenCL probes (launch_overhead, fma_probe): devices numbered
// as `ocl-infer --list-devices` numbers them (platforms in order, then their devices).
#pragma once

#include <CL/cl.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace probe {

// Exits with "TOOL: WHAT failed (OpenCL error N)" unless err is CL_SUCCESS.
inline void check(const char* tool, cl_int err, const char* what) {
  if (err == CL_SUCCESS) return;
  std::fprintf(stderr, "%s: %s failed (OpenCL error %d)\n", tool, what, err);
  std::exit(1);
}

// Device `index`, its name in *name; exits with a message when there is no such device.
inline cl_device_id device(const char* tool, int index, std::string* name) {
  cl_uint np = 0;
  if (clGetPlatformIDs(0, nullptr, &np) != CL_SUCCESS || np == 0) {
    std::fprintf(stderr, "%s: no OpenCL platform\n", tool);
    std::exit(1);
  }
  std::vector<cl_platform_id> platforms(np);
  check(tool, clGetPlatformIDs(np, platforms.data(), nullptr), "clGetPlatformIDs");
  std::vector<cl_device_id> devices;
  for (cl_platform_id p : platforms) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
    std::vector<cl_device_id> d(nd);
    check(tool, clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, d.data(), nullptr), "clGetDeviceIDs");
    devices.insert(devices.end(), d.begin(), d.end());
  }
  if (index < 0 || index >= static_cast<int>(devices.size())) {
    std::fprintf(stderr, "%s: no device %d (%zu devices)\n", tool, index, devices.size());
    std::exit(1);
  }
  char buf[256] = {};
  clGetDeviceInfo(devices[index], CL_DEVICE_NAME, sizeof buf - 1, buf, nullptr);
  *name = buf;
  return devices[index];
}

// A context and an in-order queue on `dev`, and `source` built there; exits with "TOOL: WHAT
// failed" when any step does.
struct Setup {
  cl_context ctx;
  cl_command_queue queue;
  cl_program prog;
};
inline Setup setup(const char* tool, cl_device_id dev, const char* source) {
  Setup s{};
  cl_int err = CL_SUCCESS;
  s.ctx = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &err);
  check(tool, err, "clCreateContext");
  s.queue = clCreateCommandQueue(s.ctx, dev, 0, &err);
  check(tool, err, "clCreateCommandQueue");
  s.prog = clCreateProgramWithSource(s.ctx, 1, &source, nullptr, &err);
  check(tool, err, "clCreateProgramWithSource");
  check(tool, clBuildProgram(s.prog, 1, &dev, "", nullptr, nullptr), "clBuildProgram");
  return s;
}

}  // namespace probe
