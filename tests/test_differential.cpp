// Whole-graph correctness of the optimizer and the buffer planner.
//
// 1. Regression graphs for wrong results found before: a value read by a fused kernel *and* by
//    another consumer (pre-activation residual blocks, one per fusion pass), Split into 80
//    outputs, Concat of 100 inputs, views of views (Slice -> Squeeze / Reshape -> Transpose).
// 2. A randomised differential test: small random graphs of fusable ops, views, Concat/Split with
//    many operands and values with several readers, each run optimized + planned, optimized with
//    every tensor in its own buffer, and -O0 without planning, all compared with a CPU reference
//    (tests/reference_ops.hpp). OCL_INFER_DIFF_SEED=S runs only graph S (prints its nodes);
//    OCL_INFER_DIFF_GRAPHS=N runs N graphs (default 40).
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <sstream>

#include "tests/model_builder.hpp"
#include "tests/reference_ops.hpp"

using namespace testing_util;
namespace ref = reference;

namespace {

constexpr double kTolerance = 1e-4;  // relative to max(1, max|reference|)
// fp16 storage rounds every stored value to 11 significant bits (2^-11 relative); through graphs of
// up to ~15 nodes with sums of several terms the error stays well below this.
constexpr double kFp16Tolerance = 3e-2;

struct Config {
  int level;
  bool plan_memory;
  const char* name;
  bool fp16 = false;
};
const Config kConfigs[] = {{1, true, "-O1 planned"},
                           {1, false, "-O1 --no-memory-plan"},
                           {0, false, "-O0 --no-memory-plan"},
                           {1, true, "-O1 planned --precision fp16", true}};

// A model under construction together with the reference value of every tensor in it.
class GraphGen {
 public:
  explicit GraphGen(uint32_t seed, int opset = 13) : m(opset), rng(seed) {}

  ModelBuilder m;
  std::mt19937 rng;
  std::map<std::string, Tensor> val;
  std::map<std::string, Tensor> feeds;
  std::vector<std::string> outputs;
  std::ostringstream log;  // the nodes, for a failure message

  std::string fresh(const std::string& prefix) { return prefix + std::to_string(counter_++); }

  std::string input(const ref::Shape& s) {
    std::string n = fresh("in");
    m.input(n, DType::Float32, s);
    feeds[n] = val[n] = random_tensor(s, rng);
    log << n << " = input" << ocl_infer::shape_to_string(s) << "\n";
    return n;
  }
  std::string constant(const Tensor& t) {
    std::string n = fresh("k");
    m.initializer(n, t);
    val[n] = t;
    return n;
  }
  std::string ints(const std::vector<int64_t>& v) {
    Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data<int64_t>());
    std::string n = fresh("k");
    m.initializer(n, t);
    return n;
  }
  std::string scalar(float v) {
    Tensor t(DType::Float32, {});
    t.data<float>()[0] = v;
    return constant(t);
  }
  // Adds a node with one output whose reference value is `y`.
  onnx::NodeProto& add(const std::string& op, const std::vector<std::string>& ins, const std::string& out, Tensor y) {
    val[out] = std::move(y);
    log << out << " = " << op << "(";
    for (size_t i = 0; i < ins.size(); ++i) log << (i ? ", " : "") << ins[i];
    log << ") " << ocl_infer::shape_to_string(val[out].shape) << "\n";
    return m.node(op, ins, {out});
  }
  void output(const std::string& n) {
    if (std::find(outputs.begin(), outputs.end(), n) != outputs.end() || feeds.count(n)) return;
    outputs.push_back(n);
    m.output(n);
    log << "output " << n << "\n";
  }

