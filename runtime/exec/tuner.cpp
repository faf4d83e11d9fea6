#include "runtime/exec/tuner.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "runtime/backend/cl_runtime.hpp"

namespace oi {

namespace {

constexpr const char* kHeader = "ocl-infer tuning cache v1";

}  // namespace

std::string tuning_device_key(const std::string& platform, const std::string& device, const std::string& driver,
                              const std::string& version) {
  return hex16(fnv1a(platform + '|' + device + '|' + driver + '|' + version));
}

Tuner::Tuner(std::string path, std::string device_key, std::string sources_hash, bool tune, double budget_s,
             std::function<void(const std::string&)> log)
    : path_(std::move(path)),
      device_(std::move(device_key)),
      sources_(std::move(sources_hash)),
      tune_(tune),
      budget_s_(budget_s),
      log_(std::move(log)) {
  load(&table_, nullptr, true);
}

void Tuner::load(std::map<std::string, Entry>* table, std::vector<std::string>* others, bool notices) const {
  if (path_.empty()) return;
  std::ifstream f(path_);
  if (!f) return;  // no cache yet
  std::string line;
  if (!std::getline(f, line) || line != kHeader) {
    std::string shown = line.substr(0, 40);
    for (char& c : shown)
      if (!std::isprint(static_cast<unsigned char>(c))) c = '?';
    if (notices && log_)
      log_("tuning cache " + path_ + ": not a tuning cache of this version (it starts '" + shown +
           "'); ignored, using the heuristics");
    return;
  }
  int bad = 0, stale = 0;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    const auto v = split_tabs(line);
    char* end = nullptr;
    const double ms = v.size() == 6 ? std::strtod(v[5].c_str(), &end) : NAN;
    if (v.size() != 6 || !is_hex16(v[0]) || !is_hex16(v[1]) || v[2].empty() || v[3].empty() || v[4].empty() ||
        !end || *end || !(ms >= 0)) {
      ++bad;
      continue;
    }
    if (v[0] != device_) {
      if (others) others->push_back(line);
      continue;
    }
    if (v[1] != sources_) {
      ++stale;
      continue;
    }
    (*table)[v[2] + '\t' + v[3]] = Entry{v[4], ms};
  }
  if (notices && log_ && bad)
    log_("tuning cache " + path_ + ": " + std::to_string(bad) + " unreadable line(s) ignored");
  if (notices && log_ && stale)
    log_("tuning cache " + path_ + ": " + std::to_string(stale) +
         " result(s) for this device were measured with other kernel sources; ignored (run `ocl-infer tune` again)");
}

std::string Tuner::lookup(const std::string& family, const std::string& key) const {
  auto it = table_.find(family + '\t' + key);
  return it == table_.end() ? "" : it->second.choice;
}

bool Tuner::tuning() const {
  if (!tune_) return false;
  if (!started_) {  // the budget counts from the first problem measured
    started_ = true;
    start_ = std::chrono::steady_clock::now();
    return true;
  }
  return budget_s_ <= 0 ||
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() < budget_s_;
}

void Tuner::record(const std::string& family, const std::string& key, const std::string& choice, double ms,
                   double heuristic_ms, int candidates) {
  const Entry e{choice, ms};
  table_[family + '\t' + key] = e;
  fresh_[family + '\t' + key] = e;
  summary_.problems += 1;
  // run_variant keeps the heuristic unless another choice is clearly faster, so any gain counts.
  summary_.improved += ms < heuristic_ms;
  summary_.candidates += candidates;
  summary_.heuristic_ms += std::isfinite(heuristic_ms) ? heuristic_ms : ms;  // a heuristic that failed
  summary_.tuned_ms += ms;
  summary_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

bool Tuner::save() {
  if (path_.empty() || fresh_.empty()) return true;
  // Merge with the file as it is now (another process may have tuned meanwhile).
  std::map<std::string, Entry> merged;
  std::vector<std::string> others;
  load(&merged, &others, false);
  for (auto& [k, e] : fresh_) merged[k] = e;
  const size_t slash = path_.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    const std::string dir = path_.substr(0, slash);
    for (size_t p = 1; p <= dir.size(); ++p)
      if (p == dir.size() || dir[p] == '/') ::mkdir(dir.substr(0, p).c_str(), 0755);
  }
  // Unique per process and per save, so that concurrent writers never share a temporary.
  static std::atomic<unsigned> counter{0};
  const std::string tmp = path_ + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << kHeader << '\n';
    for (auto& l : others) f << l << '\n';
    char ms[32];
    for (auto& [k, e] : merged) {
      std::snprintf(ms, sizeof ms, "%.6g", e.ms);
      f << device_ << '\t' << sources_ << '\t' << k << '\t' << e.choice << '\t' << ms << '\n';
    }
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      if (log_) log_("tuning cache " + path_ + ": cannot write " + tmp + "; results not saved");
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
    std::remove(tmp.c_str());
    if (log_) log_("tuning cache " + path_ + ": cannot replace the file; results not saved");
    return false;
  }
  fresh_.clear();
  return true;
}

}  // namespace oi
