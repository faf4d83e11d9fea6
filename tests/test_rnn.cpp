// LSTM, GRU and RNN against a CPU reference written here from the ONNX spec's equations (double
// arithmetic, one time step at a time): every direction x layout x ragged sequence_lens, initial
// states, peepholes, clip, input_forget, GRU's linear_before_reset both ways, activation lists with
// alpha/beta, every optional output omitted in turn, weights as initializers or as graph inputs,
// sequence lengths 1, 7 and 300, batch 1 and 5, hidden 1, 33 and 512, a session re-planned for
// several lengths, and the errors (sequence_lens beyond the sequence, mismatched sizes).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

using Shape = std::vector<int64_t>;

struct Act {
  std::string name;
  double alpha = 0, beta = 0;
  double operator()(double x) const {
    if (name == "Sigmoid") return 1 / (1 + std::exp(-x));
    if (name == "Tanh") return std::tanh(x);
    if (name == "Relu") return x > 0 ? x : 0;
    if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
    if (name == "HardSigmoid") return std::min(1.0, std::max(0.0, alpha * x + beta));
    if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
    if (name == "Affine") return alpha * x + beta;
    if (name == "Elu") return x >= 0 ? x : alpha * (std::exp(x) - 1);
    if (name == "Softsign") return x / (1 + std::fabs(x));
    if (name == "Softplus") return std::log(1 + std::exp(x));
    if (name == "ThresholdedRelu") return x > alpha ? x : 0;
    ADD_FAILURE() << "reference has no activation " << name;
    return 0;
  }
};

struct Config {
  std::string op = "LSTM";  // LSTM, GRU, RNN
  std::string direction = "forward";
  int64_t T = 7, B = 5, I = 3, H = 33;
  int layout = 0;
  bool bias = true, lens = false, h0 = false, c0 = false, peep = false;
  bool input_forget = false, lbr = false;
  float clip = 0;
  std::vector<Act> acts;  // empty: the defaults
  bool y = true, yh = true, yc = true;
  bool weights_as_inputs = false;
  int opset = 14;
};

int gates(const Config& c) { return c.op == "LSTM" ? 4 : c.op == "GRU" ? 3 : 1; }
int64_t dirs(const Config& c) { return c.direction == "bidirectional" ? 2 : 1; }

std::vector<Act> acts_of(const Config& c) {
  if (!c.acts.empty()) return c.acts;
  std::vector<Act> one = c.op == "LSTM" ? std::vector<Act>{{"Sigmoid"}, {"Tanh"}, {"Tanh"}}
                         : c.op == "GRU" ? std::vector<Act>{{"Sigmoid"}, {"Tanh"}}
                                         : std::vector<Act>{{"Tanh"}};
  std::vector<Act> all;
  for (int64_t d = 0; d < dirs(c); ++d) all.insert(all.end(), one.begin(), one.end());
  return all;
}

struct Inputs {
  Tensor X, W, R, Bias, lens, h0, c0, P;
};

Inputs make_inputs(const Config& c, std::mt19937& rng) {
  const int64_t D = dirs(c), G = gates(c), H = c.H;
  Inputs in;
  in.X = random_tensor(c.layout ? Shape{c.B, c.T, c.I} : Shape{c.T, c.B, c.I}, rng);
  // Weights scaled so that gates neither saturate nor vanish at hidden 512.
  const float ws = 1.0f / std::sqrt(static_cast<float>(std::max<int64_t>(H, c.I)));
  in.W = random_tensor({D, G * H, c.I}, rng, -2 * ws, 2 * ws);
  in.R = random_tensor({D, G * H, H}, rng, -2 * ws, 2 * ws);
  in.Bias = random_tensor({D, 2 * G * H}, rng, -0.5f, 0.5f);
  const Shape st = c.layout ? Shape{c.B, D, H} : Shape{D, c.B, H};
  in.h0 = random_tensor(st, rng);
  in.c0 = random_tensor(st, rng);
  in.P = random_tensor({D, 3 * H}, rng, -0.5f, 0.5f);
  in.lens = Tensor(DType::Int32, {c.B});
  for (int64_t b = 0; b < c.B; ++b)
    in.lens.data<int32_t>()[b] = static_cast<int32_t>(c.lens ? (c.T - (b * 3) % (c.T + 1)) : c.T);
  return in;
}

