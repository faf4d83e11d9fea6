// Ops whose output shapes depend on input values: NonZero, Compress, Unique, NonMaxSuppression.
// They run on the host (OpTraits::data_dependent): the compiler evaluates them once every input is
// known there. Each op has one function that computes its outputs from the inputs' data; infer()
// runs it for the shapes and host() for the data, so the two can never disagree.
#include <algorithm>
#include <unordered_map>
#include <cmath>
#include <cstring>
#include <numeric>

#include "ops/copy_view.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

namespace {

using ocl_infer::shape_to_string;

// Each op's result: the outputs it computes, in slot order.
using Outputs = std::vector<Tensor>;

template <Outputs (*compute)(const OpContext&)>
void dynamic_infer(OpContext& ctx) {
  // The shapes come from the data: computing them is computing the outputs, so they are kept
  // (host() then finds them and does not compute again).
  Outputs out = compute(ctx);
  for (int k = 0; k < static_cast<int>(out.size()); ++k)
    if (ctx.has_output(k)) ctx.set_out_data(k, std::move(out[k]));
}

template <Outputs (*compute)(const OpContext&)>
void dynamic_host(OpContext& ctx) {
  bool done = true;
  for (int k = 0; k < ctx.num_outputs(); ++k) done &= !ctx.has_output(k) || ctx.out_value(k).data != nullptr;
  if (done) return;
  Outputs out = compute(ctx);
  for (int k = 0; k < static_cast<int>(out.size()); ++k) ctx.set_out_data(k, std::move(out[k]));
}

Tensor int64_tensor(const Shape& shape, const std::vector<int64_t>& values) {
  Tensor t(DType::Int64, shape);
  if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

// Whether element i of a bool or numeric tensor is non-zero (NaN counts as non-zero, as in numpy).
bool truthy(const Tensor& t, int64_t i) {
  if (is_float(t.dtype)) return host_get_f(t, i) != 0.0;
  return host_get_i(t, i) != 0;
}

void require_countable(const OpContext& ctx, int i) {
  const DType t = ctx.in_type(i);
  if (t != DType::Bool && !is_float(t) && !is_integer(t))
    ctx.unsupported(std::string("input ") + std::to_string(i) + " of type " +
                    ocl_infer::dtype_name(t) + " is not supported");
}

// ---- NonZero -------------------------------------------------------------------------------
// The coordinates of the non-zero elements in row-major order, one row per input dim. A scalar
// counts as a 1-element vector (as ONNX Runtime does): the output is then [1, 0 or 1].
Outputs nonzero_compute(const OpContext& ctx) {
  require_countable(ctx, 0);
  const Tensor& x = ctx.in_data(0);
  const Shape dims = x.shape.empty() ? Shape{1} : x.shape;
  const int64_t r = static_cast<int64_t>(dims.size()), n = x.numel();
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < n; ++i)
    if (truthy(x, i)) hits.push_back(i);
  const int64_t nnz = static_cast<int64_t>(hits.size());
  Tensor y(DType::Int64, {r, nnz});
  int64_t* out = y.data<int64_t>();
  for (int64_t j = 0; j < nnz; ++j) {
    int64_t rem = hits[j];
    for (int64_t d = r - 1; d >= 0; --d) {
      out[d * nnz + j] = rem % dims[d];
      rem /= dims[d];
    }
  }
  return {std::move(y)};
}

// ---- Compress ------------------------------------------------------------------------------
// Slices along `axis` (or elements of the flattened input without one) whose condition is true.
// A condition shorter than the axis counts as false beyond its end; a longer one may only hold
// false there (numpy raises, ONNX Runtime ignores the excess: both agree on false).
Outputs compress_compute(const OpContext& ctx) {
  const Tensor& x = ctx.in_data(0);
  const Tensor& cond = ctx.in_data(1);
  require_countable(ctx, 1);
  if (cond.shape.size() != 1) ctx.fail("condition must be 1-D, got " + shape_to_string(cond.shape));
  const size_t es = copy_elem_size(ctx, x.dtype);
  Shape shape = x.shape;
  int64_t axis = 0;
  if (ctx.node().has("axis")) {
    axis = ctx.axis(ctx.node().attr_int("axis", 0), static_cast<int64_t>(shape.size()));
  } else {
    shape = {x.numel()};
  }
  const int64_t len = shape[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < cond.numel(); ++i) {
    if (!truthy(cond, i)) continue;
    if (i >= len)
      ctx.fail("condition " + shape_to_string(cond.shape) + " selects index " + std::to_string(i) +
               " beyond the axis of length " + std::to_string(len));
    keep.push_back(i);
  }
  Shape out_shape = shape;
  out_shape[axis] = static_cast<int64_t>(keep.size());
  Tensor y(x.dtype, out_shape);
  const size_t block = static_cast<size_t>(inner) * es;
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < keep.size(); ++k)
      std::memcpy(y.bytes.data() +
                      (o * static_cast<int64_t>(keep.size()) + static_cast<int64_t>(k)) * block,
                  x.bytes.data() + (o * len + keep[k]) * block, block);
  return {std::move(y)};
}