  // ---- ops with their reference -----------------------------------------------------------
  std::string conv(const std::string& x, int64_t cout, int64_t k, int64_t pad, int64_t group, bool bias) {
    const Tensor& xv = val[x];
    const int64_t cin = xv.shape[1];
    const float scale = 1.0f / std::sqrt(static_cast<float>(cin / group * k * k));
    std::string w = constant(random_tensor({cout, cin / group, k, k}, rng, -scale, scale));
    std::vector<std::string> ins{x, w};
    Tensor bv;
    if (bias) {
      bv = random_tensor({cout}, rng, -0.5f, 0.5f);
      ins.push_back(constant(bv));
    }
    std::string y = fresh("conv");
    auto& n = add("Conv", ins, y, ref::conv2d(xv, val[w], bias ? &bv : nullptr, pad, group));
    attr_ints(n, "pads", {pad, pad, pad, pad});
    if (group > 1) attr_i(n, "group", group);
    return y;
  }
  // x [1, C, H, W] read as a sequence of C steps of H*W features through a forward LSTM, GRU or
  // RNN with H*W hidden units, its Y viewed back as [1, C, H, W]. The reference runs the ONNX
  // equations (default activations, gate orders iofc / zrh).
  std::string recurrent(const std::string& x, int which) {
    const Tensor& xv = val[x];
    const int64_t T = xv.shape[1], F = xv.shape[2] * xv.shape[3];
    const char* op = which == 0 ? "LSTM" : which == 1 ? "GRU" : "RNN";
    const int64_t G = which == 0 ? 4 : which == 1 ? 3 : 1;
    const float s = 1.0f / std::sqrt(static_cast<float>(F));
    Tensor w = random_tensor({1, G * F, F}, rng, -s, s), r = random_tensor({1, G * F, F}, rng, -s, s);
    Tensor b = random_tensor({1, 2 * G * F}, rng, -0.3f, 0.3f);
    const std::string seq = reshape(x, {T, 1, F});
    std::vector<double> h(F, 0), c(F, 0);
    Tensor y(DType::Float32, {T, 1, 1, F});
    auto W = [&](int64_t row, int64_t i) { return static_cast<double>(w.data<float>()[row * F + i]); };
    auto R = [&](int64_t row, int64_t k) { return static_cast<double>(r.data<float>()[row * F + k]); };
    auto Bw = [&](int64_t row) { return static_cast<double>(b.data<float>()[row]); };
    auto Br = [&](int64_t row) { return static_cast<double>(b.data<float>()[G * F + row]); };
    for (int64_t t = 0; t < T; ++t) {
      std::vector<double> xw(G * F, 0), rh(G * F, 0);
      for (int64_t row = 0; row < G * F; ++row)
        for (int64_t i = 0; i < F; ++i) {
          xw[row] += xv.data<float>()[t * F + i] * W(row, i);
          rh[row] += h[i] * R(row, i);
        }
      std::vector<double> hn(F), cn(F);
      for (int64_t j = 0; j < F; ++j) {
        auto pre = [&](int64_t g) { return xw[g * F + j] + rh[g * F + j] + Bw(g * F + j) + Br(g * F + j); };
        if (which == 0) {
          const double i = ref::sigmoid(pre(0)), o = ref::sigmoid(pre(1)), f = ref::sigmoid(pre(2));
          cn[j] = f * c[j] + i * std::tanh(pre(3));
          hn[j] = o * std::tanh(cn[j]);
        } else if (which == 1) {
          const double z = ref::sigmoid(pre(0)), rr = ref::sigmoid(pre(1));
          double acc = 0;  // linear_before_reset = 0: (r (.) h) R_h
          for (int64_t k = 0; k < F; ++k) {
            const double rk = ref::sigmoid(xw[F + k] + rh[F + k] + Bw(F + k) + Br(F + k));
            acc += rk * h[k] * R(2 * F + j, k);
          }
          (void)rr;
          const double hh = std::tanh(xw[2 * F + j] + acc + Bw(2 * F + j) + Br(2 * F + j));
          hn[j] = (1 - z) * hh + z * h[j];
        } else {
          hn[j] = std::tanh(pre(0));
        }
      }
      h = hn;
      c = cn;
      for (int64_t j = 0; j < F; ++j) y.data<float>()[t * F + j] = static_cast<float>(h[j]);
    }
    const std::string out = fresh("rnn");
    auto& n = add(op, {seq, constant(w), constant(r), constant(b)}, out, std::move(y));
    attr_i(n, "hidden_size", F);
    return reshape(out, xv.shape);
  }

  // x's channels as a sequence (SplitToSequence), the first moved to the end (SequenceAt,
  // SequenceErase, SequenceInsert), concatenated again (ConcatFromSequence).
  std::string rotate_channels(const std::string& x) {
    const Tensor& xv = val[x];
    const int64_t C = xv.shape[1], plane = xv.shape[2] * xv.shape[3];
    const std::string sq = fresh("seq"), first = fresh("first"), rest = fresh("rest"), rot = fresh("rot"), y = fresh("rotated");
    attr_i(m.node("SplitToSequence", {x, scalar_i(1)}, {sq}), "axis", 1);
    m.node("SequenceAt", {sq, scalar_i(0)}, {first});
    m.node("SequenceErase", {sq, scalar_i(0)}, {rest});
    m.node("SequenceInsert", {rest, first}, {rot});
    Tensor yv(DType::Float32, xv.shape);
    for (int64_t ch = 0; ch < C; ++ch)
      std::copy(xv.data<float>() + ((ch + 1) % C) * plane, xv.data<float>() + ((ch + 1) % C + 1) * plane,
                yv.data<float>() + ch * plane);
    attr_i(add("ConcatFromSequence", {rot}, y, std::move(yv)), "axis", 1);
    return y;
  }
  std::string scalar_i(int64_t v) {
    Tensor t(DType::Int64, {});
    t.data<int64_t>()[0] = v;
    std::string n = fresh("k");
    m.initializer(n, t);
    return n;
  }

