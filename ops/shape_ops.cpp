// Ops that only describe or relabel data: Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze,
// Identity, Dropout (inference), Constant, ConstantOfShape, Range. On the device they are views
// (an alias of the input buffer) or never reach it (always folded at plan time); on the host they
// are exact for int64, since real models build shapes with them.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "ops/copy_view.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

namespace {

using ocl_infer::shape_to_string;

std::string ints_to_string(const std::vector<int64_t>& v) {
  return shape_to_string(v);
}

// Views compute nothing: the plan gives output 0 input 0's storage (OpTraits::view).
void view_build(BuildContext&) {}

void same_bytes_host(OpContext& ctx) {
  host_same_bytes(ctx, 0, 0);
}

Tensor int64_vector(const std::vector<int64_t>& v) {
  Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
  if (!v.empty()) std::memcpy(t.bytes.data(), v.data(), v.size() * sizeof(int64_t));
  return t;
}

// ---- Shape, Size ---------------------------------------------------------------------------
// Opset 15 slices the shape with numpy-style clamped start/end.
std::vector<int64_t> shape_slice(OpContext& ctx) {
  const Shape& s = ctx.in_shape(0);
  const int64_t r = static_cast<int64_t>(s.size());
  int64_t start = ctx.node().attr_int("start", 0);
  int64_t end = ctx.node().attr_int("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  if (end < start) end = start;
  return std::vector<int64_t>(s.begin() + start, s.begin() + end);
}

void shape_infer(OpContext& ctx) {
  ctx.set_out(0, DType::Int64, {static_cast<int64_t>(shape_slice(ctx).size())});
}
void shape_host(OpContext& ctx) {
  ctx.set_out_data(0, int64_vector(shape_slice(ctx)));
}

void size_infer(OpContext& ctx) {
  ctx.set_out(0, DType::Int64, {});
}
void size_host(OpContext& ctx) {
  Tensor t(DType::Int64, {});
  t.data<int64_t>()[0] = numel(ctx.in_shape(0));
  ctx.set_out_data(0, std::move(t));
}

// ---- Reshape -------------------------------------------------------------------------------
void reshape_infer(OpContext& ctx) {
  const Shape& in = ctx.in_shape(0);
  std::vector<int64_t> spec = ctx.in_ints(1);
  const bool allowzero = ctx.opset() >= 14 && ctx.node().attr_int("allowzero", 0) != 0;
  Shape out(spec.size());
  int infer_at = -1;
  int64_t known = 1;
  for (size_t k = 0; k < spec.size(); ++k) {
    int64_t d = spec[k];
    if (d == 0 && !allowzero) {
      if (k >= in.size())
        ctx.fail("shape " + ints_to_string(spec) + " copies dim " + std::to_string(k) +
                 " (a 0) but the input " + shape_to_string(in) + " has only " +
                 std::to_string(in.size()) + " dims");
      d = in[k];
    } else if (d == -1) {
      if (infer_at >= 0) ctx.fail("shape " + ints_to_string(spec) + " has more than one -1");
      infer_at = static_cast<int>(k);
      continue;
    } else if (d < 0) {
      ctx.fail("shape " + ints_to_string(spec) + " has an invalid dim " + std::to_string(d));
    }
    if (d > 0 && known > (int64_t{1} << 40) / d)
      ctx.fail("shape " + ints_to_string(spec) + " is absurdly large");
    out[k] = d;
    known *= d;
  }
  const int64_t total = numel(in);
  if (infer_at >= 0) {
    if (allowzero && known == 0)
      ctx.fail("shape " + ints_to_string(spec) + " has both a -1 and a 0 with allowzero=1");
    if (known == 0) {
      if (total != 0)
        ctx.fail("cannot reshape " + shape_to_string(in) + " to " + ints_to_string(spec));
      // Ambiguous (numpy, PyTorch and ONNX Runtime refuse it): an empty tensor, typically an
      // empty batch, as in [0, 7, 128] -> [0, -1, 4, 32]. The -1 takes the value the same shapes
      // give without their zero dims (7 here, as for any other batch), so that later nodes see
      // the shapes they expect; where that does not divide, 0. Empty either way: no values move.
      int64_t in_rest = 1, out_rest = 1;
      for (int64_t d : in)
        if (d != 0) in_rest *= d;
      for (size_t k = 0; k < out.size(); ++k)
        if (static_cast<int>(k) != infer_at && out[k] != 0) out_rest *= out[k];
      out[infer_at] = in_rest % out_rest == 0 ? in_rest / out_rest : 0;
    } else {
      if (total % known != 0)
        ctx.fail("cannot reshape " + shape_to_string(in) + " to " + ints_to_string(spec));
      out[infer_at] = total / known;
    }
  } else if (known != total) {
    ctx.fail("cannot reshape " + shape_to_string(in) + " (" + std::to_string(total) +
             " elements) to " + shape_to_string(out) + " (" + std::to_string(known) + ")");
  }
  ctx.set_out(0, ctx.in_type(0), out);
}

// ---- Flatten -------------------------------------------------------------------------------
void flatten_infer(OpContext& ctx) {
  const Shape& in = ctx.in_shape(0);
  const int64_t r = static_cast<int64_t>(in.size());
  int64_t axis = ctx.node().attr_int("axis", 1);
  if (axis < -r || axis > r)
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < r; ++d) (d < axis ? outer : inner) *= in[d];
  ctx.set_out(0, ctx.in_type(0), {outer, inner});
}

// ---- Squeeze, Unsqueeze --------------------------------------------------------------------
// Axes from the attribute (before opset 13) or from the optional input 1.
bool axes_of(OpContext& ctx, std::vector<int64_t>* axes) {
  if (ctx.opset() >= 13) {
    if (!ctx.has_input(1)) return false;
    *axes = ctx.in_ints(1);
    return true;
  }
  if (!ctx.node().has("axes")) return false;
  *axes = ctx.node().attr_ints("axes", {});
  return true;
}

void squeeze_infer(OpContext& ctx) {
  const Shape& in = ctx.in_shape(0);
  const int64_t r = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes;
  std::set<int64_t> drop;
  if (axes_of(ctx, &axes)) {
    for (int64_t a : axes) {
      int64_t n = ctx.axis(a, r);
      if (in[n] != 1)
        ctx.fail("cannot squeeze axis " + std::to_string(a) + " of " + shape_to_string(in) +
                 ": its size is not 1");
      if (!drop.insert(n).second) ctx.fail("axis " + std::to_string(a) + " is repeated");
    }
  } else {
    for (int64_t d = 0; d < r; ++d)
      if (in[d] == 1) drop.insert(d);
  }
  Shape out;
  for (int64_t d = 0; d < r; ++d)
    if (!drop.count(d)) out.push_back(in[d]);
  ctx.set_out(0, ctx.in_type(0), out);
}

void unsqueeze_infer(OpContext& ctx) {
  const Shape& in = ctx.in_shape(0);
  std::vector<int64_t> axes;
  if (!axes_of(ctx, &axes)) ctx.fail("axes are required");
  const int64_t r = static_cast<int64_t>(in.size() + axes.size());
  std::set<int64_t> add;
  for (int64_t a : axes)
    if (!add.insert(ctx.axis(a, r)).second) ctx.fail("axis " + std::to_string(a) + " is repeated");
  Shape out;
  size_t k = 0;
  for (int64_t d = 0; d < r; ++d) out.push_back(add.count(d) ? 1 : in[k++]);
  ctx.set_out(0, ctx.in_type(0), out);
}

// ---- Identity, Dropout ---------------------------------------------------------------------
void identity_infer(OpContext& ctx) {
  ctx.set_out(0, ctx.in_type(0), ctx.in_shape(0));
}

// Inference only: the output is the input and the mask is all true. Training mode with a
// non-zero ratio draws random numbers, which a deterministic runtime does not do.
double dropout_ratio(OpContext& ctx) {
  if (ctx.opset() < 12) return ctx.node().attr_float("ratio", 0.5f);
  if (!ctx.has_input(1)) return 0.5;
  if (!ctx.is_const(1)) return 0.5;  // only matters in training mode, checked below
  return host_get_f(ctx.in_data(1), 0);
}

void dropout_mask(OpContext& ctx) {
  if (!ctx.has_output(1)) return;
  Tensor mask(ctx.out_value(1).dtype, ctx.out_shape(1));
  for (int64_t i = 0; i < mask.numel(); ++i) host_set_i(mask, i, 1);
  ctx.set_out_data(1, std::move(mask));
}

// The mask does not depend on the data, so it is a constant from shape inference on, even when
// the data lives on the device.
void dropout_infer(OpContext& ctx) {
  if (ctx.opset() >= 12 && ctx.has_input(2)) {
    if (!ctx.is_const(2)) ctx.unsupported("training_mode must be known at plan time");
    if (host_get_i(ctx.in_data(2), 0) != 0 && dropout_ratio(ctx) != 0)
      ctx.unsupported("training mode (random dropout) is not supported; use inference mode");
  }
  ctx.set_out(0, ctx.in_type(0), ctx.in_shape(0));
  // Before opset 10 the mask has the input's type; since then it is bool.
  ctx.set_out(1, ctx.opset() < 10 ? ctx.in_type(0) : DType::Bool, ctx.in_shape(0));
  dropout_mask(ctx);
}

void dropout_host(OpContext& ctx) {
  host_same_bytes(ctx, 0, 0);
  dropout_mask(ctx);
}

// ---- Constant ------------------------------------------------------------------------------
Tensor constant_value(OpContext& ctx) {
  const Node& n = ctx.node();
  int given = 0;
  for (const char* a : {"value", "value_float", "value_floats", "value_int", "value_ints",
                        "value_string", "value_strings", "sparse_value"})
    given += n.has(a);
  if (given != 1)
    ctx.fail("exactly one value attribute is required, found " + std::to_string(given));
  if (n.has("value")) {
    const Tensor* t = n.attr_tensor("value");
    return *t;
  }
  if (n.has("value_float")) {
    Tensor t(DType::Float32, {});
    t.data<float>()[0] = n.attr_float("value_float", 0);
    return t;
  }
  if (n.has("value_floats")) {
    auto v = n.attr_floats("value_floats", {});
    Tensor t(DType::Float32, {static_cast<int64_t>(v.size())});
    if (!v.empty()) std::memcpy(t.bytes.data(), v.data(), v.size() * sizeof(float));
    return t;
  }
  if (n.has("value_int")) {
    Tensor t(DType::Int64, {});
    t.data<int64_t>()[0] = n.attr_int("value_int", 0);
    return t;
  }
  if (n.has("value_ints")) return int64_vector(n.attr_ints("value_ints", {}));
  if (n.has("sparse_value")) ctx.unsupported("sparse constants are not supported");
  ctx.unsupported("string constants are not supported");
}

void constant_infer(OpContext& ctx) {
  Tensor t = constant_value(ctx);
  ctx.set_out(0, t.dtype, t.shape);
}
void constant_host(OpContext& ctx) {
  ctx.set_out_data(0, constant_value(ctx));
}

// ---- ConstantOfShape -----------------------------------------------------------------------
Tensor constant_of_shape(OpContext& ctx) {
  Shape s = ctx.in_ints(0);
  for (int64_t d : s)
    if (d < 0) ctx.fail("shape " + shape_to_string(s) + " has a negative dim");
  const Tensor* v = ctx.node().attr_tensor("value");
  if (v && v->numel() != 1) ctx.fail("value must hold exactly one element");
  DType t = v ? v->dtype : DType::Float32;
  if (ocl_infer::dtype_size(t) == 0) ctx.unsupported("value of this type is not supported");
  double total = 1;
  for (int64_t d : s) total *= static_cast<double>(d);
  if (total > static_cast<double>(1ll << 40))
    ctx.fail("shape " + shape_to_string(s) + " is absurd");
  Tensor out(t, s);
  if (v) {
    const size_t es = v->bytes.size();
    for (int64_t i = 0; i < out.numel(); ++i)
      std::memcpy(out.bytes.data() + i * es, v->bytes.data(), es);
  }
  return out;
}

void constant_of_shape_infer(OpContext& ctx) {
  const Tensor* v = ctx.node().attr_tensor("value");
  Shape s = ctx.in_ints(0);
  ctx.set_out(0, v ? v->dtype : DType::Float32, s);
}
void constant_of_shape_host(OpContext& ctx) {
  ctx.set_out_data(0, constant_of_shape(ctx));
}

// ---- Range ---------------------------------------------------------------------------------
int64_t range_count(OpContext& ctx) {
  for (int k = 0; k < 3; ++k)
    if (ctx.in_data(k).numel() != 1) ctx.fail("start, limit and delta must be scalars");
  DType t = ctx.in_type(0);
  if (t != ctx.in_type(1) || t != ctx.in_type(2)) ctx.fail("start, limit and delta types differ");
  int64_t n;
  if (is_integer(t)) {
    int64_t s = host_get_i(ctx.in_data(0), 0), l = host_get_i(ctx.in_data(1), 0),
            d = host_get_i(ctx.in_data(2), 0);
    if (d == 0) ctx.fail("delta must not be 0");
    // ceil((l - s) / d), in 128-bit so that int64 extremes neither overflow nor come out empty.
    const __int128 span = static_cast<__int128>(l) - s;
    __int128 c = span / d + ((span % d != 0 && ((span < 0) == (d < 0))) ? 1 : 0);
    if (c > (static_cast<__int128>(1) << 40)) ctx.fail("Range would have more than 2^40 elements");
    n = static_cast<int64_t>(c);
  } else if (is_float(t)) {
    double s = host_get_f(ctx.in_data(0), 0), l = host_get_f(ctx.in_data(1), 0),
           d = host_get_f(ctx.in_data(2), 0);
    if (d == 0) ctx.fail("delta must not be 0");
    double c = std::ceil((l - s) / d);
    if (!(c < 1e12)) c = c > 0 ? 1e12 : 0;  // NaN/inf: set_out refuses absurd sizes
    n = static_cast<int64_t>(c);
  } else {
    ctx.fail(std::string("type ") + ocl_infer::dtype_name(t) + " is not allowed");
  }
  return std::max<int64_t>(n, 0);
}

void range_infer(OpContext& ctx) {
  ctx.set_out(0, ctx.in_type(0), {range_count(ctx)});
}

void range_host(OpContext& ctx) {
  const int64_t n = range_count(ctx);
  Tensor out(ctx.in_type(0), {n});
  if (is_integer(out.dtype)) {
    int64_t s = host_get_i(ctx.in_data(0), 0), d = host_get_i(ctx.in_data(2), 0);
    // Wrapping arithmetic (as the int64 elements would wrap): defined, and within range anyway.
    for (int64_t i = 0; i < n; ++i)
      host_set_i(out, i, static_cast<int64_t>(static_cast<uint64_t>(s) + static_cast<uint64_t>(i) * static_cast<uint64_t>(d)));
  } else {
    double s = host_get_f(ctx.in_data(0), 0), d = host_get_f(ctx.in_data(2), 0);
    for (int64_t i = 0; i < n; ++i) host_set_f(out, i, s + static_cast<double>(i) * d);
  }
  ctx.set_out_data(0, std::move(out));
}

}  // namespace

