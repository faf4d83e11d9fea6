// The public Session: loader -> Graph -> Plan (re-planned when input shapes change) -> Executor.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <future>
#include <mutex>
#include <set>
#include <sstream>
#include <system_error>

#include "ocl_infer/ocl_infer.hpp"
#include "onnx/loader.hpp"
#include "ops/core/op_def.hpp"
#include "ops/variants.hpp"
#include "runtime/backend/host_memory.hpp"
#include "runtime/backend/slow_notice.hpp"
#include "runtime/exec/compile_helpers.hpp"
#include "runtime/exec/executor.hpp"
#include "runtime/exec/plan.hpp"
#include "runtime/exec/profiler.hpp"

namespace ocl_infer {

using oi::Graph;

namespace {

// A warm start whose program loads took at least this long hands them to a background binary
// store (one and a half programs' preprocessing on PoCL); below it, test suites' small models.
// $OCL_INFER_STORE_BINARIES=background hands them over at any warm start, =0 never.
constexpr double kStoreBinariesAboveMs = 30;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

ValueInfo info_of(const oi::Value& v) {
  ValueInfo i;
  i.name = v.name;
  i.dtype = v.dtype;
  i.shape = v.shape;
  i.dim_names = v.dim_names;
  i.dim_names.resize(i.shape.size());
  return i;
}

}  // namespace

struct Session::Impl {
  // Serialises run(), and everything that reads the plan or the profile: one session runs one
  // inference at a time; sessions share nothing.
  mutable std::mutex mu;
  SessionOptions options;
  Graph model;
  std::unique_ptr<oi::ClRuntime> cl;
  std::unique_ptr<oi::KeepWarm> warm;  // uses cl's context: declared after it, destroyed before it
  std::vector<ValueInfo> inputs, outputs;
  std::set<int> plan_time;
  std::unique_ptr<oi::Plan> plan;
  bool plan_ran = false;  // the plan has run once (its kernels' first launches are behind it)
  std::string plan_key;
  // Plans for other input shapes, the most recently used first: run() swaps them in and out, so
  // that a model fed alternating shapes (two batch sizes, OCR lines of a few widths) plans each
  // once instead of at every change (ppocr_v4_rec alternating widths 320 and 100: 26-30 and 21 ms
  // a run against 13 and 5 ms for repeats). At most kMaxKeptPlans, their device bytes together at
  // most a quarter of the memory limit; a plan built while some are kept gets the rest of the
  // limit, and where that is not enough they are dropped and the plan built with all of it.
  struct KeptPlan {
    std::string key;
    std::unique_ptr<oi::Plan> plan;
    bool ran = false;
  };
  std::deque<KeptPlan> kept_plans;
  // Shape-generic plans (SessionOptions::shape_generic, PlanOptions::shape_generic): set from the
  // start with 1, or when a second input shape is planned with -1.
  bool generic_plans = false;
  std::string first_plan_key;  // the input shapes of the session's first plan
  int shape_generic_mode() const {
    if (const char* e = std::getenv("OCL_INFER_SHAPE_GENERIC"); e && (std::string(e) == "0" || std::string(e) == "1"))
      return e[0] - '0';
    return options.shape_generic;
  }
  static constexpr size_t kMaxKeptPlans = 8;
  static uint64_t plan_bytes(const oi::Plan& p) {
    return static_cast<uint64_t>(p.activation_bytes) + p.weight_bytes + p.scratch_bytes;
  }
  uint64_t kept_bytes() const {
    uint64_t b = 0;
    for (auto& k : kept_plans) b += plan_bytes(*k.plan);
    return b;
  }
  // Moves the current plan (if any) to the front of kept_plans, then drops the least recently
  // used ones beyond the limits.
  void keep_current_plan() {
    if (plan) kept_plans.push_front({plan_key, std::move(plan), plan_ran});
    plan_ran = false;
    plan_key.clear();
    while (!kept_plans.empty() && (kept_plans.size() > kMaxKeptPlans || kept_bytes() > memory_limit / 4))
      kept_plans.pop_back();
    stats.plans_kept = static_cast<int>(kept_plans.size());
  }
  // Makes the kept plan for `key` the current one; false when none is kept.
  bool take_kept_plan(const std::string& key) {
    for (auto it = kept_plans.begin(); it != kept_plans.end(); ++it) {
      if (it->key != key) continue;
      plan = std::move(it->plan);
      plan_ran = it->ran;
      plan_key = key;
      kept_plans.erase(it);
      stats.plans_kept = static_cast<int>(kept_plans.size());
      return true;
    }
    return false;
  }
  // Models planned in segments (data-dependent shapes, control flow decided at run time): the plan
  // above is the first segment; the later ones are cached by the shapes (and plan-time values) of
  // what the earlier segments computed, so that a run with the same counts plans nothing.
  struct SegmentPlan {
    std::unique_ptr<oi::Plan> plan;
    bool ran = false;
  };
  std::map<std::string, SegmentPlan> segment_plans;
  static constexpr size_t kMaxSegmentPlans = 64;
  static constexpr int kMaxSegments = 4096;
  // The plans of the last run, in order, and what happened between them (for dumps).
  std::vector<const oi::Plan*> last_segments;
  std::vector<std::string> last_syncs;
  SessionStats stats;
  oi::ProfileAccumulator profile;
  std::map<std::string, std::string> forced_variants;
  std::unique_ptr<oi::Tuner> tuner;
  oi::DeviceHandle device;
  // Bytes the model may use: each constant and value, and the plan's device allocations together.
  uint64_t memory_limit = ~uint64_t{0};
  std::string memory_limit_source;