struct Outputs {
  Tensor Y, Yh, Yc;
};

// The ONNX equations, directly. Gate orders: LSTM i o f c, GRU z r h; P: i o f.
Outputs reference(const Config& c, const Inputs& in) {
  const int64_t D = dirs(c), G = gates(c), T = c.T, B = c.B, H = c.H, I = c.I;
  const std::vector<Act> acts = acts_of(c);
  const int per_dir = c.op == "LSTM" ? 3 : c.op == "GRU" ? 2 : 1;
  Outputs o;
  o.Y = Tensor(DType::Float32, c.layout ? Shape{B, T, D, H} : Shape{T, D, B, H});
  o.Yh = Tensor(DType::Float32, c.layout ? Shape{B, D, H} : Shape{D, B, H});
  o.Yc = Tensor(DType::Float32, o.Yh.shape);
  std::fill(o.Y.data<float>(), o.Y.data<float>() + o.Y.numel(), 0.0f);
  auto x_at = [&](int64_t t, int64_t b, int64_t i) {
    return static_cast<double>(in.X.data<float>()[c.layout ? (b * T + t) * I + i : (t * B + b) * I + i]);
  };
  auto st_index = [&](int64_t d, int64_t b, int64_t j) { return c.layout ? (b * D + d) * H + j : (d * B + b) * H + j; };
  auto y_index = [&](int64_t t, int64_t d, int64_t b, int64_t j) {
    return c.layout ? ((b * T + t) * D + d) * H + j : ((t * D + d) * B + b) * H + j;
  };
  auto clipf = [&](double v) { return c.clip > 0 ? std::min<double>(c.clip, std::max<double>(-c.clip, v)) : v; };
  for (int64_t d = 0; d < D; ++d) {
    const bool rev = c.direction == "reverse" || d == 1;
    const Act& f = acts[d * per_dir];
    const Act& g = acts[d * per_dir + (per_dir > 1 ? 1 : 0)];
    const Act& hact = acts[d * per_dir + (per_dir > 2 ? 2 : 0)];
    auto W = [&](int64_t row, int64_t i) { return static_cast<double>(in.W.data<float>()[(d * G * H + row) * I + i]); };
    auto R = [&](int64_t row, int64_t k) { return static_cast<double>(in.R.data<float>()[(d * G * H + row) * H + k]); };
    auto Wb = [&](int64_t row) { return c.bias ? static_cast<double>(in.Bias.data<float>()[d * 2 * G * H + row]) : 0.0; };
    auto Rb = [&](int64_t row) { return c.bias ? static_cast<double>(in.Bias.data<float>()[d * 2 * G * H + G * H + row]) : 0.0; };
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = c.lens ? in.lens.data<int32_t>()[b] : T;
      std::vector<double> h(H), cc(H);
      for (int64_t j = 0; j < H; ++j) {
        h[j] = c.h0 ? in.h0.data<float>()[st_index(d, b, j)] : 0.0;
        cc[j] = c.c0 ? in.c0.data<float>()[st_index(d, b, j)] : 0.0;
      }
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = rev ? len - 1 - s : s;
        // xw[row] + Wb + Rb, and R.h per gate row.
        std::vector<double> xw(G * H), rh(G * H);
        for (int64_t row = 0; row < G * H; ++row) {
          double a = 0, r = 0;
          for (int64_t i = 0; i < I; ++i) a += x_at(t, b, i) * W(row, i);
          for (int64_t k = 0; k < H; ++k) r += h[k] * R(row, k);
          xw[row] = a;
          rh[row] = r;
        }
        std::vector<double> hn(H), cn(H);
        if (c.op == "LSTM") {
          for (int64_t j = 0; j < H; ++j) {
            auto pre = [&](int gate) { return xw[gate * H + j] + rh[gate * H + j] + Wb(gate * H + j) + Rb(gate * H + j); };
            const double pi = c.peep ? in.P.data<float>()[d * 3 * H + j] : 0;
            const double po = c.peep ? in.P.data<float>()[d * 3 * H + H + j] : 0;
            const double pf = c.peep ? in.P.data<float>()[d * 3 * H + 2 * H + j] : 0;
            const double it = f(clipf(pre(0) + pi * cc[j]));
            const double ft = c.input_forget ? 1 - it : f(clipf(pre(2) + pf * cc[j]));
            const double ct = g(clipf(pre(3)));
            cn[j] = ft * cc[j] + it * ct;
            const double ot = f(clipf(pre(1) + po * cn[j]));
            hn[j] = ot * hact(cn[j]);
          }
        } else if (c.op == "GRU") {
          std::vector<double> z(H), r(H);
          for (int64_t j = 0; j < H; ++j) {
            z[j] = f(clipf(xw[j] + rh[j] + Wb(j) + Rb(j)));
            r[j] = f(clipf(xw[H + j] + rh[H + j] + Wb(H + j) + Rb(H + j)));
          }
          for (int64_t j = 0; j < H; ++j) {
            double cand;
            if (c.lbr) {
              cand = g(clipf(xw[2 * H + j] + Wb(2 * H + j) + r[j] * (rh[2 * H + j] + Rb(2 * H + j))));
            } else {
              double acc = 0;
              for (int64_t k = 0; k < H; ++k) acc += r[k] * h[k] * R(2 * H + j, k);
              cand = g(clipf(xw[2 * H + j] + acc + Wb(2 * H + j) + Rb(2 * H + j)));
            }
            hn[j] = (1 - z[j]) * cand + z[j] * h[j];
          }
        } else {
          for (int64_t j = 0; j < H; ++j) hn[j] = f(clipf(xw[j] + rh[j] + Wb(j) + Rb(j)));
        }
        h = hn;
        if (c.op == "LSTM") cc = cn;
        for (int64_t j = 0; j < H; ++j) o.Y.data<float>()[y_index(t, d, b, j)] = static_cast<float>(h[j]);
      }
      for (int64_t j = 0; j < H; ++j) {
        o.Yh.data<float>()[st_index(d, b, j)] = static_cast<float>(h[j]);
        o.Yc.data<float>()[st_index(d, b, j)] = static_cast<float>(cc[j]);
      }
    }
  }
  return o;
}

