#include "runtime/backend/cl_runtime.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <thread>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "runtime/backend/kernel_table.hpp"
#include "runtime/backend/program_bundle.hpp"
#include "runtime/backend/slow_notice.hpp"

namespace oi {

using ocl_infer::DeviceError;
using ocl_infer::KernelBuildError;

const char* cl_error_name(cl_int err) {
  switch (err) {
#define E(x) \
  case x:    \
    return #x;
    E(CL_SUCCESS) E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE) E(CL_COMPILER_NOT_AVAILABLE)
    E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
    E(CL_PROFILING_INFO_NOT_AVAILABLE) E(CL_MEM_COPY_OVERLAP) E(CL_IMAGE_FORMAT_MISMATCH)
    E(CL_IMAGE_FORMAT_NOT_SUPPORTED) E(CL_BUILD_PROGRAM_FAILURE) E(CL_MAP_FAILURE)
    E(CL_MISALIGNED_SUB_BUFFER_OFFSET) E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    E(CL_COMPILE_PROGRAM_FAILURE) E(CL_LINKER_NOT_AVAILABLE) E(CL_LINK_PROGRAM_FAILURE)
    E(CL_DEVICE_PARTITION_FAILED) E(CL_KERNEL_ARG_INFO_NOT_AVAILABLE) E(CL_INVALID_VALUE)
    E(CL_INVALID_DEVICE_TYPE) E(CL_INVALID_PLATFORM) E(CL_INVALID_DEVICE) E(CL_INVALID_CONTEXT)
    E(CL_INVALID_QUEUE_PROPERTIES) E(CL_INVALID_COMMAND_QUEUE) E(CL_INVALID_HOST_PTR)
    E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) E(CL_INVALID_IMAGE_SIZE)
    E(CL_INVALID_SAMPLER) E(CL_INVALID_BINARY) E(CL_INVALID_BUILD_OPTIONS) E(CL_INVALID_PROGRAM)
    E(CL_INVALID_PROGRAM_EXECUTABLE) E(CL_INVALID_KERNEL_NAME) E(CL_INVALID_KERNEL_DEFINITION)
    E(CL_INVALID_KERNEL) E(CL_INVALID_ARG_INDEX) E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE)
    E(CL_INVALID_KERNEL_ARGS) E(CL_INVALID_WORK_DIMENSION) E(CL_INVALID_WORK_GROUP_SIZE)
    E(CL_INVALID_WORK_ITEM_SIZE) E(CL_INVALID_GLOBAL_OFFSET) E(CL_INVALID_EVENT_WAIT_LIST)
    E(CL_INVALID_EVENT) E(CL_INVALID_OPERATION) E(CL_INVALID_GL_OBJECT) E(CL_INVALID_BUFFER_SIZE)
    E(CL_INVALID_MIP_LEVEL) E(CL_INVALID_GLOBAL_WORK_SIZE) E(CL_INVALID_PROPERTY)
#undef E
    case -1001:
      return "CL_PLATFORM_NOT_FOUND_KHR (no OpenCL platform/ICD installed)";
    default:
      return "unknown OpenCL error";
  }
}

void cl_check(cl_int err, const char* call) {
  if (err == CL_SUCCESS) return;
  throw DeviceError(std::string(call) + " failed: " + cl_error_name(err) + " (" +
                    std::to_string(err) + ")");
}

namespace {
std::string raw_kernel_source(const std::string& name) {
  if (const char* dir = std::getenv("OCL_INFER_KERNEL_DIR"); dir && *dir) {
    std::ifstream f(std::string(dir) + "/" + name + ".cl");
    if (f) {
      std::stringstream ss;
      ss << f.rdbuf();
      return ss.str();
    }
  }
  for (const EmbeddedKernel* k = embedded_kernels(); k->name; ++k)
    if (name == k->name) return k->source;
  throw ocl_infer::Error("internal: no kernel file '" + name + ".cl'");
}
}  // namespace

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string hex16(uint64_t v) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(v));
  return hex;
}

bool parse_hex16(std::string_view s, uint64_t* v) {
  if (s.size() != 16) return false;
  uint64_t r = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return false;
    r = r << 4 | static_cast<uint64_t>(d);
  }
  *v = r;
  return true;
}

std::string read_file_or_empty(const std::string& path) {
  std::string r;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) r.append(buf, n);
    std::fclose(f);
  }
  return r;
}

bool is_hex16(const std::string& s) {
  if (s.size() != 16) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> r;
  size_t b = 0;
  for (;;) {
    const size_t e = line.find('\t', b);
    r.push_back(line.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) return r;
    b = e + 1;
  }
}

// A hash of every kernel file as this process would compile it (embedded, or from
// $OCL_INFER_KERNEL_DIR): what a tuning result was measured with.
std::string kernel_sources_hash() {
  std::string all;
  for (const EmbeddedKernel* k = embedded_kernels(); k->name; ++k)
    all += std::string(k->name) + '\n' + raw_kernel_source(k->name) + '\n';
  return hex16(fnv1a(all));
}

namespace {

// Resolves `#include "other.cl"` lines against the embedded files, recursively (each file once:
// the device compiler never sees a file system, and the includes have guards anyway).
void expand_includes(const std::string& name, std::string& out, std::vector<std::string>& seen, int depth) {
  if (depth > 8) throw ocl_infer::Error("internal: kernels/" + name + ".cl nests includes too deeply");
  if (std::find(seen.begin(), seen.end(), name) != seen.end()) return;
  seen.push_back(name);
  std::istringstream in(raw_kernel_source(name));
  std::string line;
  while (std::getline(in, line)) {
    auto p = line.find("#include \"");
    if (p != std::string::npos && line.find_first_not_of(" \t") == p) {
      auto q = line.find('"', p + 10);
      std::string file = line.substr(p + 10, q == std::string::npos ? std::string::npos : q - p - 10);
      if (file.size() > 3 && file.compare(file.size() - 3, 3, ".cl") == 0) {
        expand_includes(file.substr(0, file.size() - 3), out, seen, depth + 1);
        continue;
      }
    }
    out += line + "\n";
  }
}

}  // namespace

std::string kernel_source(const std::string& name) {
  // clang targeting x86 without AVX-512 (PoCL on AVX2 CPUs) warns of the ABI of every 16-wide
  // vector argument (-Wpsabi: harmless inside one program); PoCL printed "N warnings generated."
  // on stderr at every first build (304 for int8 mobilenet_v2) and rejects -Wno-psabi as a build
  // option. #line keeps the file's own line numbers in build logs.
  std::string out =
      "#if defined(__clang__) && defined(__x86_64__)\n#pragma clang diagnostic ignored \"-Wpsabi\"\n#endif\n#line 1\n";
  std::vector<std::string> seen;
  expand_includes(name, out, seen, 0);
  return out;
}

