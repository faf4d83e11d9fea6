// Elementwise operators: one table row per ONNX op, all computed by kernels/elementwise.cl.
#include "ops/elementwise.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <map>

#include "ops/core/activation.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

std::string float_literal(double v) {
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "(-INFINITY)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  s += "f";
  return v < 0 ? "(" + s + ")" : s;
}

std::string type_defines(const std::vector<std::pair<std::string, DType>>& names) {
  std::string s;
  bool fp64 = false;
  for (auto& [n, t] : names) {
    s += " -D" + n + "=" + cl_type(t);
    // Half storage: loaded and stored through kernels/storage.cl, computed in float.
    if (t == DType::Float16) s += " -DS" + n.substr(1) + "=F16 -DC" + n.substr(1) + "=float -DS" + n.substr(1) + "_HALF";
    if (t == DType::BFloat16) s += " -DS" + n.substr(1) + "=BF16 -DC" + n.substr(1) + "=float";
    fp64 |= t == DType::Float64;
  }
  if (fp64) s += " -DUSE_FP64";
  return s;
}

void launch_elementwise(BuildContext& ctx, const std::string& macro, const std::vector<Operand>& inputs,
                        const Operand& out, const std::string& defines) {
  const int64_t n = out.numel();
  const int nd = std::max<int>(1, static_cast<int>(out.shape.size()));
  static const char* tnames[] = {"TA", "TB", "TC"};
  static const char* inames[] = {"IDX_A", "IDX_B", "IDX_C"};
  static const char* suffix[] = {"_A", "_B", "_C"};

  std::vector<std::pair<std::string, DType>> types;
  for (size_t k = 0; k < inputs.size(); ++k) types.push_back({tnames[k], inputs[k].dtype});
  types.push_back({"TO", out.dtype});
  std::string opts = "-DOP_" + macro + type_defines(types) + " -DNDIM=" + std::to_string(nd);
  if (!is_float(out.dtype)) opts += " -DTO_INT";
  opts += defines;

  // meta: output dims, then per input its strides with 0 on broadcast dims.
  std::vector<int64_t> meta;
  bool any_strided = false;
  std::vector<std::pair<int64_t, int64_t>> blocks;  // INNER and COUNT of each mode-3 input
  // The same per input (1, 1 when not mode 3); as build options for every kernel but
  // ew_binary_chunk, which takes them as arguments (and only whether INNER is 1 as an option).
  std::pair<int64_t, int64_t> block_of[3] = {{1, 1}, {1, 1}, {1, 1}};
  std::string block_opts, step_opts;
  const std::string base_opts = opts;
  // Each input's indexing mode; with allow_blocks false, broadcast blocks (mode 3, whose sizes
  // are build options outside ew_binary_chunk) are indexed by strides (mode 2) instead.
  const auto classify = [&](bool allow_blocks) {
    opts = base_opts;
    meta.assign(out.shape.begin(), out.shape.end());
    if (out.shape.empty()) meta.push_back(1);
    any_strided = false;
    blocks.clear();
    for (auto& b : block_of) b = {1, 1};
    block_opts.clear();
    step_opts.clear();
    for (size_t k = 0; k < inputs.size(); ++k) {
      const Shape& s = inputs[k].shape;
      int mode = 2;
      Shape padded(nd - std::min<size_t>(nd, s.size()), 1);
      padded.insert(padded.end(), s.begin(), s.end());
      if (s == out.shape) mode = 0;
      else if (numel(s) == 1) mode = 1;
      else {
        // One contiguous block [first, last] of output dims that the input matches exactly, with
        // the input 1 everywhere else: index = (i / inner) % count.
        // Output dims of extent 1 index nothing and are skipped (a [1,1,T,T] mask against [1,H,T,T]
        // scores is the block [T,T]).
        int first = -1, last = -1, prev = -1;  // prev: the last output dim of extent > 1 so far
        bool block = true;
        for (int d = 0; d < nd; ++d) {
          if (out.shape[d] == 1) continue;
          if (padded[d] == 1) {
            prev = d;
            continue;
          }
          if (padded[d] != out.shape[d]) block = false;
          if (first < 0) first = d;
          else if (last != prev) block = false;
          last = prev = d;
        }
        if (block && first >= 0 && allow_blocks) {
          int64_t inner = 1, count = 1;
          for (int d = last + 1; d < nd; ++d) inner *= out.shape[d];
          for (int d = first; d <= last; ++d) count *= out.shape[d];
          mode = 3;
          blocks.push_back({inner, count});
          block_of[k] = {inner, count};
          block_opts += std::string(" -DINNER") + suffix[k] + "=" + std::to_string(inner) + "L -DCOUNT" + suffix[k] +
                        "=" + std::to_string(count) + "L";
          if (inner == 1) step_opts += std::string(" -DSTEP") + suffix[k] + "=1";
        }
      }
      opts += std::string(" -D") + inames[k] + "=" + std::to_string(mode);
      any_strided |= mode == 2;
      auto st = strides_of(padded);
      for (int d = 0; d < nd; ++d) meta.push_back(padded[d] == 1 ? 0 : st[d]);
    }
  };
  classify(true);
  const size_t local = ctx.caps().linear_local();
  std::vector<size_t> global{round_up(static_cast<size_t>(n), local)};
  if (n == 0) return;
  const std::string file = "elementwise";
  std::string opts_rt = opts + step_opts;  // ew_binary_chunk's
  opts += block_opts;
  if (inputs.size() == 1) {
    // Chunks of 16, 8 or 4 elements per work-item (kernels/elementwise.cl, ew_unary_chunk): with
    // float16 storage loaded and stored as vectors of halves (one element per work-item converted
    // each half on its own: a HardSwish of the PP-OCRv4 detector ran 6x its float32 time); with
    // float32 too (YOLOv8n's Sigmoid over [1,80,8400]: 420 -> 312 us on PoCL, 2-core Xeon).
    if (inputs[0].dtype == DType::Float16 || out.dtype == DType::Float16 ||
        (inputs[0].dtype == DType::Float32 && out.dtype == DType::Float32))
      for (int64_t c : {16, 8, 4})
        if (n % c == 0) {
          ctx.launch(file, "ew_unary_chunk", opts + " -DEW_CHUNK=" + std::to_string(c),
                     {round_up(static_cast<size_t>(n / c), local)}, {local}, inputs[0].mem, out.mem, n);
          return;
        }
    ctx.launch(file, "ew_unary", opts, global, {local}, inputs[0].mem, out.mem, n);
    return;
  }
  const bool divides = macro == "DIV" || macro == "MOD_INT" || macro == "MOD_TRUNC";
  const bool checked = inputs.size() == 2 && divides && is_integer(inputs[1].dtype);  // zero divisors
  // Chunks of 16, 8 or 4 outputs per work-item where no input is strided and every broadcast
  // block divides evenly (kernels/elementwise.cl, ew_binary_chunk / ew_ternary_chunk); 0: none.
  const auto chunk_size = [&]() -> int64_t {
    if (any_strided) return 0;
    for (int64_t c : {16, 8, 4}) {
      bool fits = n % c == 0;
      for (const auto& [inner, count] : blocks) fits &= inner % c == 0 || (inner == 1 && count % c == 0);
      if (fits) return c;
    }
    return 0;
  };
  int64_t chunk = chunk_size();
  // A shape-generic plan (BuildContext::shape_generic): broadcast blocks only where
  // ew_binary_chunk takes their sizes as arguments; elsewhere strides, and no row kernel (its row
  // length is a build option).
  const bool generic = ctx.shape_generic();
  if (generic && !blocks.empty() && !(inputs.size() == 2 && chunk && !checked)) {
    classify(false);
    chunk = chunk_size();
    opts_rt = opts + step_opts;
    opts += block_opts;
  }
  const std::vector<size_t> chunks{round_up(static_cast<size_t>(chunk ? n / chunk : 0), local)};
  if (inputs.size() == 3 && chunk) {
    ctx.launch(file, "ew_ternary_chunk", opts + " -DEW_CHUNK=" + std::to_string(chunk), chunks, {local},
               inputs[0].mem, inputs[1].mem, inputs[2].mem, out.mem, n);
    return;
  }
  if (inputs.size() == 2 && !any_strided && !checked) {
    if (chunk) {
      ctx.launch(file, "ew_binary_chunk", opts_rt + " -DEW_CHUNK=" + std::to_string(chunk), chunks, {local},
                 inputs[0].mem, inputs[1].mem, out.mem, n, block_of[0].first, block_of[0].second, block_of[1].first,
                 block_of[1].second);
      return;
    }
    // Else a row per work-item where every broadcast block has the same inner extent (7x7
    // planes): the broadcast operand is constant along it (ew_binary_rows).
    const int64_t row = blocks.empty() ? 0 : blocks[0].first;
    bool rows_fit = !generic && row >= 2 && row <= 4096 && n % row == 0;
    for (const auto& block : blocks) rows_fit &= block.first == row;
    if (rows_fit) {
      const size_t rows = static_cast<size_t>(n / row);
      ctx.launch(file, "ew_binary_rows", opts + " -DEW_ROW=" + std::to_string(row), {round_up(rows, local)}, {local},
                 inputs[0].mem, inputs[1].mem, out.mem, static_cast<int64_t>(rows));
      return;
    }
  }
  cl_mem m = ctx.params(meta.data(), any_strided ? meta.size() * sizeof(int64_t) : sizeof(int64_t));
  if (checked)
    ctx.launch(file, "ew_binary_checked", opts + " -DCHECK_ZERO_DIVISOR", global, {local}, inputs[0].mem,
               inputs[1].mem, out.mem, m, n, ctx.error_flag("integer division by zero (a divisor is 0)"));
  else if (inputs.size() == 2)
    ctx.launch(file, "ew_binary", opts, global, {local}, inputs[0].mem, inputs[1].mem, out.mem, m, n);
  else
    ctx.launch(file, "ew_ternary", opts, global, {local}, inputs[0].mem, inputs[1].mem, inputs[2].mem, out.mem, m,
               n);
}