  void log(const std::string& s) const {
    if (options.log) options.log(s);
  }

  // The memory limit the loader checks the model's constants against while the device is still
  // being opened: the explicit one, else the host memory usable by this process (a CPU device
  // allocates all of its memory from the host; PoCL reports a global memory derived from the
  // host's and allocates lazily). Keeps a margin for what the process needs besides the plan
  // (the driver, kernel compilation, host copies of inputs and outputs).
  void host_memory_limit() {
    if (options.max_memory_bytes > 0) {
      memory_limit = options.max_memory_bytes;
      memory_limit_source = "set by --max-memory / SessionOptions::max_memory_bytes";
      return;
    }
    const oi::HostMemory host = oi::host_memory();
    const uint64_t margin = std::max<uint64_t>(uint64_t{256} << 20, host.available / 10);
    memory_limit = host.available > margin ? host.available - margin : host.available / 2;
    memory_limit_source = "host memory available to this process (" + host.limited_by + ", less a margin)";
  }

  // Picks the device; an implicit memory limit becomes the smaller of the host's and the device's
  // global memory.
  void open_device() {
    std::string spec = options.device;
    if (spec.empty())
      if (const char* env = std::getenv("OCL_INFER_DEVICE"); env && *env) spec = env;
    device = oi::select_device(spec);
    if (options.max_memory_bytes > 0) return;
    if (device.info.global_mem_bytes < memory_limit) {
      memory_limit = device.info.global_mem_bytes;
      memory_limit_source = "the device's global memory";
    }
  }

  // Opens the device on a second thread while `load` reads the model on this one: PoCL's platform
  // start-up (20-35 ms, most of it relocating LLVM) and the parse of a CNN's protobuf (10-25 ms)
  // are both single-threaded. The model is read on the calling thread because its allocations
  // belong in the main heap (the CLI prepares that heap for the model: tools/ocl_infer_main.cpp;
  // on a thread's own heap the same load took 2-3x as long). The loader checks against the host's
  // limit; the device's, when smaller, is checked once both are done. A device error wins over a
  // model error.
  template <class Load>
  void open_device_and_load(Load load) {
    host_memory_limit();
    const uint64_t load_limit = memory_limit;
    std::future<void> opening;
    try {
      opening = std::async(std::launch::async, [this] { open_device(); });
    } catch (const std::system_error&) {
      open_device();  // no thread to be had: one after the other
    }
    const auto t0 = std::chrono::steady_clock::now();
    Graph g;
    try {
      g = load(load_limit);
    } catch (...) {
      if (opening.valid()) opening.get();  // a device error first
      throw;
    }
    const double load_ms = ms_since(t0);
    if (opening.valid()) opening.get();
    if (g.constant_bytes > memory_limit)
      throw ModelError("the model's constants take " + std::to_string(g.constant_bytes) +
                       " bytes, beyond the memory limit of " + std::to_string(memory_limit) + " bytes (" +
                       memory_limit_source + ")");
    init(std::move(g), load_ms);
  }

  void init(Graph g, double load_ms) {
    model = std::move(g);
    stats.load_ms = load_ms;
    auto missing = oi::unsupported_ops(model);
    if (!missing.empty()) {
      std::string msg = "the model uses " + std::to_string(missing.size()) +
                        " unsupported operator" + (missing.size() > 1 ? "s" : "") + ": ";
      for (size_t i = 0; i < missing.size(); ++i) msg += (i ? "; " : "") + missing[i];
      throw UnsupportedError(msg);
    }
    plan_time = oi::plan_time_inputs(model);
    auto passes = oi::optimizer_passes();
    for (auto& d : options.disabled_passes)
      if (std::find(passes.begin(), passes.end(), d) == passes.end()) {
        std::string all;
        for (auto& p : passes) all += (all.empty() ? "" : ", ") + p;
        throw InputError("unknown optimizer pass '" + d + "' (passes: " + all + ")");
      }
    std::string forced = options.kernel_variants;
    if (forced.empty())
      if (const char* env = std::getenv("OCL_INFER_VARIANT")) forced = env;
    forced_variants = oi::parse_forced_variants(forced);
    const auto ops = oi::supported_ops();
    for (auto& op : options.fp32_ops)
      if (!std::binary_search(ops.begin(), ops.end(), op))
        throw InputError("fp32_ops: '" + op + "' is not an operator ocl-infer implements");
    for (int id : model.inputs) inputs.push_back(info_of(model.values[id]));
    for (size_t k = 0; k < model.outputs.size(); ++k) {
      const oi::Value& v = model.values[model.outputs[k]];
      // Before the first plan, a computed output has no type yet: report what the file declares.
      const bool use_declared = v.dtype == DType::Undefined && k < model.declared_outputs.size() &&
                                model.declared_outputs[k].dtype != DType::Undefined;
      ValueInfo info = info_of(use_declared ? model.declared_outputs[k] : v);
      info.name = v.name;
      outputs.push_back(info);
    }
    const oi::DeviceHandle& dev = device;
    log("device: " + dev.info.name + " (" + dev.info.type + ", " + dev.info.platform + ", " +
        dev.info.opencl_c_version + ")");
    cl = std::make_unique<oi::ClRuntime>(dev, options.cache_dir, options.log, options.profiling);
    log("device capabilities: " + cl->caps().summary());
    const oi::KeepWarm::Setting warm_setting =
        oi::KeepWarm::resolve(options.keep_warm, cl->caps().is_cpu(), cl->caps().compute_units);
    warm = std::make_unique<oi::KeepWarm>(*cl, warm_setting);
    stats.keep_warm = warm->markers_per_launch();
    stats.keep_warm_spin = warm->spinning();
    stats.keep_warm_trial_runs = warm->trial_runs_left();
    if (warm_setting.why.find("is not") != std::string::npos) log("warning: " + warm_setting.why);
    log("keep-warm: " +
        (stats.keep_warm_spin ? std::string("an idle-worker spin kernel before each kernel launch")
         : stats.keep_warm    ? std::to_string(stats.keep_warm) + " idle-worker markers per kernel launch"
                              : std::string("off")) +
        " (" + warm_setting.why + ")");
    cl->check_loops();
    std::string tuning_path = options.tuning_cache;
    if (tuning_path.empty())
      if (const char* env = std::getenv("OCL_INFER_TUNING_CACHE"); env && *env) tuning_path = env;
    if (tuning_path.empty() && !cl->cache_dir().empty()) tuning_path = cl->cache_dir() + "/tuning.tsv";
    if (tuning_path == "off") tuning_path.clear();
    if (!(options.tune_budget_seconds >= 0)) throw InputError("the tuning budget must be a number of seconds >= 0");
    tuner = std::make_unique<oi::Tuner>(
        tuning_path,
        oi::tuning_device_key(dev.info.platform, dev.info.name, dev.info.driver_version, dev.info.device_version),
        oi::kernel_sources_hash(), options.tune, options.tune_budget_seconds, options.log);
    stats.tuning_cache = tuning_path;
  }