namespace {

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  clGetDeviceInfo(d, what, n, s.data(), nullptr);
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

// The device's CL_DEVICE_EXTENSIONS as a set (for DeviceCaps and the public DeviceInfo).
std::set<std::string> device_extensions(cl_device_id d) {
  std::set<std::string> r;
  std::istringstream ext(device_string(d, CL_DEVICE_EXTENSIONS));
  for (std::string e; ext >> e;) r.insert(e);
  return r;
}

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  clGetPlatformInfo(p, what, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

template <typename T>
T device_scalar(cl_device_id d, cl_device_info what) {
  T v{};
  clGetDeviceInfo(d, what, sizeof(T), &v, nullptr);
  return v;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// $OCL_INFER_EXTRA_BUILD_OPTIONS is appended to every program's options (e.g. "-Drestrict=" for
// oclgrind, which cannot run LLVM's noalias scopes).
const std::string& extra_build_options() {
  static const std::string extra = [] {
    const char* e = std::getenv("OCL_INFER_EXTRA_BUILD_OPTIONS");
    return e && *e ? std::string(" ") + e : std::string();
  }();
  return extra;
}

constexpr const char* kCacheFormat = "ocl-infer-program-cache-v1";

std::string default_cache_dir() {
  if (const char* d = std::getenv("OCL_INFER_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/ocl-infer";
  if (const char* d = std::getenv("HOME"); d && *d) return std::string(d) + "/.cache/ocl-infer";
  return "";
}

void make_dirs(const std::string& path) {
  std::string cur;
  std::stringstream ss(path);
  std::string part;
  if (!path.empty() && path[0] == '/') cur = "/";
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    cur += part + "/";
    mkdir(cur.c_str(), 0755);
  }
}

}  // namespace

const std::string& build_options_suffix() { return extra_build_options(); }

const char* device_class_name(DeviceClass c) {
  switch (c) {
    case DeviceClass::CPU: return "CPU";
    case DeviceClass::GPU: return "GPU";
    case DeviceClass::Accelerator: return "ACCELERATOR";
    default: return "OTHER";
  }
}

size_t DeviceCaps::linear_local() const {
  return std::max<size_t>(1, std::min<size_t>(64, max_work_group_size));
}

std::string DeviceCaps::summary() const {
  std::string s = std::string(device_class_name(type)) + ", " + std::to_string(compute_units) + " compute units, " +
                  std::to_string(local_mem_bytes / 1024) + " KiB local memory" +
                  (local_mem_dedicated ? "" : " (emulated)") + ", max work-group " +
                  std::to_string(max_work_group_size) + ", float vector width " +
                  std::to_string(preferred_vector_width_float);
  if (fp16) s += ", fp16";
  if (fp64) s += ", fp64";
  if (subgroups) s += ", subgroups";
  if (integer_dot_product) s += ", int dot product";
  if (x86_vnni512) s += ", x86 AVX-512 VNNI";
  if (x86_avx2) s += ", x86 AVX2";
  if (cpu_prefetch) s += ", software prefetch";
  if (host_l2_bytes) s += ", L2 " + std::to_string(host_l2_bytes >> 10) + " KiB per core";
  if (correct_div_sqrt) s += ", correctly rounded div/sqrt";
  s += ", OpenCL C " + std::to_string(opencl_c_major) + "." + std::to_string(opencl_c_minor);
  return s + (cpu_shaped() ? "; CPU-shaped kernels" : "; GPU-shaped kernels where they exist");
}

// cpuid leaf 7's ebx and ecx where the OS saves every register state in `xcr0_mask` (XCR0, read
// with xgetbv after cpuid says OSXSAVE); false elsewhere.
static bool host_cpuid7_with_state(unsigned xcr0_mask, unsigned* ebx, unsigned* ecx) {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;  // OSXSAVE
  unsigned lo = 0, hi = 0;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & xcr0_mask) != xcr0_mask || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  *ebx = b;
  *ecx = c;
  return true;
#else
  (void)xcr0_mask;
  (void)ebx;
  (void)ecx;
  return false;
#endif
}

// Whether this host's CPU executes AVX-512 VNNI (vpdpbusd on zmm registers): AVX512F, AVX512BW
// and AVX512_VNNI, with the OS saving the SSE, AVX, opmask, ZMM_Hi256 and Hi16_ZMM state.
static bool host_has_avx512_vnni() {
  unsigned b = 0, c = 0;
  return host_cpuid7_with_state(0xe6, &b, &c) && (b & (1u << 16)) && (b & (1u << 30)) && (c & (1u << 11));
}

// Whether this host's CPU executes AVX2 (vpmaddwd on ymm registers), with the OS saving the SSE
// and AVX state.
static bool host_has_avx2() {
  unsigned b = 0, c = 0;
  return host_cpuid7_with_state(0x6, &b, &c) && (b & (1u << 5));
}

// The level-2 cache of cpu0 from sysfs ("2048K"), 0 where it is not there.
static uint64_t host_l2_cache_bytes() {
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level(dir + "level"), type(dir + "type"), size(dir + "size");
    int l = 0;
    std::string t, sz;
    if (!(level >> l)) break;
    if (l != 2 || !(type >> t) || t == "Instruction" || !(size >> sz)) continue;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(sz.c_str(), &end, 10);
    const uint64_t unit = *end == 'K' ? 1024 : *end == 'M' ? 1024 * 1024 : 1;
    return v * unit;
  }
  return 0;
}

DeviceCaps query_caps(cl_device_id d) {
  DeviceCaps c;
  auto type = device_scalar<cl_device_type>(d, CL_DEVICE_TYPE);
  c.type = (type & CL_DEVICE_TYPE_GPU)           ? DeviceClass::GPU
           : (type & CL_DEVICE_TYPE_ACCELERATOR) ? DeviceClass::Accelerator
           : (type & CL_DEVICE_TYPE_CPU)         ? DeviceClass::CPU
                                                 : DeviceClass::Other;
  c.compute_units = std::max<cl_uint>(1, device_scalar<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS));
  c.max_work_group_size = std::max<size_t>(1, device_scalar<size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE));
  const cl_uint dims = device_scalar<cl_uint>(d, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS);
  if (dims > 0 && dims <= 16) {
    c.max_work_item_sizes.assign(dims, 0);
    clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, dims * sizeof(size_t), c.max_work_item_sizes.data(), nullptr);
  }
  c.local_mem_bytes = device_scalar<cl_ulong>(d, CL_DEVICE_LOCAL_MEM_SIZE);
  c.local_mem_dedicated = device_scalar<cl_device_local_mem_type>(d, CL_DEVICE_LOCAL_MEM_TYPE) == CL_LOCAL;
  c.global_mem_bytes = device_scalar<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE);
  c.max_alloc_bytes = device_scalar<cl_ulong>(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  c.base_addr_align_bytes = std::max<size_t>(device_scalar<cl_uint>(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8, 1);
  c.preferred_vector_width_float = device_scalar<cl_uint>(d, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT);
  c.preferred_vector_width_half = device_scalar<cl_uint>(d, CL_DEVICE_PREFERRED_VECTOR_WIDTH_HALF);
  c.native_vector_width_float = device_scalar<cl_uint>(d, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT);
  c.extensions = device_extensions(d);
  c.fp16 = c.has("cl_khr_fp16");
  c.fp64 = c.has("cl_khr_fp64");
  c.subgroups = c.has("cl_khr_subgroups") || c.has("cl_intel_subgroups");
  c.integer_dot_product = c.has("cl_khr_integer_dot_product");
  c.correct_div_sqrt = (device_scalar<cl_device_fp_config>(d, CL_DEVICE_SINGLE_FP_CONFIG) &
                        CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
  if (c.type == DeviceClass::CPU) {
    // PoCL's CPU drivers compile for and run on this host; no other implementation takes x86
    // inline assembly (rusticl's llvmpipe goes through SPIR-V).
    const cl_platform_id p = device_scalar<cl_platform_id>(d, CL_DEVICE_PLATFORM);
    const char* env = std::getenv("OCL_INFER_VNNI");
    // A preferred float vector width of 16 says that PoCL compiles for a target with 512-bit
    // registers (the assembly's operands are zmm registers).
    const bool pocl = platform_string(p, CL_PLATFORM_NAME) == "Portable Computing Language";
    c.x86_vnni512 = pocl && c.preferred_vector_width_float >= 16 && !(env && std::string(env) == "0") &&
                    host_has_avx512_vnni();
    // Width 8 or more: a target with 256-bit registers (ymm operands).
    const char* avx2_env = std::getenv("OCL_INFER_AVX2");
    c.x86_avx2 = pocl && c.preferred_vector_width_float >= 8 && !(avx2_env && std::string(avx2_env) == "0") &&
                 host_has_avx2();
    if (pocl) c.host_l2_bytes = host_l2_cache_bytes();
#if defined(__x86_64__)
    const char* prefetch_env = std::getenv("OCL_INFER_PREFETCH");
    c.cpu_prefetch = pocl && c.cpu_shaped() && !(prefetch_env && std::string(prefetch_env) == "0");
#endif
  }
  // "OpenCL C 1.2 pocl" -> 1, 2
  const std::string ver = device_string(d, CL_DEVICE_OPENCL_C_VERSION);
  int major = 0, minor = 0;
  if (std::sscanf(ver.c_str(), "OpenCL C %d.%d", &major, &minor) == 2) {
    c.opencl_c_major = major;
    c.opencl_c_minor = minor;
  }
  if (c.has("cl_intel_required_subgroup_size")) {
    // CL_DEVICE_SUB_GROUP_SIZES_INTEL (0x4108): a size_t list.
    size_t n = 0;
    if (clGetDeviceInfo(d, 0x4108, 0, nullptr, &n) == CL_SUCCESS && n > 0 && n % sizeof(size_t) == 0) {
      c.subgroup_sizes.resize(n / sizeof(size_t));
      clGetDeviceInfo(d, 0x4108, n, c.subgroup_sizes.data(), nullptr);
    }
  }
  return c;
}

std::vector<DeviceHandle> enumerate_devices() {
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &np);
  if (err == -1001 || np == 0)
    throw DeviceError(
        "no OpenCL platform found: install an OpenCL driver (e.g. Debian's pocl-opencl-icd) and "
        "the ICD loader (ocl-icd-libopencl1)");
  cl_check(err, "clGetPlatformIDs");
  std::vector<cl_platform_id> plats(np);
  cl_check(clGetPlatformIDs(np, plats.data(), nullptr), "clGetPlatformIDs");
  std::vector<DeviceHandle> out;
  for (auto p : plats) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
    std::vector<cl_device_id> devs(nd);
    clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, devs.data(), nullptr);
    for (auto d : devs) {
      DeviceHandle h;
      h.platform = p;
      h.device = d;
      auto& i = h.info;
      i.index = static_cast<int>(out.size());
      i.name = device_string(d, CL_DEVICE_NAME);
      i.vendor = device_string(d, CL_DEVICE_VENDOR);
      i.platform = platform_string(p, CL_PLATFORM_NAME);
      i.driver_version = device_string(d, CL_DRIVER_VERSION);
      i.device_version = device_string(d, CL_DEVICE_VERSION);
      i.opencl_c_version = device_string(d, CL_DEVICE_OPENCL_C_VERSION);
      auto type = device_scalar<cl_device_type>(d, CL_DEVICE_TYPE);
      i.type = (type & CL_DEVICE_TYPE_GPU)           ? "GPU"
               : (type & CL_DEVICE_TYPE_ACCELERATOR) ? "ACCELERATOR"
               : (type & CL_DEVICE_TYPE_CPU)         ? "CPU"
                                                     : "OTHER";
      i.global_mem_bytes = device_scalar<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE);
      i.max_alloc_bytes = device_scalar<cl_ulong>(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
      i.compute_units = device_scalar<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS);
      const std::set<std::string> ext = device_extensions(d);
      i.fp64 = ext.count("cl_khr_fp64") > 0;
      i.fp16 = ext.count("cl_khr_fp16") > 0;
      out.push_back(h);
    }
  }
  if (out.empty()) throw DeviceError("OpenCL platforms exist but expose no device");
  return out;
}

