// TopK (opsets 1, 10, 11): the K largest or smallest elements along one axis, with their int64
// indices, always sorted (best first; sorted=0 allows any order, so sorted is what it gets).
// Order: values compare as numbers (-0 == +0), NaN above every other value (as numpy and ONNX
// Runtime sort), and equal values keep the lower index first. The host path (constant folding)
// and kernels/topk.cl implement the same order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "ops/copy_view.hpp"
#include "ops/elementwise.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

namespace {

using ocl_infer::shape_to_string;

struct TopKSpec {
  int64_t axis = 0, k = 0, n = 0, outer = 1, inner = 1;
  bool largest = true;
};

TopKSpec topk_spec(const OpContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  const int64_t r = static_cast<int64_t>(x.size());
  if (r == 0) ctx.fail("input X must have rank >= 1, got a scalar");
  TopKSpec s;
  s.axis = ctx.axis(ctx.node().attr_int("axis", -1), r);
  if (ctx.opset() < 10) {
    if (!ctx.node().has("k")) ctx.fail("attribute k is required");
    s.k = ctx.node().attr_int("k", 0);
  } else {
    const std::vector<int64_t> k = ctx.in_ints(1);
    if (k.size() != 1)
      ctx.fail("K must hold exactly one value, got " + std::to_string(k.size()) + " (shape " +
               shape_to_string(ctx.in_shape(1)) + ")");
    s.k = k[0];
  }
  s.n = x[s.axis];
  if (s.k < 0) ctx.fail("K must not be negative, got " + std::to_string(s.k));
  if (s.k > s.n)
    ctx.fail("K = " + std::to_string(s.k) + " is larger than axis " + std::to_string(s.axis) +
             " of X " + shape_to_string(x) + " (" + std::to_string(s.n) + " elements)");
  if (ctx.opset() >= 11) s.largest = ctx.node().attr_int("largest", 1) != 0;
  for (int64_t d = 0; d < r; ++d) {
    if (d < s.axis) s.outer *= x[d];
    if (d > s.axis) s.inner *= x[d];
  }
  return s;
}

void topk_infer(OpContext& ctx) {
  const TopKSpec s = topk_spec(ctx);
  const DType t = ctx.in_type(0);
  if (t == DType::Bool || t == DType::String || t == DType::Undefined)
    ctx.unsupported(std::string("TopK of ") + ocl_infer::dtype_name(t) +
                    " tensors is not supported");
  Shape out = ctx.in_shape(0);
  out[s.axis] = s.k;
  ctx.set_out(0, t, out);
  if (ctx.has_output(1)) ctx.set_out(1, DType::Int64, out);
}

void topk_host(OpContext& ctx) {
  const TopKSpec s = topk_spec(ctx);
  const Tensor& x = ctx.in_data(0);
  const bool fl = is_float(x.dtype);
  const size_t es = copy_elem_size(ctx, x.dtype);
  Shape os = x.shape;
  os[s.axis] = s.k;
  Tensor y(x.dtype, os), yi(DType::Int64, os);
  std::vector<int64_t> order(static_cast<size_t>(s.n));
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      auto at = [&](int64_t j) { return (o * s.n + j) * s.inner + in; };
      // Strict weak order "a comes before b"; equal values keep index order (stable sort).
      auto before = [&](int64_t a, int64_t b) {
        if (fl) {
          const double va = host_get_f(x, at(a)), vb = host_get_f(x, at(b));
          const bool na = std::isnan(va), nb = std::isnan(vb);
          if (na || nb) return s.largest ? (na && !nb) : (!na && nb);
          return s.largest ? va > vb : va < vb;
        }
        const int64_t va = host_get_i(x, at(a)), vb = host_get_i(x, at(b));
        if (x.dtype == DType::UInt64) {
          const uint64_t ua = static_cast<uint64_t>(va), ub = static_cast<uint64_t>(vb);
          return s.largest ? ua > ub : ua < ub;
        }
        return s.largest ? va > vb : va < vb;
      };
      std::iota(order.begin(), order.end(), int64_t{0});
      std::stable_sort(order.begin(), order.end(), before);
      for (int64_t j = 0; j < s.k; ++j) {
        const int64_t dst = (o * s.k + j) * s.inner + in;
        std::memcpy(y.bytes.data() + dst * es, x.bytes.data() + at(order[j]) * es, es);
        yi.data<int64_t>()[dst] = order[j];
      }
    }
  ctx.set_out_data(0, std::move(y));
  if (ctx.has_output(1)) ctx.set_out_data(1, std::move(yi));
}