  // Checks the fed tensors against the model's inputs; returns them by value id.
  std::map<int, const Tensor*> check_inputs(const std::map<std::string, Tensor>& fed) const {
    std::map<int, const Tensor*> r;
    std::string expected;
    for (auto& i : inputs) expected += (expected.empty() ? "" : ", ") + i.name;
    for (auto& [name, t] : fed) {
      bool known = false;
      for (auto& i : inputs) known |= i.name == name;
      if (!known)
        throw InputError("the model has no input named '" + name + "' (inputs: " + expected + ")");
    }
    for (size_t k = 0; k < inputs.size(); ++k) {
      const ValueInfo& want = inputs[k];
      auto it = fed.find(want.name);
      if (it == fed.end()) throw InputError("input '" + want.name + "' was not given (inputs: " + expected + ")");
      const Tensor& t = it->second;
      if (t.dtype != want.dtype)
        throw InputError("input '" + want.name + "' must be " + dtype_name(want.dtype) + ", got " +
                         dtype_name(t.dtype));
      for (auto d : t.shape)
        if (d < 0) throw InputError("input '" + want.name + "' has a negative dimension");
      if (!want.shape.empty() || model.values[model.inputs[k]].shape_known) {
        if (t.shape.size() != want.shape.size())
          throw InputError("input '" + want.name + "' must have rank " +
                           std::to_string(want.shape.size()) + " " + shape_to_string(want.shape) +
                           ", got " + shape_to_string(t.shape));
        for (size_t d = 0; d < t.shape.size(); ++d)
          if (want.shape[d] >= 0 && want.shape[d] != t.shape[d])
            throw InputError("input '" + want.name + "' must have shape " +
                             shape_to_string(want.shape) + ", got " + shape_to_string(t.shape));
      }
      if (t.bytes.size() != static_cast<size_t>(t.numel()) * dtype_size(t.dtype))
        throw InputError("input '" + want.name + "' holds " + std::to_string(t.bytes.size()) +
                         " bytes, but shape " + shape_to_string(t.shape) + " needs " +
                         std::to_string(t.numel() * dtype_size(t.dtype)));
      r[model.inputs[k]] = &t;
    }
    return r;
  }

  // Value ids for RunOptions::fetch against the current plan.
  std::vector<int> fetch_ids(const std::vector<std::string>& names) const { return fetch_ids(*plan, names, false); }
  // With `partial`, names the plan does not compute are skipped instead of refused (a segment of
  // a segmented run computes only some of them).
  std::vector<int> fetch_ids(const oi::Plan& plan, const std::vector<std::string>& names, bool partial) const {
    std::vector<int> r;
    if (names.empty()) return r;
    const Graph& g = plan.graph();
    std::vector<int> written;  // every value an executed node writes
    for (const oi::Step& step : plan.compiled.steps)
      for (int o : g.nodes[step.node].outputs)
        if (o >= 0) written.push_back(o);
    if (names.size() == 1 && names[0] == "*") return written;
    for (const std::string& name : names) {
      const int id = g.find_value(name);
      if (id >= 0 && (std::find(written.begin(), written.end(), id) != written.end() || g.values[id].data ||
                      std::find(g.inputs.begin(), g.inputs.end(), id) != g.inputs.end())) {
        r.push_back(id);
        continue;
      }
      if (partial) continue;
      // Say what happened to it: fused into a node, or never a value of this model.
      std::string why = "the model has no value named '" + name + "'";
      const int mid = model.find_value(name);
      if (mid >= 0) {
        why = "'" + name + "' is not computed by the optimized graph";
        std::string producer;
        for (const oi::Node& mn : model.nodes)
          if (std::find(mn.outputs.begin(), mn.outputs.end(), mid) != mn.outputs.end()) producer = mn.name;
        for (const oi::Step& step : plan.compiled.steps) {
          const oi::Node& n = g.nodes[step.node];
          for (auto& cover : n.covers)
            if (!producer.empty() && cover.first == producer)
              why += " (fused into node '" + n.name + "', " + oi::covered_ops(n) + ")";
        }
        why += "; run with optimization_level 0 to fetch every ONNX value";
      }
      throw InputError("cannot fetch: " + why);
    }
    return r;
  }

