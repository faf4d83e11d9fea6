// Einsum: the equation is parsed once into labels per operand (an ellipsis becomes pseudo-labels
// for its broadcast dims), then into strides per operand for every output index and every
// contracted index. The device (kernels/einsum.cl) and the host (constant folding) walk the same
// strides.
#include <algorithm>
#include <cctype>
#include <map>

#include "ops/build_context.hpp"
#include "ops/copy_view.hpp"
#include "ops/elementwise.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

namespace {

using ocl_infer::shape_to_string;

constexpr int kMaxOperands = 4;  // kernels/einsum.cl's arguments
constexpr int kLetters = 52;     // a-z, A-Z; pseudo-labels of ellipsis dims follow

int label_of(char c) {
  return c >= 'a' && c <= 'z' ? c - 'a' : 26 + (c - 'A');
}
char letter_of(int l) {
  return static_cast<char>(l < 26 ? 'a' + l : 'A' + (l - 26));
}

// One side of a term: its letters and whether (and where) it has "...".
struct Term {
  std::vector<int> labels;  // letters only
  int ellipsis_at = -1;     // position in `labels` where "..." stands, -1 without
};

struct EinsumSpec {
  Shape out_shape;
  // For each operand, its element stride per output dim and per contracted index (0: the operand
  // does not have the index, or broadcasts it).
  std::vector<std::vector<int64_t>> out_strides, red_strides;
  Shape red_dims;  // contracted index sizes; the last is walked innermost
  int64_t red_count() const { return numel(red_dims); }
};

Term parse_term(const OpContext& ctx, const std::string& eq, const std::string& s) {
  Term t;
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (c == '.') {
      if (s.compare(i, 3, "...") != 0 || t.ellipsis_at >= 0)
        ctx.fail("equation '" + eq + "': a term may hold one '...' and no other dots ('" + s +
                 "')");
      t.ellipsis_at = static_cast<int>(t.labels.size());
      i += 3;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(c)))
      ctx.fail("equation '" + eq + "': unexpected character '" + std::string(1, c) +
               "' (labels are letters)");
    t.labels.push_back(label_of(c));
    ++i;
  }
  return t;
}

