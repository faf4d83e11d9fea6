#include "runtime/exec/plan.hpp"
#include "runtime/exec/compile_helpers.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>

#include "ops/core/activation.hpp"
#include "runtime/backend/program_bundle.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

using ocl_infer::dtype_name;
using ocl_infer::shape_to_string;

namespace {

std::string bytes_text(uint64_t b) {
  char buf[64];
  if (b >= (uint64_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(b) / (1 << 30));
  else if (b >= (uint64_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  else std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(b));
  return buf;
}

// The plan builder: the PlanSink that op build functions allocate and launch through.
class Lowering : public PlanSink {
 public:
  Lowering(Plan& p, ClRuntime& cl, const PlanOptions& o) : p_(p), cl_(cl), o_(o) {
    p_.buffers.resize(p_.compiled.graph.values.size());
  }

  ClRuntime& cl() override { return cl_; }

  DType storage_of(int id) const override { return p_.compiled.storage[id]; }

  cl_mem buffer_of(int id) override {
    BufferPtr& b = p_.buffers[id];
    if (!b) {
      const Value& v = p_.compiled.graph.values[id];
      if (!v.shape_known)
        throw ocl_infer::Error("internal: value '" + v.name + "' reached the device without a shape");
      const DType st = storage_of(id);
      const size_t bytes = static_cast<size_t>(numel(v.shape)) * ocl_infer::dtype_size(st);
      if (v.data) {
        charge(bytes, "weights");
        if (st == v.dtype) {
          b = cl_.upload_shared(v.data, v.data->bytes.data(), v.data->bytes.size());
          note_constant(b->mem, v.data->bytes.data(), v.data->bytes.size());
        } else {
          // Converted once here (float32 -> float16, round to nearest even; the policy kept
          // constants beyond float16's range in float32).
          auto conv = std::make_shared<const Tensor>(convert_elements(*v.data, st));
          b = cl_.upload_shared(conv, conv->bytes.data(), conv->bytes.size());
          note_constant(b->mem, conv->bytes.data(), conv->bytes.size());
        }
        p_.weight_bytes += bytes;
      } else {
        charge(bytes, "activations");
        b = cl_.alloc(bytes);
        (p_.compiled.memory_planned ? p_.scratch_bytes : p_.activation_bytes) += bytes;
      }
    }
    return b->mem;
  }

  cl_mem scratch(size_t bytes) override {
    charge(bytes, "scratch");
    p_.owned.push_back(cl_.alloc(std::max<size_t>(bytes, 4)));
    p_.scratch_bytes += bytes;
    return p_.owned.back()->mem;
  }

  // One buffer serves every step; a larger request replaces it for the steps that follow (the
  // earlier steps keep the smaller one through `owned`), so planning order decides the waste:
  // at most the sum of the increasing requests.
  cl_mem workspace(size_t bytes) override {
    if (!workspace_ || workspace_bytes_ < bytes) {
      charge(bytes, "workspace");
      workspace_ = cl_.alloc(std::max<size_t>(bytes, 4));
      workspace_bytes_ = bytes;
      p_.owned.push_back(workspace_);
      p_.scratch_bytes += bytes;
    }
    return workspace_->mem;
  }

  cl_mem constant(const void* data, size_t bytes) override {
    charge(bytes, "weights");
    p_.owned.push_back(cl_.upload(data, bytes));
    p_.weight_bytes += bytes;  // packed weights and kernel parameters
    note_constant(p_.owned.back()->mem, data, bytes);
    return p_.owned.back()->mem;
  }

  cl_mem constant_shared(std::shared_ptr<const void> owner, const void* data, size_t bytes) override {
    charge(bytes, "weights");
    p_.owned.push_back(cl_.upload_shared(std::move(owner), data, bytes));
    p_.weight_bytes += bytes;
    note_constant(p_.owned.back()->mem, data, bytes);
    return p_.owned.back()->mem;
  }

  void note_constant(cl_mem mem, const void* data, size_t bytes) {
    if (bytes > Plan::kSmallConstant) return;
    const auto* b = static_cast<const unsigned char*>(data);
    p_.small_constants[mem].assign(b, b + bytes);
  }

  // Counts `bytes` of device memory against the plan's budget before they are allocated; past it,
  // a DeviceError that says what the plan needs and names the largest tensors.
  void charge(uint64_t bytes, const char* what) {
    used_ += bytes;
    if (used_ <= o_.memory_budget) return;
    const Graph& g = p_.compiled.graph;
    std::vector<std::pair<uint64_t, int>> sizes;
    for (size_t v = 0; v < g.values.size(); ++v)
      if (g.values[v].shape_known && numel(g.values[v].shape) > 0)
        sizes.push_back({static_cast<uint64_t>(numel(g.values[v].shape)) * ocl_infer::dtype_size(g.values[v].dtype),
                         static_cast<int>(v)});
    std::sort(sizes.rbegin(), sizes.rend());
    std::string largest;
    for (size_t k = 0; k < sizes.size() && k < 3; ++k)
      largest += (k ? ", '" : "'") + g.values[sizes[k].second].name + "' " + bytes_text(sizes[k].first);
    throw ocl_infer::DeviceError("out of device memory: the plan needs at least " + bytes_text(used_) +
                                 " (the limit was passed allocating " + what + "), the limit is " +
                                 bytes_text(o_.memory_budget) + " (" + o_.budget_source + "); largest tensors: " + largest);
  }

  cl_mem error_flag(int node, const std::string& what) override {
    p_.error_flags.push_back({cl_.alloc(sizeof(cl_int)), node, what});
    return p_.error_flags.back().flag->mem;
  }

  void add_launch(Launch l) override { p_.launches.push_back(std::move(l)); }

  std::string tuned_choice(const std::string& family, const std::string& key) const override {
    return o_.tuner ? o_.tuner->lookup(family, key) : "";
  }
  bool tuning() const override { return o_.tuner && o_.tuner->tuning(); }
  void tuning_progress(const std::string& line) override {
    if (o_.tuner) o_.tuner->progress(line);
  }
  void tuned_result(const std::string& family, const std::string& key, const std::string& choice, double ms,
                    double heuristic_ms, int candidates) override {
    if (o_.tuner) o_.tuner->record(family, key, choice, ms, heuristic_ms, candidates);
  }

  void trial_begin() override {
    trial_ = Trial{p_.launches.size(), p_.owned.size(), used_, p_.weight_bytes, p_.scratch_bytes,
                   p_.activation_bytes, {}, workspace_, workspace_bytes_};
    for (size_t v = 0; v < p_.buffers.size(); ++v)
      if (!p_.buffers[v]) trial_.unallocated.push_back(static_cast<int>(v));
  }

  // The trial's launches, run on their own: one warm-up (which also allocates whatever the
  // driver defers), then chains of back-to-back repetitions (about 2 ms each), the best chain's
  // time per repetition. Chained, as in a model, the device's threads are awake and its queue
  // full; one launch timed from an idle device measured mostly the threads' wake-up (on PoCL in a
  // VM ~0.15 ms per launch, more than many kernels take), and the tuner kept choices that ran
  // 20-40 % slower inside efficientnet_b0 than the device-class choice (AMD EPYC Zen 5).
  double trial_time(double give_up_ms) override {
    cl_command_queue q = cl_.queue();
    for (size_t i = trial_.launches; i < p_.launches.size(); ++i) resolve_launch(cl_, p_.launches[i]);
    auto run_chain = [&](int reps) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < reps; ++r)
        for (size_t i = trial_.launches; i < p_.launches.size(); ++i) {
          const Launch& l = p_.launches[i];
          cl_check(clEnqueueNDRangeKernel(q, l.kernel.get(), static_cast<cl_uint>(l.global.size()), nullptr,
                                          l.global.data(), l.local.empty() ? nullptr : l.local.data(), 0, nullptr,
                                          nullptr),
                   ("clEnqueueNDRangeKernel(" + l.kernel_name + ")").c_str());
        }
      cl_check(clFinish(q), "clFinish");
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps;
    };
    const double first = run_chain(1);
    if (first > give_up_ms) return std::numeric_limits<double>::infinity();
    const int reps = static_cast<int>(std::clamp(2.0 / std::max(first, 1e-3), 2.0, 50.0));
    double best = std::numeric_limits<double>::infinity();
    for (int r = 0; r < 4; ++r) {
      const double t = run_chain(reps);
      best = std::min(best, t);
      if (t > give_up_ms) return std::numeric_limits<double>::infinity();
    }
    return best;
  }

  void trial_end() override {
    p_.launches.resize(trial_.launches);
    for (size_t i = trial_.owned; i < p_.owned.size(); ++i) p_.small_constants.erase(p_.owned[i]->mem);
    p_.owned.resize(trial_.owned);
    for (int v : trial_.unallocated)
      if (p_.buffers[v]) {
        p_.small_constants.erase(p_.buffers[v]->mem);
        p_.buffers[v].reset();
      }
    used_ = trial_.used;
    p_.weight_bytes = trial_.weight_bytes;
    p_.scratch_bytes = trial_.scratch_bytes;
    p_.activation_bytes = trial_.activation_bytes;
    workspace_ = trial_.workspace;
    workspace_bytes_ = trial_.workspace_bytes;
  }

  bool input_in_place(int step, int slot) const override { return p_.compiled.steps[step].input_in_place(slot); }
  bool output_is_view(int step, int slot) const override { return p_.compiled.steps[step].output_is_view(slot); }

  std::string forced_variant(const std::string& family) const override {
    auto it = o_.forced_variants.find(family);
    return it == o_.forced_variants.end() ? "" : it->second;
  }
  bool shape_generic() const override { return o_.shape_generic; }

  // Output 0 of a view node shares input 0's storage: the buffer planner placed both at the same
  // arena offset (a view of a view at an offset has its own sub-buffer over the same bytes), or,
  // without planning, the output takes the input's buffer.
  void link_view(const Node& n) {
    const int in = n.inputs[0], out = n.outputs[0];
    const CompiledGraph& c = p_.compiled;
    if (c.memory_planned) {
      const auto& at = c.arena_offset;
      const bool same = static_cast<size_t>(std::max(in, out)) < at.size() && at[out] >= 0 && at[out] == at[in] &&
                        c.arena_of[out] == c.arena_of[in];
      if (!same)
        throw ocl_infer::Error("internal: '" + c.graph.values[out].name +
                               "' is a view but the buffer planner gave it storage of its own");
      return;
    }
    buffer_of(in);
    p_.buffers[out] = p_.buffers[in];
  }

 private:
  Plan& p_;
  ClRuntime& cl_;
  const PlanOptions& o_;
  uint64_t used_ = 0;
  // What trial_end() restores.
  struct Trial {
    size_t launches = 0, owned = 0;
    uint64_t used = 0;
    size_t weight_bytes = 0, scratch_bytes = 0, activation_bytes = 0;
    std::vector<int> unallocated;  // values without a buffer when the trial began
    BufferPtr workspace;
    size_t workspace_bytes = 0;
  } trial_;
  BufferPtr workspace_;  // see workspace()
  size_t workspace_bytes_ = 0;
};

}  // namespace

