#include "runtime/exec/compile_helpers.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <iterator>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>
#include <unordered_set>

#include "ocl_infer/ocl_infer.hpp"
#include "ops/build_context.hpp"
#include "runtime/backend/cl_runtime.hpp"
#include "runtime/backend/program_bundle.hpp"
#include "runtime/exec/plan.hpp"

extern char** environ;

namespace oi {

namespace {

constexpr const char* kJobHeader = "ocl-infer compile job 1";

std::string join_sizes(const std::vector<size_t>& v) {
  std::string r = std::to_string(v.size());
  for (size_t x : v) r += '\t' + std::to_string(x);
  return r;
}

// What identifies a launch's compiled kernel in the driver's cache: the program (its units and
// options, the kernel sources, the extra build options), the kernel, and the launch's global and
// local sizes (PoCL specialises a kernel on its local size and on the grid's size).
// `common`: the device key, the kernel sources' hash and the extra build options; `units`: the
// launch's bundle (ClRuntime::bundle_units), empty for a program of its own.
using Units = std::vector<std::pair<std::string, std::string>>;
std::string spec_key(const std::string& common, const Launch& l, const Units& units) {
  // The launch's own file and options name its unit within a bundle: launches of one entry point
  // with the same sizes in two units of a bundle (two depthwise convs of different widths) are
  // two kernels.
  std::string program = "launch\t" + l.file + '\t' + l.options + '\n';
  for (const auto& [file, options] : units) program += "unit\t" + file + '\t' + options + '\n';
  return common + program + '\n' + l.entry + '\n' + join_sizes(l.global) + '|' + join_sizes(l.local);
}

// The number of helpers to start: $OCL_INFER_COMPILE_HELPERS, else one per CPU core beyond the
// first, at most 3 (each holds a driver and its compiler: ~150 MB).
int helper_limit() {
  if (const char* e = std::getenv("OCL_INFER_COMPILE_HELPERS"); e && *e) {
    char* end = nullptr;
    const long v = std::strtol(e, &end, 10);
    if (end && *end == '\0' && v >= 0) return static_cast<int>(std::min(v, 64L));
  }
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(cores - 1, 0, 3);
}

bool executable(const std::string& p) { return !p.empty() && access(p.c_str(), X_OK) == 0; }

// The helper executable: $OCL_INFER_COMPILE_HELPER, else `ocl-infer` beside this library (the
// build tree) or in ../bin (an installation), else this process when it is `ocl-infer`.
std::string helper_executable() {
  if (const char* e = std::getenv("OCL_INFER_COMPILE_HELPER"); e && *e) return executable(e) ? e : "";
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&compile_helper_main), &info) && info.dli_fname) {
    std::string dir = info.dli_fname;
    const size_t slash = dir.rfind('/');
    dir = slash == std::string::npos ? "." : dir.substr(0, slash);
    for (const std::string& c : {dir + "/ocl-infer", dir + "/../bin/ocl-infer"})
      if (executable(c)) return c;
  }
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    const std::string p(self, static_cast<size_t>(n));
    if (p.size() >= 10 && p.compare(p.size() - 10, 10, "/ocl-infer") == 0 && executable(p)) return p;
  }
  return "";
}

std::string hex_bytes(const std::vector<unsigned char>& b) {
  static const char* d = "0123456789abcdef";
  std::string r;
  r.reserve(b.size() * 2);
  for (unsigned char c : b) r += d[c >> 4], r += d[c & 15];
  return r;
}

