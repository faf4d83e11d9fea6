// Data-movement ops. Transpose, Slice, Expand, Tile, Concat, Split, DepthToSpace and SpaceToDepth
// are each a list of strided copies (ops/copy_view.hpp) that runs on the host for constant folding
// or through kernels/copy.cl on the device. Gather* and Pad have their own small kernels.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>

#include "ops/copy_view.hpp"
#include "ops/elementwise.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

void add_shape_ops(std::vector<OpDef>& t);

namespace {

using ocl_infer::shape_to_string;

// A copy-based op: views() describes its outputs; infer() has already set every output.
template <std::vector<CopyView> (*views)(const OpContext&)>
void copies_host(OpContext& ctx) {
  run_copies_host(ctx, views(ctx));
}
// Outputs the plan made views into input 0 (OpTraits::output_view_offset) are not copied.
template <std::vector<CopyView> (*views)(const OpContext&)>
void copies_build(BuildContext& ctx) {
  std::vector<CopyView> todo;
  for (auto& v : views(ctx))
    if (!ctx.output_is_view(v.output)) todo.push_back(v);
  run_copies_device(ctx, todo);
}

// Element offset at which output k is one contiguous run of input 0, or -1.
template <std::vector<CopyView> (*views)(const OpContext&)>
int64_t contiguous_view_offset(const OpContext& ctx, int k) {
  for (CopyView v : views(ctx)) {
    if (v.output != k || v.input != 0) continue;
    collapse_view(v);
    if (v.dims.size() != 1 || v.dims[0] == 0 || v.in_strides[0] != 1 || v.out_strides[0] != 1 ||
        v.out_offset != 0 || v.dims[0] != numel(ctx.out_shape(k)))
      return -1;
    return v.in_offset;
  }
  return -1;
}

// ---- Transpose -----------------------------------------------------------------------------
std::vector<int64_t> transpose_perm(const OpContext& ctx) {
  const int64_t r = static_cast<int64_t>(ctx.in_shape(0).size());
  std::vector<int64_t> def(r);
  for (int64_t d = 0; d < r; ++d) def[d] = r - 1 - d;
  std::vector<int64_t> perm = ctx.node().attr_ints("perm", def);
  if (static_cast<int64_t>(perm.size()) != r)
    ctx.fail("perm " + shape_to_string(perm) + " does not match the input rank " +
             std::to_string(r));
  std::vector<bool> seen(r, false);
  for (int64_t& p : perm) {
    p = ctx.axis(p, r);
    if (seen[p]) ctx.fail("perm " + shape_to_string(perm) + " is not a permutation");
    seen[p] = true;
  }
  return perm;
}

void transpose_infer(OpContext& ctx) {
  auto perm = transpose_perm(ctx);
  Shape out;
  for (int64_t p : perm) out.push_back(ctx.in_shape(0)[p]);
  ctx.set_out(0, ctx.in_type(0), out);
}

std::vector<CopyView> transpose_views(const OpContext& ctx) {
  return {permute_view(ctx.in_shape(0), transpose_perm(ctx))};
}

// ---- Slice ---------------------------------------------------------------------------------
struct SliceSpec {
  Shape out;
  std::vector<int64_t> start, step;
};

SliceSpec slice_spec(const OpContext& ctx) {
  const Shape& in = ctx.in_shape(0);
  const int64_t r = static_cast<int64_t>(in.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.node().attr_ints("starts", {});
    ends = ctx.node().attr_ints("ends", {});
    axes = ctx.node().attr_ints("axes", {});
  } else {
    starts = ctx.in_ints(1);
    ends = ctx.in_ints(2);
    if (ctx.has_input(3)) axes = ctx.in_ints(3);
    if (ctx.has_input(4)) steps = ctx.in_ints(4);
  }
  if (starts.size() != ends.size())
    ctx.fail("starts " + shape_to_string(starts) + " and ends " + shape_to_string(ends) +
             " differ in length");
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    ctx.fail("starts, ends, axes and steps must have the same length");
  SliceSpec s;
  s.out = in;
  s.start.assign(r, 0);
  s.step.assign(r, 1);
  std::vector<bool> seen(r, false);
  for (size_t k = 0; k < starts.size(); ++k) {
    const int64_t a = ctx.axis(axes[k], r);
    if (seen[a]) ctx.fail("axis " + std::to_string(axes[k]) + " is repeated");
    seen[a] = true;
    const int64_t dim = in[a], step = steps[k];
    if (step == 0) ctx.fail("steps must not be 0");
    int64_t b = starts[k], e = ends[k];
    if (b < 0) b += dim;
    if (e < 0) e += dim;
    int64_t count = 0;
    if (step > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      // (e - b - 1) / step + 1 rather than (e - b + step - 1) / step, which overflows for steps
      // near INT64_MAX (x[0::2^63-1] is one element).
      if (e > b) count = (e - b - 1) / step + 1;
    } else if (dim > 0) {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      // -step may overflow only for INT64_MIN, where one element is all a slice can take.
      if (b > e) count = step == INT64_MIN ? 1 : (b - e - 1) / (-step) + 1;
    }
    s.out[a] = count;
    s.start[a] = count > 0 ? b : 0;
    s.step[a] = step;
  }
  return s;
}

void slice_infer(OpContext& ctx) {
  ctx.set_out(0, ctx.in_type(0), slice_spec(ctx).out);
}

std::vector<CopyView> slice_views(const OpContext& ctx) {
  SliceSpec s = slice_spec(ctx);
  auto st = strides_of(ctx.in_shape(0));
  CopyView v;
  v.dims = s.out;
  v.out_strides = strides_of(s.out);
  for (size_t d = 0; d < st.size(); ++d) {
    // A dim of at most one element never moves along its stride (a huge step would overflow it).
    v.in_strides.push_back(s.out[d] > 1 ? st[d] * s.step[d] : 0);
    v.in_offset += s.start[d] * st[d];
  }
  return {v};
}

// ---- Expand --------------------------------------------------------------------------------
void expand_infer(OpContext& ctx) {
  Shape want = ctx.in_ints(1), out;
  if (!broadcast_shapes(ctx.in_shape(0), want, &out))
    ctx.fail("cannot expand " + shape_to_string(ctx.in_shape(0)) + " to " + shape_to_string(want));
  ctx.set_out(0, ctx.in_type(0), out);
}

std::vector<CopyView> expand_views(const OpContext& ctx) {
  const Shape& in = ctx.in_shape(0);
  CopyView v;
  v.dims = ctx.out_shape(0);
  v.out_strides = strides_of(v.dims);
  auto st = strides_of(in);
  const size_t off = v.dims.size() - in.size();
  for (size_t d = 0; d < v.dims.size(); ++d)
    v.in_strides.push_back(d < off || in[d - off] == 1 ? 0 : st[d - off]);
  return {v};
}

// ---- Tile ----------------------------------------------------------------------------------
std::vector<int64_t> tile_repeats(const OpContext& ctx) {
  auto reps = ctx.in_ints(1);
  if (reps.size() != ctx.in_shape(0).size())
    ctx.fail("repeats " + shape_to_string(reps) + " must have one entry per input dim " +
             shape_to_string(ctx.in_shape(0)));
  for (size_t d = 0; d < reps.size(); ++d)
    if (reps[d] < 0 || static_cast<double>(reps[d]) * ctx.in_shape(0)[d] > 1e12)
      ctx.fail("repeats " + shape_to_string(reps) + " must be non-negative and give a sane size");
  return reps;
}

void tile_infer(OpContext& ctx) {
  auto reps = tile_repeats(ctx);
  Shape out = ctx.in_shape(0);
  for (size_t d = 0; d < out.size(); ++d) out[d] *= reps[d];
  ctx.set_out(0, ctx.in_type(0), out);
}

// The output viewed as [r0, d0, r1, d1, ...]: the repeat dims read the input with stride 0.
std::vector<CopyView> tile_views(const OpContext& ctx) {
  auto reps = tile_repeats(ctx);
  const Shape& in = ctx.in_shape(0);
  auto ist = strides_of(in), ost = strides_of(ctx.out_shape(0));
  CopyView v;
  for (size_t d = 0; d < in.size(); ++d) {
    v.dims.insert(v.dims.end(), {reps[d], in[d]});
    v.in_strides.insert(v.in_strides.end(), {0, ist[d]});
    v.out_strides.insert(v.out_strides.end(), {in[d] * ost[d], ost[d]});
  }
  return {v};
}

// ---- Concat --------------------------------------------------------------------------------
int64_t concat_axis(const OpContext& ctx) {
  const int64_t r = static_cast<int64_t>(ctx.in_shape(0).size());
  if (r == 0) ctx.fail("cannot concatenate scalars");
  if (ctx.opset() >= 4 && !ctx.node().has("axis")) ctx.fail("attribute 'axis' is required");
  return ctx.axis(ctx.node().attr_int("axis", 1), r);
}

void concat_infer(OpContext& ctx) {
  const int64_t axis = concat_axis(ctx);
  Shape out = ctx.in_shape(0);
  out[axis] = 0;
  for (int k = 0; k < ctx.num_inputs(); ++k) {
    const Shape& s = ctx.in_shape(k);
    if (ctx.in_type(k) != ctx.in_type(0)) ctx.fail("input types differ");
    bool ok = s.size() == out.size();
    for (size_t d = 0; ok && d < s.size(); ++d)
      ok = d == static_cast<size_t>(axis) || s[d] == out[d];
    if (!ok)
      ctx.fail("input " + std::to_string(k) + " " + shape_to_string(s) + " does not match " +
               shape_to_string(ctx.in_shape(0)) + " outside axis " + std::to_string(axis));
    out[axis] += s[axis];
  }
  ctx.set_out(0, ctx.in_type(0), out);
}

std::vector<CopyView> concat_views(const OpContext& ctx) {
  const int64_t axis = concat_axis(ctx);
  auto ost = strides_of(ctx.out_shape(0));
  std::vector<CopyView> views;
  int64_t at = 0;
  for (int k = 0; k < ctx.num_inputs(); ++k) {
    CopyView v;
    v.input = k;
    v.dims = ctx.in_shape(k);
    v.in_strides = strides_of(v.dims);
    v.out_strides = ost;
    v.out_offset = at * ost[axis];
    at += v.dims[axis];
    views.push_back(v);
  }
  return views;
}

// The buffer planner may have placed some inputs inside the output already (their producers wrote
// into their slice); only the others are copied.
void concat_build(BuildContext& ctx) {
  std::vector<CopyView> todo;
  for (auto& v : concat_views(ctx))
    if (!ctx.input_in_place(v.input)) todo.push_back(v);
  run_copies_device(ctx, todo);
}

// Input k is one contiguous block of the output when every dim before the axis is 1: its bytes
// start at the sum of the earlier inputs' sizes.
int64_t concat_input_offset(const OpContext& ctx, int k) {
  const Shape& os = ctx.out_shape(0);
  const int64_t axis = concat_axis(ctx);
  for (int64_t d = 0; d < axis; ++d)
    if (os[d] != 1) return -1;
  int64_t off = 0;
  for (int j = 0; j < k; ++j) off += numel(ctx.in_shape(j));
  return off;
}

// ---- Split ---------------------------------------------------------------------------------
std::vector<int64_t> split_sizes(const OpContext& ctx, int64_t* axis_out) {
  const Shape& in = ctx.in_shape(0);
  const int64_t axis = ctx.axis(ctx.node().attr_int("axis", 0), static_cast<int64_t>(in.size()));
  *axis_out = axis;
  const int64_t dim = in[axis], n = ctx.num_outputs();
  std::vector<int64_t> sizes;
  bool given = false;
  if (ctx.opset() >= 13 && ctx.has_input(1)) {
    sizes = ctx.in_ints(1);
    given = true;
  } else if (ctx.opset() < 13 && ctx.node().has("split")) {
    sizes = ctx.node().attr_ints("split", {});
    given = true;
  }
  if (!given) {
    if (ctx.node().has("num_outputs")) {
      // Opset 18 style: equal chunks of ceil(dim / n), the last one smaller.
      int64_t k = ctx.node().attr_int("num_outputs", n);
      if (k != n) ctx.fail("num_outputs does not match the number of outputs");
      int64_t chunk = (dim + n - 1) / n;
      for (int64_t i = 0; i < n; ++i)
        sizes.push_back(std::clamp<int64_t>(dim - i * chunk, 0, chunk));
    } else {
      if (dim % n != 0)
        ctx.fail("cannot split dim " + std::to_string(dim) + " into " + std::to_string(n) +
                 " equal parts");
      sizes.assign(n, dim / n);
    }
  }
  if (static_cast<int64_t>(sizes.size()) != n)
    ctx.fail("split " + shape_to_string(sizes) + " has " + std::to_string(sizes.size()) +
             " entries for " + std::to_string(n) + " outputs");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0 || s > dim) ctx.fail("split " + shape_to_string(sizes) + " has a size outside [0, " + std::to_string(dim) + "]");
    total += s;  // each <= dim: no overflow before the sum passes dim
    if (total > dim) break;
  }
  if (total != dim)
    ctx.fail("split " + shape_to_string(sizes) + " does not add up to dim " + std::to_string(dim));
  return sizes;
}