void launch_activation(BuildContext& ctx, const ActivationDef& act, double alpha, double beta, const Operand& in,
                       const Operand& out) {
  // Whole-vector functions for chunks of float32 / float16 values (computed in float).
  const auto floaty = [](DType t) { return t == DType::Float32 || t == DType::Float16; };
  const std::string vec = act.vector_fn && floaty(in.dtype) && floaty(out.dtype)
                              ? std::string(" -DACTIVATION_VECTOR_FN=") + act.vector_fn
                              : "";
  launch_elementwise(ctx, "ACTIVATION", {in}, out,
                     std::string(" -DACTIVATION=ACT_") + act.kernel + " -DALPHA=" + float_literal(alpha) +
                         " -DBETA=" + float_literal(beta) + vec);
}

namespace {

// ---- table ---------------------------------------------------------------------------------
enum class Out { Same, Bool };
enum class Accepts { Float, Numeric, Bool, Any, Integer };

struct Param {
  const char* attr;  // nullptr: unused
  float def;
};

struct UnaryOp {
  const char* onnx;
  const char* macro;
  Accepts accepts;
  Out out;
  Param alpha, beta;
  double (*host)(double x, double alpha, double beta);  // nullptr: device only
};

struct BinaryOp {
  const char* onnx;
  const char* macro;
  Accepts accepts;
  Out out;
  double (*host_f)(double a, double b);
  int64_t (*host_i)(int64_t a, int64_t b);  // nullptr: use host_f
};

const UnaryOp kUnary[] = {
    {"Neg", "NEG", Accepts::Numeric, Out::Same, {}, {}, [](double x, double, double) { return -x; }},
    {"Abs", "ABS", Accepts::Numeric, Out::Same, {}, {}, [](double x, double, double) { return std::fabs(x); }},
    {"Exp", "EXP", Accepts::Float, Out::Same, {}, {}, [](double x, double, double) { return std::exp(x); }},
    {"Log", "LOG", Accepts::Float, Out::Same, {}, {}, [](double x, double, double) { return std::log(x); }},
    {"Sqrt", "SQRT", Accepts::Float, Out::Same, {}, {}, [](double x, double, double) { return std::sqrt(x); }},
    {"Reciprocal", "RECIPROCAL", Accepts::Float, Out::Same, {}, {}, [](double x, double, double) { return 1.0 / x; }},
    {"Floor", "FLOOR", Accepts::Float, Out::Same, {}, {}, [](double x, double, double) { return std::floor(x); }},
    {"Ceil", "CEIL", Accepts::Float, Out::Same, {}, {}, [](double x, double, double) { return std::ceil(x); }},
    {"Round", "ROUND", Accepts::Float, Out::Same, {}, {}, [](double x, double, double) { return std::nearbyint(x); }},
    {"Sign", "SIGN", Accepts::Numeric, Out::Same, {}, {}, [](double x, double, double) { return std::isnan(x) ? x : double((x > 0) - (x < 0)); }},
    {"Erf", "ERF", Accepts::Float, Out::Same, {}, {}, [](double x, double, double) { return std::erf(x); }},
    {"Not", "NOT", Accepts::Bool, Out::Same, {}, {}, [](double x, double, double) { return double(x == 0); }},
    {"Sin", "SIN", Accepts::Float, Out::Same, {}, {}, nullptr},
    {"Cos", "COS", Accepts::Float, Out::Same, {}, {}, nullptr},
    {"Tan", "TAN", Accepts::Float, Out::Same, {}, {}, nullptr},
    {"Asin", "ASIN", Accepts::Float, Out::Same, {}, {}, nullptr},
    {"Acos", "ACOS", Accepts::Float, Out::Same, {}, {}, nullptr},
    {"Atan", "ATAN", Accepts::Float, Out::Same, {}, {}, nullptr},
    {"Sinh", "SINH", Accepts::Float, Out::Same, {}, {}, nullptr},
    {"Cosh", "COSH", Accepts::Float, Out::Same, {}, {}, nullptr},
    {"Asinh", "ASINH", Accepts::Float, Out::Same, {}, {}, nullptr},
    {"Acosh", "ACOSH", Accepts::Float, Out::Same, {}, {}, nullptr},
    {"Atanh", "ATANH", Accepts::Float, Out::Same, {}, {}, nullptr},
    {"IsNaN", "ISNAN", Accepts::Float, Out::Bool, {}, {}, nullptr},
    {"IsInf", "ISINF", Accepts::Float, Out::Bool, {"detect_positive", 1.0f}, {"detect_negative", 1.0f}, nullptr},
};

// Integer results wrap around as the device's do (two's complement), without undefined behaviour.
int64_t wrap(uint64_t v) { return static_cast<int64_t>(v); }

const BinaryOp kBinary[] = {
    {"Add", "ADD", Accepts::Numeric, Out::Same, [](double a, double b) { return a + b; }, [](int64_t a, int64_t b) { return wrap(uint64_t(a) + uint64_t(b)); }},
    {"Sub", "SUB", Accepts::Numeric, Out::Same, [](double a, double b) { return a - b; }, [](int64_t a, int64_t b) { return wrap(uint64_t(a) - uint64_t(b)); }},
    {"Mul", "MUL", Accepts::Numeric, Out::Same, [](double a, double b) { return a * b; }, [](int64_t a, int64_t b) { return wrap(uint64_t(a) * uint64_t(b)); }},
    {"Div", "DIV", Accepts::Numeric, Out::Same, [](double a, double b) { return a / b; }, [](int64_t a, int64_t b) { return b == 0 ? 0 : (a == INT64_MIN && b == -1) ? a : a / b; }},
    {"Pow", "POW", Accepts::Numeric, Out::Same, [](double a, double b) { return std::pow(a, b); }, nullptr},
    {"Equal", "EQUAL", Accepts::Any, Out::Bool, [](double a, double b) { return double(a == b); }, [](int64_t a, int64_t b) -> int64_t { return a == b; }},
    {"Less", "LESS", Accepts::Numeric, Out::Bool, [](double a, double b) { return double(a < b); }, [](int64_t a, int64_t b) -> int64_t { return a < b; }},
    {"LessOrEqual", "LESSOREQUAL", Accepts::Numeric, Out::Bool, [](double a, double b) { return double(a <= b); }, [](int64_t a, int64_t b) -> int64_t { return a <= b; }},
    {"Greater", "GREATER", Accepts::Numeric, Out::Bool, [](double a, double b) { return double(a > b); }, [](int64_t a, int64_t b) -> int64_t { return a > b; }},
    {"GreaterOrEqual", "GREATEROREQUAL", Accepts::Numeric, Out::Bool, [](double a, double b) { return double(a >= b); }, [](int64_t a, int64_t b) -> int64_t { return a >= b; }},
    {"And", "AND", Accepts::Bool, Out::Bool, [](double a, double b) { return double(a != 0 && b != 0); }, nullptr},
    {"Or", "OR", Accepts::Bool, Out::Bool, [](double a, double b) { return double(a != 0 || b != 0); }, nullptr},
    {"Xor", "XOR", Accepts::Bool, Out::Bool, [](double a, double b) { return double((a != 0) != (b != 0)); }, nullptr},
    {"PRelu", "PRELU", Accepts::Numeric, Out::Same, [](double a, double b) { return a < 0 ? a * b : a; }, nullptr},
};

const UnaryOp* find_unary(const std::string& op) {
  for (auto& u : kUnary)
    if (op == u.onnx) return &u;
  return nullptr;
}
const BinaryOp* find_binary(const std::string& op) {
  for (auto& b : kBinary)
    if (op == b.onnx) return &b;
  return nullptr;
}

void check_accepts(const OpContext& ctx, Accepts a, DType t) {
  bool ok = true;
  switch (a) {
    case Accepts::Float: ok = is_float(t); break;
    case Accepts::Numeric: ok = is_float(t) || is_integer(t); break;
    case Accepts::Bool: ok = t == DType::Bool; break;
    case Accepts::Integer: ok = is_integer(t); break;
    case Accepts::Any: ok = t != DType::String && t != DType::Undefined; break;
  }
  if (!ok) ctx.unsupported(std::string("inputs of type ") + ocl_infer::dtype_name(t) + " are not supported");
}

double param(const Node& n, const Param& p) { return p.attr ? n.attr_float(p.attr, p.def) : 0.0; }

// ---- unary ---------------------------------------------------------------------------------
void unary_infer(OpContext& ctx) {
  const UnaryOp& u = *find_unary(ctx.node().op_type);
  check_accepts(ctx, u.accepts, ctx.in_type(0));
  ctx.set_out(0, u.out == Out::Bool ? DType::Bool : ctx.in_type(0), ctx.in_shape(0));
}

void unary_host(OpContext& ctx) {
  const UnaryOp& u = *find_unary(ctx.node().op_type);
  if (!u.host) ctx.unsupported("no host implementation");
  const Tensor& x = ctx.in_data(0);
  Tensor y(u.out == Out::Bool ? DType::Bool : x.dtype, x.shape);
  double a = param(ctx.node(), u.alpha), b = param(ctx.node(), u.beta);
  // Integer Neg / Abs / Sign exactly in int64 (through double, 2^53 + 1 became 2^53), wrapping as
  // the device does (-INT64_MIN is INT64_MIN).
  const std::string& op = ctx.node().op_type;
  if (is_integer(x.dtype) && u.out != Out::Bool && (op == "Neg" || op == "Abs" || op == "Sign")) {
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t v = host_get_i(x, i);
      const int64_t neg = static_cast<int64_t>(0 - static_cast<uint64_t>(v));
      host_set_i(y, i, op == "Sign" ? (v > 0) - (v < 0) : op == "Neg" || v < 0 ? neg : v);
    }
    ctx.set_out_data(0, std::move(y));
    return;
  }
  for (int64_t i = 0; i < x.numel(); ++i) host_set_f(y, i, u.host(host_get_f(x, i), a, b));
  ctx.set_out_data(0, std::move(y));
}

