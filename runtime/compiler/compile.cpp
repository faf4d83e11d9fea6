#include "runtime/compiler/compile.hpp"

#include <algorithm>
#include <cmath>

#include "ops/core/op_def.hpp"

namespace oi {

std::vector<int> live_nodes(const Graph& g) {
  std::vector<bool> needed(g.values.size(), false);
  // Reading a sequence reads its elements (made earlier, so the backward walk reaches them).
  auto need = [&](int v) {
    needed[v] = true;
    if (g.values[v].sequence)
      for (int e : *g.values[v].sequence) needed[e] = true;
  };
  for (int o : g.outputs) need(o);
  std::vector<bool> live(g.nodes.size(), false);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    if (n.removed) continue;
    bool any = std::any_of(n.outputs.begin(), n.outputs.end(),
                           [&](int o) { return o >= 0 && needed[o]; });
    if (!any) continue;
    live[i] = true;
    for (int in : n.inputs)
      if (in >= 0) need(in);
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
    const std::string why = schema_change(n.domain, n.op_type, g.opset(n.domain));
    std::string key = (n.domain.empty() ? "" : n.domain + ".") + n.op_type + " (opset " +
                      std::to_string(g.opset(n.domain)) + (why.empty() ? "" : ": " + why) + ")";
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

std::vector<Tensor> evaluate_node(const Graph& g, int node, const std::map<int, const Tensor*>& inputs) {
  Graph m;
  m.opsets = g.opsets;
  Node n = g.nodes[node];
  n.epilogue = Epilogue{};
  auto copy_value = [&](int id) {
    if (id < 0) return -1;
    const int mid = m.add_value(g.values[id].name);
    m.values[mid].dtype = g.values[id].dtype;
    return mid;
  };
  for (int& in : n.inputs) {
    const int id = in;
    in = copy_value(id);
    if (in < 0) continue;
    Value& v = m.values[in];
    auto it = inputs.find(id);
    if (it != inputs.end()) {
      v.data = std::make_shared<const Tensor>(*it->second);
    } else if (g.values[id].data) {
      v.data = g.values[id].data;
    } else {
      throw ocl_infer::Error("internal: " + describe_node(g, g.nodes[node]) + ": input '" + g.values[id].name +
                             "' is not known on the host");
    }
    v.dtype = v.data->dtype;
    v.shape = v.data->shape;
    v.shape_known = true;
  }
  for (int& o : n.outputs) o = copy_value(o);
  m.nodes.push_back(n);
  const OpDef* def = find_op(g, g.nodes[node]);
  if (!def || !def->host_fn)
    throw ocl_infer::UnsupportedError(describe_node(g, g.nodes[node]) + ": cannot be evaluated on the host");
  OpContext ctx(m, 0);
  def->infer_fn(ctx);
  def->host_fn(ctx);
  std::vector<Tensor> r;
  for (int o : m.nodes[0].outputs) r.push_back(o >= 0 && m.values[o].data ? *m.values[o].data : Tensor());
  return r;
}

namespace {

// Marks every node that no graph output needs as removed.
void remove_dead(Graph& g) {
  std::vector<bool> is_live(g.nodes.size(), false);
  for (int ni : live_nodes(g)) is_live[ni] = true;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!is_live[i]) g.nodes[i].removed = true;
}

bool reads_sequence(const Graph& g, const Node& n) {
  for (int in : n.inputs)
    if (in >= 0 && g.values[in].sequence) return true;
  return false;
}

// Why node `n` cannot be resolved now, or "" when it can: an input without a known shape (made by
// a node that waits itself), a value input not known at plan time, a data-dependent op whose
// inputs are computed on the device.
std::string blocked_reason(const Graph& g, const Node& n, const OpDef& def, bool segments) {
  const OpContext ctx(g, static_cast<int>(&n - g.nodes.data()));
  for (int k = 0; k < ctx.num_inputs(); ++k)
    if (ctx.has_input(k) && !ctx.in(k).shape_known)
      return segments && ctx.in(k).producer >= 0 ? "input '" + ctx.in(k).name + "' waits for an earlier read-back"
                                                 : "input '" + ctx.in(k).name + "' has no known shape";
  if (!segments) return "";
  for (int k : def.traits.value_inputs)
    if (ctx.has_input(k) && !ctx.is_const(k))
      return "input '" + ctx.in(k).name + "' decides shapes or control flow and is computed on the device";
  if (def.traits.data_dependent)
    for (int k = 0; k < ctx.num_inputs(); ++k)
      if (ctx.has_input(k) && !ctx.is_const(k))
        return "its output shape depends on the values of input '" + ctx.in(k).name +
               "', which is computed on the device";
  return "";
}

// Splits a resolved graph at the nodes that wait (CompileOptions::allow_segments): the plan keeps
// the rest, `p.rest` gets the waiting nodes.
void split_segment(CompiledGraph& p, const std::vector<char>& waits) {
  Graph& g = p.graph;
  auto rest = std::make_shared<Graph>(g);
  std::vector<bool> read_later(g.values.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!waits[i] || g.nodes[i].removed) continue;
    for (int in : g.nodes[i].inputs) {
      if (in < 0) continue;
      read_later[in] = true;
      // A sequence crosses the cut as its elements (the rest keeps the list, same value ids).
      if (g.values[in].sequence)
        for (int e : *g.values[in].sequence) read_later[e] = true;
    }
  }
  std::vector<bool> made_later(g.values.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    if (n.removed) continue;
    if (waits[i]) {
      for (int o : n.outputs)
        if (o >= 0) made_later[o] = true;
      n.removed = true;
    } else {
      rest->nodes[i].removed = true;
    }
  }
  std::vector<int> outputs, rest_outputs;
  for (int o : g.outputs) (made_later[o] ? rest_outputs : outputs).push_back(o);
  for (size_t v = 0; v < g.values.size(); ++v) {
    const Value& val = g.values[v];
    if (!read_later[v] || made_later[v] || val.data || val.sequence) continue;
    const bool is_input = std::find(g.inputs.begin(), g.inputs.end(), static_cast<int>(v)) != g.inputs.end();
    if (!is_input) {
      p.frontier.push_back(static_cast<int>(v));
      if (std::find(outputs.begin(), outputs.end(), static_cast<int>(v)) == outputs.end())
        outputs.push_back(static_cast<int>(v));
    }
  }
  g.outputs = outputs;
  // In the rest, what this plan computes arrives as inputs (fed by the session).
  Graph& r = *rest;
  std::vector<int> inputs;
  for (int in : r.inputs)
    if (read_later[in]) inputs.push_back(in);
  for (int f : p.frontier) {
    inputs.push_back(f);
    r.values[f].producer = -1;
  }
  r.inputs = inputs;
  r.outputs = rest_outputs;
  for (Value& v : r.values)
    if (!v.data && v.producer < 0 && !v.sequence) v.shape_known = false;
  p.rest = std::move(rest);
}

// Shape inference and host folding over the live nodes; folded nodes are marked removed. Control
// flow whose steering values are known is expanded on the way (OpTraits::expand).
void resolve(CompiledGraph& p, const std::map<int, const Tensor*>& inputs, const std::set<int>& plan_time,
             uint64_t max_value_bytes, bool segments) {
  Graph& g = p.graph;
  for (auto& [id, t] : inputs) {
    Value& v = g.values[id];
    v.shape = t->shape;
    v.shape_known = true;
    if (plan_time.count(id)) v.data = std::make_shared<const Tensor>(*t);
  }
  remove_dead(g);
  p.nodes_before = static_cast<int>(live_nodes(g).size());
  std::vector<char> waits(g.nodes.size(), 0);
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    Node& n = g.nodes[ni];
    if (n.removed) continue;
    const OpDef* def = find_op(g, n);
    if (!def)
      throw ocl_infer::UnsupportedError(describe_node(g, n) + ": operator is not supported");
    if (reads_sequence(g, n) && !def->traits.takes_sequences) {
      if (n.op_type == "Identity" && n.inputs.size() == 1 && n.outputs.size() == 1 && n.outputs[0] >= 0) {
        // A sequence passed on (an If's or Loop's result, a graph output): the same list.
        const Value& in = g.values[n.inputs[0]];
        Value& out = g.values[n.outputs[0]];
        out.sequence = in.sequence;
        out.dtype = in.dtype;
        out.shape_known = true;
        n.removed = true;
        continue;
      }
      OpContext(g, static_cast<int>(ni)).fail("reads a sequence; " + n.op_type + " takes tensors");
    }
    const std::string why = blocked_reason(g, n, *def, segments);
    if (!why.empty()) {
      if (!segments) OpContext(g, static_cast<int>(ni)).fail(why);
      // Only the first node of a chain that waits says why.
      bool upstream = false;
      for (int in : n.inputs)
        upstream |= in >= 0 && g.values[in].producer >= 0 && waits[g.values[in].producer];
      if (!upstream) p.blocked.push_back(describe_node(g, n) + ": " + why);
      waits[ni] = 1;
      continue;
    }
    if (def->traits.expand) {
      const size_t before = g.nodes.size();
      if (def->traits.expand(g, static_cast<int>(ni))) {
        waits.insert(waits.begin() + static_cast<std::ptrdiff_t>(ni), g.nodes.size() + 1 - before, 0);
        waits.erase(waits.begin() + static_cast<std::ptrdiff_t>(ni + g.nodes.size() + 1 - before));
        remove_dead(g);
        --ni;  // visit the first node that replaced it
        continue;
      }
    }
    OpContext ctx(g, static_cast<int>(ni));
    def->infer_fn(ctx);
    // bfloat16 reaches the device only through Cast/CastLike (and unchanged through Identity and
    // views): other kernels would read its bits as another type.
    if (n.op_type != "Cast" && n.op_type != "CastLike" && n.op_type != "Identity" && !def->traits.view)
      for (int v : n.inputs)
        if (v >= 0 && g.values[v].dtype == DType::BFloat16) ctx.unsupported("bfloat16 tensors (Cast and CastLike take them)");
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
  for (int o : g.outputs)
    if (g.values[o].sequence)
      throw ocl_infer::UnsupportedError("model output '" + g.values[o].name +
                                        "' is a sequence (sequence-typed model outputs are not supported; sequences "
                                        "inside the model are)");
  if (std::any_of(waits.begin(), waits.end(), [](char w) { return w != 0; })) split_segment(p, waits);
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
  std::vector<bool> used(nv, false);  // an operand of some device step
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const Node& n = g.nodes[p.steps[k].node];
    const OpDef* def = defs[k];
    const bool any = def->traits.any_float_storage && !covers_op(n, options.fp32_ops);
    std::vector<int> operands(n.inputs.begin(), n.inputs.end());
    operands.insert(operands.end(), n.outputs.begin(), n.outputs.end());
    if (n.epilogue.residual >= 0) operands.push_back(n.epilogue.residual);
    for (int v : operands) {
      if (v >= 0 && !any) ok[v] = false;
      if (v >= 0) used[v] = true;
    }
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
  std::vector<int> group_size(nv, 0);
  for (size_t v = 0; v < nv; ++v) {
    if (!ok[v]) group_ok[groups.find(static_cast<int>(v))] = false;
    group_size[groups.find(static_cast<int>(v))]++;
  }
  size_t widened = 0, widened_bytes = 0;
  for (size_t v = 0; v < nv; ++v) {
    if (g.values[v].dtype != DType::Float32 || !group_ok[groups.find(static_cast<int>(v))] || !ok[v]) continue;
    Value& val = g.values[v];
    if (options.widen_fp16_constants && val.data && used[v] && group_size[groups.find(static_cast<int>(v))] == 1) {
      // float16's values, float32's bytes: rounded to nearest even as the conversion to float16
      // storage would, then widened back exactly.
      auto rounded = std::make_shared<Tensor>(*val.data);
      float* d = rounded->data<float>();
      for (int64_t i = 0; i < rounded->numel(); ++i) d[i] = ocl_infer::half_to_float(ocl_infer::float_to_half(d[i]));
      val.data = rounded;
      ++widened;
      widened_bytes += rounded->bytes.size();
      continue;
    }
    p.storage[v] = DType::Float16;
  }
  if (widened)
    p.notes.push_back(std::to_string(widened) + " weight tensors (" + std::to_string(widened_bytes >> 10) +
                      " KiB) rounded to float16 values and stored as float32 at plan time: this device converts "
                      "halves in software, so kernels read its weights without converting "
                      "($OCL_INFER_FP16_WEIGHTS=half keeps them float16)");
}

}  // namespace

CompiledGraph compile(const Graph& model, const std::map<int, const Tensor*>& inputs,
                      const std::set<int>& plan_time, const CompileOptions& options) {
  CompiledGraph p;
  p.graph = model;
  Graph& g = p.graph;
  resolve(p, inputs, plan_time, options.max_value_bytes, options.allow_segments);
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
      // when that costs more than 5 % of the arena and more bytes than it saves copying each run,
      // plan without it. (DenseNet-121 with each Concat of a block a prefix of the block's last:
      // 0.4 MB more than 7.6 MB, ~60 MB fewer copied a run, 5.7 of 45 ms of kernels on an AVX2
      // EPYC.)
      size_t saved = 0;
      for (auto& [step, slot] : mp.concat_in_place) {
        const int v = g.nodes[device[step]].inputs[slot];
        saved += static_cast<size_t>(numel(g.values[v].shape)) * ocl_infer::dtype_size(p.storage[v]);
      }
      MemoryPlan plain = plan_memory(g, device, traits, p.storage, align, false, max_arena);
      if (static_cast<double>(plain.arena_bytes) * 1.05 < static_cast<double>(mp.arena_bytes) &&
          mp.arena_bytes - plain.arena_bytes > saved) {
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
