// Gemm and MatMul against direct CPU loops on odd/prime sizes: transposes, alpha/beta, every C
// broadcast, 1-D operands, batch broadcasting, B both constant (packed at plan time) and an input.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <ctime>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

struct GemmCase {
  int64_t M, N, K;
  bool ta, tb;
  float alpha, beta;
  std::vector<int64_t> c;  // C's shape; {-1}: no C
};

TEST(Gemm, MatchesReference) {
  std::mt19937 rng(21);
  const std::vector<GemmCase> cases = {
      {7, 37, 13, false, false, 1.0f, 1.0f, {7, 37}},
      {7, 37, 13, true, false, 0.5f, 2.0f, {37}},
      {5, 3, 11, false, true, 1.0f, 1.0f, {5, 1}},
      {1, 1000, 67, false, true, 1.0f, 1.0f, {1000}},
      {67, 65, 129, true, true, -1.5f, 0.25f, {}},
      {3, 17, 2, false, false, 1.0f, 1.0f, {-1}},
      {13, 33, 19, false, true, 2.0f, 0.0f, {13, 33}},
      {2, 6, 5, false, false, 1.0f, 1.0f, {1, 1}},
      // C broadcast along N over whole 32- and 64-column panels (a strided C read in the vector
      // epilogue), and a full C there (contiguous rows).
      {9, 64, 10, false, false, 1.0f, 0.5f, {9, 1}},
      {9, 64, 10, false, false, 1.0f, 0.5f, {9, 64}},
  };
  int k = 0;
  for (const GemmCase& c : cases)
    for (bool constant : {true, false}) {
      if (fp16_sampled_out(k++)) continue;
      const std::vector<int64_t> as =
          c.ta ? std::vector<int64_t>{c.K, c.M} : std::vector<int64_t>{c.M, c.K};
      const std::vector<int64_t> bs =
          c.tb ? std::vector<int64_t>{c.N, c.K} : std::vector<int64_t>{c.K, c.N};
      const bool has_c = c.c != std::vector<int64_t>{-1};
      Tensor a = random_tensor(as, rng), b = random_tensor(bs, rng);
      Tensor cc = has_c ? random_tensor(c.c, rng) : Tensor();
      ModelBuilder m;
      m.input("a", DType::Float32, as).output("y");
      std::map<std::string, Tensor> feeds{{"a", a}};
      if (constant) {
        m.initializer("b", b);
        if (has_c) m.initializer("c", cc);
      } else {
        m.input("b", DType::Float32, bs);
        feeds["b"] = b;
        if (has_c) {
          m.input("c", DType::Float32, c.c);
          feeds["c"] = cc;
        }
      }
      std::vector<std::string> ins{"a", "b"};
      if (has_c) ins.push_back("c");
      auto& node = m.node("Gemm", ins, {"y"});
      attr_i(node, "transA", c.ta);
      attr_i(node, "transB", c.tb);
      attr_f(node, "alpha", c.alpha);
      attr_f(node, "beta", c.beta);

      Tensor ref(DType::Float32, {c.M, c.N});
      for (int64_t i = 0; i < c.M; ++i)
        for (int64_t j = 0; j < c.N; ++j) {
          double acc = 0;
          for (int64_t k = 0; k < c.K; ++k)
            acc += static_cast<double>(a.data<float>()[c.ta ? k * c.M + i : i * c.K + k]) *
                   b.data<float>()[c.tb ? j * c.K + k : k * c.N + j];
          acc *= c.alpha;
          if (has_c) {
            const int64_t c0 = c.c.size() == 2 ? c.c[0] : 1, c1 = c.c.empty() ? 1 : c.c.back();
            acc += c.beta * cc.data<float>()[(c0 == 1 ? 0 : i) * c1 + (c1 == 1 ? 0 : j)];
          }
          ref.data<float>()[i * c.N + j] = static_cast<float>(acc);
        }
      auto out = run_model(m, feeds);
      EXPECT_LE(rel_error(out.at("y"), ref), 1e-5)
          << c.M << "x" << c.N << "x" << c.K << " transA " << c.ta << " transB " << c.tb
          << (constant ? " constant" : " input") << " B";
    }
}