EinsumSpec einsum_spec(const OpContext& ctx) {
  const std::string raw = ctx.node().attr_string("equation", "");
  std::string eq;
  for (char c : raw)
    if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
  if (eq.empty()) ctx.fail("attribute 'equation' is required");
  const size_t arrow = eq.find("->");
  if (arrow != std::string::npos && eq.find("->", arrow + 1) != std::string::npos)
    ctx.fail("equation '" + raw + "' has more than one '->'");
  const std::string lhs = eq.substr(0, arrow);
  if (lhs.find_first_of("->") != std::string::npos)
    ctx.fail("equation '" + raw + "': a stray '-' or '>' outside '->'");
  std::vector<Term> ins;
  for (size_t at = 0;;) {
    const size_t comma = lhs.find(',', at);
    ins.push_back(parse_term(
        ctx, raw, lhs.substr(at, comma == std::string::npos ? std::string::npos : comma - at)));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  const int nops = ctx.num_inputs();
  if (static_cast<int>(ins.size()) != nops)
    ctx.fail("equation '" + raw + "' has " + std::to_string(ins.size()) + " input terms for " +
             std::to_string(nops) + " inputs");
  if (nops > kMaxOperands)
    ctx.unsupported("Einsum of " + std::to_string(nops) + " operands (at most " +
                    std::to_string(kMaxOperands) + " are supported)");

  // Each operand's labels per dim; ellipsis dims get pseudo-labels, right-aligned across operands.
  int ell_rank = 0;
  std::vector<int> ell(nops, 0);
  for (int k = 0; k < nops; ++k) {
    const int64_t rank = static_cast<int64_t>(ctx.in_shape(k).size());
    const int64_t letters = static_cast<int64_t>(ins[k].labels.size());
    if (ins[k].ellipsis_at < 0 ? rank != letters : rank < letters)
      ctx.fail("equation '" + raw + "': term " + std::to_string(k) + " has " +
               std::to_string(letters) + " labels" + (ins[k].ellipsis_at < 0 ? "" : " and '...'") +
               " for input " + std::to_string(k) + " of rank " + std::to_string(rank) + " " +
               shape_to_string(ctx.in_shape(k)));
    ell[k] = static_cast<int>(rank - letters);
    ell_rank = std::max(ell_rank, ell[k]);
  }
  std::vector<std::vector<int>> dims_labels(nops);
  for (int k = 0; k < nops; ++k) {
    const Term& t = ins[k];
    for (int j = 0; j <= static_cast<int>(t.labels.size()); ++j) {
      if (j == t.ellipsis_at)
        for (int e = 0; e < ell[k]; ++e) dims_labels[k].push_back(kLetters + ell_rank - ell[k] + e);
      if (j < static_cast<int>(t.labels.size())) dims_labels[k].push_back(t.labels[j]);
    }
  }
  const int nlabels = kLetters + ell_rank;

  // Label sizes: every occurrence agrees, or is 1 and broadcasts; a label repeated inside one term
  // (a diagonal) must have equal dims.
  std::vector<int64_t> size(nlabels, -1);
  std::vector<int> count(nlabels, 0);
  for (int k = 0; k < nops; ++k) {
    const Shape& s = ctx.in_shape(k);
    for (size_t d = 0; d < s.size(); ++d) {
      const int l = dims_labels[k][d];
      if (l < kLetters) ++count[l];
      for (size_t e = 0; e < d; ++e)
        if (dims_labels[k][e] == l && s[e] != s[d])
          ctx.fail("equation '" + raw + "': label '" + std::string(1, letter_of(l)) +
                   "' repeats in term " + std::to_string(k) + " over dims of different sizes in " +
                   shape_to_string(s));
      if (size[l] < 0 || size[l] == 1) {
        size[l] = s[d];
      } else if (s[d] != 1 && s[d] != size[l]) {
        const std::string name =
            l < kLetters ? "label '" + std::string(1, letter_of(l)) + "'" : "the '...' dims";
        ctx.fail("equation '" + raw + "': " + name + " has size " + std::to_string(size[l]) +
                 " in one input and " + std::to_string(s[d]) + " in input " + std::to_string(k) +
                 " " + shape_to_string(s));
      }
    }
  }

  // The output's labels: explicit, or (numpy's implicit form) the ellipsis dims, then the letters
  // used exactly once in ASCII order (upper case first).
  std::vector<int> out_labels;
  const bool any_ellipsis =
      std::any_of(ins.begin(), ins.end(), [](const Term& t) { return t.ellipsis_at >= 0; });
  if (arrow != std::string::npos) {
    const Term out = parse_term(ctx, raw, eq.substr(arrow + 2));
    if (out.ellipsis_at < 0 && ell_rank > 0)
      ctx.fail("equation '" + raw + "': the inputs' '...' covers " + std::to_string(ell_rank) +
               " dims but the output has no '...'");
    std::vector<bool> seen(kLetters, false);
    for (int j = 0; j <= static_cast<int>(out.labels.size()); ++j) {
      if (j == out.ellipsis_at)
        for (int e = 0; e < ell_rank; ++e) out_labels.push_back(kLetters + e);
      if (j == static_cast<int>(out.labels.size())) break;
      const int l = out.labels[j];
      if (seen[l])
        ctx.fail("equation '" + raw + "': output label '" + std::string(1, letter_of(l)) +
                 "' repeats");
      if (count[l] == 0)
        ctx.fail("equation '" + raw + "': output label '" + std::string(1, letter_of(l)) +
                 "' is in no input term");
      seen[l] = true;
      out_labels.push_back(l);
    }
  } else {
    if (any_ellipsis)
      for (int e = 0; e < ell_rank; ++e) out_labels.push_back(kLetters + e);
    for (char c = 'A'; c <= 'z'; ++c)
      if (std::isalpha(static_cast<unsigned char>(c)) && count[label_of(c)] == 1)
        out_labels.push_back(label_of(c));
  }

  // Strides: a label's stride in an operand sums over its dims with that label (diagonals), 0
  // where a dim of 1 broadcasts.
  auto stride_of = [&](int k, int l) {
    const Shape& s = ctx.in_shape(k);
    const std::vector<int64_t> st = strides_of(s);
    int64_t r = 0;
    for (size_t d = 0; d < s.size(); ++d)
      if (dims_labels[k][d] == l && !(s[d] == 1 && size[l] != 1)) r += st[d];
    return r;
  };
  EinsumSpec spec;
  spec.out_strides.resize(nops);
  spec.red_strides.resize(nops);
  std::vector<bool> in_out(nlabels, false);
  for (int l : out_labels) {
    in_out[l] = true;
    spec.out_shape.push_back(size[l]);
    for (int k = 0; k < nops; ++k) spec.out_strides[k].push_back(stride_of(k, l));
  }
  std::vector<int> red;
  for (int l = 0; l < nlabels; ++l)
    if (size[l] >= 0 && !in_out[l]) red.push_back(l);
  // Innermost: the contracted index with unit stride in the most operands.
  auto unit = [&](int l) {
    int n = 0;
    for (int k = 0; k < nops; ++k) n += stride_of(k, l) == 1;
    return n;
  };
  std::stable_sort(red.begin(), red.end(), [&](int a, int b) { return unit(a) < unit(b); });
  for (int l : red) {
    spec.red_dims.push_back(size[l]);
    for (int k = 0; k < nops; ++k) spec.red_strides[k].push_back(stride_of(k, l));
  }
  if (red.empty()) {  // the kernel always loops: one step of stride 0
    spec.red_dims.push_back(1);
    for (int k = 0; k < nops; ++k) spec.red_strides[k].push_back(0);
  }
  return spec;
}

void check_types(const OpContext& ctx) {
  const DType t = ctx.in_type(0);
  if (!is_float(t) && !is_integer(t))
    ctx.unsupported(std::string("inputs of type ") + ocl_infer::dtype_name(t) +
                    " are not supported");
  for (int k = 1; k < ctx.num_inputs(); ++k)
    if (ctx.in_type(k) != t)
      ctx.fail(std::string("inputs must share one type: input 0 is ") + ocl_infer::dtype_name(t) +
               ", input " + std::to_string(k) + " " + ocl_infer::dtype_name(ctx.in_type(k)));
}

void einsum_infer(OpContext& ctx) {
  if (ctx.num_inputs() < 1) ctx.fail("needs at least one input");
  check_types(ctx);
  ctx.set_out(0, ctx.in_type(0), einsum_spec(ctx).out_shape);
}

// Folding: floats accumulate in double, integers in (wrapping) 64 bits.
void einsum_host(OpContext& ctx) {
  const EinsumSpec s = einsum_spec(ctx);
  const int nops = ctx.num_inputs();
  std::vector<const Tensor*> x(nops);
  for (int k = 0; k < nops; ++k) x[k] = &ctx.in_data(k);
  const bool fp = is_float(ctx.in_type(0));
  Tensor y(ctx.in_type(0), s.out_shape);
  const int64_t n = y.numel(), nred = s.red_count();
  const int64_t rout = static_cast<int64_t>(s.out_shape.size()),
                rred = static_cast<int64_t>(s.red_dims.size());
  std::vector<int64_t> base(nops), off(nops);
  for (int64_t i = 0; i < n; ++i) {
    std::fill(base.begin(), base.end(), 0);
    for (int64_t d = rout - 1, rem = i; d >= 0; --d) {
      const int64_t c = rem % s.out_shape[d];
      rem /= s.out_shape[d];
      for (int k = 0; k < nops; ++k) base[k] += c * s.out_strides[k][d];
    }
    double accf = 0;
    uint64_t acci = 0;
    for (int64_t j = 0; j < nred; ++j) {
      off = base;
      for (int64_t d = rred - 1, rem = j; d >= 0; --d) {
        const int64_t c = rem % s.red_dims[d];
        rem /= s.red_dims[d];
        for (int k = 0; k < nops; ++k) off[k] += c * s.red_strides[k][d];
      }
      if (fp) {
        double p = 1;
        for (int k = 0; k < nops; ++k) p *= host_get_f(*x[k], off[k]);
        accf += p;
      } else {
        uint64_t p = 1;
        for (int k = 0; k < nops; ++k) p *= static_cast<uint64_t>(host_get_i(*x[k], off[k]));
        acci += p;
      }
    }
    if (fp)
      host_set_f(y, i, accf);
    else
      host_set_i(y, i, static_cast<int64_t>(acci));
  }
  ctx.set_out_data(0, std::move(y));
}

void einsum_build(BuildContext& ctx) {
  const EinsumSpec s = einsum_spec(ctx);
  const int nops = ctx.num_inputs();
  const Operand y = ctx.output(0);
  const int64_t n = y.numel();
  if (n == 0) return;
  const DType t = ctx.in_type(0);
  std::string opts = " -DNOPS=" + std::to_string(nops) +
                     " -DNOUT=" + std::to_string(s.out_shape.size()) +
                     " -DNRED=" + std::to_string(s.red_dims.size());
  const char* acc = t == DType::Float64 ? "double" : is_float(t) ? "float" : "long";
  opts += std::string(" -DACC=") + acc;
  if (t == DType::Float64) opts += " -DUSE_FP64";
  int64_t largest_input = 0;
  for (int k = 0; k < nops; ++k) largest_input = std::max(largest_input, numel(ctx.in_shape(k)));
  opts += index_option({n, s.red_count(), largest_input});
  std::vector<cl_mem> bufs(kMaxOperands, ctx.in_buf(0));
  for (int k = 0; k < nops; ++k) {
    const Operand in = ctx.input(k);
    bufs[k] = in.mem;
    opts += " -DT" + std::to_string(k) + "=" + cl_type(in.dtype) +
            BuildContext::storage_option(("S" + std::to_string(k)).c_str(), in.dtype);
  }
  opts += std::string(" -DTY=") + cl_type(y.dtype) + BuildContext::storage_option("SY", y.dtype);
  std::vector<int64_t> p = s.out_shape;
  for (int k = 0; k < nops; ++k)
    p.insert(p.end(), s.out_strides[k].begin(), s.out_strides[k].end());
  p.insert(p.end(), s.red_dims.begin(), s.red_dims.end());
  for (int k = 0; k < nops; ++k)
    p.insert(p.end(), s.red_strides[k].begin(), s.red_strides[k].end());
  const size_t local = ctx.caps().linear_local();
  ctx.launch("einsum", "einsum_generic", opts, {round_up(static_cast<size_t>(n), local)}, {local},
             bufs[0], bufs[1], bufs[2], bufs[3], y.mem,
             ctx.params(p.data(), p.size() * sizeof(int64_t)), n);
}

// A multiply-add per output element and contracted combination.
double einsum_flops(const OpContext& ctx) {
  const EinsumSpec s = einsum_spec(ctx);
  return 2.0 * static_cast<double>(numel(s.out_shape)) * static_cast<double>(s.red_count());
}

}  // namespace

void add_einsum_ops(std::vector<OpDef>& t) {
  t.push_back(OpDef("Einsum", 12, einsum_infer)
                  .host(einsum_host)
                  .build(einsum_build)
                  .flops(einsum_flops)
                  .any_storage());
}

}  // namespace oi