void unary_build(BuildContext& ctx) {
  const UnaryOp& u = *find_unary(ctx.node().op_type);
  std::string defs;
  if (u.alpha.attr) defs += " -DALPHA=" + float_literal(param(ctx.node(), u.alpha));
  if (u.beta.attr) defs += " -DBETA=" + float_literal(param(ctx.node(), u.beta));
  launch_elementwise(ctx, u.macro, {ctx.input(0)}, ctx.output(0), defs);
}

// ---- activations (ops/core/activation.hpp), one unary op per table row ---------------------
const ActivationDef& activation_row(const OpContext& ctx) {
  const ActivationDef* a = activation_for_op(ctx.node().op_type);
  if (!a) throw ocl_infer::Error("internal: " + ctx.node().op_type + " is not in the activation table");
  return *a;
}

void activation_infer(OpContext& ctx) {
  const ActivationDef& a = activation_row(ctx);
  if (ctx.node().op_type == "Gelu") {
    const std::string approx = ctx.node().attr_string("approximate", "none");
    if (approx != "none" && approx != "tanh") ctx.fail("approximate must be none or tanh, not '" + approx + "'");
  }
  check_accepts(ctx, a.integers ? Accepts::Numeric : Accepts::Float, ctx.in_type(0));
  ctx.set_out(0, ctx.in_type(0), ctx.in_shape(0));
}