void attr_strings(onnx::NodeProto& n, const std::string& name, const std::vector<std::string>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRINGS);
  for (auto& s : v) a->add_strings(s);
}

void attr_floats(onnx::NodeProto& n, const std::string& name, const std::vector<float>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}

// The model for `c`; `x_shape` lets a dim be symbolic (-1).
ModelBuilder build(const Config& c, const Inputs& in, const Shape& x_shape) {
  ModelBuilder m(c.opset);
  m.input("X", DType::Float32, x_shape);
  auto weight = [&](const std::string& name, const Tensor& t) {
    if (c.weights_as_inputs) m.input(name, DType::Float32, t.shape);
    else m.initializer(name, t);
  };
  weight("W", in.W);
  weight("R", in.R);
  std::vector<std::string> ins{"X", "W", "R", "", "", "", "", ""};
  if (c.bias) weight("B", in.Bias), ins[3] = "B";
  if (c.lens) m.input("lens", DType::Int32, {c.B}), ins[4] = "lens";
  if (c.h0) m.input("h0", DType::Float32, in.h0.shape), ins[5] = "h0";
  if (c.op == "LSTM") {
    if (c.c0) m.input("c0", DType::Float32, in.c0.shape), ins[6] = "c0";
    if (c.peep) weight("P", in.P), ins[7] = "P";
  } else {
    ins.resize(6);
  }
  while (!ins.empty() && ins.back().empty()) ins.pop_back();
  std::vector<std::string> outs{c.y ? "Y" : "", c.yh ? "Yh" : ""};
  if (c.op == "LSTM") outs.push_back(c.yc ? "Yc" : "");
  while (!outs.empty() && outs.back().empty()) outs.pop_back();
  for (auto& o : outs)
    if (!o.empty()) m.output(o);
  auto& n = m.node(c.op, ins, outs);
  attr_i(n, "hidden_size", c.H);
  attr_s(n, "direction", c.direction);
  if (c.opset >= 14) attr_i(n, "layout", c.layout);
  if (c.clip > 0) attr_f(n, "clip", c.clip);
  if (c.input_forget) attr_i(n, "input_forget", 1);
  if (c.op == "GRU") attr_i(n, "linear_before_reset", c.lbr);
  if (!c.acts.empty()) {
    std::vector<std::string> names;
    std::vector<float> alphas, betas;
    for (auto& a : c.acts) {
      names.push_back(a.name);
      if (a.name == "LeakyRelu" || a.name == "HardSigmoid" || a.name == "ScaledTanh" || a.name == "Affine" ||
          a.name == "Elu" || a.name == "ThresholdedRelu")
        alphas.push_back(static_cast<float>(a.alpha));
      if (a.name == "HardSigmoid" || a.name == "ScaledTanh" || a.name == "Affine") betas.push_back(static_cast<float>(a.beta));
    }
    attr_strings(n, "activations", names);
    if (!alphas.empty()) attr_floats(n, "activation_alpha", alphas);
    if (!betas.empty()) attr_floats(n, "activation_beta", betas);
  }
  return m;
}