  // y = mean(x) > t ? relu(x) : sigmoid(x) as an If whose branches read x from the outer scope. The
  // condition is computed on the device (check_graph turns off plan-time inputs), so the plan is
  // cut into segments there. t sits 0.05 away from the mean, so float summation order cannot flip
  // the branch.
  std::string branch_on_mean(const std::string& x) {
    const Tensor& xv = val[x];
    double mean = 0;
    for (int64_t i = 0; i < xv.numel(); ++i) mean += xv.data<float>()[i];
    mean /= static_cast<double>(xv.numel());
    const bool take_then = rng() % 2 == 0;
    const float t = static_cast<float>(take_then ? mean - 0.05 : mean + 0.05);
    const std::string mname = fresh("mean"), c = fresh("cond"), y = fresh("if");
    attr_i(m.node("ReduceMean", {x}, {mname}), "keepdims", 0);
    m.node("Greater", {mname, scalar(t)}, {c});
    Tensor yv = take_then ? ref::unary(xv, ref::relu) : ref::unary(xv, ref::sigmoid);
    auto& n = add("If", {c}, y, std::move(yv));
    for (int b = 0; b < 2; ++b) {
      auto* a = n.add_attribute();
      a->set_name(b == 0 ? "then_branch" : "else_branch");
      a->set_type(onnx::AttributeProto::GRAPH);
      auto* g = a->mutable_g();
      g->set_name(y + (b == 0 ? "_then" : "_else"));
      auto* node = g->add_node();
      node->set_op_type(b == 0 ? "Relu" : "Sigmoid");
      node->add_input(x);
      node->add_output(y + (b == 0 ? "_t" : "_e"));
      g->add_output()->set_name(y + (b == 0 ? "_t" : "_e"));
    }
    log << "  (" << c << " = mean(" << x << ") > " << t << ": " << (take_then ? "then" : "else") << ")\n";
    return y;
  }
  std::string batchnorm(const std::string& x) {
    const int64_t c = val[x].shape[1];
    Tensor g = random_tensor({c}, rng, 0.5f, 1.5f), b = random_tensor({c}, rng), mu = random_tensor({c}, rng),
           var = random_tensor({c}, rng, 0.5f, 2.f);
    std::string y = fresh("bn");
    auto yv = ref::batchnorm(val[x], g, b, mu, var, 1e-5);
    add("BatchNormalization", {x, constant(g), constant(b), constant(mu), constant(var)}, y, std::move(yv));
    return y;
  }
  std::string activation(const std::string& x, int which) {
    const Tensor& xv = val[x];
    std::string y = fresh("act");
    switch (which % 7) {
      case 0: add("Relu", {x}, y, ref::unary(xv, ref::relu)); break;
      case 1: add("Sigmoid", {x}, y, ref::unary(xv, ref::sigmoid)); break;
      case 2: add("Tanh", {x}, y, ref::unary(xv, [](double v) { return std::tanh(v); })); break;
      case 3: attr_f(add("LeakyRelu", {x}, y, ref::unary(xv, [](double v) { return ref::leaky_relu(v, 0.1); })), "alpha", 0.1f); break;
      case 4: add("Clip", {x, scalar(-0.5f), scalar(1.5f)}, y, ref::unary(xv, [](double v) { return ref::clip(v, -0.5, 1.5); })); break;
      case 5: add("HardSigmoid", {x}, y, ref::unary(xv, [](double v) { return ref::hard_sigmoid(v); })); break;
      default: {
        // SiLU as exporters write it: x * Sigmoid(x).
        std::string s = fresh("sig");
        add("Sigmoid", {x}, s, ref::unary(xv, ref::sigmoid));
        add("Mul", {x, s}, y, ref::binary(xv, val[s], [](double a, double b) { return a * b; }));
      }
    }
    return y;
  }
  std::string add_values(const std::string& a, const std::string& b, bool mul = false) {
    std::string y = fresh(mul ? "mul" : "add");
    add(mul ? "Mul" : "Add", {a, b}, y, ref::binary(val[a], val[b], [mul](double p, double q) { return mul ? p * q : p + q; }));
    return y;
  }
  std::string per_channel(const std::string& x, bool mul) {
    const int64_t c = val[x].shape[1];
    std::string k = constant(random_tensor({c, 1, 1}, rng, mul ? 0.5f : -1.f, mul ? 1.5f : 1.f));
    return add_values(x, k, mul);
  }
  std::vector<std::string> split(const std::string& x, int64_t axis, const std::vector<int64_t>& sizes) {
    std::vector<std::string> outs;
    int64_t at = 0;
    log << "split " << x << " axis " << axis << " into " << sizes.size() << ":";
    for (int64_t s : sizes) {
      outs.push_back(fresh("sp"));
      val[outs.back()] = ref::slice(val[x], axis, at, at + s);
      log << " " << outs.back();
      at += s;
    }
    log << "\n";
    auto& n = m.node("Split", {x, ints(sizes)}, outs);
    attr_i(n, "axis", axis);
    return outs;
  }
  std::string concat(const std::vector<std::string>& xs, int64_t axis) {
    std::vector<const Tensor*> tv;
    for (auto& x : xs) tv.push_back(&val[x]);
    std::string y = fresh("cat");
    attr_i(add("Concat", xs, y, ref::concat(tv, axis)), "axis", axis);
    return y;
  }
  std::string slice(const std::string& x, int64_t axis, int64_t start, int64_t end) {
    std::string y = fresh("sl");
    add("Slice", {x, ints({start}), ints({end}), ints({axis})}, y, ref::slice(val[x], axis, start, end));
    return y;
  }
  std::string reshape(const std::string& x, const ref::Shape& s) {
    std::string y = fresh("rs");
    add("Reshape", {x, ints(s)}, y, ref::reshape(val[x], s));
    return y;
  }
  std::string squeeze(const std::string& x, int64_t axis) {
    ref::Shape s = val[x].shape;
    s.erase(s.begin() + axis);
    std::string y = fresh("sq");
    add("Squeeze", {x, ints({axis})}, y, ref::reshape(val[x], s));
    return y;
  }
  std::string unsqueeze(const std::string& x, int64_t axis) {
    ref::Shape s = val[x].shape;
    s.insert(s.begin() + axis, 1);
    std::string y = fresh("us");
    add("Unsqueeze", {x, ints({axis})}, y, ref::reshape(val[x], s));
    return y;
  }
  std::string transpose(const std::string& x, const std::vector<int64_t>& perm) {
    std::string y = fresh("tr");
    attr_ints(add("Transpose", {x}, y, ref::transpose(val[x], perm)), "perm", perm);
    return y;
  }
  std::string matmul(const std::string& a, const std::string& b) {
    std::string y = fresh("mm");
    add("MatMul", {a, b}, y, ref::matmul(val[a], val[b]));
    return y;
  }
  std::string pad_hw(const std::string& x, int64_t t, int64_t l, int64_t b, int64_t r) {
    std::string y = fresh("pad");
    add("Pad", {x, ints({0, 0, t, l, 0, 0, b, r})}, y, ref::pad_hw(val[x], t, l, b, r));
    return y;
  }

 private:
  int counter_ = 0;
};

