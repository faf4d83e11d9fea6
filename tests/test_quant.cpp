// Quantization ops against CPU references written from the ONNX spec (round half to even,
// saturation) and ONNX Runtime's requantization formula: QuantizeLinear / DequantizeLinear
// (per tensor, per axis), QLinearConv, ConvInteger, QLinearMatMul, MatMulInteger, the
// com.microsoft QLinear* ops, the fuse_qdq pass (fused vs unfused graphs), and bad parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "model_builder.hpp"

using namespace testing_util;
using ocl_infer::DType;
using ocl_infer::Tensor;

namespace {

int qlo(DType t) { return t == DType::Int8 ? -128 : 0; }
int qhi(DType t) { return t == DType::Int8 ? 127 : 255; }

int64_t geti(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DType::Int8: return t.data<int8_t>()[i];
    case DType::UInt8: return t.data<uint8_t>()[i];
    case DType::Int32: return t.data<int32_t>()[i];
    default: ADD_FAILURE() << "geti: unexpected type"; return 0;
  }
}
void seti(Tensor& t, int64_t i, int64_t v) {
  switch (t.dtype) {
    case DType::Int8: t.data<int8_t>()[i] = static_cast<int8_t>(v); break;
    case DType::UInt8: t.data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
    case DType::Int32: t.data<int32_t>()[i] = static_cast<int32_t>(v); break;
    default: ADD_FAILURE() << "seti: unexpected type";
  }
}

// ONNX QuantizeLinear of one value: saturate(round_half_even(x / s) + z).
int64_t quantize_ref(float x, float s, int z, DType t) {
  const float r = std::nearbyint(x / s) + static_cast<float>(z);
  if (std::isnan(r)) return qlo(t);
  return static_cast<int64_t>(std::min<float>(std::max<float>(r, qlo(t)), qhi(t)));
}

// ONNX Runtime's requantization of an int32 sum: round((acc) * (xs * ws / ys)) + yz, saturated.
int64_t requant_ref(int64_t acc, float xs, float ws, float ys, int yz, DType t, bool relu) {
  const float m = xs * ws / ys;
  float v = static_cast<float>(acc) * m;
  if (relu) v = std::max(v, 0.0f);
  v = std::min<float>(std::max<float>(v, static_cast<float>(qlo(t) - yz)), static_cast<float>(qhi(t) - yz));
  return static_cast<int64_t>(std::nearbyint(v)) + yz;
}

Tensor random_q(DType t, const std::vector<int64_t>& shape, std::mt19937& rng) {
  Tensor r(t, shape);
  std::uniform_int_distribution<int> d(qlo(t), qhi(t));
  for (int64_t i = 0; i < r.numel(); ++i) seti(r, i, d(rng));
  return r;
}

Tensor scalar_f(float v) {
  Tensor t(DType::Float32, {});
  t.data<float>()[0] = v;
  return t;
}
Tensor scalar_q(DType t, int v) {
  Tensor r(t, {});
  seti(r, 0, v);
  return r;
}
Tensor floats(const std::vector<float>& v) {
  Tensor t(DType::Float32, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = v[i];
  return t;
}

// Standalone QuantizeLinear / DequantizeLinear kernels in a plan dump.
size_t qdq_launches(const std::string& plan) {
  size_t n = 0;
  for (const char* k : {"ew_ternary", "quant:quantize_linear", "quant:dequantize_linear"})
    for (size_t at = 0; (at = plan.find(k, at)) != std::string::npos; ++at) ++n;
  return n;
}

// Count of exact mismatches between two integer tensors (shapes and types must match).
int64_t mismatches(const Tensor& a, const Tensor& b, int64_t* first = nullptr) {
  if (a.shape != b.shape || a.dtype != b.dtype) return -1;
  int64_t n = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (geti(a, i) != geti(b, i)) {
      if (n == 0 && first) *first = i;
      ++n;
    }
  return n;
}

}  // namespace

TEST(Quant, QuantizeAndDequantizeMatchTheSpec) {
  std::mt19937 rng(11);
  const std::vector<int64_t> shape{2, 3, 5, 7};
  Tensor x = random_tensor(shape, rng, -3, 3);
  // Ties (k + 0.5 steps), values past both ends, zero, NaN and infinities.
  const float specials[] = {0.05f, 0.15f, -0.05f, -0.25f, 100.0f, -100.0f, 0.0f, NAN, INFINITY, -INFINITY};
  for (int i = 0; i < 10; ++i) x.data<float>()[i * 7] = specials[i];
  for (DType t : {DType::UInt8, DType::Int8}) {
    for (int axis : {-1, 1, 3}) {  // -1 here means per tensor
      SCOPED_TRACE(std::string(ocl_infer::dtype_name(t)) + " axis " + std::to_string(axis));
      const int64_t count = axis < 0 ? 1 : shape[static_cast<size_t>(axis)];
      std::vector<float> s(static_cast<size_t>(count));
      Tensor z(t, axis < 0 ? std::vector<int64_t>{} : std::vector<int64_t>{count});
      for (int64_t c = 0; c < count; ++c) {
        s[static_cast<size_t>(c)] = 0.1f * static_cast<float>(c + 1);
        seti(z, c, t == DType::Int8 ? static_cast<int>(c) - 2 : 120 + static_cast<int>(c));
      }
      Tensor st = axis < 0 ? scalar_f(s[0]) : floats(s);
      ModelBuilder m(13);
      m.input("x", DType::Float32, shape).initializer("s", st).initializer("z", z);
      auto& q = m.node("QuantizeLinear", {"x", "s", "z"}, {"q"});
      auto& d = m.node("DequantizeLinear", {"q", "s", "z"}, {"y"});
      if (axis >= 0) attr_i(q, "axis", axis), attr_i(d, "axis", axis);
      m.output("q").output("y");
      auto out = run_model(m, {{"x", x}});
      int64_t inner = 1;
      for (size_t k = static_cast<size_t>(std::max(axis, 0)) + 1; k < shape.size() && axis >= 0; ++k) inner *= shape[k];
      int64_t bad_q = 0, bad_y = 0;
      for (int64_t i = 0; i < x.numel(); ++i) {
        const int64_t c = axis < 0 ? 0 : (i / inner) % count;
        const int zc = static_cast<int>(geti(z, c));
        const int64_t want = quantize_ref(x.data<float>()[i], s[static_cast<size_t>(c)], zc, t);
        bad_q += geti(out["q"], i) != want;
        const float y = static_cast<float>(want - zc) * s[static_cast<size_t>(c)];
        bad_y += out["y"].data<float>()[i] != y;
      }
      EXPECT_EQ(out["q"].dtype, t);
      EXPECT_EQ(bad_q, 0) << "quantized values differ from saturate(round_half_even(x / s) + z)";
      EXPECT_EQ(bad_y, 0) << "dequantized values differ from (q - z) * s";
    }
  }
}

TEST(Quant, DequantizeInt32AndDefaultZeroPoint) {
  std::mt19937 rng(3);
  Tensor b = random_q(DType::Int8, {17}, rng);
  Tensor b32(DType::Int32, {17});
  for (int64_t i = 0; i < 17; ++i) seti(b32, i, geti(b, i) * 100003);
  ModelBuilder m(13);
  m.input("b", DType::Int32, {17}).initializer("s", scalar_f(0.001f));
  m.node("DequantizeLinear", {"b", "s"}, {"y"});
  m.output("y");
  auto out = run_model(m, {{"b", b32}});
  for (int64_t i = 0; i < 17; ++i)
    EXPECT_EQ(out["y"].data<float>()[i], static_cast<float>(geti(b32, i)) * 0.001f) << i;
}

namespace {

struct QConvCase {
  int64_t N, C, H, W, M, k, stride, pad, dil, group;
  DType xt, wt;
  bool per_channel, bias, relu;
};

// QLinearConv (or, with int32 output, ConvInteger) computed in integers from the spec.
Tensor qconv_ref(const QConvCase& c, const Tensor& x, int xz, float xs, const Tensor& w, const std::vector<int>& wz,
                 const std::vector<float>& ws, float ys, int yz, DType yt, const Tensor* bias) {
  const int64_t OH = (c.H + 2 * c.pad - c.dil * (c.k - 1) - 1) / c.stride + 1;
  const int64_t OW = (c.W + 2 * c.pad - c.dil * (c.k - 1) - 1) / c.stride + 1;
  const int64_t Cg = c.C / c.group, Mg = c.M / c.group;
  Tensor y(yt, {c.N, c.M, OH, OW});
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          int64_t acc = bias ? geti(*bias, m) : 0;
          const int64_t g = m / Mg;
          const int zw = wz[wz.size() == 1 ? 0 : static_cast<size_t>(m)];
          for (int64_t ci = 0; ci < Cg; ++ci)
            for (int64_t kh = 0; kh < c.k; ++kh)
              for (int64_t kw = 0; kw < c.k; ++kw) {
                const int64_t ih = oh * c.stride - c.pad + kh * c.dil, iw = ow * c.stride - c.pad + kw * c.dil;
                if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
                const int64_t xv = geti(x, ((n * c.C + g * Cg + ci) * c.H + ih) * c.W + iw) - xz;
                const int64_t wv = geti(w, ((m * Cg + ci) * c.k + kh) * c.k + kw) - zw;
                acc += xv * wv;
              }
          const int64_t o = ((n * c.M + m) * OH + oh) * OW + ow;
          if (yt == DType::Int32) seti(y, o, acc);
          else seti(y, o, requant_ref(acc, xs, ws[ws.size() == 1 ? 0 : static_cast<size_t>(m)], ys, yz, yt, c.relu));
        }
  return y;
}

// Strides, pads, dilations and group of `c` on a conv node.
template <typename NodeT>
void set_conv_attrs(NodeT& n, const QConvCase& c) {
  attr_ints(n, "strides", {c.stride, c.stride});
  attr_ints(n, "pads", {c.pad, c.pad, c.pad, c.pad});
  attr_ints(n, "dilations", {c.dil, c.dil});
  attr_i(n, "group", c.group);
}

// The QLinearConv of `c` as a model: input "x", output "y" (not yet declared), its parameters as
// initializers "xs", "xz", "w", "ws", "wz", "ys", "yz", "b" (the bias used when c.bias).
ModelBuilder qconv_model(const QConvCase& c, const Tensor& w, const Tensor& wz, const std::vector<float>& ws,
                         int xz, float xs, float ys, int yz, const Tensor& bias) {
  ModelBuilder m(13);
  m.input("x", c.xt, {c.N, c.C, c.H, c.W})
      .initializer("xs", scalar_f(xs))
      .initializer("xz", scalar_q(c.xt, xz))
      .initializer("w", w)
      .initializer("ws", c.per_channel ? floats(ws) : scalar_f(ws[0]))
      .initializer("wz", wz)
      .initializer("ys", scalar_f(ys))
      .initializer("yz", scalar_q(DType::UInt8, yz))
      .initializer("b", bias);
  std::vector<std::string> ins{"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"};
  if (c.bias) ins.push_back("b");
  set_conv_attrs(m.node("QLinearConv", ins, {"y"}), c);
  return m;
}

}  // namespace