void split_infer(OpContext& ctx) {
  int64_t axis;
  auto sizes = split_sizes(ctx, &axis);
  for (int k = 0; k < ctx.num_outputs(); ++k) {
    Shape s = ctx.in_shape(0);
    s[axis] = sizes[k];
    ctx.set_out(k, ctx.in_type(0), s);
  }
}

std::vector<CopyView> split_views(const OpContext& ctx) {
  int64_t axis;
  auto sizes = split_sizes(ctx, &axis);
  auto ist = strides_of(ctx.in_shape(0));
  std::vector<CopyView> views;
  int64_t at = 0;
  for (int k = 0; k < ctx.num_outputs(); ++k) {
    CopyView v;
    v.output = k;
    v.dims = ctx.in_shape(0);
    v.dims[axis] = sizes[k];
    v.in_strides = ist;
    v.in_offset = at * ist[axis];
    v.out_strides = strides_of(v.dims);
    at += sizes[k];
    views.push_back(v);
  }
  return views;
}

// ---- DepthToSpace, SpaceToDepth --------------------------------------------------------------
// Both are a reshape to 6-D, a transpose and a reshape back: one permuted copy.
int64_t block_size(const OpContext& ctx) {
  if (ctx.in_shape(0).size() != 4)
    ctx.fail("input must be 4-D, got " + shape_to_string(ctx.in_shape(0)));
  int64_t b = ctx.node().attr_int("blocksize", 0);
  if (b <= 0) ctx.fail("blocksize must be positive");
  return b;
}