// The row's parameters as the node sets them.
Epilogue activation_params(const OpContext& ctx) {
  Epilogue e;
  if (!activation_of_node(ctx.graph(), ctx.node(), &e)) ctx.fail("internal: not an activation node");
  return e;
}

void activation_host(OpContext& ctx) {
  const Epilogue e = activation_params(ctx);
  const Tensor& x = ctx.in_data(0);
  Tensor y(x.dtype, x.shape);
  if (is_integer(x.dtype))
    for (int64_t i = 0; i < x.numel(); ++i) host_set_i(y, i, static_cast<int64_t>(e.act->host(static_cast<double>(host_get_i(x, i)), e.alpha, e.beta)));
  else
    for (int64_t i = 0; i < x.numel(); ++i) host_set_f(y, i, e.act->host(host_get_f(x, i), e.alpha, e.beta));
  ctx.set_out_data(0, std::move(y));
}

void activation_build(BuildContext& ctx) {
  const Epilogue e = activation_params(ctx);
  launch_activation(ctx, *e.act, e.alpha, e.beta, ctx.input(0), ctx.output(0));
}

// ---- binary --------------------------------------------------------------------------------
// PRelu before opset 7 applies a 1-D slope per channel (axis 1), not numpy-style.
bool legacy_channel_slope(const OpContext& ctx) {
  if (ctx.node().op_type != "PRelu" || ctx.opset() >= 7) return false;
  const Shape &x = ctx.in_shape(0), &s = ctx.in_shape(1);
  return x.size() > 2 && s.size() == 1 && s[0] == x[1] && s[0] != 1;
}

