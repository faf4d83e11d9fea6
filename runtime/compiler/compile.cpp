#include "runtime/compiler/compile.hpp"

#include <algorithm>
#include <cmath>

#include "ops/core/op_def.hpp"

namespace oi {

std::vector<int> live_nodes(const Graph& g) {
  std::vector<bool> needed(g.values.size(), false);
  for (int o : g.outputs) needed[o] = true;
  std::vector<bool> live(g.nodes.size(), false);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    if (n.removed) continue;
    bool any = std::any_of(n.outputs.begin(), n.outputs.end(),
                           [&](int o) { return o >= 0 && needed[o]; });
    if (!any) continue;
    live[i] = true;
    for (int in : n.inputs)
      if (in >= 0) needed[in] = true;
    if (n.epilogue.residual >= 0) needed[n.epilogue.residual] = true;
  }
  std::vector<int> r;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (live[i]) r.push_back(static_cast<int>(i));
  return r;
}

std::set<int> plan_time_inputs(const Graph& g) {
  std::vector<bool> value_needed(g.values.size(), false);
  auto nodes = live_nodes(g);
  for (int ni : nodes) {
    const Node& n = g.nodes[ni];
    const OpDef* def = find_op(g, n);
    if (!def) continue;
    for (int k : def->traits.value_inputs)
      if (k < static_cast<int>(n.inputs.size()) && n.inputs[k] >= 0) value_needed[n.inputs[k]] = true;
  }
  // Walk backwards: the inputs of a node whose output value is needed are needed too, unless the
  // node only looks at shapes.
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const Node& n = g.nodes[*it];
    bool any = std::any_of(n.outputs.begin(), n.outputs.end(),
                           [&](int o) { return o >= 0 && value_needed[o]; });
    if (!any) continue;
    const OpDef* def = find_op(g, n);
    if (def && def->traits.host_needs_shapes_only) continue;
    for (int in : n.inputs)
      if (in >= 0) value_needed[in] = true;
  }
  std::set<int> r;
  for (int in : g.inputs)
    if (value_needed[in]) r.insert(in);
  return r;
}

std::vector<std::string> unsupported_ops(const Graph& g) {
  std::map<std::string, std::vector<std::string>> missing;
  for (int ni : live_nodes(g)) {
    const Node& n = g.nodes[ni];
    if (find_op(g, n)) continue;
    std::string key = (n.domain.empty() ? "" : n.domain + ".") + n.op_type + " (opset " +
                      std::to_string(g.opset(n.domain)) + ")";
    missing[key].push_back(n.name);
  }
  std::vector<std::string> r;
  for (auto& [k, names] : missing) {
    std::string s = k + ": node";
    s += names.size() > 1 ? "s " : " ";
    for (size_t i = 0; i < names.size() && i < 5; ++i) s += (i ? ", '" : "'") + names[i] + "'";
    if (names.size() > 5) s += " and " + std::to_string(names.size() - 5) + " more";
    r.push_back(s);
  }
  return r;
}

namespace {

// Shape inference and host folding over the live nodes; folded nodes are marked removed.
void resolve(CompiledGraph& p, const std::map<int, const Tensor*>& inputs, const std::set<int>& plan_time,
             uint64_t max_value_bytes) {
  Graph& g = p.graph;
  for (auto& [id, t] : inputs) {
    Value& v = g.values[id];
    v.shape = t->shape;
    v.shape_known = true;
    if (plan_time.count(id)) v.data = std::make_shared<const Tensor>(*t);
  }
  auto live = live_nodes(g);
  p.nodes_before = static_cast<int>(live.size());
  std::vector<bool> is_live(g.nodes.size(), false);
  for (int ni : live) is_live[ni] = true;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!is_live[i]) g.nodes[i].removed = true;
  for (int ni : live) {
    Node& n = g.nodes[ni];
    const OpDef* def = find_op(g, n);
    if (!def)
      throw ocl_infer::UnsupportedError(describe_node(g, n) + ": operator is not supported");
    OpContext ctx(g, ni);
    for (int k = 0; k < ctx.num_inputs(); ++k)
      if (ctx.has_input(k) && !ctx.in(k).shape_known)
        ctx.fail("input '" + ctx.in(k).name + "' has no known shape");
    def->infer_fn(ctx);
    for (int k = 0; k < ctx.num_outputs(); ++k) {
      if (!ctx.has_output(k)) continue;
      const Value& o = ctx.out_value(k);
      if (!o.shape_known)
        throw ocl_infer::Error("internal: " + describe_node(g, n) + " left output " + std::to_string(k) +
                               " without a shape");
      // Shapes came from the model's numbers: check each value's size against the memory limit
      // before anything is computed or allocated for it (set_out already refused > 2^40 elements).
      const uint64_t bytes = static_cast<uint64_t>(numel(o.shape)) * ocl_infer::dtype_size(o.dtype);
      if (bytes > max_value_bytes)
        ctx.fail("output '" + o.name + "' " + ocl_infer::shape_to_string(o.shape) + " would need " +
                 std::to_string(bytes) + " bytes, more than the memory limit of " + std::to_string(max_value_bytes) +
                 " bytes");
    }
    bool host_ok = def->host_fn != nullptr && !def->traits.fold_late;
    if (host_ok && !def->traits.host_needs_shapes_only)
      for (int k = 0; k < ctx.num_inputs(); ++k)
        if (ctx.has_input(k) && !ctx.is_const(k)) host_ok = false;
    if (!host_ok) continue;
    std::vector<std::pair<DType, Shape>> inferred;
    for (int k = 0; k < ctx.num_outputs(); ++k)
      if (ctx.has_output(k)) inferred.push_back({ctx.out_value(k).dtype, ctx.out_value(k).shape});
    def->host_fn(ctx);
    size_t j = 0;
    for (int k = 0; k < ctx.num_outputs(); ++k) {
      if (!ctx.has_output(k)) continue;
      const Value& o = ctx.out_value(k);
      if (!o.data || o.dtype != inferred[j].first || o.shape != inferred[j].second)
        throw ocl_infer::Error("internal: host evaluation of " + describe_node(g, n) +
                               " disagrees with shape inference");
      ++j;
    }
    n.removed = true;
    ++p.folded_nodes;
  }
}