void depth_to_space_infer(OpContext& ctx) {
  const int64_t b = block_size(ctx);
  const Shape& s = ctx.in_shape(0);
  if (s[1] % (b * b) != 0)
    ctx.fail("channels " + std::to_string(s[1]) + " are not divisible by blocksize^2");
  std::string mode = ctx.node().attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") ctx.fail("mode must be DCR or CRD, not '" + mode + "'");
  ctx.set_out(0, ctx.in_type(0), {s[0], s[1] / (b * b), s[2] * b, s[3] * b});
}

std::vector<CopyView> depth_to_space_views(const OpContext& ctx) {
  const int64_t b = block_size(ctx);
  const Shape& s = ctx.in_shape(0);
  const int64_t c = s[1] / (b * b);
  if (ctx.node().attr_string("mode", "DCR") == "DCR")
    return {permute_view({s[0], b, b, c, s[2], s[3]}, {0, 3, 4, 1, 5, 2})};
  return {permute_view({s[0], c, b, b, s[2], s[3]}, {0, 1, 4, 2, 5, 3})};
}

void space_to_depth_infer(OpContext& ctx) {
  const int64_t b = block_size(ctx);
  const Shape& s = ctx.in_shape(0);
  if (s[2] % b != 0 || s[3] % b != 0)
    ctx.fail("spatial dims of " + shape_to_string(s) + " are not divisible by blocksize");
  ctx.set_out(0, ctx.in_type(0), {s[0], s[1] * b * b, s[2] / b, s[3] / b});
}

