// Recurrent layers: LSTM, GRU and RNN as the ONNX spec defines them (directions, sequence_lens,
// initial states, peepholes, clip, activation attributes, GRU's linear_before_reset, layout 0/1,
// every optional output). Kernels in kernels/rnn.cl.
//
// On the device a layer is: the input projection X.W^T of every time step and direction as one
// GEMM (the gemm family's kernels) into a float32 workspace, then one cell launch per step (GRU
// with linear_before_reset = 0: two, because the candidate's recurrent product needs r (.) H of
// every hidden unit first) that computes both directions' recurrent products, gates and state
// update. States live in float32 device buffers (two per state, written alternately), so nothing
// returns to the host between steps and fp16 storage keeps fp32 state and gate arithmetic. R is
// transposed to [D][hidden][gates*hidden] once -- at plan time when constant -- so that
// neighbouring work-items (hidden units) read neighbouring weights.
#include <algorithm>
#include <cctype>
#include <cstring>

#include "ops/elementwise.hpp"
#include "ops/gemm_ops.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

namespace {

using ocl_infer::dtype_name;
using ocl_infer::shape_to_string;

enum class Cell { Lstm, Gru, Rnn };

// Activation codes shared with kernels/rnn.cl (rnn_act).
enum ActCode { kRelu = 0, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid, kElu,
               kSoftsign, kSoftplus };

struct ActSpec {
  ActCode code;
  float alpha, beta;
};

struct RnnSpec {
  Cell cell = Cell::Lstm;
  int gates = 4;         // G: weights per hidden unit and direction (LSTM iofc, GRU zrh, RNN i)
  int acts_per_dir = 3;  // activation functions per direction
  int64_t dirs = 1, T = 0, B = 0, I = 0, H = 0;
  bool reverse_only = false, layout1 = false, input_forget = false, linear_before_reset = false;
  float clip = 0;  // 0: none
  std::vector<ActSpec> acts;  // dirs * acts_per_dir
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Which of alpha / beta an activation takes, and their defaults when the attribute lists run out
// (as ONNX Runtime fills them).
ActSpec parse_act(const OpContext& ctx, const std::string& name, const std::vector<float>& alphas,
                  const std::vector<float>& betas, size_t& ai, size_t& bi) {
  struct Row {
    const char* name;
    ActCode code;
    bool has_alpha, has_beta;
    float alpha, beta;
  };
  static const Row rows[] = {
      {"relu", kRelu, false, false, 0, 0},          {"tanh", kTanh, false, false, 0, 0},
      {"sigmoid", kSigmoid, false, false, 0, 0},    {"affine", kAffine, true, true, 1, 0},
      {"leakyrelu", kLeakyRelu, true, false, 0.01f, 0}, {"thresholdedrelu", kThresholdedRelu, true, false, 1, 0},
      {"scaledtanh", kScaledTanh, true, true, 1, 1}, {"hardsigmoid", kHardSigmoid, true, true, 0.2f, 0.5f},
      {"elu", kElu, true, false, 1, 0},             {"softsign", kSoftsign, false, false, 0, 0},
      {"softplus", kSoftplus, false, false, 0, 0}};
  const std::string l = lower(name);
  for (const Row& r : rows) {
    if (l != r.name) continue;
    ActSpec a{r.code, r.alpha, r.beta};
    if (r.has_alpha && ai < alphas.size()) a.alpha = alphas[ai++];
    if (r.has_beta && bi < betas.size()) a.beta = betas[bi++];
    return a;
  }
  ctx.unsupported("activation '" + name +
                  "' (supported: Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, "
                  "Elu, Softsign, Softplus)");
}

void require_dims(const OpContext& ctx, int i, const char* what, const Shape& want) {
  if (!ctx.has_input(i)) return;
  if (ctx.in_shape(i) != want)
    ctx.fail(std::string(what) + " has shape " + shape_to_string(ctx.in_shape(i)) + ", expected " +
             shape_to_string(want));
}

RnnSpec rnn_spec(const OpContext& ctx) {
  const Node& n = ctx.node();
  RnnSpec s;
  s.cell = n.op_type == "LSTM" ? Cell::Lstm : n.op_type == "GRU" ? Cell::Gru : Cell::Rnn;
  s.gates = s.cell == Cell::Lstm ? 4 : s.cell == Cell::Gru ? 3 : 1;
  s.acts_per_dir = s.cell == Cell::Lstm ? 3 : s.cell == Cell::Gru ? 2 : 1;
  const std::string dir = n.attr_string("direction", "forward");
  if (dir == "bidirectional") s.dirs = 2;
  else if (dir == "reverse") s.reverse_only = true;
  else if (dir != "forward") ctx.fail("direction must be forward, reverse or bidirectional, not '" + dir + "'");
  s.layout1 = n.attr_int("layout", 0) != 0;
  s.input_forget = s.cell == Cell::Lstm && n.attr_int("input_forget", 0) != 0;
  s.linear_before_reset = s.cell == Cell::Gru && n.attr_int("linear_before_reset", 0) != 0;
  if (n.has("clip")) {
    s.clip = n.attr_float("clip", 0);
    if (!(s.clip > 0)) ctx.fail("clip must be positive");
  }
  if (ctx.num_inputs() < 3 || !ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2))
    ctx.fail("X, W and R are required");
  for (int i : {0, 1, 2, 3, 5, 6, 7}) {
    if (!ctx.has_input(i)) continue;
    const DType t = ctx.in_type(i);
    if (t != DType::Float32 && t != DType::Float16)
      ctx.unsupported(std::string("input ") + std::to_string(i) + " (" + ctx.in(i).name + ") of type " + dtype_name(t) +
                      " (float32 and float16 are supported)");
    if (t != ctx.in_type(0)) ctx.fail("every float input must have X's type");
  }
  const Shape& x = ctx.in_shape(0);
  const Shape& w = ctx.in_shape(1);
  const Shape& r = ctx.in_shape(2);
  if (x.size() != 3) ctx.fail("X must have rank 3, not " + shape_to_string(x));
  if (w.size() != 3 || r.size() != 3) ctx.fail("W and R must have rank 3 (W " + shape_to_string(w) + ", R " + shape_to_string(r) + ")");
  s.T = s.layout1 ? x[1] : x[0];
  s.B = s.layout1 ? x[0] : x[1];
  s.I = x[2];
  s.H = r[2];
  if (n.has("hidden_size") && n.attr_int("hidden_size", 0) != s.H)
    ctx.fail("hidden_size " + std::to_string(n.attr_int("hidden_size", 0)) + " does not match R " + shape_to_string(r));
  if (s.H <= 0) ctx.fail("the hidden size must be positive (R " + shape_to_string(r) + ")");
  const int64_t gh = s.gates * s.H;
  require_dims(ctx, 1, "W", {s.dirs, gh, s.I});
  require_dims(ctx, 2, "R", {s.dirs, gh, s.H});
  require_dims(ctx, 3, "B", {s.dirs, 2 * gh});
  require_dims(ctx, 4, "sequence_lens", {s.B});
  const Shape state = s.layout1 ? Shape{s.B, s.dirs, s.H} : Shape{s.dirs, s.B, s.H};
  require_dims(ctx, 5, "initial_h", state);
  if (s.cell == Cell::Lstm) {
    require_dims(ctx, 6, "initial_c", state);
    require_dims(ctx, 7, "P", {s.dirs, 3 * s.H});
  } else if (ctx.num_inputs() > 6) {
    ctx.fail("has " + std::to_string(ctx.num_inputs()) + " inputs; at most 6");
  }
  if (ctx.has_input(4)) {
    const DType lt = ctx.in_type(4);
    if (lt != DType::Int32 && lt != DType::Int64) ctx.fail(std::string("sequence_lens must be int32, not ") + dtype_name(lt));
    if (ctx.is_const(4))
      for (int64_t v : ctx.in_ints(4))
        if (v < 0 || v > s.T)
          ctx.fail("sequence_lens holds " + std::to_string(v) + ", outside [0, " + std::to_string(s.T) +
                   "] (the sequence length of X " + shape_to_string(x) + ")");
  }

