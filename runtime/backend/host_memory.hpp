// How much memory this process may still use on the host: what a CPU OpenCL device (which
// allocates from host memory, often lazily, and crashes rather than failing when it cannot) can
// really get.
#pragma once

#include <cstdint>
#include <string>

namespace oi {

struct HostMemory {
  uint64_t available = ~uint64_t{0};  // the smallest of the limits below that are known
  std::string limited_by;             // "MemAvailable", "cgroup memory.max", "RLIMIT_AS", or ""
};

// Reads /proc/meminfo (MemAvailable), the cgroup v2/v1 memory limit minus current usage, and
// RLIMIT_AS minus the address space already mapped. Never throws.
HostMemory host_memory();

}  // namespace oi