std::vector<CopyView> space_to_depth_views(const OpContext& ctx) {
  const int64_t b = block_size(ctx);
  const Shape& s = ctx.in_shape(0);
  return {permute_view({s[0], s[1], s[2] / b, b, s[3] / b, b}, {0, 3, 5, 1, 2, 4})};
}

// ---- Gather --------------------------------------------------------------------------------
void check_indices(const OpContext& ctx, int i) {
  DType t = ctx.in_type(i);
  if (t != DType::Int32 && t != DType::Int64)
    ctx.fail(std::string("indices must be int32 or int64, not ") + ocl_infer::dtype_name(t));
}

// Normalises a host index against `dim`; fails when out of range.
int64_t host_index(const OpContext& ctx, int64_t ix, int64_t dim) {
  if (ix < -dim || ix >= dim)
    ctx.fail("index " + std::to_string(ix) + " is out of range for a dim of " +
             std::to_string(dim));
  return ix < 0 ? ix + dim : ix;
}

void gather_infer(OpContext& ctx) {
  check_indices(ctx, 1);
  const Shape& d = ctx.in_shape(0);
  const int64_t axis = ctx.axis(ctx.node().attr_int("axis", 0), static_cast<int64_t>(d.size()));
  Shape out(d.begin(), d.begin() + axis);
  const Shape& is = ctx.in_shape(1);
  out.insert(out.end(), is.begin(), is.end());
  out.insert(out.end(), d.begin() + axis + 1, d.end());
  ctx.set_out(0, ctx.in_type(0), out);
}

struct GatherDims {
  int64_t outer = 1, axis_dim = 1, inner = 1, nidx = 1;
};

GatherDims gather_dims(const OpContext& ctx) {
  const Shape& d = ctx.in_shape(0);
  const int64_t axis = ctx.axis(ctx.node().attr_int("axis", 0), static_cast<int64_t>(d.size()));
  GatherDims g;
  for (int64_t k = 0; k < static_cast<int64_t>(d.size()); ++k) {
    if (k < axis) g.outer *= d[k];
    if (k > axis) g.inner *= d[k];
  }
  g.axis_dim = d[axis];
  g.nidx = numel(ctx.in_shape(1));
  return g;
}

void gather_host(OpContext& ctx) {
  const GatherDims g = gather_dims(ctx);
  const Tensor& data = ctx.in_data(0);
  const Tensor& idx = ctx.in_data(1);
  const size_t es = copy_elem_size(ctx, data.dtype);
  Tensor out(data.dtype, ctx.out_shape(0));
  for (int64_t j = 0; j < g.nidx; ++j) {
    const int64_t ix = host_index(ctx, host_get_i(idx, j), g.axis_dim);
    for (int64_t o = 0; o < g.outer; ++o)
      std::memcpy(out.bytes.data() + ((o * g.nidx + j) * g.inner) * es,
                  data.bytes.data() + ((o * g.axis_dim + ix) * g.inner) * es,
                  static_cast<size_t>(g.inner) * es);
  }
  ctx.set_out_data(0, std::move(out));
}

std::string index_type_option(const OpContext& ctx, int i) {
  return ctx.in_type(i) == DType::Int32 ? " -DTI=int" : " -DTI=long";
}

// Indices known at plan time are checked there: ONNX makes an out-of-range index an error, and the
// kernel would read outside the tensor.
void check_const_indices(const OpContext& ctx, int64_t dim) {
  if (!ctx.is_const(1)) return;
  const Tensor& idx = ctx.in_data(1);
  for (int64_t i = 0; i < idx.numel(); ++i) host_index(ctx, host_get_i(idx, i), dim);
}