  // Activations: the defaults, or the attribute's list (per direction).
  std::vector<std::string> names = n.has("activations") ? n.attrs.at("activations").strings : std::vector<std::string>{};
  if (names.empty()) {
    const std::vector<std::string> def = s.cell == Cell::Lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                         : s.cell == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                               : std::vector<std::string>{"Tanh"};
    for (int64_t d = 0; d < s.dirs; ++d) names.insert(names.end(), def.begin(), def.end());
  }
  if (static_cast<int64_t>(names.size()) != s.dirs * s.acts_per_dir)
    ctx.fail("activations lists " + std::to_string(names.size()) + " functions; " + n.op_type + " with " +
             std::to_string(s.dirs) + " direction(s) needs " + std::to_string(s.dirs * s.acts_per_dir));
  const std::vector<float> alphas = n.attr_floats("activation_alpha", {}), betas = n.attr_floats("activation_beta", {});
  size_t ai = 0, bi = 0;
  for (auto& name : names) s.acts.push_back(parse_act(ctx, name, alphas, betas, ai, bi));
  return s;
}

void rnn_infer(OpContext& ctx) {
  const RnnSpec s = rnn_spec(ctx);
  const DType t = ctx.in_type(0);
  if (ctx.has_output(0)) ctx.set_out(0, t, s.layout1 ? Shape{s.B, s.T, s.dirs, s.H} : Shape{s.T, s.dirs, s.B, s.H});
  const Shape state = s.layout1 ? Shape{s.B, s.dirs, s.H} : Shape{s.dirs, s.B, s.H};
  if (ctx.has_output(1)) ctx.set_out(1, t, state);
  if (ctx.has_output(2)) {
    if (s.cell != Cell::Lstm) ctx.fail("has 3 outputs; " + ctx.node().op_type + " has at most 2 (Y, Y_h)");
    ctx.set_out(2, t, state);
  }
}

double rnn_flops(const OpContext& ctx) {
  const RnnSpec s = rnn_spec(ctx);
  return 2.0 * static_cast<double>(s.T * s.B * s.dirs * s.gates * s.H * (s.I + s.H));
}

// R [D][G*H][H] -> Rt [D][H][G*H], float32.
std::vector<float> transpose_r(const Tensor& r, const RnnSpec& s) {
  Tensor widened;
  const Tensor& rf = as_float32(r, &widened);
  const float* src = rf.data<float>();
  const int64_t gh = s.gates * s.H;
  std::vector<float> out(static_cast<size_t>(s.dirs * gh * s.H));
  for (int64_t d = 0; d < s.dirs; ++d)
    for (int64_t row = 0; row < gh; ++row)
      for (int64_t k = 0; k < s.H; ++k) out[(d * s.H + k) * gh + row] = src[(d * gh + row) * s.H + k];
  return out;
}

void rnn_build(BuildContext& ctx) {
  const RnnSpec s = rnn_spec(ctx);
  const int64_t gh = s.gates * s.H, rows = s.T * s.B;
  if (s.B == 0) return;
  for (int64_t v : {rows, gh, s.I, s.H, s.dirs * s.B * gh, s.dirs * rows * gh, s.dirs * s.H * gh})
    if (v > INT32_MAX) ctx.unsupported("a recurrent layer this large (X " + shape_to_string(ctx.in_shape(0)) + ")");

  // Storage of every float operand (each on its own: the plan may keep some in float16).
  auto st = [&](int i, bool out) -> DType {
    if (out) return ctx.has_output(i) ? ctx.output(i).dtype : DType::Float32;
    return ctx.has_input(i) ? ctx.input(i).dtype : DType::Float32;
  };
  std::string opts = BuildContext::storage_option("SB", st(3, false)) + BuildContext::storage_option("SH0", st(5, false)) +
                     BuildContext::storage_option("SC0", st(6, false)) + BuildContext::storage_option("SP", st(7, false)) +
                     BuildContext::storage_option("SY", st(0, true)) + BuildContext::storage_option("SYH", st(1, true)) +
                     BuildContext::storage_option("SYC", st(2, true));
  if (ctx.has_input(4) && ctx.in_type(4) == DType::Int64) opts += " -DLENS_I64";

  // States: [D][B][H] float32, two of each (step s reads buffer s % 2, writes the other).
  const Shape state{2, s.dirs, s.B, s.H};
  const cl_mem hs = ctx.scratch(DType::Float32, state).mem;
  const cl_mem cs = ctx.scratch(DType::Float32, state).mem;  // unused by GRU and RNN beyond rnn_init
  // GRU without linear_before_reset: r (.) H_{t-1} of the step.
  const cl_mem rh = s.cell == Cell::Gru && !s.linear_before_reset ? ctx.scratch(DType::Float32, {s.dirs, s.B, s.H}).mem : hs;

  // Input projection of every step: XW[d][row][g] = sum_i X[row][i] W[d][g][i], row = t*B+b
  // (layout 0) or b*T+t (layout 1) -- X's own row order.
  const Operand xw = ctx.workspace(DType::Float32, {s.dirs, rows, gh});
  if (rows > 0) {
    if (s.I == 0) {
      ctx.launch("rnn", "rnn_fill_zero", "", {static_cast<size_t>(s.dirs * rows * gh)}, {}, xw.mem);
    } else {
      GemmDesc d;
      d.M = rows;
      d.N = gh;
      d.K = s.I;
      d.a_rs = s.I;
      d.a_ks = 1;
      d.a_off.assign(static_cast<size_t>(s.dirs), 0);
      d.b_input = 1;
      d.b_ks = 1;
      d.b_ns = s.I;
      d.b_bs = gh * s.I;
      d.b_count = s.dirs;
      if (s.dirs == 2) d.b_index = {0, 1};
      d.a_storage = ctx.input(0).dtype;
      d.y_storage = DType::Float32;
      launch_gemm(ctx, ctx.in_buf(0), xw.mem, d);
    }
  }

  // R transposed, float32.
  cl_mem rt;
  if (ctx.is_const(2)) {
    rt = ctx.constant_floats(transpose_r(ctx.in_data(2), s), DType::Float32);
  } else {
    rt = ctx.scratch(DType::Float32, {s.dirs, s.H, gh}).mem;
    ctx.launch("rnn", "rnn_transpose_r", BuildContext::storage_option("SR", st(2, false)),
               {static_cast<size_t>(gh), static_cast<size_t>(s.H), static_cast<size_t>(s.dirs)}, {}, ctx.in_buf(2), rt,
               static_cast<int32_t>(gh), static_cast<int32_t>(s.H));
  }

  // Activation table: per direction and slot, (code, alpha, beta).
  std::vector<float> acts;
  for (const ActSpec& a : s.acts) acts.insert(acts.end(), {static_cast<float>(a.code), a.alpha, a.beta});
  const cl_mem act_buf = ctx.constant_floats(acts);

  const cl_mem dummy = hs;  // any valid buffer stands in for an absent operand
  auto in_or = [&](int i) { return ctx.has_input(i) ? ctx.in_buf(i) : dummy; };
  auto out_or = [&](int i) { return ctx.has_output(i) ? ctx.out_buf(i) : dummy; };
  const cl_mem lens = in_or(4);
  const int32_t has_lens = ctx.has_input(4), has_b = ctx.has_input(3), has_p = ctx.has_input(7);
  const int32_t has_y = ctx.has_output(0);
  const cl_mem err = ctx.error_flag("sequence_lens holds a value outside [0, " + std::to_string(s.T) +
                                    "] (the sequence length of X " + shape_to_string(ctx.in_shape(0)) + ")");
  const int32_t flags = (s.layout1 ? 1 : 0) | (s.reverse_only ? 2 : 0) | (s.input_forget ? 4 : 0);
  const std::vector<size_t> grid{static_cast<size_t>(s.H), static_cast<size_t>(s.B), static_cast<size_t>(s.dirs)};

  ctx.launch("rnn", "rnn_init", opts, grid, {}, in_or(5), in_or(6), hs, cs, static_cast<int32_t>(ctx.has_input(5)),
             static_cast<int32_t>(ctx.has_input(6)), lens, static_cast<int32_t>(has_lens), static_cast<int32_t>(s.T),
             static_cast<int32_t>(s.B), static_cast<int32_t>(s.H), static_cast<int32_t>(s.layout1), err);

  const char* cell_kernel = s.cell == Cell::Lstm ? "rnn_lstm_step" : s.cell == Cell::Gru ? "rnn_gru_step" : "rnn_rnn_step";
  const std::string cell_opts = opts + (s.linear_before_reset ? " -DLINEAR_BEFORE_RESET" : "");
  for (int64_t step = 0; step < s.T; ++step) {
    if (s.cell == Cell::Gru && !s.linear_before_reset)
      ctx.launch("rnn", "rnn_gru_reset", cell_opts, grid, {}, xw.mem, rt, in_or(3), hs, rh, act_buf, lens,
                 static_cast<int32_t>(has_lens), static_cast<int32_t>(has_b), static_cast<int32_t>(step),
                 static_cast<int32_t>(s.T), static_cast<int32_t>(s.B), static_cast<int32_t>(s.H), flags, s.clip);
    ctx.launch("rnn", cell_kernel, cell_opts, grid, {}, xw.mem, rt, in_or(3), in_or(7), hs, cs, rh, out_or(0), act_buf,
               lens, static_cast<int32_t>(has_lens), static_cast<int32_t>(has_b), static_cast<int32_t>(has_p), has_y,
               static_cast<int32_t>(step), static_cast<int32_t>(s.T), static_cast<int32_t>(s.B), static_cast<int32_t>(s.H),
               flags, s.clip);
  }
  if (ctx.has_output(1) || ctx.has_output(2))
    ctx.launch("rnn", "rnn_final", opts, grid, {}, hs, cs, out_or(1), out_or(2), static_cast<int32_t>(ctx.has_output(1)),
               static_cast<int32_t>(ctx.has_output(2)), static_cast<int32_t>(s.T % 2), static_cast<int32_t>(s.B),
               static_cast<int32_t>(s.H), static_cast<int32_t>(s.layout1));
}

}  // namespace

void add_rnn_ops(std::vector<OpDef>& t) {
  for (const char* op : {"LSTM", "GRU", "RNN"})
    for (int since : {1, 7, 14}) {
      if (since == 1 && std::strcmp(op, "GRU") == 0) {
        // GRU-1 and GRU-3 differ only in linear_before_reset, which GRU-3 added.
        t.push_back(OpDef(op, 3, rnn_infer).build(rnn_build).flops(rnn_flops).any_storage());
      }
      t.push_back(OpDef(op, since, rnn_infer).build(rnn_build).flops(rnn_flops).any_storage());
    }
}

}  // namespace oi