// numpy-style matmul reference.
Tensor matmul_reference(const Tensor& a, const Tensor& b) {
  std::vector<int64_t> as = a.shape, bs = b.shape;
  const bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as.insert(as.begin(), 1);
  if (b1) bs.push_back(1);
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  std::vector<int64_t> ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  const size_t r = std::max(ab.size(), bb.size());
  ab.insert(ab.begin(), r - ab.size(), 1);
  bb.insert(bb.begin(), r - bb.size(), 1);
  std::vector<int64_t> batch(r), out;
  for (size_t i = 0; i < r; ++i) batch[i] = std::max(ab[i], bb[i]);
  out = batch;
  if (!a1) out.push_back(M);
  if (!b1) out.push_back(N);
  Tensor y(DType::Float32, out);
  int64_t nb = 1;
  for (int64_t d : batch) nb *= d;
  for (int64_t i = 0; i < nb; ++i) {
    int64_t rem = i, ai = 0, bi = 0, astr = 1, bstr = 1;
    for (size_t d = r; d-- > 0;) {
      const int64_t coord = rem % batch[d];
      rem /= batch[d];
      if (ab[d] != 1) ai += coord * astr;
      if (bb[d] != 1) bi += coord * bstr;
      astr *= ab[d];
      bstr *= bb[d];
    }
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += static_cast<double>(a.data<float>()[(ai * M + m) * K + k]) *
                 b.data<float>()[(bi * K + k) * N + n];
        y.data<float>()[(i * M + m) * N + n] = static_cast<float>(acc);
      }
  }
  return y;
}

TEST(MatMul, MatchesReference) {
  std::mt19937 rng(22);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{7, 13}, {13, 37}},
      {{13}, {13, 5}},
      {{3, 13}, {13}},
      {{29}, {29}},
      {{2, 1, 5, 7}, {3, 7, 11}},
      {{3, 5, 7}, {7, 11}},
      {{4, 3, 17}, {4, 17, 33}},
      {{1, 9}, {2, 3, 9, 6}},
      {{67, 129}, {129, 65}},
  };
  int k = 0;
  for (auto& [as, bs] : cases)
    for (bool constant : {true, false}) {
      if (fp16_sampled_out(k++)) continue;
      Tensor a = random_tensor(as, rng), b = random_tensor(bs, rng);
      ModelBuilder m;
      m.input("a", DType::Float32, as).output("y");
      std::map<std::string, Tensor> feeds{{"a", a}};
      if (constant) {
        m.initializer("b", b);
      } else {
        m.input("b", DType::Float32, bs);
        feeds["b"] = b;
      }
      m.node("MatMul", {"a", "b"}, {"y"});
      auto out = run_model(m, feeds);
      EXPECT_LE(rel_error(out.at("y"), matmul_reference(a, b)), 1e-5)
          << ocl_infer::shape_to_string(as) << " x " << ocl_infer::shape_to_string(bs)
          << (constant ? " constant" : " input") << " B, got "
          << ocl_infer::shape_to_string(out.at("y").shape);
    }
}