Plan build_plan(const Graph& model, const std::map<int, const Tensor*>& inputs, const std::set<int>& plan_time,
                ClRuntime& cl, const PlanOptions& options) {
  Plan p;
  p.shape_generic = options.shape_generic;
  CompileOptions co;
  co.optimizer = options.optimizer;
  co.precision = options.precision;
  co.fp32_ops = options.fp32_ops;
  co.plan_memory = options.plan_memory;
  co.alignment = cl.base_addr_align();
  co.max_arena_bytes = cl.info().max_alloc_bytes;
  co.max_value_bytes = options.memory_budget;
  co.allow_segments = options.allow_segments;
  {
    // fp16 weights as float32 where halves are converted in software (see CompileOptions).
    const char* e = std::getenv("OCL_INFER_FP16_WEIGHTS");
    const std::string mode = e ? e : "";
    co.widen_fp16_constants = mode == "widen" || (mode != "half" && cl.caps().is_cpu() && !cl.caps().fp16);
  }
  using clock = std::chrono::steady_clock;
  const auto ms = [](clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  const auto t_start = clock::now();
  p.compiled = compile(model, inputs, plan_time, co);
  const auto t_graph = clock::now();
  p.phases.graph_ms = ms(t_start, t_graph);
  const double upload_before = cl.upload_ms();
  const CompiledGraph& c = p.compiled;
  const Graph& g = c.graph;

  Lowering sink(p, cl, options);
  if (c.memory_planned) {
    const MemoryPlan& mp = c.memory;
    std::vector<BufferPtr> arenas;
    for (size_t a = 0; a < mp.arena_sizes.size(); ++a) {
      sink.charge(mp.arena_sizes[a], "activations");
      arenas.push_back(cl.alloc(mp.arena_sizes[a]));
      p.owned.push_back(arenas.back());  // keeps the arena alive with the plan
    }
    // One sub-buffer per distinct region: values placed at the same offset with the same size
    // share it (mobilenet_v2: 34 sub-buffers instead of 169).
    std::map<std::tuple<int, size_t, size_t>, BufferPtr> regions;
    const auto region = [&](int arena, size_t offset, size_t bytes) {
      bytes = std::max<size_t>(bytes, 4);
      BufferPtr& b = regions[{arena, offset, bytes}];
      if (!b) b = cl.sub_buffer(arenas[arena], offset, bytes);
      return b;
    };
    std::vector<BufferPtr> group_buf(mp.groups.size());
    for (size_t gi = 0; gi < mp.groups.size(); ++gi)
      if (!mp.groups[gi].values.empty())
        group_buf[gi] = region(mp.groups[gi].arena, mp.groups[gi].offset, mp.groups[gi].bytes);
    for (auto& slot : mp.slots) {
      const StorageGroup& grp = mp.groups[slot.group];
      p.buffers[slot.value] = slot.offset_in_group == 0
                                  ? group_buf[slot.group]
                                  : region(grp.arena, grp.offset + slot.offset_in_group, slot.bytes);
    }
    p.activation_bytes = mp.arena_bytes;
  }
  for (size_t k = 0; k < c.steps.size(); ++k) {
    const int ni = c.steps[k].node;
    const Node& n = g.nodes[ni];
    const OpDef* def = find_op(g, n);
    const size_t before = p.launches.size();
    if (def->traits.view) sink.link_view(n);
    BuildContext ctx(g, ni, static_cast<int>(k), sink);
    def->build_fn(ctx);
    // Every output exists on the device even when no launch writes it (an output that is a view
    // placed by the planner, a Concat whose inputs all sit in place).
    for (int o : n.outputs)
      if (o >= 0 && !g.values[o].data) sink.buffer_of(o);
    if (p.launches.size() > before) {
      // The node's work goes to its most repeated kernel (a recurrent layer's step, spread over
      // its launches), else to its last launch (the product after a packing pass).
      std::map<std::string, std::pair<int, size_t>> kernels;  // name -> launches, last position
      for (size_t i = before; i < p.launches.size(); ++i) {
        auto& e = kernels[p.launches[i].kernel_name];
        e.first++;
        e.second = i;
      }
      std::string pick;
      std::pair<int, size_t> best{0, 0};
      for (auto& [name, e] : kernels)
        if (e > best) best = e, pick = name;
      const double share = 1.0 / best.first;
      const double flops = node_flops(g, ni) * share, bytes = node_bytes(g, ni) * share;
      for (size_t i = before; i < p.launches.size(); ++i)
        if (p.launches[i].kernel_name == pick) {
          p.launches[i].flops = flops;
          p.launches[i].bytes = bytes;
        }
    }
    p.step_launches.push_back({before, p.launches.size()});
  }
  // Graph outputs and inputs need buffers even when no kernel touched them (an input that is
  // also an output).
  for (int o : g.outputs)
    if (!g.values[o].data) sink.buffer_of(o);
  for (int in : g.inputs)
    if (!g.values[in].data) sink.buffer_of(in);
  const auto t_lowered = clock::now();
  p.phases.lower_ms = ms(t_graph, t_lowered);
  p.phases.upload_ms = cl.upload_ms() - upload_before;
  // First-run kernels in place of the plan's own where those are not compiled yet (a cold start
  // on a driver that compiles at first launch; runtime/exec/compile_helpers.hpp). In a model
  // that runs in segments, the first segment's plan (the session's own; later segments' plans
  // are built without them). Not for a variant the user forced.
  if (options.first_run_kernels) {
    // Launches whose programs are not built yet, of variants the user did not force; of those, the
    // ones whose first-run kernel is unoptimised code (unoptimized_first_run).
    std::vector<bool> eligible(p.launches.size());
    for (size_t i = 0; i < p.launches.size(); ++i)
      eligible[i] = !p.launches[i].kernel && p.launches[i].variant.source != "forced" &&
                    !p.launches[i].options.empty();  // (empty tiered_options means "not tiered")
    const std::vector<bool> unoptimized = unoptimized_first_run(p.launches, eligible, cl.caps());
    bool any = false;
    for (size_t i = 0; i < p.launches.size(); ++i)
      any |= eligible[i] && (!p.launches[i].first_run_options.empty() || unoptimized[i]);
    if (any) {
      p.tier_id = tier_plan_id(cl, p.launches);
      std::vector<std::pair<std::string, std::string>> compiled;
      const TierState state = tier_state(cl, p.tier_id, &compiled);
      if (state == TierState::Done) {
        // The background process compiled the plan's own programs: that bundle, from the
        // driver's cache.
        cl.build_bundle_again(compiled);
      } else if (state != TierState::Failed) {
        std::vector<std::pair<std::string, std::string>> own;
        for (const Launch& l : p.launches)
          if (!l.kernel) own.push_back({l.file, l.options});
        p.tier_bundle = cl.fresh_bundle(own);
        // Unless an earlier process ran the plan's own kernels (the ledger lists them).
        if (state == TierState::Running || !own_kernels_known(cl, p))
          for (size_t i = 0; i < p.launches.size(); ++i) {
            Launch& l = p.launches[i];
            if (!eligible[i] || (l.first_run_options.empty() && !unoptimized[i])) continue;
            l.tiered_options = l.options;
            l.options = (l.first_run_options.empty() ? l.options : l.first_run_options) +
                        (unoptimized[i] ? kUnoptimizedFlag : "");
            ++p.first_run_kernels;
            p.unoptimized_first_run += unoptimized[i] ? 1 : 0;
          }
      }
    }
  }
  // The programs not built yet go into one bundle (one driver build instead of one per program).
  {
    std::vector<std::pair<std::string, std::string>> units;
    for (const Launch& l : p.launches)
      if (!l.kernel) units.push_back({l.file, l.options});
    cl.build_bundle(units);
  }
  // The programs have been building in parallel since their first launch was added.
  for (Launch& l : p.launches) {
    try {
      resolve_launch(cl, l);
    } catch (const ocl_infer::KernelBuildError& e) {
      throw ocl_infer::KernelBuildError(describe_node(g, g.nodes[l.node]) + ": " + e.what());
    }
  }
  p.phases.programs_ms = ms(t_lowered, clock::now());
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

const char* precision_name(ocl_infer::Precision p) {
  switch (p) {
    case ocl_infer::Precision::Float32: return "fp32";
    case ocl_infer::Precision::Float16: return "fp16";
  }
  return "?";
}

std::string value_desc(const Value& v) {
  return v.name + ":" + (v.dtype == DType::Undefined ? "?" : dtype_name(v.dtype)) + shape_to_string(v.shape);
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
  const Graph& g = compiled.graph;
  os << "graph: opset " << g.opset() << ", producer '" << g.producer << "'\n";
  for (int in : g.inputs) os << "  input  " << value_desc(g.values[in]) << "\n";
  for (size_t k = 0; k < compiled.steps.size(); ++k) {
    const Node& n = g.nodes[compiled.steps[k].node];
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
  os << "summary: " << compiled.nodes_before << " nodes before optimization (" << compiled.folded_nodes
     << " computed at plan time), " << compiled.steps.size()
     << " executed nodes after, " << launches.size() << " kernel launches (* = constant input)\n";
  for (auto& r : compiled.passes) os << "  pass " << r.pass << ": " << r.detail << "\n";
  if (compiled.passes.empty()) os << "  optimizer off (-O0)\n";
  return os.str();
}

std::string Plan::dump_graph_json() const {
  std::ostringstream os;
  const Graph& g = compiled.graph;
  os << "{\"nodes\": [";
  for (size_t k = 0; k < compiled.steps.size(); ++k) {
    const Node& n = g.nodes[compiled.steps[k].node];
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
  os << "\n], \"stats\": {\"nodes_before\": " << compiled.nodes_before << ", \"nodes_after\": " << compiled.steps.size()
     << ", \"kernel_launches\": " << launches.size() << ", \"passes\": [";
  for (size_t i = 0; i < compiled.passes.size(); ++i)
    os << (i ? ", " : "") << "{\"pass\": " << json_str(compiled.passes[i].pass) << ", \"changes\": "
       << compiled.passes[i].changes << ", \"detail\": " << json_str(compiled.passes[i].detail) << "}";
  os << "]}}\n";
  return os.str();
}

std::string Plan::dump_plan() const {
  std::ostringstream os;
  const Graph& g = compiled.graph;
  os << "plan: " << launches.size() << " kernel launches, precision " << precision_name(compiled.precision) << "\n";
  // A node's repeated launches (a recurrent layer's steps: one kernel, or two alternating) print
  // once, with their count.
  auto same = [&](size_t a, size_t b) {
    const Launch &x = launches[a], &y = launches[b];
    return x.node == y.node && x.kernel_name == y.kernel_name && x.global == y.global && x.local == y.local &&
           x.variant.variant == y.variant.variant && x.variant.params == y.variant.params;
  };
  for (size_t i = 0; i < launches.size();) {
    size_t period = 1, reps = 1;
    for (size_t p = 1; p <= 2; ++p) {
      size_t r = 1;
      while (i + (r + 1) * p <= launches.size()) {
        bool all = true;
        for (size_t q = 0; q < p && all; ++q) all = same(i + q, i + r * p + q);
        if (!all) break;
        ++r;
      }
      if (r >= 3 && r * p > reps * period) period = p, reps = r;
    }
    for (size_t q = 0; q < period; ++q) {
      const Launch& l = launches[i + q];
      os << "  #" << i + q;
      if (reps > 1) os << " (+" << reps - 1 << " more every " << period << ")";
      os << " " << l.kernel_name << " node '" << g.nodes[l.node].name << "' global=[";
      for (size_t k = 0; k < l.global.size(); ++k) os << (k ? "," : "") << l.global[k];
      os << "] local=";
      if (l.local.empty()) os << "auto";
      else {
        os << "[";
        for (size_t k = 0; k < l.local.size(); ++k) os << (k ? "," : "") << l.local[k];
        os << "]";
      }
      if (!l.variant.family.empty()) {
        os << " variant " << l.variant.family << "=" << l.variant.variant;
        bool first = true;
        for (auto& [k, v] : l.variant.params) os << (first ? ":" : ",") << k << "=" << v, first = false;
        os << " (" << l.variant.source << ")";
      }
      // Running its first-run kernel until the tier-up (runtime/exec/compile_helpers.hpp).
      if (!l.tiered_options.empty()) os << " first-run kernel";
      os << "\n";
    }
    i += period * reps;
  }
  if (compiled.memory_planned) {
    const MemoryPlan& memory = compiled.memory;
    os << "tensors (arena offset, bytes, storage, live steps):\n";
    for (auto& s : memory.slots) {
      const StorageGroup& grp = memory.groups[s.group];
      os << "  " << g.values[s.value].name << " arena " << grp.arena << " offset " << grp.offset + s.offset_in_group << " bytes " << s.bytes
         << " " << dtype_name(compiled.storage[s.value]) << " live [" << grp.first << ", "
         << (grp.last > 1000000000 ? std::string("end") : std::to_string(grp.last)) << "] group " << s.group << "\n";
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
  const Graph& g = compiled.graph;
  const MemoryPlan& memory = compiled.memory;
  const bool planned = compiled.memory_planned;
  auto sizes = [](const std::vector<size_t>& v) {
    std::string r = "[";
    for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + std::to_string(v[i]);
    return r + "]";
  };
  auto operands = [&](const std::vector<int>& ids) {
    std::string r = "[";
    bool first = true;
    for (int v : ids) {
      if (v < 0) continue;
      r += std::string(first ? "" : ", ") + "{\"name\": " + json_str(g.values[v].name) + ", \"dtype\": " +
           json_str(dtype_name(g.values[v].dtype)) + ", \"storage\": " +
           json_str(dtype_name(compiled.storage[v])) +
           ", \"constant\": " + (g.values[v].data ? "true" : "false") + "}";
      first = false;
    }
    return r + "]";
  };
  os << "{\"precision\": \"" << precision_name(compiled.precision) << "\", \"launches\": [";
  for (size_t i = 0; i < launches.size(); ++i) {
    const Launch& l = launches[i];
    const Node& n = g.nodes[l.node];
    os << (i ? ",\n  " : "\n  ") << "{\"index\": " << i << ", \"step\": " << l.step << ", \"node\": " << json_str(n.name)
       << ", \"nodes\": [";
    auto names = covered_names(n);
    for (size_t k = 0; k < names.size(); ++k) os << (k ? ", " : "") << json_str(names[k]);
    os << "], \"op_types\": [";
    auto types = covered_types(n);
    for (size_t k = 0; k < types.size(); ++k) os << (k ? ", " : "") << json_str(types[k]);
    os << "], \"kernel\": " << json_str(l.kernel_name) << ", \"global\": " << sizes(l.global)
       << ", \"local\": " << (l.local.empty() ? std::string("null") : sizes(l.local)) << ", \"variant\": ";
    if (l.variant.family.empty()) {
      os << "null";
    } else {
      os << "{\"family\": " << json_str(l.variant.family) << ", \"name\": " << json_str(l.variant.variant)
         << ", \"params\": {";
      bool first = true;
      for (auto& [k, v] : l.variant.params) os << (first ? "" : ", ") << json_str(k) << ": " << v, first = false;
      os << "}, \"source\": " << json_str(l.variant.source) << "}";
    }
    os << ", \"first_run_kernel\": " << (l.tiered_options.empty() ? "false" : "true");
    std::vector<int> ins = n.inputs;
    if (n.epilogue.residual >= 0) ins.push_back(n.epilogue.residual);
    os << ", \"inputs\": " << operands(ins) << ", \"outputs\": " << operands(n.outputs) << "}";
  }
  os << "\n], \"tensors\": [";
  if (planned)
    for (size_t i = 0; i < memory.slots.size(); ++i) {
      const auto& s = memory.slots[i];
      const StorageGroup& grp = memory.groups[s.group];
      os << (i ? ",\n  " : "\n  ") << "{\"name\": " << json_str(g.values[s.value].name)
         << ", \"arena\": " << grp.arena << ", \"offset\": " << grp.offset + s.offset_in_group << ", \"bytes\": " << s.bytes
         << ", \"storage\": " << json_str(dtype_name(compiled.storage[s.value])) << ", \"group\": " << s.group
         << ", \"first_step\": " << grp.first << ", \"last_step\": " << (grp.last > 1000000000 ? -1 : grp.last) << "}";
    }
  os << "\n], \"memory_planned\": " << (planned ? "true" : "false")
     << ", \"peak_activation_bytes\": " << (planned ? memory.arena_bytes : activation_bytes)
     << ", \"naive_activation_bytes\": " << (planned ? memory.naive_bytes : activation_bytes)
     << ", \"lower_bound_bytes\": " << (planned ? memory.lower_bound_bytes : 0)
     << ", \"concat_inputs_in_place\": " << memory.concat_in_place.size()
     << ", \"slice_views\": " << memory.output_views.size()
     << ", \"scratch_bytes\": " << scratch_bytes << ", \"weight_bytes\": " << weight_bytes
     << ", \"kernel_launches\": " << launches.size() << "}\n";
  return os.str();
}

}  // namespace oi