void binary_infer(OpContext& ctx) {
  const BinaryOp& b = *find_binary(ctx.node().op_type);
  DType ta = ctx.in_type(0), tb = ctx.in_type(1);
  check_accepts(ctx, b.accepts, ta);
  if (ta != tb && ctx.node().op_type != "Pow")
    ctx.fail(std::string("input types differ: ") + ocl_infer::dtype_name(ta) + " and " +
             ocl_infer::dtype_name(tb));
  Shape s;
  if (legacy_channel_slope(ctx)) {
    ctx.set_out(0, ta, ctx.in_shape(0));
    return;
  }
  if (!broadcast_shapes(ctx.in_shape(0), ctx.in_shape(1), &s))
    ctx.fail("shapes " + ocl_infer::shape_to_string(ctx.in_shape(0)) + " and " +
             ocl_infer::shape_to_string(ctx.in_shape(1)) + " do not broadcast");
  ctx.set_out(0, b.out == Out::Bool ? DType::Bool : ta, s);
}

void binary_host_eval(OpContext& ctx, const BinaryOp& b, const Tensor& x, const Tensor& z, Tensor& y) {
  bool ints = is_integer(x.dtype) && is_integer(z.dtype) && b.host_i;
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t ia = broadcast_index(y.shape, x.shape, i), ib = broadcast_index(y.shape, z.shape, i);
    if (ints) {
      int64_t zb = host_get_i(z, ib);
      if (ctx.node().op_type == "Div" && zb == 0) ctx.fail("integer division by zero");
      host_set_i(y, i, b.host_i(host_get_i(x, ia), zb));
    } else {
      host_set_f(y, i, b.host_f(host_get_f(x, ia), host_get_f(z, ib)));
    }
  }
}

void binary_host(OpContext& ctx) {
  const BinaryOp& b = *find_binary(ctx.node().op_type);
  Tensor y(ctx.out_value(0).dtype, ctx.out_shape(0));
  if (legacy_channel_slope(ctx)) {
    const Tensor &x = ctx.in_data(0), &slope = ctx.in_data(1);
    int64_t inner = 1, c = slope.numel();
    for (size_t d = 2; d < x.shape.size(); ++d) inner *= x.shape[d];
    for (int64_t i = 0; i < y.numel(); ++i)
      host_set_f(y, i, b.host_f(host_get_f(x, i), host_get_f(slope, (i / inner) % c)));
    ctx.set_out_data(0, std::move(y));
    return;
  }
  binary_host_eval(ctx, b, ctx.in_data(0), ctx.in_data(1), y);
  ctx.set_out_data(0, std::move(y));
}

