// Kernel variants as data. A family (conv, gemm, pool) lists its variants in order of preference;
// each variant names its entry point's algorithm, says when it applies, declares its tunable
// parameters (the candidate values a tuner would try), gives today's heuristic as its default
// parameters for a device, and builds its launches. The choice is made in one place
// (run_variant): a variant forced by the session (SessionOptions::kernel_variants or
// $OCL_INFER_VARIANT) when it applies, else the first variant that applies and that the device
// class prefers, with its defaults.
// The autotuner will plug in here, as another source of parameters.
#pragma once

#include <map>
#include <string>
#include <vector>

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
};

template <typename Desc>
struct KernelFamily {
  const char* name;
  std::vector<KernelVariant<Desc>> variants;  // in order of preference
};

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

// Chooses a variant of `fam` for `d` (see the top of this file), records it on `ctx` for dumps and
// profiles, and runs it.
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
  if (!chosen)
    for (auto& v : fam.variants)
      if (v.applies(d, caps) && (!v.preferred || v.preferred(d, caps))) {
        chosen = &v;
        use.params = v.defaults(d, caps);
        break;
      }
  if (!chosen) ctx.unsupported(std::string("no ") + fam.name + " kernel variant applies");
  use.variant = chosen->name;
  ctx.use_variant(use);
  chosen->run(ctx, d, use.params);
  ctx.use_variant({});
}

}  // namespace oi