// ---- Unique --------------------------------------------------------------------------------
// Orders elements of any numeric type exactly: floats as doubles with every NaN equal to every
// other and after all numbers (numpy's unique, equal_nan=True; -0 equals +0), unsigned 64-bit
// integers as such, other integers and bools as int64.
struct ElementOrder {
  const Tensor& t;
  int cmp(int64_t a, int64_t b) const {
    if (is_float(t.dtype)) {
      const double x = host_get_f(t, a), y = host_get_f(t, b);
      const bool nx = std::isnan(x), ny = std::isnan(y);
      if (nx || ny) return nx == ny ? 0 : nx ? 1 : -1;
      return x < y ? -1 : x > y ? 1 : 0;
    }
    if (t.dtype == DType::UInt64) {
      const uint64_t x = t.data<uint64_t>()[a], y = t.data<uint64_t>()[b];
      return x < y ? -1 : x > y ? 1 : 0;
    }
    const int64_t x = host_get_i(t, a), y = host_get_i(t, b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
};

// The unique slices along `axis` of X viewed as [outer, len, inner] (or the unique elements:
// outer = inner = 1), compared lexicographically in row-major order. Outputs Y, indices (first
// occurrence), inverse_indices and counts; with sorted = 0 in order of first occurrence.
Outputs unique_compute(const OpContext& ctx) {
  const Tensor& x = ctx.in_data(0);
  require_countable(ctx, 0);
  const size_t es = copy_elem_size(ctx, x.dtype);
  const bool sorted = ctx.node().attr_int("sorted", 1) != 0;
  const bool has_axis = ctx.node().has("axis");
  Shape shape = has_axis ? x.shape : Shape{x.numel()};
  const int64_t axis =
      has_axis ? ctx.axis(ctx.node().attr_int("axis", 0), static_cast<int64_t>(shape.size())) : 0;
  const int64_t len = shape[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  const ElementOrder order{x};
  auto cmp_slices = [&](int64_t a, int64_t b) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        if (int c = order.cmp((o * len + a) * inner + i, (o * len + b) * inner + i)) return c;
    return 0;
  };
  // Slices ordered by value, equal ones by position: the first of each run is its first occurrence.
  std::vector<int64_t> by_value(len);
  std::iota(by_value.begin(), by_value.end(), 0);
  std::stable_sort(by_value.begin(), by_value.end(),
                   [&](int64_t a, int64_t b) { return cmp_slices(a, b) < 0; });
  std::vector<int64_t> group_of(len), firsts, counts;
  for (int64_t k = 0; k < len; ++k) {
    if (k == 0 || cmp_slices(by_value[k - 1], by_value[k]) != 0) {
      firsts.push_back(by_value[k]);
      counts.push_back(0);
    }
    group_of[by_value[k]] = static_cast<int64_t>(firsts.size()) - 1;
    ++counts.back();
  }
  const int64_t nu = static_cast<int64_t>(firsts.size());
  // rank[g]: the output position of group g.
  std::vector<int64_t> rank(nu);
  std::iota(rank.begin(), rank.end(), 0);
  if (!sorted) {
    std::vector<int64_t> by_first(nu);
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(),
              [&](int64_t a, int64_t b) { return firsts[a] < firsts[b]; });
    for (int64_t p = 0; p < nu; ++p) rank[by_first[p]] = p;
  }
  std::vector<int64_t> indices(nu), out_counts(nu), inverse(len);
  for (int64_t g = 0; g < nu; ++g) {
    indices[rank[g]] = firsts[g];
    out_counts[rank[g]] = counts[g];
  }
  for (int64_t k = 0; k < len; ++k) inverse[k] = rank[group_of[k]];
  Shape y_shape = shape;
  y_shape[axis] = nu;
  Tensor y(x.dtype, y_shape);
  const size_t block = static_cast<size_t>(inner) * es;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t p = 0; p < nu; ++p)
      std::memcpy(y.bytes.data() + (o * nu + p) * block,
                  x.bytes.data() + (o * len + indices[p]) * block, block);
  Outputs r;
  r.push_back(std::move(y));
  r.push_back(int64_tensor({nu}, indices));
  r.push_back(int64_tensor({len}, inverse));
  r.push_back(int64_tensor({nu}, out_counts));
  return r;
}

