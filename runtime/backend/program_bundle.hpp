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

namespace oi {

// Splits build options made only of -DNAME and -DNAME=VALUE into (name, value) pairs ("1" when no
// value), in order. False when any option is something else (such a unit is built on its own).
bool parse_define_options(const std::string& options, std::vector<std::pair<std::string, std::string>>* defines);

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