// Runs `m` on `feeds` under each kernel-variant request ("" is the device's own choice) and
// expects its outputs "y" and "acc" (the raw int32 sums of `raw`) to equal the references exactly.
void expect_exact_under(const ModelBuilder& m, const std::map<std::string, Tensor>& feeds,
                        const std::vector<const char*>& variants, const Tensor& want, const Tensor& want_acc,
                        const std::string& raw) {
  for (const char* variant : variants) {
    SCOPED_TRACE(variant);
    ocl_infer::SessionOptions opt;
    opt.kernel_variants = variant;
    auto out = open_session(m, opt).run(feeds);
    int64_t first = -1;
    EXPECT_EQ(mismatches(out["y"], want, &first), 0) << "first at " << first;
    EXPECT_EQ(mismatches(out["acc"], want_acc, &first), 0) << raw << ", first at " << first;
  }
}

// QLinearConv (and the same conv as ConvInteger: raw int32 sums, weights as a graph input) on case
// `c` under each of `variants` (kernel-variant requests; "" is the device's own choice), against
// the integer reference.
void expect_qconv_matches(const QConvCase& c, const std::vector<const char*>& variants, std::mt19937& rng) {
  SCOPED_TRACE("C=" + std::to_string(c.C) + " M=" + std::to_string(c.M) + " k=" + std::to_string(c.k) +
               " group=" + std::to_string(c.group) + " " + std::to_string(c.H) + "x" + std::to_string(c.W));
  Tensor x = random_q(c.xt, {c.N, c.C, c.H, c.W}, rng);
  Tensor w = random_q(c.wt, {c.M, c.C / c.group, c.k, c.k}, rng);
  const int xz = c.xt == DType::UInt8 ? 131 : -3;
  const float xs = 0.02f, ys = 0.37f;
  const int yz = 117;
  std::vector<float> ws(c.per_channel ? static_cast<size_t>(c.M) : 1);
  std::vector<int> wz(ws.size());
  Tensor wzt(c.wt, c.per_channel ? std::vector<int64_t>{c.M} : std::vector<int64_t>{});
  for (size_t i = 0; i < ws.size(); ++i) {
    ws[i] = 0.003f * static_cast<float>(i % 7 + 1);
    wz[i] = c.wt == DType::Int8 ? static_cast<int>(i % 3) - 1 : 128 + static_cast<int>(i % 5);
    seti(wzt, static_cast<int64_t>(i), wz[i]);
  }
  Tensor bias(DType::Int32, {c.M});
  for (int64_t i = 0; i < c.M; ++i) seti(bias, i, static_cast<int64_t>(rng() % 20001) - 10000);
  ModelBuilder m = qconv_model(c, w, wzt, ws, xz, xs, ys, yz, bias);
  m.input("wi", c.wt, w.shape);
  set_conv_attrs(m.node("ConvInteger", {"x", "wi", "xz", "wz"}, {"acc"}), c);
  m.output("y").output("acc");
  Tensor want = qconv_ref(c, x, xz, xs, w, wz, ws, ys, yz, DType::UInt8, c.bias ? &bias : nullptr);
  Tensor want_acc = qconv_ref(c, x, xz, xs, w, wz, ws, ys, yz, DType::Int32, nullptr);
  expect_exact_under(m, {{"x", x}, {"wi", w}}, variants, want, want_acc, "ConvInteger");
}

// Every variant of the qconv family on the cases it is made for, with the extreme values of its
// parameters (each combination is a program build: a cold run of all of them on all cases took
// 3.5 min).
TEST(Quant, QLinearConvMatchesIntegerReference) {
  std::mt19937 rng(5);
  const std::vector<std::pair<QConvCase, std::vector<const char*>>> cases = {
      {{1, 3, 9, 11, 8, 3, 1, 1, 1, 1, DType::UInt8, DType::Int8, true, true, false},
       {"", "qconv=packed:ocb=4,owb=1", "qconv=packed:ocb=16,owb=16", "qconv=tiled",
        "qconv=tiled:ts=16,rm=1,rn=1,tk=4", "qconv=tiled:ts=64,rm=4,rn=4,tk=16"}},
      {{2, 6, 7, 5, 6, 3, 2, 1, 1, 3, DType::UInt8, DType::Int8, true, true, false},
       {"", "qconv=tiled:ts=16,rm=2,rn=1,tk=8"}},
      {{1, 8, 13, 13, 8, 3, 1, 1, 1, 8, DType::UInt8, DType::Int8, true, true, false},  // depthwise
       {"", "qconv=depthwise:owb=4", "qconv=depthwise:owb=16", "qconv=tiled"}},
      {{1, 5, 6, 17, 19, 1, 1, 0, 1, 1, DType::Int8, DType::Int8, false, false, false},  // pointwise
       {"", "qconv=pointwise:ocb=4,pxb=8", "qconv=pointwise:ocb=16,pxb=16"}},
      {{1, 4, 11, 9, 5, 3, 1, 2, 2, 1, DType::Int8, DType::UInt8, false, true, false},  // dilated
       {"", "qconv=packed:ocb=8,owb=2"}},
      {{1, 3, 10, 10, 17, 5, 3, 2, 1, 1, DType::UInt8, DType::UInt8, true, false, false}, {""}},
      {{1, 6, 14, 17, 6, 3, 3, 1, 1, 6, DType::UInt8, DType::Int8, true, true, false}, {""}},  // depthwise, stride 3
  };
  for (const auto& [c, variants] : cases) expect_qconv_matches(c, variants, rng);
}

// The 8-bit depthwise conv's two input paths (ring=1: rows converted into private memory, the
// CPU-shaped default; ring=0: a padded copy in global memory) on the geometries that select their
// branches. Its own ctest entry (test_quant_depthwise): program builds per row geometry.
TEST(Quant, DepthwiseMatchesIntegerReference) {
  std::mt19937 rng(7);
  const std::vector<std::pair<QConvCase, std::vector<const char*>>> cases = {
      {{1, 8, 13, 13, 8, 3, 1, 1, 1, 8, DType::UInt8, DType::Int8, true, true, false},
       {"qconv=depthwise:owb=8,ring=0"}},
      // int8 input, rows wide enough for the float copy's vector path
      {{1, 4, 9, 37, 4, 3, 2, 1, 1, 4, DType::Int8, DType::Int8, true, true, false},
       {"", "qconv=depthwise:owb=4", "qconv=depthwise:owb=16,ring=0"}},
      // bands of rows (3 large planes: 6 bands of 12 rows, the last shorter) and 2 channels per
      // work-item (67 small planes: the last work-item has one), on CPU-shaped devices
      {{1, 3, 70, 66, 3, 3, 1, 1, 1, 3, DType::UInt8, DType::Int8, true, true, false},
       {"", "qconv=depthwise:owb=4,ring=0"}},
      {{1, 67, 5, 5, 67, 3, 1, 1, 1, 67, DType::UInt8, DType::Int8, true, true, false},
       {"", "qconv=depthwise:owb=8,ring=0"}},
      // dilation 2 (the ring holds (KH - 1) * DH + 1 rows), stride 2, batch 2 (planes of both
      // images), a 5x5 window with padding 2 and a 1-pixel-wide output
      {{1, 5, 12, 20, 5, 3, 1, 2, 2, 5, DType::UInt8, DType::Int8, true, true, false},
       {"", "qconv=depthwise:owb=4,ring=0"}},
      {{2, 6, 11, 19, 6, 3, 2, 1, 1, 6, DType::Int8, DType::Int8, true, true, false},
       {"", "qconv=depthwise:owb=16,ring=0"}},
      {{1, 4, 9, 1, 4, 5, 1, 2, 1, 4, DType::UInt8, DType::Int8, true, false, false},
       {"", "qconv=depthwise:owb=8,ring=0"}},
  };
  for (const auto& [c, variants] : cases) expect_qconv_matches(c, variants, rng);
}

// With ring=0 the 8-bit depthwise kernel reads a padded copy of its input: x - x_zero as floats up
// to 2^22 elements (ops/quant_ops.cpp, kFloatCopyLimit), the 8-bit values beyond. The cases above
// take the float copy; this one (16 x 522 x 528 padded elements, strides 1 and 2) the 8-bit one;
// the ring kernel (ring=1) on wide rows too. Not run under oclgrind (4M-element convs). On Mesa
// 22.3's llvmpipe (OCL_INFER_ALLOW_LOOP_LIMIT=1) ring=1 fails from row 94: a work-item's 520-row
// band passes the driver's 65,535-iteration loop limit (oclgrind gives the right values).
TEST(Quant, DepthwiseLargeMatchesIntegerReference) {
  std::mt19937 rng(9);
  for (int64_t stride : {1, 2}) {
    SCOPED_TRACE("stride " + std::to_string(stride));
    const QConvCase c{1, 16, 520, 520, 16, 3, stride, 1, 1, 16, DType::UInt8, DType::Int8, true, true, false};
    Tensor x = random_q(c.xt, {c.N, c.C, c.H, c.W}, rng);
    Tensor w = random_q(c.wt, {c.M, 1, c.k, c.k}, rng);
    const int xz = 129, yz = 121;
    const float xs = 0.02f, ys = 0.11f;
    std::vector<float> ws(c.M);
    std::vector<int> wz(c.M, 0);
    Tensor wzt(c.wt, {c.M});
    for (int64_t i = 0; i < c.M; ++i) {
      ws[i] = 0.002f * static_cast<float>(i % 5 + 1);
      wz[i] = static_cast<int>(i % 3) - 1;
      seti(wzt, i, wz[i]);
    }
    Tensor bias(DType::Int32, {c.M});
    for (int64_t i = 0; i < c.M; ++i) seti(bias, i, static_cast<int64_t>(rng() % 20001) - 10000);
    ModelBuilder m = qconv_model(c, w, wzt, ws, xz, xs, ys, yz, bias);
    m.output("y");
    const Tensor want = qconv_ref(c, x, xz, xs, w, wz, ws, ys, yz, DType::UInt8, &bias);
    for (const char* variant : {"qconv=depthwise:owb=16,ring=0", "qconv=depthwise:owb=16,ring=1"}) {
      SCOPED_TRACE(variant);
      ocl_infer::SessionOptions opt;
      opt.kernel_variants = variant;
      auto out = open_session(m, opt).run({{"x", x}});
      int64_t first = -1;
      EXPECT_EQ(mismatches(out["y"], want, &first), 0) << "first at " << first;
    }
  }
}