  static std::string key_of(const std::map<int, const Tensor*>& ins, const std::set<int>& pt) {
    std::string key;
    for (auto& [id, t] : ins) {
      key += std::to_string(id) + ":" + shape_to_string(t->shape) + ";";
      if (pt.count(id)) key.append(reinterpret_cast<const char*>(t->bytes.data()), t->bytes.size());
      key += "|";
    }
    return key;
  }

  // Inputs whose values are folded into the plan: those that decide shapes or control flow, when
  // they are small (SessionOptions::plan_time_input_limit). A large one (an image feeding a
  // condition) is computed on the device instead and the plan is cut where its small result is
  // needed.
  // Values read back between segments are always small enough when they decide shapes or control
  // flow (a condition, a count); only model inputs follow the option.
  static constexpr int64_t kMaxReadBackPlanTime = 4096;
  std::set<int> small_plan_time(const std::set<int>& wanted, const std::map<int, const Tensor*>& ins) const {
    std::set<int> r;
    for (int id : wanted) {
      auto it = ins.find(id);
      const bool model_input = std::find(model.inputs.begin(), model.inputs.end(), id) != model.inputs.end();
      const int64_t limit = model_input ? options.plan_time_input_limit : kMaxReadBackPlanTime;
      if (it != ins.end() && it->second->numel() <= limit) r.insert(id);
    }
    return r;
  }

  oi::PlanOptions plan_options() const {
    oi::PlanOptions po;
    po.optimizer.level = options.optimization_level;
    po.optimizer.disabled.insert(options.disabled_passes.begin(), options.disabled_passes.end());
    po.plan_memory = options.plan_memory;
    po.precision = options.precision;
    po.fp32_ops.insert(options.fp32_ops.begin(), options.fp32_ops.end());
    po.forced_variants = forced_variants;
    po.memory_budget = memory_limit;
    po.budget_source = memory_limit_source;
    po.tuner = tuner.get();
    po.allow_segments = true;
    po.shape_generic = generic_plans || shape_generic_mode() == 1;
    return po;
  }

  std::map<std::string, Tensor> run_segments(const std::map<int, const Tensor*>& ins, const RunOptions& ro);