bool parse_hex_bytes(const std::string& s, std::vector<unsigned char>* out) {
  if (s.size() % 2) return false;
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  out->resize(s.size() / 2);
  for (size_t i = 0; i < out->size(); ++i) {
    const int hi = nib(s[2 * i]), lo = nib(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return true;
}

// One launch of the job: its program, kernel, sizes and arguments.
std::string describe_launch(const Plan& plan, const Launch& l, const Units& units) {
  std::ostringstream o;
  o << "launch\t" << l.file << '\t' << l.entry << '\t' << l.options << '\n';
  o << "bundle\t" << units.size() << '\n';
  for (const auto& [file, options] : units) o << "unit\t" << file << '\t' << options << '\n';
  o << "global\t" << join_sizes(l.global) << '\n' << "local\t" << join_sizes(l.local) << '\n';
  for (const KernelArg& a : l.args) {
    switch (a.kind) {
      case KernelArg::Kind::Mem: {
        size_t bytes = 0;
        if (a.mem) clGetMemObjectInfo(a.mem, CL_MEM_SIZE, sizeof bytes, &bytes, nullptr);
        auto c = plan.small_constants.find(a.mem);
        o << "arg\tm\t" << bytes << '\t'
          << (c != plan.small_constants.end() && c->second.size() == bytes ? hex_bytes(c->second) : "-") << '\n';
        break;
      }
      case KernelArg::Kind::Int32: o << "arg\ti\t" << a.i << '\n'; break;
      case KernelArg::Kind::Int64: o << "arg\tl\t" << a.i << '\n'; break;
      case KernelArg::Kind::Float32:
      case KernelArg::Kind::Float64: {
        uint64_t bits = 0;
        std::memcpy(&bits, &a.f, sizeof bits);
        o << "arg\t" << (a.kind == KernelArg::Kind::Float32 ? 'f' : 'd') << '\t' << bits << '\n';
        break;
      }
    }
  }
  o << "end\n";
  return o.str();
}

// The ledger's ids (one hex16 a line; anything else is skipped).
std::unordered_set<uint64_t> read_ledger(const std::string& path) {
  std::unordered_set<uint64_t> r;
  const std::string text = read_file_or_empty(path);
  const std::string_view all(text);
  for (size_t at = 0; at < all.size();) {
    size_t end = all.find('\n', at);
    if (end == std::string_view::npos) end = all.size();
    uint64_t id = 0;
    if (parse_hex16(all.substr(at, end - at), &id)) r.insert(id);
    at = end + 1;
  }
  return r;
}

}  // namespace

std::unique_ptr<CompileHelpers> CompileHelpers::start(const Plan& plan, ClRuntime& cl,
                                                      const std::function<void(const std::string&)>& log) {
  const int limit = helper_limit();
  if (limit == 0 || cl.cache_dir().empty() || !cl.driver_keeps_binaries()) return nullptr;
  // With PoCL's own cache turned off, nothing a helper compiles reaches the run.
  if (const char* e = std::getenv("POCL_KERNEL_CACHE"); e && std::string(e) == "0") return nullptr;
  std::unique_ptr<CompileHelpers> h(new CompileHelpers);
  h->ledger_path_ = cl.cache_dir() + "/compiled-" + hex16(fnv1a(cl.device_key())) + ".txt";
  const std::unordered_set<uint64_t> known = read_ledger(h->ledger_path_);
  std::unordered_set<uint64_t> seen;
  // The new specialisations, each once, in the run's order, with their bundles.
  std::vector<std::pair<const Launch*, Units>> todo;
  const std::string sources = kernel_sources_hash();
  const std::string common = cl.device_key() + '\n' + sources + '\n' + build_options_suffix() + '\n';
  for (const Launch& l : plan.launches) {
    Units units = cl.bundle_units(l.file, l.options);
    const uint64_t spec = fnv1a(spec_key(common, l, units));
    if (known.count(spec) || !seen.insert(spec).second) continue;
    h->new_specs_.push_back(spec);
    todo.push_back({&l, std::move(units)});
  }
  const int n = std::min<int>(limit, static_cast<int>(todo.size()) / 2);
  if (n == 0) return h;
  const std::string exe = helper_executable();
  if (exe.empty()) return h;
  int device_index = -1;
  try {
    const auto devices = enumerate_devices();
    for (size_t i = 0; i < devices.size(); ++i)
      if (devices[i].device == cl.device()) device_index = static_cast<int>(i);
  } catch (const std::exception&) {
  }
  if (device_index < 0) return h;
  std::vector<std::string> described;
  described.reserve(todo.size());
  for (const auto& [l, units] : todo) described.push_back(describe_launch(plan, *l, units));
  const std::string head = std::string(kJobHeader) + "\nsources\t" + sources + "\ndevice\t" +
                           std::to_string(device_index) + '\t' + hex16(fnv1a(cl.device_key())) + "\nparent\t" +
                           std::to_string(getpid()) + '\n';
  for (int i = 1; i <= n; ++i) {
    // Helper i compiles the first i/(n+1) of the new kernels, last first; the run goes from the
    // first. Helpers that overlap find each other's kernels in the driver's cache.
    const size_t end = todo.size() * static_cast<size_t>(i + 1) / static_cast<size_t>(n + 1);
    std::string job = head;
    for (size_t k = end; k-- > 0;) job += described[k];
    char path[4096];
    std::snprintf(path, sizeof path, "%s/job-%d-%d-XXXXXX", cl.cache_dir().c_str(), static_cast<int>(getpid()), i);
    const int fd = mkstemp(path);
    if (fd < 0) break;
    const bool written = write(fd, job.data(), job.size()) == static_cast<ssize_t>(job.size());
    close(fd);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    std::string arg0 = exe, arg1 = "--compile-helper", arg2 = path;
    char* argv[] = {arg0.data(), arg1.data(), arg2.data(), nullptr};
    pid_t pid = -1;
    const int err = written ? posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv, environ) : -1;
    posix_spawn_file_actions_destroy(&actions);
    if (err != 0) {
      unlink(path);
      break;
    }
    h->pids_.push_back(pid);
    h->jobs_.push_back(path);
  }
  if (log && !h->pids_.empty())
    log("compiling: " + std::to_string(h->pids_.size()) +
        (h->pids_.size() > 1 ? " helper processes compile " : " helper process compiles ") +
        std::to_string(todo.size()) + " new kernels with this run (" + exe + ")");
  return h;
}