// MatMul -> Add(residual) -> Tanh and Gemm -> Relu fuse into the product's epilogue.
TEST(MatMul, FusedEpilogueMatchesReference) {
  std::mt19937 rng(23);
  Tensor a = random_tensor({2, 5, 7}, rng), b = random_tensor({7, 19}, rng),
         r = random_tensor({2, 5, 19}, rng);
  ModelBuilder m;
  m.input("a", DType::Float32, {2, 5, 7}).input("r", DType::Float32, {2, 5, 19}).output("y");
  m.initializer("b", b);
  m.node("MatMul", {"a", "b"}, {"p"});
  m.node("Add", {"p", "r"}, {"s"});
  m.node("Tanh", {"s"}, {"y"});
  Tensor ref = matmul_reference(a, b);
  for (int64_t i = 0; i < ref.numel(); ++i)
    ref.data<float>()[i] = std::tanh(ref.data<float>()[i] + r.data<float>()[i]);
  auto s = open_session(m);
  auto out = s.run({{"a", a}, {"r", r}});
  EXPECT_LE(rel_error(out.at("y"), ref), 1e-5);
  EXPECT_NE(s.dump("graph").find("MatMul+Add+Tanh"), std::string::npos) << s.dump("graph");

  Tensor a2 = random_tensor({3, 7}, rng), c = random_tensor({19}, rng);
  ModelBuilder g;
  g.input("a", DType::Float32, {3, 7}).output("y");
  g.initializer("b", b).initializer("c", c);
  g.node("Gemm", {"a", "b", "c"}, {"p"});
  g.node("Relu", {"p"}, {"y"});
  Tensor ref2 = matmul_reference(a2, b);
  for (int64_t i = 0; i < ref2.numel(); ++i)
    ref2.data<float>()[i] = std::max(0.0f, ref2.data<float>()[i] + c.data<float>()[i % 19]);
  auto out2 = run_model(g, {{"a", a2}});
  EXPECT_LE(rel_error(out2.at("y"), ref2), 1e-5);
}

// Attention as exporters write it: S = MatMul(Q, Kt), an optional scale (Mul/Div by a constant)
// and mask (Add, or Where with a constant fill) in either order, Softmax over the last axis, then
// MatMul(P, V). The fuse_attention pass makes it one kernel (ops/attention_ops.cpp); checked
// against a double-precision reference and against the unfused chain (-O0), on shapes whose rows,
// keys and value columns are not multiples of the kernel's vector and row blocks, with batch dims
// that broadcast. Patterns that differ stay unfused and compute the same numbers.
using Shape = std::vector<int64_t>;

Tensor scalar_tensor(float v) {
  Tensor t(DType::Float32, {});
  t.data<float>()[0] = v;
  return t;
}

struct AttnCase {
  std::string name;
  int opset;
  Shape q, kt, v;
  std::string scale;  // "", "mul", "div"
  std::string mask;   // "", "add", "fill_true", "fill_false"
  Shape mask_shape;
  bool mask_first;    // the mask node before the scale node
  bool mask_const;    // the mask (or condition) an initializer
  bool fuses;
  int64_t softmax_axis = -1;
  bool scores_output = false;  // the scores also a graph output
  // Rank 4 only: Q, K and V arrive as [B, T, H, d] and are split into heads by Transposes
  // (Q, V: perm 0,2,1,3; K: 0,2,3,1 makes Kt), and Y is merged back by one (0,2,1,3).
  bool heads = false;
  bool q_heads_output = false;  // with heads: Q's Transpose output also a graph output
  // With heads (M == N, D == DV): one [B, T, 3 * H * d] input (a fused QKV projection) that a
  // Split and Reshapes cut into the three [B, T, H, d] tensors (in the order q, k, v, or with
  // qkv_reversed v, k, q: every operand at a non-zero offset once).
  bool qkv = false, qkv_reversed = false;
};

// `t` (rank 4) with its axes permuted: result axis i is t's axis perm[i].
Tensor permute4(const Tensor& t, const std::vector<int64_t>& perm) {
  Shape s(4);
  for (int i = 0; i < 4; ++i) s[i] = t.shape[perm[i]];
  Tensor r(DType::Float32, s);
  int64_t st[4] = {t.shape[1] * t.shape[2] * t.shape[3], t.shape[2] * t.shape[3], t.shape[3], 1};
  int64_t i = 0;
  for (int64_t a = 0; a < s[0]; ++a)
    for (int64_t b = 0; b < s[1]; ++b)
      for (int64_t c = 0; c < s[2]; ++c)
        for (int64_t d = 0; d < s[3]; ++d) {
          const int64_t idx[4] = {a, b, c, d};
          int64_t src = 0;
          for (int k = 0; k < 4; ++k) src += idx[k] * st[perm[k]];
          r.data<float>()[i++] = t.data<float>()[src];
        }
  return r;
}