void binary_build(BuildContext& ctx) {
  const BinaryOp& b = *find_binary(ctx.node().op_type);
  Operand slope = ctx.input(1);
  if (legacy_channel_slope(ctx)) {
    // Same bytes, seen as [C, 1, ..., 1].
    Shape cs(ctx.in_shape(0).size() - 1, 1);
    cs[0] = ctx.in_shape(1)[0];
    slope.shape = cs;
  }
  // Pow with a constant exponent of 2, 3 or 0.5 (decomposed LayerNorm / RMSNorm, L2 norms):
  // multiplications or sqrt instead of pow(), a slow library call on CPU devices.
  if (ctx.node().op_type == "Pow" && is_float(ctx.in_type(0)) && ctx.is_const(1) && numel(ctx.in_shape(1)) == 1 &&
      ctx.out_shape(0) == ctx.in_shape(0)) {
    const double e = host_get_f(ctx.in_data(1), 0);
    const char* macro = e == 2.0 ? "POW_2" : e == 3.0 ? "POW_3" : e == 0.5 ? "POW_HALF" : nullptr;
    if (macro) {
      launch_elementwise(ctx, macro, {ctx.input(0)}, ctx.output(0));
      return;
    }
  }
  launch_elementwise(ctx, b.macro, {ctx.input(0), slope}, ctx.output(0));
}

// ---- Mod, BitShift -------------------------------------------------------------------------
void mod_infer(OpContext& ctx) {
  check_accepts(ctx, Accepts::Numeric, ctx.in_type(0));
  bool fmod = ctx.node().attr_int("fmod", 0) != 0;
  if (is_float(ctx.in_type(0)) && !fmod) ctx.fail("fmod must be 1 for floating-point inputs");
  Shape s;
  if (!broadcast_shapes(ctx.in_shape(0), ctx.in_shape(1), &s)) ctx.fail("shapes do not broadcast");
  ctx.set_out(0, ctx.in_type(0), s);
}

// Folding (a loop's iteration number modulo a constant steers control flow at plan time).
void mod_host(OpContext& ctx) {
  const bool fmod = ctx.node().attr_int("fmod", 0) != 0;
  const Tensor &x = ctx.in_data(0), &z = ctx.in_data(1);
  Tensor y(ctx.out_value(0).dtype, ctx.out_shape(0));
  for (int64_t i = 0; i < y.numel(); ++i) {
    const int64_t ia = broadcast_index(y.shape, x.shape, i), ib = broadcast_index(y.shape, z.shape, i);
    if (is_float(x.dtype)) {
      host_set_f(y, i, std::fmod(host_get_f(x, ia), host_get_f(z, ib)));
      continue;
    }
    const int64_t a = host_get_i(x, ia), b = host_get_i(z, ib);
    if (b == 0) ctx.fail("integer modulo by zero");
    int64_t r = a % b;
    if (!fmod && r != 0 && ((r < 0) != (b < 0))) r += b;
    host_set_i(y, i, r);
  }
  ctx.set_out_data(0, std::move(y));
}

void mod_build(BuildContext& ctx) {
  // fmod=1 follows C (the dividend's sign), fmod=0 follows Python (the divisor's sign).
  bool fmod = ctx.node().attr_int("fmod", 0) != 0;
  const char* macro = is_float(ctx.in_type(0)) ? "FMOD" : (fmod ? "MOD_TRUNC" : "MOD_INT");
  launch_elementwise(ctx, macro, {ctx.input(0), ctx.input(1)}, ctx.output(0));
}

void bitshift_infer(OpContext& ctx) {
  check_accepts(ctx, Accepts::Integer, ctx.in_type(0));
  std::string dir = ctx.node().attr_string("direction", "");
  if (dir != "LEFT" && dir != "RIGHT") ctx.fail("direction must be LEFT or RIGHT");
  Shape s;
  if (!broadcast_shapes(ctx.in_shape(0), ctx.in_shape(1), &s)) ctx.fail("shapes do not broadcast");
  ctx.set_out(0, ctx.in_type(0), s);
}

void bitshift_build(BuildContext& ctx) {
  std::string dir = ctx.node().attr_string("direction", "");
  launch_elementwise(ctx, dir == "LEFT" ? "BITSHIFT_LEFT" : "BITSHIFT_RIGHT", {ctx.input(0), ctx.input(1)},
                     ctx.output(0));
}

// ---- variadic Sum, Mean, Min, Max ----------------------------------------------------------
const char* variadic_macro(const std::string& op) {
  if (op == "Sum" || op == "Mean") return "ADD";
  if (op == "Min") return "MIN";
  return "MAX";
}