void CompileHelpers::stop() {
  for (pid_t p : pids_) kill(p, SIGKILL);
  for (pid_t p : pids_) {
    int status = 0;
    while (waitpid(p, &status, 0) < 0 && errno == EINTR) {
    }
  }
  pids_.clear();
  // A helper deletes its job once read; one killed before that leaves it.
  for (const std::string& j : jobs_) unlink(j.c_str());
  jobs_.clear();
}

CompileHelpers::~CompileHelpers() { stop(); }

void CompileHelpers::finished() {
  stop();
  if (new_specs_.empty()) return;
  std::string lines;
  for (uint64_t s : new_specs_) lines += hex16(s) + '\n';
  // Appended in one write: runs in parallel each add whole lines; readers skip anything else.
  const int fd = open(ledger_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return;
  if (write(fd, lines.data(), lines.size()) < 0) {
  }
  close(fd);
  new_specs_.clear();
}

namespace {

constexpr const char* kStoreHeader = "ocl-infer binary-store job 1";

// The device's index among enumerate_devices(), or -1.
int device_index_of(const ClRuntime& cl) {
  try {
    const auto devices = enumerate_devices();
    for (size_t i = 0; i < devices.size(); ++i)
      if (devices[i].device == cl.device()) return static_cast<int>(i);
  } catch (const std::exception&) {
  }
  return -1;
}

// A lock file younger than this marks an entry another process is storing.
constexpr int kStoreLockSeconds = 600;

bool locked_by_other(const std::string& lock) {
  struct stat st{};
  return stat(lock.c_str(), &st) == 0 && time(nullptr) - st.st_mtime < kStoreLockSeconds;
}

// The binary-store helper: stores each program of the job (see store_binaries_in_background).
int binary_store_main(const std::string& text) {
  // Behind anything the user runs: this only saves the next start some milliseconds.
  setpriority(PRIO_PROCESS, 0, 19);
  size_t pos = 0;
  const auto line = [&](std::string* out) {
    const size_t end = text.find('\n', pos);
    if (end == std::string::npos) return false;
    *out = text.substr(pos, end - pos);
    pos = end + 1;
    return true;
  };
  std::string l;
  if (!line(&l) || l != kStoreHeader || !line(&l)) return 2;
  const auto sources = split_tabs(l);
  if (sources.size() != 2 || sources[0] != "sources") return 2;
  if (sources[1] != kernel_sources_hash()) return 3;
  if (!line(&l)) return 2;
  const auto device = split_tabs(l);
  if (device.size() != 4 || device[0] != "device") return 2;
  const auto devices = enumerate_devices();
  const size_t index = std::strtoul(device[1].c_str(), nullptr, 10);
  if (index >= devices.size()) return 3;
  ClRuntime cl(devices[index], device[3], [](const std::string&) {}, false);
  if (hex16(fnv1a(cl.device_key())) != device[2]) return 3;
  while (pos < text.size()) {
    if (!line(&l)) return 2;
    const auto head = split_tabs(l);
    if (head.size() != 5 || head[0] != "program") return 2;
    const size_t src_len = std::strtoull(head[2].c_str(), nullptr, 10),
                 opt_len = std::strtoull(head[3].c_str(), nullptr, 10);
    if (pos + src_len + opt_len > text.size()) return 2;
    ClRuntime::UnstoredProgram p{head[1], text.substr(pos, src_len), text.substr(pos + src_len, opt_len)};
    pos += src_len + opt_len;
    const std::string lock = head[4] + ".lock";
    const int fd = open(lock.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) {
      if (locked_by_other(lock)) continue;
      unlink(lock.c_str());  // stale: its process died
      continue;
    }
    close(fd);
    try {
      cl.store_program_binary(p);
    } catch (const std::exception&) {
      // The program does not build here any more (another driver state): nothing to store.
    }
    unlink(lock.c_str());
  }
  return 0;
}

// Starts `exe --compile-helper job` detached (a grandchild in its own session): it outlives this
// process, and nobody waits for it. Between fork and exec only async-signal-safe calls.
bool spawn_detached(const std::string& exe, const std::string& job) {
  std::string arg0 = exe, arg1 = "--compile-helper", arg2 = job;
  char* argv[] = {arg0.data(), arg1.data(), arg2.data(), nullptr};
  const pid_t child = fork();
  if (child == 0) {
    if (fork() == 0) {
      setsid();
      const int null_fd = open("/dev/null", O_RDWR);
      if (null_fd >= 0) {
        dup2(null_fd, 0);
        dup2(null_fd, 1);
        dup2(null_fd, 2);
      }
      // Nothing else of the caller's (sockets, pipes) stays open in a process that outlives it.
      syscall(SYS_close_range, 3U, ~0U, 0U);
      execve(exe.c_str(), argv, environ);
      _exit(127);
    }
    _exit(0);
  }
  if (child < 0) return false;
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return true;
}

}  // namespace

int store_binaries_in_background(ClRuntime& cl, const std::function<void(const std::string&)>& log) {
  static std::mutex mu;
  std::lock_guard<std::mutex> guard(mu);
  if (cl.cache_dir().empty() || !cl.driver_keeps_binaries() || helper_limit() == 0) return 0;
  if (const char* e = std::getenv("POCL_KERNEL_CACHE"); e && std::string(e) == "0") return 0;
  std::vector<ClRuntime::UnstoredProgram> programs = cl.take_unstored_programs();
  std::string body;
  int count = 0;
  for (const auto& p : programs) {
    const std::string path = cl.cache_entry_path(p.file, p.src, p.options);
    if (path.empty() || access(path.c_str(), F_OK) == 0 || locked_by_other(path + ".lock")) continue;
    body += "program\t" + p.file + '\t' + std::to_string(p.src.size()) + '\t' + std::to_string(p.options.size()) +
            '\t' + path + '\n' + p.src + p.options;
    ++count;
  }
  if (count == 0) return 0;
  const std::string exe = helper_executable();
  const int device_index = device_index_of(cl);
  if (exe.empty() || device_index < 0) return 0;
  const std::string job = std::string(kStoreHeader) + "\nsources\t" + kernel_sources_hash() + "\ndevice\t" +
                          std::to_string(device_index) + '\t' + hex16(fnv1a(cl.device_key())) + '\t' +
                          cl.cache_dir() + '\n' + body;
  char path[4096];
  std::snprintf(path, sizeof path, "%s/store-%d-XXXXXX", cl.cache_dir().c_str(), static_cast<int>(getpid()));
  const int fd = mkstemp(path);
  if (fd < 0) return 0;
  const bool written = write(fd, job.data(), job.size()) == static_cast<ssize_t>(job.size());
  close(fd);
  if (!written) {
    unlink(path);
    return 0;
  }
  if (!spawn_detached(exe, path)) {
    unlink(path);
    return 0;
  }
  if (log)
    log("kernel programs: a background process stores the binaries of " + std::to_string(count) +
        " programs in " + cl.cache_dir() + " (later starts load them without the driver's preprocessing)");
  return count;
}

namespace {

// Runs the launch descriptions of a job from lines[i] on: builds each launch's program (its
// bundle) and launches its kernel once, so that the driver compiles it into its cache. Returns 0,
// or 2 for a malformed description; `failed` (when given) counts the launches that did not build
// or run.
int run_job_launches(ClRuntime& cl, const std::vector<std::string>& lines, size_t i, int* failed = nullptr) {
  while (i < lines.size()) {
    // One launch: launch, bundle, units, global, local, args, end.
    const auto head = split_tabs(lines[i++]);
    if (head.size() != 4 || head[0] != "launch") return 2;
    Launch l;
    l.file = head[1];
    l.entry = head[2];
    l.options = head[3];
    std::vector<std::pair<std::string, std::string>> units;
    std::vector<BufferPtr> buffers;
    bool ok = true;
    for (; i < lines.size() && lines[i] != "end"; ++i) {
      const auto t = split_tabs(lines[i]);
      if (t[0] == "unit" && t.size() == 3) {
        units.push_back({t[1], t[2]});
      } else if ((t[0] == "global" || t[0] == "local") && t.size() >= 2) {
        auto& v = t[0] == "global" ? l.global : l.local;
        for (size_t k = 2; k < t.size(); ++k) v.push_back(std::strtoull(t[k].c_str(), nullptr, 10));
      } else if (t[0] == "arg" && t.size() >= 3) {
        KernelArg a;
        if (t[1] == "m" && t.size() == 4) {
          const size_t bytes = std::strtoull(t[2].c_str(), nullptr, 10);
          std::vector<unsigned char> content;
          if (bytes > 0) {
            if (t[3] != "-" && parse_hex_bytes(t[3], &content) && content.size() == bytes) {
              buffers.push_back(cl.upload(content.data(), bytes));
            } else {
              // Zeros: the kernels' geometry comes from the parameters above, so every index
              // stays where the plan's own run keeps it.
              buffers.push_back(cl.alloc(bytes));
              const cl_uchar zero = 0;
              cl_check(clEnqueueFillBuffer(cl.queue(), buffers.back()->mem, &zero, 1, 0, bytes, 0, nullptr, nullptr),
                       "clEnqueueFillBuffer");
            }
            a.mem = buffers.back()->mem;
          }
        } else if (t[1] == "i" || t[1] == "l") {
          a.kind = t[1] == "i" ? KernelArg::Kind::Int32 : KernelArg::Kind::Int64;
          a.i = std::strtoll(t[2].c_str(), nullptr, 10);
        } else if (t[1] == "f" || t[1] == "d") {
          a.kind = t[1] == "f" ? KernelArg::Kind::Float32 : KernelArg::Kind::Float64;
          const uint64_t bits = std::strtoull(t[2].c_str(), nullptr, 10);
          std::memcpy(&a.f, &bits, sizeof bits);
        } else {
          ok = false;
        }
        l.args.push_back(a);
      } else if (t[0] != "bundle") {
        ok = false;
      }
    }
    ++i;  // "end"
    if (!ok) return 2;
    try {
      if (!units.empty()) {
        cl.build_bundle_exact(units);
        // A bundle that did not build here would make kernel() build the unit on its own: a
        // program the run does not use.
        if (cl.bundle_units(l.file, l.options).empty()) {
          if (failed) ++*failed;
          continue;
        }
      }
      resolve_launch(cl, l);
      // One work-group is enough where it compiles the same kernel: PoCL specialises a kernel on
      // its work-group size and on whether every grid dimension is narrower than 65,535, and the
      // first work-group's indices are inside the plan's grid. Then the helper spends its time
      // compiling rather than computing.
      if (!l.local.empty() && l.local.size() == l.global.size() &&
          *std::max_element(l.global.begin(), l.global.end()) < 65535)
        l.global = l.local;
      cl_check(clEnqueueNDRangeKernel(cl.queue(), l.kernel.get(), static_cast<cl_uint>(l.global.size()), nullptr,
                                      l.global.data(), l.local.empty() ? nullptr : l.local.data(), 0, nullptr,
                                      nullptr),
               "clEnqueueNDRangeKernel");
      cl_check(clFinish(cl.queue()), "clFinish");
    } catch (const std::exception&) {
      // The run compiles this one itself.
      if (failed) ++*failed;
    }
  }
  return 0;
}

constexpr const char* kTierHeader = "ocl-infer tier-up job 1";

// The tier-up's files in the cache folder: <prefix>.txt the marker (the plan's own kernels are
// compiled; then the units of their bundle), .failed (they did not all compile), .lock (a helper
// at work: its pid).
std::string tier_prefix(const std::string& cache_dir, const std::string& device_hash, const std::string& plan_hex) {
  return cache_dir + "/tiered-" + device_hash + "-" + plan_hex;
}
std::string tier_prefix(const ClRuntime& cl, uint64_t plan_id) {
  return tier_prefix(cl.cache_dir(), hex16(fnv1a(cl.device_key())), hex16(plan_id));
}

// Whether the lock names a live process.
bool lock_alive(const std::string& lock) {
  std::ifstream f(lock);
  long pid = 0;
  if (!(f >> pid) || pid <= 0) {
    // Being written (the helper creates it, then writes its pid): alive for a moment.
    struct stat st{};
    return stat(lock.c_str(), &st) == 0 && time(nullptr) - st.st_mtime < 5;
  }
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

// Takes the lock for this process: false when a live process holds it.
bool take_lock(const std::string& lock) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int fd = open(lock.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) {
      const std::string pid = std::to_string(getpid()) + "\n";
      const bool ok = write(fd, pid.data(), pid.size()) == static_cast<ssize_t>(pid.size());
      close(fd);
      return ok;
    }
    if (lock_alive(lock)) return false;
    unlink(lock.c_str());  // its process died
  }
  return false;
}

// The launches of a plan with their own options (a Launch's kernel is not copied) and the
// specialisation keys they have with the plan's tier bundle.
std::vector<Launch> own_launches(const Plan& plan) {
  std::vector<Launch> r;
  r.reserve(plan.launches.size());
  for (const Launch& run : plan.launches) {
    Launch l;
    l.file = run.file;
    l.entry = run.entry;
    l.options = run.tiered_options.empty() ? run.options : run.tiered_options;
    l.args = run.args;
    l.global = run.global;
    l.local = run.local;
    r.push_back(std::move(l));
  }
  return r;
}

Units units_of(const Launch& l, const Units& bundle) {
  for (const auto& [file, options] : bundle)
    if (file == l.file && options == l.options) return bundle;
  return {};
}

// The tier-up helper: lines[0..3] are the header, sources, device (index, key hash, cache
// folder), plan (id, ledger path, the specialisations' hashes); then "tierbundle N" and N units;
// then launches.
int tier_up_main(const std::vector<std::string>& lines) {
  // Behind what the user runs, ahead of the binary store: later runs wait for it.
  setpriority(PRIO_PROCESS, 0, 10);
  if (lines.size() < 5) return 2;
  const auto sources = split_tabs(lines[1]), device = split_tabs(lines[2]), plan = split_tabs(lines[3]),
             bundle_head = split_tabs(lines[4]);
  if (sources.size() != 2 || sources[0] != "sources" || device.size() != 4 || device[0] != "device" ||
      plan.size() != 4 || plan[0] != "plan" || bundle_head.size() != 2 || bundle_head[0] != "tierbundle")
    return 2;
  uint64_t id = 0;
  if (!parse_hex16(plan[1], &id)) return 2;
  const std::string prefix = tier_prefix(device[3], device[2], plan[1]);
  const std::string lock = prefix + ".lock";
  if (!take_lock(lock)) return 0;  // another helper is at it
  struct Unlock {
    std::string path;
    ~Unlock() { unlink(path.c_str()); }
  } unlock{lock};
  const auto fail = [&prefix](int status) {
    std::ofstream(prefix + ".failed") << "tier-up failed with status " << status << "\n";
    return status;
  };
  if (sources[1] != kernel_sources_hash()) return fail(3);
  const size_t n_units = std::strtoul(bundle_head[1].c_str(), nullptr, 10);
  if (lines.size() < 5 + n_units) return fail(2);
  std::string marker_units;
  for (size_t u = 0; u < n_units; ++u) marker_units += lines[5 + u] + '\n';
  int status = 2, failed = 0;
  try {
    const auto devices = enumerate_devices();
    const size_t index = std::strtoul(device[1].c_str(), nullptr, 10);
    if (index >= devices.size()) return fail(3);
    // No cache folder of ocl-infer's own here: what counts is the driver's cache.
    ClRuntime cl(devices[index], "off", [](const std::string&) {}, false);
    if (hex16(fnv1a(cl.device_key())) != device[2]) return fail(3);
    status = run_job_launches(cl, lines, 5 + n_units, &failed);
  } catch (const std::exception&) {
    status = 2;
  }
  if (status != 0 || failed > 0) return fail(status != 0 ? status : 4);
  // The ledger first: a process that sees the marker must find the kernels known.
  std::string specs;
  for (size_t at = 0; at + 16 <= plan[3].size(); at += 17) specs += plan[3].substr(at, 16) + '\n';
  const int fd = open(plan[2].c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    if (write(fd, specs.data(), specs.size()) < 0) {
    }
    close(fd);
  }
  const std::string tmp = prefix + ".txt.tmp." + std::to_string(getpid());
  std::ofstream(tmp) << "plan " << plan[1] << " compiled with its own kernels\n" << marker_units;
  std::rename(tmp.c_str(), (prefix + ".txt").c_str());
  return 0;
}

}  // namespace

