#include "runtime/plan.hpp"

#include <algorithm>
#include <sstream>

#include "runtime/profiler.hpp"

namespace oi {

using ocl_infer::dtype_name;
using ocl_infer::shape_to_string;

namespace {

class Builder : public DeviceBuilder {
 public:
  Builder(Plan& p, ClRuntime& cl) : p_(p), cl_(cl) { p_.buffers.resize(p_.graph.values.size()); }

  ClRuntime& cl() override { return cl_; }

  cl_mem buffer_of(int id) override {
    if (static_cast<size_t>(id) >= p_.buffers.size()) p_.buffers.resize(p_.graph.values.size());
    BufferPtr& b = p_.buffers[id];
    if (!b) {
      const Value& v = p_.graph.values[id];
      if (!v.shape_known)
        throw ocl_infer::Error("internal: value '" + v.name + "' reached the device without a shape");
      size_t bytes = static_cast<size_t>(numel(v.shape)) * ocl_infer::dtype_size(v.dtype);
      if (v.data) {
        b = cl_.upload(v.data->bytes.data(), v.data->bytes.size());
        p_.weight_bytes += bytes;
      } else {
        b = cl_.alloc(bytes);
        (p_.memory_planned ? p_.scratch_bytes : p_.activation_bytes) += bytes;
      }
    }
    return b->mem;
  }

  void alias(int out, int in) override {
    buffer_of(in);
    if (p_.memory_planned && p_.buffers[out]) {
      // The planner already gave views their input's bytes (a view of a view at an offset has its
      // own sub-buffer over the same bytes); anything else would break liveness.
      const auto& at = p_.arena_offset;
      const bool same = static_cast<size_t>(std::max(in, out)) < at.size() && at[out] >= 0 && at[out] == at[in];
      if (!same)
        throw ocl_infer::Error("internal: '" + p_.graph.values[out].name +
                               "' is aliased by an op the buffer planner does not know as a view");
      return;
    }
    p_.buffers[out] = p_.buffers[in];
  }

  cl_mem params(const void* data, size_t bytes) override {
    p_.params.push_back(cl_.upload(data, bytes));
    p_.weight_bytes += bytes;  // packed weights and kernel parameters
    return p_.params.back()->mem;
  }

  void add_launch(Launch l) override { p_.launches.push_back(std::move(l)); }

 private:
  Plan& p_;
  ClRuntime& cl_;
};

std::string value_desc(const Value& v) {
  return v.name + ":" + (v.dtype == DType::Undefined ? "?" : dtype_name(v.dtype)) +
         shape_to_string(v.shape);
}

}  // namespace

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
    const OpDef* def = find_op(n.domain, n.op_type, g.opset(n.domain));
    if (!def) continue;
    for (size_t k = 0; k < n.inputs.size() && k < 32; ++k)
      if ((def->value_inputs >> k) & 1u)
        if (n.inputs[k] >= 0) value_needed[n.inputs[k]] = true;
  }
  // Walk backwards: the inputs of a node whose output value is needed are needed too, unless the
  // node only looks at shapes.
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const Node& n = g.nodes[*it];
    bool any = std::any_of(n.outputs.begin(), n.outputs.end(),
                           [&](int o) { return o >= 0 && value_needed[o]; });
    if (!any) continue;
    const OpDef* def = find_op(n.domain, n.op_type, g.opset(n.domain));
    if (def && def->host_needs_shapes_only) continue;
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
    if (find_op(n.domain, n.op_type, g.opset(n.domain))) continue;
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
void resolve(Plan& p, const std::map<int, const Tensor*>& inputs, const std::set<int>& plan_time) {
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
    const OpDef* def = find_op(n.domain, n.op_type, g.opset(n.domain));
    if (!def)
      throw ocl_infer::UnsupportedError(describe_node(g, n) + ": operator is not supported");
    OpContext ctx(g, ni);
    for (int k = 0; k < ctx.num_inputs(); ++k)
      if (ctx.has_input(k) && !ctx.in(k).shape_known)
        ctx.fail("input '" + ctx.in(k).name + "' has no known shape");
    def->infer(ctx);
    for (int k = 0; k < ctx.num_outputs(); ++k)
      if (ctx.has_output(k) && !ctx.out(k).shape_known)
        throw ocl_infer::Error("internal: " + describe_node(g, n) + " left output " +
                               std::to_string(k) + " without a shape");
    bool host_ok = def->host != nullptr;
    if (host_ok && !def->host_needs_shapes_only)
      for (int k = 0; k < ctx.num_inputs(); ++k)
        if (ctx.has_input(k) && !ctx.is_const(k)) host_ok = false;
    if (!host_ok) continue;
    std::vector<std::pair<DType, Shape>> inferred;
    for (int k = 0; k < ctx.num_outputs(); ++k)
      if (ctx.has_output(k)) inferred.push_back({ctx.out(k).dtype, ctx.out(k).shape});
    def->host(ctx);
    size_t j = 0;
    for (int k = 0; k < ctx.num_outputs(); ++k) {
      if (!ctx.has_output(k)) continue;
      const Value& o = ctx.out(k);
      if (!o.data || o.dtype != inferred[j].first || o.shape != inferred[j].second)
        throw ocl_infer::Error("internal: host evaluation of " + describe_node(g, n) +
                               " disagrees with shape inference");
      ++j;
    }
    n.removed = true;
    ++p.folded_nodes;
  }
}

}  // namespace

