// What an OpenCL device can do, read once from clGetDeviceInfo: the facts that kernel variants
// and their default parameters are chosen by. Never chosen by vendor id (PoCL reports Intel's on
// AMD CPUs): by device type, limits and extensions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace oi {

enum class DeviceClass { CPU, GPU, Accelerator, Other };

const char* device_class_name(DeviceClass c);  // "CPU", "GPU", "ACCELERATOR", "OTHER"

struct DeviceCaps {
  DeviceClass type = DeviceClass::Other;
  uint32_t compute_units = 1;
  size_t max_work_group_size = 1;
  std::vector<size_t> max_work_item_sizes;  // per dimension
  uint64_t local_mem_bytes = 0;
  bool local_mem_dedicated = false;  // CL_LOCAL (on-chip) rather than CL_GLOBAL (emulated)
  uint64_t global_mem_bytes = 0;
  uint64_t max_alloc_bytes = 0;
  size_t base_addr_align_bytes = 128;  // CL_DEVICE_MEM_BASE_ADDR_ALIGN, in bytes
  uint32_t preferred_vector_width_float = 1, preferred_vector_width_half = 0;
  uint32_t native_vector_width_float = 1;
  std::vector<size_t> subgroup_sizes;  // CL_DEVICE_SUB_GROUP_SIZES_INTEL when reported
  int opencl_c_major = 1, opencl_c_minor = 2;  // from CL_DEVICE_OPENCL_C_VERSION
  std::set<std::string> extensions;
  bool fp16 = false;                // cl_khr_fp16
  bool fp64 = false;                // cl_khr_fp64
  bool subgroups = false;           // cl_khr_subgroups or cl_intel_subgroups
  bool integer_dot_product = false;  // cl_khr_integer_dot_product
  // CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT in CL_DEVICE_SINGLE_FP_CONFIG: the device can divide and
  // take square roots correctly rounded when a program asks (-cl-fp32-correctly-rounded-divide-sqrt).
  // Without the option OpenCL allows 2.5 ulp for x / y (NVIDIA's driver takes that), which moves
  // quantized values across rounding ties (x / scale) and makes DynamicQuantizeLinear's scale
  // differ from the host's.
  bool correct_div_sqrt = false;
  // The device is PoCL's CPU driver on this x86-64 host and the host CPU has AVX-512 VNNI (with
  // the OS saving zmm state): kernels may use the vpdpbusd instruction through inline assembly
  // (kernels/quant.cl, QVNNI). A capability of the CPU, read with cpuid, never a vendor id;
  // OCL_INFER_VNNI=0 turns it off.
  bool x86_vnni512 = false;
  // The same for AVX2 (vpmaddwd on ymm registers: kernels/quant.cl, X86_MADD); OCL_INFER_AVX2=0
  // turns it off (the kernels then compute the same pairs in portable OpenCL C).
  bool x86_avx2 = false;
  // Kernels may prefetch with clang's __builtin_prefetch (kernels/conv.cl, CPU_PREFETCH): PoCL's
  // CPU drivers on an x86-64 host, where it becomes the host's prefetch instruction (PoCL's
  // OpenCL prefetch() compiles to nothing). OCL_INFER_PREFETCH=0 turns it off.
  bool cpu_prefetch = false;
  // The host CPU's level-2 cache per core in bytes, for PoCL's CPU devices (which run on this
  // host) where Linux names it in /sys/devices/system/cpu/cpu0/cache; 0 elsewhere or unknown.
  // OpenCL reports only the last level (CL_DEVICE_GLOBAL_MEM_CACHE_SIZE: the L3 on PoCL).
  uint64_t host_l2_bytes = 0;

  bool has(const std::string& ext) const { return extensions.count(ext) != 0; }
  bool is_cpu() const { return type == DeviceClass::CPU; }
  // Whether the untuned kernel choice takes the CPU-shaped variants (a work-item is a register
  // block of explicit vectors, work-groups of one work-item): on CPU devices whose driver asks for
  // explicit vectors (a preferred float vector width above 1, as PoCL's 4-16). A CPU driver that
  // prefers width 1 maps work-items onto its SIMD lanes the way GPUs do (Mesa's llvmpipe through
  // rusticl: 8 lanes, of which the CPU-shaped kernels used one), so it gets the GPU-shaped ones.
  bool cpu_shaped() const { return is_cpu() && preferred_vector_width_float > 1; }
  // The 1-D work-group size for simple one-element-per-work-item kernels (elementwise, copies):
  // 64, within the device's limit.
  size_t linear_local() const;
  // "CPU, 2 compute units, 8 KiB local memory, fp64, OpenCL C 1.2" for logs and dumps.
  std::string summary() const;
};

}  // namespace oi