bool first_run_kernels_apply(ClRuntime& cl) {
  if (const char* e = std::getenv("OCL_INFER_FIRST_RUN_KERNELS"); e && std::string(e) == "0") return false;
  if (const char* e = std::getenv("POCL_KERNEL_CACHE"); e && std::string(e) == "0") return false;
  // A cache folder the marker can be written to: without it the plan would never tier up.
  return !cl.cache_dir().empty() && access(cl.cache_dir().c_str(), W_OK) == 0 && helper_limit() > 0 &&
         cl.driver_keeps_binaries() && !helper_executable().empty();
}

std::string first_run_summary(const Plan& plan) {
  std::string r = std::to_string(plan.first_run_kernels) + " launches ran first-run kernels";
  if (plan.unoptimized_first_run > 0)
    r += " (" + std::to_string(plan.unoptimized_first_run) + " of them unoptimised code)";
  return r;
}

std::vector<bool> unoptimized_first_run(const std::vector<Launch>& launches, const std::vector<bool>& eligible,
                                        const DeviceCaps& caps) {
  std::vector<UnoptimizedCandidate> c;
  c.reserve(launches.size());
  for (size_t i = 0; i < launches.size(); ++i) {
    const Launch& l = launches[i];
    c.push_back({l.file + '\n' + (l.first_run_options.empty() ? l.options : l.first_run_options), l.flops, l.bytes,
                 eligible[i]});
  }
  return pick_unoptimized(c, caps);
}

