// Every kernel variant of every family (conv, gemm, pool, norm), forced in turn with each candidate value
// of each of its parameters, on small problems with odd and prime sizes, against direct CPU loops.
// The plan dump must show that the forced variant ran wherever it applies.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <regex>

#include "tests/model_builder.hpp"
#include "tests/reference_ops.hpp"

using namespace testing_util;

namespace {

constexpr double kTolerance = 1e-4;  // relative to max(1, max|reference|)

// ---- references -----------------------------------------------------------------------------

struct ConvCase {
  std::string name;
  int64_t N, C, M, G;
  std::vector<int64_t> in, k, s, d, pads;  // 1 or 2 spatial dims; pads: begins then ends
  bool bias, relu;
};

Tensor conv_reference(const ConvCase& c, const Tensor& x, const Tensor& w, const Tensor* b) {
  const bool one_d = c.in.size() == 1;
  auto dim = [&](const std::vector<int64_t>& v, int i, int64_t fill) { return one_d ? (i == 0 ? fill : v[0]) : v[i]; };
  const int64_t H = dim(c.in, 0, 1), W = dim(c.in, 1, 1), KH = dim(c.k, 0, 1), KW = dim(c.k, 1, 1);
  const int64_t SH = dim(c.s, 0, 1), SW = dim(c.s, 1, 1), DH = dim(c.d, 0, 1), DW = dim(c.d, 1, 1);
  const size_t r = c.in.size();
  const int64_t PT = one_d ? 0 : c.pads[0], PL = one_d ? c.pads[0] : c.pads[1];
  const int64_t PB = one_d ? 0 : c.pads[r], PR = one_d ? c.pads[r] : c.pads[r + 1];
  const int64_t OH = (H + PT + PB - (KH - 1) * DH - 1) / SH + 1, OW = (W + PL + PR - (KW - 1) * DW - 1) / SW + 1;
  std::vector<int64_t> shape{c.N, c.M};
  if (!one_d) shape.push_back(OH);
  shape.push_back(OW);
  Tensor y(DType::Float32, shape);
  const int64_t Cg = c.C / c.G, Mg = c.M / c.G;
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = b ? b->data<float>()[m] : 0.0;
          const int64_t g = m / Mg;
          for (int64_t ci = 0; ci < Cg; ++ci)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * SH - PT + kh * DH, iw = ow * SW - PL + kw * DW;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += static_cast<double>(x.data<float>()[((n * c.C + g * Cg + ci) * H + ih) * W + iw]) *
                       w.data<float>()[((m * Cg + ci) * KH + kh) * KW + kw];
              }
          if (c.relu) acc = std::max(acc, 0.0);
          y.data<float>()[((n * c.M + m) * OH + oh) * OW + ow] = static_cast<float>(acc);
        }
  return y;
}

Tensor matmul_reference(const Tensor& a, const Tensor& b, bool trans_b, const Tensor* bias) {
  // a [.., M, K] batched over its leading dims; b [K, N] (or [N, K] transposed) or batched like a.
  const int64_t K = a.shape.back(), M = a.shape[a.shape.size() - 2];
  const bool b_batched = b.shape.size() > 2;
  const int64_t N = trans_b ? b.shape[b.shape.size() - 2] : b.shape.back();
  const int64_t batch = a.numel() / (M * K);
  std::vector<int64_t> shape(a.shape.begin(), a.shape.end() - 1);
  shape.push_back(N);
  Tensor y(DType::Float32, shape);
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = bias ? bias->data<float>()[j] : 0.0;
        for (int64_t k = 0; k < K; ++k) {
          const int64_t boff = b_batched ? bi * K * N : 0;
          acc += static_cast<double>(a.data<float>()[(bi * M + i) * K + k]) *
                 b.data<float>()[boff + (trans_b ? j * K + k : k * N + j)];
        }
        y.data<float>()[(bi * M + i) * N + j] = static_cast<float>(acc);
      }
  return y;
}

struct PoolCase {
  std::string name, op;
  std::vector<int64_t> shape;  // N, C, H, W
  int64_t k, s, pad;
};