// Runs `g` in every configuration and compares every output with its reference, and every
// intermediate value the executed nodes write (fetched while buffers are reused as planned) with
// its reference too. Returns the graph JSON of the optimized, planned run.
std::string check_graph(GraphGen& g, const std::string& what) {
  std::string bytes = g.m.bytes(), graph_json;
  for (const Config& c : kConfigs) {
    ocl_infer::SessionOptions opt;
    opt.plan_time_input_limit = 0;  // an If on the inputs' data runs in segments, not folded
    opt.optimization_level = c.level;
    opt.plan_memory = c.plan_memory;
    if (c.fp16) opt.precision = ocl_infer::Precision::Float16;
    const double tolerance = c.fp16 ? kFp16Tolerance : kTolerance;
    std::map<std::string, Tensor> out, all;
    try {
      auto s = ocl_infer::Session::from_memory(bytes.data(), bytes.size(), opt);
      out = s.run(g.feeds);
      all = s.run(g.feeds, ocl_infer::RunOptions{{"*"}});
      if (c.level == 1 && c.plan_memory) graph_json = s.dump("graph.json");
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << " (" << c.name << "): " << e.what() << "\n" << g.log.str();
      continue;
    }
    for (auto& name : g.outputs) {
      const double err = ref::rel_error(out.at(name), g.val.at(name));
      EXPECT_LE(err, tolerance) << what << " (" << c.name << "): output " << name << "\n" << g.log.str();
    }
    for (auto& [name, t] : all) {
      if (!g.val.count(name)) continue;  // values the optimizer made (folded weights, ...)
      const double err = ref::rel_error(t, g.val.at(name));
      EXPECT_LE(err, tolerance) << what << " (" << c.name << "): fetched value " << name << "\n" << g.log.str();
    }
  }
  return graph_json;
}

// The executed nodes' fused op lists, e.g. "Conv+Relu".
int count_fused(const std::string& graph_json, const std::string& ops) {
  int n = 0;
  for (size_t p = graph_json.find(ops); p != std::string::npos; p = graph_json.find(ops, p + 1)) ++n;
  return n;
}

// ---- 1. regressions ------------------------------------------------------------------------

// a = Conv1(x); r = Relu(a); b = Conv2(r); y = Add(b, a): the Add fuses into Conv2 as a residual
// read of `a`, so the Relu must not fuse into Conv1 (nothing would write `a` then).
TEST(FusionRegression, PreActivationBlock) {
  for (bool bn : {false, true}) {
    GraphGen g(1);
    std::string x = g.input({1, 4, 8, 8});
    std::string a = g.conv(x, 4, 3, 1, 1, true);
    if (bn) a = g.batchnorm(a);
    std::string r = g.activation(a, 0);
    std::string b = g.conv(r, 4, 3, 1, 1, true);
    g.output(g.add_values(b, a));
    std::string json = check_graph(g, bn ? "pre-activation block with BatchNormalization" : "pre-activation block");
    // The residual Add still fuses; the Relu stays a kernel of its own.
    EXPECT_EQ(count_fused(json, "\"Conv\", \"Add\""), 1) << json;
    EXPECT_EQ(count_fused(json, "\"Relu\""), 1) << json;
  }
}

// The same with the decomposed SiLU (Sigmoid + Mul) whose input is also a fused residual.
TEST(FusionRegression, GatedActivationWithResidualReader) {
  GraphGen g(2);
  std::string x = g.input({1, 4, 7, 7});
  std::string a = g.conv(x, 4, 1, 0, 1, false);
  std::string s = g.activation(a, 6);
  std::string b = g.conv(s, 4, 3, 1, 1, true);
  g.output(g.add_values(b, a));
  check_graph(g, "SiLU with a residual reader");
}

// GELU (Div, Erf, Add, Mul, Mul) after a MatMul whose output is also added by a later MatMul.
TEST(FusionRegression, GeluWithResidualReader) {
  GraphGen g(3);
  std::string x = g.input({5, 8});
  std::string h = g.matmul(x, g.constant(random_tensor({8, 8}, g.rng)));
  std::string d = g.fresh("d"), e = g.fresh("e"), p = g.fresh("p"), q = g.fresh("q"), r = g.fresh("r");
  auto& hv = g.val[h];
  g.add("Div", {h, g.scalar(1.4142135f)}, d, ref::unary(hv, [](double v) { return v / 1.4142135f; }));
  g.add("Erf", {d}, e, ref::unary(g.val[d], [](double v) { return std::erf(v); }));
  g.add("Add", {e, g.scalar(1.f)}, p, ref::unary(g.val[e], [](double v) { return v + 1; }));
  g.add("Mul", {h, p}, q, ref::binary(hv, g.val[p], [](double a, double b) { return a * b; }));
  g.add("Mul", {q, g.scalar(0.5f)}, r, ref::unary(g.val[q], [](double v) { return v * 0.5; }));
  std::string z = g.matmul(r, g.constant(random_tensor({8, 8}, g.rng)));
  g.output(g.add_values(z, h));
  check_graph(g, "GELU with a residual reader");
}

// One residual read by two fused Adds (two convs each add `a`), and `a` also feeds a Relu.
TEST(FusionRegression, ResidualReadByTwoFusedAdds) {
  GraphGen g(4);
  std::string x = g.input({1, 3, 6, 6});
  std::string a = g.conv(x, 4, 3, 1, 1, true);
  std::string b = g.add_values(g.conv(a, 4, 3, 1, 1, false), a);
  std::string c = g.add_values(g.conv(a, 4, 1, 0, 1, true), a);
  g.output(g.activation(g.add_values(b, c), 0));
  g.output(g.activation(a, 0));
  check_graph(g, "residual read by two fused Adds");
}

// BatchNormalization whose input is also a residual: folding it would leave no pre-BN value.
TEST(FusionRegression, BatchNormInputWithResidualReader) {
  GraphGen g(5);
  std::string x = g.input({1, 4, 6, 6});
  std::string a = g.conv(x, 4, 3, 1, 1, true);
  std::string n = g.activation(g.batchnorm(a), 0);
  g.output(g.add_values(g.conv(n, 4, 3, 1, 1, true), a));
  check_graph(g, "BatchNormalization input with a residual reader");
}

// MatMul + bias whose MatMul output is also a residual of a later MatMul.
TEST(FusionRegression, MatMulBiasWithResidualReader) {
  GraphGen g(6);
  std::string x = g.input({4, 6});
  std::string h = g.matmul(x, g.constant(random_tensor({6, 6}, g.rng)));
  std::string z = g.add_values(h, g.constant(random_tensor({6}, g.rng)));
  std::string w = g.matmul(g.activation(z, 0), g.constant(random_tensor({6, 6}, g.rng)));
  g.output(g.add_values(w, h));
  check_graph(g, "MatMul + bias with a residual reader");
}