Plan build_plan(const Graph& model, const std::map<int, const Tensor*>& inputs,
                const std::set<int>& plan_time, ClRuntime& cl, const PlanOptions& options) {
  Plan p;
  p.graph = model;
  Graph& g = p.graph;
  resolve(p, inputs, plan_time);
  p.passes = optimize(g, options.optimizer);
  g.compact();
  // After folding and fusion, the live nodes are the device nodes.
  std::vector<int> device = live_nodes(g);
  std::vector<const OpDef*> defs;
  std::vector<PlanNodeTraits> traits;
  for (int ni : device) {
    const Node& n = g.nodes[ni];
    const OpDef* def = find_op(n.domain, n.op_type, g.opset(n.domain));
    if (!def) throw ocl_infer::UnsupportedError(describe_node(g, n) + ": operator is not supported");
    if (!def->build)
      throw ocl_infer::UnsupportedError(describe_node(g, n) +
                                        ": can only be computed at plan time, but an input is not known then");
    defs.push_back(def);
    PlanNodeTraits t;
    t.view = def->view;
    t.inplace = def->inplace;
    if (n.op_type == "Concat" && n.domain.empty() && !n.outputs.empty() && n.outputs[0] >= 0) {
      const Shape& os = g.values[n.outputs[0]].shape;
      int64_t axis = n.attr_int("axis", 1);
      if (axis < 0) axis += static_cast<int64_t>(os.size());
      bool blocks = axis >= 0 && axis < static_cast<int64_t>(os.size());
      for (int64_t d = 0; blocks && d < axis; ++d) blocks = os[d] == 1;
      t.concat_blocks = blocks;
    }
    if (def->view_offset && options.plan_memory) {
      OpContext vctx(g, ni);
      for (int k = 0; k < static_cast<int>(n.outputs.size()); ++k)
        t.view_offsets.push_back(n.outputs[k] >= 0 ? def->view_offset(vctx, k) : -1);
    }
    traits.push_back(t);
  }

  Builder builder(p, cl);
  if (options.plan_memory) {
    const size_t align = std::max<size_t>(cl.base_addr_align(), 4);
    MemoryPlan mp = plan_memory(g, device, traits, align);
    if (!mp.concat_in_place.empty()) {
      // Writing Concat inputs in place saves copies but makes the Concat's output live longer;
      // when that costs more than 5 % of the arena (DenseNet), plan without it.
      MemoryPlan plain = plan_memory(g, device, traits, align, false);
      if (static_cast<double>(plain.arena_bytes) * 1.05 < static_cast<double>(mp.arena_bytes)) {
        plain.concat_inputs = mp.concat_inputs;
        mp = std::move(plain);
      }
    }
    if (mp.arena_bytes > 0 && mp.arena_bytes <= cl.info().max_alloc_bytes) {
      std::string bad = check_memory_plan(mp);
      if (!bad.empty()) throw ocl_infer::Error("internal: buffer plan is unsound: " + bad);
      BufferPtr arena = cl.alloc(mp.arena_bytes);
      std::vector<BufferPtr> group_buf(mp.groups.size());
      for (size_t gi = 0; gi < mp.groups.size(); ++gi)
        group_buf[gi] = cl.sub_buffer(arena, mp.groups[gi].offset, std::max<size_t>(mp.groups[gi].bytes, 4));
      for (auto& slot : mp.slots)
        p.buffers[slot.value] = slot.offset_in_group == 0
                                    ? group_buf[slot.group]
                                    : cl.sub_buffer(arena, mp.groups[slot.group].offset + slot.offset_in_group,
                                                    std::max<size_t>(slot.bytes, 4));
      auto set_flag = [](std::vector<bool>& flags, int k) {
        if (flags.size() <= static_cast<size_t>(k)) flags.resize(k + 1, false);
        flags[k] = true;
      };
      for (auto& [step, slot] : mp.concat_in_place) set_flag(g.nodes[device[step]].inputs_in_place, slot);
      for (auto& [step, slot] : mp.output_views) set_flag(g.nodes[device[step]].outputs_are_views, slot);
      p.arena_offset.assign(g.values.size(), -1);
      for (auto& slot : mp.slots)
        p.arena_offset[slot.value] = static_cast<int64_t>(mp.groups[slot.group].offset + slot.offset_in_group);
      p.activation_bytes = mp.arena_bytes;
      p.memory_planned = true;
      p.memory = std::move(mp);
      p.params.push_back(arena);  // keeps the arena alive with the plan
    }
  }
  for (size_t k = 0; k < device.size(); ++k) {
    const int ni = device[k];
    OpContext ctx(g, ni, &builder);
    const size_t before = p.launches.size();
    defs[k]->build(ctx);
    Node& n = g.nodes[ni];
    if (p.launches.size() > before) {
      double flops = node_flops(g, n), bytes = node_bytes(g, n);
      if (n.epilogue.residual >= 0) bytes += static_cast<double>(numel(g.values[n.epilogue.residual].shape) * 4);
      p.launches.back().flops = flops;
      p.launches.back().bytes = bytes;
    }
    p.device_nodes.push_back(ni);
  }
  // Graph outputs and inputs need buffers even when no kernel touched them (an input that is
  // also an output).
  for (int o : g.outputs)
    if (!g.values[o].data) builder.buffer_of(o);
  for (int in : g.inputs)
    if (!g.values[in].data) builder.buffer_of(in);
  return p;
}