DeviceHandle select_device(const std::string& spec) {
  auto devs = enumerate_devices();
  auto list = [&] {
    std::string s;
    for (auto& d : devs)
      s += (s.empty() ? "" : "; ") + std::to_string(d.info.index) + ": " + d.info.name + " (" +
           d.info.type + ")";
    return s;
  };
  if (spec.empty()) {
    for (auto& d : devs)
      if (d.info.type == "GPU" || d.info.type == "ACCELERATOR") return d;
    for (auto& d : devs)
      if (d.info.type == "CPU") return d;
    return devs[0];
  }
  if (std::all_of(spec.begin(), spec.end(), [](char c) { return std::isdigit((unsigned char)c); })) {
    size_t idx = std::stoul(spec);
    if (idx < devs.size()) return devs[idx];
    throw DeviceError("no OpenCL device with index " + spec + "; devices: " + list());
  }
  for (auto& d : devs)
    if (lower(d.info.name).find(lower(spec)) != std::string::npos ||
        lower(d.info.platform).find(lower(spec)) != std::string::npos)
      return d;
  throw DeviceError("no OpenCL device matches '" + spec + "'; devices: " + list());
}

namespace {

// OCL_INFER_TRACE_BUFFERS=1: every buffer and sub-buffer creation and release on stderr, with
// the driver's reference counts, flushed before the call (a driver that crashes in a release
// leaves its buffer as the last line). For drivers, not users.
bool trace_buffers() {
  static const bool on = [] {
    const char* e = std::getenv("OCL_INFER_TRACE_BUFFERS");
    return e && *e && std::string(e) != "0";
  }();
  return on;
}

cl_uint mem_refcount(cl_mem m) {
  cl_uint n = 0;
  clGetMemObjectInfo(m, CL_MEM_REFERENCE_COUNT, sizeof n, &n, nullptr);
  return n;
}

}  // namespace

DeviceBuffer::~DeviceBuffer() {
  if (!mem) return;
  if (trace_buffers()) {
    std::fprintf(stderr, "ocl-infer buffers: %s %p (%zu bytes, refcount %u)", parent ? "drop" : "release",
                 static_cast<void*>(mem), bytes, mem_refcount(mem));
    if (parent) std::fprintf(stderr, ", sub-buffer of %p (refcount %u)", static_cast<void*>(parent->mem),
                             mem_refcount(parent->mem));
    std::fprintf(stderr, "\n");
    std::fflush(stderr);
  }
  if (parent) {
    parent->release_sub(mem);  // in creation order's reverse (see the header)
    return;
  }
  // Every sub-buffer holds its parent, so the last one's release_sub emptied `subs`; anything left
  // (marked, then) goes newest first.
  for (auto it = subs.rbegin(); it != subs.rend(); ++it) clReleaseMemObject(it->mem);
  clReleaseMemObject(mem);
}

void DeviceBuffer::add_sub(cl_mem m) {
  std::lock_guard<std::mutex> lock(subs_mu);
  subs.push_back({m, false});
}

void DeviceBuffer::release_sub(cl_mem m) {
  std::lock_guard<std::mutex> lock(subs_mu);
  for (auto it = subs.rbegin(); it != subs.rend(); ++it)
    if (it->mem == m) {
      it->released = true;
      break;
    }
  while (!subs.empty() && subs.back().released) {
    if (trace_buffers()) std::fprintf(stderr, "ocl-infer buffers: release sub-buffer %p\n", static_cast<void*>(subs.back().mem));
    clReleaseMemObject(subs.back().mem);
    subs.pop_back();
  }
}

void KernelDeleter::operator()(cl_kernel k) const {
  if (k) clReleaseKernel(k);
}

namespace {

// One OpenCL context per device for the whole process, shared by every runtime (session) on it.
// A driver keeps per-context compiler state: PoCL parses its kernel library (9 MB of LLVM
// bitcode) at a context's first build from source and frees it with the context, 0.4-0.5 s each
// time on a 2-core AMD EPYC, so a process that opened sessions one after another (the test suites,
// a server loading models) paid it per session: test_elementwise from empty caches 72 -> 24 s.
// The process keeps its reference (and the driver's parsed library, ~110 MB) until exit
// or release_shared_contexts(); each runtime holds one more. Leaked on purpose: runtimes may
// outlive static destruction.
struct SharedContexts {
  std::mutex mu;
  std::map<cl_device_id, cl_context> contexts;
};

SharedContexts& shared_contexts() {
  static auto* s = new SharedContexts;
  return *s;
}

cl_context shared_context(cl_device_id device) {
  SharedContexts& s = shared_contexts();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.contexts.find(device);
  if (it == s.contexts.end()) {
    cl_int err = CL_SUCCESS;
    cl_context c = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    cl_check(err, "clCreateContext");
    it = s.contexts.emplace(device, c).first;
  }
  cl_check(clRetainContext(it->second), "clRetainContext");
  return it->second;
}

}  // namespace

// Programs compiled in this process, shared by every runtime on the shared context: a process that
// opens sessions one after another (the test suites, a server loading several models, a Python
// user's session per input size) compiles a kernel program once, not once per session. PoCL's own
// cache would find a program again, but only one with the same source: a bundle holds the units of
// one plan, so the next plan's bundle (another shape of the op under test, with the same casts
// and copies around it) compiled every shared unit again, ~80 % of test_scatter_fp16's code
// generation. Single programs are kept by file + options, bundles by each of their units. The
// pool holds a reference of its own (runtimes retain what they take); the oldest entries go once
// it holds kMaxPrograms programs or kMaxSourceBytes of their sources (a rough measure of what
// the driver keeps per program), and all of it with release_shared_contexts().
struct ProgramPool {
  static constexpr size_t kMaxPrograms = 256;
  static constexpr size_t kMaxSourceBytes = 64u << 20;
  struct Entry {
    cl_program prog;
    size_t bytes;
    std::vector<std::string> keys;  // of `programs` or `units`
    std::vector<std::pair<std::string, std::string>> units;  // a bundle's, in order
  };
  std::mutex mu;
  std::deque<Entry> entries;  // oldest first
  size_t bytes = 0;
  std::unordered_map<std::string, cl_program> programs;  // file \n options (with the extra options)
  // A bundled unit, by file \n options \n extra options: its bundle and the suffix of its names.
  std::unordered_map<std::string, std::pair<cl_program, std::string>> units;