// A zero Pad before a Conv whose output is also a residual; Transposes that cancel around a
// value that is also a residual.
TEST(FusionRegression, PadAndTransposeWithResidualReader) {
  GraphGen g(7);
  std::string x = g.input({1, 3, 5, 5});
  std::string p = g.pad_hw(x, 1, 1, 1, 1);
  std::string c = g.conv(p, 3, 3, 1, 1, true);
  g.output(g.add_values(c, p));
  std::string t1 = g.transpose(x, {0, 1, 3, 2});
  std::string t2 = g.transpose(t1, {0, 1, 3, 2});
  std::string d = g.conv(g.activation(t2, 1), 3, 3, 1, 1, false);
  g.output(g.add_values(d, t1));
  check_graph(g, "Pad and Transpose with residual readers");
}

// Split into many outputs (flags per output slot used to live in a 64-bit mask), some of them
// views, some copies, then a Concat of all of them in another order.
TEST(ManyOperands, SplitInto80AndConcatOf100) {
  for (int64_t inner : {1, 2, 3, 5}) {
    for (int64_t n : {60, 64, 65, 80}) {
      GraphGen g(10 + static_cast<uint32_t>(n));
      std::string x = g.input({1, n, inner});
      auto parts = g.split(g.activation(x, 1), 1, std::vector<int64_t>(n, 1));
      std::vector<std::string> acts;
      for (size_t k = 0; k < parts.size(); ++k) acts.push_back(k % 3 ? g.activation(parts[k], static_cast<int>(k)) : parts[k]);
      std::reverse(acts.begin(), acts.end());
      g.output(g.concat(acts, 1));
      g.output(parts[n - 1]);
      check_graph(g, "Split into " + std::to_string(n) + " x [1,1," + std::to_string(inner) + "]");
    }
  }
  GraphGen g(11);
  std::string x = g.input({1, 3, 5});
  std::vector<std::string> parts;
  for (int k = 0; k < 100; ++k) parts.push_back(g.add_values(x, g.scalar(static_cast<float>(k + 1)), true));
  g.output(g.concat(parts, 1));
  check_graph(g, "Concat of 100");
}

// The number after "key": in a plan.json (-1 when absent).
int plan_count(const std::string& plan, const std::string& key) {
  const size_t at = plan.find("\"" + key + "\": ");
  return at == std::string::npos ? -1 : std::atoi(plan.c_str() + at + key.size() + 4);
}

// Concat inputs whose storage groups hold several values (a tensor and its Split views; a conv
// with an Add written over it) move into the Concat's output when every one of them sits at its
// slice and the group dies there (YOLOv8's C2f blocks: Split halves + bottleneck outputs).
// Planes of 16x16 floats (1 KiB) keep the channel offsets aligned, so the planner may do it; the
// variants around it must keep their copies. Every configuration against the reference.
TEST(ConcatInPlace, SplitHalvesAndInPlaceChains) {
  // `order` of the Concat's inputs; `late_read`: a split half is read again after the Concat;
  // `nested`: the Concat is itself an input of a second Concat.
  struct Case {
    const char* what;
    std::vector<int> order;  // 0, 1: the split halves; 2: the bottleneck's Add; 3: a half again
    bool late_read, nested;
    int in_place;  // expected concat inputs written in place (-1: not checked)
  };
  const Case cases[] = {
      {"C2f: halves in order, then the residual Add", {0, 1, 2}, false, false, 3},
      {"halves swapped", {1, 0, 2}, false, false, 1},
      {"a half read after the Concat", {0, 1, 2}, true, false, 1},
      {"a half twice", {0, 1, 3, 2}, false, false, 1},
      {"the Add first, then the halves", {2, 0, 1}, false, false, 3},
      {"nested Concats", {0, 1, 2}, false, true, 5},
  };
  for (const Case& c : cases) {
    GraphGen g(40);
    std::string x = g.input({1, 4, 16, 16});
    std::string cv1 = g.activation(g.conv(x, 4, 1, 0, 1, true), 6);  // conv + SiLU
    auto halves = g.split(cv1, 1, {2, 2});
    std::string m = g.activation(g.conv(halves[1], 2, 3, 1, 1, true), 6);
    std::string sum = g.add_values(halves[1], m, false);
    std::vector<std::string> ins;
    for (int k : c.order) ins.push_back(k == 0 ? halves[0] : k == 1 ? halves[1] : k == 2 ? sum : halves[0]);
    std::string cat = g.concat(ins, 1);
    if (c.nested) {
      std::string z = g.activation(g.conv(x, 2, 1, 0, 1, false), 0);
      cat = g.concat({cat, z}, 1);
    }
    g.output(g.conv(cat, 3, 1, 0, 1, true));
    if (c.late_read) g.output(g.activation(halves[0], 2));
    check_graph(g, c.what);
    std::string bytes = g.m.bytes();
    auto session = ocl_infer::Session::from_memory(bytes.data(), bytes.size());
    session.run(g.feeds);
    const std::string plan = session.dump("plan.json");
    if (c.in_place >= 0) {
      EXPECT_EQ(plan_count(plan, "concat_inputs_in_place"), c.in_place) << c.what << "\n" << plan;
    }
  }
}