// Union-find over value ids: values that must share a storage type.
struct StorageGroups {
  std::vector<int> parent;
  explicit StorageGroups(size_t n) : parent(n) {
    for (size_t i = 0; i < n; ++i) parent[i] = static_cast<int>(i);
  }
  int find(int v) { return parent[v] == v ? v : parent[v] = find(parent[v]); }
  void join(int a, int b) { parent[find(a)] = find(b); }
};

bool covers_op(const Node& n, const std::set<std::string>& ops) {
  if (ops.count(n.op_type)) return true;
  for (auto& c : n.covers)
    if (ops.count(c.second)) return true;
  return false;
}

// Storage types. With fp32 precision every value is stored in its graph dtype. With fp16 every
// float32 value is stored as float16 where that is safe and possible:
//   - graph inputs and outputs keep their dtype (the first and last kernels convert as they read
//     and write);
//   - every device node that reads or writes it stores float operands in any storage
//     (OpTraits::any_float_storage), and is not an op kept in fp32 (CompileOptions::fp32_ops);
//   - values that share bytes or move unchanged (views, data-movement ops, in-place groups are
//     decided later) share one storage type;
//   - a constant whose values do not fit fp16 stays float32 (reported through `notes`).
void assign_storage(CompiledGraph& p, const std::vector<const OpDef*>& defs, const CompileOptions& options) {
  Graph& g = p.graph;
  p.storage.resize(g.values.size());
  for (size_t v = 0; v < g.values.size(); ++v) p.storage[v] = g.values[v].dtype;
  if (options.precision != ocl_infer::Precision::Float16) return;
  const size_t nv = g.values.size();
  std::vector<bool> ok(nv, true);  // may be float16
  for (int v : g.inputs) ok[v] = false;
  for (int v : g.outputs) ok[v] = false;
  StorageGroups groups(nv);
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const Node& n = g.nodes[p.steps[k].node];
    const OpDef* def = defs[k];
    const bool any = def->traits.any_float_storage && !covers_op(n, options.fp32_ops);
    std::vector<int> operands(n.inputs.begin(), n.inputs.end());
    operands.insert(operands.end(), n.outputs.begin(), n.outputs.end());
    if (n.epilogue.residual >= 0) operands.push_back(n.epilogue.residual);
    for (int v : operands)
      if (v >= 0 && !any) ok[v] = false;
    // A view and its input, and the float operands of ops that keep one storage, in one storage.
    if ((def->traits.view || def->traits.shared_float_storage) && !n.inputs.empty() && n.inputs[0] >= 0)
      for (int v : operands)
        if (v >= 0 && g.values[v].dtype == g.values[n.inputs[0]].dtype) groups.join(v, n.inputs[0]);
  }
  // Constants beyond fp16's range stay float32.
  for (size_t v = 0; v < nv; ++v) {
    const Value& val = g.values[v];
    if (!ok[v] || !val.data || val.dtype != DType::Float32) continue;
    const float* d = val.data->data<float>();
    for (int64_t i = 0; i < val.data->numel(); ++i)
      if (std::fabs(d[i]) > 65504.0f) {
        ok[v] = false;
        p.notes.push_back("constant '" + val.name + "' has values beyond float16's range (" + std::to_string(d[i]) +
                          "): kept in float32");
        break;
      }
  }
  std::vector<bool> group_ok(nv, true);
  for (size_t v = 0; v < nv; ++v)
    if (!ok[v]) group_ok[groups.find(static_cast<int>(v))] = false;
  for (size_t v = 0; v < nv; ++v)
    if (g.values[v].dtype == DType::Float32 && group_ok[groups.find(static_cast<int>(v))] && ok[v])
      p.storage[v] = DType::Float16;
}

}  // namespace