// The error flag of a gather whose indices are computed at run time ("an index of OP is out of
// range ..."); constant indices were checked at plan time, and their launches get a buffer that the
// kernel never writes.
cl_mem index_error_flag(BuildContext& ctx, const std::string& range) {
  if (ctx.is_const(1)) return ctx.out_buf(0);
  return ctx.error_flag("an index of " + ctx.node().op_type + " is out of range for " + range);
}

void gather_build(BuildContext& ctx) {
  const GatherDims g = gather_dims(ctx);
  const int64_t n = numel(ctx.out_shape(0));
  if (n == 0) return;
  if (g.axis_dim == 0) ctx.fail("cannot gather from an empty axis");
  check_const_indices(ctx, g.axis_dim);
  const size_t local = ctx.caps().linear_local();
  const std::string range = "an axis of " + std::to_string(g.axis_dim) + " (data " + shape_to_string(ctx.in_shape(0)) + ")";
  if (ctx.caps().is_cpu() && g.inner >= 64) {
    // Whole rows as runs of up to 4096 elements a work-item (local size 1).
    const int64_t chunk = std::min<int64_t>(g.inner, 4096);
    ctx.launch("gather", "gather_rows",
               word_option(ctx, ctx.input(0).dtype) + index_type_option(ctx, 1) +
                   index_option({n, numel(ctx.in_shape(0))}),
               {static_cast<size_t>((g.inner + chunk - 1) / chunk), static_cast<size_t>(g.outer * g.nidx)}, {1, 1},
               ctx.in_buf(0), ctx.in_buf(1), ctx.out_buf(0), g.inner, g.nidx, g.axis_dim, chunk,
               index_error_flag(ctx, range));
    return;
  }
  ctx.launch("gather", "gather_axis",
             word_option(ctx, ctx.input(0).dtype) + index_type_option(ctx, 1) +
                 index_option({n, numel(ctx.in_shape(0))}),
             {round_up(static_cast<size_t>(n), local)}, {local}, ctx.in_buf(0), ctx.in_buf(1),
             ctx.out_buf(0), g.inner, g.nidx, g.axis_dim, n, index_error_flag(ctx, range));
}

// ---- GatherElements ------------------------------------------------------------------------
void gather_elements_infer(OpContext& ctx) {
  check_indices(ctx, 1);
  const Shape &d = ctx.in_shape(0), &is = ctx.in_shape(1);
  if (d.size() != is.size())
    ctx.fail("data " + shape_to_string(d) + " and indices " + shape_to_string(is) +
             " must have the same rank");
  ctx.axis(ctx.node().attr_int("axis", 0), static_cast<int64_t>(d.size()));
  ctx.set_out(0, ctx.in_type(0), is);
}

void gather_elements_host(OpContext& ctx) {
  const Tensor& data = ctx.in_data(0);
  const Tensor& idx = ctx.in_data(1);
  const int64_t r = static_cast<int64_t>(data.shape.size());
  const int64_t axis = ctx.axis(ctx.node().attr_int("axis", 0), r);
  const size_t es = copy_elem_size(ctx, data.dtype);
  auto dst = strides_of(data.shape);
  Tensor out(data.dtype, idx.shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t rem = i, src = 0;
    for (int64_t d = r - 1; d >= 0; --d) {
      int64_t c = rem % idx.shape[d];
      rem /= idx.shape[d];
      if (d == axis) c = host_index(ctx, host_get_i(idx, i), data.shape[d]);
      src += c * dst[d];
    }
    std::memcpy(out.bytes.data() + i * es, data.bytes.data() + src * es, es);
  }
  ctx.set_out_data(0, std::move(out));
}

void gather_elements_build(BuildContext& ctx) {
  const Shape& d = ctx.in_shape(0);
  const int64_t r = static_cast<int64_t>(d.size());
  const int64_t axis = ctx.axis(ctx.node().attr_int("axis", 0), r);
  check_const_indices(ctx, d[axis]);
  const int64_t n = numel(ctx.out_shape(0));
  if (n == 0) return;
  std::vector<int64_t> p = ctx.out_shape(0);
  auto st = strides_of(d);
  p.insert(p.end(), st.begin(), st.end());
  const size_t local = ctx.caps().linear_local();
  ctx.launch("gather", "gather_elements",
             word_option(ctx, ctx.input(0).dtype) + index_type_option(ctx, 1),
             {round_up(static_cast<size_t>(n), local)}, {local}, ctx.in_buf(0), ctx.in_buf(1),
             ctx.out_buf(0), ctx.params(p.data(), p.size() * sizeof(int64_t)),
             static_cast<int32_t>(r), static_cast<int32_t>(axis), d[axis], n,
             index_error_flag(ctx, "axis " + std::to_string(axis) + " of data " + shape_to_string(d)));
}

