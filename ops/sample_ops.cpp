// Sampling ops: GridSample (16), RoiAlign (10, 16) and MaxUnpool (9, 11), computed by
// kernels/sample.cl. GridSample and RoiAlign follow the ONNX reference implementation's formulas
// (onnx/reference/ops/op_grid_sample.py, op_roi_align.py) step by step, in float.
#include <algorithm>
#include <string>

#include "ops/copy_view.hpp"
#include "ops/core/expansion.hpp"
#include "ops/elementwise.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

namespace {

using ocl_infer::shape_to_string;

bool float_storage(DType t) {
  return t == DType::Float32 || t == DType::Float16;
}

// " -D<name>=F16" for a float16 operand (kernels/storage.cl), "" for float32.
std::string storage_define(const char* name, DType t) {
  return t == DType::Float16 ? std::string(" -D") + name + "=F16" : std::string();
}

void require_float_input(const OpContext& ctx, int i, const char* what) {
  const DType t = ctx.in_type(i);
  if (!is_float(t))
    ctx.fail(std::string(what) + " must be a float tensor, not " + ocl_infer::dtype_name(t));
  if (t == DType::Float64)
    ctx.unsupported(std::string(what) +
                    " of type double is not supported (float32 and float16 are)");
}

// Every float operand of the node in float32 or float16 storage (the kernels load and store
// through kernels/storage.cl, each operand on its own).
void require_float_storage(const BuildContext& ctx, std::initializer_list<int> inputs) {
  for (int i : inputs)
    if (ctx.has_input(i) && !float_storage(ctx.input(i).dtype))
      ctx.unsupported("input storage must be float or half");
  if (!float_storage(ctx.output(0).dtype)) ctx.unsupported("output storage must be float or half");
}

// ---- GridSample ----------------------------------------------------------------------------
struct GridSampleSpec {
  std::string mode, padding;
  bool align_corners = false;
};

GridSampleSpec grid_sample_spec(const OpContext& ctx) {
  const Node& n = ctx.node();
  GridSampleSpec s;
  s.padding = n.attr_string("padding_mode", "zeros");
  s.align_corners = n.attr_int("align_corners", 0) != 0;
  if (ctx.opset() >= 20) {
    // GridSample-20 names the modes linear, nearest and cubic (and defines N-D grids).
    s.mode = n.attr_string("mode", "linear");
    if (s.mode != "linear" && s.mode != "nearest" && s.mode != "cubic")
      ctx.fail("mode must be linear, nearest or cubic, not '" + s.mode + "'");
    s.mode = s.mode == "linear" ? "bilinear" : s.mode == "cubic" ? "bicubic" : s.mode;
  } else {
    s.mode = n.attr_string("mode", "bilinear");
    if (s.mode != "bilinear" && s.mode != "nearest" && s.mode != "bicubic")
      ctx.fail("mode must be bilinear, nearest or bicubic, not '" + s.mode + "'");
  }
  if (s.padding != "zeros" && s.padding != "border" && s.padding != "reflection")
    ctx.fail("padding_mode must be zeros, border or reflection, not '" + s.padding + "'");
  return s;
}

void grid_sample_infer(OpContext& ctx) {
  grid_sample_spec(ctx);
  const Shape &x = ctx.in_shape(0), &g = ctx.in_shape(1);
  if (x.size() == 5 && ctx.opset() >= 20) ctx.unsupported("volumetric (5-D) sampling is not supported; 4-D is");
  if (x.size() != 4) ctx.fail("input X must be 4-D (N, C, H, W), got " + shape_to_string(x));
  if (g.size() != 4 || g[3] != 2)
    ctx.fail("grid must be (N, H_out, W_out, 2), got " + shape_to_string(g));
  if (g[0] != x[0])
    ctx.fail("grid " + shape_to_string(g) + " and X " + shape_to_string(x) + " differ in batch");
  require_float_input(ctx, 0, "X");
  require_float_input(ctx, 1, "grid");
  ctx.set_out(0, ctx.in_type(0), {x[0], x[1], g[1], g[2]});
}

void grid_sample_build(BuildContext& ctx) {
  const GridSampleSpec s = grid_sample_spec(ctx);
  const Shape& x = ctx.in_shape(0);
  const Shape& y = ctx.out_shape(0);
  const int64_t n = numel(y);
  if (n == 0) return;
  if (x[2] == 0 || x[3] == 0) ctx.fail("cannot sample an empty input " + shape_to_string(x));
  require_float_storage(ctx, {0, 1});
  std::string opts = storage_define("SX", ctx.input(0).dtype) +
                     storage_define("SG", ctx.input(1).dtype) +
                     storage_define("SY", ctx.output(0).dtype);
  opts += s.mode == "bilinear"  ? " -DMODE_LINEAR"
          : s.mode == "nearest" ? " -DMODE_NEAREST"
                                : " -DMODE_CUBIC";
  opts += s.padding == "zeros"    ? " -DPAD_ZEROS"
          : s.padding == "border" ? " -DPAD_BORDER"
                                  : " -DPAD_REFLECTION";
  if (s.align_corners) opts += " -DALIGN_CORNERS";
  const size_t local = ctx.caps().linear_local();
  ctx.launch("sample", "grid_sample", opts, {round_up(static_cast<size_t>(n), local)}, {local},
             ctx.in_buf(0), ctx.in_buf(1), ctx.out_buf(0), static_cast<int32_t>(x[1]),
             static_cast<int32_t>(x[2]), static_cast<int32_t>(x[3]), static_cast<int32_t>(y[2]),
             static_cast<int32_t>(y[3]), n);
}

double grid_sample_flops(const OpContext& ctx) {
  const std::string mode = grid_sample_spec(ctx).mode;
  const double taps = mode == "nearest" ? 1 : mode == "bilinear" ? 4 : 16;
  return 2 * taps * static_cast<double>(numel(ctx.out_shape(0)));
}

// ---- RoiAlign ------------------------------------------------------------------------------
struct RoiAlignSpec {
  bool max = false, half_pixel = false;
  int64_t out_h = 1, out_w = 1, sampling_ratio = 0;
  float spatial_scale = 1;
};

RoiAlignSpec roi_align_spec(const OpContext& ctx) {
  const Node& n = ctx.node();
  RoiAlignSpec s;
  const std::string mode = n.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") ctx.fail("mode must be avg or max, not '" + mode + "'");
  s.max = mode == "max";
  // Opset 10 has no coordinate_transformation_mode: it behaves as output_half_pixel.
  const std::string coord = ctx.opset() >= 16
                                ? n.attr_string("coordinate_transformation_mode", "half_pixel")
                                : "output_half_pixel";
  if (coord != "half_pixel" && coord != "output_half_pixel")
    ctx.fail("coordinate_transformation_mode must be half_pixel or output_half_pixel, not '" +
             coord + "'");
  s.half_pixel = coord == "half_pixel";
  s.out_h = n.attr_int("output_height", 1);
  s.out_w = n.attr_int("output_width", 1);
  s.sampling_ratio = n.attr_int("sampling_ratio", 0);
  s.spatial_scale = n.attr_float("spatial_scale", 1.0f);
  if (s.out_h < 1 || s.out_w < 1)
    ctx.fail("output_height and output_width must be >= 1, got " + std::to_string(s.out_h) +
             " and " + std::to_string(s.out_w));
  if (s.sampling_ratio < 0)
    ctx.fail("sampling_ratio must be >= 0, got " + std::to_string(s.sampling_ratio));
  return s;
}

void roi_align_infer(OpContext& ctx) {
  const RoiAlignSpec s = roi_align_spec(ctx);
  const Shape &x = ctx.in_shape(0), &r = ctx.in_shape(1), &b = ctx.in_shape(2);
  if (x.size() != 4) ctx.fail("input X must be 4-D (N, C, H, W), got " + shape_to_string(x));
  if (r.size() != 2 || r[1] != 4) ctx.fail("rois must be (num_rois, 4), got " + shape_to_string(r));
  if (b.size() != 1 || b[0] != r[0])
    ctx.fail("batch_indices " + shape_to_string(b) + " must be (num_rois) for rois " +
             shape_to_string(r));
  require_float_input(ctx, 0, "X");
  require_float_input(ctx, 1, "rois");
  const DType bt = ctx.in_type(2);
  if (bt != DType::Int64 && bt != DType::Int32)
    ctx.fail(std::string("batch_indices must be int64, not ") + ocl_infer::dtype_name(bt));
  ctx.set_out(0, ctx.in_type(0), {r[0], x[1], s.out_h, s.out_w});
}

void roi_align_build(BuildContext& ctx) {
  const RoiAlignSpec s = roi_align_spec(ctx);
  const Shape& x = ctx.in_shape(0);
  const int64_t n = numel(ctx.out_shape(0));
  if (n == 0) return;
  if (x[2] == 0 || x[3] == 0) ctx.fail("cannot pool from an empty input " + shape_to_string(x));
  require_float_storage(ctx, {0, 1});
  if (ctx.is_const(2)) {
    const Tensor& b = ctx.in_data(2);
    for (int64_t i = 0; i < b.numel(); ++i)
      if (host_get_i(b, i) < 0 || host_get_i(b, i) >= x[0])
        ctx.fail("batch index " + std::to_string(host_get_i(b, i)) + " is out of range for X " +
                 shape_to_string(x));
  }
  std::string opts = storage_define("SX", ctx.input(0).dtype) +
                     storage_define("SR", ctx.input(1).dtype) +
                     storage_define("SY", ctx.output(0).dtype);
  opts += ctx.in_type(2) == DType::Int32 ? " -DTI=int" : " -DTI=long";
  if (s.max) opts += " -DROI_MAX";
  if (s.half_pixel) opts += " -DHALF_PIXEL";
  const cl_mem err = ctx.error_flag("a batch index is out of range for X " + shape_to_string(x));
  const size_t local = ctx.caps().linear_local();
  ctx.launch("sample", "roi_align", opts, {round_up(static_cast<size_t>(n), local)}, {local},
             ctx.in_buf(0), ctx.in_buf(1), ctx.in_buf(2), ctx.out_buf(0), err,
             static_cast<int32_t>(x[0]), static_cast<int32_t>(x[1]), static_cast<int32_t>(x[2]),
             static_cast<int32_t>(x[3]), static_cast<int32_t>(s.out_h),
             static_cast<int32_t>(s.out_w), static_cast<int32_t>(s.sampling_ratio), s.spatial_scale,
             n);
}

// ---- MaxUnpool -----------------------------------------------------------------------------
// The unpooled shape the attributes give (the space the indices address) and the output's shape
// (output_shape when given: that shape padded at the end of each dim).
struct UnpoolShapes {
  Shape inferred, out;
};

UnpoolShapes max_unpool_shapes(const OpContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  if (x.size() < 3)
    ctx.fail("input X must have rank >= 3 (N, C, spatial...), got " + shape_to_string(x));
  if (ctx.in_shape(1) != x)
    ctx.fail("indices I " + shape_to_string(ctx.in_shape(1)) + " must have the shape of X " +
             shape_to_string(x));
  const size_t sp = x.size() - 2;
  const Node& n = ctx.node();
  if (!n.has("kernel_shape")) ctx.fail("attribute kernel_shape is required");
  const std::vector<int64_t> k = n.attr_ints("kernel_shape", {});
  const std::vector<int64_t> st = n.attr_ints("strides", std::vector<int64_t>(sp, 1));
  const std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(2 * sp, 0));
  if (k.size() != sp || st.size() != sp || pads.size() != 2 * sp)
    ctx.fail("kernel_shape, strides and pads must have " + std::to_string(sp) + ", " +
             std::to_string(sp) + " and " + std::to_string(2 * sp) + " entries for X " +
             shape_to_string(x));
  Shape out{x[0], x[1]};
  for (size_t d = 0; d < sp; ++d) {
    if (k[d] < 1 || st[d] < 1 || pads[d] < 0 || pads[sp + d] < 0)
      ctx.fail("kernel_shape and strides must be >= 1 and pads >= 0");
    const int64_t o = (x[2 + d] - 1) * st[d] - pads[d] - pads[sp + d] + k[d];
    if (o < 0) ctx.fail("the output would have a negative dim");
    out.push_back(o);
  }
  UnpoolShapes r{out, out};
  if (ctx.has_input(2)) {
    const std::vector<int64_t> want = ctx.in_ints(2);
    if (want.size() != x.size())
      ctx.fail("output_shape " + shape_to_string(want) + " must have the rank of X " +
               shape_to_string(x));
    if (want[0] != x[0] || want[1] != x[1])
      ctx.fail("output_shape " + shape_to_string(want) + " must keep N and C of X " +
               shape_to_string(x));
    for (size_t d = 0; d < sp; ++d)
      if (want[2 + d] < out[2 + d])
        ctx.fail("output_shape " + shape_to_string(want) + " is smaller than the unpooled size " +
                 shape_to_string(out));
    r.out = want;
  }
  return r;
}