  // Tier-up (runtime/exec/compile_helpers.hpp): when the plan's first run used first-run kernels.
  std::chrono::steady_clock::time_point tier_started{};
  void start_tier_up() {
    if (!oi::start_tier_up(*plan, *cl, [this](const std::string& m) { log(m); }))
      log("first run: " + oi::first_run_summary(*plan) + "; " +
          (oi::tier_state(*cl, plan->tier_id, nullptr) == oi::TierState::Running
               ? "another process compiles the plan's own kernels in the background"
               : "no background process started: a later run builds the plan with its own kernels, which "
                 "compile at their first launch"));
    // Started here or by another process (a live lock): either way the clock for giving up on a
    // helper that never comes runs from now.
    tier_started = std::chrono::steady_clock::now();
  }
  // Before a run of a plan that ran first-run kernels: builds it again with its own kernels once
  // they are compiled (from the driver's cache), or when the tier-up failed or no helper took it
  // up within 5 s (the own kernels then compile at their first launch, as without tier-up). The
  // new plan replaces the old only once built; start-up statistics stay those of the first plan.
  void tier_up(const std::map<int, const Tensor*>& ins, const std::set<int>& plan_time) {
    const oi::TierState state = oi::tier_state(*cl, plan->tier_id, nullptr);
    if (state == oi::TierState::Running) return;
    if (state == oi::TierState::None && std::chrono::steady_clock::now() - tier_started < std::chrono::seconds(5))
      return;
    oi::PlanOptions po = plan_options();
    // Done: build_plan loads the bundle the helper compiled. Otherwise the plan's own kernels.
    po.first_run_kernels = state == oi::TierState::Done;
    po.shape_generic = plan->shape_generic;  // the first shape's plan stays specialised
    const auto t0 = std::chrono::steady_clock::now();
    try {
      auto again = std::make_unique<oi::Plan>(oi::build_plan(model, ins, plan_time, *cl, po));
      if (again->first_run_kernels > 0) throw Error("internal: the plan built again has first-run kernels");
      plan = std::move(again);
    } catch (const std::exception& e) {
      log(std::string("tier-up: building the plan again failed (") + e.what() + "); it keeps its first-run kernels");
      plan->first_run_kernels = 0;  // no further attempts
      return;
    }
    char line[240];
    std::snprintf(line, sizeof line, "%s; plan built again with them in %.1f ms",
                  state == oi::TierState::Done ? "tier-up: the plan's own kernels are compiled"
                  : state == oi::TierState::Failed
                      ? "tier-up: the background compile failed; the plan's own kernels compile at their first launch"
                      : "tier-up: no background process took it up; the plan's own kernels compile at their first launch",
                  ms_since(t0));
    log(line);
    // Compiled already after a tier-up: no compile helpers, keep-warm markers from the next run on.
    plan_ran = state == oi::TierState::Done;
  }
};

std::map<std::string, Tensor> Session::Impl::run_segments(const std::map<int, const Tensor*>& ins,
                                                          const RunOptions& ro) {
  std::map<std::string, Tensor> results;
  std::set<std::string> wanted;
  for (int o : model.outputs) wanted.insert(model.values[o].name);
  std::deque<Tensor> owned;  // host copies of values read back between segments
  std::map<int, const Tensor*> known = ins;
  last_segments.clear();
  last_syncs.clear();
  const auto t_run = std::chrono::steady_clock::now();
  std::vector<std::vector<cl_event>> events;  // by segment, with profiling
  struct Release {
    std::vector<std::vector<cl_event>>& e;
    ~Release() {
      for (auto& v : e)
        for (cl_event x : v)
          if (x) clReleaseEvent(x);
    }
  } release{events};
  std::vector<std::string> sync_labels;
  std::vector<double> sync_us;
  std::map<std::string, Tensor> fetched;  // RunOptions::fetch, from whichever segment computes each
  oi::Plan* cur = plan.get();
  bool* ran = &plan_ran;
  const bool first_of_plan = !plan_ran;
  std::string key = plan_key;
  for (int seg = 0;; ++seg) {
    if (seg > kMaxSegments)
      throw UnsupportedError("the model needs more than " + std::to_string(kMaxSegments) +
                             " plan segments in one run (a loop whose condition is computed on the device, one "
                             "segment per iteration)");
    last_segments.push_back(cur);
    const Graph& g = cur->graph();
    std::map<int, const Tensor*> feed;
    for (int in : g.inputs) {
      auto it = known.find(in);
      if (it == known.end())
        throw Error("internal: segment " + std::to_string(seg) + " input '" + g.values[in].name + "' is unknown");
      feed[in] = it->second;
    }
    std::map<std::string, Tensor> out;
    if (!g.outputs.empty()) {
      oi::KeepWarm* w = *ran ? warm.get() : nullptr;
      *ran = true;
      events.emplace_back();
      out = oi::execute(*cur, *cl, feed, options.profiling ? &events.back() : nullptr,
                        fetch_ids(*cur, ro.fetch, true), w);
      for (const std::string& name : ro.fetch)
        if (out.count(name) && !results.count(name)) fetched[name] = out[name];
      if (ro.fetch.size() == 1 && ro.fetch[0] == "*")
        for (auto& [name, t] : out)
          if (!wanted.count(name)) fetched[name] = t;
    } else {
      events.emplace_back();
    }
    const auto t_sync = std::chrono::steady_clock::now();
    for (int o : g.outputs) {
      const std::string& name = g.values[o].name;
      if (wanted.count(name) && out.count(name)) results[name] = out[name];
    }
    if (!cur->compiled.rest) break;
    Graph rest = *cur->compiled.rest;
    std::string sync = "after segment " + std::to_string(seg) + ": read back";
    for (int f : cur->compiled.frontier) {
      auto it = out.find(g.values[f].name);
      if (it == out.end()) throw Error("internal: segment " + std::to_string(seg) + " did not return '" + g.values[f].name + "'");
      sync += " '" + g.values[f].name + "' " + shape_to_string(it->second.shape);
      owned.push_back(std::move(it->second));
      known[f] = &owned.back();
    }
    // Data-dependent nodes whose inputs are all on the host now are evaluated here; what they make
    // is fed to the next segment, whose plan depends only on its shape.
    bool progress = false;
    for (size_t i = 0; i < rest.nodes.size(); ++i) {
      oi::Node& n = rest.nodes[i];
      if (n.removed) continue;
      const oi::OpDef* def = oi::find_op(rest, n);
      if (!def || !def->traits.data_dependent) continue;
      bool ready = true;
      for (int in : n.inputs) ready &= in < 0 || known.count(in) || rest.values[in].data != nullptr;
      if (!ready) continue;
      std::vector<Tensor> outs = oi::evaluate_node(rest, static_cast<int>(i), known);
      sync += "; evaluated " + oi::describe_node(rest, n) + " on the host";
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        const int o = n.outputs[k];
        if (o < 0) continue;
        owned.push_back(std::move(outs[k]));
        known[o] = &owned.back();
        rest.values[o].dtype = owned.back().dtype;
        rest.values[o].producer = -1;
        rest.inputs.push_back(o);
        if (wanted.count(rest.values[o].name)) results[rest.values[o].name] = owned.back();
        const bool fetch_all = ro.fetch.size() == 1 && ro.fetch[0] == "*";
        if (fetch_all || std::find(ro.fetch.begin(), ro.fetch.end(), rest.values[o].name) != ro.fetch.end())
          fetched[rest.values[o].name] = owned.back();
      }
      n.removed = true;
      progress = true;
    }
    std::vector<int> still;
    for (int o : rest.outputs)
      if (!results.count(rest.values[o].name)) still.push_back(o);
    rest.outputs = still;
    const double sync_ms = ms_since(t_sync);
    char ms[32];
    std::snprintf(ms, sizeof ms, " (%.2f ms)", sync_ms);
    last_syncs.push_back(sync + ms);
    sync_labels.push_back(sync);
    sync_us.push_back(sync_ms * 1000.0);
    if (rest.outputs.empty()) break;
    std::map<int, const Tensor*> next_ins;
    for (int in : rest.inputs) next_ins[in] = known.at(in);
    const std::set<int> pt = small_plan_time(oi::plan_time_inputs(rest), next_ins);
    key += "#" + std::to_string(seg) + "#" + key_of(next_ins, pt);
    auto found = segment_plans.find(key);
    if (found == segment_plans.end()) {
      if (segment_plans.size() >= kMaxSegmentPlans) segment_plans.clear();
      const auto t0 = std::chrono::steady_clock::now();
      SegmentPlan sp;
      sp.plan = std::make_unique<oi::Plan>(oi::build_plan(rest, next_ins, pt, *cl, plan_options()));
      const auto& c = sp.plan->compiled;
      if (!progress && c.rest && c.steps.empty() && c.folded_nodes == 0) {
        std::string why;
        for (auto& b : cur->compiled.blocked) why += (why.empty() ? "" : "; ") + b;
        throw UnsupportedError("cannot plan the rest of the model: " + why);
      }
      char line[120];
      std::snprintf(line, sizeof line, "segment %d: planned in %.1f ms (%zu kernel launches)", seg + 1, ms_since(t0),
                    sp.plan->launches.size());
      log(line);
      found = segment_plans.emplace(key, std::move(sp)).first;
    } else {
      log("segment " + std::to_string(seg + 1) + ": plan found in the cache");
    }
    cur = found->second.plan.get();
    ran = &found->second.ran;
  }
  for (auto& name : wanted)
    if (!results.count(name)) throw Error("internal: output '" + name + "' was not computed by any segment");
  for (const std::string& name : ro.fetch) {
    if (name == "*" || results.count(name) || fetched.count(name)) continue;
    throw InputError("cannot fetch '" + name + "': no segment of the plan computes it (it may be fused into a node, "
                     "evaluated on the host between segments, or not a value of this model)");
  }
  for (auto& [name, t] : fetched) results.emplace(name, std::move(t));
  // The first segment's plan ran its first-run kernels: its tier-up (runtime/exec/compile_helpers.hpp).
  if (first_of_plan && plan->first_run_kernels > 0) start_tier_up();
  if (options.profiling) {
    sync_labels.resize(last_segments.size() - 1);
    sync_us.resize(last_segments.size() - 1);
    if (!profile.same_chain(last_segments)) profile.reset(last_segments, sync_labels);
    profile.add_run(events, sync_us, ms_since(t_run) * 1000.0);
  }
  return results;
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

Session Session::from_file(const std::string& path, const SessionOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->open_device_and_load([&path](uint64_t limit) { return oi::load_onnx_file(path, limit); });
  return Session(std::move(impl));
}

Session Session::from_memory(const void* data, size_t size, const SessionOptions& options,
                             const std::string& model_dir) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->open_device_and_load(
      [data, size, &model_dir](uint64_t limit) { return oi::load_onnx(data, size, model_dir, limit); });
  return Session(std::move(impl));
}