// ---- NonMaxSuppression ---------------------------------------------------------------------
// As ONNX Runtime and the ONNX reference implementation: per batch and class, the candidates are
// the boxes whose score is strictly greater than score_threshold (every box without one), taken
// by descending score (equal scores by ascending box index); a candidate is selected unless its
// IoU with an already selected box of the same class is strictly greater than iou_threshold,
// until max_output_boxes_per_class are selected. Corners may come in either order ([y1, x1, y2,
// x2], normalised with min/max) or as centre and size (center_point_box = 1). Boxes that do not
// overlap, or have no area, never suppress each other. All arithmetic in float, as both do.
//
// NaN, which both leave to the comparisons: a NaN score never passes a threshold and is never
// selected (without a threshold too, so that the order of candidates stays a strict order); a box
// with a NaN coordinate overlaps nothing (IoU 0): it may be selected but never suppresses or is
// suppressed. A NaN iou_threshold or one outside [0, 1] is a model error (ONNX Runtime refuses
// those too).
struct Corners {
  float y0, x0, y1, x1;  // y0 <= y1, x0 <= x1 unless NaN
  bool nan;
};

Corners corners(const float* b, bool center) {
  Corners c;
  if (center) {
    const float hw = b[2] / 2, hh = b[3] / 2;
    c = {b[1] - hh, b[0] - hw, b[1] + hh, b[0] + hw, false};
  } else {
    c = {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3]),
         false};
  }
  c.nan = std::isnan(b[0]) || std::isnan(b[1]) || std::isnan(b[2]) || std::isnan(b[3]);
  return c;
}