  void add(Entry e) {
    clRetainProgram(e.prog);
    bytes += e.bytes;
    entries.push_back(std::move(e));
    while (entries.size() > kMaxPrograms || (bytes > kMaxSourceBytes && entries.size() > 1)) {
      Entry& old = entries.front();
      for (const std::string& k : old.keys) {
        if (auto it = programs.find(k); it != programs.end() && it->second == old.prog) programs.erase(it);
        if (auto it = units.find(k); it != units.end() && it->second.first == old.prog) units.erase(it);
      }
      bytes -= old.bytes;
      clReleaseProgram(old.prog);
      entries.pop_front();
    }
  }
  // A pool that release_shared_contexts() dropped lives on with the runtimes of its context, which
  // may still add to it; its programs go with the last of them.
  ~ProgramPool() { clear(); }
  void clear() {
    for (Entry& e : entries) clReleaseProgram(e.prog);
    entries.clear();
    programs.clear();
    units.clear();
    bytes = 0;
  }
};

namespace {

// The pools of the shared contexts (guarded by shared_contexts().mu).
std::map<cl_context, std::shared_ptr<ProgramPool>>& program_pools() {
  static auto* pools = new std::map<cl_context, std::shared_ptr<ProgramPool>>;
  return *pools;
}

// The pool of `context`; null when it is no longer a shared context (release_shared_contexts()
// was called since): that runtime's programs are its own.
std::shared_ptr<ProgramPool> program_pool(cl_context context) {
  SharedContexts& s = shared_contexts();
  std::lock_guard<std::mutex> lock(s.mu);
  for (const auto& [device, c] : s.contexts)
    if (c == context) {
      std::shared_ptr<ProgramPool>& p = program_pools()[context];
      if (!p) p = std::make_shared<ProgramPool>();
      return p;
    }
  return nullptr;
}

std::string pool_unit_key(const std::string& file, const std::string& options) {
  return file + '\n' + options + '\n' + extra_build_options();
}

}  // namespace

void release_shared_contexts() {
  SharedContexts& s = shared_contexts();
  std::lock_guard<std::mutex> lock(s.mu);
  for (auto& [context, pool] : program_pools()) {
    std::lock_guard<std::mutex> l(pool->mu);
    pool->clear();
  }
  program_pools().clear();
  for (auto& [device, context] : s.contexts) clReleaseContext(context);
  s.contexts.clear();
}

int shared_context_count() {
  SharedContexts& s = shared_contexts();
  std::lock_guard<std::mutex> lock(s.mu);
  return static_cast<int>(s.contexts.size());
}

ClRuntime::ClRuntime(const DeviceHandle& dev, const std::string& cache_dir,
                     std::function<void(const std::string&)> log, bool profiling)
    : dev_(dev), profiling_(profiling), log_(std::move(log)) {
  cl_int err = CL_SUCCESS;
  context_ = shared_context(dev_.device);
  pool_ = program_pool(context_);
  queue_ = clCreateCommandQueue(context_, dev_.device,
                                profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
  if (err != CL_SUCCESS) {
    clReleaseContext(context_);
    cl_check(err, "clCreateCommandQueue");
  }
  caps_ = query_caps(dev_.device);
  free_slots_ = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  cache_dir_ = cache_dir.empty() ? default_cache_dir() : cache_dir;
  if (cache_dir_ == "off") cache_dir_.clear();  // from the option or $OCL_INFER_CACHE_DIR
}

ClRuntime::~ClRuntime() {
  // Prefetched builds still running use the context: wait for them, and release what they built.
  for (auto& [k, f] : pending_) {
    try {
      cl_program p = f.get();
      if (!programs_.count(k)) clReleaseProgram(p);
    } catch (...) {
      // a failed prefetch that nobody asked for
    }
  }
  for (auto& [k, p] : programs_) clReleaseProgram(p);
  for (cl_program p : bundles_) clReleaseProgram(p);
  if (queue_) clReleaseCommandQueue(queue_);
  if (context_) clReleaseContext(context_);
}

BufferPtr ClRuntime::alloc(size_t bytes) {
  if (bytes == 0) bytes = 4;
  if (bytes > dev_.info.max_alloc_bytes)
    throw DeviceError("device out of memory: a buffer of " + std::to_string(bytes) +
                      " bytes exceeds the device's maximum allocation of " +
                      std::to_string(dev_.info.max_alloc_bytes) + " bytes");
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(context_, CL_MEM_READ_WRITE, bytes, nullptr, &err);
  if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
      err == CL_OUT_OF_HOST_MEMORY)
    throw DeviceError("device out of memory allocating " + std::to_string(bytes) + " bytes (" +
                      cl_error_name(err) + ")");
  cl_check(err, "clCreateBuffer");
  if (trace_buffers()) std::fprintf(stderr, "ocl-infer buffers: buffer %p (%zu bytes)\n", static_cast<void*>(m), bytes);
  auto b = std::make_shared<DeviceBuffer>();
  b->mem = m;
  b->bytes = bytes;
  return b;
}