namespace {

// Whether the runtime should offer the x86 VNNI conv here, judged independently of it: the device
// the tests run on (test_device(): $OCL_INFER_DEVICE or the default) is PoCL's CPU driver, this host's CPU reports AVX512F, AVX512BW and AVX512_VNNI with the
// OS saving zmm state, and OCL_INFER_VNNI is not 0.
bool expect_vnni() {
#if defined(__x86_64__)
  const char* env = std::getenv("OCL_INFER_VNNI");
  if (env && std::string(env) == "0") return false;
  const ocl_infer::DeviceInfo& dev = test_device();
  if (dev.type != "CPU" || dev.platform != "Portable Computing Language") return false;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;
  unsigned lo = 0, hi = 0;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & 0xe6) != 0xe6 || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return (b & (1u << 16)) && (b & (1u << 30)) && (c & (1u << 11));
#else
  return false;
#endif
}

}  // namespace

namespace {

struct GroupedConvCase {
  QConvCase c;
  int extremes;        // 0: random values; 1: only the extreme values of x and w
  bool w_fits = true;  // uint8 weights drawn within [wz - 128, wz + 127]
};

// A QLinearConv and a ConvInteger of the same constant weights for `k` (outputs y and acc), an
// input and both outputs from the integer reference.
struct GroupedConvProblem {
  ModelBuilder m;
  Tensor x, want, want_acc;
};
GroupedConvProblem grouped_conv_problem(const GroupedConvCase& k, std::mt19937& rng) {
  const QConvCase& c = k.c;
  Tensor x = random_q(c.xt, {c.N, c.C, c.H, c.W}, rng);
  Tensor w = random_q(c.wt, {c.M, c.C / c.group, c.k, c.k}, rng);
  std::vector<float> ws(c.per_channel ? static_cast<size_t>(c.M) : 1);
  std::vector<int> wz(ws.size());
  Tensor wzt(c.wt, c.per_channel ? std::vector<int64_t>{c.M} : std::vector<int64_t>{});
  for (size_t i = 0; i < ws.size(); ++i) {
    ws[i] = 0.0002f * static_cast<float>(i % 7 + 1);
    wz[i] = c.wt == DType::Int8 ? 0 : 126 + static_cast<int>(i % 5);
    seti(wzt, static_cast<int64_t>(i), wz[i]);
  }
  const int64_t per_m = w.numel() / c.M;
  for (int64_t i = 0; i < w.numel(); ++i) {
    const int z = wz[ws.size() == 1 ? 0 : static_cast<size_t>(i / per_m)];
    if (k.extremes) seti(w, i, rng() % 2 ? qhi(c.wt) : qlo(c.wt));
    else if (c.wt == DType::UInt8 && k.w_fits) seti(w, i, std::clamp(z - 128 + static_cast<int>(rng() % 256), 0, 255));
  }
  if (c.wt == DType::UInt8 && !k.w_fits) seti(w, 1, 255);  // 255 - 126 = 129: beyond a signed byte
  if (k.extremes)
    for (int64_t i = 0; i < x.numel(); ++i) seti(x, i, rng() % 2 ? qhi(c.xt) : qlo(c.xt));
  const int xz = c.xt == DType::UInt8 ? 7 : -100;
  const float xs = 0.02f, ys = 0.37f;
  const int yz = 117;
  Tensor bias(DType::Int32, {c.M});
  for (int64_t i = 0; i < c.M; ++i) seti(bias, i, static_cast<int64_t>(rng() % 20001) - 10000);
  ModelBuilder m = qconv_model(c, w, wzt, ws, xz, xs, ys, yz, bias);
  set_conv_attrs(m.node("ConvInteger", {"x", "w", "xz", "wz"}, {"acc"}), c);
  m.output("y").output("acc");
  Tensor want = qconv_ref(c, x, xz, xs, w, wz, ws, ys, yz, DType::UInt8, c.bias ? &bias : nullptr);
  Tensor want_acc = qconv_ref(c, x, xz, xs, w, wz, ws, ys, yz, DType::Int32, nullptr);
  return {std::move(m), std::move(x), std::move(want), std::move(want_acc)};
}

std::string describe(const GroupedConvCase& k) {
  const QConvCase& c = k.c;
  return "C=" + std::to_string(c.C) + " M=" + std::to_string(c.M) + " k=" + std::to_string(c.k) +
         " stride=" + std::to_string(c.stride) + " group=" + std::to_string(c.group) + (k.extremes ? " extremes" : "") +
         (k.w_fits ? "" : " (weights beyond int8)");
}

// Runs the problem with `variant` forced; both outputs must match bit for bit, and `kernel` must
// run `launches` times (QLinearConv and ConvInteger: 2 where the variant applies).
void expect_grouped_conv(const GroupedConvProblem& p, const std::string& variant, const std::string& kernel,
                         int launches) {
  SCOPED_TRACE(variant);
  ocl_infer::SessionOptions opt;
  opt.kernel_variants = variant;
  opt.profiling = true;
  auto s = open_session(p.m, opt);
  auto out = s.run({{"x", p.x}});
  int64_t first = -1;
  EXPECT_EQ(mismatches(out["y"], p.want, &first), 0) << "first at " << first;
  EXPECT_EQ(mismatches(out["acc"], p.want_acc, &first), 0) << "ConvInteger, first at " << first;
  int used = 0;
  for (const auto& r : s.profile()) used += r.kernel == kernel;
  EXPECT_EQ(used, launches) << "launches of " << kernel << " (QLinearConv and ConvInteger)";
}

// Channel counts that are no multiple of 2, 4, 8 or 16, groups, strides, dilations, padding,
// batches, int8 and uint8 inputs, the extreme values of both operands over a long reduction, and
// uint8 weights within and beyond the signed byte range.
const GroupedConvCase kGroupedConvCases[] = {
    {{2, 5, 9, 13, 37, 3, 1, 1, 1, 1, DType::UInt8, DType::Int8, true, true, false}, 0},
    {{1, 12, 10, 11, 20, 3, 2, 2, 2, 2, DType::Int8, DType::Int8, true, true, false}, 0},
    {{1, 64, 7, 7, 64, 1, 1, 0, 1, 1, DType::UInt8, DType::Int8, false, false, false}, 0},
    // 1x1 with more than 256 groups of 4 input channels: qconv_vnni_pw_x's private copy would
    // not hold them, so the packed kernel runs (and the direct one is not launched).
    {{1, 1030, 3, 5, 20, 1, 1, 0, 1, 1, DType::Int8, DType::Int8, true, true, false}, 0},
    // ... and exactly 256 groups: the direct kernel with its largest private copy (pxv=4 below).
    {{1, 1024, 3, 5, 20, 1, 1, 0, 1, 1, DType::UInt8, DType::Int8, true, true, false}, 0},
    {{2, 12, 5, 7, 40, 1, 1, 0, 1, 2, DType::Int8, DType::Int8, true, true, false}, 0},
    {{1, 3, 17, 19, 16, 7, 2, 3, 1, 1, DType::UInt8, DType::Int8, true, true, false}, 0},
    {{1, 256, 5, 6, 33, 3, 1, 1, 1, 1, DType::UInt8, DType::Int8, true, true, false}, 1},
    {{1, 256, 5, 6, 17, 3, 1, 1, 1, 1, DType::Int8, DType::Int8, false, true, false}, 1},
    {{1, 8, 6, 6, 24, 3, 1, 1, 1, 1, DType::UInt8, DType::UInt8, true, true, false}, 0, true},
    {{1, 8, 6, 6, 24, 3, 1, 1, 1, 1, DType::UInt8, DType::UInt8, true, true, false}, 0, false},
    // Stride 1 along rows (vnni_rows): rows of 35 columns (a partial third vector) with dilation 2,
    // 2 groups of 8 channels over rows of 48 columns (whole vectors), 11 rows (ragged
    // row blocks).
    {{1, 20, 11, 37, 24, 3, 1, 1, 2, 1, DType::UInt8, DType::Int8, true, true, false}, 0},
    {{2, 16, 7, 50, 16, 3, 1, 0, 1, 2, DType::Int8, DType::Int8, false, true, false}, 0},
    // Strided 1x1s (ResNets' downsampling; vnni_rows with stride 2) on rows of 35 and 9 columns,
    // a strided 3x3 on rows of 32.
    {{1, 24, 9, 70, 40, 1, 2, 0, 1, 1, DType::UInt8, DType::Int8, true, true, false}, 0},
    {{1, 8, 4, 17, 16, 1, 2, 0, 1, 1, DType::Int8, DType::Int8, true, true, false}, 1},
    {{1, 12, 6, 64, 20, 3, 2, 1, 1, 1, DType::UInt8, DType::Int8, true, true, false}, 0},
};

bool is_pointwise(const QConvCase& c) { return c.k == 1 && c.stride == 1 && c.pad == 0; }

}  // namespace