void max_unpool_infer(OpContext& ctx) {
  const DType it = ctx.in_type(1);
  if (it != DType::Int64)
    ctx.fail(std::string("indices I must be int64, not ") + ocl_infer::dtype_name(it));
  ctx.set_out(0, ctx.in_type(0), max_unpool_shapes(ctx).out);
}

void max_unpool_build(BuildContext& ctx) {
  const UnpoolShapes s = max_unpool_shapes(ctx);
  const Shape& out = s.out;
  const int64_t total = numel(s.inferred), n = numel(ctx.in_shape(0));
  if (numel(out) == 0) return;
  if (ctx.is_const(1)) {
    const Tensor& idx = ctx.in_data(1);
    for (int64_t i = 0; i < idx.numel(); ++i)
      if (host_get_i(idx, i) < 0 || host_get_i(idx, i) >= total)
        ctx.fail("index " + std::to_string(host_get_i(idx, i)) +
                 " is out of range for the unpooled " + shape_to_string(s.inferred));
  }
  std::string opts = word_option(ctx, ctx.input(0).dtype);
  const size_t local = ctx.caps().linear_local();
  ctx.launch("sample", "max_unpool_zero", opts, {round_up(static_cast<size_t>(numel(out)), local)},
             {local}, ctx.out_buf(0), numel(out));
  std::vector<int64_t> p = s.inferred;
  const std::vector<int64_t> st = strides_of(out);
  p.insert(p.end(), st.begin(), st.end());
  if (s.inferred != out) opts += " -DPADDED";
  const cl_mem err = ctx.error_flag("an index of MaxUnpool is out of range for the unpooled " +
                                    shape_to_string(s.inferred));
  ctx.launch("sample", "max_unpool_scatter", opts, {round_up(static_cast<size_t>(n), local)},
             {local}, ctx.in_buf(0), ctx.in_buf(1), ctx.out_buf(0), err,
             ctx.params(p.data(), p.size() * sizeof(int64_t)), static_cast<int32_t>(out.size()), n,
             total);
}