// y = softmax(mask(scale(q @ kt))) @ v in double, every operand broadcast to the scores' batch.
Tensor attention_reference(const AttnCase& c, const Tensor& q, const Tensor& kt, const Tensor& v,
                           const Tensor* mask, float scale, float fill) {
  const int64_t M = c.q[c.q.size() - 2], D = c.q.back(), N = c.kt.back(), DV = c.v.back();
  Shape sb(std::max({c.q.size(), c.kt.size(), c.v.size()}) - 2, 1);
  auto widen = [&](const Shape& s) {
    for (size_t i = 0; i + 2 < s.size(); ++i) {
      int64_t& d = sb[sb.size() - (s.size() - 2) + i];
      d = std::max(d, s[i]);
    }
  };
  widen(c.q), widen(c.kt), widen(c.v);
  Shape ys = sb;
  ys.push_back(M), ys.push_back(DV);
  Tensor y(DType::Float32, ys);
  Shape ss = sb;
  ss.push_back(M), ss.push_back(N);
  // Flat index of (batch b of sb, row, col) in an operand of shape `s` broadcast to sb + [R, C].
  auto at = [&](const Shape& s, int64_t b, int64_t row, int64_t col, int64_t R, int64_t C) {
    Shape full = sb;
    full.push_back(R), full.push_back(C);
    Shape padded(full.size() - s.size(), 1);
    padded.insert(padded.end(), s.begin(), s.end());
    std::vector<int64_t> idx(full.size());
    idx[full.size() - 1] = col, idx[full.size() - 2] = row;
    for (size_t d = full.size() - 2; d-- > 0;) idx[d] = b % full[d], b /= full[d];
    int64_t flat = 0;
    for (size_t d = 0; d < full.size(); ++d) flat = flat * padded[d] + (padded[d] == 1 ? 0 : idx[d]);
    return flat;
  };
  int64_t batches = 1;
  for (int64_t d : sb) batches *= d;
  std::vector<double> sc(static_cast<size_t>(N));
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t m = 0; m < M; ++m) {
      double mx = -INFINITY;
      for (int64_t n = 0; n < N; ++n) {
        double a = 0;
        for (int64_t d = 0; d < D; ++d)
          a += static_cast<double>(q.data<float>()[at(c.q, b, m, d, M, D)]) * kt.data<float>()[at(c.kt, b, d, n, D, N)];
        auto do_scale = [&] { a = c.scale == "mul" ? a * scale : c.scale == "div" ? a / scale : a; };
        auto do_mask = [&] {
          if (c.mask.empty()) return;
          const int64_t i = at(c.mask_shape, b, m, n, M, N);
          if (c.mask == "add") a += mask->data<float>()[i];
          else {
            const bool on = mask->data<uint8_t>()[i] != 0;
            if (on == (c.mask == "fill_true")) a = fill;
          }
        };
        if (c.mask_first) do_mask(), do_scale();
        else do_scale(), do_mask();
        sc[n] = a;
        mx = std::max(mx, a);
      }
      double sum = 0;
      for (int64_t n = 0; n < N; ++n) sum += sc[n] = std::exp(sc[n] - mx);
      for (int64_t e = 0; e < DV; ++e) {
        double a = 0;
        for (int64_t n = 0; n < N; ++n) a += sc[n] / sum * v.data<float>()[at(c.v, b, n, e, N, DV)];
        y.data<float>()[(b * M + m) * DV + e] = static_cast<float>(a);
      }
    }
  return y;
}