bool suppresses(const Corners& a, const Corners& b, float iou_threshold) {
  if (a.nan || b.nan) return false;
  const float ix0 = std::max(a.x0, b.x0), ix1 = std::min(a.x1, b.x1);
  if (ix1 <= ix0) return false;
  const float iy0 = std::max(a.y0, b.y0), iy1 = std::min(a.y1, b.y1);
  if (iy1 <= iy0) return false;
  const float inter = (ix1 - ix0) * (iy1 - iy0);
  const float area_a = (a.x1 - a.x0) * (a.y1 - a.y0), area_b = (b.x1 - b.x0) * (b.y1 - b.y0);
  const float uni = area_a + area_b - inter;
  if (inter <= 0 || area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > iou_threshold;
}

// An optional scalar input (shape [] or [1]; an empty tensor counts as absent).
bool optional_scalar(const OpContext& ctx, int i, double* v) {
  if (!ctx.has_input(i)) return false;
  const Tensor& t = ctx.in_data(i);
  if (t.numel() == 0) return false;
  if (t.numel() != 1)
    ctx.fail("input " + std::to_string(i) + " must hold one value, got " +
             shape_to_string(t.shape));
  *v = is_float(t.dtype) ? host_get_f(t, 0) : static_cast<double>(host_get_i(t, 0));
  return true;
}

Outputs nms_compute(const OpContext& ctx) {
  const Tensor& boxes_in = ctx.in_data(0);
  const Tensor& scores_in = ctx.in_data(1);
  for (int i : {0, 1})
    if (!is_float(ctx.in_type(i)))
      ctx.fail(std::string("boxes and scores must be float, not ") +
               ocl_infer::dtype_name(ctx.in_type(i)));
  const Shape &bs = boxes_in.shape, &ss = scores_in.shape;
  if (bs.size() != 3 || bs[2] != 4)
    ctx.fail("boxes must be [num_batches, num_boxes, 4], got " + shape_to_string(bs));
  if (ss.size() != 3 || ss[0] != bs[0] || ss[2] != bs[1])
    ctx.fail("scores must be [num_batches, num_classes, num_boxes] = [" + std::to_string(bs[0]) +
             ", C, " + std::to_string(bs[1]) + "], got " + shape_to_string(ss));
  const int64_t center = ctx.node().attr_int("center_point_box", 0);
  if (center != 0 && center != 1)
    ctx.fail("center_point_box must be 0 or 1, not " + std::to_string(center));
  double v = 0;
  int64_t max_per_class = 0;
  if (ctx.has_input(2) && ctx.in_data(2).numel() > 0) {
    if (!is_integer(ctx.in_type(2))) ctx.fail("max_output_boxes_per_class must be an integer");
    optional_scalar(ctx, 2, &v);
    max_per_class = std::max<int64_t>(0, host_get_i(ctx.in_data(2), 0));
  }
  float iou_threshold = 0;
  if (optional_scalar(ctx, 3, &v)) {
    if (!(v >= 0 && v <= 1)) ctx.fail("iou_threshold must be in [0, 1], got " + std::to_string(v));
    iou_threshold = static_cast<float>(v);
  }
  const bool has_score_threshold = optional_scalar(ctx, 4, &v);
  const float score_threshold = static_cast<float>(v);
  const int64_t nb = bs[0], nbox = bs[1], nc = ss[1];
  std::vector<float> boxes(boxes_in.numel()), scores(scores_in.numel());
  for (size_t i = 0; i < boxes.size(); ++i)
    boxes[i] = static_cast<float>(host_get_f(boxes_in, static_cast<int64_t>(i)));
  for (size_t i = 0; i < scores.size(); ++i)
    scores[i] = static_cast<float>(host_get_f(scores_in, static_cast<int64_t>(i)));
  std::vector<int64_t> out;
  std::vector<Corners> c(nbox);
  std::vector<int64_t> cand;
  for (int64_t b = 0; b < nb && max_per_class > 0; ++b) {
    for (int64_t k = 0; k < nbox; ++k) c[k] = corners(&boxes[(b * nbox + k) * 4], center == 1);
    for (int64_t cls = 0; cls < nc; ++cls) {
      const float* s = &scores[(b * nc + cls) * nbox];
      cand.clear();
      for (int64_t k = 0; k < nbox; ++k)
        if (!std::isnan(s[k]) && (!has_score_threshold || s[k] > score_threshold))
          cand.push_back(k);
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t x, int64_t y) { return s[x] > s[y]; });
      // Greedy NMS compares each candidate with the boxes chosen so far; torchvision's batched
      // NMS puts every class's boxes into one call (offset far apart), thousands of them, so the
      // chosen boxes sit in a grid of cells as large as the largest box and a candidate looks
      // only at the cells it touches. Same result as comparing with all of them: a box can only
      // suppress a box it intersects.
      float cell = 0;
      for (int64_t k : cand)
        if (!c[k].nan) cell = std::max({cell, c[k].x1 - c[k].x0, c[k].y1 - c[k].y0});
      if (!(cell > 0) || !std::isfinite(cell)) cell = 1;
      // Cell indices stay far inside int64 whatever the coordinates.
      for (int64_t k : cand)
        for (float v : {c[k].x0, c[k].y0, c[k].x1, c[k].y1})
          if (std::isfinite(v)) cell = std::max(cell, std::fabs(v) / 1e12f);
      std::unordered_map<uint64_t, std::vector<int64_t>> grid;
      auto cells = [&](const Corners& a, auto&& visit) {
        if (a.nan || !std::isfinite(a.x0) || !std::isfinite(a.y0) || !std::isfinite(a.x1) || !std::isfinite(a.y1))
          return;
        const int64_t gx0 = static_cast<int64_t>(std::floor(a.x0 / cell)), gx1 = static_cast<int64_t>(std::floor(a.x1 / cell));
        const int64_t gy0 = static_cast<int64_t>(std::floor(a.y0 / cell)), gy1 = static_cast<int64_t>(std::floor(a.y1 / cell));
        for (int64_t gx = gx0; gx <= gx1; ++gx)
          for (int64_t gy = gy0; gy <= gy1; ++gy)
            visit((static_cast<uint64_t>(gx) << 32) ^ static_cast<uint64_t>(gy & 0xffffffff));
      };
      int64_t chosen_count = 0;
      for (int64_t k : cand) {
        if (chosen_count >= max_per_class) break;
        bool keep = true;
        cells(c[k], [&](uint64_t key) {
          if (!keep) return;
          auto it = grid.find(key);
          if (it == grid.end()) return;
          for (int64_t j : it->second)
            if (suppresses(c[k], c[j], iou_threshold)) {
              keep = false;
              return;
            }
        });
        if (!keep) continue;
        ++chosen_count;
        cells(c[k], [&](uint64_t key) { grid[key].push_back(k); });
        out.insert(out.end(), {b, cls, k});
      }
    }
  }
  return {int64_tensor({static_cast<int64_t>(out.size() / 3), 3}, out)};
}

template <Outputs (*compute)(const OpContext&)>
OpDef dynamic_op(const char* op, int since) {
  return OpDef(op, since, dynamic_infer<compute>).host(dynamic_host<compute>).data_dependent();
}

}  // namespace

void add_dynamic_ops(std::vector<OpDef>& t) {
  for (int v : {9, 13}) t.push_back(dynamic_op<nonzero_compute>("NonZero", v));
  for (int v : {9, 11}) t.push_back(dynamic_op<compress_compute>("Compress", v));
  t.push_back(dynamic_op<unique_compute>("Unique", 11));
  for (int v : {10, 11}) t.push_back(dynamic_op<nms_compute>("NonMaxSuppression", v));
}

}  // namespace oi