// The vpdpbusd convs (qconv=vnni, vnni_pw for 1x1, vnni_rows for strides 1 and 2) against the
// integer reference, bit for bit,
// on every case and every register-block shape, with ConvInteger's raw sums from constant weights.
// uint8 weights whose w - w_zero leaves the signed byte range must fall back to another variant
// with the same results.
TEST(Quant, VnniConvMatchesIntegerReference) {
  const bool vnni = expect_vnni();
  if (!vnni) std::cout << "no AVX-512 VNNI on this device: checking the fallback only\n";
  std::mt19937 rng(17);
  for (const GroupedConvCase& k : kGroupedConvCases) {
    SCOPED_TRACE(describe(k));
    const GroupedConvProblem p = grouped_conv_problem(k, rng);
    // The defaults and, spread over the cases, the extreme register blocks (each one a program
    // build); without VNNI every forced variant falls back to the same kernel, so once is enough
    // (this test under oclgrind).
    static const char* kBlocks[] = {"qconv=vnni:owb=4,ocv=1", "qconv=vnni:owb=16,ocv=1", "qconv=vnni:owb=7,ocv=4",
                                    "qconv=vnni:owb=14,ocv=2"};
    const int launches = vnni && k.w_fits ? 2 : 0;
    expect_grouped_conv(p, "qconv=vnni", "quant:qconv_vnni", launches);
    if (vnni) expect_grouped_conv(p, kBlocks[(&k - kGroupedConvCases) % 4], "quant:qconv_vnni", launches);
    // 1x1 convs also as vectors along the pixels (vnni_pw, their default): the input gathered by
    // the conv itself (direct=1: qconv_vnni_pw_x, several channel ranges per pixel block on the
    // small planes here) and packed first (direct=0).
    if (is_pointwise(k.c)) {
      const char* direct = (k.c.C / k.c.group + 3) / 4 <= 256 ? "quant:qconv_vnni_pw_x" : "quant:qconv_vnni_pw";
      expect_grouped_conv(p, "qconv=vnni_pw", direct, launches);
      expect_grouped_conv(p, "qconv=vnni_pw:ocb=4,pxv=4", direct, launches);
      expect_grouped_conv(p, "qconv=vnni_pw:direct=0", "quant:qconv_vnni_pw", launches);
      if (vnni) expect_grouped_conv(p, "qconv=vnni_pw:ocb=16,pxv=1,direct=0", "quant:qconv_vnni_pw", launches);
    }
    // Stride 1 or 2: also as vectors along output rows (vnni_rows), its default (direct=1: the
    // input rows gathered by the conv itself, up to 256 input channels: all cases here) and the
    // packed input (direct=0), and the extreme blocks of channels, vectors and rows spread over
    // the cases, each way.
    if (!is_pointwise(k.c) && k.c.stride <= 2) {
      struct RowBlock {
        int pwb, pxv, rb;
      };
      static const RowBlock kRowBlocks[] = {{4, 3, 1}, {16, 1, 2}, {8, 1, 4}, {4, 4, 2}};
      auto variant = [](const RowBlock& b, int direct) {
        return "qconv=vnni_rows:pwb=" + std::to_string(b.pwb) + ",pxv=" + std::to_string(b.pxv) +
               ",rb=" + std::to_string(b.rb) + ",direct=" + std::to_string(direct);
      };
      // direct=1 runs where the private copy (at least the conv's 4-channel groups rounded up to a
      // power of two x its rows x its vectors of 64 bytes) fits 64 KiB, else the packed kernel
      // (the C=256 case with 4 vectors of 2 rows: 80 KiB).
      auto copy_fits = [&](const RowBlock& b) {
        const int64_t rows = (b.rb - 1) * k.c.stride + (k.c.k - 1) * k.c.dil + 1;
        const int64_t vecs = (16 * b.pxv * k.c.stride + (k.c.k - 1) * k.c.dil + 15) / 16;
        int64_t groups = 1;
        while (groups < (k.c.C / k.c.group + 3) / 4) groups *= 2;
        return groups * rows * vecs * 64 <= 65536;
      };
      const size_t i = static_cast<size_t>(&k - kGroupedConvCases);
      expect_grouped_conv(p, "qconv=vnni_rows", "quant:qconv_vnni_rows_x", launches);
      expect_grouped_conv(p, "qconv=vnni_rows:direct=0", "quant:qconv_vnni_rows", launches);
      if (vnni) {
        const RowBlock& b = kRowBlocks[i % 4];
        expect_grouped_conv(p, variant(b, 1), copy_fits(b) ? "quant:qconv_vnni_rows_x" : "quant:qconv_vnni_rows",
                            launches);
        expect_grouped_conv(p, variant(kRowBlocks[(i + 1) % 4], 0), "quant:qconv_vnni_rows", launches);
      }
    }
  }
}

// The VNNI depthwise conv (qconv=vnni_dw: 4 taps of a kernel row per vpdpbusd lane, input rows as
// bytes in a ring) against the integer reference, bit for bit, QLinearConv and ConvInteger (raw
// sums) alike, on the geometries that select its paths: rows narrower than, equal to and wider
// than a 16-pixel vector (a partial last vector spills into the next rows of the same work-item,
// else is stored lane by lane), the padding's byte shift (0 to 3), tap groups of 1 to 3 (3x3 to
// 9x9), strides 1 and 2, dilation, bands of rows and several channels per work-item, batch 2,
// int8 and uint8 inputs, extreme values, uint8 weights within and beyond the signed byte range
// (beyond: another variant runs), and windows whose lanes reach byte 15 of their 16 (stride 2,
// dilation 3) or would pass it (dilation 4: not applied).
TEST(Quant, DepthwiseVnniMatchesIntegerReference) {
  const bool vnni = expect_vnni();
  if (!vnni) std::cout << "no AVX-512 VNNI on this device: checking the fallback only\n";
  std::mt19937 rng(29);
  struct Case {
    GroupedConvCase k;
    bool applies;  // the geometry is one qconv_depthwise_vnni takes
  };
  const Case cases[] = {
      {{{1, 8, 13, 13, 8, 3, 1, 1, 1, 8, DType::UInt8, DType::Int8, true, true, false}, 0}, true},
      {{{2, 6, 11, 19, 6, 3, 2, 1, 1, 6, DType::Int8, DType::Int8, true, true, false}, 0}, true},
      {{{1, 5, 12, 40, 5, 5, 1, 2, 1, 5, DType::UInt8, DType::Int8, false, true, false}, 0}, true},
      {{{1, 4, 15, 33, 4, 7, 2, 3, 1, 4, DType::Int8, DType::Int8, true, false, false}, 0}, true},
      {{{1, 5, 12, 20, 5, 3, 1, 2, 2, 5, DType::UInt8, DType::Int8, true, true, false}, 0}, true},
      {{{1, 4, 9, 1, 4, 5, 1, 2, 1, 4, DType::UInt8, DType::Int8, true, false, false}, 0}, true},
      {{{1, 3, 70, 66, 3, 3, 1, 1, 1, 3, DType::UInt8, DType::Int8, true, true, false}, 0}, true},
      {{{1, 67, 5, 5, 67, 3, 1, 1, 1, 67, DType::UInt8, DType::Int8, true, true, false}, 0}, true},
      {{{1, 6, 8, 16, 6, 3, 1, 0, 1, 6, DType::UInt8, DType::Int8, true, true, false}, 0}, true},
      {{{1, 6, 8, 17, 6, 3, 2, 0, 1, 6, DType::Int8, DType::Int8, true, true, false}, 0}, true},
      {{{1, 3, 14, 37, 3, 9, 1, 4, 1, 3, DType::UInt8, DType::Int8, true, true, false}, 0}, true},
      {{{1, 16, 9, 23, 16, 3, 1, 1, 1, 16, DType::UInt8, DType::Int8, true, true, false}, 1}, true},
      {{{1, 16, 9, 23, 16, 3, 2, 1, 1, 16, DType::Int8, DType::Int8, true, true, false}, 1}, true},
      {{{1, 8, 6, 6, 8, 3, 1, 1, 1, 8, DType::UInt8, DType::UInt8, true, true, false}, 0, false}, false},
      {{{1, 4, 20, 30, 4, 3, 2, 0, 4, 4, DType::UInt8, DType::Int8, true, true, false}, 0}, false},
      {{{1, 4, 20, 30, 4, 3, 2, 0, 3, 4, DType::UInt8, DType::Int8, true, true, false}, 0}, true},
  };
  for (const Case& t : cases) {
    SCOPED_TRACE(describe(t.k) + " " + std::to_string(t.k.c.H) + "x" + std::to_string(t.k.c.W) + " pad " +
                 std::to_string(t.k.c.pad) + " dilation " + std::to_string(t.k.c.dil));
    const GroupedConvProblem p = grouped_conv_problem(t.k, rng);
    expect_grouped_conv(p, "qconv=vnni_dw", "quant:qconv_depthwise_vnni", vnni && t.applies ? 2 : 0);
  }
}

// The 16-bit pairwise convs (qconv=madd, and madd_pw for 1x1: vpmaddwd on x86 AVX2 CPUs, the
// same arithmetic in OpenCL C elsewhere, e.g. under oclgrind) on the same cases: they apply to
// any 8-bit weights, so every case runs them.
TEST(Quant, MaddConvMatchesIntegerReference) {
  std::mt19937 rng(23);
  static const char* kBlocks[] = {"qconv=madd:owb=4,ocv=1", "qconv=madd:owb=14,ocv=1", "qconv=madd:owb=7,ocv=2",
                                  "qconv=madd:owb=8,ocv=2"};
  static const char* kPwBlocks[] = {"qconv=madd_pw:ocb=6,pxv=2", "qconv=madd_pw:ocb=2,pxv=3"};
  for (const GroupedConvCase& k : kGroupedConvCases) {
    SCOPED_TRACE(describe(k));
    const GroupedConvProblem p = grouped_conv_problem(k, rng);
    const size_t i = static_cast<size_t>(&k - kGroupedConvCases);
    expect_grouped_conv(p, "qconv=madd", "quant:qconv_madd", 2);
    expect_grouped_conv(p, kBlocks[i % 4], "quant:qconv_madd", 2);
    if (is_pointwise(k.c)) {
      expect_grouped_conv(p, "qconv=madd_pw", "quant:qconv_madd_pw", 2);
      expect_grouped_conv(p, kPwBlocks[i % 2], "quant:qconv_madd_pw", 2);
    }
  }
}

TEST(Quant, QLinearMatMulAndMatMulIntegerMatchReference) {
  std::mt19937 rng(9);
  for (int64_t N : {1, 7, 8, 33}) {
    const int64_t B = 3, M = 5, K = 19;
    SCOPED_TRACE("N=" + std::to_string(N));
    Tensor a = random_q(DType::UInt8, {B, M, K}, rng);
    Tensor b = random_q(DType::Int8, {K, N}, rng);
    std::vector<float> bs(static_cast<size_t>(N));
    Tensor bz(DType::Int8, {N});
    for (int64_t n = 0; n < N; ++n) bs[static_cast<size_t>(n)] = 0.01f + 0.001f * static_cast<float>(n), seti(bz, n, n % 3 - 1);
    const int az = 100, yz = 90;
    const float as = 0.05f, ys = 0.8f;
    ModelBuilder m(13);
    m.input("a", DType::UInt8, {B, M, K})
        .initializer("as", scalar_f(as))
        .initializer("az", scalar_q(DType::UInt8, az))
        .initializer("b", b)
        .initializer("bs", floats(bs))
        .initializer("bz", bz)
        .initializer("ys", scalar_f(ys))
        .initializer("yz", scalar_q(DType::Int8, yz));
    m.node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"});
    m.input("bi", DType::Int8, {K, N});
    m.node("MatMulInteger", {"a", "bi", "az", "bz"}, {"acc"});
    m.output("y").output("acc");
    Tensor want(DType::Int8, {B, M, N}), want_acc(DType::Int32, {B, M, N});
    for (int64_t i = 0; i < B * M; ++i)
      for (int64_t n = 0; n < N; ++n) {
        int64_t acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += (geti(a, i * K + k) - az) * (geti(b, k * N + n) - geti(bz, n));
        seti(want_acc, i * N + n, acc);
        seti(want, i * N + n, requant_ref(acc, as, bs[static_cast<size_t>(n)], ys, yz, DType::Int8, false));
      }
    // Every variant of the qgemm family with the extreme values of its parameters, spread over the
    // column counts (each combination is a program build).
    std::vector<const char*> variants{""};
    if (N == 7) variants.push_back("qgemm=packed:nb=4,mb=1");
    if (N == 8) variants.push_back("qgemm=tiled");
    if (N == 33)
      variants.insert(variants.end(), {"qgemm=packed:nb=16,mb=8", "qgemm=tiled:ts=16,rm=1,rn=1,tk=4",
                                       "qgemm=tiled:ts=64,rm=4,rn=4,tk=16"});
    expect_exact_under(m, {{"a", a}, {"bi", b}}, variants, want, want_acc, "MatMulInteger");
  }
}