const std::vector<ValueInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<ValueInfo>& Session::outputs() const { return impl_->outputs; }
const DeviceInfo& Session::device() const { return impl_->cl->info(); }
SessionStats Session::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

std::map<std::string, Tensor> Session::run(const std::map<std::string, Tensor>& fed) { return run(fed, RunOptions{}); }

std::map<std::string, Tensor> Session::run(const std::map<std::string, Tensor>& fed, const RunOptions& run_options) {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mu);
  auto ins = s.check_inputs(fed);
  const std::set<int> plan_time = s.small_plan_time(s.plan_time, ins);
  std::string key = Impl::key_of(ins, plan_time);
  // Other input shapes than the current plan's: it is kept, and a plan kept for these shapes
  // taken back.
  if (s.plan && key != s.plan_key) s.keep_current_plan();
  if (!s.plan && s.take_kept_plan(key)) {
    s.stats.plan_reuses++;
    s.stats.kernel_launches = static_cast<int>(s.plan->launches.size());
    s.log("plan: the plan for these input shapes was kept from an earlier run (" +
          std::to_string(s.stats.plans_kept) + " more kept for other shapes)");
    if (s.options.profiling) s.profile.reset(*s.plan);
  }
  // A plan that ran its first-run kernels is built again with its own once the background
  // process start_tier_up started has compiled them, or when that failed or never ran
  // (runtime/exec/compile_helpers.hpp).
  if (s.plan && key == s.plan_key && s.plan_ran && s.plan->first_run_kernels > 0) s.tier_up(ins, plan_time);
  if (!s.plan) {
    auto t0 = std::chrono::steady_clock::now();
    s.plan_ran = false;
    if (s.first_plan_key.empty()) s.first_plan_key = key;
    if (key != s.first_plan_key && !s.generic_plans && s.shape_generic_mode() == -1) {
      s.generic_plans = true;
      s.log("plan: a second input shape: this plan and later ones take kernels with the sizes as arguments where "
            "there are such (compiled once for every further shape; SessionOptions::shape_generic)");
    }
    double compile_before = s.cl->compile_stats().compile_ms;
    int built_before = s.cl->compile_stats().built, cached_before = s.cl->compile_stats().cached,
        bundled_before = s.cl->compile_stats().bundled;
    oi::PlanOptions po = s.plan_options();
    // Not while profiling or tuning: those measure the plan's own kernels.
    po.first_run_kernels = s.options.first_run_kernels && !s.options.profiling && !s.options.tune &&
                           oi::first_run_kernels_apply(*s.cl);
    const oi::Tuner::Summary before = s.tuner->summary();
    // Kept plans leave the rest of the memory limit; where that is too little, they go.
    po.memory_budget = s.memory_limit - std::min(s.memory_limit, s.kept_bytes());
    try {
      s.plan = std::make_unique<oi::Plan>(oi::build_plan(s.model, ins, plan_time, *s.cl, po));
    } catch (const DeviceError&) {
      if (s.kept_plans.empty()) throw;
      s.kept_plans.clear();
      s.stats.plans_kept = 0;
      s.log("plan: dropped the plans kept for other input shapes to make room for this one");
      po.memory_budget = s.memory_limit;
      s.plan = std::make_unique<oi::Plan>(oi::build_plan(s.model, ins, plan_time, *s.cl, po));
    }
    const oi::Tuner::Summary& after = s.tuner->summary();
    s.stats.tuned_problems = after.problems - before.problems;
    s.stats.tuned_improved = after.improved - before.improved;
    s.stats.tuning_seconds = after.seconds - before.seconds;
    s.stats.heuristic_kernel_ms = after.heuristic_ms - before.heuristic_ms;
    s.stats.tuned_kernel_ms = after.tuned_ms - before.tuned_ms;
    if (s.stats.tuned_problems > 0) {
      char line[200];
      std::snprintf(line, sizeof line,
                    "tuning: %d problems measured in %.1f s, %d faster than the heuristic choice "
                    "(their kernels: %.3f ms heuristic, %.3f ms tuned)",
                    s.stats.tuned_problems, s.stats.tuning_seconds, s.stats.tuned_improved,
                    s.stats.heuristic_kernel_ms, s.stats.tuned_kernel_ms);
      s.log(line);
      if (s.tuner->save() && !s.tuner->path().empty()) s.log("tuning: results saved to " + s.tuner->path());
    }
    s.plan_key = key;
    s.stats.plan_ms = ms_since(t0);
    s.stats.compile_ms = s.cl->compile_stats().compile_ms - compile_before;
    s.stats.graph_ms = s.plan->phases.graph_ms;
    s.stats.lower_ms = s.plan->phases.lower_ms;
    s.stats.upload_ms = s.plan->phases.upload_ms;
    s.stats.programs_ms = s.plan->phases.programs_ms;
    s.stats.programs_built = s.cl->compile_stats().built - built_before;
    s.stats.programs_cached = s.cl->compile_stats().cached - cached_before;
    s.stats.programs_bundled = s.cl->compile_stats().bundled - bundled_before;
    s.stats.kernel_launches = static_cast<int>(s.plan->launches.size());
    for (auto& note : s.plan->compiled.notes) s.log("precision: " + note);
    if (s.options.profiling) s.profile.reset(*s.plan);
  }
  if (s.plan->compiled.rest) return s.run_segments(ins, run_options);
  s.last_segments.assign(1, s.plan.get());
  s.last_syncs.clear();
  const std::vector<int> fetch = s.fetch_ids(run_options.fetch);
  // Drivers that compile at a kernel's first launch (PoCL: 0.1-2 s a kernel) make the first run of
  // a new plan the slow one: say so when it is.
  std::unique_ptr<oi::SlowNotice> notice;
  // Helper processes compile the kernels this run has not reached yet (runtime/exec/compile_helpers.hpp).
  std::unique_ptr<oi::CompileHelpers> helpers;
  if (!s.plan_ran) {
    helpers = oi::CompileHelpers::start(*s.plan, *s.cl, [&s](const std::string& m) { s.log(m); });
    notice = std::make_unique<oi::SlowNotice>(
        s.options.log,
        "compiling: the first inference includes the driver's code generation for each of its kernels "
        "(once; later runs find it in the driver's cache)",
        2000);
  }
  // Not on the first run: there a worker spends up to seconds generating code at a kernel's first
  // launch, and markers would take the other core from the compile helpers.
  oi::KeepWarm* warm = s.plan_ran ? s.warm.get() : nullptr;
  s.plan_ran = true;
  std::map<std::string, Tensor> out;
  const auto run_start = std::chrono::steady_clock::now();
  if (!s.options.profiling) {
    out = oi::execute(*s.plan, *s.cl, ins, nullptr, fetch, warm);
    if (warm) {
      // The adaptive keep-warm trial (runtime/backend/keep_warm.hpp) times whole runs; profiled
      // runs (events on every kernel) do not count.
      const std::string decided = warm->record_run(s.plan.get(), ms_since(run_start));
      s.stats.keep_warm = warm->markers_per_launch();
      s.stats.keep_warm_spin = warm->spinning();
      s.stats.keep_warm_trial_runs = warm->trial_runs_left();
      if (!decided.empty()) s.log("keep-warm: " + decided);
    }
  } else {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<cl_event> events;
    struct Release {
      std::vector<cl_event>& e;
      ~Release() {
        for (cl_event x : e)
          if (x) clReleaseEvent(x);
      }
    } release{events};
    out = oi::execute(*s.plan, *s.cl, ins, &events, fetch, warm);
    s.profile.add_run(*s.plan, events, ms_since(t0) * 1000.0);
  }
  if (helpers) {
    // A warm start whose programs still cost the driver's preprocessing: store their binaries for
    // the next start, in the background (runtime/exec/compile_helpers.hpp).
    const bool warm_start = helpers->warm();
    helpers->finished();
    if (s.plan->first_run_kernels > 0) s.start_tier_up();
    const char* policy = std::getenv("OCL_INFER_STORE_BINARIES");
    const bool always = policy && std::string(policy) == "background";
    if (warm_start && (always || s.stats.compile_ms >= kStoreBinariesAboveMs))
      oi::store_binaries_in_background(*s.cl, [&s](const std::string& m) { s.log(m); });
  }
  return out;
}