std::map<std::string, Tensor> feeds(const Config& c, const Inputs& in) {
  std::map<std::string, Tensor> f{{"X", in.X}};
  if (c.weights_as_inputs) {
    f["W"] = in.W;
    f["R"] = in.R;
    if (c.bias) f["B"] = in.Bias;
    if (c.peep && c.op == "LSTM") f["P"] = in.P;
  }
  if (c.lens) f["lens"] = in.lens;
  if (c.h0) f["h0"] = in.h0;
  if (c.c0 && c.op == "LSTM") f["c0"] = in.c0;
  return f;
}

std::string describe(const Config& c) {
  std::string s = c.op + " " + c.direction + " T" + std::to_string(c.T) + " B" + std::to_string(c.B) + " I" +
                  std::to_string(c.I) + " H" + std::to_string(c.H) + " layout " + std::to_string(c.layout);
  if (c.lens) s += " ragged";
  if (c.h0) s += " h0";
  if (c.c0) s += " c0";
  if (c.peep) s += " peepholes";
  if (c.clip > 0) s += " clip";
  if (c.input_forget) s += " input_forget";
  if (c.lbr) s += " linear_before_reset";
  if (!c.acts.empty()) s += " activations";
  if (c.weights_as_inputs) s += " weights-as-inputs";
  if (!c.bias) s += " no-bias";
  return s;
}

constexpr double kTol = 3e-5;

// The step variant forced for a check ("" = the device-class choice).
std::string g_variant;

void check(const Config& c, uint32_t seed = 1) {
  SCOPED_TRACE(describe(c) + (g_variant.empty() ? "" : " " + g_variant));
  std::mt19937 rng(seed);
  const Inputs in = make_inputs(c, rng);
  const Outputs want = reference(c, in);
  ocl_infer::SessionOptions opt;
  opt.kernel_variants = g_variant;
  auto got = open_session(build(c, in, in.X.shape), opt).run(feeds(c, in));
  if (c.y) {
    EXPECT_LE(rel_error(got.at("Y"), want.Y), kTol) << "Y";
  }
  if (c.yh) {
    EXPECT_LE(rel_error(got.at("Yh"), want.Yh), kTol) << "Y_h";
  }
  if (c.yc && c.op == "LSTM") {
    EXPECT_LE(rel_error(got.at("Yc"), want.Yc), kTol) << "Y_c";
  }
}

// Every variant of the step kernels (fused: one launch; blocked: a launch per step, VW units per
// work-item; wide: a unit per work-item) over the same matrix.
class RecurrentVariant : public ::testing::TestWithParam<const char*> {};

const char* const kStepVariants[] = {"rnn=fused", "rnn=fused:vw=1", "rnn=fused:vw=3", "rnn=blocked",
                                     "rnn=blocked:vw=4", "rnn=wide", "rnn=wide:ls=16"};