BufferPtr ClRuntime::sub_buffer(const BufferPtr& parent, size_t offset, size_t bytes) {
  cl_buffer_region region{offset, bytes};
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateSubBuffer(parent->mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  cl_check(err, "clCreateSubBuffer");
  if (trace_buffers())
    std::fprintf(stderr, "ocl-infer buffers: sub-buffer %p of %p (%zu bytes) at %zu, %zu bytes; parent refcount %u\n",
                 static_cast<void*>(m), static_cast<void*>(parent->mem), parent->bytes, offset, bytes,
                 mem_refcount(parent->mem));
  auto b = std::make_shared<DeviceBuffer>();
  b->mem = m;
  b->bytes = bytes;
  b->parent = parent;
  parent->add_sub(m);
  return b;
}

BufferPtr ClRuntime::upload(const void* data, size_t bytes) {
  const auto t0 = std::chrono::steady_clock::now();
  auto b = alloc(bytes);
  if (bytes)
    cl_check(clEnqueueWriteBuffer(queue_, b->mem, CL_TRUE, 0, bytes, data, 0, nullptr, nullptr),
             "clEnqueueWriteBuffer");
  upload_us_ += std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
  return b;
}

BufferPtr ClRuntime::upload_shared(std::shared_ptr<const void> owner, const void* data, size_t bytes) {
  static const bool off = [] {
    const char* e = std::getenv("OCL_INFER_ZERO_COPY");
    return e && std::string(e) == "0";
  }();
  // Host memory is device memory on a CPU device: a copy would only fault in fresh pages
  // (resnet18: 46 MB, ~45 ms of a warm start).
  // Unaligned host memory is copied: kernels' vector loads across cache lines cost resnet18 3 %.
  if (off || !caps_.is_cpu() || bytes == 0 || !data || reinterpret_cast<uintptr_t>(data) % 64 != 0)
    return upload(data, bytes);
  const auto t0 = std::chrono::steady_clock::now();
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(context_, CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR, bytes, const_cast<void*>(data), &err);
  if (err != CL_SUCCESS) return upload(data, bytes);
  auto b = std::make_shared<DeviceBuffer>();
  b->mem = m;
  b->bytes = bytes;
  b->host = std::move(owner);
  upload_us_ += std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
  return b;
}

cl_program ClRuntime::build_from_source(const std::string& src, const std::string& options,
                                        const std::string& file) {
  cl_int err = CL_SUCCESS;
  const char* s = src.c_str();
  size_t len = src.size();
  cl_program p = clCreateProgramWithSource(context_, 1, &s, &len, &err);
  cl_check(err, "clCreateProgramWithSource");
  err = build_program(p, options);
  if (err != CL_SUCCESS) {
    size_t n = 0;
    clGetProgramBuildInfo(p, dev_.device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
    std::string logtext(n, '\0');
    clGetProgramBuildInfo(p, dev_.device, CL_PROGRAM_BUILD_LOG, n, logtext.data(), nullptr);
    clReleaseProgram(p);
    throw KernelBuildError("building kernels/" + file + ".cl with options '" + options +
                           "' failed: " + cl_error_name(err) + "; build log:\n" + logtext);
  }
  // Warnings of a successful build go to the session log only (-v): kernels should have none.
  if (log_) {
    size_t n = 0;
    if (clGetProgramBuildInfo(p, dev_.device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) == CL_SUCCESS && n > 1) {
      std::string logtext(n, '\0');
      clGetProgramBuildInfo(p, dev_.device, CL_PROGRAM_BUILD_LOG, n, logtext.data(), nullptr);
      if (logtext.find("warning") != std::string::npos) {
        std::lock_guard<std::mutex> lock(log_mu_);
        log_("kernel build warnings in kernels/" + file + ".cl with options '" + options + "':\n" + logtext);
      }
    }
  }
  return p;
}

std::string ClRuntime::device_options() const {
  return caps_.correct_div_sqrt ? " -cl-fp32-correctly-rounded-divide-sqrt" : "";
}

cl_int ClRuntime::build_program(cl_program p, const std::string& options) const {
  return clBuildProgram(p, 1, &dev_.device, (options + device_options()).c_str(), nullptr, nullptr);
}

cl_program ClRuntime::load_or_build(const std::string& file, const std::string& options) {
  return load_or_build_source(file, kernel_source(file), options);
}

std::pair<std::string, std::string> ClRuntime::cache_entry(const std::string& file, const std::string& src,
                                                           const std::string& options) const {
  std::string full_key = std::string(kCacheFormat) + '\n' + src + '\n' + options + device_options() + '\n' +
                         dev_.info.name + '\n' + dev_.info.platform + '\n' +
                         dev_.info.driver_version + '\n' + dev_.info.device_version;
  std::string path = cache_dir_.empty() ? "" : cache_dir_ + "/" + file + "-" + hex16(fnv1a(full_key)) + ".bin";
  return {path, full_key};
}

cl_program ClRuntime::load_or_build_source(const std::string& file, const std::string& src,
                                           const std::string& options) {
  auto t0 = std::chrono::steady_clock::now();
  const auto [path, full_key] = cache_entry(file, src, options);

  cl_program prog = nullptr;
  // Cache entry layout: u64 key length, key bytes, u64 binary length, binary bytes. The full key is
  // compared so that a hash collision or a truncated file falls back to compiling.
  if (!path.empty()) {
    std::ifstream f(path, std::ios::binary);
    uint64_t klen = 0, blen = 0;
    if (f && f.read(reinterpret_cast<char*>(&klen), 8) && klen == full_key.size()) {
      std::string k(klen, '\0');
      if (f.read(k.data(), klen) && k == full_key && f.read(reinterpret_cast<char*>(&blen), 8) &&
          blen > 0 && blen < (1ull << 31)) {
        std::vector<unsigned char> bin(blen);
        if (f.read(reinterpret_cast<char*>(bin.data()), blen)) {
          const unsigned char* bp = bin.data();
          size_t bl = bin.size();
          cl_int status = CL_SUCCESS, err = CL_SUCCESS;
          cl_program p =
              clCreateProgramWithBinary(context_, 1, &dev_.device, &bl, &bp, &status, &err);
          if (err == CL_SUCCESS && status == CL_SUCCESS &&
              build_program(p, options) == CL_SUCCESS) {
            prog = p;
            std::lock_guard<std::mutex> lock(mu_);
            stats_.cached++;
          } else if (p) {
            clReleaseProgram(p);
          }
        }
      }
    }
  }
  const bool built_now = !prog;
  if (!prog) {
    prog = build_from_source(src, options, file);
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.built++;
    }
    if (!path.empty() && storing_binaries()) {
      store_binary(prog, path, full_key);
    } else if (!path.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      unstored_.push_back({file, src, options});
    }
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (log_) {
    char line[64];
    std::snprintf(line, sizeof line, " in %.0f ms", ms);
    std::lock_guard<std::mutex> l(log_mu_);
    log_(std::string("kernel program ") + (file == kBundleName ? std::string("bundle") : "kernels/" + file + ".cl") +
         (options.empty() ? "" : " [" + options + "]") + (built_now ? " built" : " loaded from the cache") + line);
  }
  std::lock_guard<std::mutex> lock(mu_);
  stats_.compile_ms += ms;
  return prog;
}

namespace {

// The program's binary for the one device it was built for; false when the driver gives none.
bool read_back_binary(cl_program prog, std::vector<unsigned char>* bin) {
  size_t bsize = 0;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof bsize, &bsize, nullptr) != CL_SUCCESS || bsize == 0)
    return false;
  bin->resize(bsize);
  unsigned char* bp = bin->data();
  return clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bp, &bp, nullptr) == CL_SUCCESS;
}

// Writes `bytes` to a temporary file beside `path` and renames it over `path`, so that readers
// never see a torn file; the temporary name is unique per process and call (sessions in several
// threads may write the same file).
void write_atomically(const std::string& path, const std::string& bytes) {
  static std::atomic<unsigned> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  std::ofstream f(tmp, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (f) std::rename(tmp.c_str(), path.c_str());
  else std::remove(tmp.c_str());
}

// A disk cache entry: u64 key length, key bytes, u64 binary length, binary bytes.
std::string cache_entry_bytes(const std::string& full_key, const std::vector<unsigned char>& bin) {
  const uint64_t klen = full_key.size(), blen = bin.size();
  std::string entry(reinterpret_cast<const char*>(&klen), 8);
  entry += full_key;
  entry.append(reinterpret_cast<const char*>(&blen), 8);
  entry.append(reinterpret_cast<const char*>(bin.data()), bin.size());
  return entry;
}

}  // namespace

void ClRuntime::store_binary(cl_program prog, const std::string& path, const std::string& full_key) {
  std::vector<unsigned char> bin;
  if (!read_back_binary(prog, &bin)) return;
  make_dirs(cache_dir_);
  write_atomically(path, cache_entry_bytes(full_key, bin));
}

namespace {
// $OCL_INFER_STORE_BINARIES: 1 or 0 overrides the measured decision; -1 when unset or neither.
int store_binaries_override() {
  const char* e = std::getenv("OCL_INFER_STORE_BINARIES");
  return e && (std::string(e) == "0" || std::string(e) == "1") ? (e[0] == '1' ? 1 : 0) : -1;
}
}  // namespace

std::vector<ClRuntime::UnstoredProgram> ClRuntime::take_unstored_programs() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<UnstoredProgram> r;
  r.swap(unstored_);
  if (store_binaries_override() == 0) r.clear();
  return r;
}

bool ClRuntime::store_program_binary(const UnstoredProgram& p) {
  const auto [path, full_key] = cache_entry(p.file, p.src, p.options);
  if (path.empty()) return false;
  cl_program prog = build_from_source(p.src, p.options, p.file);
  std::vector<unsigned char> bin;
  const bool ok = read_back_binary(prog, &bin);
  cl_uint kernels = 0;
  const bool have_kernels = clCreateKernelsInProgram(prog, 0, nullptr, &kernels) == CL_SUCCESS;
  clReleaseProgram(prog);
  if (!ok || !have_kernels) return false;
  // Loaded once here before it is written: a binary the driver cannot load back (PoCL once handed
  // out one that crashed the next process) fails or crashes this helper, not a user's run.
  const unsigned char* bp = bin.data();
  size_t bl = bin.size();
  cl_int status = CL_SUCCESS, err = CL_SUCCESS;
  cl_program back = clCreateProgramWithBinary(context_, 1, &dev_.device, &bl, &bp, &status, &err);
  bool loads = err == CL_SUCCESS && status == CL_SUCCESS &&
               build_program(back, p.options) == CL_SUCCESS;
  cl_uint back_kernels = 0;
  loads = loads && clCreateKernelsInProgram(back, 0, nullptr, &back_kernels) == CL_SUCCESS && back_kernels == kernels;
  if (back) clReleaseProgram(back);
  if (!loads) return false;
  make_dirs(cache_dir_);
  write_atomically(path, cache_entry_bytes(full_key, bin));
  return true;
}

bool ClRuntime::storing_binaries() {
  std::lock_guard<std::mutex> lock(policy_mu_);
  if (store_binaries_ >= 0) return store_binaries_ == 1;
  if (const int o = store_binaries_override(); o >= 0) {
    store_binaries_ = o;
    return store_binaries_ == 1;
  }
  read_binary_policy();
  if (store_binaries_ < 0) decide_binary_storage();
  return store_binaries_ == 1;
}

void ClRuntime::read_binary_policy() {
  // One decision per device and driver, next to the entries it concerns.
  const std::string device_key = this->device_key();
  policy_path_ = cache_dir_ + "/store-binaries-" + hex16(fnv1a(device_key)) + ".txt";
  std::ifstream f(policy_path_);
  std::string word;
  int v = -1;
  // "store-binaries 0|1 ..." (the rest of the line says why); anything else is measured again.
  if (f >> word >> v && word == "store-binaries" && (v == 0 || v == 1)) store_binaries_ = v;
}

