// The autotuner's state and its persistent cache. The plan builder asks it for a tuned choice per
// kernel problem (a family and a key that names the shapes, strides and storage types) and, when
// tuning, hands it what run_variant measured (ops/variants.hpp).
//
// The cache is a text file shared by every device: one line per result,
//   <device key hash> <kernel sources hash> <family> <problem key> <choice> <ms>
// tab-separated, after a "ocl-infer tuning cache v1" header. A result applies only to the device
// (platform, device name, driver and device version) and the kernel sources it was measured with;
// lines for other devices are kept when the file is rewritten, lines for this device made with
// other kernel sources are ignored (one notice), unreadable lines and files are ignored (one
// notice). Rewrites merge with what is on disk at that moment and go through a temporary file
// renamed over the old one, so that concurrent tuners never leave a torn file.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace oi {

class Tuner {
 public:
  // path: the cache file ("" for none: results live only in this session). tune: measure
  // problems without a result. budget_s: stop measuring new problems after this many seconds of
  // tuning (0: no limit). log: notices and progress.
  Tuner(std::string path, std::string device_key, std::string sources_hash, bool tune, double budget_s,
        std::function<void(const std::string&)> log);

  // "variant:p=v,..." for a problem, "" when there is none.
  std::string lookup(const std::string& family, const std::string& key) const;
  // Whether run_variant should measure a problem that has no result (tuning on, budget left).
  bool tuning() const;
  // A measured problem: its winner, the winner's time and the heuristic's, how many candidates ran.
  void record(const std::string& family, const std::string& key, const std::string& choice, double ms,
              double heuristic_ms, int candidates);
  void progress(const std::string& line) const {
    if (log_) log_(line);
  }
  // Writes new results to the cache file (merging with its current contents). Returns false and
  // logs a notice when the file cannot be written; no-op without new results or without a path.
  bool save();

  struct Summary {
    int problems = 0, improved = 0, candidates = 0;
    double seconds = 0;
    double heuristic_ms = 0, tuned_ms = 0;  // sums over the measured problems
  };
  const Summary& summary() const { return summary_; }
  const std::string& path() const { return path_; }

 private:
  struct Entry {
    std::string choice;
    double ms = 0;
  };
  // Reads `path_`: this device's entries into `table`, other lines into `others` (verbatim).
  void load(std::map<std::string, Entry>* table, std::vector<std::string>* others, bool notices) const;

  std::string path_, device_, sources_;
  bool tune_;
  double budget_s_;
  std::function<void(const std::string&)> log_;
  std::map<std::string, Entry> table_;  // family '\t' key -> result
  std::map<std::string, Entry> fresh_;  // results measured by this session
  mutable std::chrono::steady_clock::time_point start_;
  mutable bool started_ = false;
  Summary summary_;
};

// "platform|device|driver|version" hashed to 16 hex digits (the cache's device column).
std::string tuning_device_key(const std::string& platform, const std::string& device, const std::string& driver,
                              const std::string& version);

}  // namespace oi