void variadic_infer(OpContext& ctx) {
  if (ctx.num_inputs() < 1) ctx.fail("needs at least one input");
  DType t = ctx.in_type(0);
  check_accepts(ctx, Accepts::Numeric, t);
  // Mean is defined on float types only (an integer mean would need its own rounding rule).
  if (ctx.node().op_type == "Mean" && !is_float(t)) ctx.fail(std::string("Mean takes float tensors, not ") + ocl_infer::dtype_name(t));
  Shape s = ctx.in_shape(0);
  for (int k = 1; k < ctx.num_inputs(); ++k) {
    if (ctx.in_type(k) != t) ctx.fail("input types differ");
    if (!broadcast_shapes(s, ctx.in_shape(k), &s)) ctx.fail("input shapes do not broadcast");
  }
  ctx.set_out(0, t, s);
}

void variadic_host(OpContext& ctx) {
  const std::string& op = ctx.node().op_type;
  const Value& o = ctx.out_value(0);
  Tensor y(o.dtype, o.shape);
  // Integers exactly in int64 (Sum wrapping as the device's additions do).
  if (is_integer(o.dtype)) {
    for (int64_t i = 0; i < y.numel(); ++i) {
      int64_t acc = 0;
      for (int k = 0; k < ctx.num_inputs(); ++k) {
        const Tensor& x = ctx.in_data(k);
        const int64_t v = host_get_i(x, broadcast_index(y.shape, x.shape, i));
        if (k == 0) acc = v;
        else if (op == "Min") acc = std::min(acc, v);
        else if (op == "Max") acc = std::max(acc, v);
        else acc = static_cast<int64_t>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v));
      }
      host_set_i(y, i, acc);
    }
    ctx.set_out_data(0, std::move(y));
    return;
  }
  for (int64_t i = 0; i < y.numel(); ++i) {
    double acc = 0;
    for (int k = 0; k < ctx.num_inputs(); ++k) {
      const Tensor& x = ctx.in_data(k);
      double v = host_get_f(x, broadcast_index(y.shape, x.shape, i));
      if (k == 0) acc = v;
      else if (op == "Min") acc = std::isnan(acc) || std::isnan(v) ? std::nan("") : std::min(acc, v);
      else if (op == "Max") acc = std::isnan(acc) || std::isnan(v) ? std::nan("") : std::max(acc, v);
      else acc += v;
    }
    if (op == "Mean") acc /= ctx.num_inputs();
    host_set_f(y, i, acc);
  }
  ctx.set_out_data(0, std::move(y));
}

void variadic_build(BuildContext& ctx) {
  const Node& n = ctx.node();
  const Operand out = ctx.output(0);
  const std::string macro = variadic_macro(n.op_type);
  if (n.inputs.size() == 1) {
    launch_elementwise(ctx, "CAST", {ctx.input(0)}, out);
  } else {
    // Accumulate in the output buffer: out = op(in0, in1), then out = op(out, ink). The first step
    // may broadcast to a smaller shape than the final one, so such partial results go to a
    // scratch buffer of their own shape.
    Operand acc = ctx.input(0);
    for (int k = 1; k < ctx.num_inputs(); ++k) {
      const Operand next = ctx.input(k);
      Shape s;
      broadcast_shapes(acc.shape, next.shape, &s);
      Operand dst = out;
      if (k + 1 < ctx.num_inputs() && s != out.shape) dst = ctx.scratch(out.dtype, s);
      launch_elementwise(ctx, macro, {acc, next}, dst);
      acc = dst;
    }
  }
  if (n.op_type == "Mean")
    launch_elementwise(ctx, "SCALE", {out}, out, " -DALPHA=" + float_literal(1.0 / static_cast<double>(n.inputs.size())));
}

// ---- Where, Clip ---------------------------------------------------------------------------
void where_infer(OpContext& ctx) {
  if (ctx.in_type(0) != DType::Bool) ctx.fail("condition must be bool");
  if (ctx.in_type(1) != ctx.in_type(2)) ctx.fail("X and Y types differ");
  Shape s;
  if (!broadcast_shapes(ctx.in_shape(0), ctx.in_shape(1), &s) ||
      !broadcast_shapes(s, ctx.in_shape(2), &s))
    ctx.fail("shapes do not broadcast");
  ctx.set_out(0, ctx.in_type(1), s);
}

void where_host(OpContext& ctx) {
  const Tensor &c = ctx.in_data(0), &x = ctx.in_data(1), &z = ctx.in_data(2);
  Tensor y(ctx.out_value(0).dtype, ctx.out_shape(0));
  size_t es = ocl_infer::dtype_size(y.dtype);
  for (int64_t i = 0; i < y.numel(); ++i) {
    bool cond = c.data<uint8_t>()[broadcast_index(y.shape, c.shape, i)] != 0;
    const Tensor& src = cond ? x : z;
    std::memcpy(y.bytes.data() + i * es,
                src.bytes.data() + broadcast_index(y.shape, src.shape, i) * es, es);
  }
  ctx.set_out_data(0, std::move(y));
}

void where_build(BuildContext& ctx) {
  launch_elementwise(ctx, "WHERE", {ctx.input(0), ctx.input(1), ctx.input(2)}, ctx.output(0));
}

void clip_infer(OpContext& ctx) {
  check_accepts(ctx, Accepts::Numeric, ctx.in_type(0));
  ctx.set_out(0, ctx.in_type(0), ctx.in_shape(0));
}