TEST(Attention, FusedMatchesReferenceAndUnfused) {
  std::mt19937 rng(31);
  const AttnCase cases[] = {
      // BERT: [B, H, T, d], scores / sqrt(d) + a padding mask [B, 1, 1, T] computed by the model.
      {"bert, div then add", 17, {2, 3, 5, 8}, {2, 3, 8, 7}, {2, 3, 7, 6}, "div", "add", {2, 1, 1, 7}, false, false, true},
      // GPT: Where(causal, -inf, S / c), the condition a constant [T, T]; 12-wide heads.
      {"gpt, div then where(-inf)", 17, {1, 4, 19, 12}, {1, 4, 12, 19}, {1, 4, 19, 12}, "div", "fill_true", {19, 19}, false, true, true},
      {"where keeps S, finite fill, mask input", 13, {2, 33, 16}, {2, 16, 33}, {2, 33, 40}, "mul", "fill_false", {1, 33, 33}, false, false, true},
      {"mask added before the scale", 17, {1, 2, 9, 5}, {1, 2, 5, 17}, {1, 2, 17, 20}, "mul", "add", {9, 17}, true, true, true},
      // ViT-like: no scale or mask, rank 3, 67 keys (not a multiple of any block; kept small for
      // the oclgrind run).
      {"vit-like, plain", 17, {3, 67, 16}, {3, 16, 67}, {3, 67, 24}, "", "", {}, false, false, true},
      // Keys and values shared across the batch (broadcast), 2-D Q.
      {"broadcast K and V", 17, {2, 3, 6, 4}, {4, 10}, {1, 3, 10, 9}, "div", "", {}, false, false, true},
      {"2-D, one row", 17, {1, 8}, {8, 3}, {3, 5}, "", "add", {1, 3}, false, false, true},
      // Softmax before opset 13 over the last axis (axis = rank - 1) fuses; its default axis 1
      // (a softmax over the flattened trailing dims) does not.
      {"opset 11, axis = rank - 1", 11, {2, 2, 6, 8}, {2, 2, 8, 6}, {2, 2, 6, 8}, "div", "", {}, false, false, true, 3},
      {"opset 11, default axis", 11, {2, 2, 6, 8}, {2, 2, 8, 6}, {2, 2, 6, 8}, "div", "", {}, false, false, false, 1},
      {"softmax over another axis", 17, {2, 6, 8}, {2, 8, 6}, {2, 6, 8}, "", "", {}, false, false, false, 1},
      {"scores also an output", 17, {2, 6, 8}, {2, 8, 6}, {2, 6, 8}, "mul", "", {}, false, false, false, -1, true},
      // Heads split off by Transposes and merged back: the kernel reads Q and V and writes Y with
      // strides (Kt's Transpose moves the last axis and stays a copy).
      {"heads: bert layout", 17, {2, 4, 9, 16}, {2, 4, 16, 9}, {2, 4, 9, 16}, "div", "add", {2, 1, 1, 9}, false, false, true, -1, false, true},
      {"heads: gpt layout, 12-wide", 17, {1, 4, 21, 12}, {1, 4, 12, 21}, {1, 4, 21, 12}, "div", "fill_true", {21, 21}, false, true, true, -1, false, true},
      {"heads: Q's split also an output", 17, {1, 3, 7, 8}, {1, 3, 8, 7}, {1, 3, 7, 8}, "mul", "", {}, false, false, true, -1, false, true, true},
      {"heads: fused QKV split (GPT)", 17, {1, 4, 19, 12}, {1, 4, 12, 19}, {1, 4, 19, 12}, "div", "fill_true", {19, 19}, false, true, true, -1, false, true, false, true},
      {"heads: fused VKQ split, batch 2", 17, {2, 2, 6, 8}, {2, 2, 8, 6}, {2, 2, 6, 8}, "", "add", {2, 1, 1, 6}, false, false, true, -1, false, true, false, true, true},
      // A mask that widens the scores' batch is not a mask of these scores.
      {"mask widens the batch", 17, {1, 6, 8}, {1, 8, 6}, {1, 6, 8}, "", "add", {3, 6, 6}, false, false, false},
  };
  for (const AttnCase& c : cases) {
    SCOPED_TRACE(c.name);
    const float scale = c.scale == "div" ? std::sqrt(static_cast<float>(c.q.back())) : 0.37f, fill = c.mask == "fill_true" ? -INFINITY : -1e4f;
    Tensor q = random_tensor(c.q, rng, -2, 2), kt = random_tensor(c.kt, rng, -2, 2), v = random_tensor(c.v, rng);
    Tensor mask;
    if (c.mask == "add") mask = random_tensor(c.mask_shape, rng, -3, 1);
    if (c.mask == "fill_true" || c.mask == "fill_false") {
      mask = Tensor(DType::Bool, c.mask_shape);
      for (int64_t i = 0; i < mask.numel(); ++i) {
        // Causal for the GPT case (no row all masked), random elsewhere with the diagonal kept.
        const int64_t col = i % c.mask_shape.back(), row = (i / c.mask_shape.back()) % c.mask_shape[c.mask_shape.size() - 2];
        mask.data<uint8_t>()[i] = c.mask == "fill_true" ? col > row : (col == row || rng() % 3 != 0);
      }
    }
    ModelBuilder m(c.opset);
    std::map<std::string, Tensor> feeds;
    const std::vector<int64_t> heads{0, 2, 1, 3}, k_heads{0, 3, 1, 2};
    if (c.heads) {
      // Inputs in [B, T, H, d]; the graph makes the [B, H, T, d] operands (and Kt [B, H, d, T]).
      feeds = {{"qin", permute4(q, heads)}, {"kin", permute4(kt, k_heads)}, {"vin", permute4(v, heads)}};
      if (c.qkv) {
        // qkv[b, t] = [qin[b, t, :, :], kin[b, t, :, :], vin[b, t, :, :]] flattened.
        const Tensor &a = feeds["qin"], &b = feeds["kin"], &d = feeds["vin"];
        const int64_t B = a.shape[0], T = a.shape[1], HD = a.shape[2] * a.shape[3];
        Tensor qkv(DType::Float32, {B, T, 3 * HD});
        const Tensor* parts[3] = {&a, &b, &d};
        if (c.qkv_reversed) std::swap(parts[0], parts[2]);
        for (int64_t i = 0; i < B * T; ++i)
          for (int k = 0; k < 3; ++k)
            std::memcpy(qkv.data<float>() + (i * 3 + k) * HD, parts[k]->data<float>() + i * HD, HD * sizeof(float));
        Tensor shape(DType::Int64, {4});
        for (int k = 0; k < 4; ++k) shape.data<int64_t>()[k] = a.shape[k];
        m.input("qkv", DType::Float32, qkv.shape).initializer("heads_shape", shape);
        attr_i(m.node("Split", {"qkv"}, c.qkv_reversed ? std::vector<std::string>{"vf", "kf", "qf"}
                                                        : std::vector<std::string>{"qf", "kf", "vf"}),
               "axis", 2);
        m.node("Reshape", {"qf", "heads_shape"}, {"qin"});
        m.node("Reshape", {"kf", "heads_shape"}, {"kin"});
        m.node("Reshape", {"vf", "heads_shape"}, {"vin"});
        feeds = {{"qkv", qkv}};
      } else {
        for (auto& [name, t] : feeds) m.input(name, DType::Float32, t.shape);
      }
      attr_ints(m.node("Transpose", {"qin"}, {"q"}), "perm", heads);
      attr_ints(m.node("Transpose", {"kin"}, {"kt"}), "perm", {0, 2, 3, 1});
      attr_ints(m.node("Transpose", {"vin"}, {"v"}), "perm", heads);
      m.output("yh");
      if (c.q_heads_output) m.output("q");
    } else {
      m.input("q", DType::Float32, c.q).input("kt", DType::Float32, c.kt).input("v", DType::Float32, c.v).output("y");
      feeds = {{"q", q}, {"kt", kt}, {"v", v}};
    }
    if (!c.mask.empty()) {
      if (c.mask_const) m.initializer("mask", mask);
      else m.input("mask", mask.dtype, c.mask_shape), feeds["mask"] = mask;
    }
    m.initializer("c", scalar_tensor(scale)).initializer("fill", scalar_tensor(fill));
    m.node("MatMul", {"q", "kt"}, {"s0"});
    std::string cur = "s0";
    int step = 0;
    auto add_scale = [&] {
      if (c.scale.empty()) return;
      const std::string out = "s" + std::to_string(++step);
      m.node(c.scale == "mul" ? "Mul" : "Div", {cur, "c"}, {out});
      cur = out;
    };
    auto add_mask = [&] {
      if (c.mask.empty()) return;
      const std::string out = "s" + std::to_string(++step);
      if (c.mask == "add") m.node("Add", {"mask", cur}, {out});
      else if (c.mask == "fill_true") m.node("Where", {"mask", "fill", cur}, {out});
      else m.node("Where", {"mask", cur, "fill"}, {out});
      cur = out;
    };
    if (c.mask_first) add_mask(), add_scale();
    else add_scale(), add_mask();
    if (c.scores_output) m.output(cur);
    auto& sm = m.node("Softmax", {cur}, {"p"});
    if (c.softmax_axis != -1 || c.opset < 13) attr_i(sm, "axis", c.softmax_axis);
    m.node("MatMul", {"p", "v"}, {"y"});
    if (c.heads) attr_ints(m.node("Transpose", {"y"}, {"yh"}), "perm", heads);

    ocl_infer::SessionOptions o0;
    o0.optimization_level = 0;
    auto unfused = open_session(m, o0);
    auto fused = open_session(m);
    const auto want = unfused.run(feeds), got = fused.run(feeds);
    const bool has_kernel = fused.dump("plan").find("attention_rows") != std::string::npos;
    EXPECT_EQ(has_kernel, c.fuses) << fused.dump("graph");
    // With float16 storage the unfused chain rounds the scores, the scaled and masked scores and
    // the probabilities to float16; the fused kernel keeps them in float.
    const std::string out = c.heads ? "yh" : "y";
    EXPECT_LE(rel_error(got.at(out), want.at(out)), fp16_mode() ? 4e-3 : 1e-5);
    if (c.q_heads_output) {
      EXPECT_EQ(got.at("q").bytes, q.bytes);
    }
    if (c.fuses || c.scores_output) {
      Tensor ref = attention_reference(c, q, kt, v, c.mask.empty() ? nullptr : &mask, scale, fill);
      if (c.heads) ref = permute4(ref, heads);
      EXPECT_LE(rel_error(got.at(out), ref), c.fuses || !fp16_mode() ? 1e-5 : 4e-3);
    }
    if (c.heads) {
      // The Transposes (and the Split) are the kernel's strides: no copies (Q's Transpose stays
      // where something else reads it).
      const std::string plan = fused.dump("plan");
      size_t copies = 0;
      for (size_t at = plan.find("copy_"); at != std::string::npos; at = plan.find("copy_", at + 1)) ++copies;
      EXPECT_EQ(copies, c.q_heads_output ? 1u : 0u) << plan;
    }
  }
}