// ---- AffineGrid (opset 20) ----------------------------------------------------------------
// The sampling grid of an affine transform, for GridSample: grid[n, h, w] = theta[n] (x_w, y_h, 1)
// (3-D: (x_w, y_h, z_d, 1)), x, y, z the output pixels' centres in [-1, 1] (align_corners: the
// corner pixels' centres at -1 and 1). Runs as MatMul(base points, theta^T) with the base points
// a constant.
void affine_grid_infer(OpContext& ctx) {
  const Shape& th = ctx.in_shape(0);
  const std::vector<int64_t> size = ctx.in_ints(1);
  if (size.size() != 4 && size.size() != 5)
    ctx.fail("size must be (N, C, H, W) or (N, C, D, H, W), not " + shape_to_string(size));
  const int64_t dims = static_cast<int64_t>(size.size()) - 2;
  if (th.size() != 3 || th[1] != dims || th[2] != dims + 1)
    ctx.fail("theta must be [N, " + std::to_string(dims) + ", " + std::to_string(dims + 1) + "] for size " +
             shape_to_string(size) + ", not " + shape_to_string(th));
  if (th[0] != size[0]) ctx.fail("theta's batch " + std::to_string(th[0]) + " differs from size's " + std::to_string(size[0]));
  for (size_t d = 2; d < size.size(); ++d)
    if (size[d] < 1 || size[d] > (int64_t{1} << 24)) ctx.fail("size " + shape_to_string(size) + " has a bad spatial dim");
  require_float_input(ctx, 0, "theta");
  Shape out{size[0]};
  out.insert(out.end(), size.begin() + 2, size.end());
  out.push_back(dims);
  ctx.set_out(0, ctx.in_type(0), out);
}