void ClRuntime::decide_binary_storage_on(cl_program prog) {
  if (cache_dir_.empty()) return;
  if (store_binaries_override() >= 0) return;  // storing_binaries() takes the override
  std::lock_guard<std::mutex> lock(policy_mu_);
  if (store_binaries_ >= 0) return;
  read_binary_policy();
  if (store_binaries_ >= 0) return;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<unsigned char> bin;
  const bool ok = read_back_binary(prog, &bin);
  const double read_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // This program's build included the driver's own start-up, so only the absolute time counts: a
  // driver that kept what it compiled copies it out in well under 2 ms (rusticl: under 1 ms); PoCL
  // compiles the kernel again (~40-70 ms).
  record_binary_policy(ok ? read_ms : -1, -1, ok && read_ms <= 2.0);
}

void ClRuntime::decide_binary_storage() {
  // A driver that compiled in clBuildProgram hands out its binary as a copy (rusticl: under 1 ms);
  // one that needs more than a tenth of the build compiles again (PoCL: ~80 ms for the probe below
  // built in ~250 ms, 0.55-1.8 s for a conv). Measured on a probe rather than on the model's
  // programs: PoCL's read-back of resnet18's 7x7 stem conv took 1.8 s of a cold start. This runs
  // after the session's first build, so the driver's own start-up (~1 s for PoCL) is not in the
  // probe's build time; a define no driver cache can know makes it a fresh build.
  const auto now = [] { return std::chrono::steady_clock::now(); };
  const auto ms_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
  };
  const std::string nonce = std::to_string(getpid()) + "-" + std::to_string(now().time_since_epoch().count());
  double build_ms = 0, read_ms = -1;
  try {
    // One kernel with a loop: a one-line kernel compiles too fast to show the second compile
    // (0.2 ms), and each kernel of a program is compiled again, so one is enough.
    const std::string src =
        "__kernel void oi_binary_probe(__global float* y, int n) {\n"
        "  float a = 0.0f;\n"
        "  for (int i = 0; i < n; ++i) a = fma(a, 0.5f, y[i] * PROBE_SCALE);\n"
        "  y[get_global_id(0)] = a;\n"
        "}\n";
    const std::string opts = " -DPROBE_SCALE=1.0f -DOCL_INFER_BINARY_PROBE=" + nonce + extra_build_options();
    auto t0 = now();
    cl_program p = build_from_source(src, opts, "binary-probe");
    build_ms = ms_since(t0);
    t0 = now();
    std::vector<unsigned char> bin;
    const bool ok = read_back_binary(p, &bin);
    read_ms = ok ? ms_since(t0) : -1;
    clReleaseProgram(p);
  } catch (const std::exception&) {
    read_ms = -1;  // no probe, no stored binaries: the driver's own cache still works
  }
  record_binary_policy(read_ms, build_ms, read_ms >= 0 && read_ms <= std::max(2.0, build_ms / 10));
}

void ClRuntime::record_binary_policy(double read_ms, double build_ms, bool fast) {
  store_binaries_ = fast ? 1 : 0;
  char why[200];
  if (read_ms < 0)
    std::snprintf(why, sizeof why, "the driver gave no binary for a probe program");
  else if (build_ms < 0)
    std::snprintf(why, sizeof why, "reading the loop probe's binary back took %.1f ms", read_ms);
  else
    std::snprintf(why, sizeof why, "reading a probe program's binary back took %.1f ms, its build %.0f ms", read_ms,
                  build_ms);
  make_dirs(cache_dir_);
  write_atomically(policy_path_, "store-binaries " + std::to_string(store_binaries_) + " (" + why + ")\n");
  if (log_) {
    std::lock_guard<std::mutex> l(log_mu_);
    log_(store_binaries_ ? std::string("kernel cache: storing program binaries (") + why + ")"
                         : std::string("kernel cache: this driver compiles again to hand out binaries (") + why +
                               "); ocl-infer stores none for this device and relies on the driver's own cache");
  }
}

void ClRuntime::check_loops() {
  const std::string key = device_key();
  const std::string path = cache_dir_.empty() ? "" : cache_dir_ + "/loops-" + hex16(fnv1a(key)) + ".txt";
  // Per process too: sessions without a cache folder probe once (keyed by the file when there is
  // one, so that each cache folder's verdict is read).
  static std::mutex mu;
  static std::map<std::string, std::pair<int, std::string>> known;  // -> (1 | 0, why)
  const std::string known_key = path.empty() ? key : path;
  std::pair<int, std::string> verdict{-1, ""};
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = known.find(known_key); it != known.end()) verdict = it->second;
  }
  if (verdict.first < 0 && !path.empty()) {
    // "loops 0|1 (why)"; anything else is measured again.
    std::ifstream f(path);
    std::string word, why;
    int v = -1;
    if (f >> word >> v && word == "loops" && (v == 0 || v == 1)) {
      std::getline(f, why);
      verdict = {v, why};
    }
  }
  if (verdict.first < 0) {
    // A loop of 70,000 iterations, alone and as the outer loop around a one-iteration inner loop
    // (llvmpipe counted the two differently: 65,535 and 21,845 done), over values the compiler
    // cannot fold.
    const std::string src =
        "__kernel void oi_loop_probe(__global int* v, int n, int m) {\n"
        "  int s = 0;\n"
        "  for (int i = 0; i < n; ++i)\n"
        "    for (int j = 0; j < m; ++j) s += v[1 + (j & 3)];\n"
        "  v[0] = s;\n"
        "}\n";
    // A define no driver cache can know makes it a fresh build: the binary-storage decision below
    // measures the binary's read-back, which a driver cache that kept an earlier read-back's result
    // answers in 0.3 ms (PoCL), and the decision came out wrong.
    const std::string nonce = std::to_string(getpid()) + "-" +
                              std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    cl_program p = build_from_source(src, extra_build_options() + " -DOCL_INFER_LOOP_PROBE=" + nonce, "loop-probe");
    std::string why;
    int ok = 1;
    try {
      cl_int err = CL_SUCCESS;
      KernelPtr k(clCreateKernel(p, "oi_loop_probe", &err));
      cl_check(err, "clCreateKernel(oi_loop_probe)");
      BufferPtr buf = alloc(5 * sizeof(cl_int));
      for (const auto& [n, m] : {std::pair<cl_int, cl_int>{1, 70000}, {70000, 1}}) {
        cl_int init[5] = {0, 1, 1, 1, 1}, got = 0;
        cl_check(clEnqueueWriteBuffer(queue_, buf->mem, CL_TRUE, 0, sizeof init, init, 0, nullptr, nullptr),
                 "clEnqueueWriteBuffer(loop probe)");
        cl_check(clSetKernelArg(k.get(), 0, sizeof(cl_mem), &buf->mem), "clSetKernelArg");
        cl_check(clSetKernelArg(k.get(), 1, sizeof n, &n), "clSetKernelArg");
        cl_check(clSetKernelArg(k.get(), 2, sizeof m, &m), "clSetKernelArg");
        const size_t one = 1;
        cl_check(clEnqueueNDRangeKernel(queue_, k.get(), 1, nullptr, &one, &one, 0, nullptr, nullptr),
                 "clEnqueueNDRangeKernel(loop probe)");
        cl_check(clEnqueueReadBuffer(queue_, buf->mem, CL_TRUE, 0, sizeof got, &got, 0, nullptr, nullptr),
                 "clEnqueueReadBuffer(loop probe)");
        if (got != n * m) {
          ok = 0;
          why = "a probe loop of " + std::to_string(n * m) + " iterations ran " + std::to_string(got);
          break;
        }
      }
    } catch (...) {
      clReleaseProgram(p);
      throw;
    }
    // The first session on a device decides binary storage on this program too (one probe build
    // fewer in the first run: ~0.15 s on PoCL); errors leave it to the probe after the first build.
    try {
      decide_binary_storage_on(p);
    } catch (const std::exception&) {
    }
    clReleaseProgram(p);
    if (ok) why = "a probe loop of 70000 iterations ran to the end";
    verdict = {ok, " (" + why + ")"};
    if (!path.empty()) {
      make_dirs(cache_dir_);
      write_atomically(path, "loops " + std::to_string(ok) + verdict.second + "\n");
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    known[known_key] = verdict;
  }
  if (verdict.first == 1) return;
  const std::string what = "the OpenCL driver of device '" + dev_.info.name + "' stops long loops early" +
                           verdict.second +
                           ": kernels with long reductions would return wrong numbers (Mesa 22.3's llvmpipe "
                           "limits loops to 65,535 iterations)";
  const char* allow = std::getenv("OCL_INFER_ALLOW_LOOP_LIMIT");
  if (!(allow && std::string(allow) == "1"))
    throw ocl_infer::DeviceError(what + "; use another device, or set OCL_INFER_ALLOW_LOOP_LIMIT=1 to run anyway");
  if (log_) {
    std::lock_guard<std::mutex> l(log_mu_);
    log_("warning: " + what + " (running anyway: OCL_INFER_ALLOW_LOOP_LIMIT=1)");
  }
}