void add_shape_ops(std::vector<OpDef>& t) {
  t.push_back(OpDef("Shape", 1, shape_infer).host(shape_host).host_shapes_only());
  t.push_back(OpDef("Size", 1, size_infer).host(size_host).host_shapes_only());
  // The views: output 0 is input 0's bytes under another shape.
  t.push_back(OpDef("Reshape", 5, reshape_infer).host(same_bytes_host).build(view_build).value_inputs({1}).view().any_storage());
  t.push_back(OpDef("Flatten", 1, flatten_infer).host(same_bytes_host).build(view_build).view().any_storage());
  t.push_back(OpDef("Squeeze", 1, squeeze_infer).host(same_bytes_host).build(view_build).view().any_storage());
  t.push_back(OpDef("Squeeze", 13, squeeze_infer).host(same_bytes_host).build(view_build).value_inputs({1}).view().any_storage());
  t.push_back(OpDef("Unsqueeze", 1, unsqueeze_infer).host(same_bytes_host).build(view_build).view().any_storage());
  t.push_back(OpDef("Unsqueeze", 13, unsqueeze_infer).host(same_bytes_host).build(view_build).value_inputs({1}).view().any_storage());
  t.push_back(OpDef("Identity", 1, identity_infer).host(same_bytes_host).build(view_build).view().any_storage());
  t.push_back(OpDef("Dropout", 1, dropout_infer).host(dropout_host).build(view_build).view().any_storage());
  t.push_back(OpDef("Dropout", 12, dropout_infer).host(dropout_host).build(view_build).value_inputs({1, 2}).view().any_storage());
  // Always computed at plan time.
  t.push_back(OpDef("Constant", 1, constant_infer).host(constant_host));
  t.push_back(OpDef("ConstantOfShape", 9, constant_of_shape_infer).host(constant_of_shape_host).value_inputs({0}));
  t.push_back(OpDef("Range", 11, range_infer).host(range_host).value_inputs({0, 1, 2}));
}

}  // namespace oi