CompiledGraph compile(const Graph& model, const std::map<int, const Tensor*>& inputs,
                      const std::set<int>& plan_time, const CompileOptions& options) {
  CompiledGraph p;
  p.graph = model;
  Graph& g = p.graph;
  resolve(p, inputs, plan_time, options.max_value_bytes);
  p.passes = optimize(g, options.optimizer);
  g.compact();
  // After folding and fusion, the live nodes are the device nodes.
  std::vector<int> device = live_nodes(g);
  std::vector<const OpDef*> defs;
  for (int ni : device) {
    const Node& n = g.nodes[ni];
    const OpDef* def = find_op(g, n);
    if (!def) throw ocl_infer::UnsupportedError(describe_node(g, n) + ": operator is not supported");
    if (!def->build_fn)
      throw ocl_infer::UnsupportedError(describe_node(g, n) +
                                        ": can only be computed at plan time, but an input is not known then");
    defs.push_back(def);
    Step s;
    s.node = ni;
    p.steps.push_back(s);
  }
  p.precision = options.precision;
  assign_storage(p, defs, options);

  // The planner's view of each step; offsets in bytes of the storage types.
  std::vector<PlanNodeTraits> traits;
  for (size_t k = 0; k < device.size(); ++k) {
    const int ni = device[k];
    const Node& n = g.nodes[ni];
    const OpDef* def = defs[k];
    PlanNodeTraits t;
    t.view = def->traits.view;
    t.inplace = def->traits.inplace;
    const OpContext ctx(g, ni);
    if (def->traits.input_offset_in_output && !n.outputs.empty() && n.outputs[0] >= 0) {
      const int64_t es = static_cast<int64_t>(ocl_infer::dtype_size(p.storage[n.outputs[0]]));
      bool any = false;
      for (int i = 0; i < static_cast<int>(n.inputs.size()); ++i) {
        const int64_t at = n.inputs[i] >= 0 ? def->traits.input_offset_in_output(ctx, i) : -1;
        t.input_offsets.push_back(at >= 0 ? at * es : -1);
        any |= at >= 0;
      }
      if (!any) t.input_offsets.clear();
    }
    if (def->traits.output_view_offset && options.plan_memory && !n.inputs.empty() && n.inputs[0] >= 0) {
      const int64_t es = static_cast<int64_t>(ocl_infer::dtype_size(p.storage[n.inputs[0]]));
      for (int o = 0; o < static_cast<int>(n.outputs.size()); ++o) {
        const int64_t at = n.outputs[o] >= 0 ? def->traits.output_view_offset(ctx, o) : -1;
        t.view_offsets.push_back(at >= 0 ? at * es : -1);
      }
    }
    traits.push_back(t);
  }

  if (options.plan_memory) {
    const size_t align = std::max<size_t>(options.alignment, 4);
    const size_t max_arena = static_cast<size_t>(std::min<uint64_t>(options.max_arena_bytes, ~size_t{0}));
    MemoryPlan mp = plan_memory(g, device, traits, p.storage, align, true, max_arena);
    if (!mp.concat_in_place.empty()) {
      // Writing Concat inputs in place saves copies but makes the Concat's output live longer;
      // when that costs more than 5 % of the arena (DenseNet), plan without it.
      MemoryPlan plain = plan_memory(g, device, traits, p.storage, align, false, max_arena);
      if (static_cast<double>(plain.arena_bytes) * 1.05 < static_cast<double>(mp.arena_bytes)) {
        plain.concat_inputs = mp.concat_inputs;
        mp = std::move(plain);
      }
    }
    for (auto& grp : mp.groups)
      if (!grp.values.empty() && grp.bytes > max_arena)
        throw ocl_infer::DeviceError("out of device memory: tensor '" + g.values[grp.values[0]].name + "' needs " +
                                     std::to_string(grp.bytes) + " bytes, more than the device's largest allocation (" +
                                     std::to_string(options.max_arena_bytes) + " bytes)");
    if (mp.arena_bytes > 0) {
      std::string bad = check_memory_plan(mp);
      if (!bad.empty()) throw ocl_infer::Error("internal: buffer plan is unsound: " + bad);
      auto set_flag = [](std::vector<bool>& flags, int k) {
        if (flags.size() <= static_cast<size_t>(k)) flags.resize(k + 1, false);
        flags[k] = true;
      };
      for (auto& [step, slot] : mp.concat_in_place) set_flag(p.steps[step].inputs_in_place, slot);
      for (auto& [step, slot] : mp.output_views) set_flag(p.steps[step].outputs_are_views, slot);
      p.arena_offset.assign(g.values.size(), -1);
      p.arena_of.assign(g.values.size(), -1);
      for (auto& slot : mp.slots) {
        p.arena_offset[slot.value] = static_cast<int64_t>(mp.groups[slot.group].offset + slot.offset_in_group);
        p.arena_of[slot.value] = mp.groups[slot.group].arena;
      }
      p.memory_planned = true;
      p.memory = std::move(mp);
    }
  }
  return p;
}

}  // namespace oi