Tensor pool_reference(const PoolCase& p, const Tensor& x) {
  const int64_t N = p.shape[0], C = p.shape[1], H = p.shape[2], W = p.shape[3];
  const bool global = p.op.rfind("Global", 0) == 0, max = p.op.find("Max") != std::string::npos;
  const int64_t KH = global ? H : p.k, KW = global ? W : p.k, S = global ? 1 : p.s, P = global ? 0 : p.pad;
  const int64_t OH = (H + 2 * P - KH) / S + 1, OW = (W + 2 * P - KW) / S + 1;
  Tensor y(DType::Float32, {N, C, OH, OW});
  for (int64_t nc = 0; nc < N * C; ++nc)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double acc = max ? -INFINITY : 0.0;
        int count = 0;
        for (int64_t kh = 0; kh < KH; ++kh)
          for (int64_t kw = 0; kw < KW; ++kw) {
            const int64_t ih = oh * S - P + kh, iw = ow * S - P + kw;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            const double v = x.data<float>()[(nc * H + ih) * W + iw];
            acc = max ? std::max(acc, v) : acc + v;
            ++count;
          }
        y.data<float>()[(nc * OH + oh) * OW + ow] = static_cast<float>(max ? acc : acc / count);
      }
  return y;
}

// ---- harness --------------------------------------------------------------------------------

struct Problem {
  std::string name;
  ModelBuilder model;
  std::map<std::string, Tensor> feeds;
  Tensor reference;
};

// Runs `p` with `force` and returns the plan's variant choices for `family` as "name (source)".
std::vector<std::string> run_forced(const Problem& p, const std::string& family, const std::string& force) {
  ocl_infer::SessionOptions opt;
  opt.kernel_variants = force;
  auto s = open_session(p.model, opt);
  auto out = s.run(p.feeds);
  EXPECT_LE(rel_error(out.at("y"), p.reference), kTolerance) << p.name << " with " << (force.empty() ? "defaults" : force);
  std::vector<std::string> used;
  const std::string json = s.dump("plan.json");
  std::regex re("\"family\": \"" + family + "\", \"name\": \"([a-z_]+)\", \"params\": \\{[^}]*\\}, \"source\": \"([^\"]+)\"");
  for (auto it = std::sregex_iterator(json.begin(), json.end(), re); it != std::sregex_iterator(); ++it)
    used.push_back((*it)[1].str() + " (" + (*it)[2].str() + ")");
  return used;
}

// The light sweep: the extremes of each parameter, each on one problem. fp16 mode (compile time:
// the float16 forms made this suite 3x its fp32 time in CI) and $OCL_INFER_TEST_SWEEP=light (the
// quick oclgrind check, tools/oclgrind_check.sh, where every run is simulated).
bool light_sweep() {
  static const bool light = [] {
    const char* e = std::getenv("OCL_INFER_TEST_SWEEP");
    return fp16_mode() || (e && std::string(e) == "light");
  }();
  return light;
}

// For every variant of `family` and every candidate value of each parameter: force it, run every
// problem, check the numbers, and require that the forced variant ran on at least one problem.
void sweep(const std::string& family, const std::vector<Problem>& problems) {
  int variants = 0;
  for (const auto& v : ocl_infer::kernel_variants()) {
    if (v.family != family) continue;
    ++variants;
    std::vector<std::string> forces{family + "=" + v.variant};
    for (auto& [param, values] : v.params)
      for (size_t k = 0; k < values.size(); ++k) {
        // The light sweep: the extremes of each parameter (vector widths and blockings; in fp16
        // mode through the float16 load/store macros).
        if (light_sweep() && k != 0 && k + 1 != values.size()) continue;
        forces.push_back(family + "=" + v.variant + ":" + param + "=" + std::to_string(values[k]));
      }
    // The variant's defaults run on every problem; each other parameter value on two of the
    // problems where the variant applies (rotating, so that every such problem sees several
    // values; more only if the value fits neither), which keeps the compile count and the
    // suite's time in bounds.
    std::vector<size_t> applies;
    for (size_t f = 0; f < forces.size(); ++f) {
      std::vector<size_t> order;
      if (f == 0) {
        for (size_t k = 0; k < problems.size(); ++k) order.push_back(k);
      } else {
        for (size_t i = 0; i < applies.size(); ++i) order.push_back(applies[(f - 1 + i) % applies.size()]);
      }
      int forced_runs = 0;
      // (The light sweep: one problem per parameter value, where it applies.)
      const size_t problems_per_value = light_sweep() ? 1 : 2;
      for (size_t i = 0; i < order.size(); ++i) {
        if (f > 0 && i >= problems_per_value && forced_runs > 0) break;
        int here = 0;
        for (const std::string& u : run_forced(problems[order[i]], family, forces[f]))
          here += u == v.variant + " (forced)";
        if (f == 0 && here > 0) applies.push_back(order[i]);
        forced_runs += here;
      }
      EXPECT_GT(forced_runs, 0) << forces[f] << " never ran as forced on the " << family << " problems";
      if (applies.empty()) break;
    }
  }
  EXPECT_GT(variants, 0) << "no variants listed for " << family;
  for (const Problem& p : problems) run_forced(p, family, "");
}

