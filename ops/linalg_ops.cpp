// ReverseSequence and Det (kernels/linalg.cl).
//
// ReverseSequence: each batch entry's first sequence_lens[b] steps reversed, the rest copied; a
// length outside [0, T] is an error (at plan time for a constant, else the node's error flag).
// Det: LU decomposition with partial pivoting, one work-item per matrix, in double where the device
// has it (float otherwise), on a copy of the matrix in a scratch buffer; a matrix with a zero
// pivot column has determinant 0.
#include "ops/build_context.hpp"
#include "ops/elementwise.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

namespace {

using ocl_infer::dtype_name;
using ocl_infer::shape_to_string;

// ---- ReverseSequence -----------------------------------------------------------------------------
struct RevSpec {
  int64_t batch_axis = 1, time_axis = 0, B = 0, T = 0;
};

RevSpec rev_spec(const OpContext& ctx) {
  RevSpec s;
  const Shape& x = ctx.in_shape(0);
  if (x.size() < 2) ctx.fail("input must have rank >= 2, not " + shape_to_string(x));
  s.batch_axis = ctx.node().attr_int("batch_axis", 1);
  s.time_axis = ctx.node().attr_int("time_axis", 0);
  if (!((s.batch_axis == 0 && s.time_axis == 1) || (s.batch_axis == 1 && s.time_axis == 0)))
    ctx.fail("batch_axis and time_axis must be 0 and 1 in some order (got " + std::to_string(s.batch_axis) + ", " +
             std::to_string(s.time_axis) + ")");
  s.B = x[s.batch_axis];
  s.T = x[s.time_axis];
  if (!ctx.has_input(1)) ctx.fail("sequence_lens is required");
  if (ctx.in_type(1) != DType::Int64) ctx.fail(std::string("sequence_lens must be int64, not ") + dtype_name(ctx.in_type(1)));
  if (ctx.in_shape(1) != Shape{s.B})
    ctx.fail("sequence_lens has shape " + shape_to_string(ctx.in_shape(1)) + ", the batch is " + std::to_string(s.B));
  if (ctx.is_const(1))
    for (int64_t v : ctx.in_ints(1))
      if (v < 0 || v > s.T) ctx.fail("sequence_lens holds " + std::to_string(v) + ", outside [0, " + std::to_string(s.T) + "]");
  return s;
}

void rev_infer(OpContext& ctx) {
  rev_spec(ctx);
  ctx.set_out(0, ctx.in_type(0), ctx.in_shape(0));
}

void rev_build(BuildContext& ctx) {
  const RevSpec s = rev_spec(ctx);
  const int64_t n = numel(ctx.in_shape(0));
  if (n == 0) return;
  const int64_t inner = n / (s.B * s.T);
  const cl_mem err = ctx.is_const(1) ? ctx.out_buf(0)
                                     : ctx.error_flag("sequence_lens holds a value outside [0, " + std::to_string(s.T) + "]");
  // Elements move as unsigned words of their size (float16 and double need no extension).
  const size_t es = ocl_infer::dtype_size(ctx.input(0).dtype);
  const char* word = es == 1 ? "uchar" : es == 2 ? "ushort" : es == 4 ? "uint" : "ulong";
  ctx.launch("linalg", "reverse_sequence", std::string("-DE=") + word, {static_cast<size_t>(n)}, {},
             ctx.in_buf(0), ctx.in_buf(1), ctx.out_buf(0), s.B, s.T, inner, static_cast<int32_t>(s.batch_axis), err);
}

// ---- Det -----------------------------------------------------------------------------------------
void det_infer(OpContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  const DType t = ctx.in_type(0);
  if (t != DType::Float32 && t != DType::Float16 && t != DType::Float64)
    ctx.unsupported(std::string("input of type ") + dtype_name(t));
  if (x.size() < 2 || x[x.size() - 1] != x[x.size() - 2])
    ctx.fail("input must be [..., M, M] (square matrices), not " + shape_to_string(x));
  ctx.set_out(0, t, Shape(x.begin(), x.end() - 2));
}

void det_build(BuildContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  const int64_t m = x.back(), count = numel(ctx.out_shape(0));
  if (count == 0) return;
  const bool fp64 = ctx.caps().fp64;
  const cl_mem work = ctx.scratch(fp64 ? DType::Float64 : DType::Float32, {std::max<int64_t>(1, count * m * m)}).mem;
  std::string opts = BuildContext::storage_option("SX", ctx.input(0).dtype == DType::Float16 ? DType::Float16 : DType::Float32) +
                     BuildContext::storage_option("SY", ctx.output(0).dtype == DType::Float16 ? DType::Float16 : DType::Float32);
  if (fp64) opts += " -DUSE_FP64";
  if (ctx.input(0).dtype == DType::Float64) {
    if (!fp64) ctx.unsupported("a float64 Det on a device without cl_khr_fp64");
    opts += " -DX_F64";
  }
  ctx.launch("linalg", "det_lu", opts, {static_cast<size_t>(count)}, {}, ctx.in_buf(0), ctx.out_buf(0), work, m);
}

}  // namespace

void add_linalg_ops(std::vector<OpDef>& t) {
  t.push_back(OpDef("ReverseSequence", 10, rev_infer).build(rev_build).shared_storage().any_storage());
  t.push_back(OpDef("Det", 11, det_infer).build(det_build).any_storage());
}

}  // namespace oi