// The rank kernel parallelises over every element, the heap kernel over slices only. On PoCL
// (2-core Xeon, 2026-12-04, min of 5 runs) the heap was faster at every size measured: [1,64]
// K 64 1.4 vs 7.3 us, [1,1024] K 1000 67 us vs 1.8 ms, [1,20000] K 1000 0.34 vs 102 ms,
// [80,1000] K 10 94 us vs 4.9 ms, [4096,16] K 16 0.85 vs 2.4 ms. On GPUs (not measured here) a
// slice per work-item leaves most of the device idle when there are few slices, so the rank kernel
// takes short axes with few slices there; its O(n^2) comparisons per slice rule out long axes.
bool use_rank_kernel(const BuildContext& ctx, const TopKSpec& s) {
  if (ctx.caps().is_cpu()) return false;
  return s.n <= 2048 && s.outer * s.inner < 1024;
}

void topk_build(BuildContext& ctx) {
  const TopKSpec s = topk_spec(ctx);
  if (s.k == 0 || s.outer * s.inner == 0) return;
  const DType xt = ctx.input(0).dtype;
  const DType yt = ctx.output(0).dtype;
  if (is_float(xt) != is_float(yt) || (!is_float(xt) && xt != yt))
    ctx.unsupported("values output storage differs from the input's");
  std::string opts = type_defines({{"TX", xt}, {"TY", yt}});
  if (xt == DType::Float32 || xt == DType::Float16) {
    if (yt == DType::Float64) ctx.unsupported("float32 input with a float64 output");
    opts += " -DKEY_F32";
  } else if (xt == DType::Float64) {
    opts += " -DKEY_F64";
  } else if (xt == DType::UInt8 || xt == DType::UInt16 || xt == DType::UInt32 ||
             xt == DType::UInt64) {
    opts += " -DKEY_UNSIGNED";
  } else {
    opts += " -DKEY_SIGNED";
  }
  opts += s.largest ? " -DLARGEST" : "";
  // Without the indices output the kernels still need them (the heap lives there): a scratch.
  cl_mem yi = ctx.has_output(1) ? ctx.out_buf(1) : ctx.scratch(DType::Int64, ctx.out_shape(0)).mem;
  const int64_t slices = s.outer * s.inner;
  if (use_rank_kernel(ctx, s)) {
    const size_t local = static_cast<size_t>(std::min<int64_t>(s.n, 64));
    ctx.launch("topk", "topk_rank", opts,
               {round_up(static_cast<size_t>(s.n), local), static_cast<size_t>(slices)}, {local, 1},
               ctx.in_buf(0), ctx.out_buf(0), yi, s.n, s.k, s.inner);
    return;
  }
  ctx.launch("topk", "topk_heap", opts, {static_cast<size_t>(slices)}, {}, ctx.in_buf(0),
             ctx.out_buf(0), yi, s.n, s.k, s.inner, slices);
}

}  // namespace

void add_topk_ops(std::vector<OpDef>& t) {
  t.push_back(OpDef("TopK", 1, topk_infer).host(topk_host).build(topk_build).any_storage());
  t.push_back(OpDef("TopK", 10, topk_infer)
                  .host(topk_host)
                  .build(topk_build)
                  .value_inputs({1})
                  .any_storage());
  t.push_back(OpDef("TopK", 11, topk_infer)
                  .host(topk_host)
                  .build(topk_build)
                  .value_inputs({1})
                  .any_storage());
}

}  // namespace oi