// ---- GatherND ------------------------------------------------------------------------------
struct GatherNdDims {
  int64_t batch = 1, nsel = 1, depth = 0, slice = 1, batch_stride = 1;
  Shape indexed;  // the `depth` data dims an index tuple addresses
  std::vector<int64_t> indexed_strides;
};

GatherNdDims gather_nd_dims(const OpContext& ctx) {
  const Shape &d = ctx.in_shape(0), &is = ctx.in_shape(1);
  const int64_t b = ctx.node().attr_int("batch_dims", 0);
  const int64_t rd = static_cast<int64_t>(d.size()), ri = static_cast<int64_t>(is.size());
  if (ri < 1) ctx.fail("indices must have rank >= 1");
  if (b < 0 || b >= std::min(rd, ri))
    ctx.fail("batch_dims " + std::to_string(b) + " is out of range");
  GatherNdDims g;
  g.depth = is.back();
  if (g.depth < 1 || b + g.depth > rd)
    ctx.fail("the last indices dim " + std::to_string(g.depth) + " does not fit data " +
             shape_to_string(d) + " with batch_dims " + std::to_string(b));
  for (int64_t k = 0; k < b; ++k) {
    if (d[k] != is[k]) ctx.fail("batch dims of data and indices differ");
    g.batch *= d[k];
  }
  for (int64_t k = b; k < ri - 1; ++k) g.nsel *= is[k];
  for (int64_t k = b + g.depth; k < rd; ++k) g.slice *= d[k];
  auto st = strides_of(d);
  g.batch_stride = b > 0 ? st[b - 1] : numel(d);
  for (int64_t k = b; k < b + g.depth; ++k) {
    g.indexed.push_back(d[k]);
    g.indexed_strides.push_back(st[k]);
  }
  return g;
}

void gather_nd_infer(OpContext& ctx) {
  check_indices(ctx, 1);
  const GatherNdDims g = gather_nd_dims(ctx);
  const Shape &d = ctx.in_shape(0), &is = ctx.in_shape(1);
  const int64_t b = ctx.node().attr_int("batch_dims", 0);
  Shape out(is.begin(), is.end() - 1);
  out.insert(out.end(), d.begin() + b + g.depth, d.end());
  ctx.set_out(0, ctx.in_type(0), out);
}

void gather_nd_host(OpContext& ctx) {
  const GatherNdDims g = gather_nd_dims(ctx);
  const Tensor& data = ctx.in_data(0);
  const Tensor& idx = ctx.in_data(1);
  const size_t es = copy_elem_size(ctx, data.dtype);
  Tensor out(data.dtype, ctx.out_shape(0));
  for (int64_t s = 0; s < g.batch * g.nsel; ++s) {
    int64_t src = (s / g.nsel) * g.batch_stride;
    for (int64_t k = 0; k < g.depth; ++k)
      src += host_index(ctx, host_get_i(idx, s * g.depth + k), g.indexed[k]) * g.indexed_strides[k];
    std::memcpy(out.bytes.data() + s * g.slice * es, data.bytes.data() + src * es,
                static_cast<size_t>(g.slice) * es);
  }
  ctx.set_out_data(0, std::move(out));
}

void gather_nd_build(BuildContext& ctx) {
  const GatherNdDims g = gather_nd_dims(ctx);
  const int64_t n = numel(ctx.out_shape(0));
  if (n == 0) return;
  if (ctx.is_const(1)) {
    const Tensor& idx = ctx.in_data(1);
    for (int64_t i = 0; i < idx.numel(); ++i) host_index(ctx, host_get_i(idx, i), g.indexed[i % g.depth]);
  }
  std::vector<int64_t> p = g.indexed;
  p.insert(p.end(), g.indexed_strides.begin(), g.indexed_strides.end());
  const size_t local = ctx.caps().linear_local();
  ctx.launch("gather", "gather_nd", word_option(ctx, ctx.input(0).dtype) + index_type_option(ctx, 1),
             {round_up(static_cast<size_t>(n), local)}, {local}, ctx.in_buf(0), ctx.in_buf(1),
             ctx.out_buf(0), ctx.params(p.data(), p.size() * sizeof(int64_t)),
             static_cast<int32_t>(g.depth), g.slice, g.nsel, g.batch_stride, n,
             index_error_flag(ctx, "data " + shape_to_string(ctx.in_shape(0))));
}

// ---- Pad -----------------------------------------------------------------------------------
struct PadSpec {
  std::vector<int64_t> begin, end;
  std::string mode;
};

