// Plan: a CompiledGraph made real on one device: device buffers allocated (the activation arena
// and its sub-buffers, uploaded constants, scratch) and every kernel launch built with its
// arguments set, ready for the executor to enqueue.
#pragma once

#include "runtime/exec/tuner.hpp"
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ops/build_context.hpp"
#include "runtime/backend/cl_runtime.hpp"
#include "runtime/compiler/compile.hpp"

namespace oi {

struct PlanOptions {
  OptimizerOptions optimizer;
  ocl_infer::Precision precision = ocl_infer::Precision::Float32;
  std::set<std::string> fp32_ops;
  bool plan_memory = true;  // false: every activation gets its own buffer
  // family -> "variant[:param=value,...]" (see ops/variants.hpp), already validated.
  std::map<std::string, std::string> forced_variants;
  // Device bytes the plan may allocate (activations, weights, scratch), and what set the limit
  // (for the error message); checked before each allocation.
  uint64_t memory_budget = ~uint64_t{0};
  std::string budget_source = "no limit";
  // Tuned choices and, when it tunes, the measurements (nullptr: heuristics only).
  Tuner* tuner = nullptr;
  // See CompileOptions::allow_segments.
  bool allow_segments = false;
  // Whether launches may run their first-run kernels (Launch::first_run_options) while the plan's
  // own kernels are not compiled yet (runtime/exec/compile_helpers.hpp, tier-up).
  bool first_run_kernels = false;
  // Kernels whose build options do not depend on the sizes where a variant offers them (depthwise
  // convs with the row widths at run time, conv register blocks chosen without the row width,
  // broadcasts with their block sizes at run time): a session's plan for a second input shape and
  // later ones, so that further shapes reuse the compiled programs (ops/variants.hpp).
  bool shape_generic = false;
};

struct Plan {
  CompiledGraph compiled;
  std::vector<Launch> launches;
  // By step: the range [first, end) of its launches in `launches`.
  std::vector<std::pair<size_t, size_t>> step_launches;
  std::vector<BufferPtr> buffers;  // by value id; nullptr for values that never reach the device
  std::vector<BufferPtr> owned;    // the arena, scratch and constant buffers the launches use
  size_t activation_bytes = 0;     // device bytes of activations (the arena, or the sum of buffers)
  size_t weight_bytes = 0;         // device bytes of constants uploaded (weights, packed weights)
  size_t scratch_bytes = 0;        // temporaries outside the arena
  // Where build_plan's time went (ms): shape inference, optimizer passes and memory planning;
  // lowering every step to launches (kernel selection, weight packing, any autotuning), of which
  // uploading constants to the device; building or loading the programs and their kernels.
  struct Phases {
    double graph_ms = 0, lower_ms = 0, upload_ms = 0, programs_ms = 0;
  } phases;
  // Flags kernels set when the data makes a result undefined (integer division by zero); cleared
  // before and read after every run.
  struct ErrorFlag {
    BufferPtr flag;
    int node;
    std::string what;
  };
  std::vector<ErrorFlag> error_flags;
  // The contents of the constant buffers of at most kSmallConstant bytes (kernel parameters,
  // shapes, small weights), by buffer: what a compile helper needs to run the plan's kernels on
  // meaningful geometry (runtime/exec/compile_helpers.hpp).
  static constexpr size_t kSmallConstant = 64 << 10;
  std::map<cl_mem, std::vector<unsigned char>> small_constants;
  // Tier-up (runtime/exec/compile_helpers.hpp): the launches running their first-run kernels (0:
  // the plan runs its own), the plan's id over its own options, and the bundle a fresh process
  // makes of its own programs.
  int first_run_kernels = 0;
  int unoptimized_first_run = 0;  // of those, launches of unoptimised code (kUnoptimizedFlag)
  uint64_t tier_id = 0;
  // Built with PlanOptions::shape_generic (a rebuild of the plan, its tier-up, keeps it).
  bool shape_generic = false;
  std::vector<std::pair<std::string, std::string>> tier_bundle;

  const Graph& graph() const { return compiled.graph; }

  std::string dump_graph() const;
  std::string dump_plan() const;
  std::string dump_graph_json() const;
  std::string dump_plan_json() const;
};

// Builds a plan: compile (resolve, optimize, plan memory), then allocate and build every launch.
// `inputs` maps model input value ids to tensors: their shapes are used, and the data of
// plan-time inputs is folded in as constants.
Plan build_plan(const Graph& model, const std::map<int, const Tensor*>& inputs, const std::set<int>& plan_time,
                ClRuntime& cl, const PlanOptions& options = {});

}  // namespace oi