std::vector<ExecutedNode> Session::executed_nodes() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<ExecutedNode> r;
  if (!impl_->plan) return r;
  const Graph& g = impl_->plan->graph();
  for (const oi::Step& step : impl_->plan->compiled.steps) {
    const oi::Node& n = g.nodes[step.node];
    ExecutedNode e;
    e.name = n.name;
    if (n.covers.empty()) {
      e.covers.push_back(n.name);
      e.op_types.push_back(n.op_type);
    }
    for (auto& [name, op] : n.covers) {
      e.covers.push_back(name);
      e.op_types.push_back(op);
    }
    for (int o : n.outputs)
      if (o >= 0) e.outputs.push_back(g.values[o].name);
    r.push_back(std::move(e));
  }
  return r;
}

std::vector<LayerProfile> Session::profile() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->profile.layers();
}

void Session::reset_profile() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->last_segments.size() > 1) {
    std::vector<std::string> labels(impl_->last_syncs.begin(), impl_->last_syncs.end());
    impl_->profile.reset(impl_->last_segments, labels);
  } else if (impl_->plan) {
    impl_->profile.reset(*impl_->plan);
  }
}

std::vector<double> Session::profiled_inference_us() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->profile.inference_us();
}

std::vector<double> Session::profiled_wall_us() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->profile.wall_us();
}