Problem conv_problem(const ConvCase& c, std::mt19937& rng) {
  Problem p{c.name, ModelBuilder(13), {}, {}};
  std::vector<int64_t> xs{c.N, c.C}, ws{c.M, c.C / c.G};
  xs.insert(xs.end(), c.in.begin(), c.in.end());
  ws.insert(ws.end(), c.k.begin(), c.k.end());
  Tensor x = random_tensor(xs, rng), w = random_tensor(ws, rng, -0.5f, 0.5f), b = random_tensor({c.M}, rng);
  p.model.input("x", DType::Float32, xs).output("y").initializer("w", w);
  std::vector<std::string> ins{"x", "w"};
  if (c.bias) {
    p.model.initializer("b", b);
    ins.push_back("b");
  }
  auto& n = p.model.node("Conv", ins, {c.relu ? "c" : "y"});
  attr_ints(n, "strides", c.s);
  attr_ints(n, "dilations", c.d);
  attr_ints(n, "pads", c.pads);
  if (c.G > 1) attr_i(n, "group", c.G);
  if (c.relu) p.model.node("Relu", {"c"}, {"y"});
  p.feeds["x"] = x;
  p.reference = conv_reference(c, x, w, c.bias ? &b : nullptr);
  return p;
}

TEST(Variants, ConvEveryVariantAndParameter) {
  std::mt19937 rng(1);
  const ConvCase cases[] = {
      {"depthwise 3x3", 1, 7, 7, 7, {17, 13}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, true},
      {"depthwise 3x3 stride 2 x2 channels", 2, 3, 6, 3, {15, 17}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, false, false},
      {"pointwise", 1, 5, 13, 1, {9, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true},
      {"3x3 grouped dilated", 1, 6, 9, 3, {13, 11}, {3, 3}, {1, 1}, {2, 2}, {2, 1, 2, 3}, true, false},
      {"1-D stride 2", 2, 4, 5, 1, {19}, {5}, {2}, {1}, {2, 1}, true, true},
      // Winograd F(2,3) applies: odd output sizes (partial tiles), asymmetric padding.
      {"3x3 plain, odd sizes", 2, 5, 7, 1, {11, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 0, 2, 1}, true, true},
      {"3x3 no padding, no bias", 1, 3, 4, 1, {8, 7}, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}, false, false},
      // Rows of 16 tiles (Winograd's 8-tile vectors) and 16 channels (8-channel vectors).
      {"3x3, 32-wide rows, 16 channels", 1, 5, 16, 1, {6, 32}, {3, 3}, {1, 1}, {1, 1}, {1, 0, 1, 2}, true, true},
      // 40 channels per group: packed's two 16-channel vectors per work-item (its default on
      // AVX-512 CPUs) with a second block whose second vector is empty.
      {"3x3 stride 2, 2 groups of 40", 1, 6, 80, 2, {9, 10}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, true, true},
      // Rows of at least 48 output pixels: pixvec applies with every pxv.
      {"3x3 stride 2 stem, 51-wide rows", 1, 3, 12, 1, {5, 101}, {3, 3}, {2, 2}, {1, 1}, {1, 0, 1, 2}, true, true},
  };
  std::vector<Problem> problems;
  for (const auto& c : cases) problems.push_back(conv_problem(c, rng));
  sweep("conv", problems);
}

TEST(Variants, GemmEveryVariantAndParameter) {
  std::mt19937 rng(2);
  std::vector<Problem> problems;
  struct G {
    int64_t M, K, N;
    bool trans_b, bias;
  };
  for (const G& g : {G{7, 13, 5, false, true}, G{1, 31, 37, true, false}, G{33, 9, 40, false, true}}) {
    Problem p{"gemm " + std::to_string(g.M) + "x" + std::to_string(g.K) + "x" + std::to_string(g.N), ModelBuilder(13),
              {}, {}};
    Tensor a = random_tensor({g.M, g.K}, rng), b = random_tensor(g.trans_b ? std::vector<int64_t>{g.N, g.K}
                                                                            : std::vector<int64_t>{g.K, g.N}, rng),
           c = random_tensor({g.N}, rng);
    p.model.input("a", DType::Float32, {g.M, g.K}).output("y").initializer("b", b);
    std::vector<std::string> ins{"a", "b"};
    if (g.bias) {
      p.model.initializer("c", c);
      ins.push_back("c");
    }
    auto& n = p.model.node("Gemm", ins, {"y"});
    if (g.trans_b) attr_i(n, "transB", 1);
    p.feeds["a"] = a;
    p.reference = matmul_reference(a, b, g.trans_b, g.bias ? &c : nullptr);
    problems.push_back(std::move(p));
  }
  // A batched MatMul whose B is a model input: packed by a kernel at run time.
  Problem p{"batched matmul, B an input", ModelBuilder(13), {}, {}};
  Tensor a = random_tensor({2, 5, 7}, rng), b = random_tensor({2, 7, 19}, rng);
  p.model.input("a", DType::Float32, {2, 5, 7}).input("b", DType::Float32, {2, 7, 19}).output("y");
  p.model.node("MatMul", {"a", "b"}, {"y"});
  p.feeds = {{"a", a}, {"b", b}};
  p.reference = matmul_reference(a, b, false, nullptr);
  problems.push_back(std::move(p));
  sweep("gemm", problems);
}