// Opset 21 allows float16 scales: constant ones are widened at plan time, computed ones by a Cast
// before the product; both give the integer reference with the float16 scale values.
TEST(Quant, QLinearMatMulTakesFloat16Scales) {
  std::mt19937 rng(10);
  const int64_t M = 4, K = 23, N = 9;
  Tensor a = random_q(DType::UInt8, {M, K}, rng), b = random_q(DType::Int8, {K, N}, rng);
  auto half = [](std::vector<float> v) {
    Tensor t(DType::Float16, {static_cast<int64_t>(v.size())});
    if (v.size() == 1) t.shape.clear();
    for (size_t i = 0; i < v.size(); ++i) t.data<uint16_t>()[i] = ocl_infer::float_to_half(v[i]);
    return t;
  };
  std::vector<float> bs(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) bs[static_cast<size_t>(n)] = to_half(0.013f + 0.0011f * static_cast<float>(n));
  const float as = to_half(0.047f), ys = to_half(0.61f);
  const int az = 120, yz = -3;
  Tensor want(DType::Int8, {M, N});
  for (int64_t i = 0; i < M; ++i)
    for (int64_t n = 0; n < N; ++n) {
      int64_t acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += (geti(a, i * K + k) - az) * geti(b, k * N + n);
      seti(want, i * N + n, requant_ref(acc, as, bs[static_cast<size_t>(n)], ys, yz, DType::Int8, false));
    }
  for (bool computed : {false, true}) {
    SCOPED_TRACE(computed ? "scales as inputs" : "constant scales");
    ModelBuilder m(21);
    m.input("a", DType::UInt8, {M, K})
        .initializer("az", scalar_q(DType::UInt8, az))
        .initializer("b", b)
        .initializer("bz", scalar_q(DType::Int8, 0))
        .initializer("yz", scalar_q(DType::Int8, yz));
    std::map<std::string, Tensor> feeds{{"a", a}};
    for (auto& [name, t] : std::map<std::string, Tensor>{{"as", half({as})}, {"bs", half(bs)}, {"ys", half({ys})}}) {
      if (computed) {
        m.input(name, DType::Float16, t.shape);
        feeds[name] = t;
      } else {
        m.initializer(name, t);
      }
    }
    m.node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"});
    m.output("y");
    const Tensor got = run_model(m, feeds).at("y");
    ASSERT_EQ(got.shape, want.shape);
    EXPECT_EQ(got.bytes, want.bytes);
  }
}

// The VNNI product (qgemm=vnni, the default on AVX-512 VNNI CPUs for constant B): int8 and uint8
// inputs, K with and without a partial group of 4, one row (a classifier) and row counts past the
// register block, B per batch, the extreme values (sums near the kernel's limit), and uint8 B whose
// b - b_zero leaves the signed byte range (another variant, the same results). QLinearMatMul and
// MatMulInteger of the same constant B, against the integer reference.
TEST(Quant, VnniMatMulMatchesReference) {
  const bool vnni = expect_vnni();
  std::mt19937 rng(23);
  struct Case {
    int64_t batch, M, K, N;
    bool b_batched;  // B [batch][K][N] instead of [K][N]
    DType at, bt;
    bool extremes, b_fits;
    const char* variant;
  };
  const Case cases[] = {
      {1, 1, 1280, 1000, false, DType::UInt8, DType::Int8, false, true, ""},
      {1, 1, 1280, 40, false, DType::Int8, DType::Int8, true, true, ""},
      {2, 9, 18, 33, true, DType::Int8, DType::UInt8, false, true, "qgemm=vnni:nbv=4,mb=1"},
      {1, 5, 7, 17, false, DType::UInt8, DType::UInt8, false, true, "qgemm=vnni:nbv=1,mb=8"},
      {3, 4, 64, 16, false, DType::UInt8, DType::Int8, true, true, "qgemm=vnni:nbv=2,mb=2"},
      {1, 3, 20, 24, false, DType::UInt8, DType::UInt8, false, false, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("batch=" + std::to_string(c.batch) + " M=" + std::to_string(c.M) + " K=" + std::to_string(c.K) +
                 " N=" + std::to_string(c.N) + (c.b_batched ? " batched B" : "") + (c.extremes ? " extremes" : "") +
                 (c.b_fits ? "" : " (B beyond int8)") + " " + c.variant);
    const std::vector<int64_t> bshape = c.b_batched ? std::vector<int64_t>{c.batch, c.K, c.N} : std::vector<int64_t>{c.K, c.N};
    Tensor a = random_q(c.at, {c.batch, c.M, c.K}, rng);
    Tensor b = random_q(c.bt, bshape, rng);
    std::vector<float> bs(static_cast<size_t>(c.N));
    Tensor bz(c.bt, {c.N});
    for (int64_t n = 0; n < c.N; ++n) {
      bs[static_cast<size_t>(n)] = 0.0005f + 0.0001f * static_cast<float>(n % 11);
      seti(bz, n, c.bt == DType::Int8 ? (c.extremes ? 0 : n % 3 - 1) : 120 + n % 9);
    }
    for (int64_t i = 0; i < b.numel(); ++i) {
      const int z = static_cast<int>(geti(bz, i % c.N));
      if (c.extremes) seti(b, i, rng() % 2 ? qhi(c.bt) : (c.bt == DType::Int8 ? -127 : qlo(c.bt)));
      else seti(b, i, std::clamp(z - 128 + static_cast<int>(rng() % 256), qlo(c.bt), qhi(c.bt)));
    }
    if (!c.b_fits) seti(b, 0, 255);  // 255 - 120 = 135: beyond a signed byte
    if (c.extremes)
      for (int64_t i = 0; i < a.numel(); ++i) seti(a, i, rng() % 2 ? qhi(c.at) : qlo(c.at));
    const int az = c.at == DType::UInt8 ? 100 : -7, yz = 3;
    const float as = 0.05f, ys = 0.9f;
    ModelBuilder m(13);
    m.input("a", c.at, {c.batch, c.M, c.K})
        .initializer("as", scalar_f(as))
        .initializer("az", scalar_q(c.at, az))
        .initializer("b", b)
        .initializer("bs", floats(bs))
        .initializer("bz", bz)
        .initializer("ys", scalar_f(ys))
        .initializer("yz", scalar_q(DType::UInt8, yz));
    m.node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"});
    m.node("MatMulInteger", {"a", "b", "az", "bz"}, {"acc"});
    m.output("y").output("acc");
    Tensor want(DType::UInt8, {c.batch, c.M, c.N}), want_acc(DType::Int32, {c.batch, c.M, c.N});
    for (int64_t t = 0; t < c.batch; ++t)
      for (int64_t i = 0; i < c.M; ++i)
        for (int64_t n = 0; n < c.N; ++n) {
          const int64_t b0 = c.b_batched ? t * c.K * c.N : 0, row = t * c.M + i;
          int64_t acc = 0;
          for (int64_t k = 0; k < c.K; ++k) acc += (geti(a, row * c.K + k) - az) * (geti(b, b0 + k * c.N + n) - geti(bz, n));
          seti(want_acc, row * c.N + n, acc);
          seti(want, row * c.N + n, requant_ref(acc, as, bs[static_cast<size_t>(n)], ys, yz, DType::UInt8, false));
        }
    ocl_infer::SessionOptions opt;
    opt.kernel_variants = c.variant;
    opt.profiling = true;
    auto s = open_session(m, opt);
    auto out = s.run({{"a", a}});
    int64_t first = -1;
    EXPECT_EQ(mismatches(out["y"], want, &first), 0) << "first at " << first;
    EXPECT_EQ(mismatches(out["acc"], want_acc, &first), 0) << "MatMulInteger, first at " << first;
    int used = 0;
    for (const auto& r : s.profile()) used += r.kernel == "quant:qmatmul_vnni";
    EXPECT_EQ(used, vnni && c.b_fits ? 2 : 0) << "launches of qmatmul_vnni (QLinearMatMul and MatMulInteger)";
  }
}

TEST(Quant, DynamicQuantizeLinearMatchesSpec) {
  std::mt19937 rng(2);
  for (int64_t n : {1, 100, 70001}) {
    Tensor x = random_tensor({n}, rng, -2.5f, 4.0f);
    ModelBuilder m(13);
    m.input("x", DType::Float32, {n});
    m.node("DynamicQuantizeLinear", {"x"}, {"y", "s", "z"});
    m.output("y").output("s").output("z");
    auto out = run_model(m, {{"x", x}});
    float lo = 0, hi = 0;
    for (int64_t i = 0; i < n; ++i) lo = std::min(lo, x.data<float>()[i]), hi = std::max(hi, x.data<float>()[i]);
    const float s = (hi - lo) / 255.0f;
    const int z = static_cast<int>(std::min(255.0f, std::max(0.0f, std::nearbyint(-lo / s))));
    EXPECT_EQ(out["s"].data<float>()[0], s);
    EXPECT_EQ(geti(out["z"], 0), z);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) bad += geti(out["y"], i) != quantize_ref(x.data<float>()[i], s, z, DType::UInt8);
    EXPECT_EQ(bad, 0) << "n=" << n;
  }
}

namespace {

ModelBuilder contrib_model() {
  ModelBuilder m(13);
  auto* os = m.proto().add_opset_import();
  os->set_domain("com.microsoft");
  os->set_version(1);
  return m;
}

}  // namespace