namespace {

std::string json_str(const std::string& v) {
  std::string r = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') r += '\\', r += c;
    else if (static_cast<unsigned char>(c) < 0x20) r += ' ';
    else r += c;
  }
  return r + "\"";
}

std::string shape_json(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

std::vector<std::string> covered_names(const Node& n) {
  std::vector<std::string> r;
  if (n.covers.empty()) r.push_back(n.name);
  for (auto& c : n.covers) r.push_back(c.first);
  return r;
}

std::vector<std::string> covered_types(const Node& n) {
  std::vector<std::string> r;
  if (n.covers.empty()) r.push_back(n.op_type);
  for (auto& c : n.covers) r.push_back(c.second);
  return r;
}

}  // namespace

std::string Plan::dump_graph() const {
  std::ostringstream os;
  const Graph& g = graph;
  os << "graph: opset " << g.opset() << ", producer '" << g.producer << "'\n";
  for (int in : g.inputs) os << "  input  " << value_desc(g.values[in]) << "\n";
  for (size_t k = 0; k < device_nodes.size(); ++k) {
    const Node& n = g.nodes[device_nodes[k]];
    os << "  [" << k << "] " << covered_ops(n) << " '" << n.name << "' (";
    bool first = true;
    for (int in : n.inputs) {
      if (in < 0) continue;
      os << (first ? "" : ", ") << g.values[in].name << (g.values[in].data ? "*" : "");
      first = false;
    }
    if (n.epilogue.residual >= 0) os << (first ? "" : ", ") << "+" << g.values[n.epilogue.residual].name;
    os << ") -> ";
    first = true;
    for (int o : n.outputs) {
      if (o < 0) continue;
      os << (first ? "" : ", ") << value_desc(g.values[o]);
      first = false;
    }
    if (n.covers.size() > 1) {
      os << "  covers:";
      for (auto& c : n.covers) os << " " << c.first;
    }
    os << "\n";
  }
  for (int o : g.outputs) os << "  output " << value_desc(g.values[o]) << (g.values[o].data ? " (constant)" : "") << "\n";
  os << "summary: " << nodes_before << " nodes before optimization (" << folded_nodes
     << " computed at plan time), " << device_nodes.size()
     << " executed nodes after, " << launches.size() << " kernel launches (* = constant input)\n";
  for (auto& r : passes) os << "  pass " << r.pass << ": " << r.detail << "\n";
  if (passes.empty()) os << "  optimizer off (-O0)\n";
  return os.str();
}

