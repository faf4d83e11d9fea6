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
#include "ops/variants.hpp"
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

// R [D][G*H][H] as kernels/rnn.cl's steps read it, float32: packed [D][H/vw][H][G][vw] (the
// blocked variant) or transposed [D][H][G*H].
HostFloats layout_r(const Tensor& r, const RnnSpec& s, int vw, bool packed) {
  Tensor widened;
  const Tensor& rf = as_float32(r, &widened);
  const float* src = rf.data<float>();
  const int64_t G = s.gates, H = s.H, gh = G * H;
  HostFloats out(static_cast<size_t>(s.dirs * gh * H));
  for (int64_t d = 0; d < s.dirs; ++d)
    for (int64_t row = 0; row < gh; ++row) {
      const int64_t g = row / H, j = row % H;
      for (int64_t k = 0; k < H; ++k) {
        const int64_t at = packed ? ((((d * (H / vw) + j / vw) * H + k) * G + g) * vw + j % vw) : (d * H + k) * gh + row;
        out[static_cast<size_t>(at)] = src[(d * gh + row) * H + k];
      }
    }
  return out;
}

// What the step launches of one layer need (the buffers are made by rnn_build).
struct RnnSteps {
  const RnnSpec* s = nullptr;
  std::string opts;
  cl_mem xw = nullptr, rt = nullptr, bf = nullptr, pf = nullptr, hs = nullptr, cs = nullptr, rh = nullptr;
  cl_mem y = nullptr, acts = nullptr, lens = nullptr;
  const Tensor* r_const = nullptr;  // R when it is a constant (laid out at plan time)
  cl_mem r_in = nullptr;            // else R's buffer, in storage r_storage
  DType r_storage = DType::Float32;
  int32_t has_lens = 0, has_y = 0, flags = 0;
  std::string signature;
};

// Every step of the layer: VW hidden units per work-item, `local` as given (empty: the driver's),
// R packed per work-item (`packed`) or transposed.
// Lays R out for the steps (a constant once, here; else by a kernel every run) into p.rt.
void prepare_r(BuildContext& ctx, RnnSteps& p, const std::string& opts, int vw, bool packed) {
  const RnnSpec& s = *p.s;
  const int64_t gh = s.gates * s.H;
  if (p.r_const) {
    p.rt = ctx.constant_floats(layout_r(*p.r_const, s, vw, packed), DType::Float32);
  } else {
    p.rt = ctx.scratch(DType::Float32, {s.dirs, s.H, gh}).mem;
    ctx.launch("rnn", "rnn_transpose_r", opts + BuildContext::storage_option("SR", p.r_storage),
               {static_cast<size_t>(gh), static_cast<size_t>(s.H), static_cast<size_t>(s.dirs)}, {}, p.r_in, p.rt,
               static_cast<int32_t>(s.gates), static_cast<int32_t>(s.H));
  }
}

void launch_steps(BuildContext& ctx, RnnSteps p, int vw, std::vector<size_t> local, bool packed) {
  const RnnSpec& s = *p.s;
  const std::string opts = p.opts + " -DVW=" + std::to_string(vw) + (packed ? " -DPACKED" : "");
  prepare_r(ctx, p, opts, vw, packed);
  const std::vector<size_t> grid{static_cast<size_t>(s.H / vw), static_cast<size_t>(s.B), static_cast<size_t>(s.dirs)};
  const char* cell = s.cell == Cell::Lstm ? "rnn_lstm_step" : s.cell == Cell::Gru ? "rnn_gru_step" : "rnn_rnn_step";
  const auto T = static_cast<int32_t>(s.T), B = static_cast<int32_t>(s.B), H = static_cast<int32_t>(s.H);
  for (int32_t step = 0; step < T; ++step) {
    if (s.cell == Cell::Gru && !s.linear_before_reset)
      ctx.launch("rnn", "rnn_gru_reset", opts, grid, local, p.xw, p.rt, p.bf, p.pf, p.hs, p.cs, p.rh, p.y, p.acts, p.lens,
                 p.has_lens, p.has_y, T, B, H, p.flags, s.clip, step);
    ctx.launch("rnn", cell, opts, grid, local, p.xw, p.rt, p.bf, p.pf, p.hs, p.cs, p.rh, p.y, p.acts, p.lens,
               p.has_lens, p.has_y, T, B, H, p.flags, s.clip, step);
  }
}

// The tuning key: what a step's speed depends on (not the sequence length: one choice serves all).
std::string steps_key(const RnnSteps& p) {
  const RnnSpec& s = *p.s;
  return std::string(s.cell == Cell::Lstm ? "LSTM" : s.cell == Cell::Gru ? (s.linear_before_reset ? "GRU-lbr" : "GRU") : "RNN") +
         " D" + std::to_string(s.dirs) + " B" + std::to_string(s.B) + " H" + std::to_string(s.H) + p.signature;
}

