// Attention-23 and RotaryEmbedding-23 (ops/llm_ops.cpp) against references written from the ONNX
// 1.23 reference implementation (which ONNX Runtime 1.32 follows), in double: 3-D inputs split into
// heads, grouped-query heads, past/present keys and values, the causal frontier offset by the past
// length, boolean and float masks, softcap, a query row whose every key is masked (zeros, not NaN),
// and the rotary embedding's halves, interleaved pairs, partial dims and position ids. ONNX 1.21's
// node tests (ctest onnx_conformance_new_opsets) cover the operators once more.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tests/model_builder.hpp"

namespace {

using ocl_infer::DType;
using ocl_infer::Tensor;
using namespace testing_util;

struct AttnCase {
  const char* name;
  bool three_d;
  int64_t batch, q_heads, kv_heads, q_len, kv_len, past, head, v_head;
  bool causal;
  int mask;  // 0 none, 1 bool [B, 1, Sq, T], 2 float [Sq, T]
  float scale = 0, softcap = 0;
};

// y[b, h, i, :] per the ONNX reference; K/V already include the past (present), [B, Hkv, T, *].
std::vector<double> reference_attention(const AttnCase& c, const std::vector<double>& q, const std::vector<double>& k,
                                        const std::vector<double>& v, const Tensor* mask) {
  const int64_t T = c.past + c.kv_len, rep = c.q_heads / c.kv_heads;
  const double scale = c.scale > 0 ? c.scale : 1 / std::sqrt(static_cast<double>(c.head));
  std::vector<double> y(c.batch * c.q_heads * c.q_len * c.v_head, 0.0);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.q_heads; ++h) {
      const int64_t kh = h / rep;
      for (int64_t i = 0; i < c.q_len; ++i) {
        std::vector<double> s(T);
        bool any = false;
        for (int64_t j = 0; j < T; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < c.head; ++d)
            dot += q[((b * c.q_heads + h) * c.q_len + i) * c.head + d] * k[((b * c.kv_heads + kh) * T + j) * c.head + d];
          dot *= scale;
          if (c.softcap > 0) dot = c.softcap * std::tanh(dot / c.softcap);
          double bias = 0;
          if (c.causal && j > i + c.past) bias = -INFINITY;
          if (c.mask == 1 && !mask->data<uint8_t>()[(b * c.q_len + i) * T + j]) bias = -INFINITY;
          if (c.mask == 2) bias += mask->data<float>()[i * T + j];
          s[j] = dot + bias;
          any |= !std::isinf(bias) || bias > 0;
        }
        if (!any) continue;  // every key masked: zeros
        double mx = -INFINITY, sum = 0;
        for (double x : s) mx = std::max(mx, x);
        for (double& x : s) sum += (x = std::exp(x - mx));
        for (int64_t d = 0; d < c.v_head; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < T; ++j) acc += s[j] / sum * v[((b * c.kv_heads + kh) * T + j) * c.v_head + d];
          y[((b * c.q_heads + h) * c.q_len + i) * c.v_head + d] = acc;
        }
      }
    }
  return y;
}

// [B, S, H * D] -> [B, H, S, D] as doubles (4-D tensors as they are).
std::vector<double> heads_of(const Tensor& t, bool three_d, int64_t heads) {
  std::vector<double> r(t.numel());
  if (!three_d) {
    for (int64_t i = 0; i < t.numel(); ++i) r[i] = t.data<float>()[i];
    return r;
  }
  const int64_t B = t.shape[0], S = t.shape[1], D = t.shape[2] / heads;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t d = 0; d < D; ++d)
          r[((b * heads + h) * S + s) * D + d] = t.data<float>()[((b * S + s) * heads + h) * D + d];
  return r;
}

// Concatenates past [B, H, P, D] and new [B, H, S, D] along the sequence.
std::vector<double> with_past(const Tensor* past, const std::vector<double>& now, int64_t B, int64_t H, int64_t P,
                              int64_t S, int64_t D) {
  std::vector<double> r(B * H * (P + S) * D);
  for (int64_t bh = 0; bh < B * H; ++bh) {
    for (int64_t p = 0; p < P; ++p)
      for (int64_t d = 0; d < D; ++d) r[(bh * (P + S) + p) * D + d] = past->data<float>()[(bh * P + p) * D + d];
    for (int64_t s = 0; s < S; ++s)
      for (int64_t d = 0; d < D; ++d) r[(bh * (P + S) + P + s) * D + d] = now[(bh * S + s) * D + d];
  }
  return r;
}

