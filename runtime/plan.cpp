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
        p_.activation_bytes += bytes;
      }
    }
    return b->mem;
  }

  void alias(int out, int in) override {
    buffer_of(in);
    p_.buffers[out] = p_.buffers[in];
  }

  cl_mem params(const void* data, size_t bytes) override {
    p_.params.push_back(cl_.upload(data, bytes));
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
    bool any = std::any_of(n.outputs.begin(), n.outputs.end(),
                           [&](int o) { return o >= 0 && needed[o]; });
    if (!any) continue;
    live[i] = true;
    for (int in : n.inputs)
      if (in >= 0) needed[in] = true;
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

Plan build_plan(const Graph& model, const std::map<int, const Tensor*>& inputs,
                const std::set<int>& plan_time, ClRuntime& cl) {
  Plan p;
  p.graph = model;
  Graph& g = p.graph;
  for (auto& [id, t] : inputs) {
    Value& v = g.values[id];
    v.shape = t->shape;
    v.shape_known = true;
    if (plan_time.count(id)) v.data = std::make_shared<const Tensor>(*t);
  }
  Builder builder(p, cl);
  for (int ni : live_nodes(g)) {
    Node& n = g.nodes[ni];
    const OpDef* def = find_op(n.domain, n.op_type, g.opset(n.domain));
    if (!def)
      throw ocl_infer::UnsupportedError(describe_node(g, n) + ": operator is not supported");
    OpContext ctx(g, ni, &builder);
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
    if (host_ok) {
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
      p.host_nodes.push_back(ni);
      continue;
    }
    if (!def->build)
      ctx.unsupported("can only be computed at plan time, but an input is not known then");
    const size_t before = p.launches.size();
    def->build(ctx);
    if (p.launches.size() > before) {
      p.launches.back().flops = node_flops(g, n);
      p.launches.back().bytes = node_bytes(g, n);
    }
    p.device_nodes.push_back(ni);
  }
  // Graph outputs that are graph inputs or produced by device nodes need buffers even when no
  // kernel touched them (an Identity-only graph, an input that is also an output).
  for (int o : g.outputs)
    if (!g.values[o].data) builder.buffer_of(o);
  for (int in : g.inputs)
    if (!g.values[in].data) builder.buffer_of(in);
  return p;
}

std::string Plan::dump_graph() const {
  std::ostringstream os;
  const Graph& g = graph;
  os << "graph: " << g.nodes.size() << " nodes, opset " << g.opset() << ", producer '"
     << g.producer << "'\n";
  for (int in : g.inputs) os << "  input  " << value_desc(g.values[in]) << "\n";
  auto where = [&](int ni) {
    if (std::find(host_nodes.begin(), host_nodes.end(), ni) != host_nodes.end()) return "host  ";
    if (std::find(device_nodes.begin(), device_nodes.end(), ni) != device_nodes.end())
      return "device";
    return "dead  ";
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    os << "  [" << i << "] " << where(static_cast<int>(i)) << " " << n.op_type << " '" << n.name
       << "' (";
    bool first = true;
    for (int in : n.inputs) {
      if (in < 0) continue;
      os << (first ? "" : ", ") << g.values[in].name;
      first = false;
    }
    os << ") -> ";
    first = true;
    for (int o : n.outputs) {
      if (o < 0) continue;
      os << (first ? "" : ", ") << value_desc(g.values[o]);
      first = false;
    }
    os << "\n";
  }
  for (int o : g.outputs) os << "  output " << value_desc(g.values[o]) << "\n";
  os << "summary: " << device_nodes.size() << " device nodes, " << host_nodes.size()
     << " evaluated at plan time, " << (g.nodes.size() - device_nodes.size() - host_nodes.size())
     << " dead\n";
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
  os << "activation bytes: " << activation_bytes << "\nweight bytes: " << weight_bytes << "\n";
  return os.str();
}

}  // namespace oi
