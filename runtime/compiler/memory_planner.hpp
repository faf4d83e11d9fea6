// Buffer planner: places every activation tensor at an offset inside one device arena so that
// tensors whose lifetimes overlap never share bytes, reusing memory best-fit by liveness.
//
// Views (Reshape, Flatten, ...) share their input's storage; an elementwise op whose input dies at
// that op writes its output in place. Both are expressed as storage groups: every value of a
// group lives in the same bytes, for the union of their lifetimes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "runtime/ir/graph.hpp"

namespace oi {

struct TensorSlot {
  int value = -1;
  int group = -1;       // storage group (index into MemoryPlan::groups)
  size_t bytes = 0;     // this value's own size
  size_t offset_in_group = 0;  // non-zero for a Concat input placed inside the Concat's output
};

struct StorageGroup {
  std::vector<int> values;  // empty once merged into another group
  size_t bytes = 0;     // largest member (its extent past its offset in the group)
  int arena = 0;        // which arena (several when one would exceed the device's largest allocation)
  size_t offset = 0;    // in the arena, aligned
  int first = 0, last = 0;  // steps (device node positions) during which the bytes are live
};

struct MemoryPlan {
  std::vector<TensorSlot> slots;    // one per planned value
  std::vector<StorageGroup> groups;
  std::vector<int> group_of;        // by value id; -1 for values not planned
  size_t arena_bytes = 0;           // planned peak activation bytes (all arenas)
  std::vector<size_t> arena_sizes;  // bytes of each arena
  size_t naive_bytes = 0;           // every value in its own buffer
  size_t lower_bound_bytes = 0;     // largest total of group bytes live at one step
  size_t alignment = 1;
  // Concat inputs placed inside the Concat's output: (step of the Concat node, input slot).
  std::vector<std::pair<int, int>> concat_in_place;
  // Outputs made views into input 0 at an offset: (step of the node, output slot).
  std::vector<std::pair<int, int>> output_views;
  int concat_inputs = 0;  // eligible-layout Concat inputs considered
};

// What the planner needs to know about a device node.
struct PlanNodeTraits {
  bool view = false;     // output 0 shares input 0's bytes
  bool inplace = false;  // output 0 may overwrite input 0 or 1 when that input dies here (same storage)
  // Per input: byte offset at which it is a contiguous block of output 0 (a Concat with all dims
  // before the axis 1), else -1. Such inputs' producers may write straight into their slice.
  std::vector<int64_t> input_offsets;
  // Per output: byte offset at which it is a contiguous run of input 0 (Slice, Split), else -1.
  std::vector<int64_t> view_offsets;
};

// Plans the activations (non-constant values) read or written by `device_nodes` (node indices in
// execution order), plus graph inputs and outputs. Graph inputs are live from the start and graph
// outputs to the end, and neither is ever shared with another tensor's bytes.
// With `eliminate_concats`, Concat inputs that die at the Concat are placed inside its output.
// Groups go into one arena, or into several of at most `max_arena` bytes each when one would be
// larger (a single group larger than max_arena still gets an arena of its own: the caller checks).
// Sizes come from each value's storage type (`storage`, by value id).
MemoryPlan plan_memory(const Graph& g, const std::vector<int>& device_nodes,
                       const std::vector<PlanNodeTraits>& traits, const std::vector<DType>& storage,
                       size_t alignment, bool eliminate_concats = true, size_t max_arena = ~size_t{0});

// Proves the plan sound: returns "" when no two groups that are live at the same step overlap in
// the arena and every group fits; otherwise a description of the first conflict.
std::string check_memory_plan(const MemoryPlan& plan);

}  // namespace oi