TEST(Variants, PoolEveryVariantAndParameter) {
  std::mt19937 rng(3);
  const PoolCase cases[] = {
      {"max 3x3 stride 2", "MaxPool", {1, 3, 15, 17}, 3, 2, 1},
      {"max 2x2", "MaxPool", {2, 2, 9, 10}, 2, 2, 0},
      {"max 5x5 stride 1 (SPPF)", "MaxPool", {1, 3, 12, 13}, 5, 1, 2},
      {"average 3x3", "AveragePool", {1, 4, 11, 7}, 3, 1, 1},
      {"global average", "GlobalAveragePool", {1, 5, 7, 9}, 0, 0, 0},
  };
  std::vector<Problem> problems;
  for (const auto& c : cases) {
    Problem p{c.name, ModelBuilder(13), {}, {}};
    Tensor x = random_tensor(c.shape, rng);
    p.model.input("x", DType::Float32, c.shape).output("y");
    auto& n = p.model.node(c.op, {"x"}, {"y"});
    if (c.op.rfind("Global", 0) != 0) {
      attr_ints(n, "kernel_shape", {c.k, c.k});
      attr_ints(n, "strides", {c.s, c.s});
      attr_ints(n, "pads", {c.pad, c.pad, c.pad, c.pad});
    }
    p.feeds["x"] = x;
    p.reference = pool_reference(c, x);
    problems.push_back(std::move(p));
  }
  sweep("pool", problems);
}

TEST(Variants, NormEveryVariantAndParameter) {
  std::mt19937 rng(4);
  struct LnCase {
    std::string name;
    std::vector<int64_t> x;
    int axis;
    std::vector<int64_t> scale;  // a suffix of the normalised dims
  };
  const LnCase cases[] = {
      {"rows of 24 (float8 path)", {5, 24}, -1, {24}},
      {"rows of 13", {3, 7, 13}, -1, {13}},
      {"rows of 32, scale over the last 8", {3, 4, 8}, 1, {8}},
      {"many rows of 16", {40, 16}, 1, {16}},
  };
  std::vector<Problem> problems;
  for (const auto& c : cases) {
    Problem p{c.name, ModelBuilder(17), {}, {}};
    Tensor x = random_tensor(c.x, rng, -2, 3), g = random_tensor(c.scale, rng), b = random_tensor(c.scale, rng);
    p.model.input("x", DType::Float32, c.x).output("y").initializer("g", g).initializer("b", b);
    attr_i(p.model.node("LayerNormalization", {"x", "g", "b"}, {"y"}), "axis", c.axis);
    p.feeds["x"] = x;
    p.reference = reference::normalize_rows(x, c.axis < 0 ? c.x.size() + c.axis : c.axis, 1e-5, &g, &b);
    problems.push_back(std::move(p));
  }
  {
    Problem p{"instance norm", ModelBuilder(13), {}, {}};
    Tensor x = random_tensor({2, 3, 5, 7}, rng), g = random_tensor({3}, rng), b = random_tensor({3}, rng);
    p.model.input("x", DType::Float32, {2, 3, 5, 7}).output("y").initializer("g", g).initializer("b", b);
    p.model.node("InstanceNormalization", {"x", "g", "b"}, {"y"});
    p.feeds["x"] = x;
    p.reference = reference::normalize_rows(x, 2, 1e-5, &g, &b, true);
    problems.push_back(std::move(p));
  }
  sweep("norm", problems);
}

TEST(Variants, BadForcedVariantsAreClearErrors) {
  ModelBuilder m(13);
  m.input("x", DType::Float32, {1, 4}).output("y");
  m.node("Relu", {"x"}, {"y"});
  std::string bytes = m.bytes();
  for (const char* bad : {"conv=fft", "convolution=packed", "conv=packed:ocb=x", "conv=packed:tile=4", "conv"}) {
    ocl_infer::SessionOptions opt;
    opt.kernel_variants = bad;
    try {
      ocl_infer::Session::from_memory(bytes.data(), bytes.size(), opt);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const ocl_infer::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("variant"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