PadSpec pad_spec(const OpContext& ctx) {
  const Shape& in = ctx.in_shape(0);
  const size_t r = in.size();
  PadSpec p;
  p.mode = ctx.node().attr_string("mode", "constant");
  if (p.mode != "constant" && p.mode != "reflect" && p.mode != "edge" && p.mode != "wrap")
    ctx.fail("mode must be constant, reflect, edge or wrap, not '" + p.mode + "'");
  if (p.mode == "wrap" && ctx.opset() < 19) ctx.fail("mode 'wrap' needs opset 19 or newer");
  std::vector<int64_t> pads;
  if (ctx.opset() < 11) {
    pads = ctx.node().attr_ints(ctx.node().has("pads") ? "pads" : "paddings", {});
  } else {
    pads = ctx.in_ints(1);
  }
  // Pad-18's axes: pads name only those dims (begins, then ends), the others keep zero pads.
  std::vector<int64_t> axes;
  if (ctx.opset() >= 18 && ctx.has_input(3)) {
    axes = ctx.axes(ctx.in_ints(3), static_cast<int64_t>(r));
  } else {
    for (size_t d = 0; d < r; ++d) axes.push_back(static_cast<int64_t>(d));
  }
  if (pads.size() != 2 * axes.size())
    ctx.fail("pads " + shape_to_string(pads) + " must have 2 x " + (ctx.has_input(3) ? "the axes' count" : "rank") +
             " (" + std::to_string(2 * axes.size()) + ") entries");
  p.begin.assign(r, 0);
  p.end.assign(r, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    p.begin[axes[i]] = pads[i];
    p.end[axes[i]] = pads[i + axes.size()];
  }
  return p;
}

void pad_infer(OpContext& ctx) {
  const PadSpec p = pad_spec(ctx);
  const Shape& in = ctx.in_shape(0);
  Shape out(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    if (std::abs(p.begin[d]) > (int64_t{1} << 40) || std::abs(p.end[d]) > (int64_t{1} << 40))
      ctx.fail("pads " + shape_to_string(p.begin) + " / " + shape_to_string(p.end) + " are absurd");
    out[d] = in[d] + p.begin[d] + p.end[d];
    if (out[d] < 0) ctx.fail("pads crop more than dim " + std::to_string(d) + " holds");
    if (p.mode != "constant" && in[d] == 0 && out[d] > 0)
      ctx.fail("cannot " + p.mode + "-pad an empty dim " + std::to_string(d));
    // wrap crops first (negative pads), then wraps around what is left (ONNX Runtime).
    if (p.mode == "wrap" && out[d] > in[d] + std::min<int64_t>(0, p.begin[d]) + std::min<int64_t>(0, p.end[d]) &&
        in[d] + std::min<int64_t>(0, p.begin[d]) + std::min<int64_t>(0, p.end[d]) <= 0)
      ctx.fail("wrap pads " + shape_to_string(p.begin) + " / " + shape_to_string(p.end) + " crop dim " +
               std::to_string(d) + " to nothing and then pad it");
    // Reflection mirrors the input once: a pad must be shorter than the dim (numpy and ONNX
    // Runtime refuse wider ones too).
    if (p.mode == "reflect" && (p.begin[d] >= in[d] || p.end[d] >= in[d]) && (p.begin[d] > 0 || p.end[d] > 0))
      ctx.fail("reflect pads " + shape_to_string(p.begin) + " / " + shape_to_string(p.end) +
               " must be smaller than the input dims " + shape_to_string(in));
  }
  if (ctx.opset() >= 11 && ctx.has_input(2)) {
    if (ctx.in_type(2) != ctx.in_type(0)) ctx.fail("constant_value must have the input's type");
    if (numel(ctx.in_shape(2)) != 1) ctx.fail("constant_value must hold one element");
  }
  ctx.set_out(0, ctx.in_type(0), out);
}

// The constant as one element of the input's type.
Tensor pad_value(const OpContext& ctx) {
  Tensor v(ctx.in_type(0), {});
  if (ctx.opset() < 11) {
    host_set_f(v, 0, ctx.node().attr_float("value", 0.f));
  } else if (ctx.has_input(2)) {
    v.bytes = ctx.in_data(2).bytes;
  }
  return v;
}

void pad_host(OpContext& ctx) {
  const PadSpec p = pad_spec(ctx);
  const Tensor& x = ctx.in_data(0);
  const size_t es = copy_elem_size(ctx, x.dtype);
  const Tensor value = pad_value(ctx);
  Tensor y(x.dtype, ctx.out_shape(0));
  auto st = strides_of(x.shape);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t rem = i, src = 0;
    bool inside = true;
    for (int64_t d = r - 1; d >= 0; --d) {
      int64_t c = rem % y.shape[d] - p.begin[d];
      rem /= y.shape[d];
      const int64_t len = x.shape[d];
      if (c < 0 || c >= len) {
        if (p.mode == "constant") {
          inside = false;
          break;
        }
        if (p.mode == "edge" || len == 1) {
          c = c < 0 ? 0 : len - 1;
        } else if (p.mode == "wrap") {
          // Around the part that negative pads leave: [lo, hi).
          const int64_t lo = std::max<int64_t>(0, -p.begin[d]), span = len - lo - std::max<int64_t>(0, -p.end[d]);
          c = (c - lo) % span;
          if (c < 0) c += span;
          c += lo;
        } else {
          const int64_t period = 2 * (len - 1);
          c %= period;
          if (c < 0) c += period;
          if (c >= len) c = period - c;
        }
      }
      src += c * st[d];
    }
    std::memcpy(y.bytes.data() + i * es, inside ? x.bytes.data() + src * es : value.bytes.data(),
                es);
  }
  ctx.set_out_data(0, std::move(y));
}