Tensor as_tensor(const std::vector<double>& v, const std::vector<int64_t>& shape) {
  Tensor t(DType::Float32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(v[i]);
  return t;
}

TEST(LlmOps, AttentionMatchesReference) {
  const AttnCase cases[] = {
      {"4-D plain", false, 2, 3, 3, 5, 5, 0, 8, 8, false, 0},
      {"4-D causal, longer keys", false, 1, 2, 2, 4, 7, 0, 16, 8, true, 0},
      {"3-D grouped-query, causal, past, bool mask with an empty row", true, 2, 4, 2, 5, 5, 3, 8, 6, true, 1},
      {"3-D float mask, scale", true, 1, 2, 1, 6, 6, 0, 4, 4, false, 2, 0.3f},
      {"4-D softcap, past", false, 1, 2, 2, 3, 3, 2, 8, 8, false, 0, 0, 1.5f},
  };
  std::mt19937 rng(23);
  for (const AttnCase& c : cases) {
    SCOPED_TRACE(c.name);
    const int64_t T = c.past + c.kv_len;
    ModelBuilder m(23);
    const std::vector<int64_t> qs = c.three_d ? std::vector<int64_t>{c.batch, c.q_len, c.q_heads * c.head}
                                              : std::vector<int64_t>{c.batch, c.q_heads, c.q_len, c.head};
    const std::vector<int64_t> ks = c.three_d ? std::vector<int64_t>{c.batch, c.kv_len, c.kv_heads * c.head}
                                              : std::vector<int64_t>{c.batch, c.kv_heads, c.kv_len, c.head};
    const std::vector<int64_t> vs = c.three_d ? std::vector<int64_t>{c.batch, c.kv_len, c.kv_heads * c.v_head}
                                              : std::vector<int64_t>{c.batch, c.kv_heads, c.kv_len, c.v_head};
    Tensor q = random_tensor(qs, rng, -2, 2), k = random_tensor(ks, rng, -2, 2), v = random_tensor(vs, rng);
    std::map<std::string, Tensor> feeds{{"q", q}, {"k", k}, {"v", v}};
    m.input("q", DType::Float32, qs).input("k", DType::Float32, ks).input("v", DType::Float32, vs);
    std::vector<std::string> ins{"q", "k", "v", "", "", ""};
    Tensor mask;
    if (c.mask == 1) {
      mask = Tensor(DType::Bool, {c.batch, 1, c.q_len, T});
      for (int64_t i = 0; i < mask.numel(); ++i) mask.data<uint8_t>()[i] = rng() % 4 != 0;
      for (int64_t j = 0; j < T; ++j) mask.data<uint8_t>()[(1 * c.q_len + 2) * T + j] = 0;  // batch 1, row 2: no key
      m.input("m", DType::Bool, mask.shape);
      feeds["m"] = mask;
      ins[3] = "m";
    } else if (c.mask == 2) {
      mask = random_tensor({c.q_len, T}, rng, -3, 1);
      m.input("m", DType::Float32, mask.shape);
      feeds["m"] = mask;
      ins[3] = "m";
    }
    Tensor pk, pv;
    if (c.past > 0) {
      pk = random_tensor({c.batch, c.kv_heads, c.past, c.head}, rng, -2, 2);
      pv = random_tensor({c.batch, c.kv_heads, c.past, c.v_head}, rng);
      m.input("pk", DType::Float32, pk.shape).input("pv", DType::Float32, pv.shape);
      feeds["pk"] = pk;
      feeds["pv"] = pv;
      ins[4] = "pk";
      ins[5] = "pv";
    }
    while (ins.back().empty()) ins.pop_back();
    auto& n = m.node("Attention", ins, {"y", "present_k", "present_v"});
    if (c.causal) attr_i(n, "is_causal", 1);
    if (c.three_d) {
      attr_i(n, "q_num_heads", c.q_heads);
      attr_i(n, "kv_num_heads", c.kv_heads);
    }
    if (c.scale > 0) attr_f(n, "scale", c.scale);
    if (c.softcap > 0) attr_f(n, "softcap", c.softcap);
    m.output("y").output("present_k").output("present_v");
    auto s = open_session(m);
    auto out = s.run(feeds);
    const std::vector<double> k4 = with_past(c.past ? &pk : nullptr, heads_of(k, c.three_d, c.kv_heads), c.batch,
                                             c.kv_heads, c.past, c.kv_len, c.head);
    const std::vector<double> v4 = with_past(c.past ? &pv : nullptr, heads_of(v, c.three_d, c.kv_heads), c.batch,
                                             c.kv_heads, c.past, c.kv_len, c.v_head);
    std::vector<double> y = reference_attention(c, heads_of(q, c.three_d, c.q_heads), k4, v4, c.mask ? &mask : nullptr);
    Tensor want(DType::Float32, out.at("y").shape);
    if (c.three_d) {
      ASSERT_EQ(out.at("y").shape, (std::vector<int64_t>{c.batch, c.q_len, c.q_heads * c.v_head}));
      for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t h = 0; h < c.q_heads; ++h)
          for (int64_t i = 0; i < c.q_len; ++i)
            for (int64_t d = 0; d < c.v_head; ++d)
              want.data<float>()[((b * c.q_len + i) * c.q_heads + h) * c.v_head + d] =
                  static_cast<float>(y[((b * c.q_heads + h) * c.q_len + i) * c.v_head + d]);
    } else {
      want = as_tensor(y, {c.batch, c.q_heads, c.q_len, c.v_head});
    }
    EXPECT_LE(rel_error(out.at("y"), want), 2e-5);
    EXPECT_LE(rel_error(out.at("present_k"), as_tensor(k4, {c.batch, c.kv_heads, T, c.head})), 1e-6);
    EXPECT_LE(rel_error(out.at("present_v"), as_tensor(v4, {c.batch, c.kv_heads, T, c.v_head})), 1e-6);
    // The masked-out row is zeros, not NaN.
    if (c.mask == 1) {
      for (int64_t h = 0; h < c.q_heads; ++h)
        for (int64_t d = 0; d < c.v_head; ++d)
          EXPECT_EQ(out.at("y").data<float>()[((1 * c.q_len + 2) * c.q_heads + h) * c.v_head + d], 0.0f);
    }
    // Without softcap the chain becomes one FusedAttention kernel (float32 only).
    if (c.softcap == 0 && !fp16_mode()) {
      EXPECT_NE(s.dump("graph").find("+Softmax+"), std::string::npos) << s.dump("graph");
    }
  }
}

