#include "runtime/backend/host_memory.hpp"

#include <sys/resource.h>

#include <fstream>
#include <sstream>

namespace oi {

namespace {

// "Key:   123 kB" lines of /proc files, in bytes; 0 when absent.
uint64_t proc_kb(const char* file, const std::string& key) {
  std::ifstream f(file);
  std::string line;
  while (std::getline(f, line))
    if (line.compare(0, key.size(), key) == 0 && line.size() > key.size() && line[key.size()] == ':') {
      std::istringstream ss(line.substr(key.size() + 1));
      uint64_t kb = 0;
      ss >> kb;
      return kb * 1024;
    }
  return 0;
}

// The first number in a file, or 0 when missing or "max".
uint64_t file_number(const char* path) {
  std::ifstream f(path);
  std::string v;
  if (!(f >> v) || v == "max") return 0;
  try {
    return std::stoull(v);
  } catch (...) {
    return 0;
  }
}

}  // namespace

HostMemory host_memory() {
  HostMemory m;
  auto consider = [&](uint64_t v, const char* why) {
    if (v > 0 && v < m.available) {
      m.available = v;
      m.limited_by = why;
    }
  };
  consider(proc_kb("/proc/meminfo", "MemAvailable"), "MemAvailable");
  // cgroup v2, then v1: the limit minus what the group already uses.
  for (auto [limit_file, usage_file] : {std::pair<const char*, const char*>{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
                                        {"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"}}) {
    const uint64_t limit = file_number(limit_file), used = file_number(usage_file);
    if (limit > 0 && limit < (uint64_t{1} << 60)) {
      consider(limit > used ? limit - used : 1, "cgroup memory limit");
      break;
    }
  }
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    const uint64_t mapped = proc_kb("/proc/self/status", "VmSize");
    consider(rl.rlim_cur > mapped ? rl.rlim_cur - mapped : 1, "RLIMIT_AS");
  }
  return m;
}

}  // namespace oi