std::string Plan::dump_graph_json() const {
  std::ostringstream os;
  const Graph& g = graph;
  os << "{\"nodes\": [";
  for (size_t k = 0; k < device_nodes.size(); ++k) {
    const Node& n = g.nodes[device_nodes[k]];
    os << (k ? ",\n  " : "\n  ") << "{\"name\": " << json_str(n.name) << ", \"ops\": [";
    auto types = covered_types(n);
    for (size_t i = 0; i < types.size(); ++i) os << (i ? ", " : "") << json_str(types[i]);
    os << "], \"covers\": [";
    auto names = covered_names(n);
    for (size_t i = 0; i < names.size(); ++i) os << (i ? ", " : "") << json_str(names[i]);
    os << "], \"inputs\": [";
    bool first = true;
    for (int in : n.inputs) {
      if (in < 0) continue;
      os << (first ? "" : ", ") << json_str(g.values[in].name);
      first = false;
    }
    if (n.epilogue.residual >= 0) os << (first ? "" : ", ") << json_str(g.values[n.epilogue.residual].name);
    os << "], \"outputs\": [";
    first = true;
    for (int o : n.outputs) {
      if (o < 0) continue;
      os << (first ? "" : ", ") << json_str(g.values[o].name);
      first = false;
    }
    const Shape empty;
    os << "], \"shape\": " << shape_json(n.outputs.empty() || n.outputs[0] < 0 ? empty : g.values[n.outputs[0]].shape) << "}";
  }
  os << "\n], \"stats\": {\"nodes_before\": " << nodes_before << ", \"nodes_after\": " << device_nodes.size()
     << ", \"kernel_launches\": " << launches.size() << ", \"passes\": [";
  for (size_t i = 0; i < passes.size(); ++i)
    os << (i ? ", " : "") << "{\"pass\": " << json_str(passes[i].pass) << ", \"changes\": " << passes[i].changes
       << ", \"detail\": " << json_str(passes[i].detail) << "}";
  os << "]}}\n";
  return os.str();
}

std::string Plan::dump_plan() const {
  std::ostringstream os;
  const Graph& g = graph;
  os << "plan: " << launches.size() << " kernel launches\n";
  for (size_t i = 0; i < launches.size(); ++i) {
    const Launch& l = launches[i];
    os << "  #" << i << " " << l.kernel_name << " node '" << g.nodes[l.node].name << "' global=[";
    for (size_t k = 0; k < l.global.size(); ++k) os << (k ? "," : "") << l.global[k];
    os << "] local=";
    if (l.local.empty()) os << "auto";
    else {
      os << "[";
      for (size_t k = 0; k < l.local.size(); ++k) os << (k ? "," : "") << l.local[k];
      os << "]";
    }
    os << "\n";
  }
  if (memory_planned) {
    os << "tensors (arena offset, bytes, live steps):\n";
    for (auto& s : memory.slots) {
      const StorageGroup& grp = memory.groups[s.group];
      os << "  " << g.values[s.value].name << " arena 0 offset " << grp.offset + s.offset_in_group << " bytes " << s.bytes
         << " live [" << grp.first << ", " << (grp.last > 1000000000 ? std::string("end") : std::to_string(grp.last))
         << "] group " << s.group << "\n";
    }
    os << "peak activation bytes: " << memory.arena_bytes << " (naive " << memory.naive_bytes << ", "
       << (memory.naive_bytes ? 100.0 * memory.arena_bytes / memory.naive_bytes : 0) << "% of naive; lower bound "
       << memory.lower_bound_bytes << ", " << (memory.lower_bound_bytes ? static_cast<double>(memory.arena_bytes) / memory.lower_bound_bytes : 0)
       << "x of it)\n";
    os << "concat inputs written in place by their producers: " << memory.concat_in_place.size() << " of "
       << memory.concat_inputs << "\nslice/split outputs that are views (no copy): " << memory.output_views.size()
       << "\n";
  } else {
    os << "memory planning off: every activation has its own buffer\n";
    os << "peak activation bytes: " << activation_bytes << "\n";
  }
  os << "scratch bytes: " << scratch_bytes << "\nweight bytes: " << weight_bytes << "\n";
  return os.str();
}

std::string Plan::dump_plan_json() const {
  std::ostringstream os;
  const Graph& g = graph;
  os << "{\"tensors\": [";
  if (memory_planned)
    for (size_t i = 0; i < memory.slots.size(); ++i) {
      const auto& s = memory.slots[i];
      const StorageGroup& grp = memory.groups[s.group];
      os << (i ? ",\n  " : "\n  ") << "{\"name\": " << json_str(g.values[s.value].name)
         << ", \"arena\": 0, \"offset\": " << grp.offset + s.offset_in_group << ", \"bytes\": " << s.bytes << ", \"group\": " << s.group
         << ", \"first_step\": " << grp.first << ", \"last_step\": " << (grp.last > 1000000000 ? -1 : grp.last) << "}";
    }
  os << "\n], \"memory_planned\": " << (memory_planned ? "true" : "false")
     << ", \"peak_activation_bytes\": " << (memory_planned ? memory.arena_bytes : activation_bytes)
     << ", \"naive_activation_bytes\": " << (memory_planned ? memory.naive_bytes : activation_bytes)
     << ", \"lower_bound_bytes\": " << (memory_planned ? memory.lower_bound_bytes : 0)
     << ", \"concat_inputs_in_place\": " << memory.concat_in_place.size()
     << ", \"slice_views\": " << memory.output_views.size()
     << ", \"scratch_bytes\": " << scratch_bytes << ", \"weight_bytes\": " << weight_bytes
     << ", \"kernel_launches\": " << launches.size() << "}\n";
  return os.str();
}

}  // namespace oi
