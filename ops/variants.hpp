// Kernel variants as data. A family (conv, gemm, pool) lists its variants in order of preference;
// each variant names its entry point's algorithm, says when it applies, declares its tunable
// parameters (the candidate values a tuner would try), gives today's heuristic as its default
// parameters for a device, and builds its launches. The choice is made in one place
// (run_variant): a variant forced by the session (SessionOptions::kernel_variants or
// $OCL_INFER_VARIANT) when it applies, else a tuned choice (the autotuner's, from its cache or
// measured now), else the first variant that applies and that the device class prefers, with its
// defaults.
#pragma once

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <cstdio>

#include "ops/build_context.hpp"

namespace oi {

using VariantParams = std::map<std::string, int>;

struct ParamSpace {
  std::string name;
  std::vector<int> values;  // candidates for tuning and forcing
};

template <typename Desc>
struct KernelVariant {
  const char* name;
  const char* summary;  // what it computes and where it applies, one line
  std::vector<ParamSpace> params;
  bool (*applies)(const Desc&, const DeviceCaps&);
  // Whether a full parameter set works for this problem (nullptr: every set does).
  bool (*valid)(const Desc&, const DeviceCaps&, const VariantParams&);
  VariantParams (*defaults)(const Desc&, const DeviceCaps&);
  void (*run)(BuildContext&, const Desc&, const VariantParams&);
  // The device-class heuristic: whether the untuned choice takes this variant when it applies
  // (nullptr: always). A forced variant only needs to apply.
  bool (*preferred)(const Desc&, const DeviceCaps&) = nullptr;
  // In a shape-generic plan (BuildContext::shape_generic): the defaults changed so that the build
  // options no longer depend on the problem's sizes where the variant can take them at run time
  // (nullptr: the defaults as they are). Used only where the result is valid.
  VariantParams (*generic)(const Desc&, const DeviceCaps&, VariantParams defaults) = nullptr;
};

template <typename Desc>
struct KernelFamily {
  const char* name;
  std::vector<KernelVariant<Desc>> variants;  // in order of preference
  // The problem as the tuner and its cache name it: every shape, stride and attribute that the
  // variants' speed depends on, without tabs or newlines (nullptr: the family is not tuned).
  std::string (*key)(const Desc&) = nullptr;
};

// The parameters of kernels/tiled.cl (ts, rm, rn, tk), shared by the conv and gemm "tiled"
// variants: the candidate values, whether a set fits the device (work-group and local-memory
// limits), and the default for a product whose sides are all >= 64 (`big`) or not.
std::vector<ParamSpace> tiled_param_space();
bool tiled_params_fit(const DeviceCaps& caps, const VariantParams& params);
VariantParams tiled_params_default(const DeviceCaps& caps, bool big);

// "packed:ocb=8,owb=4"
std::string format_choice(const std::string& variant, const VariantParams& params);
// The node's operand storage types and fused epilogue, appended to a family's key: "|f32,f32>f16+act".
std::string node_signature(const BuildContext& ctx);

// A parsed "variant[:param=value,...]".
struct VariantRequest {
  std::string variant;
  VariantParams params;
};
// Throws ocl_infer::InputError naming the problem.
VariantRequest parse_variant_request(const std::string& spec);

// The catalog of every family, for listings and for validating forced variants.
struct VariantInfo {
  std::string family, variant, summary;
  std::vector<ParamSpace> params;
};
const std::vector<VariantInfo>& variant_catalog();
// Checks a whole "family=variant[:p=v,...];..." string against the catalog; returns it as a map
// family -> "variant[:p=v,...]". Throws InputError listing what exists.
std::map<std::string, std::string> parse_forced_variants(const std::string& spec);

template <typename Desc>
std::vector<VariantInfo> family_info(const KernelFamily<Desc>& f) {
  std::vector<VariantInfo> r;
  for (auto& v : f.variants) r.push_back({f.name, v.name, v.summary, v.params});
  return r;
}

// Tunes one problem: runs the device-class choice, then every variant that applies with its
// defaults, then each parameter's other candidate values one at a time, keeping any that is
// faster (coordinate descent: a few trials per parameter rather than the whole grid). A trial
// that is 3x slower than the best so far is abandoned after one run; a candidate that fails to
// build or run is skipped. Records the winner with the plan sink and returns it ("" when nothing
// ran).
template <typename Desc>
std::string tune_problem(BuildContext& ctx, const KernelFamily<Desc>& fam, const Desc& d, const std::string& key) {
  PlanSink& sink = ctx.sink();
  const DeviceCaps& caps = ctx.caps();
  const double inf = std::numeric_limits<double>::infinity();
  double best = inf, heuristic_ms = inf;
  std::string best_choice, heuristic_choice;
  const KernelVariant<Desc>* best_variant = nullptr;
  VariantParams best_params;
  int tried = 0;
  // One candidate's time, abandoned past give_up_ms (infinite when it cannot build or run here).
  auto time_of = [&](const KernelVariant<Desc>& v, const VariantParams& p, double give_up_ms) {
    double t = inf;
    sink.trial_begin();
    try {
      ctx.use_variant(VariantUse{fam.name, v.name, p, "tuning"});
      v.run(ctx, d, p);
      t = sink.trial_time(give_up_ms);
    } catch (const ocl_infer::Error&) {
      t = inf;
    }
    sink.trial_end();
    ctx.use_variant({});
    return t;
  };
  // The same during the search: counted, abandoned at 3x the best so far, the best remembered.
  auto measure = [&](const KernelVariant<Desc>& v, const VariantParams& p) {
    const double t = time_of(v, p, std::isfinite(best) ? 3 * best : inf);
    ++tried;
    if (t < best) {
      best = t;
      best_choice = format_choice(v.name, p);
      best_variant = &v;
      best_params = p;
    }
    return t;
  };
  const KernelVariant<Desc>* heuristic = nullptr;
  for (auto& v : fam.variants)
    if (v.applies(d, caps) && (!v.preferred || v.preferred(d, caps))) {
      heuristic = &v;
      break;
    }
  if (heuristic) {
    heuristic_ms = measure(*heuristic, heuristic->defaults(d, caps));
    heuristic_choice = format_choice(heuristic->name, heuristic->defaults(d, caps));
  }
  for (auto& v : fam.variants) {
    if (!v.applies(d, caps)) continue;
    VariantParams cur = v.defaults(d, caps);
    if (v.valid && !v.valid(d, caps, cur)) continue;
    double t = &v == heuristic ? heuristic_ms : measure(v, cur);
    if (!std::isfinite(t)) continue;
    for (auto& ps : v.params)
      for (int value : ps.values) {
        if (cur.count(ps.name) && cur.at(ps.name) == value) continue;
        VariantParams q = cur;
        q[ps.name] = value;
        if (v.valid && !v.valid(d, caps, q)) continue;
        const double tq = measure(v, q);
        if (tq < t) {
          t = tq;
          cur = q;
        }
      }
  }
  if (best_choice.empty()) return "";
  // The winner against the device-class choice once more, alternating, each its best of three
  // (the first measurement of a problem ran ~2x slow at times, right after the builds, and a noisy
  // machine makes single figures wander 30 %); only the re-measured figures decide.
  if (heuristic && best_variant && best_choice != heuristic_choice && std::isfinite(heuristic_ms)) {
    const VariantParams hp = heuristic->defaults(d, caps);
    double h = inf, w = inf;
    for (int r = 0; r < 3; ++r) {
      h = std::min(h, time_of(*heuristic, hp, inf));
      w = std::min(w, time_of(*best_variant, best_params, inf));
    }
    heuristic_ms = h;
    best = w;
  }
  // A kernel timed alone is not the kernel inside the model (its inputs hot in cache, no
  // neighbours): the device-class choice stays unless another is clearly faster.
  if (std::isfinite(heuristic_ms) && best > 0.9 * heuristic_ms) {
    best = heuristic_ms;
    best_choice = heuristic_choice;
  }
  sink.tuned_result(fam.name, key, best_choice, best, heuristic_ms, tried);
  char line[96];
  std::snprintf(line, sizeof line, ": %.3f ms (device-class choice %.3f ms, %d candidates)", best, heuristic_ms, tried);
  sink.tuning_progress("tune: " + std::string(fam.name) + " " + key + " -> " + best_choice + line);
  return best_choice;
}

// Chooses a variant of `fam` for `d` (see the top of this file), records it on `ctx` for dumps and
// profiles, and runs it. Order: a forced variant that applies; a tuned choice (from the tuning
// cache, or measured now when the session tunes); the device-class heuristic.
template <typename Desc>
void run_variant(BuildContext& ctx, const KernelFamily<Desc>& fam, const Desc& d) {
  const DeviceCaps& caps = ctx.caps();
  const KernelVariant<Desc>* chosen = nullptr;
  VariantUse use;
  use.family = fam.name;
  use.source = "heuristic";
  const std::string forced = ctx.forced_variant(fam.name);
  if (!forced.empty()) {
    VariantRequest req = parse_variant_request(forced);
    for (auto& v : fam.variants)
      if (req.variant == v.name) {
        if (!v.applies(d, caps)) {
          use.source = "heuristic (forced '" + req.variant + "' does not apply)";
          break;
        }
        chosen = &v;
        use.params = v.defaults(d, caps);
        VariantParams merged = use.params;
        for (auto& [k, val] : req.params) merged[k] = val;
        if (!v.valid || v.valid(d, caps, merged)) {
          use.params = merged;
          use.source = "forced";
        } else {
          use.source = "forced (parameters invalid here, defaults used)";
        }
      }
  }
  if (!chosen && forced.empty() && fam.key) {
    const std::string key = fam.key(d) + node_signature(ctx);
    std::string tuned = ctx.sink().tuned_choice(fam.name, key);
    if (tuned.empty() && ctx.sink().tuning()) tuned = tune_problem(ctx, fam, d, key);
    if (!tuned.empty()) {
      use.source = "heuristic (tuned choice '" + tuned + "' does not apply)";
      try {
        VariantRequest req = parse_variant_request(tuned);
        for (auto& v : fam.variants) {
          if (req.variant != v.name || !v.applies(d, caps)) continue;
          VariantParams merged = v.defaults(d, caps);
          for (auto& [k, val] : req.params) merged[k] = val;
          if (v.valid && !v.valid(d, caps, merged)) break;
          chosen = &v;
          use.params = merged;
          use.source = "tuned";
        }
      } catch (const ocl_infer::InputError&) {
        // an unreadable cached choice: the heuristic stands
      }
    }
  }
  if (!chosen)
    for (auto& v : fam.variants)
      if (v.applies(d, caps) && (!v.preferred || v.preferred(d, caps))) {
        chosen = &v;
        use.params = v.defaults(d, caps);
        if (v.generic && ctx.shape_generic()) {
          VariantParams g = v.generic(d, caps, use.params);
          if (!v.valid || v.valid(d, caps, g)) {
            use.params = g;
            use.source = "heuristic, shape-generic";
          }
        }
        break;
      }
  if (!chosen) ctx.unsupported(std::string("no ") + fam.name + " kernel variant applies");
  use.variant = chosen->name;
  ctx.use_variant(use);
  chosen->run(ctx, d, use.params);
  ctx.use_variant({});
}

}  // namespace oi