TEST_P(RecurrentVariant, DirectionsLayoutsAndRaggedBatches) {
  g_variant = GetParam();
  // fp16 mode: a quarter of the configurations per variant, rotating with the variant, so that
  // the seven variants together still cover every configuration (its kernels' compiles made this
  // test 10x its fp32 time in CI).
  const int v = static_cast<int>(std::find_if(std::begin(kStepVariants), std::end(kStepVariants),
                                              [&](const char* s) { return g_variant == s; }) -
                                 std::begin(kStepVariants));
  int k = 0;
  for (const char* op : {"LSTM", "GRU", "RNN"})
    for (int lbr = 0; lbr < (std::string(op) == "GRU" ? 2 : 1); ++lbr)
      for (const char* dir : {"forward", "reverse", "bidirectional"})
        for (int layout : {0, 1})
          for (bool lens : {false, true}) {
            const int here = k++;
            if (fp16_mode() && (here + v) % 4 != 0) continue;
            Config c;
            c.op = op;
            c.lbr = lbr;
            c.direction = dir;
            c.layout = layout;
            c.lens = lens;
            c.h0 = c.c0 = lens;  // initial states with and without
            c.H = 48;            // vector widths up to 16 divide it
            check(c, static_cast<uint32_t>(k));
          }
  g_variant.clear();
}

INSTANTIATE_TEST_SUITE_P(Steps, RecurrentVariant,
                         ::testing::ValuesIn(kStepVariants));

TEST(Recurrent, LstmPeepholesClipInputForgetAndActivations) {
  Config c;
  c.direction = "bidirectional";
  c.peep = c.h0 = c.c0 = true;
  check(c);
  c.clip = 0.3f;
  check(c);
  c.input_forget = true;
  check(c);
  c.input_forget = false;
  c.clip = 0;
  c.acts = {{"HardSigmoid", 0.25, 0.4}, {"ScaledTanh", 0.9, 1.3}, {"Softsign"},
            {"Sigmoid"},               {"LeakyRelu", 0.2},       {"Affine", 0.7, 0.1}};
  check(c);
  Config g;
  g.op = "GRU";
  g.direction = "reverse";
  g.clip = 0.5f;
  g.h0 = true;
  g.acts = {{"HardSigmoid", 0.3, 0.45}, {"Elu", 0.8}};
  check(g);
  Config r;
  r.op = "RNN";
  r.direction = "bidirectional";
  r.acts = {{"Relu"}, {"Softplus"}};
  check(r);
  r.acts = {{"ThresholdedRelu", 0.1}, {"Tanh"}};
  check(r);
}

TEST(Recurrent, OptionalOutputsAndInputs) {
  for (const char* op : {"LSTM", "GRU"}) {
    Config c;
    c.op = op;
    c.direction = "bidirectional";
    c.bias = false;
    check(c);
    c.bias = true;
    c.y = false;
    check(c);
    c.y = true;
    c.yh = false;
    c.yc = false;
    check(c);
    c.yh = true;
    c.weights_as_inputs = true;  // R transposed by a kernel, W packed at run time
    c.peep = true;
    c.lens = true;
    check(c);
  }
}

TEST(Recurrent, Sizes) {
  struct S {
    const char* op;
    int64_t T, B, I, H;
    const char* dir;
  };
  int k = 0;
  for (const S& s : {S{"LSTM", 1, 1, 1, 1, "forward"}, S{"GRU", 1, 5, 4, 1, "bidirectional"},
                     S{"LSTM", 300, 5, 8, 33, "bidirectional"}, S{"GRU", 300, 1, 8, 33, "forward"},
                     S{"LSTM", 7, 1, 16, 512, "bidirectional"}, S{"GRU", 7, 5, 16, 512, "reverse"},
                     S{"RNN", 300, 5, 3, 33, "reverse"}}) {
    if (fp16_sampled_out(k++)) continue;
    Config c;
    c.op = s.op;
    c.T = s.T;
    c.B = s.B;
    c.I = s.I;
    c.H = s.H;
    c.direction = s.dir;
    c.lens = s.B > 1;
    c.h0 = true;
    check(c, static_cast<uint32_t>(k + 10));
  }
}