bool affine_grid_expand(Graph& g, int ni) {
  const Node n = g.nodes[ni];
  if (!g.values[n.inputs[0]].shape_known || !g.values[n.inputs[1]].data) return false;
  // Copies: adding values below moves g.values.
  const DType theta_type = g.values[n.inputs[0]].dtype;
  const Tensor sizes = *g.values[n.inputs[1]].data;
  std::vector<int64_t> size(sizes.numel());
  for (size_t i = 0; i < size.size(); ++i) size[i] = host_get_i(sizes, static_cast<int64_t>(i));
  const bool align = n.attr_int("align_corners", 0) != 0;
  const std::vector<int64_t> spatial(size.begin() + 2, size.end());  // (D,) H, W
  const int64_t dims = static_cast<int64_t>(spatial.size());
  int64_t points = 1;
  for (int64_t v : spatial) points *= v;
  auto coord = [&](int64_t i, int64_t len) {
    if (align) return len == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(len - 1);
    return -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(len);
  };
  // Base points [points, dims + 1]: (x, y[, z], 1) with x along the last spatial dim.
  Tensor base(theta_type, {points, dims + 1});
  for (int64_t p = 0; p < points; ++p) {
    int64_t rem = p;
    std::vector<int64_t> idx(dims);
    for (int64_t d = dims - 1; d >= 0; --d) {
      idx[d] = rem % spatial[d];
      rem /= spatial[d];
    }
    for (int64_t c = 0; c < dims; ++c) {
      const int64_t d = dims - 1 - c;  // x: the last spatial dim
      host_set_f(base, p * (dims + 1) + c, coord(idx[d], spatial[d]));
    }
    host_set_f(base, p * (dims + 1) + dims, 1.0);
  }
  Expansion e(g, n);
  const int tt = e.node("Transpose", {n.inputs[0]}, "theta_t");
  e.attr_ints("perm", {0, 2, 1});
  const int pts = e.node("MatMul", {g.add_constant(n.name + "/base_points", std::move(base)), tt}, "points");
  std::vector<int64_t> shape{size[0]};
  shape.insert(shape.end(), spatial.begin(), spatial.end());
  shape.push_back(dims);
  e.node("Reshape", {pts, e.ints("grid_shape", shape)}, "grid", n.outputs[0]);
  replace_node(g, ni, std::move(e.nodes));
  return true;
}

}  // namespace

void add_sample_ops(std::vector<OpDef>& t) {
  t.push_back(OpDef("AffineGrid", 20, affine_grid_infer).value_inputs({1}).expands(affine_grid_expand));
  for (int v : {16, 20})  // 20: the modes linear and cubic (grid_sample_spec)
    t.push_back(OpDef("GridSample", v, grid_sample_infer)
                    .build(grid_sample_build)
                    .flops(grid_sample_flops)
                    .any_storage());
  t.push_back(OpDef("RoiAlign", 10, roi_align_infer).build(roi_align_build).any_storage());
  t.push_back(OpDef("RoiAlign", 16, roi_align_infer).build(roi_align_build).any_storage());
  t.push_back(OpDef("MaxUnpool", 9, max_unpool_infer)
                  .build(max_unpool_build)
                  .value_inputs({2})
                  .shared_storage()
                  .any_storage());
  t.push_back(OpDef("MaxUnpool", 11, max_unpool_infer)
                  .build(max_unpool_build)
                  .value_inputs({2})
                  .shared_storage()
                  .any_storage());
}

}  // namespace oi
