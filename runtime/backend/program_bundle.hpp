// One OpenCL program made of several (kernel file, build options) units, so that a plan's kernels
// cost the driver one build instead of one per unit. PoCL pays ~0.25 s per program that has to be
// compiled (its header, the link with its builtin library) and ~60 ms per program even when its own
// cache has it (it preprocesses every source to find the entry): resnet18's ten programs cost
// ~2.5 s of a cold start and ~0.55 s of a warm one.
//
// Each unit becomes a block of the combined source: its -D options as #defines, its source (includes
// expanded), then #undef of every macro the block defined. Names the unit defines at file scope
// (kernels, helper functions, typedefs, constants, struct tags) are renamed for the block with
// object-like macros (`#define conv_f32_packed conv_f32_packed__u3`), so that two units of one
// file do not collide; kernel `k` of unit i is `k + suffix(i)` in the program.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "runtime/backend/device_caps.hpp"

namespace oi {

// Splits build options made only of -DNAME and -DNAME=VALUE into (name, value) pairs ("1" when no
// value), in order. False when any option is something else (such a unit is built on its own).
bool parse_define_options(const std::string& options, std::vector<std::pair<std::string, std::string>>* defines);

// A unit's options may end with this flag: the program at the driver's lowest optimisation level
// (a plan's first run, runtime/exec/compile_helpers.hpp). A bundle holds units that all end with it
// or none does, and is built with it.
inline constexpr const char* kUnoptimizedFlag = " -cl-opt-disable";
bool has_unoptimized_flag(const std::string& options);
// `options` without a trailing kUnoptimizedFlag.
std::string without_unoptimized_flag(const std::string& options);

// A launch of a plan's first run, for pick_unoptimized: the program its first-run kernel comes
// from (any key naming it), the work it does (as the profiler counts it), and whether it may run a
// first-run kernel at all.
struct UnoptimizedCandidate {
  std::string program;
  double flops = 0, bytes = 0;
  bool eligible = false;
};
// Which candidates take their kernel at the driver's lowest optimisation level. On PoCL a kernel's
// code generation then costs ~45 ms instead of 0.1-0.7 s and a bundle's front end half, while the
// kernel runs 13-17x slower (resnet18 16 -> 260 ms, mobilenet_v2 4.9 -> 59 ms, the PP-OCRv4
// detector 30 -> 480 ms; 2-core Xeon). So a program goes unoptimised where its launches' guessed
// slowdown (16x their time guessed from the work: 4 GFLOP/s a float lane of the device's compute
// units, 8 GB/s a compute unit) stays under 150 ms, cheapest first, up to 500 ms for the plan: a
// network's many small convs go, a transformer's large products stay. Only in plans of at least 6
// such programs (a test's small model compiles quickly anyway, and the tier-up would then cost more
// than it saves); CPU devices only; $OCL_INFER_FIRST_RUN_UNOPTIMIZED=0 turns it off.
std::vector<bool> pick_unoptimized(const std::vector<UnoptimizedCandidate>& launches, const DeviceCaps& caps);

// What a source defines: `globals` are the names at file scope (functions, typedefs, variables,
// struct tags), `macros` every #define'd name, both without repeats, in order of appearance.
// Preprocessor conditionals are not evaluated: names of every branch are listed.
struct SourceNames {
  std::vector<std::string> globals;
  std::vector<std::string> macros;
};
SourceNames scan_source_names(const std::string& source);

// A unit: the source with includes expanded, and its options (only -D definitions).
struct BundleUnit {
  std::string source;
  std::string options;
};

// The suffix appended to every file-scope name of unit `i`.
std::string bundle_suffix(size_t i);

// The combined source of `units`. Throws ocl_infer::Error when an option is not a definition.
std::string bundle_source(const std::vector<BundleUnit>& units);

}  // namespace oi