// DenseNet's blocks: layer k concatenates every feature map so far, [x0, f1, ..., f(k-1)], so each
// Concat is a prefix of the block's last one. Once the last takes its inputs in place, each earlier
// Concat's output is a view of that prefix and copies nothing, while the BN + ReLU over it (in
// place before) gets storage of its own. Not where the shared bytes would change while the prefix
// is live (a prefix read after the in-place ReLU over the last Concat), nor for a Concat whose
// inputs are in another order, or for a batch of two (the channels of one image are then not one
// run).
TEST(ConcatInPlace, DenseBlockPrefixesAreViews) {
  struct Case {
    const char* what;
    int64_t batch;
    bool late_read, swapped;
    int in_place;  // expected concat inputs written in place
  };
  const Case cases[] = {
      {"dense block", 1, false, false, 1 + 2 + 3 + 4},
      {"a prefix read after the ReLU over the last Concat", 1, true, false, 1 + 3 + 4},
      {"a Concat in another order", 1, false, true, 1 + 2 + 4},
      {"batch of two", 2, false, false, 0},
  };
  for (const Case& c : cases) {
    GraphGen g(41);
    std::string x = g.input({c.batch, 3, 16, 16});
    std::vector<std::string> features{g.activation(g.conv(x, 4, 3, 1, 1, true), 0)};
    std::string late;
    for (int k = 1; k <= 3; ++k) {
      std::vector<std::string> ins = features;
      if (c.swapped && k == 3) std::swap(ins[0], ins[1]);
      const std::string cat = g.concat(ins, 1);
      if (k == 2) late = cat;
      features.push_back(g.conv(g.activation(g.batchnorm(cat), 0), 2, 3, 1, 1, false));
    }
    const std::string last = g.concat(features, 1);
    g.output(g.conv(g.activation(g.batchnorm(last), 0), 3, 1, 0, 1, true));
    if (c.late_read) g.output(g.activation(late, 2));
    check_graph(g, c.what);
    std::string bytes = g.m.bytes();
    auto session = ocl_infer::Session::from_memory(bytes.data(), bytes.size());
    const auto got = session.run(g.feeds);
    for (auto& [name, t] : got) EXPECT_LE(ref::rel_error(t, g.val.at(name)), kTolerance) << c.what << " " << name;
    const std::string plan = session.dump("plan.json");
    EXPECT_EQ(plan_count(plan, "concat_inputs_in_place"), c.in_place) << c.what << "\n" << plan;
  }
}

// Shapes around DenseNet's prefix views that the block above does not make: a prefix read by two
// fused consumers (one of them as a residual), views of a prefix (Slice, Split, Reshape), a prefix
// that is a graph output or a nested Concat's input, activations straight over a prefix (with no
// BatchNormalization between: an in-place Relu there would overwrite the features later layers
// still concatenate), and the same growth along the rows (axis 2) and columns (axis 3) of
// one-channel and one-row planes, where the parts are contiguous too. Every configuration against
// the reference, every fetched intermediate value included.
TEST(ConcatInPlace, PrefixViewsWithSeveralReadersAndViewsOfThem) {
  enum Extra { kTwoReaders, kSliceOfPrefix, kSplitOfPrefix, kReshapeOfPrefix, kPrefixIsOutput, kReluOnPrefix,
               kNestedLast, kRows, kColumns };
  const std::pair<Extra, const char*> cases[] = {
      {kTwoReaders, "a prefix read by two fused convs, one as its residual"},
      {kSliceOfPrefix, "a channel Slice of a prefix"},
      {kSplitOfPrefix, "a Split of a prefix"},
      {kReshapeOfPrefix, "a Reshape of a prefix, then a Transpose"},
      {kPrefixIsOutput, "a prefix that is a graph output"},
      {kReluOnPrefix, "Relu and Sigmoid straight over prefixes"},
      {kNestedLast, "the block's last Concat inside another Concat"},
      {kRows, "growth along the rows of one-channel planes"},
      {kColumns, "growth along the columns of one-row planes"},
  };
  for (const auto& [extra, what] : cases) {
    GraphGen g(43 + static_cast<int>(extra));
    const bool rows = extra == kRows, columns = extra == kColumns;
    const int64_t axis = rows ? 2 : columns ? 3 : 1;
    const std::string x = g.input(rows ? ref::Shape{1, 1, 4, 32} : columns ? ref::Shape{1, 1, 1, 64} : ref::Shape{1, 3, 16, 16});
    // Each feature: one channel (rows, columns) or two, through a conv (3x3 on 2-D planes).
    auto feature = [&](const std::string& in) {
      if (rows || columns) return g.activation(g.conv(in, 1, 1, 0, 1, true), 0);
      return g.conv(g.activation(g.batchnorm(in), 0), 2, 3, 1, 1, false);
    };
    std::vector<std::string> features{rows || columns ? g.activation(x, 2) : g.activation(g.conv(x, 4, 3, 1, 1, true), 0)};
    std::vector<std::string> prefixes;
    for (int k = 1; k <= 3; ++k) {
      const std::string cat = g.concat(features, axis);
      prefixes.push_back(cat);
      features.push_back(feature(cat));
    }
    const std::string last = g.concat(features, axis);
    const std::string& p = prefixes[2];  // [f0, f1, f2] (prefixes[0] is a Concat of f0 alone)
    switch (extra) {
      case kTwoReaders: {
        // A second conv over the prefix, its output + a conv of the prefix as the residual.
        const std::string a = g.conv(p, 2, 1, 0, 1, true);
        g.output(g.activation(g.add_values(g.conv(p, 2, 3, 1, 1, true), a), 0));
        break;
      }
      case kSliceOfPrefix: g.output(g.conv(g.activation(g.slice(p, 1, 2, 6), 0), 3, 1, 0, 1, true)); break;
      case kSplitOfPrefix: {
        auto parts = g.split(p, 1, {4, 2, 2});
        g.output(g.add_values(g.conv(parts[2], 2, 1, 0, 1, true), parts[1]));
        g.output(g.activation(parts[0], 1));
        break;
      }
      case kReshapeOfPrefix: g.output(g.transpose(g.reshape(p, {1, 8, 256}), {0, 2, 1})); break;
      case kPrefixIsOutput: g.output(p); g.output(prefixes[0]); g.output(prefixes[1]); break;
      case kReluOnPrefix: g.output(g.activation(p, 0)); g.output(g.activation(prefixes[1], 1)); break;
      case kNestedLast: {
        const std::string z = g.activation(g.conv(x, 3, 1, 0, 1, false), 0);
        g.output(g.conv(g.concat({last, z}, 1), 2, 1, 0, 1, true));
        break;
      }
      default: break;
    }
    g.output(rows || columns ? g.activation(last, 1) : g.conv(g.activation(g.batchnorm(last), 0), 3, 1, 0, 1, true));
    check_graph(g, what);
    // The shapes are the in-place ones: some Concat inputs are written in place.
    std::string bytes = g.m.bytes();
    auto session = ocl_infer::Session::from_memory(bytes.data(), bytes.size());
    session.run(g.feeds);
    const int in_place = plan_count(session.dump("plan.json"), "concat_inputs_in_place");
    EXPECT_GT(in_place, 0) << what << "\n" << session.dump("plan.json");
  }
}