TEST(Quant, ContribQLinearOpsMatchReference) {
  std::mt19937 rng(8);
  const std::vector<int64_t> shape{2, 5, 3, 7};
  Tensor a = random_q(DType::UInt8, shape, rng), b = random_q(DType::UInt8, {5, 1, 1}, rng);
  const float as = 0.03f, bs = 0.05f, ys = 0.07f, gs = 0.011f;
  const int az = 120, bz = 3, yz = 128, gz = 7;
  ModelBuilder m = contrib_model();
  m.input("a", DType::UInt8, shape).input("b", DType::UInt8, {5, 1, 1});
  m.initializer("as", scalar_f(as)).initializer("az", scalar_q(DType::UInt8, az));
  m.initializer("bs", scalar_f(bs)).initializer("bz", scalar_q(DType::UInt8, bz));
  m.initializer("ys", scalar_f(ys)).initializer("yz", scalar_q(DType::UInt8, yz));
  m.initializer("gs", scalar_f(gs)).initializer("gz", scalar_q(DType::UInt8, gz));
  for (const char* op : {"QLinearAdd", "QLinearMul"})
    m.node(op, {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {std::string(op) + "_y"}).set_domain("com.microsoft");
  m.node("QLinearSigmoid", {"a", "as", "az", "ys", "yz"}, {"sig"}).set_domain("com.microsoft");
  auto& lr = m.node("QLinearLeakyRelu", {"a", "as", "az", "ys", "yz"}, {"leaky"});
  lr.set_domain("com.microsoft");
  attr_f(lr, "alpha", 0.25f);
  m.node("QLinearGlobalAveragePool", {"a", "as", "az", "gs", "gz"}, {"gap"}).set_domain("com.microsoft");
  m.output("QLinearAdd_y").output("QLinearMul_y").output("sig").output("gap").output("leaky");
  auto out = run_model(m, {{"a", a}, {"b", b}});
  int64_t add_bad = 0, mul_bad = 0, sig_off = 0, leaky_bad = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const int64_t c = (i / 21) % 5;
    const float da = static_cast<float>(geti(a, i) - az), db = static_cast<float>(geti(b, c) - bz);
    const float add = da * (as / ys) + db * (bs / ys);
    const int64_t add_q = std::min<int64_t>(255, std::max<int64_t>(0, static_cast<int64_t>(std::nearbyint(add)) + yz));
    add_bad += geti(out["QLinearAdd_y"], i) != add_q;
    const float mul = da * db * (as * bs / ys);
    const int64_t mul_q = std::min<int64_t>(255, std::max<int64_t>(0, static_cast<int64_t>(std::nearbyint(mul)) + yz));
    mul_bad += geti(out["QLinearMul_y"], i) != mul_q;
    const int64_t sig_q = quantize_ref(1.0f / (1.0f + std::exp(-da * as)), ys, yz, DType::UInt8);
    sig_off = std::max<int64_t>(sig_off, std::llabs(geti(out["sig"], i) - sig_q));
    const float real = da * as;
    leaky_bad += geti(out["leaky"], i) != quantize_ref(real < 0 ? 0.25f * real : real, ys, yz, DType::UInt8);
  }
  EXPECT_EQ(leaky_bad, 0);
  EXPECT_EQ(add_bad, 0);
  EXPECT_EQ(mul_bad, 0);
  // The device's exp may differ from the host's in the last bit: at most one step apart.
  EXPECT_LE(sig_off, 1);
  ASSERT_EQ(out["gap"].shape, (std::vector<int64_t>{2, 5, 1, 1}));
  for (int64_t nc = 0; nc < 10; ++nc) {
    int64_t sum = 0;
    for (int64_t k = 0; k < 21; ++k) sum += geti(a, nc * 21 + k);
    const float v = static_cast<float>(sum - az * 21) * (as / (gs * 21.0f));
    const int64_t want = std::min<int64_t>(255, std::max<int64_t>(0, static_cast<int64_t>(std::nearbyint(v)) + gz));
    EXPECT_EQ(geti(out["gap"], nc), want) << nc;
  }
}

namespace {

// A QDQ graph as ONNX Runtime's quantizer writes it: x -> Q -> DQ -> Conv(DQ(W int8 per channel),
// DQ(bias int32)) -> Relu -> Q -> DQ -> {Conv 1x1 -> Q -> DQ, the same DQ} -> Add -> Relu -> Q ->
// DQ -> GlobalAveragePool -> Q -> DQ -> Flatten -> Q -> DQ -> Gemm(DQ(W), DQ(bias)) -> Q -> DQ -> y.
ModelBuilder qdq_model(std::mt19937& rng, int64_t C, int64_t H) {
  ModelBuilder m(13);
  m.input("x", DType::Float32, {1, 3, H, H});
  int id = 0;
  auto qdq = [&](const std::string& v, float s, int z) {
    const std::string n = v + "_" + std::to_string(id++);
    m.initializer(n + "_s", scalar_f(s)).initializer(n + "_z", scalar_q(DType::UInt8, z));
    m.node("QuantizeLinear", {v, n + "_s", n + "_z"}, {n + "_q"});
    m.node("DequantizeLinear", {n + "_q", n + "_s", n + "_z"}, {n + "_dq"});
    return n + "_dq";
  };
  auto weights = [&](const std::string& name, const std::vector<int64_t>& shape, int64_t channels, int axis,
                     float x_scale) {
    Tensor w = random_q(DType::Int8, shape, rng);
    std::vector<float> s(static_cast<size_t>(channels));
    for (auto& v : s) v = 0.002f + 0.004f * static_cast<float>(rng() % 100) / 100.0f;
    Tensor b(DType::Int32, {channels});
    std::vector<float> bsc(s.size());
    for (int64_t c = 0; c < channels; ++c) {
      seti(b, c, static_cast<int64_t>(rng() % 2001) - 1000);
      bsc[static_cast<size_t>(c)] = x_scale * s[static_cast<size_t>(c)];
    }
    m.initializer(name + "_wq", w).initializer(name + "_ws", floats(s)).initializer(name + "_wz", Tensor(DType::Int8, {channels}));
    m.initializer(name + "_bq", b).initializer(name + "_bs", floats(bsc)).initializer(name + "_bz", Tensor(DType::Int32, {channels}));
    auto& dw = m.node("DequantizeLinear", {name + "_wq", name + "_ws", name + "_wz"}, {name + "_w"});
    attr_i(dw, "axis", axis);
    auto& db = m.node("DequantizeLinear", {name + "_bq", name + "_bs", name + "_bz"}, {name + "_b"});
    attr_i(db, "axis", 0);
  };
  const float s0 = 0.02f;
  std::string x = qdq("x", s0, 128);
  weights("c1", {C, 3, 3, 3}, C, 0, s0);
  auto& c1 = m.node("Conv", {x, "c1_w", "c1_b"}, {"c1_y"});
  attr_ints(c1, "pads", {1, 1, 1, 1});
  m.node("Relu", {"c1_y"}, {"r1"});
  const float s1 = 0.05f;
  std::string r1 = qdq("r1", s1, 0);
  weights("c2", {C, C, 1, 1}, C, 0, s1);
  m.node("Conv", {r1, "c2_w", "c2_b"}, {"c2_y"});
  std::string c2 = qdq("c2_y", 0.06f, 120);
  m.node("Add", {c2, r1}, {"sum"});
  m.node("Relu", {"sum"}, {"r2"});
  const float s2 = 0.07f;
  std::string r2 = qdq("r2", s2, 0);
  m.node("GlobalAveragePool", {r2}, {"gap"});
  std::string gap = qdq("gap", 0.03f, 0);
  m.node("Flatten", {gap}, {"flat"});
  std::string flat = qdq("flat", 0.03f, 0);
  weights("fc", {10, C}, 10, 0, 0.03f);
  auto& fc = m.node("Gemm", {flat, "fc_w", "fc_b"}, {"fc_y"});
  attr_i(fc, "transB", 1);
  std::string y = qdq("fc_y", 0.04f, 130);
  m.node("Identity", {y}, {"y"});
  m.output("y");
  return m;
}

}  // namespace

TEST(Quant, FusedQdqGraphUsesIntegerKernelsAndMatchesUnfused) {
  std::mt19937 rng(21);
  ModelBuilder m = qdq_model(rng, 12, 9);
  Tensor x = random_tensor({1, 3, 9, 9}, rng, -2, 2);
  ocl_infer::SessionOptions plain;
  plain.optimization_level = 0;
  auto fused = open_session(m);
  auto unfused = open_session(m, plain);
  auto a = fused.run({{"x", x}})["y"];
  auto b = unfused.run({{"x", x}})["y"];
  const std::string plan = fused.dump("plan");
  for (const char* k : {"quant:qconv", "quant:qmatmul", "quant:qgap"}) EXPECT_NE(plan.find(k), std::string::npos) << k;
  // Only the model input's Q and the output's DQ are left as their own kernels (plus the
  // QLinearAdd, also an elementwise kernel).
  EXPECT_EQ(qdq_launches(plan), 2u) << plan;
  EXPECT_EQ(unfused.dump("plan").find("quant:qconv"), std::string::npos);
  ASSERT_EQ(a.shape, b.shape);
  // Fused kernels requantize (acc + bias) * (xs * ws / ys) where the unfused graph rounds float
  // products: a value may land one step away, and steps can add up over the 5 layers.
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) worst = std::max<double>(worst, std::fabs(a.data<float>()[i] - b.data<float>()[i]));
  EXPECT_LE(worst, 3 * 0.04 + 1e-6) << "fused and unfused outputs differ by more than 3 output steps";
}

TEST(Quant, BadQuantizationParametersAreClearErrors) {
  struct Bad {
    const char* what;
    Tensor scale, zero;
    int axis;
    const char* expect;
  };
  const Bad cases[] = {
      {"zero scale", scalar_f(0.0f), scalar_q(DType::UInt8, 0), -1, "finite and non-zero"},
      {"NaN scale", scalar_f(NAN), scalar_q(DType::UInt8, 0), -1, "finite and non-zero"},
      {"per-axis length", floats({0.1f, 0.2f}), Tensor(DType::UInt8, {2}), 1, "one per channel"},
      {"zero point length", floats({0.1f, 0.2f, 0.3f}), Tensor(DType::UInt8, {2}), 1, "expected 3 values"},
      {"int16 output", scalar_f(0.1f), scalar_q(DType::Int32, 0), -1, "int32"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    ModelBuilder m(13);
    m.input("x", DType::Float32, {1, 3, 4}).initializer("s", c.scale).initializer("z", c.zero);
    auto& q = m.node("QuantizeLinear", {"x", "s", "z"}, {"y"});
    if (c.axis >= 0) attr_i(q, "axis", c.axis);
    m.output("y");
    try {
      run_model(m, {{"x", Tensor(DType::Float32, {1, 3, 4})}});
      ADD_FAILURE() << "no error";
    } catch (const ocl_infer::Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("QuantizeLinear"), std::string::npos) << e.what();
    }
  }
  // DequantizeLinear: zero point of another type than the data, and a non-zero int32 zero point.
  ModelBuilder m(13);
  m.input("x", DType::Int8, {4}).initializer("s", scalar_f(0.5f)).initializer("z", scalar_q(DType::UInt8, 1));
  m.node("DequantizeLinear", {"x", "s", "z"}, {"y"});
  m.output("y");
  EXPECT_THROW(run_model(m, {{"x", Tensor(DType::Int8, {4})}}), ocl_infer::ModelError);
  ModelBuilder m2(13);
  m2.input("x", DType::Int32, {4}).initializer("s", scalar_f(0.5f)).initializer("z", scalar_q(DType::Int32, 1));
  m2.node("DequantizeLinear", {"x", "s", "z"}, {"y"});
  m2.output("y");
  EXPECT_THROW(run_model(m2, {{"x", Tensor(DType::Int32, {4})}}), ocl_infer::ModelError);
}

