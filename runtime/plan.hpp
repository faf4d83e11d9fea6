// Plan: the graph with every shape resolved for one set of input shapes, constants folded on the
// host, device buffers allocated and the kernel launches built (arguments set), ready for the
// executor to enqueue.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ops/op.hpp"
#include "runtime/cl_runtime.hpp"
#include "runtime/graph.hpp"
#include "runtime/memory_planner.hpp"
#include "runtime/optimizer.hpp"

namespace oi {

struct PlanOptions {
  OptimizerOptions optimizer;
  bool plan_memory = true;  // false: every activation gets its own buffer
};

struct Plan {
  Graph graph;  // shapes resolved, folded values carry data, optimized (removed nodes dropped)
  std::vector<Launch> launches;
  std::vector<BufferPtr> buffers;  // by value id; nullptr for values that never reach the device
  std::vector<BufferPtr> params;   // small constant buffers owned by launches
  int folded_nodes = 0;            // evaluated on the host at plan time
  std::vector<int> device_nodes;   // built into launches
  size_t activation_bytes = 0;     // device bytes of activations (the arena, or the sum of buffers)
  size_t weight_bytes = 0;         // device bytes of constants uploaded
  size_t scratch_bytes = 0;        // buffers made during build outside the arena (temporaries)
  int nodes_before = 0;            // live model nodes before optimization
  std::vector<PassReport> passes;
  bool memory_planned = false;
  MemoryPlan memory;
  std::vector<int64_t> arena_offset;  // by value id: byte offset in the arena, -1 when not in it

  std::string dump_graph() const;
  std::string dump_plan() const;
  std::string dump_graph_json() const;
  std::string dump_plan_json() const;
};

// Nodes whose results reach a graph output, in order.
std::vector<int> live_nodes(const Graph& g);

// Model inputs whose values (not only shapes) determine shapes somewhere in the graph (the shape
// tensor of a Reshape, the bounds of a Range, ...). Their data is part of the plan.
std::set<int> plan_time_inputs(const Graph& g);

// Every (op_type, opset) of the live nodes that the registry lacks, as "Op (opset N): node a, b".
std::vector<std::string> unsupported_ops(const Graph& g);

// Builds a plan. `inputs` maps model input value ids to tensors: their shapes are used, and the
// data of plan-time inputs is folded in as constants.
//
// Stages: resolve (shape inference, host folding) -> optimize (passes) -> plan memory -> build.
Plan build_plan(const Graph& model, const std::map<int, const Tensor*>& inputs,
                const std::set<int>& plan_time, ClRuntime& cl, const PlanOptions& options = {});

}  // namespace oi