cl_program ClRuntime::program(const std::string& file, const std::string& options) {
  const std::string key = file + '\n' + options;
  std::shared_future<cl_program> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = programs_.find(key); it != programs_.end()) return it->second;
    if (auto it = pending_.find(key); it != pending_.end()) pending = it->second;
  }
  cl_program p = pending.valid() ? nullptr : pooled_program(key);
  const bool pooled = p != nullptr;
  if (!p) {
    p = pending.valid() ? pending.get() : load_or_build(file, options);  // get() rethrows
    note_separate_build(file, options);
    pool_program(key, p, kernel_source(file).size());
  }
  std::lock_guard<std::mutex> lock(mu_);
  pending_.erase(key);
  if (auto it = programs_.find(key); it != programs_.end()) {
    if (it->second != p) clReleaseProgram(p);  // built twice meanwhile: keep the first
    return it->second;
  }
  if (pooled) stats_.cached++;
  programs_[key] = p;
  return p;
}

cl_program ClRuntime::pooled_program(const std::string& key) {
  if (!pool_) return nullptr;
  std::lock_guard<std::mutex> lock(pool_->mu);
  auto it = pool_->programs.find(key);
  if (it == pool_->programs.end()) return nullptr;
  clRetainProgram(it->second);
  return it->second;
}

void ClRuntime::pool_program(const std::string& key, cl_program p, size_t bytes) {
  if (!pool_) return;
  std::lock_guard<std::mutex> lock(pool_->mu);
  if (pool_->programs.count(key)) return;
  pool_->programs[key] = p;
  pool_->add({p, bytes, {key}, {}});
}

bool ClRuntime::adopt_pooled_bundle(const std::string& file, const std::string& options) {
  if (!pool_) return false;
  cl_program prog = nullptr;
  std::vector<std::pair<std::string, std::string>> units;
  {
    std::lock_guard<std::mutex> lock(pool_->mu);
    auto it = pool_->units.find(pool_unit_key(file, options));
    if (it == pool_->units.end()) return false;
    prog = it->second.first;
    for (const ProgramPool::Entry& e : pool_->entries)
      if (e.prog == prog) units = e.units;
    clRetainProgram(prog);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (bundle_units_.count(prog)) {
    clReleaseProgram(prog);  // adopted already (for another of its units)
  } else {
    bundles_.push_back(prog);
    bundle_units_[prog] = units;
  }
  for (size_t i = 0; i < units.size(); ++i)
    bundled_.emplace(units[i].first + '\n' + units[i].second, std::make_pair(prog, bundle_suffix(i)));
  return bundled_.count(file + '\n' + options) > 0;
}

bool ClRuntime::in_pool(const std::string& file, const std::string& options) const {
  if (!pool_) return false;
  std::lock_guard<std::mutex> lock(pool_->mu);
  return pool_->units.count(pool_unit_key(file, options)) ||
         pool_->programs.count(file + '\n' + options + extra_build_options());
}

void ClRuntime::prefetch(const std::string& file, const std::string& options) {
  // Off unless asked for: PoCL 3.1 serialises its compiler (resnet18's 14 programs took 27 s of
  // build time in two threads against 11 s in one, and the cold start got slower), and rusticl
  // compiles when kernels are first used, not in clBuildProgram. Drivers that compile in
  // clBuildProgram without a global lock may gain.
  static const bool parallel = [] {
    const char* e = std::getenv("OCL_INFER_PARALLEL_BUILDS");
    return e && std::string(e) == "1";
  }();
  if (!parallel) return;
  const std::string opts = options + extra_build_options();
  const std::string key = file + '\n' + opts;
  std::lock_guard<std::mutex> lock(mu_);
  if (programs_.count(key) || pending_.count(key)) return;
  pending_[key] = std::async(std::launch::async, [this, file, opts] {
                    {
                      std::unique_lock<std::mutex> l(slots_mu_);
                      slots_cv_.wait(l, [this] { return free_slots_ > 0; });
                      --free_slots_;
                    }
                    struct Release {
                      ClRuntime* rt;
                      ~Release() {
                        {
                          std::lock_guard<std::mutex> l(rt->slots_mu_);
                          ++rt->free_slots_;
                        }
                        rt->slots_cv_.notify_one();
                      }
                    } release{this};
                    return load_or_build(file, opts);
                  }).share();
}

CompileStats ClRuntime::compile_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

KernelPtr ClRuntime::kernel(const std::string& file, const std::string& entry,
                            const std::string& options) {
  cl_program p = nullptr;
  std::string name = entry;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = bundled_.find(file + '\n' + options); it != bundled_.end()) {
      p = it->second.first;
      name += it->second.second;
    }
  }
  if (!p && adopt_pooled_bundle(file, options)) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto& [prog, suffix] = bundled_.at(file + '\n' + options);
    p = prog;
    name += suffix;
  }
  if (!p) p = program(file, options + extra_build_options());
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(p, name.c_str(), &err);
  if (err != CL_SUCCESS)
    throw ocl_infer::DeviceError("clCreateKernel('" + entry + "' in kernels/" + file +
                                 ".cl) failed: " + cl_error_name(err));
  return KernelPtr(k);
}

std::vector<std::pair<std::string, std::string>> ClRuntime::unbuilt_units(
    const std::vector<std::pair<std::string, std::string>>& units) const {
  std::vector<std::pair<std::string, std::string>> todo;
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::string> seen;
  for (const auto& [file, options] : units) {
    const std::string key = file + '\n' + options;
    std::vector<std::pair<std::string, std::string>> defines;
    if (!seen.insert(key).second || bundled_.count(key) || programs_.count(key + extra_build_options()) ||
        pending_.count(key + extra_build_options()) || in_pool(file, options) ||
        !parse_define_options(without_unoptimized_flag(options), &defines))
      continue;
    todo.push_back({file, options});
  }
  return todo;
}

void ClRuntime::build_bundle(const std::vector<std::pair<std::string, std::string>>& units) {
  const auto env_is = [](const char* name, const char* value) {
    const char* e = std::getenv(name);
    return e && std::string(e) == value;
  };
  if (env_is("OCL_INFER_BUNDLE", "0")) return;
  const bool strict = env_is("OCL_INFER_BUNDLE_STRICT", "1");
  const std::vector<std::pair<std::string, std::string>> todo = unbuilt_units(units);
  // Units at the lowest optimisation level (a first run's) and the others make a bundle each.
  for (const bool unoptimized : {false, true}) {
    std::vector<std::pair<std::string, std::string>> group;
    for (const auto& u : todo)
      if (has_unoptimized_flag(u.second) == unoptimized) group.push_back(u);
    if (group.size() < 2) continue;
    const std::vector<std::pair<std::string, std::string>> chosen = choose_bundle_units(group, todo.size());
    if (chosen.size() >= 2) build_bundle_now(chosen, strict);
  }
}

std::vector<std::pair<std::string, std::string>> ClRuntime::fresh_bundle(
    const std::vector<std::pair<std::string, std::string>>& units) {
  const char* off = std::getenv("OCL_INFER_BUNDLE");
  if (off && std::string(off) == "0") return {};
  // The same units build_bundle would take (programs a plan builds while it is lowered, to ask a
  // kernel's work-group size, stay out).
  const std::vector<std::pair<std::string, std::string>> todo = unbuilt_units(units);
  if (todo.size() < 2) return {};
  std::vector<std::pair<std::string, std::string>> chosen = choose_bundle_units(todo);
  if (chosen.size() < 2) chosen.clear();
  return chosen;
}

void ClRuntime::build_bundle_again(const std::vector<std::pair<std::string, std::string>>& units) {
  if (units.size() < 2) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [prog, list] : bundle_units_)
      if (list == units) return;
  }
  build_bundle_now(units, /*strict=*/false);
}