// QLinearAdd / QLinearMul of two operands of the output's shape take a vector kernel (16 lanes per
// work-item, the tail one by one): uint8 and int8, 16 x 13 + 2 values, against the formula.
TEST(Quant, QLinearAddMulSameShapeMatchReference) {
  std::mt19937 rng(21);
  for (DType t : {DType::UInt8, DType::Int8}) {
    SCOPED_TRACE(t == DType::UInt8 ? "uint8" : "int8");
    const std::vector<int64_t> shape{2, 5, 3, 7};
    Tensor a = random_q(t, shape, rng), b = random_q(t, shape, rng);
    const float as = 0.03f, bs = 0.05f, ys = 0.07f;
    const int az = t == DType::UInt8 ? 120 : -5, bz = t == DType::UInt8 ? 3 : 17, yz = t == DType::UInt8 ? 128 : 0;
    ModelBuilder m = contrib_model();
    m.input("a", t, shape).input("b", t, shape);
    m.initializer("as", scalar_f(as)).initializer("az", scalar_q(t, az));
    m.initializer("bs", scalar_f(bs)).initializer("bz", scalar_q(t, bz));
    m.initializer("ys", scalar_f(ys)).initializer("yz", scalar_q(t, yz));
    for (const char* op : {"QLinearAdd", "QLinearMul"})
      m.node(op, {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {std::string(op) + "_y"}).set_domain("com.microsoft");
    m.output("QLinearAdd_y").output("QLinearMul_y");
    auto out = run_model(m, {{"a", a}, {"b", b}});
    int64_t add_bad = 0, mul_bad = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
      const float da = static_cast<float>(geti(a, i) - az), db = static_cast<float>(geti(b, i) - bz);
      const float add = da * (as / ys) + db * (bs / ys), mul = da * db * (as * bs / ys);
      const int64_t add_q = std::clamp<int64_t>(static_cast<int64_t>(std::nearbyint(add)) + yz, qlo(t), qhi(t));
      const int64_t mul_q = std::clamp<int64_t>(static_cast<int64_t>(std::nearbyint(mul)) + yz, qlo(t), qhi(t));
      add_bad += geti(out["QLinearAdd_y"], i) != add_q;
      mul_bad += geti(out["QLinearMul_y"], i) != mul_q;
    }
    EXPECT_EQ(add_bad, 0);
    EXPECT_EQ(mul_bad, 0);
  }
}

TEST(Quant, QLinearConcatRequantizesEachOperand) {
  std::mt19937 rng(4);
  ModelBuilder m = contrib_model();
  const float ys = 0.04f;
  const int yz = 10;
  m.initializer("ys", scalar_f(ys)).initializer("yz", scalar_q(DType::UInt8, yz));
  // Operand 0 shares the output's parameters (a plain copy), 1 and 2 are requantized.
  const float xs[] = {0.04f, 0.013f, 0.3f};
  const int xz[] = {10, 200, 0};
  const int64_t len[] = {3, 1, 4};
  std::vector<std::string> ins{"ys", "yz"};
  std::map<std::string, Tensor> feeds;
  for (int k = 0; k < 3; ++k) {
    const std::string n = "x" + std::to_string(k);
    m.input(n, DType::UInt8, {2, len[k], 5});
    m.initializer(n + "s", scalar_f(xs[k])).initializer(n + "z", scalar_q(DType::UInt8, xz[k]));
    ins.insert(ins.end(), {n, n + "s", n + "z"});
    feeds[n] = random_q(DType::UInt8, {2, len[k], 5}, rng);
  }
  auto& c = m.node("QLinearConcat", ins, {"y"});
  c.set_domain("com.microsoft");
  attr_i(c, "axis", 1);
  m.output("y");
  auto y = run_model(m, feeds)["y"];
  ASSERT_EQ(y.shape, (std::vector<int64_t>{2, 8, 5}));
  int64_t bad = 0;
  for (int64_t o = 0; o < 2; ++o) {
    int64_t at = 0;
    for (int k = 0; k < 3; ++k) {
      const Tensor& x = feeds["x" + std::to_string(k)];
      for (int64_t j = 0; j < len[k]; ++j)
        for (int64_t i = 0; i < 5; ++i) {
          const float v = static_cast<float>(geti(x, (o * len[k] + j) * 5 + i) - xz[k]) * xs[k];
          bad += geti(y, (o * 8 + at + j) * 5 + i) != quantize_ref(v, ys, yz, DType::UInt8);
        }
      at += len[k];
    }
  }
  EXPECT_EQ(bad, 0);
}

// Operands that keep the output's scale and zero point and are made on the device are written by
// their producers straight into the output (the buffer planner's Concat elimination; slices at
// multiples of 4 KiB here, aligned for any device's sub-buffers: PoCL 128, rusticl 512 bytes); a
// requantized operand is not. Values against the reference, plans with and
// without the buffer planner.
TEST(Quant, QLinearConcatOperandsWrittenInPlace) {
  std::mt19937 rng(5);
  ModelBuilder m = contrib_model();
  const float ys = 0.05f, x2s = 0.02f;
  const int yz = 12, x2z = 100;
  m.initializer("ys", scalar_f(ys)).initializer("yz", scalar_q(DType::UInt8, yz));
  m.initializer("x2s", scalar_f(x2s)).initializer("x2z", scalar_q(DType::UInt8, x2z));
  m.input("f0", DType::Float32, {1, 2, 32, 64}).input("f1", DType::Float32, {1, 1, 32, 64});
  m.input("x2", DType::UInt8, {1, 3, 32, 64});
  m.node("QuantizeLinear", {"f0", "ys", "yz"}, {"q0"});
  m.node("QuantizeLinear", {"f1", "ys", "yz"}, {"q1"});
  auto& c = m.node("QLinearConcat", {"ys", "yz", "q0", "ys", "yz", "q1", "ys", "yz", "x2", "x2s", "x2z"}, {"y"});
  c.set_domain("com.microsoft");
  attr_i(c, "axis", 1);
  m.node("DequantizeLinear", {"y", "ys", "yz"}, {"out"});
  m.output("out");
  std::map<std::string, Tensor> feeds{{"f0", random_tensor({1, 2, 32, 64}, rng)},
                                      {"f1", random_tensor({1, 1, 32, 64}, rng)},
                                      {"x2", random_q(DType::UInt8, {1, 3, 32, 64}, rng)}};
  const std::string b = m.bytes();
  for (bool plan : {true, false}) {
    SCOPED_TRACE(plan ? "buffer planner" : "no buffer planner");
    ocl_infer::SessionOptions opt;
    opt.plan_memory = plan;
    auto s = ocl_infer::Session::from_memory(b.data(), b.size(), opt);
    auto out = s.run(feeds)["out"];
    ASSERT_EQ(out.shape, (std::vector<int64_t>{1, 6, 32, 64}));
    if (plan) {
      EXPECT_NE(s.dump("plan.json").find("\"concat_inputs_in_place\": 2"), std::string::npos);
    }
    int64_t bad = 0;
    for (int64_t i = 0; i < out.numel(); ++i) {
      const int64_t ch = i / 2048, j = i % 2048;
      int64_t q;
      if (ch < 2) q = quantize_ref(feeds["f0"].data<float>()[ch * 2048 + j], ys, yz, DType::UInt8);
      else if (ch < 3) q = quantize_ref(feeds["f1"].data<float>()[j], ys, yz, DType::UInt8);
      else q = quantize_ref(static_cast<float>(geti(feeds["x2"], (ch - 3) * 2048 + j) - x2z) * x2s, ys, yz, DType::UInt8);
      bad += out.data<float>()[i] != static_cast<float>(q - yz) * ys;
    }
    EXPECT_EQ(bad, 0);
  }
}

namespace {

// An fp32 model with every kind of quantized op: Conv+Relu, a 1x1 Conv, a residual Add+Relu,
// MaxPool, GlobalAveragePool, Flatten, Gemm; written to a temporary file.
std::string write_fp32_model(std::mt19937& rng, const std::string& path) {
  ModelBuilder m(13);
  m.input("x", DType::Float32, {1, 3, 12, 12});
  m.initializer("w1", random_tensor({8, 3, 3, 3}, rng, -0.5f, 0.5f)).initializer("b1", random_tensor({8}, rng));
  m.initializer("w2", random_tensor({8, 8, 1, 1}, rng, -0.5f, 0.5f)).initializer("b2", random_tensor({8}, rng));
  m.initializer("wf", random_tensor({5, 8}, rng)).initializer("bf", random_tensor({5}, rng));
  auto& c1 = m.node("Conv", {"x", "w1", "b1"}, {"c1"});
  c1.set_name("conv1");
  attr_ints(c1, "pads", {1, 1, 1, 1});
  m.node("Relu", {"c1"}, {"r1"});
  m.node("Conv", {"r1", "w2", "b2"}, {"c2"}).set_name("conv2");
  m.node("Add", {"c2", "r1"}, {"s"});
  m.node("Relu", {"s"}, {"r2"});
  auto& mp = m.node("MaxPool", {"r2"}, {"p"});
  attr_ints(mp, "kernel_shape", {2, 2});
  attr_ints(mp, "strides", {2, 2});
  m.node("GlobalAveragePool", {"p"}, {"g"});
  m.node("Flatten", {"g"}, {"f"});
  auto& fc = m.node("Gemm", {"f", "wf", "bf"}, {"y"});
  fc.set_name("fc");
  attr_i(fc, "transB", 1);
  m.output("y");
  const std::string b = m.bytes();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return "";
  std::fwrite(b.data(), 1, b.size(), f);
  std::fclose(f);
  return path;
}

int count_ops(const onnx::ModelProto& m, const std::string& op) {
  int n = 0;
  for (auto& node : m.graph().node()) n += node.op_type() == op;
  return n;
}

}  // namespace