TEST(LlmOps, AttentionRefusesBadShapes) {
  ModelBuilder m(23);
  m.input("q", DType::Float32, {1, 4, 3, 8}).input("k", DType::Float32, {1, 3, 3, 8}).input("v", DType::Float32, {1, 3, 3, 8});
  m.node("Attention", {"q", "k", "v"}, {"y"});
  m.output("y");
  Tensor q(DType::Float32, {1, 4, 3, 8}), kv(DType::Float32, {1, 3, 3, 8});
  try {
    open_session(m).run({{"q", q}, {"k", kv}, {"v", kv}});
    FAIL() << "4 query heads over 3 key heads was accepted";
  } catch (const ocl_infer::Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of kv heads"), std::string::npos) << e.what();
  }
}

TEST(LlmOps, RotaryEmbeddingMatchesReference) {
  struct Case {
    bool three_d, interleaved, positions;
    int64_t dim;  // 0: the whole head
  };
  const int64_t B = 2, H = 3, S = 5, D = 8, max_pos = 12;
  std::mt19937 rng(7);
  int k = 0;
  for (const Case c : {Case{false, false, true, 0}, Case{false, true, true, 0}, Case{true, false, false, 0},
                       Case{true, true, true, 4}, Case{false, false, false, 6}}) {
    SCOPED_TRACE(std::to_string(k++));
    const int64_t rd = c.dim ? c.dim : D, half = rd / 2;
    const std::vector<int64_t> xs = c.three_d ? std::vector<int64_t>{B, S, H * D} : std::vector<int64_t>{B, H, S, D};
    Tensor x = random_tensor(xs, rng, -2, 2);
    const std::vector<int64_t> cs = c.positions ? std::vector<int64_t>{max_pos, half} : std::vector<int64_t>{B, S, half};
    Tensor cosc = random_tensor(cs, rng), sinc = random_tensor(cs, rng);
    Tensor pos(DType::Int64, {B, S});
    for (int64_t i = 0; i < pos.numel(); ++i) pos.data<int64_t>()[i] = static_cast<int64_t>(rng() % max_pos);
    ModelBuilder m(23);
    m.input("x", DType::Float32, xs).output("y").initializer("cos", cosc).initializer("sin", sinc);
    std::vector<std::string> ins{"x", "cos", "sin"};
    if (c.positions) {
      m.input("pos", DType::Int64, {B, S});
      ins.push_back("pos");
    }
    auto& n = m.node("RotaryEmbedding", ins, {"y"});
    if (c.interleaved) attr_i(n, "interleaved", 1);
    if (c.dim) attr_i(n, "rotary_embedding_dim", c.dim);
    if (c.three_d) attr_i(n, "num_heads", H);
    std::map<std::string, Tensor> feeds{{"x", x}};
    if (c.positions) feeds["pos"] = pos;
    Tensor got = run_model(m, feeds).at("y");
    Tensor want = x;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t h = 0; h < H; ++h) {
          auto at = [&](int64_t d) { return c.three_d ? ((b * S + s) * H + h) * D + d : ((b * H + h) * S + s) * D + d; };
          const int64_t row = c.positions ? pos.data<int64_t>()[b * S + s] : b * S + s;
          for (int64_t i = 0; i < half; ++i) {
            const int64_t i1 = c.interleaved ? 2 * i : i, i2 = c.interleaved ? 2 * i + 1 : i + half;
            const double co = cosc.data<float>()[row * half + i], si = sinc.data<float>()[row * half + i];
            const double x1 = x.data<float>()[at(i1)], x2 = x.data<float>()[at(i2)];
            want.data<float>()[at(i1)] = static_cast<float>(co * x1 - si * x2);
            want.data<float>()[at(i2)] = static_cast<float>(si * x1 + co * x2);
          }
        }
    EXPECT_LE(rel_error(got, want), 1e-6);
  }
}

}  // namespace
