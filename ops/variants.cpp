#include "ops/variants.hpp"

#include <cctype>
#include <sstream>

namespace oi {

std::vector<VariantInfo> conv_variant_info();
std::vector<VariantInfo> gemm_variant_info();
std::vector<VariantInfo> pool_variant_info();
std::vector<VariantInfo> norm_variant_info();
std::vector<VariantInfo> qconv_variant_info();
std::vector<VariantInfo> qgemm_variant_info();
std::vector<VariantInfo> rnn_variant_info();

namespace {

using ocl_infer::InputError;

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

bool parse_int(const std::string& s, int* v) {
  if (s.empty() || s.size() > 9) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return false;
  for (size_t k = i; k < s.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(s[k]))) return false;
  *v = std::stoi(s);
  return true;
}

}  // namespace

std::vector<ParamSpace> tiled_param_space() {
  return {{"ts", {16, 32, 64}}, {"rm", {1, 2, 4}}, {"rn", {1, 2, 4}}, {"tk", {4, 8, 16}}};
}

bool tiled_params_fit(const DeviceCaps& c, const VariantParams& v) {
  const int ts = v.at("ts"), rm = v.at("rm"), rn = v.at("rn"), tk = v.at("tk");
  if ((ts != 16 && ts != 32 && ts != 64) || (rm != 1 && rm != 2 && rm != 4) || (rn != 1 && rn != 2 && rn != 4) ||
      (tk != 4 && tk != 8 && tk != 16))
    return false;
  const size_t items = static_cast<size_t>(ts / rm) * static_cast<size_t>(ts / rn);
  return items <= c.max_work_group_size && c.max_work_item_sizes.size() >= 2 &&
         static_cast<size_t>(ts / rn) <= c.max_work_item_sizes[0] &&
         static_cast<size_t>(ts / rm) <= c.max_work_item_sizes[1] && 2u * tk * ts * sizeof(float) <= c.local_mem_bytes;
}

VariantParams tiled_params_default(const DeviceCaps& c, bool big) {
  // 64x64 tiles of 16x16 work-items with 4x4 blocks for large products; 32x32 tiles (16x16
  // work-items, 2x2 blocks) when a side is short, and on devices whose local memory is emulated in
  // global memory (CPU drivers that run work-items as SIMD lanes: on llvmpipe a 64->64 3x3 conv at
  // 56x56 took 1.4 s with 4x4 blocks, 0.56 s with 2x2); smaller work-groups where the device needs.
  big = big && c.local_mem_dedicated;
  for (VariantParams v : {VariantParams{{"ts", big ? 64 : 32}, {"rm", big ? 4 : 2}, {"rn", big ? 4 : 2}, {"tk", 16}},
                          VariantParams{{"ts", 32}, {"rm", 4}, {"rn", 4}, {"tk", 8}},
                          VariantParams{{"ts", 16}, {"rm", 4}, {"rn", 4}, {"tk", 8}}})
    if (tiled_params_fit(c, v)) return v;
  return {{"ts", 16}, {"rm", 4}, {"rn", 4}, {"tk", 4}};
}

std::string format_choice(const std::string& variant, const VariantParams& params) {
  std::string s = variant;
  char sep = ':';
  for (auto& [k, v] : params) {
    s += sep + k + "=" + std::to_string(v);
    sep = ',';
  }
  return s;
}

std::string node_signature(const BuildContext& ctx) {
  auto st = [](DType t) { return t == DType::Float16 ? "f16" : t == DType::Float32 ? "f32" : ocl_infer::dtype_name(t); };
  std::string s = "|";
  for (int i = 0; i < ctx.num_inputs(); ++i) s += std::string(i ? "," : "") + (ctx.has_input(i) ? st(ctx.input(i).dtype) : "-");
  s += ">";
  s += ctx.has_output(0) ? st(ctx.output(0).dtype) : "-";
  const Epilogue& e = ctx.node().epilogue;
  if (e.act) s += "+act";
  if (e.residual >= 0) s += "+res";
  return s;
}

VariantRequest parse_variant_request(const std::string& spec) {
  VariantRequest r;
  const size_t colon = spec.find(':');
  r.variant = trim(spec.substr(0, colon));
  if (r.variant.empty()) throw InputError("kernel variant '" + spec + "' names no variant");
  if (colon == std::string::npos) return r;
  std::stringstream ss(spec.substr(colon + 1));
  for (std::string item; std::getline(ss, item, ',');) {
    item = trim(item);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    int v = 0;
    if (eq == std::string::npos || !parse_int(trim(item.substr(eq + 1)), &v))
      throw InputError("kernel variant parameter '" + item + "' in '" + spec + "' is not name=integer");
    r.params[trim(item.substr(0, eq))] = v;
  }
  return r;
}

const std::vector<VariantInfo>& variant_catalog() {
  static const std::vector<VariantInfo> all = [] {
    std::vector<VariantInfo> r;
    for (auto* f : {conv_variant_info, gemm_variant_info, pool_variant_info, norm_variant_info, qconv_variant_info,
                    qgemm_variant_info, rnn_variant_info})
      for (auto& v : f()) r.push_back(v);
    return r;
  }();
  return all;
}

std::map<std::string, std::string> parse_forced_variants(const std::string& spec) {
  std::map<std::string, std::string> r;
  const auto& cat = variant_catalog();
  auto known = [&] {
    std::string s;
    for (auto& v : cat) {
      s += (s.empty() ? "" : ", ") + v.family + "=" + v.variant;
      if (!v.params.empty()) {
        s += " (";
        for (size_t i = 0; i < v.params.size(); ++i) s += (i ? ", " : "") + v.params[i].name;
        s += ")";
      }
    }
    return s;
  };
  std::stringstream ss(spec);
  for (std::string item; std::getline(ss, item, ';');) {
    item = trim(item);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos)
      throw InputError("kernel variant '" + item + "' is not family=variant[:param=value,...]; variants: " + known());
    const std::string family = trim(item.substr(0, eq)), rest = trim(item.substr(eq + 1));
    VariantRequest req = parse_variant_request(rest);
    const VariantInfo* found = nullptr;
    for (auto& v : cat)
      if (v.family == family && v.variant == req.variant) found = &v;
    if (!found) throw InputError("unknown kernel variant '" + family + "=" + req.variant + "'; variants: " + known());
    for (auto& [name, value] : req.params) {
      bool ok = false;
      for (auto& p : found->params) ok |= p.name == name;
      if (!ok)
        throw InputError("kernel variant " + family + "=" + req.variant + " has no parameter '" + name +
                         "'; variants: " + known());
    }
    r[family] = rest;
  }
  return r;
}

}  // namespace oi