// The widest float vector that divides the hidden size (3 for sizes like 33: float3 exists).
int widest_dividing(int64_t h) {
  for (int w : {16, 8, 4, 3, 2})
    if (h % w == 0) return w;
  return 1;
}

// blocked: the CPU-shaped step -- VW hidden units per work-item in float vectors, local size 1
// (PoCL runs a work-group as a loop over its work-items; one item per group keeps the vector code).
bool blocked_applies(const RnnSteps&, const DeviceCaps&) { return true; }
bool blocked_valid(const RnnSteps& p, const DeviceCaps& c, const VariantParams& v) {
  return p.s->H % v.at("vw") == 0 && (!v.at("whole") || static_cast<size_t>(p.s->H / v.at("vw")) <= c.max_work_group_size);
}
VariantParams blocked_defaults(const RnnSteps& p, const DeviceCaps&) { return {{"vw", widest_dividing(p.s->H)}, {"whole", 0}}; }
bool blocked_preferred(const RnnSteps&, const DeviceCaps& c) { return c.cpu_shaped(); }
void blocked_run(BuildContext& ctx, const RnnSteps& p, const VariantParams& v) {
  const size_t items = static_cast<size_t>(p.s->H / v.at("vw"));
  launch_steps(ctx, p, v.at("vw"), {v.at("whole") ? items : 1, 1, 1}, true);
}

// wide: the GPU-shaped step -- one hidden unit per work-item, neighbouring items reading
// neighbouring weights; `ls` work-items per group along the hidden units (0: the driver's choice).
bool wide_applies(const RnnSteps&, const DeviceCaps&) { return true; }
bool wide_valid(const RnnSteps& p, const DeviceCaps& c, const VariantParams& v) {
  const int ls = v.at("ls");
  return ls == 0 || (p.s->H % ls == 0 && static_cast<size_t>(ls) <= c.max_work_group_size);
}
VariantParams wide_defaults(const RnnSteps&, const DeviceCaps&) { return {{"ls", 0}}; }
void wide_run(BuildContext& ctx, const RnnSteps& p, const VariantParams& v) {
  const int ls = v.at("ls");
  launch_steps(ctx, p, 1, ls ? std::vector<size_t>{static_cast<size_t>(ls), 1, 1} : std::vector<size_t>{}, false);
}

// fused: every step in one launch of one work-group (barriers between steps), for layers whose
// steps are too small to pay a launch each; R packed per work-item as in blocked.
bool fused_applies(const RnnSteps& p, const DeviceCaps& c) {
  return static_cast<size_t>(p.s->H * p.s->B * p.s->dirs) <= c.max_work_group_size;
}
bool fused_valid(const RnnSteps& p, const DeviceCaps& c, const VariantParams& v) {
  const int vw = v.at("vw");
  return p.s->H % vw == 0 && static_cast<size_t>(p.s->H / vw * p.s->B * p.s->dirs) <= c.max_work_group_size;
}
VariantParams fused_defaults(const RnnSteps& p, const DeviceCaps& c) {
  return {{"vw", c.cpu_shaped() ? widest_dividing(p.s->H) : 1}};
}
// A step of at most 64K multiply-adds: launches would cost more than the arithmetic (PoCL ~10 us
// per launch; a 48-unit LSTM step computes in ~1 us).
bool fused_preferred(const RnnSteps& p, const DeviceCaps&) {
  return p.s->gates * p.s->H * p.s->H * p.s->B * p.s->dirs <= 65536;
}
void fused_run(BuildContext& ctx, const RnnSteps& p0, const VariantParams& v) {
  RnnSteps p = p0;
  const RnnSpec& s = *p.s;
  const int vw = v.at("vw");
  const std::string opts = p.opts + " -DVW=" + std::to_string(vw) + " -DPACKED";
  prepare_r(ctx, p, opts, vw, true);
  const std::vector<size_t> group{static_cast<size_t>(s.H / vw), static_cast<size_t>(s.B), static_cast<size_t>(s.dirs)};
  const char* kernel = s.cell == Cell::Lstm ? "rnn_lstm_fused" : s.cell == Cell::Gru ? "rnn_gru_fused" : "rnn_rnn_fused";
  ctx.launch("rnn", kernel, opts, group, group, p.xw, p.rt, p.bf, p.pf, p.hs, p.cs, p.rh, p.y, p.acts, p.lens, p.has_lens,
             p.has_y, static_cast<int32_t>(s.T), static_cast<int32_t>(s.B), static_cast<int32_t>(s.H), p.flags, s.clip);
}