// One session, a symbolic sequence length: each length is planned once and computed right.
TEST(Recurrent, DynamicLengthInOneSession) {
  Config c;
  c.direction = "bidirectional";
  c.B = 2;
  std::mt19937 rng(3);
  Inputs in = make_inputs(c, rng);
  auto s = open_session(build(c, in, {-1, c.B, c.I}));
  for (int64_t T : {5, 1, 12, 5}) {
    Config ct = c;
    ct.T = T;
    std::mt19937 r2(static_cast<uint32_t>(T));
    Inputs it = make_inputs(ct, r2);
    it.W = in.W, it.R = in.R, it.Bias = in.Bias;
    const Outputs want = reference(ct, it);
    auto got = s.run(feeds(ct, it));
    EXPECT_LE(rel_error(got.at("Y"), want.Y), kTol) << "T " << T;
    EXPECT_LE(rel_error(got.at("Yc"), want.Yc), kTol) << "T " << T;
  }
}

// Every batch entry shorter than the sequence, one of length 0 (its outputs: zeros, its states:
// the initial ones), and an empty sequence.
TEST(Recurrent, ZeroLengths) {
  Config c;
  c.op = "GRU";
  c.direction = "bidirectional";
  c.T = 4;
  c.B = 3;
  c.lens = c.h0 = true;
  std::mt19937 rng(9);
  Inputs in = make_inputs(c, rng);
  in.lens.data<int32_t>()[0] = 0;
  in.lens.data<int32_t>()[1] = 2;
  in.lens.data<int32_t>()[2] = 3;
  const Outputs want = reference(c, in);
  auto got = open_session(build(c, in, in.X.shape)).run(feeds(c, in));
  EXPECT_LE(rel_error(got.at("Y"), want.Y), kTol);
  EXPECT_LE(rel_error(got.at("Yh"), want.Yh), kTol);
  for (int64_t j = 0; j < c.H; ++j) EXPECT_EQ(got.at("Yh").data<float>()[j], in.h0.data<float>()[j]);
}

// --profile: a recurrent layer's per-step launches are one row under its node.
TEST(Recurrent, ProfileSumsStepsUnderTheNode) {
  Config c;
  c.T = 6;
  c.direction = "bidirectional";
  std::mt19937 rng(8);
  Inputs in = make_inputs(c, rng);
  ocl_infer::SessionOptions opt;
  opt.profiling = true;
  opt.kernel_variants = "rnn=blocked";  // a launch per step
  auto s = open_session(build(c, in, in.X.shape), opt);
  for (int k = 0; k < 3; ++k) s.run(feeds(c, in));
  int launches = 0, steps = 0;
  for (auto& l : s.profile()) {
    launches += l.launches;
    if (l.kernel == "rnn:rnn_lstm_step") {
      steps = l.launches;
      EXPECT_EQ(l.op_types, std::vector<std::string>{"LSTM"});
      EXPECT_GT(l.avg_us, 0);
    }
  }
  EXPECT_EQ(steps, 6);
  EXPECT_EQ(launches, s.stats().kernel_launches);
}

// A quantized model (QDQ: int8 weights behind DequantizeLinear, as quantizers leave recurrent
// layers): the layer runs on the dequantized weights in float32, and the reference uses them too.
TEST(Recurrent, Int8WeightsBehindDequantizeLinear) {
  Config c;
  c.op = "LSTM";
  c.direction = "bidirectional";
  c.lens = c.h0 = c.c0 = true;
  std::mt19937 rng(12);
  Inputs in = make_inputs(c, rng);
  const float scale = 1.0f / 127;
  auto quantize = [&](Tensor& w, Tensor& q) {
    q = Tensor(DType::Int8, w.shape);
    for (int64_t i = 0; i < w.numel(); ++i) {
      const int v = static_cast<int>(std::lround(std::max(-1.0f, std::min(1.0f, w.data<float>()[i])) / scale));
      q.data<int8_t>()[i] = static_cast<int8_t>(v);
      w.data<float>()[i] = static_cast<float>(v) * scale;  // what the model computes with
    }
  };
  Tensor wq, rq;
  quantize(in.W, wq);
  quantize(in.R, rq);
  ModelBuilder m(14);
  m.input("X", DType::Float32, in.X.shape).input("lens", DType::Int32, {c.B});
  m.input("h0", DType::Float32, in.h0.shape).input("c0", DType::Float32, in.c0.shape);
  m.output("Y").output("Yh").output("Yc");
  Tensor sc(DType::Float32, {});
  sc.data<float>()[0] = scale;
  m.initializer("Wq", wq).initializer("Rq", rq).initializer("scale", sc).initializer("B", in.Bias);
  m.node("DequantizeLinear", {"Wq", "scale"}, {"W"});
  m.node("DequantizeLinear", {"Rq", "scale"}, {"R"});
  auto& n = m.node("LSTM", {"X", "W", "R", "B", "lens", "h0", "c0"}, {"Y", "Yh", "Yc"});
  attr_i(n, "hidden_size", c.H);
  attr_s(n, "direction", c.direction);
  const Outputs want = reference(c, in);
  auto got = open_session(m).run({{"X", in.X}, {"lens", in.lens}, {"h0", in.h0}, {"c0", in.c0}});
  // fp16 storage also rounds the dequantized weights (multiples of 1/127) to float16.
  const double tol = fp16_mode() ? 2e-3 : kTol;
  EXPECT_LE(rel_error(got.at("Y"), want.Y), tol);
  EXPECT_LE(rel_error(got.at("Yc"), want.Yc), tol);
}