TEST(Quantizer, WritesAQdqModelThatRunsInIntegerKernels) {
  std::mt19937 rng(31);
  const std::string path = write_fp32_model(rng, ::testing::TempDir() + "/quant_fp32.onnx");
  ASSERT_FALSE(path.empty());
  std::vector<std::map<std::string, Tensor>> calib;
  for (int k = 0; k < 6; ++k) calib.push_back({{"x", random_tensor({1, 3, 12, 12}, rng, -1, 1)}});
  ocl_infer::QuantizeReport rep;
  const std::string bytes = ocl_infer::quantize_model(path, calib, {}, &rep);
  EXPECT_EQ(rep.calibration_inputs, 6u);
  EXPECT_EQ(rep.weights_quantized, 3);
  EXPECT_EQ(rep.biases_quantized, 3);
  EXPECT_TRUE(rep.float_nodes.empty());

  onnx::ModelProto q;
  ASSERT_TRUE(q.ParseFromString(bytes));
  // x, r1, c2, r2, p (MaxPool: r2's parameters), g, f (Flatten: g's), y: 8 activations; 3 weights
  // and 3 biases dequantized.
  EXPECT_EQ(count_ops(q, "QuantizeLinear"), 8);
  EXPECT_EQ(count_ops(q, "DequantizeLinear"), 14);
  EXPECT_EQ(count_ops(q, "Conv"), 2);
  for (auto& init : q.graph().initializer()) {
    if (init.name() == "w1_quantized") {
      EXPECT_EQ(init.data_type(), static_cast<int>(DType::Int8));
      EXPECT_EQ(init.dims_size(), 4);
    }
    if (init.name() == "b1_quantized") {
      EXPECT_EQ(init.data_type(), static_cast<int>(DType::Int32));
    }
    if (init.name() == "w1_scale") {
      EXPECT_EQ(init.dims(0), 8) << "per-channel weight scales";
    }
  }
  for (auto& node : q.graph().node())
    if (node.op_type() == "DequantizeLinear" && node.input(0) == "w1_quantized") {
      ASSERT_EQ(node.attribute_size(), 1);
      EXPECT_EQ(node.attribute(0).name(), "axis");
      EXPECT_EQ(node.attribute(0).i(), 0);
    }

  // The written model runs fully fused, close to the fp32 model.
  auto qs = ocl_infer::Session::from_memory(bytes.data(), bytes.size());
  auto fs = ocl_infer::Session::from_file(path);
  Tensor x = random_tensor({1, 3, 12, 12}, rng, -1, 1);
  const Tensor yq = qs.run({{"x", x}})["y"], yf = fs.run({{"x", x}})["y"];
  ASSERT_EQ(yq.shape, yf.shape);
  double mx = 0, err = 0;
  for (int64_t i = 0; i < yf.numel(); ++i) {
    mx = std::max<double>(mx, std::fabs(yf.data<float>()[i]));
    err = std::max<double>(err, std::fabs(yf.data<float>()[i] - yq.data<float>()[i]));
  }
  EXPECT_LE(err, 0.05 * mx) << "int8 output far from fp32";
  const std::string plan = qs.dump("plan");
  EXPECT_NE(plan.find("quant:qconv"), std::string::npos) << plan;
  EXPECT_NE(plan.find("quant:qmatmul"), std::string::npos) << plan;
  EXPECT_EQ(qdq_launches(plan), 2u) << "only the input's Q and the output's DQ should run on their own:\n" << plan;
  EXPECT_TRUE(ocl_infer::model_is_quantized(::testing::TempDir() + "/quant_fp32.onnx") == false);

  // The other calibration methods clip the ranges inside the extremes; exclusion keeps a node in
  // float; an already quantized model and an empty calibration set are errors.
  for (const char* method : {"percentile", "entropy"}) {
    ocl_infer::QuantizeOptions o;
    o.method = method;
    ocl_infer::QuantizeReport r2;
    const std::string b2 = ocl_infer::quantize_model(path, calib, o, &r2);
    ASSERT_EQ(r2.activations.size(), rep.activations.size()) << method;
    for (size_t k = 0; k < rep.activations.size(); ++k) {
      EXPECT_LE(r2.activations[k].scale, rep.activations[k].scale * 1.0001f) << method << " " << rep.activations[k].tensor;
      // Clipping, not collapsing: a range keeps at least a quarter of the extremes' (an entropy
      // threshold driven by the zeros of a ReLU output once kept 6 %).
      EXPECT_GE(r2.activations[k].scale, rep.activations[k].scale * 0.25f) << method << " " << rep.activations[k].tensor;
    }
    auto s2 = ocl_infer::Session::from_memory(b2.data(), b2.size());
    const Tensor y2 = s2.run({{"x", x}})["y"];
    double e2 = 0;
    for (int64_t i = 0; i < yf.numel(); ++i) e2 = std::max<double>(e2, std::fabs(yf.data<float>()[i] - y2.data<float>()[i]));
    EXPECT_LE(e2, 0.1 * mx) << method << ": int8 output far from fp32";
  }
  ocl_infer::QuantizeOptions ex;
  ex.exclude_nodes = {"fc"};
  ocl_infer::QuantizeReport r3;
  ocl_infer::quantize_model(path, calib, ex, &r3);
  EXPECT_EQ(r3.weights_quantized, 2);
  ASSERT_EQ(r3.float_nodes.size(), 1u);
  EXPECT_EQ(r3.float_nodes[0], "fc (Gemm)");
  EXPECT_THROW(ocl_infer::quantize_model(path, {}, {}), ocl_infer::InputError);
  const std::string qpath = ::testing::TempDir() + "/quant_int8.onnx";
  FILE* f = std::fopen(qpath.c_str(), "wb");
  ASSERT_TRUE(f);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  EXPECT_TRUE(ocl_infer::model_is_quantized(qpath));
  EXPECT_THROW(ocl_infer::quantize_model(qpath, calib, {}), ocl_infer::ModelError);
}

// Shapes the fusion pass must not get wrong: a Concat of 100 DequantizeLinear outputs with their
// own parameters (some the output's), and one DequantizeLinear read by two fused convs and by a
// graph output. Fused (-O1) against the graph as written (-O0) and against the reference.
TEST(Quant, FusionOfManyOperandsAndSharedReaders) {
  std::mt19937 rng(77);
  {
    const int K = 100;
    ModelBuilder m(13);
    m.initializer("ys", scalar_f(0.05f)).initializer("yz", scalar_q(DType::UInt8, 7));
    std::vector<std::string> dqs;
    std::map<std::string, Tensor> feeds;
    std::vector<float> s(K);
    std::vector<int> z(K);
    for (int k = 0; k < K; ++k) {
      const std::string n = "x" + std::to_string(k);
      s[k] = k % 3 == 0 ? 0.05f : 0.01f * static_cast<float>(k % 7 + 1);
      z[k] = k % 3 == 0 ? 7 : (k * 37) % 256;
      m.input(n, DType::UInt8, {1, 1 + k % 2, 3});
      m.initializer(n + "s", scalar_f(s[k])).initializer(n + "z", scalar_q(DType::UInt8, z[k]));
      m.node("DequantizeLinear", {n, n + "s", n + "z"}, {n + "f"});
      dqs.push_back(n + "f");
      feeds[n] = random_q(DType::UInt8, {1, 1 + k % 2, 3}, rng);
    }
    attr_i(m.node("Concat", dqs, {"c"}), "axis", 1);
    m.node("QuantizeLinear", {"c", "ys", "yz"}, {"y"});
    m.output("y");
    ocl_infer::SessionOptions plain;
    plain.optimization_level = 0;
    auto fused = open_session(m);
    const Tensor a = fused.run(feeds)["y"], b = open_session(m, plain).run(feeds)["y"];
    EXPECT_EQ(fused.executed_nodes().size(), 1u) << "the 100 DequantizeLinear, Concat and QuantizeLinear as one QLinearConcat";
    EXPECT_EQ(mismatches(a, b), 0) << "fused QLinearConcat differs from DequantizeLinear/Concat/QuantizeLinear";
    int64_t at = 0, bad = 0;
    for (int k = 0; k < K; ++k) {
      const Tensor& x = feeds["x" + std::to_string(k)];
      for (int64_t i = 0; i < x.numel(); ++i, ++at)
        bad += geti(a, at) != quantize_ref(static_cast<float>(geti(x, i) - z[k]) * s[k], 0.05f, 7, DType::UInt8);
    }
    EXPECT_EQ(at, a.numel());
    EXPECT_EQ(bad, 0);
  }
  {
    ModelBuilder m(13);
    m.input("x", DType::Float32, {1, 4, 7, 9});
    m.initializer("xs", scalar_f(0.02f)).initializer("xz", scalar_q(DType::UInt8, 128));
    m.node("QuantizeLinear", {"x", "xs", "xz"}, {"xq"});
    m.node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"});
    for (const char* c : {"a", "b"}) {
      const std::string n = c;
      m.initializer(n + "w", random_q(DType::Int8, {5, 4, 3, 3}, rng)).initializer(n + "ws", scalar_f(0.01f));
      m.initializer(n + "wz", scalar_q(DType::Int8, 0));
      m.initializer(n + "ys", scalar_f(0.2f)).initializer(n + "yz", scalar_q(DType::UInt8, 100));
      m.node("DequantizeLinear", {n + "w", n + "ws", n + "wz"}, {n + "wf"});
      attr_ints(m.node("Conv", {"xd", n + "wf"}, {n + "c"}), "pads", {1, 1, 1, 1});
      m.node("QuantizeLinear", {n + "c", n + "ys", n + "yz"}, {n + "y"});
      m.output(n + "y");
    }
    m.output("xd");
    ocl_infer::SessionOptions plain;
    plain.optimization_level = 0;
    auto fused = open_session(m);
    Tensor x = random_tensor({1, 4, 7, 9}, rng, -2, 2);
    auto a = fused.run({{"x", x}});
    auto b = open_session(m, plain).run({{"x", x}});
    const std::string plan = fused.dump("plan");
    size_t convs = 0;
    for (size_t at = 0; (at = plan.find("quant:qconv", at)) != std::string::npos; ++at) ++convs;
    EXPECT_EQ(convs, 2u) << plan;
    EXPECT_EQ(rel_error(a["xd"], b["xd"]), 0.0) << "the shared DequantizeLinear's own output";
    for (const char* y : {"ay", "by"}) {
      // Integer requantization against float rounding: at most one step apart.
      int64_t worst = 0;
      for (int64_t i = 0; i < a[y].numel(); ++i) worst = std::max<int64_t>(worst, std::llabs(geti(a[y], i) - geti(b[y], i)));
      EXPECT_LE(worst, 1) << y;
    }
  }
}