const KernelFamily<RnnSteps>& rnn_family() {
  static const KernelFamily<RnnSteps> f{
      "rnn",
      {
          {"fused", "every step in one launch: one work-group, VW hidden units per work-item, barriers between steps",
           {{"vw", {1, 2, 3, 4, 8, 16}}}, fused_applies, fused_valid, fused_defaults, fused_run, fused_preferred},
          {"blocked", "CPU-shaped: VW hidden units per work-item in float vectors, local size 1 (WHOLE: one group per batch row and direction)",
           {{"vw", {1, 2, 3, 4, 8, 16}}, {"whole", {0, 1}}}, blocked_applies, blocked_valid, blocked_defaults, blocked_run, blocked_preferred},
          {"wide", "GPU-shaped: one hidden unit per work-item, LS per work-group (0: the driver's)",
           {{"ls", {0, 32, 64, 128}}}, wide_applies, wide_valid, wide_defaults, wide_run},
      },
      steps_key};
  return f;
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
  if (s.linear_before_reset) opts += " -DLINEAR_BEFORE_RESET";

  RnnSteps p;
  p.s = &s;
  p.opts = opts;
  // States: [D][B][H] float32, two of each (step s reads buffer s % 2, writes the other).
  const Shape state{2, s.dirs, s.B, s.H};
  p.hs = ctx.scratch(DType::Float32, state).mem;
  p.cs = ctx.scratch(DType::Float32, state).mem;  // unused by GRU and RNN beyond rnn_init
  // GRU without linear_before_reset: r (.) H_{t-1} of the step.
  p.rh = s.cell == Cell::Gru && !s.linear_before_reset ? ctx.scratch(DType::Float32, {s.dirs, s.B, s.H}).mem : p.hs;
  p.bf = ctx.scratch(DType::Float32, {s.dirs, 2 * gh}).mem;
  p.pf = ctx.scratch(DType::Float32, {s.dirs, 3 * s.H}).mem;

  // Input projection of every step: XW[d][row][g] = sum_i X[row][i] W[d][g][i], row = t*B+b
  // (layout 0) or b*T+t (layout 1) -- X's own row order.
  const Operand xw = ctx.workspace(DType::Float32, {s.dirs, rows, gh});
  p.xw = xw.mem;
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

  // R: laid out by the step variant (at plan time when constant).
  if (ctx.is_const(2)) p.r_const = &ctx.in_data(2);
  p.r_in = ctx.in_buf(2);
  p.r_storage = st(2, false);

  // Activation table: per direction and slot, (code, alpha, beta).
  std::vector<float> acts;
  for (const ActSpec& a : s.acts) acts.insert(acts.end(), {static_cast<float>(a.code), a.alpha, a.beta});
  p.acts = ctx.constant_floats(acts);

  const cl_mem dummy = p.hs;  // any valid buffer stands in for an absent operand
  auto in_or = [&](int i) { return ctx.has_input(i) ? ctx.in_buf(i) : dummy; };
  auto out_or = [&](int i) { return ctx.has_output(i) ? ctx.out_buf(i) : dummy; };
  p.lens = in_or(4);
  p.y = out_or(0);
  p.has_lens = ctx.has_input(4);
  p.has_y = ctx.has_output(0);
  p.flags = (s.layout1 ? 1 : 0) | (s.reverse_only ? 2 : 0) | (s.input_forget ? 4 : 0);
  p.signature = node_signature(ctx);
  const cl_mem err = ctx.error_flag("sequence_lens holds a value outside [0, " + std::to_string(s.T) +
                                    "] (the sequence length of X " + shape_to_string(ctx.in_shape(0)) + ")");
  const std::vector<size_t> grid{static_cast<size_t>(s.H), static_cast<size_t>(s.B), static_cast<size_t>(s.dirs)};

  const int64_t prep = std::max(2 * gh, 3 * s.H);
  ctx.launch("rnn", "rnn_prep", opts, {static_cast<size_t>(prep), static_cast<size_t>(s.dirs)}, {}, in_or(3), in_or(7),
             p.bf, p.pf, static_cast<int32_t>(ctx.has_input(3)), static_cast<int32_t>(ctx.has_input(7)),
             static_cast<int32_t>(2 * gh), static_cast<int32_t>(3 * s.H));
  ctx.launch("rnn", "rnn_init", opts, grid, {}, in_or(5), in_or(6), p.hs, p.cs, static_cast<int32_t>(ctx.has_input(5)),
             static_cast<int32_t>(ctx.has_input(6)), p.lens, p.has_lens, static_cast<int32_t>(s.T),
             static_cast<int32_t>(s.B), static_cast<int32_t>(s.H), static_cast<int32_t>(s.layout1), err);
  if (s.T > 0) run_variant(ctx, rnn_family(), p);
  if (ctx.has_output(1) || ctx.has_output(2))
    ctx.launch("rnn", "rnn_final", opts, grid, {}, p.hs, p.cs, out_or(1), out_or(2), static_cast<int32_t>(ctx.has_output(1)),
               static_cast<int32_t>(ctx.has_output(2)), static_cast<int32_t>(s.T % 2), static_cast<int32_t>(s.B),
               static_cast<int32_t>(s.H), static_cast<int32_t>(s.layout1));
}

}  // namespace

std::vector<VariantInfo> rnn_variant_info() { return family_info(rnn_family()); }

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