uint64_t tier_plan_id(const ClRuntime& cl, const std::vector<Launch>& launches) {
  std::string text = cl.device_key() + '\n' + kernel_sources_hash() + '\n' + build_options_suffix() + '\n';
  for (const Launch& l : launches)
    text += l.file + '\t' + l.entry + '\t' + (l.tiered_options.empty() ? l.options : l.tiered_options) + '\t' +
            join_sizes(l.global) + '|' + join_sizes(l.local) + '\n';
  return fnv1a(text);
}

TierState tier_state(const ClRuntime& cl, uint64_t plan_id, Units* bundle) {
  if (cl.cache_dir().empty()) return TierState::None;
  const std::string prefix = tier_prefix(cl, plan_id);
  std::ifstream marker(prefix + ".txt");
  if (marker) {
    std::string line;
    std::getline(marker, line);
    if (bundle) {
      bundle->clear();
      while (std::getline(marker, line)) {
        const auto t = split_tabs(line);
        if (t.size() == 3 && t[0] == "unit") bundle->push_back({t[1], t[2]});
      }
    }
    return TierState::Done;
  }
  if (access((prefix + ".failed").c_str(), F_OK) == 0) return TierState::Failed;
  if (lock_alive(prefix + ".lock")) return TierState::Running;
  return TierState::None;
}