// A FusedAttention node written into a model by hand (domain ai.ocl_infer) is checked like any
// other op: a plain one computes attention; a mask of the wrong type, a missing mask input, an
// unknown mask kind or a view past its input is a ModelError naming the problem.
TEST(Attention, HandWrittenNodeIsChecked) {
  std::mt19937 rng(37);
  const Shape qs{1, 2, 3, 4}, ks{1, 2, 4, 5}, vs{1, 2, 5, 6};
  const Tensor q = random_tensor(qs, rng), kt = random_tensor(ks, rng), v = random_tensor(vs, rng);
  struct Bad {
    std::string mask;          // the mask attribute ("" for none)
    DType mask_type;           // the fourth input's type (Undefined: no fourth input)
    std::vector<int64_t> q_view;
    std::string error;         // "" for a valid node
  };
  const Bad cases[] = {
      {"", DType::Undefined, {}, ""},
      {"add", DType::Bool, {}, "Q's type"},
      {"fill_true", DType::Float32, {}, "must be bool"},
      {"add", DType::Undefined, {}, "fourth input"},
      {"", DType::Float32, {}, "needs the mask attribute"},
      {"multiply", DType::Float32, {}, "unknown mask kind"},
      {"", DType::Undefined, {1, 4, 1, 2, 3, 4, 24, 12, 4, 1}, "reaches past"},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.mask + " / " + c.error);
    ModelBuilder m;
    auto* os = m.proto().add_opset_import();
    os->set_domain("ai.ocl_infer");
    os->set_version(1);
    m.input("q", DType::Float32, qs).input("kt", DType::Float32, ks).input("v", DType::Float32, vs).output("y");
    std::map<std::string, Tensor> feeds{{"q", q}, {"kt", kt}, {"v", v}};
    std::vector<std::string> ins{"q", "kt", "v"};
    if (c.mask_type != DType::Undefined) {
      Tensor mk(c.mask_type, {1, 1, 3, 5});
      std::memset(mk.bytes.data(), 0, mk.bytes.size());
      m.input("mask", c.mask_type, mk.shape);
      feeds["mask"] = mk;
      ins.push_back("mask");
    }
    auto& n = m.node("FusedAttention", ins, {"y"});
    n.set_domain("ai.ocl_infer");
    if (!c.mask.empty()) {
      auto* a = n.add_attribute();
      a->set_name("mask");
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s(c.mask);
    }
    if (!c.q_view.empty()) attr_ints(n, "q_view", c.q_view);
    if (c.error.empty()) {
      const AttnCase ref_case{"plain", 17, qs, ks, vs, "", "", {}, false, false, true};
      EXPECT_LE(rel_error(run_model(m, feeds).at("y"), attention_reference(ref_case, q, kt, v, nullptr, 1.0f, 0.0f)),
                1e-5);
      continue;
    }
    try {
      run_model(m, feeds);
      ADD_FAILURE() << "expected a ModelError about: " << c.error;
    } catch (const ocl_infer::ModelError& e) {
      EXPECT_NE(std::string(e.what()).find(c.error), std::string::npos) << e.what();
    }
  }
}