TEST(Recurrent, Errors) {
  Config c;
  c.lens = true;
  std::mt19937 rng(4);
  Inputs in = make_inputs(c, rng);
  // sequence_lens longer than the sequence, given at run time: the run fails naming the node.
  in.lens.data<int32_t>()[2] = static_cast<int32_t>(c.T + 1);
  {
    auto s = open_session(build(c, in, in.X.shape));
    try {
      s.run(feeds(c, in));
      ADD_FAILURE() << "no error for sequence_lens beyond T";
    } catch (const ocl_infer::Error& e) {
      EXPECT_NE(std::string(e.what()).find("sequence_lens"), std::string::npos) << e.what();
    }
  }
  // ... and as a constant: refused when the plan is made.
  {
    ModelBuilder m = build(c, in, in.X.shape);
    auto* g = m.proto().mutable_graph();
    g->mutable_input()->RemoveLast();  // "lens" was the last input added
    m.initializer("lens", in.lens);
    try {
      open_session(m).run({{"X", in.X}});
      ADD_FAILURE() << "no error for constant sequence_lens beyond T";
    } catch (const ocl_infer::ModelError& e) {
      EXPECT_NE(std::string(e.what()).find("sequence_lens holds 8"), std::string::npos) << e.what();
    }
  }
  // hidden_size that R does not have.
  {
    Config h;
    std::mt19937 r2(5);
    Inputs hi = make_inputs(h, r2);
    ModelBuilder m = build(h, hi, hi.X.shape);
    auto* n = m.proto().mutable_graph()->mutable_node(0);
    for (auto& a : *n->mutable_attribute())
      if (a.name() == "hidden_size") a.set_i(h.H + 1);
    try {
      open_session(m).run(feeds(h, hi));
      ADD_FAILURE() << "no error for a hidden_size R does not have";
    } catch (const ocl_infer::ModelError& e) {
      EXPECT_NE(std::string(e.what()).find("hidden_size"), std::string::npos) << e.what();
    }
  }
  // W for another input size; an activation list of the wrong length; an unknown activation.
  {
    Config w;
    std::mt19937 r3(6);
    Inputs wi = make_inputs(w, r3);
    Config wide = w;
    wide.I = w.I + 2;
    std::mt19937 r4(6);
    Inputs other = make_inputs(wide, r4);
    wi.W = other.W;
    EXPECT_THROW(open_session(build(w, wi, wi.X.shape)).run(feeds(w, wi)), ocl_infer::ModelError);
    Config a = w;
    a.acts = {{"Sigmoid"}, {"Tanh"}};
    EXPECT_THROW(open_session(build(a, wi, wi.X.shape)).run(feeds(a, wi)), ocl_infer::ModelError);
    a.acts = {{"Sigmoid"}, {"Tanh"}, {"Gelu"}};
    std::mt19937 r5(6);
    Inputs ai = make_inputs(a, r5);
    EXPECT_THROW(open_session(build(a, ai, ai.X.shape)).run(feeds(a, ai)), ocl_infer::UnsupportedError);
  }
}

}  // namespace