bool own_kernels_known(const ClRuntime& cl, const Plan& plan) {
  if (cl.cache_dir().empty()) return false;
  const std::unordered_set<uint64_t> known =
      read_ledger(cl.cache_dir() + "/compiled-" + hex16(fnv1a(cl.device_key())) + ".txt");
  const std::string common = cl.device_key() + '\n' + kernel_sources_hash() + '\n' + build_options_suffix() + '\n';
  for (const Launch& l : own_launches(plan))
    if (!known.count(fnv1a(spec_key(common, l, units_of(l, plan.tier_bundle))))) return false;
  return true;
}

bool start_tier_up(const Plan& plan, ClRuntime& cl, const std::function<void(const std::string&)>& log) {
  if (!first_run_kernels_apply(cl) || tier_state(cl, plan.tier_id, nullptr) != TierState::None) return false;
  const std::string exe = helper_executable();
  const int device_index = device_index_of(cl);
  if (exe.empty() || device_index < 0) return false;
  const std::string common = cl.device_key() + '\n' + kernel_sources_hash() + '\n' + build_options_suffix() + '\n';
  std::string body, specs;
  std::unordered_set<uint64_t> seen;
  for (const Launch& l : own_launches(plan)) {
    const Units units = units_of(l, plan.tier_bundle);
    const uint64_t spec = fnv1a(spec_key(common, l, units));
    if (!seen.insert(spec).second) continue;
    specs += (specs.empty() ? "" : ",") + hex16(spec);
    body += describe_launch(plan, l, units);
  }
  std::string bundle = "tierbundle\t" + std::to_string(plan.tier_bundle.size()) + '\n';
  for (const auto& [file, options] : plan.tier_bundle) bundle += "unit\t" + file + '\t' + options + '\n';
  const std::string ledger = cl.cache_dir() + "/compiled-" + hex16(fnv1a(cl.device_key())) + ".txt";
  const std::string job = std::string(kTierHeader) + "\nsources\t" + kernel_sources_hash() + "\ndevice\t" +
                          std::to_string(device_index) + '\t' + hex16(fnv1a(cl.device_key())) + '\t' +
                          cl.cache_dir() + "\nplan\t" + hex16(plan.tier_id) + '\t' + ledger + '\t' +
                          (specs.empty() ? "-" : specs) + '\n' + bundle + body;
  char path[4096];
  std::snprintf(path, sizeof path, "%s/tier-%d-XXXXXX", cl.cache_dir().c_str(), static_cast<int>(getpid()));
  const int fd = mkstemp(path);
  if (fd < 0) return false;
  const bool written = write(fd, job.data(), job.size()) == static_cast<ssize_t>(job.size());
  close(fd);
  if (!written || !spawn_detached(exe, path)) {
    unlink(path);
    return false;
  }
  if (log)
    log("first run: " + first_run_summary(plan) +
        "; a background process compiles the plan's own kernels (later runs use them once it is done)");
  return true;
}

