// The compiler: a model Graph and the shapes (and plan-time values) of its inputs in, a
// CompiledGraph out: every value's shape resolved, constants folded on the host, the optimizer's
// passes applied, the device nodes in execution order with their per-step plan facts, a storage
// type for every value and the buffer plan. Nothing here sees OpenCL; the plan builder
// (runtime/exec/plan.hpp) turns a CompiledGraph into buffers and kernel launches.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runtime/compiler/memory_planner.hpp"
#include "runtime/compiler/optimizer.hpp"
#include "runtime/ir/graph.hpp"

namespace oi {

struct CompileOptions {
  OptimizerOptions optimizer;
  // Decides each value's storage type (CompiledGraph::storage). Float32: every value in its own
  // dtype. Float16: float32 values inside the graph stored as float16 where every kernel that
  // touches them can (see assign_storage in compile.cpp), except the outputs of these op types.
  ocl_infer::Precision precision = ocl_infer::Precision::Float32;
  std::set<std::string> fp32_ops;
  // With Float16: constants that would be stored as float16 are rounded to float16 values once
  // here and stored as float32 instead (each alone in its storage group), so that kernels read
  // them without converting. For devices that convert halves in software (CPU devices without
  // cl_khr_fp16, where a converted weight load costs more than the bytes it saves); the results
  // are those of float16 weights, and activations keep float16 storage.
  bool widen_fp16_constants = false;
  bool plan_memory = true;  // false: every activation gets its own buffer
  // The device's sub-buffer alignment (bytes) and largest allocation: arenas are at most this big
  // (several when the activations need more).
  size_t alignment = 128;
  // No single value may need more (the session's memory limit): checked at shape inference.
  uint64_t max_value_bytes = ~uint64_t{0};
  uint64_t max_arena_bytes = ~uint64_t{0};
  // A node that needs a value computed on the device at plan time (a data-dependent op, a control
  // flow condition, a shape input) ends the plan before it instead of failing: see
  // CompiledGraph::rest.
  bool allow_segments = false;
};

// One device node of the schedule, with the facts the buffer plan decided for it.
struct Step {
  int node = -1;                        // index into CompiledGraph::graph.nodes
  std::vector<bool> inputs_in_place;    // input k already sits in its slice of output 0
  std::vector<bool> outputs_are_views;  // output k is a view into input 0 (no copy)
  bool input_in_place(int k) const {
    return k >= 0 && static_cast<size_t>(k) < inputs_in_place.size() && inputs_in_place[k];
  }
  bool output_is_view(int k) const {
    return k >= 0 && static_cast<size_t>(k) < outputs_are_views.size() && outputs_are_views[k];
  }
};

struct CompiledGraph {
  Graph graph;              // resolved, folded values carry data, optimized, compacted
  std::vector<Step> steps;  // device nodes in execution order
  // By value id: the type the value is stored in on the device. Today every value is stored in
  // its graph dtype; precision modes (fp16, int8 storage) assign others here.
  std::vector<DType> storage;
  ocl_infer::Precision precision = ocl_infer::Precision::Float32;
  bool memory_planned = false;
  MemoryPlan memory;                // valid when memory_planned
  std::vector<int64_t> arena_offset;  // by value id: byte offset in its arena, -1 when in none
  std::vector<int> arena_of;          // by value id: which arena, -1 when in none
  std::vector<std::string> notes;   // decisions worth telling the user (constants kept in fp32)
  int folded_nodes = 0;             // evaluated on the host at plan time
  int nodes_before = 0;             // live model nodes before optimization
  std::vector<PassReport> passes;

  // Segments (CompileOptions::allow_segments). Empty `frontier` and null `rest`: this plan computes
  // every graph output. Otherwise the plan's graph outputs are the model outputs it can compute
  // plus `frontier`, the values the rest of the graph reads from it; `rest` is the graph left to
  // plan (the nodes this plan does not run; `frontier` values are inputs of it, and its outputs
  // are the model outputs this plan does not compute), and `blocked` says for each node that
  // started the rest why it could not be planned now ("node 'x' (NonZero, opset 13): input 'y' is
  // computed on the device").
  std::shared_ptr<const Graph> rest;
  std::vector<int> frontier;
  std::vector<std::string> blocked;
};

// Nodes whose results reach a graph output, in order (fused residual reads count).
std::vector<int> live_nodes(const Graph& g);

// Model inputs whose values (not only shapes) determine shapes somewhere in the graph (the shape
// tensor of a Reshape, the bounds of a Range, ...). Their data is part of the plan.
std::set<int> plan_time_inputs(const Graph& g);

// Every (op_type, opset) of the live nodes that the registry lacks, as "Op (opset N): node a, b".
std::vector<std::string> unsupported_ops(const Graph& g);

// Evaluates node `node` of `g` on the host (its OpDef's infer and host functions) for the input
// tensors `inputs` (by value id of g; constants of g need not be given). Returns its outputs in
// order (empty tensors for omitted outputs). For data-dependent ops between plan segments.
std::vector<Tensor> evaluate_node(const Graph& g, int node, const std::map<int, const Tensor*>& inputs);

// Compiles `model` for `inputs` (model input value id -> tensor: shapes are used, and the data of
// plan-time inputs is folded in as constants). Throws ModelError / UnsupportedError naming the
// node.
CompiledGraph compile(const Graph& model, const std::map<int, const Tensor*>& inputs,
                      const std::set<int>& plan_time, const CompileOptions& options);

}  // namespace oi
