// Command-line parsing helpers shared by the ocl-infer subcommands (tools/ocl_infer_main.cpp,
// tools/quantize_cli.cpp).
#pragma once

#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>

#include "tools/cli_io.hpp"

namespace cli {

// A bad command line: printed with a pointer to --help, exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void parse_floats3(const std::string& flag, const std::string& v, float out[3]) {
  std::stringstream ss(v);
  std::string item;
  int n = 0;
  while (std::getline(ss, item, ',')) {
    if (n == 3) throw UsageError(flag + " takes three comma-separated numbers");
    char* end = nullptr;
    out[n++] = std::strtof(item.c_str(), &end);
    if (item.empty() || *end) throw UsageError(flag + ": '" + item + "' is not a number");
  }
  if (n != 3) throw UsageError(flag + " takes three comma-separated numbers");
}

inline int parse_int(const std::string& flag, const std::string& v, int lo, int hi) {
  char* end = nullptr;
  long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || x < lo || x > hi)
    throw UsageError(flag + " needs an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + v + "'");
  return static_cast<int>(x);
}

// The image preprocessing flags (--size, --crop, --mean, --std, --scale, --bgr, --layout): applies
// flag `s` to `p` and returns true, or returns false for another flag. `value` reads the flag's
// argument.
template <typename Value>
bool parse_preprocess_flag(const std::string& s, Value value, Preprocess& p, bool* crop_given) {
  if (s == "--size") p.resize = parse_int(s, value(), 0, 16384);
  else if (s == "--crop") {
    p.crop = parse_int(s, value(), 1, 16384);
    if (crop_given) *crop_given = true;
  } else if (s == "--mean") parse_floats3(s, value(), p.mean);
  else if (s == "--std") {
    parse_floats3(s, value(), p.std);
    for (float f : p.std)
      if (f == 0) throw UsageError("--std values must not be zero");
  } else if (s == "--scale") {
    const std::string v = value();
    char* end = nullptr;
    p.scale = std::strtof(v.c_str(), &end);
    if (v.empty() || *end) throw UsageError("--scale: '" + v + "' is not a number");
  } else if (s == "--bgr") p.bgr = true;
  else if (s == "--layout") {
    const std::string v = value();
    if (v != "nchw" && v != "nhwc") throw UsageError("--layout must be nchw or nhwc");
    p.nhwc = v == "nhwc";
  } else return false;
  return true;
}

}  // namespace cli