// A contiguous Slice becomes a view at an offset; a Squeeze or Reshape of it is a view of a view
// (the Q/K/V split of an attention block: Slice -> Squeeze -> Transpose).
TEST(Views, SliceViewThenSqueezeReshapeTranspose) {
  // Slices of 16x16 floats (1 KiB) start at offsets every device aligns sub-buffers to, so the
  // planner makes them views.
  GraphGen g(20);
  std::string x = g.input({3, 1, 16, 16});
  std::string r = g.activation(x, 0);
  for (int64_t k = 0; k < 3; ++k) {
    std::string s = g.slice(r, 0, k, k + 1);
    std::string sq = g.squeeze(s, 0);
    std::string v = k == 2 ? g.reshape(sq, {16, 16}) : g.squeeze(sq, 0);
    g.output(g.transpose(v, {1, 0}));
  }
  // A view of a view of a view feeding a conv.
  std::string y = g.input({1, 8, 16, 16});
  std::string s = g.slice(g.activation(y, 1), 1, 2, 6);
  std::string c = g.conv(g.unsqueeze(g.squeeze(g.reshape(s, {1, 4, 256, 1}), 3), 0), 4, 1, 0, 1, true);
  g.output(c);
  std::string bytes = g.m.bytes();
  auto session = ocl_infer::Session::from_memory(bytes.data(), bytes.size());
  session.run(g.feeds);
  const std::string plan = session.dump("plan.json");
  const size_t at = plan.find("\"slice_views\": ");
  ASSERT_NE(at, std::string::npos);
  EXPECT_GE(std::atoi(plan.c_str() + at + 15), 4) << session.dump("plan");
  check_graph(g, "views of views");
}

// Fetching intermediate values: what an executed node writes comes back (also while buffers are
// reused); a value fused away is an error naming the fused node.
TEST(Fetch, IntermediateValuesAndFusedAwayValues) {
  GraphGen g(30);
  std::string x = g.input({1, 4, 8, 8});
  std::string a = g.conv(x, 6, 3, 1, 1, true);
  std::string r = g.activation(a, 0);
  std::string b = g.conv(r, 6, 1, 0, 1, false);
  std::string c = g.activation(b, 1);
  g.output(g.add_values(c, r));
  std::string bytes = g.m.bytes();
  auto s = ocl_infer::Session::from_memory(bytes.data(), bytes.size());
  auto out = s.run(g.feeds, ocl_infer::RunOptions{{r, c}});
  EXPECT_LE(ref::rel_error(out.at(r), g.val.at(r)), kTolerance);
  EXPECT_LE(ref::rel_error(out.at(c), g.val.at(c)), kTolerance);
  bool listed = false;
  for (auto& n : s.executed_nodes())
    for (auto& o : n.outputs) listed |= o == r;
  EXPECT_TRUE(listed);
  try {
    s.run(g.feeds, ocl_infer::RunOptions{{a}});  // the conv output inside Conv+Relu
    ADD_FAILURE() << "fetched a value fusion removed";
  } catch (const ocl_infer::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("fused into"), std::string::npos) << e.what();
  }
  try {
    s.run(g.feeds, ocl_infer::RunOptions{{"no_such_value"}});
    ADD_FAILURE() << "fetched a value that does not exist";
  } catch (const ocl_infer::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no value named"), std::string::npos) << e.what();
  }
}

// ---- 2. random graphs ----------------------------------------------------------------------

bool is4(const Tensor& t) { return t.shape.size() == 4; }