std::vector<double> Session::profiled_kernel_sum_us() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->profile.kernel_sum_us();
}

std::string Session::dump(const std::string& what) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (!impl_->plan) throw InputError("nothing is planned yet: run the model once before dumping");
  if (what == "graph") return impl_->plan->dump_graph();
  if (what == "plan") {
    const Impl& s = *impl_;
    if (s.last_segments.size() <= 1) return s.plan->dump_plan();
    std::string r;
    for (size_t k = 0; k < s.last_segments.size(); ++k) {
      r += "=== segment " + std::to_string(k) + " ===\n" + s.last_segments[k]->dump_plan();
      if (k < s.last_syncs.size()) r += "--- host sync " + s.last_syncs[k] + "\n";
    }
    return r;
  }
  if (what == "graph.json") return impl_->plan->dump_graph_json();
  if (what == "plan.json") {
    const Impl& s = *impl_;
    if (s.last_segments.size() <= 1) return s.plan->dump_plan_json();
    // {"segments": [plan, ...], "host_syncs": ["after segment 0: read back ...", ...]}
    std::string r = "{\"segments\": [";
    for (size_t k = 0; k < s.last_segments.size(); ++k) r += (k ? ", " : "") + s.last_segments[k]->dump_plan_json();
    r += "], \"host_syncs\": [";
    for (size_t k = 0; k < s.last_syncs.size(); ++k) {
      std::string esc;
      for (char c : s.last_syncs[k]) {
        if (c == '"' || c == '\\') esc += '\\';
        if (static_cast<unsigned char>(c) >= 0x20) esc += c;
      }
      r += std::string(k ? ", " : "") + "\"" + esc + "\"";
    }
    return r + "]}";
  }
  throw InputError("unknown dump '" + what + "' (use graph, plan, graph.json or plan.json)");
}

std::vector<DeviceInfo> list_devices() {
  std::vector<DeviceInfo> r;
  for (auto& d : oi::enumerate_devices()) r.push_back(d.info);
  return r;
}

void release_shared_contexts() { oi::release_shared_contexts(); }

const char* version() { return "0.1.0"; }

std::vector<std::string> supported_operators() { return oi::supported_ops(); }

std::vector<OperatorInfo> operator_catalog() {
  std::vector<OperatorInfo> r;
  for (const oi::OpCatalogRow& row : oi::op_catalog()) {
    OperatorInfo o;
    o.domain = row.domain.empty() ? "ai.onnx" : row.domain;
    o.op_type = row.op_type;
    o.since_versions = row.since_versions;
    o.max_opset = row.max_opset;
    const oi::OpTraits& t = row.traits;
    o.fp16_storage = t.any_float_storage || t.shared_float_storage;
    if (t.expand) o.notes.push_back("expanded at plan time into other operators (control flow: the branch taken, loops unrolled)");
    if (t.data_dependent) o.notes.push_back("output shape depends on values: evaluated on the host between plan segments");
    if (t.view) o.notes.push_back("no kernel: a view of its input");
    if (!row.has_kernel && !t.view && !t.expand && !t.data_dependent)
      o.notes.push_back("evaluated at plan time (shapes, constants) or expanded into other operators");
    if (t.takes_epilogue) o.notes.push_back("fuses a following activation or residual Add");
    if (t.takes_sequences) o.notes.push_back("takes sequences");
    if (row.domain == oi::kOclInferDomain)
      o.notes.push_back("made by ocl-infer's optimizer from standard operators (docs/architecture.md)");
    r.push_back(std::move(o));
  }
  std::sort(r.begin(), r.end(), [](const OperatorInfo& a, const OperatorInfo& b) {
    return std::make_pair(a.domain, a.op_type) < std::make_pair(b.domain, b.op_type);
  });
  return r;
}

std::vector<KernelVariantInfo> kernel_variants() {
  std::vector<KernelVariantInfo> r;
  for (auto& v : oi::variant_catalog()) {
    KernelVariantInfo k;
    k.family = v.family;
    k.variant = v.variant;
    k.summary = v.summary;
    for (auto& p : v.params) k.params[p.name] = p.values;
    r.push_back(std::move(k));
  }
  return r;
}

Tensor read_tensor_proto(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError("cannot open '" + path + "': " + std::strerror(errno));
  std::stringstream ss;
  ss << f.rdbuf();
  std::string bytes = ss.str();
  try {
    return oi::load_tensor_proto(bytes.data(), bytes.size());
  } catch (const Error& e) {
    throw InputError("'" + path + "' is not a valid tensor file: " + e.what());
  }
}

}  // namespace ocl_infer