void pad_build(BuildContext& ctx) {
  const PadSpec p = pad_spec(ctx);
  const Shape& in = ctx.in_shape(0);
  const Shape& out = ctx.out_shape(0);
  const int64_t n = numel(out);
  if (n == 0) return;
  std::vector<int64_t> prm = out;
  prm.insert(prm.end(), in.begin(), in.end());
  prm.insert(prm.end(), p.begin.begin(), p.begin.end());
  auto st = strides_of(in);
  prm.insert(prm.end(), st.begin(), st.end());
  // wrap: per dim the start of the part negative pads leave, and its length.
  if (p.mode == "wrap") {
    for (size_t d = 0; d < in.size(); ++d) prm.push_back(std::max<int64_t>(0, -p.begin[d]));
    for (size_t d = 0; d < in.size(); ++d)
      prm.push_back(in[d] - std::max<int64_t>(0, -p.begin[d]) - std::max<int64_t>(0, -p.end[d]));
  }
  // A runtime constant_value is read straight from its buffer.
  cl_mem value;
  if (ctx.opset() >= 11 && ctx.has_input(2)) {
    value = ctx.in_buf(2);
  } else {
    Tensor v = convert_elements(pad_value(ctx), ctx.input(0).dtype);  // in the input's storage
    value = ctx.params(v.bytes.data(), v.bytes.size());
  }
  std::string mode = p.mode == "constant" ? "CONSTANT" : p.mode == "edge" ? "EDGE" : p.mode == "wrap" ? "WRAP" : "REFLECT";
  const size_t local = ctx.caps().linear_local();
  ctx.launch("pad", "pad_generic",
             word_option(ctx, ctx.input(0).dtype) + " -DMODE_" + mode + index_option({n, numel(in)}),
             {round_up(static_cast<size_t>(n), local)}, {local}, ctx.in_buf(0), ctx.out_buf(0),
             ctx.params(prm.data(), prm.size() * sizeof(int64_t)), value,
             static_cast<int32_t>(in.size()), n);
}

// Data movement: elements are copied, never computed, so float operands may be stored in either
// float type, the same for all of them.
OpDef mover(OpDef d) { return d.shared_storage().any_storage(); }

}  // namespace

void add_tensor_ops(std::vector<OpDef>& t) {
  add_shape_ops(t);
  t.push_back(mover(OpDef("Transpose", 1, transpose_infer).host(copies_host<transpose_views>).build(copies_build<transpose_views>)));
  for (int v : {1, 10}) {
    OpDef d = OpDef("Slice", v, slice_infer).host(copies_host<slice_views>).build(copies_build<slice_views>);
    if (v >= 10) d.value_inputs({1, 2, 3, 4});
    t.push_back(mover(d.output_views(contiguous_view_offset<slice_views>)));
  }
  t.push_back(mover(OpDef("Expand", 8, expand_infer).host(copies_host<expand_views>).build(copies_build<expand_views>).value_inputs({1})));
  t.push_back(mover(OpDef("Tile", 6, tile_infer).host(copies_host<tile_views>).build(copies_build<tile_views>).value_inputs({1})));
  t.push_back(mover(OpDef("Concat", 1, concat_infer).host(copies_host<concat_views>).build(concat_build).input_slices(concat_input_offset)));
  for (int v : {2, 13}) {
    OpDef d = OpDef("Split", v, split_infer).host(copies_host<split_views>).build(copies_build<split_views>);
    if (v >= 13) d.value_inputs({1});
    t.push_back(mover(d.output_views(contiguous_view_offset<split_views>)));
  }
  t.push_back(mover(OpDef("DepthToSpace", 1, depth_to_space_infer)
                  .host(copies_host<depth_to_space_views>)
                  .build(copies_build<depth_to_space_views>)));
  t.push_back(mover(OpDef("SpaceToDepth", 1, space_to_depth_infer)
                  .host(copies_host<space_to_depth_views>)
                  .build(copies_build<space_to_depth_views>)));
  t.push_back(mover(OpDef("Gather", 1, gather_infer).host(gather_host).build(gather_build)));
  t.push_back(mover(OpDef("GatherElements", 11, gather_elements_infer).host(gather_elements_host).build(gather_elements_build)));
  t.push_back(mover(OpDef("GatherND", 11, gather_nd_infer).host(gather_nd_host).build(gather_nd_build)));
  t.push_back(mover(OpDef("Pad", 2, pad_infer).host(pad_host).build(pad_build)));
  t.push_back(mover(OpDef("Pad", 11, pad_infer).host(pad_host).build(pad_build).value_inputs({1})));
  // Pad-18: the axes input; Pad-19: the wrap mode.
  for (int v : {18, 19})
    t.push_back(mover(OpDef("Pad", v, pad_infer).host(pad_host).build(pad_build).value_inputs({1, 3})));
}

}  // namespace oi