int compile_helper_main(const std::string& job_path) {
  {
    std::ifstream f(job_path, std::ios::binary);
    std::string head;
    if (f && std::getline(f, head) && head == kStoreHeader) {
      std::string text((std::istreambuf_iterator<char>(f.rdbuf())), std::istreambuf_iterator<char>());
      f.close();
      unlink(job_path.c_str());
      try {
        return binary_store_main(head + '\n' + text);
      } catch (const std::exception&) {
        return 3;
      }
    }
  }
  std::ifstream f(job_path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);) lines.push_back(line);
  f.close();
  unlink(job_path.c_str());
  // A tier-up outlives the run that started it (its results serve later processes).
  if (!lines.empty() && lines[0] == kTierHeader) return tier_up_main(lines);
  // A helper outlives no run: it dies with the process that started it.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (lines.size() < 4 || lines[0] != kJobHeader) return 2;
  const auto sources = split_tabs(lines[1]), device = split_tabs(lines[2]), parent = split_tabs(lines[3]);
  if (sources.size() != 2 || sources[0] != "sources" || device.size() != 3 || device[0] != "device" ||
      parent.size() != 2 || parent[0] != "parent")
    return 2;
  if (sources[1] != kernel_sources_hash()) return 3;
  // The parent ended before the line above took effect: nobody is waiting for this job.
  if (std::to_string(getppid()) != parent[1]) return 0;
  try {
    const auto devices = enumerate_devices();
    const size_t index = std::strtoul(device[1].c_str(), nullptr, 10);
    if (index >= devices.size()) return 3;
    ClRuntime cl(devices[index], "off", [](const std::string&) {}, false);
    if (hex16(fnv1a(cl.device_key())) != device[2]) return 3;
    const int status = run_job_launches(cl, lines, 4);
    if (status != 0) return status;
  } catch (const std::exception&) {
    return 2;
  }
  return 0;
}

}  // namespace oi

int ocl_infer::run_compile_helper(const std::string& job_path) { return oi::compile_helper_main(job_path); }