TEST(MatMul, InnerDimensionMismatchIsAModelError) {
  ModelBuilder m;
  m.input("a", DType::Float32, {3, 4}).input("b", DType::Float32, {5, 6}).output("y");
  m.node("MatMul", {"a", "b"}, {"y"});
  try {
    run_model(m, {{"a", Tensor(DType::Float32, {3, 4})}, {"b", Tensor(DType::Float32, {5, 6})}});
    FAIL() << "expected a ModelError";
  } catch (const ocl_infer::ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("inner dimensions differ"), std::string::npos) << e.what();
  }
}

TEST(Gemm, BadCShapeIsAModelError) {
  ModelBuilder m;
  m.input("a", DType::Float32, {3, 4}).input("b", DType::Float32, {4, 6}).output("y");
  m.input("c", DType::Float32, {2, 6});
  m.node("Gemm", {"a", "b", "c"}, {"y"});
  EXPECT_THROW(run_model(m, {{"a", Tensor(DType::Float32, {3, 4})},
                             {"b", Tensor(DType::Float32, {4, 6})},
                             {"c", Tensor(DType::Float32, {2, 6})}}),
               ocl_infer::ModelError);
}

// ---- timing (not run by default: --gtest_also_run_disabled_tests) ---------------------------
double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Best wall-clock rate and the rate per CPU-second of all the process's threads (steadier on a
// shared machine) of A [M,K] x constant B [K,N].
void time_matmul(int64_t M, int64_t K, int64_t N, int reps) {
  std::mt19937 rng(5);
  ModelBuilder m;
  m.input("a", DType::Float32, {M, K}).output("y");
  m.initializer("b", random_tensor({K, N}, rng));
  m.node("MatMul", {"a", "b"}, {"y"});
  std::string bytes = m.bytes();
  auto s = ocl_infer::Session::from_memory(bytes.data(), bytes.size());
  std::map<std::string, Tensor> feeds{{"a", random_tensor({M, K}, rng)}};
  s.run(feeds);
  double best = 1e30;
  const double cpu0 = cpu_seconds();
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    s.run(feeds);
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double cpu = (cpu_seconds() - cpu0) / reps, flops = 2.0 * M * N * K;
  std::printf("matmul %ldx%ldx%ld: %.1f GFLOP/s wall, %.1f per CPU-second, %.3f ms\n",
              static_cast<long>(M), static_cast<long>(K), static_cast<long>(N), flops / best * 1e-9,
              flops / cpu * 1e-9, best * 1e3);
}

TEST(MatMul, DISABLED_Timing) {
  time_matmul(256, 256, 256, 20);
  time_matmul(512, 512, 512, 10);
  time_matmul(1024, 1024, 1024, 5);
  time_matmul(128, 768, 768, 20);
  time_matmul(1, 2048, 1000, 50);
}

}  // namespace