// Builds one random graph of about `steps` nodes.
void random_graph(GraphGen& g, int steps) {
  auto& rng = g.rng;
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  std::vector<std::string> pool;
  const int64_t H = 4 + pick(3), W = 4 + pick(3);
  pool.push_back(g.input({1, 2 + pick(5), H, W}));
  if (pick(2)) pool.push_back(g.input({1, 2 + pick(5), H, W}));
  // Prefer recent values, but reach back so that values get several readers.
  auto any = [&]() -> std::string { return pick(3) ? pool[pool.size() - 1 - pick(std::min<int>(3, pool.size()))] : pool[pick(pool.size())]; };
  auto any4 = [&]() -> std::string {
    for (int t = 0; t < 20; ++t) {
      std::string v = any();
      if (is4(g.val[v])) return v;
    }
    return pool[0];
  };
  for (int step = 0; step < steps; ++step) {
    const int kind = pick(17);
    std::string x = any4();
    const Tensor& xv = g.val[x];
    const int64_t C = xv.shape[1];
    switch (kind) {
      case 0: case 1: {  // conv, sometimes depthwise or grouped, sometimes 1x1
        const int64_t k = pick(2) ? 3 : 1;
        const bool dw = pick(4) == 0;
        const int64_t cout = dw ? C : 1 + pick(8);
        pool.push_back(g.conv(x, cout, k, k / 2, dw ? C : 1, pick(2)));
        break;
      }
      case 2: pool.push_back(g.batchnorm(x)); break;
      case 3: case 4: pool.push_back(g.activation(any(), pick(7))); break;
      case 5: {  // Add or Mul of two values of the same shape, else a per-channel constant
        std::vector<std::string> same;
        for (auto& v : pool)
          if (v != x && g.val[v].shape == xv.shape) same.push_back(v);
        if (!same.empty()) pool.push_back(g.add_values(x, same[pick(same.size())], pick(3) == 0));
        else pool.push_back(g.per_channel(x, pick(2)));
        break;
      }
      case 6: {  // Concat along channels of values with the same H, W (repeats allowed)
        std::vector<std::string> parts{x};
        for (auto& v : pool)
          if (is4(g.val[v]) && g.val[v].shape[2] == xv.shape[2] && g.val[v].shape[3] == xv.shape[3] && pick(2))
            parts.push_back(v);
        if (pick(4) == 0) parts.push_back(x);
        std::shuffle(parts.begin(), parts.end(), rng);
        pool.push_back(g.concat(parts, 1));
        break;
      }
      case 7: {  // Split along channels or rows
        const int64_t axis = pick(3) ? 1 : 2, dim = xv.shape[axis];
        if (dim < 2) break;
        std::vector<int64_t> sizes;
        for (int64_t left = dim; left > 0;) {
          int64_t s = 1 + pick(static_cast<int>(std::min<int64_t>(left, 3)));
          sizes.push_back(s);
          left -= s;
        }
        for (auto& o : g.split(x, axis, sizes)) pool.push_back(o);
        break;
      }
      case 8: {  // Slice, then maybe views of it
        const int64_t axis = pick(3) ? 1 : 3, dim = xv.shape[axis];
        if (dim < 2) break;
        const int64_t b = pick(static_cast<int>(dim - 1)), e = b + 1 + pick(static_cast<int>(dim - b - 1) + 1);
        std::string s = g.slice(x, axis, b, std::min(e, dim));
        if (pick(2)) s = g.unsqueeze(g.squeeze(s, 0), 0);
        if (pick(2)) {
          const Tensor& sv = g.val[s];
          s = g.reshape(g.reshape(s, {sv.shape[1], sv.shape[2] * sv.shape[3]}), sv.shape);
        }
        pool.push_back(s);
        break;
      }
      case 9: {  // Transpose of H and W (or channels last and back)
        std::string t = g.transpose(x, {0, 1, 3, 2});
        if (pick(2)) t = g.transpose(g.transpose(t, {0, 2, 3, 1}), {0, 3, 1, 2});
        pool.push_back(t);
        break;
      }
      case 10: {  // MatMul + bias on the [C, H*W] view, back to 4-D
        const int64_t hw = xv.shape[2] * xv.shape[3];
        std::string a = g.reshape(x, {C, hw});
        const float s = 1.0f / std::sqrt(static_cast<float>(hw));
        std::string mm = g.matmul(a, g.constant(random_tensor({hw, hw}, rng, -s, s)));
        if (pick(2)) mm = g.add_values(mm, g.constant(random_tensor({hw}, rng)));
        if (pick(2)) mm = g.activation(mm, pick(6));
        pool.push_back(g.reshape(mm, xv.shape));
        break;
      }
      case 11: {  // zero Pad in front of an unpadded 3x3 conv
        if (xv.shape[2] < 3 || xv.shape[3] < 3) break;
        std::string p = g.pad_hw(x, 1, pick(2), 1, pick(2));
        pool.push_back(g.conv(p, 1 + pick(6), 3, 0, 1, pick(2)));
        if (pick(2)) pool.push_back(p);
        break;
      }
      case 12: {  // a wide Split (up to 80 outputs) of a conv's channels, partly concatenated again
        const int64_t n = 20 + pick(61);
        std::vector<std::string> parts = g.split(g.conv(x, n, 1, 0, 1, false), 1, std::vector<int64_t>(n, 1));
        std::vector<std::string> keep;
        for (auto& p : parts)
          if (pick(2)) keep.push_back(pick(2) ? g.activation(p, pick(6)) : p);
        if (keep.empty()) keep.push_back(parts[0]);
        pool.push_back(g.concat(keep, 1));
        pool.push_back(parts[pick(parts.size())]);
        break;
      }
      case 13: pool.push_back(g.branch_on_mean(x)); break;
      case 15: pool.push_back(g.recurrent(x, pick(3))); break;
      case 16: pool.push_back(g.rotate_channels(x)); break;
      default: {  // a wide Concat (up to 100 inputs) of scaled copies
        const int n = 20 + pick(81);
        std::vector<std::string> parts;
        for (int k = 0; k < n; ++k) parts.push_back(g.add_values(x, g.scalar(0.5f + 0.01f * static_cast<float>(k)), true));
        pool.push_back(g.concat(parts, pick(2) ? 1 : 2));
        break;
      }
    }
  }
  g.output(pool.back());
  for (int k = pick(3); k > 0; --k) g.output(pool[pick(pool.size())]);
}

TEST(Differential, RandomGraphsMatchReference) {
  int graphs = 40;
  int first = 0;
  if (const char* s = std::getenv("OCL_INFER_DIFF_GRAPHS")) graphs = std::atoi(s);
  if (const char* s = std::getenv("OCL_INFER_DIFF_SEED")) {
    first = std::atoi(s);
    graphs = 1;
  }
  for (int seed = first; seed < first + graphs; ++seed) {
    GraphGen g(1000 + static_cast<uint32_t>(seed));
    random_graph(g, 6 + seed % 7);
    check_graph(g, "random graph " + std::to_string(seed) + " (OCL_INFER_DIFF_SEED=" + std::to_string(seed) + ")");
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