std::string ClRuntime::device_key() const {
  return std::string(kCacheFormat) + '\n' + dev_.info.name + '\n' + dev_.info.platform + '\n' +
         dev_.info.driver_version + '\n' + dev_.info.device_version;
}

uint64_t ClRuntime::unit_id(const std::string& file, const std::string& options_with_extra) const {
  const std::string device_key = this->device_key();
  return fnv1a(device_key + '\n' + file + '\n' + options_with_extra + '\n' + kernel_source(file));
}

void ClRuntime::load_registry() {
  if (!registry_path_.empty()) return;
  const std::string device_key = this->device_key();
  registry_path_ = cache_dir_ + "/bundles-" + hex16(fnv1a(device_key)) + ".txt";
  // "s UNIT": built on its own; "u UNIT": built in a bundle; "p PLAN UNIT,UNIT,...|-": what that
  // plan bundled. Anything else is skipped: the registry only steers which programs are built
  // together, never a result.
  const std::string text = read_file_or_empty(registry_path_);
  const std::string_view all(text);
  for (size_t at = 0; at < all.size();) {
    size_t end = all.find('\n', at);
    if (end == std::string_view::npos) end = all.size();
    const std::string_view line = all.substr(at, end - at);
    at = end + 1;
    uint64_t id = 0;
    if (line.size() < 18 || line[1] != ' ' || !parse_hex16(line.substr(2, 16), &id)) continue;
    if (line[0] == 's' && line.size() == 18) {
      separate_units_.insert(id);
    } else if (line[0] == 'u' && line.size() == 18) {
      bundled_units_.insert(id);
    } else if (line[0] == 'p' && line.size() > 19 && line[18] == ' ') {
      std::unordered_set<uint64_t>& b = plan_bundles_[id];
      const std::string_view list = line.substr(19);
      uint64_t unit = 0;
      for (size_t i = 0; i + 16 <= list.size(); i += 17)
        if (parse_hex16(list.substr(i, 16), &unit)) b.insert(unit);
    }
  }
}

void ClRuntime::append_registry(const std::string& lines) {
  // One write per call (O_APPEND, a few hundred bytes): lines of concurrent processes do not mix.
  make_dirs(cache_dir_);
  if (FILE* f = std::fopen(registry_path_.c_str(), "a")) {
    std::fwrite(lines.data(), 1, lines.size(), f);
    std::fclose(f);
  }
}

void ClRuntime::note_separate_build(const std::string& file, const std::string& options_with_extra) {
  if (cache_dir_.empty()) return;
  const uint64_t id = unit_id(file, options_with_extra);
  std::lock_guard<std::mutex> lock(registry_mu_);
  load_registry();
  if (separate_units_.insert(id).second) append_registry("s " + hex16(id) + "\n");
}

std::vector<std::pair<std::string, std::string>> ClRuntime::choose_bundle_units(
    const std::vector<std::pair<std::string, std::string>>& todo, size_t plan_units) {
  if (cache_dir_.empty()) return todo;
  std::vector<uint64_t> ids;
  std::string plan_text;
  for (const auto& [file, options] : todo) {
    ids.push_back(unit_id(file, options + extra_build_options()));
    plan_text += hex16(ids.back()) + ',';
  }
  const uint64_t plan_id = fnv1a(plan_text);
  std::lock_guard<std::mutex> lock(registry_mu_);
  load_registry();
  std::vector<std::pair<std::string, std::string>> chosen;
  if (auto it = plan_bundles_.find(plan_id); it != plan_bundles_.end()) {
    // This plan ran before: the same bundle again (the driver's cache has that program).
    for (size_t i = 0; i < todo.size(); ++i)
      if (it->second.count(ids[i])) chosen.push_back(todo[i]);
    return chosen;
  }
  // A new plan: units that were built on their own before stay on their own (the driver's cache
  // has them as programs of their own: a test suite's many small models share them); the rest are
  // bundled. A small plan (a test's model, a few programs, where a bundle saves little) also leaves
  // out the units that an earlier bundle built, so that a program shared by many small models is
  // compiled once more on its own and then shared; a large one (a real network) keeps them in, so
  // that its warm start stays one program.
  const bool small = (plan_units ? plan_units : todo.size()) <= kSmallPlanUnits;
  std::vector<uint64_t> units;
  for (size_t i = 0; i < todo.size(); ++i)
    if (!separate_units_.count(ids[i]) && !(small && bundled_units_.count(ids[i]))) {
      chosen.push_back(todo[i]);
      units.push_back(ids[i]);
    }
  if (chosen.size() < 2) chosen.clear(), units.clear();
  std::string list, record;
  for (uint64_t id : units) list += (list.empty() ? "" : ",") + hex16(id);
  plan_bundles_[plan_id].insert(units.begin(), units.end());
  record = "p " + hex16(plan_id) + " " + (list.empty() ? std::string("-") : list) + "\n";
  for (uint64_t id : units)
    if (bundled_units_.insert(id).second) record += "u " + hex16(id) + "\n";
  append_registry(record);
  return chosen;
}

std::vector<std::pair<std::string, std::string>> ClRuntime::bundle_units(const std::string& file,
                                                                         const std::string& options) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = bundled_.find(file + '\n' + options);
  if (it == bundled_.end()) return {};
  auto u = bundle_units_.find(it->second.first);
  return u == bundle_units_.end() ? std::vector<std::pair<std::string, std::string>>{} : u->second;
}

void ClRuntime::build_bundle_exact(const std::vector<std::pair<std::string, std::string>>& units) {
  if (units.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (bundled_.count(units[0].first + '\n' + units[0].second)) return;
  }
  build_bundle_now(units, /*strict=*/false);
}

void ClRuntime::build_bundle_now(const std::vector<std::pair<std::string, std::string>>& todo, bool strict) {
  std::vector<BundleUnit> parts;
  const bool unoptimized = !todo.empty() && has_unoptimized_flag(todo[0].second);
  for (const auto& [file, options] : todo) {
    if (has_unoptimized_flag(options) != unoptimized)
      throw ocl_infer::Error("internal: a program bundle mixes units with and without" + std::string(kUnoptimizedFlag));
    parts.push_back({kernel_source(file), without_unoptimized_flag(options)});
  }
  const std::string src = bundle_source(parts);
  cl_program prog = nullptr;
  try {
    // The log is called from the notice's thread as well as from this one.
    const auto locked_log = [this](const std::string& m) {
      std::lock_guard<std::mutex> l(log_mu_);
      log_(m);
    };
    SlowNotice notice(log_ ? std::function<void(const std::string&)>(locked_log) : nullptr,
                      "compiling " + std::to_string(todo.size()) + " kernel programs for " + dev_.info.name +
                          " (the first run on this device and driver; later runs find them in the cache)",
                      1000);
    prog = load_or_build_source(kBundleName, src, extra_build_options() + (unoptimized ? kUnoptimizedFlag : ""));
  } catch (const ocl_infer::KernelBuildError& e) {
    // A unit that does not build fails on its own in kernel(), with its own log. A bundle whose
    // units all build would be a fault of the bundling itself: the tests make that an error.
    if (strict) {
      for (const auto& [file, options] : todo) program(file, options + extra_build_options());
      throw ocl_infer::Error(std::string("internal: a program bundle failed to build although each of its units builds: ") +
                             e.what());
    }
    if (log_) {
      std::lock_guard<std::mutex> l(log_mu_);
      log_(std::string("kernel program bundle failed; building its ") + std::to_string(todo.size()) +
           " programs one by one");
    }
    return;
  }
  if (pool_) {
    std::lock_guard<std::mutex> lock(pool_->mu);
    ProgramPool::Entry e{prog, src.size(), {}, todo};
    for (size_t i = 0; i < todo.size(); ++i) {
      e.keys.push_back(pool_unit_key(todo[i].first, todo[i].second));
      pool_->units[e.keys.back()] = {prog, bundle_suffix(i)};
    }
    pool_->add(std::move(e));
  }
  std::lock_guard<std::mutex> lock(mu_);
  bundles_.push_back(prog);
  bundle_units_[prog] = todo;
  stats_.bundled += static_cast<int>(todo.size());
  for (size_t i = 0; i < todo.size(); ++i)
    bundled_.emplace(todo[i].first + '\n' + todo[i].second, std::make_pair(prog, bundle_suffix(i)));
}

}  // namespace oi