void clip_build(BuildContext& ctx) {
  const Node& n = ctx.node();
  DType t = ctx.in_type(0);
  Epilogue e;
  if (is_float(t) && activation_of_node(ctx.graph(), n, &e)) {
    // Bounds known at plan time: the activation table's Clip with the bounds baked in.
    launch_activation(ctx, *e.act, e.alpha, e.beta, ctx.input(0), ctx.output(0));
    return;
  }
  // Otherwise a ternary pass; a missing bound becomes a one-element constant of the input's type.
  auto bound = [&](int k, bool upper) {
    if (ctx.has_input(k)) return ctx.input(k);
    Tensor b(t, {});
    if (is_float(t)) host_set_f(b, 0, upper ? INFINITY : -INFINITY);
    else host_set_i(b, 0, upper ? INT64_MAX : INT64_MIN);
    if (t == DType::UInt8 || t == DType::UInt16 || t == DType::UInt32 || t == DType::UInt64)
      std::memset(b.bytes.data(), upper ? 0xff : 0, b.bytes.size());
    else if (!is_float(t)) {
      // Saturate to the type's own limits.
      int bits = static_cast<int>(ocl_infer::dtype_size(t)) * 8;
      int64_t lim = bits == 64 ? INT64_MAX : (int64_t{1} << (bits - 1)) - 1;
      host_set_i(b, 0, upper ? lim : -lim - 1);
    }
    return ctx.constant(b);
  };
  launch_elementwise(ctx, "CLIP", {ctx.input(0), bound(1, false), bound(2, true)}, ctx.output(0));
}

// ---- Cast ----------------------------------------------------------------------------------
void cast_infer(OpContext& ctx) {
  DType to;
  if (ctx.node().op_type == "CastLike") to = ctx.in_type(1);
  else to = static_cast<DType>(ctx.node().attr_int("to", 0));
  if (ocl_infer::dtype_size(to) == 0) ctx.unsupported("cast to this type is not supported");
  if (ocl_infer::dtype_size(ctx.in_type(0)) == 0) ctx.unsupported("cast from this type is not supported");
  ctx.set_out(0, to, ctx.in_shape(0));
}

void cast_host(OpContext& ctx) {
  const Tensor& x = ctx.in_data(0);
  Tensor y(ctx.out_value(0).dtype, x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (is_float(x.dtype)) host_set_f(y, i, host_get_f(x, i));
    else host_set_i(y, i, host_get_i(x, i));
  }
  ctx.set_out_data(0, std::move(y));
}

void cast_build(BuildContext& ctx) {
  const DType to = ctx.out_value(0).dtype;
  const bool via_long = is_float(ctx.input(0).dtype) && (to == DType::UInt32 || to == DType::UInt64);
  launch_elementwise(ctx, to == DType::Bool ? "CAST_BOOL" : "CAST", {ctx.input(0)}, ctx.output(0),
                     via_long ? " -DCAST_VIA_LONG" : "");
}

// One operation per output element.
double per_output(const OpContext& ctx) { return static_cast<double>(numel(ctx.out_shape(0))); }

}  // namespace

void add_elementwise_ops(std::vector<OpDef>& t) {
  for (auto& u : kUnary)
    t.push_back(OpDef(u.onnx, 1, unary_infer).host(u.host ? unary_host : nullptr).build(unary_build).inplace().flops(per_output).any_storage());
  for (auto& b : kBinary)
    t.push_back(OpDef(b.onnx, 1, binary_infer).host(binary_host).build(binary_build).inplace().flops(per_output).any_storage());
  t.push_back(OpDef("Mod", 10, mod_infer).host(mod_host).build(mod_build).flops(per_output).any_storage());
  t.push_back(OpDef("BitShift", 11, bitshift_infer).build(bitshift_build).flops(per_output).any_storage());
  for (const char* v : {"Sum", "Mean", "Min", "Max"})
    t.push_back(OpDef(v, 1, variadic_infer).host(variadic_host).build(variadic_build).flops(per_output).any_storage());
  t.push_back(OpDef("Where", 9, where_infer).host(where_host).build(where_build).flops(per_output).any_storage());
  // Clip is an activation with constant bounds, but also takes run-time bounds and integers.
  t.push_back(OpDef("Clip", 1, clip_infer).build(clip_build).flops(per_output).any_storage());
  t.push_back(OpDef("Cast", 1, cast_infer).host(cast_host).build(cast_build).any_storage());
  t.push_back(OpDef("CastLike", 15, cast_infer).host(cast_host).build(cast_build).any_storage());
  // Every other row of the activation table is a plain unary op.
  for (const ActivationDef* a = activations(); a->name; ++a) {
    if (!a->onnx_op) continue;
    const bool taken = std::any_of(t.begin(), t.end(), [&](const OpDef& d) { return d.op_type == a->onnx_op; });
    if (!taken)
      t.push_back(OpDef(a->onnx_op, a->since_version, activation_infer)
                      .host(activation_host)
                      .build(activation_build)
                      .inplace()
                      .flops(per_output).any_storage());
  }
}

}  // namespace oi
