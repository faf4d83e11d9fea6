// Random generators: RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike, Bernoulli
// (kernels/random.cl).
//
// Values come from a counter-based generator on the device: element i of run r draws
// hash(seed, r, i) (splitmix64 mixing; 24-bit uniforms; normals by Box-Muller), so a kernel needs
// no state per work-item. The run number r lives in a device counter of the node, advanced by a
// one-item kernel after each draw: every run() draws new numbers, and a node with a `seed` gives
// the same sequence of runs in every session (a new plan -- new input shapes -- starts its sequence
// again). Without a seed, the seed is drawn from std::random_device when the plan is made. The
// numbers are not numpy's: the ONNX test data's expected outputs for these ops are draws of
// numpy's generator, which no other implementation reproduces; tests/test_random.cpp checks the
// distributions instead.
#include <cstring>
#include <random>

#include "ops/build_context.hpp"
#include "ops/elementwise.hpp"

namespace oi {

namespace {

using ocl_infer::dtype_name;
using ocl_infer::shape_to_string;

enum class Dist { Uniform, Normal, Bernoulli };

Dist dist_of(const OpContext& ctx) {
  const std::string& op = ctx.node().op_type;
  if (op == "Bernoulli") return Dist::Bernoulli;
  return op.find("Normal") != std::string::npos ? Dist::Normal : Dist::Uniform;
}

bool is_like(const OpContext& ctx) { return ctx.node().op_type.find("Like") != std::string::npos; }

DType out_type(const OpContext& ctx) {
  const bool from_input = is_like(ctx) || dist_of(ctx) == Dist::Bernoulli;
  const DType def = from_input ? ctx.in_type(0) : DType::Float32;
  const auto t = static_cast<DType>(ctx.node().attr_int("dtype", static_cast<int64_t>(def)));
  const bool ok = t == DType::Float32 || t == DType::Float16 || t == DType::Float64 ||
                  (dist_of(ctx) == Dist::Bernoulli && (is_integer(t) || t == DType::Bool));
  if (!ok) ctx.unsupported(std::string("dtype ") + dtype_name(t) + " for " + ctx.node().op_type);
  return t;
}

void random_infer(OpContext& ctx) {
  const DType t = out_type(ctx);
  if (is_like(ctx) || dist_of(ctx) == Dist::Bernoulli) {
    if (dist_of(ctx) == Dist::Bernoulli && !is_float(ctx.in_type(0)))
      ctx.fail(std::string("input must hold probabilities (a float type), not ") + dtype_name(ctx.in_type(0)));
    ctx.set_out(0, t, ctx.in_shape(0));
    return;
  }
  if (!ctx.node().has("shape")) ctx.fail("attribute 'shape' is required");
  const Shape s = ctx.node().attr_ints("shape", {});
  for (int64_t d : s)
    if (d < 0) ctx.fail("shape " + shape_to_string(s) + " has a negative dim");
  ctx.set_out(0, t, s);
}

// The generator key: the seed's bits, or one drawn now.
uint64_t seed_key(const OpContext& ctx) {
  if (!ctx.node().has("seed")) {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }
  const float seed = ctx.node().attr_float("seed", 0);
  uint32_t bits;
  std::memcpy(&bits, &seed, sizeof bits);
  return 0x5eed000000000000ULL ^ bits;
}

void random_build(BuildContext& ctx) {
  const int64_t n = numel(ctx.out_shape(0));
  if (n == 0) return;
  const Dist d = dist_of(ctx);
  const DType t = ctx.output(0).dtype;
  std::string opts = d == Dist::Uniform ? "-DUNIFORM" : d == Dist::Normal ? "-DNORMAL" : "-DBERNOULLI";
  if (t == DType::Float16) opts += " -DOUT_HALF";
  else opts += std::string(" -DTY=") + cl_type(t);
  if (t == DType::Float64 || (d == Dist::Bernoulli && ctx.input(0).dtype == DType::Float64)) opts += " -DUSE_FP64";
  if (d == Dist::Bernoulli) {
    const DType pt = ctx.input(0).dtype;
    opts += pt == DType::Float16 ? " -DP_HALF" : std::string(" -DTP=") + cl_type(pt);
  }
  const float a = d == Dist::Normal ? ctx.node().attr_float("mean", 0) : ctx.node().attr_float("low", 0);
  const float b = d == Dist::Normal ? ctx.node().attr_float("scale", 1) : ctx.node().attr_float("high", 1);
  const uint64_t zero = 0;
  const cl_mem counter = ctx.params(&zero, sizeof zero);  // the run number, plan-owned and writable
  const cl_mem p = d == Dist::Bernoulli ? ctx.in_buf(0) : counter;
  ctx.launch("random", "random_draw", opts, {static_cast<size_t>(n)}, {}, p, ctx.out_buf(0), counter,
             static_cast<int64_t>(seed_key(ctx)), a, b);
  ctx.launch("random", "random_advance", "", {1}, {}, counter);
}

}  // namespace

void add_random_ops(std::vector<OpDef>& t) {
  t.push_back(OpDef("RandomUniform", 1, random_infer).build(random_build));
  t.push_back(OpDef("RandomNormal", 1, random_infer).build(random_build));
  t.push_back(OpDef("RandomUniformLike", 1, random_infer).build(random_build));
  t.push_back(OpDef("RandomNormalLike", 1, random_infer).build(random_build));
  t.push_back(OpDef("Bernoulli", 15, random_infer).build(random_build));
}

}  // namespace oi
