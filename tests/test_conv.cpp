// Conv and ConvTranspose against direct CPU loops on random odd/prime shapes: strides, dilations,
// asymmetric pads, auto_pad, groups, depthwise, pointwise, 1-D and 3-D, weights both as constants
// (packed at plan time) and as inputs (packed on the device).
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

// Geometry of one case; spatial vectors have 1 to 3 entries.
struct ConvCase {
  int64_t N, C, M, G;
  std::vector<int64_t> in, k, s, d, pads;  // pads: begins then ends
  bool bias = true;
  std::string auto_pad = "";  // "" leaves the attribute out
};

std::array<int64_t, 3> pad3(const std::vector<int64_t>& v, int64_t fill) {
  std::array<int64_t, 3> r{fill, fill, fill};
  for (size_t i = 0; i < v.size(); ++i) r[3 - v.size() + i] = v[i];
  return r;
}

// Output size and start padding per spatial dim, straight from the ONNX definition.
void conv_out(const ConvCase& c, std::vector<int64_t>* out, std::vector<int64_t>* pb) {
  const size_t r = c.in.size();
  out->resize(r);
  pb->resize(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t ek = (c.k[i] - 1) * c.d[i] + 1;
    if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      (*out)[i] = (c.in[i] + c.s[i] - 1) / c.s[i];
      const int64_t total = std::max<int64_t>(0, ((*out)[i] - 1) * c.s[i] + ek - c.in[i]);
      (*pb)[i] = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else {
      const bool valid = c.auto_pad == "VALID";
      (*pb)[i] = valid ? 0 : c.pads[i];
      (*out)[i] = (c.in[i] + (valid ? 0 : c.pads[i] + c.pads[i + r]) - ek) / c.s[i] + 1;
    }
  }
}

Tensor conv_reference(const ConvCase& c, const Tensor& x, const Tensor& w, const Tensor* b) {
  std::vector<int64_t> out, pbv;
  conv_out(c, &out, &pbv);
  auto in3 = pad3(c.in, 1), k3 = pad3(c.k, 1), s3 = pad3(c.s, 1), d3 = pad3(c.d, 1),
       o3 = pad3(out, 1), p3 = pad3(pbv, 0);
  std::vector<int64_t> shape{c.N, c.M};
  shape.insert(shape.end(), out.begin(), out.end());
  Tensor y(DType::Float32, shape);
  const int64_t Cg = c.C / c.G, Mg = c.M / c.G;
  const float* X = x.data<float>();
  const float* W = w.data<float>();
  float* Y = y.data<float>();
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t od = 0; od < o3[0]; ++od)
        for (int64_t oh = 0; oh < o3[1]; ++oh)
          for (int64_t ow = 0; ow < o3[2]; ++ow) {
            double acc = b ? b->data<float>()[m] : 0.0;
            const int64_t g = m / Mg;
            for (int64_t ci = 0; ci < Cg; ++ci)
              for (int64_t kd = 0; kd < k3[0]; ++kd)
                for (int64_t kh = 0; kh < k3[1]; ++kh)
                  for (int64_t kw = 0; kw < k3[2]; ++kw) {
                    const int64_t id = od * s3[0] - p3[0] + kd * d3[0];
                    const int64_t ih = oh * s3[1] - p3[1] + kh * d3[1];
                    const int64_t iw = ow * s3[2] - p3[2] + kw * d3[2];
                    if (id < 0 || id >= in3[0] || ih < 0 || ih >= in3[1] || iw < 0 || iw >= in3[2])
                      continue;
                    const int64_t xi =
                        (((n * c.C + g * Cg + ci) * in3[0] + id) * in3[1] + ih) * in3[2] + iw;
                    const int64_t wi = (((m * Cg + ci) * k3[0] + kd) * k3[1] + kh) * k3[2] + kw;
                    acc += static_cast<double>(X[xi]) * W[wi];
                  }
            Y[(((n * c.M + m) * o3[0] + od) * o3[1] + oh) * o3[2] + ow] = static_cast<float>(acc);
          }
  return y;
}

std::vector<int64_t> concat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A Conv of case c with constant weights and bias (drawn from rng in the order x, w, b).
struct ConstConv {
  ModelBuilder m;
  Tensor x, w, b;
};

ConstConv const_conv(const ConvCase& c, std::mt19937& rng) {
  const std::vector<int64_t> xs = concat({c.N, c.C}, c.in), ws = concat({c.M, c.C / c.G}, c.k);
  ConstConv r;
  r.x = random_tensor(xs, rng);
  r.w = random_tensor(ws, rng);
  r.b = random_tensor({c.M}, rng);
  r.m.input("x", DType::Float32, xs).output("y").initializer("w", r.w).initializer("b", r.b);
  auto& node = r.m.node("Conv", {"x", "w", "b"}, {"y"});
  attr_ints(node, "kernel_shape", c.k);
  attr_ints(node, "strides", c.s);
  attr_ints(node, "dilations", c.d);
  attr_i(node, "group", c.G);
  attr_ints(node, "pads", c.pads);
  return r;
}

// Runs the case with the weights (and bias) as initializers or as model inputs.
void check_conv(const ConvCase& c, bool const_weights, std::mt19937& rng) {
  const std::vector<int64_t> xs = concat({c.N, c.C}, c.in), ws = concat({c.M, c.C / c.G}, c.k);
  Tensor x = random_tensor(xs, rng), w = random_tensor(ws, rng), b = random_tensor({c.M}, rng);
  ModelBuilder m;
  m.input("x", DType::Float32, xs).output("y");
  std::map<std::string, Tensor> feeds{{"x", x}};
  if (const_weights) {
    m.initializer("w", w);
    if (c.bias) m.initializer("b", b);
  } else {
    m.input("w", DType::Float32, ws);
    feeds["w"] = w;
    if (c.bias) {
      m.input("b", DType::Float32, {c.M});
      feeds["b"] = b;
    }
  }
  std::vector<std::string> ins{"x", "w"};
  if (c.bias) ins.push_back("b");
  auto& node = m.node("Conv", ins, {"y"});
  attr_ints(node, "kernel_shape", c.k);
  attr_ints(node, "strides", c.s);
  attr_ints(node, "dilations", c.d);
  attr_i(node, "group", c.G);
  if (c.auto_pad.empty())
    attr_ints(node, "pads", c.pads);
  else
    attr_s(node, "auto_pad", c.auto_pad);
  Tensor ref = conv_reference(c, x, w, c.bias ? &b : nullptr);
  auto out = run_model(m, feeds);
  EXPECT_LE(rel_error(out.at("y"), ref), 1e-4)
      << "in " << ocl_infer::shape_to_string(xs) << " w " << ocl_infer::shape_to_string(ws)
      << " group " << c.G << (const_weights ? " constant weights" : " weights as input")
      << " got shape " << ocl_infer::shape_to_string(out.at("y").shape) << " want "
      << ocl_infer::shape_to_string(ref.shape);
}

TEST(Conv, MatchesReference2D) {
  std::mt19937 rng(11);
  const std::vector<ConvCase> cases = {
      {2, 3, 5, 1, {7, 13}, {3, 5}, {2, 2}, {2, 2}, {1, 2, 0, 1}},
      {1, 6, 9, 3, {11, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {1, 5, 5, 5, {9, 17}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},          // depthwise
      {2, 7, 7, 7, {13, 11}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, false},  // depthwise, stride 2
      {1, 4, 8, 4, {10, 19}, {5, 3}, {1, 2}, {2, 1}, {2, 0, 1, 3}},         // depth multiplier 2
      {2, 17, 19, 1, {11, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},        // pointwise
      {1, 13, 33, 1, {5, 37}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},        // 3 channel blocks
      {1, 6, 20, 1, {8, 23}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}},         // 5x5: 2 x 8 channels
                                                                            // on AVX2
      {1, 8, 6, 2, {12, 12}, {1, 1}, {2, 2}, {1, 1}, {0, 0, 0, 0}},         // strided 1x1
      {1, 3, 4, 1, {9, 10}, {3, 3}, {2, 2}, {1, 1}, {}, true, "SAME_UPPER"},
      {1, 3, 4, 1, {9, 10}, {4, 4}, {2, 3}, {1, 1}, {}, true, "SAME_LOWER"},
      {1, 2, 3, 1, {8, 9}, {3, 2}, {1, 1}, {1, 1}, {}, true, "VALID"},
  };
  int k = 0;
  for (const ConvCase& c : cases)
    for (bool constant : {true, false})
      if (!fp16_sampled_out(k++)) check_conv(c, constant, rng);
}

TEST(Conv, MatchesReference1DAnd3D) {
  std::mt19937 rng(12);
  const std::vector<ConvCase> cases = {
      {2, 3, 5, 1, {29}, {5}, {3}, {1}, {2, 1}},
      {1, 4, 4, 4, {23}, {3}, {1}, {2}, {2, 2}},  // depthwise 1-D
      {1, 3, 5, 1, {5, 6, 7}, {3, 2, 3}, {1, 2, 1}, {1, 1, 2}, {1, 0, 1, 1, 1, 0}},
      {2, 4, 4, 4, {4, 5, 6}, {3, 3, 3}, {1, 1, 2}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}},  // depthwise
                                                                                     // 3-D
  };
  int k = 0;
  for (const ConvCase& c : cases)
    for (bool constant : {true, false})
      if (!fp16_sampled_out(k++)) check_conv(c, constant, rng);
}

// The packed kernel reads its input either from a copy with the column padding made real
// (pad=1, one pad_rows launch into the plan's workspace; every work-item unchecked) or in place
// with clamped loads and zeros for columns outside the row (pad=0). Both must give the same
// numbers (the same FMAs with the same zeros), and the reference's, on padded, strided, dilated,
// grouped, batched, 1-D and 3-D geometries, rows narrower than a block and partial last blocks.
// Two convs of different input sizes in one plan share the workspace.
// Rows of 9-13 pixels as one block and rows that one of 9-13 divides (27, 26, 39): the default
// pixel block on devices with 32 vector registers (packed_default_owb). Whatever the block, each
// output sums the same products in the same order: bit-identical to 8-pixel blocks, and the
// reference.
TEST(Conv, PackedWideBlocksMatchReference) {
  std::mt19937 rng(17);
  const std::vector<ConvCase> cases = {
      {1, 20, 40, 1, {4, 13}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {1, 20, 40, 1, {3, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {1, 20, 40, 1, {3, 27}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {2, 18, 33, 1, {5, 26}, {3, 3}, {1, 1}, {1, 1}, {0, 1, 0, 1}},  // partial channel vector
      {1, 20, 40, 1, {5, 54}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},  // stride 2 -> 27 wide
      {1, 60, 36, 1, {3, 39}, {1, 3}, {1, 1}, {1, 1}, {0, 1, 0, 1}},
      {1, 20, 64, 1, {4, 11}, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}},  // 9 wide, unpadded
  };
  for (const ConvCase& c : cases) {
    const std::vector<int64_t> xs = concat({c.N, c.C}, c.in);
    ConstConv cc = const_conv(c, rng);
    ModelBuilder& m = cc.m;
    const Tensor& x = cc.x;
    const Tensor ref = conv_reference(c, x, cc.w, &cc.b);
    ocl_infer::SessionOptions eight;
    eight.kernel_variants = "conv=packed:owb=8";
    auto heuristic = open_session(m, {});
    const Tensor a = heuristic.run({{"x", x}}).at("y"), e = open_session(m, eight).run({{"x", x}}).at("y");
    const std::string what = ocl_infer::shape_to_string(xs) + " " + heuristic.dump("plan");
    EXPECT_LE(rel_error(a, ref), fp16_mode() ? 2e-3 : 1e-4) << what;
    if (heuristic.dump("plan").find("conv=packed") != std::string::npos) {
      EXPECT_EQ(a.bytes, e.bytes) << what;
    }
  }
}

TEST(Conv, PackedPaddedCopyMatchesCheckedPath) {
  std::mt19937 rng(13);
  const std::vector<ConvCase> cases = {
      {2, 6, 20, 2, {7, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},       // every block at a border
      {1, 5, 33, 1, {13, 30}, {3, 3}, {2, 2}, {1, 1}, {0, 2, 1, 0}},     // asymmetric, stride 2
      {1, 4, 9, 1, {9, 23}, {3, 3}, {1, 1}, {2, 3}, {2, 3, 2, 3}},       // dilated
      {1, 3, 16, 1, {11, 40}, {7, 7}, {2, 2}, {1, 1}, {3, 3, 3, 3}},     // stem-like
      {1, 8, 12, 1, {6, 19}, {1, 1}, {2, 2}, {1, 1}, {0, 0, 0, 0}},      // 1x1 s2, partial block
      {2, 3, 7, 1, {37}, {5}, {2}, {1}, {2, 4}},                         // 1-D
      {1, 3, 5, 1, {4, 5, 9}, {3, 2, 3}, {1, 1, 2}, {1, 1, 1}, {1, 0, 1, 1, 1, 2}},  // 3-D
  };
  int k = 0;
  for (const ConvCase& c : cases) {
    if (fp16_sampled_out(k++)) continue;
    const std::vector<int64_t> xs = concat({c.N, c.C}, c.in);
    ConstConv cc = const_conv(c, rng);
    ModelBuilder& m = cc.m;
    const Tensor& x = cc.x;
    const Tensor ref = conv_reference(c, x, cc.w, &cc.b);
    std::map<std::string, Tensor> got;
    for (const char* pad : {"0", "1"}) {
      ocl_infer::SessionOptions opt;
      opt.kernel_variants = std::string("conv=packed:pad=") + pad;
      auto s = open_session(m, opt);
      got[pad] = s.run({{"x", x}}).at("y");
      EXPECT_LE(rel_error(got[pad], ref), 1e-4) << "pad=" << pad << " in " << ocl_infer::shape_to_string(xs);
      EXPECT_EQ(s.dump("plan").find("pad_rows") != std::string::npos, pad[0] == '1') << s.dump("plan");
    }
    EXPECT_EQ(got["0"].bytes, got["1"].bytes) << "in " << ocl_infer::shape_to_string(xs);
  }

  // A small padded conv, then a larger one, then the small one again: the workspace grows once
  // and every conv reads its own copy.
  const int64_t C = 6;
  Tensor x = random_tensor({1, C, 5, 5}, rng);
  ModelBuilder m;
  m.input("x", DType::Float32, {1, C, 5, 5}).output("y");
  ConvCase small{1, C, C, 1, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, false};
  ConvCase grow{1, C, C, 1, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {3, 3, 3, 3}, false};
  ConvCase back{1, C, C, 1, {9, 9}, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}, false};
  Tensor w1 = random_tensor({C, C, 3, 3}, rng), w2 = random_tensor({C, C, 3, 3}, rng),
         w3 = random_tensor({C, C, 3, 3}, rng);
  m.initializer("w1", w1).initializer("w2", w2).initializer("w3", w3);
  attr_ints(m.node("Conv", {"x", "w1"}, {"a"}), "pads", small.pads);
  attr_ints(m.node("Conv", {"a", "w2"}, {"c"}), "pads", grow.pads);  // 5x5 -> 9x9
  attr_ints(m.node("Conv", {"c", "w3"}, {"y"}), "pads", back.pads);  // 9x9 -> 7x7, partial block
  ocl_infer::SessionOptions opt;
  opt.kernel_variants = "conv=packed:pad=1";
  const Tensor got = open_session(m, opt).run({{"x", x}}).at("y");
  const Tensor want = conv_reference(back, conv_reference(grow, conv_reference(small, x, w1, nullptr), w2, nullptr),
                                     w3, nullptr);
  // fp16: the two intermediate tensors are stored as float16 too (2^-11 relative each, summed
  // over 54 products by the next conv).
  EXPECT_LE(rel_error(got, want), fp16_mode() ? 2e-3 : 1e-4);
}

// pixvec: vectors of 16 output pixels along a row (stride 1, or 2 from a copy whose rows are split
// into even and odd columns), the input from a padded copy; the last pixel block moved left to end
// at the row's end. Forced on stems, grouped, batched, dilated (stride 2: even and odd column
// offsets of the taps), asymmetric-padded, 1-D and 3-D geometries, with its defaults
// and, alternating between the cases (each combination is a program build: CI time), each
// parameter's extremes.
TEST(Conv, PixvecMatchesReference) {
  std::mt19937 rng(14);
  const std::vector<ConvCase> cases = {
      {1, 3, 16, 1, {23, 111}, {3, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0}},    // squeezenet-like stem
      {2, 3, 12, 1, {9, 64}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},      // padded stem, batch 2
      {1, 6, 10, 2, {7, 50}, {3, 3}, {1, 1}, {1, 2}, {2, 1, 0, 3}},      // groups, dilation, asym.
      {1, 4, 8, 1, {6, 71}, {3, 3}, {2, 2}, {1, 2}, {1, 2, 0, 1}},       // stride 2, even dilation
      {1, 3, 7, 1, {5, 60}, {2, 4}, {2, 2}, {1, 3}, {0, 4, 1, 3}},       // stride 2, odd dilation
      {1, 4, 9, 1, {5, 37}, {1, 1}, {2, 2}, {1, 1}, {0, 0, 0, 0}},       // 1x1 stride 2
      {2, 3, 5, 1, {70}, {5}, {2}, {1}, {2, 1}},                         // 1-D
      {1, 2, 8, 1, {3, 4, 33}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}},  // 3-D
  };
  int k = 0, n = 0;
  for (const ConvCase& c : cases) {
    ++n;
    for (const char* params : {"", n % 2 ? ":pxv=3" : ":ocb=4,pxv=1"}) {
      if (fp16_sampled_out(k++)) continue;
      const std::vector<int64_t> xs = concat({c.N, c.C}, c.in);
      std::vector<int64_t> out, pb;
      conv_out(c, &out, &pb);
      if (std::string(params) == ":pxv=3" && out.back() < 48) continue;  // rows of 48 pixels at least
      const ConstConv cc = const_conv(c, rng);
      ocl_infer::SessionOptions opt;
      opt.kernel_variants = std::string("conv=pixvec") + params;
      auto s = open_session(cc.m, opt);
      const Tensor got = s.run({{"x", cc.x}}).at("y");
      EXPECT_NE(s.dump("plan").find("conv_f32_pixvec"), std::string::npos) << s.dump("plan");
      EXPECT_LE(rel_error(got, conv_reference(c, cc.x, cc.w, &cc.b)), 1e-4)
          << "pixvec" << params << " in " << ocl_infer::shape_to_string(xs);
    }
  }
}

// The depthwise kernel compiles the row geometry in and has separate paths for: rows narrower
// than a vector (stores spill into the next row), the first and last planes of the input (no
// reads outside the buffer), wide rows (a loop between unrolled borders), bands of rows (few
// large planes), several channels per work-item (many small planes), strides above 2.
TEST(Conv, DepthwiseMatchesReference) {
  std::mt19937 rng(15);
  const std::vector<ConvCase> cases = {
      {2, 6, 6, 6, {9, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},            // narrow rows, N = 2
      {1, 4, 8, 4, {13, 37}, {5, 5}, {2, 2}, {1, 1}, {2, 1, 2, 2}},          // 5x5 stride 2, mult 2
      {2, 3, 3, 3, {12, 61}, {3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}},          // dilation 2
      {1, 5, 5, 5, {4, 300}, {3, 3}, {1, 1}, {1, 1}, {1, 3, 1, 3}},          // wide rows, pad 3
      {1, 2, 2, 2, {130, 70}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},         // bands of rows
      {1, 64, 64, 64, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, false},  // 2 channels per item
      {2, 40, 40, 40, {5, 3}, {3, 3}, {1, 2}, {1, 1}, {1, 0, 1, 1}},         // rows of 1 pixel
      {1, 3, 3, 3, {11, 20}, {3, 3}, {3, 3}, {1, 1}, {1, 1, 1, 1}},          // stride 3
      {1, 7, 7, 7, {16, 16}, {3, 3}, {2, 2}, {1, 1}, {}, true, "SAME_UPPER"},
      // Kernels above 3x3 on rows of one or two vectors: their kh loop is unrolled too.
      {1, 24, 24, 24, {7, 7}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}},         // EfficientNet's 7x7 planes
      {1, 6, 6, 6, {14, 14}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}},          // two vectors a row
      {1, 5, 5, 5, {9, 11}, {7, 7}, {1, 1}, {1, 1}, {3, 3, 3, 3}},           // ConvNeXt-like 7x7
  };
  int k = 0;
  for (const ConvCase& c : cases)
    for (bool constant : {true, false})
      if (!fp16_sampled_out(k++)) check_conv(c, constant, rng);
}

// The quick depthwise kernel (quick=1: the row widths as arguments, a rolled loop of masked
// vectors), which a plan's first run uses on PoCL in place of the depthwise kernel with the widths
// compiled in (runtime/exec/compile_helpers.hpp, tier-up), must give the same bits: each output is
// the same sum in the same order. With a residual and an activation, bands of rows, several
// channels per work-item, 4- and 16-pixel vectors, strides 1-3, dilation, 5x5, wide rows, the
// buffer's first and last planes, and against the reference.
TEST(Conv, DepthwiseQuickKernelGivesTheSameBits) {
  std::mt19937 rng(19);
  struct Quick {
    ConvCase c;
    const char* params;  // the rest of the forced variant
    bool residual;
  };
  const std::vector<Quick> cases = {
      {{2, 6, 6, 6, {9, 17}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, "", true},
      {{1, 4, 8, 4, {13, 37}, {5, 5}, {2, 2}, {1, 1}, {2, 1, 2, 2}}, "", false},
      {{2, 3, 3, 3, {12, 61}, {3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}}, ",owb=4", true},
      {{1, 5, 5, 5, {4, 300}, {3, 3}, {1, 1}, {1, 1}, {1, 3, 1, 3}}, ",owb=16", false},
      {{1, 2, 2, 2, {130, 70}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, ",bands=8", true},
      {{1, 64, 64, 64, {9, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, ",chans=4", true},
      {{1, 3, 3, 3, {11, 40}, {3, 3}, {3, 3}, {1, 1}, {1, 1, 1, 1}}, ",owb=4", false},
      {{2, 8, 8, 8, {30, 112}, {3, 3}, {2, 2}, {1, 1}, {0, 0, 1, 1}}, "", true},
      {{1, 4, 4, 4, {6, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, "", true},   // rows of one vector
      {{1, 5, 5, 5, {9, 15}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}}, "", false},  // loads over 2 rows
      {{1, 2, 2, 2, {2, 12}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, "", true},   // only checked rows
      {{1, 24, 24, 24, {7, 7}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}}, ",owb=4", true},  // 5x5, kh unrolled
      {{1, 6, 6, 6, {14, 14}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}}, "", false},
  };
  const auto same_bits = [](const Tensor& a, const Tensor& b) {
    return a.numel() == b.numel() && std::memcmp(a.data<float>(), b.data<float>(), a.numel() * sizeof(float)) == 0;
  };
  for (const Quick& q : cases) {
    const ConvCase& c = q.c;
    const std::vector<int64_t> xs = concat({c.N, c.C}, c.in), ws = concat({c.M, c.C / c.G}, c.k);
    const Tensor x = random_tensor(xs, rng), w = random_tensor(ws, rng), b = random_tensor({c.M}, rng);
    Tensor ref = conv_reference(c, x, w, &b);
    const Tensor r = random_tensor(ref.shape, rng);
    ModelBuilder m;
    m.input("x", DType::Float32, xs).output("y").initializer("w", w).initializer("b", b);
    auto& node = m.node("Conv", {"x", "w", "b"}, {"conv"});
    attr_ints(node, "strides", c.s);
    attr_ints(node, "dilations", c.d);
    attr_ints(node, "pads", c.pads);
    attr_i(node, "group", c.G);
    std::map<std::string, Tensor> feeds{{"x", x}};
    std::string pre = "conv";
    if (q.residual) {
      m.input("r", DType::Float32, ref.shape);
      m.node("Add", {"conv", "r"}, {"sum"});
      feeds["r"] = r;
      pre = "sum";
    }
    m.node("Relu", {pre}, {"y"});
    for (int64_t i = 0; i < ref.numel(); ++i)
      ref.data<float>()[i] = std::max(ref.data<float>()[i] + (q.residual ? r.data<float>()[i] : 0.0f), 0.0f);
    std::map<int, Tensor> got;
    for (int quick : {0, 1}) {
      ocl_infer::SessionOptions so;
      so.kernel_variants = "conv=depthwise:quick=" + std::to_string(quick) + q.params;
      auto s = open_session(m, so);
      got[quick] = s.run(feeds).at("y");
      EXPECT_LE(rel_error(got[quick], ref), fp16_mode() ? 1e-2 : 1e-5) << so.kernel_variants;
      EXPECT_NE(s.dump("plan").find(quick ? "quick=1" : "quick=0"), std::string::npos) << s.dump("plan");
    }
    EXPECT_TRUE(same_bits(got[0], got[1])) << "in " << ocl_infer::shape_to_string(xs) << q.params;
  }
}

// A session's plans for its second and later input shapes take kernels whose build options do not
// follow the sizes (SessionOptions::shape_generic -1): a depthwise conv with the row widths at run
// time, register blocks chosen without the row width, a broadcast Mul indexed by strides. They
// compute what the host reference does, the third shape builds no program at all (the second's
// serve it), and the first shape's plan (kept) comes back with its specialised kernels.
TEST(Conv, ShapeGenericPlansMatchReferenceAndShareTheirPrograms) {
  if (const char* e = std::getenv("OCL_INFER_SHAPE_GENERIC"); e && *e) GTEST_SKIP() << "OCL_INFER_SHAPE_GENERIC is set";
  std::mt19937 rng(23);
  const ConvCase c1{1, 4, 8, 1, {0, 0}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}};
  const ConvCase c2{1, 8, 8, 8, {0, 0}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}};
  const ConvCase c3{1, 8, 6, 1, {0, 0}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}};
  const Tensor w1 = random_tensor({8, 4, 3, 3}, rng), b1 = random_tensor({8}, rng);
  const Tensor w2 = random_tensor({8, 1, 3, 3}, rng), b2 = random_tensor({8}, rng);
  const Tensor w3 = random_tensor({6, 8, 1, 1}, rng), b3 = random_tensor({6}, rng);
  ModelBuilder m;
  m.input("x", DType::Float32, {1, 4, -1, -1}).input("s", DType::Float32, {1, 4, 1, 1}).output("y").output("z");
  m.initializer("w1", w1).initializer("b1", b1).initializer("w2", w2).initializer("b2", b2);
  m.initializer("w3", w3).initializer("b3", b3);
  auto& n1 = m.node("Conv", {"x", "w1", "b1"}, {"c1"});
  attr_ints(n1, "pads", c1.pads);
  m.node("Relu", {"c1"}, {"a"});
  auto& n2 = m.node("Conv", {"a", "w2", "b2"}, {"d"});
  attr_ints(n2, "pads", c2.pads);
  attr_ints(n2, "strides", c2.s);
  attr_i(n2, "group", 8);
  m.node("Conv", {"d", "w3", "b3"}, {"y"});
  m.node("Mul", {"x", "s"}, {"z"});  // an odd plane: no 4-wide chunks, a row kernel when specialised
  ocl_infer::SessionOptions so;
  so.first_run_kernels = false;  // the plans' own kernels from their first runs (no tier-up)
  auto session = open_session(m, so);
  // First shape (specialised), two new ones (shape-generic), then the first again (kept).
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{13, 17}, {21, 19}, {9, 31}, {13, 17}};
  for (size_t k = 0; k < shapes.size(); ++k) {
    const auto [H, W] = shapes[k];
    const Tensor x = random_tensor({1, 4, H, W}, rng), sc = random_tensor({1, 4, 1, 1}, rng);
    auto out = session.run({{"x", x}, {"s", sc}});
    ConvCase a = c1, b = c2, d = c3;
    a.in = {H, W};
    Tensor ref = conv_reference(a, x, w1, &b1);
    for (int64_t i = 0; i < ref.numel(); ++i) ref.data<float>()[i] = std::max(ref.data<float>()[i], 0.0f);
    b.in = a.in;
    ref = conv_reference(b, ref, w2, &b2);
    d.in = {ref.shape[2], ref.shape[3]};
    ref = conv_reference(d, ref, w3, &b3);
    EXPECT_LE(rel_error(out.at("y"), ref), fp16_mode() ? 1e-2 : 1e-5) << H << "x" << W;
    Tensor zref(DType::Float32, x.shape);
    for (int64_t i = 0; i < x.numel(); ++i)
      zref.data<float>()[i] = x.data<float>()[i] * sc.data<float>()[i / (H * W)];
    EXPECT_LE(rel_error(out.at("z"), zref), fp16_mode() ? 1e-2 : 1e-6) << H << "x" << W;
    const std::string plan = session.dump("plan");
    // The checks of the plan's kernels: on devices that take the CPU-shaped variants (the GPU-shaped
    // ones, rusticl's, have no shape-generic form yet and compute the same above).
    if (plan.find("conv=depthwise:") == std::string::npos) continue;
    const bool generic = k == 1 || k == 2;
    EXPECT_EQ(plan.find("shape-generic") != std::string::npos, generic) << plan;
    EXPECT_EQ(plan.find("quick=1") != std::string::npos, generic) << plan;
    // (Not in fp16 mode: the test's casts to and from float16 take chunks of 16, 8 or 4 by size.)
    if (k == 2 && !fp16_mode()) {
      EXPECT_EQ(session.stats().programs_built + session.stats().programs_cached, 0) << plan;
    }
  }
  EXPECT_EQ(session.stats().plan_reuses, 1);
}

// 1x1 convs over at least 16 pixels run as vectors along the pixels, the last vector moved back
// to end at the last pixel; fewer pixels take the general kernel.
TEST(Conv, PointwiseMatchesReference) {
  std::mt19937 rng(16);
  const std::vector<ConvCase> cases = {
      {2, 5, 13, 1, {7, 9}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},        // 63 pixels, N = 2
      {1, 6, 10, 2, {4, 4}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},        // 16 pixels, groups
      {1, 3, 4, 1, {3, 5}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, false},  // 15 pixels
      {1, 19, 3, 1, {41}, {1}, {1}, {1}, {0, 0}},                         // 1-D, 3 channels
      {2, 4, 9, 1, {3, 4, 5}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}},  // 3-D
  };
  int k = 0;
  for (const ConvCase& c : cases)
    for (bool constant : {true, false})
      if (!fp16_sampled_out(k++)) check_conv(c, constant, rng);
}

// The packed and pointwise kernels prefetch later channels' input rows on PoCL's x86 CPU drivers
// (DeviceCaps::cpu_prefetch; OCL_INFER_PREFETCH=0 turns it off). A prefetch moves no numbers: the
// same bits with and without, and the reference's, on padded 3x3 convs (the padded copy's rows and
// the checked loads at the borders), 1x1 convs over planes of more and fewer than 48 pixels, and
// fewer input channels than the prefetch distance (the address clamped to the last channel).
TEST(Conv, PrefetchGivesTheSameBits) {
  std::mt19937 rng(19);
  const std::vector<ConvCase> cases = {
      {1, 19, 40, 1, {21, 30}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},  // packed, padded copy
      {1, 3, 33, 1, {9, 17}, {3, 3}, {2, 2}, {1, 1}, {1, 0, 1, 2}},   // 3 channels, stride 2
      {2, 37, 24, 1, {48, 48}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},  // pointwise, 9 KB rows
      {1, 2, 20, 1, {13, 13}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},   // 2 channels, 169 pixels
      {1, 12, 16, 2, {7, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},    // groups, 49 pixels
  };
  struct Env {
    ~Env() { unsetenv("OCL_INFER_PREFETCH"); ocl_infer::release_shared_contexts(); }
  } restore;
  int k = 0;
  for (const ConvCase& c : cases) {
    if (fp16_sampled_out(k++)) continue;
    ConstConv cc = const_conv(c, rng);
    const Tensor ref = conv_reference(c, cc.x, cc.w, &cc.b);
    std::map<std::string, Tensor> got;
    for (const char* on : {"1", "0"}) {
      setenv("OCL_INFER_PREFETCH", on, 1);
      ocl_infer::release_shared_contexts();  // the device's capabilities are read with its context
      ocl_infer::SessionOptions opt;
      std::vector<std::string> log;
      opt.log = [&log](const std::string& line) { log.push_back(line); };
      auto s = open_session(cc.m, opt);
      got[on] = s.run({{"x", cc.x}}).at("y");
      EXPECT_LE(rel_error(got[on], ref), fp16_mode() ? 2e-3 : 1e-4)
          << "prefetch=" << on << " in " << ocl_infer::shape_to_string(cc.x.shape) << "\n" << s.dump("plan");
      bool said = false;
      for (const std::string& l : log) said |= l.find("software prefetch") != std::string::npos;
#if defined(__x86_64__)
      const bool expected = on[0] == '1' && s.device().type == "CPU" && s.device().platform == "Portable Computing Language";
#else
      const bool expected = false;
#endif
      EXPECT_EQ(said, expected) << "prefetch=" << on;
    }
    EXPECT_EQ(got["0"].bytes, got["1"].bytes) << "in " << ocl_infer::shape_to_string(cc.x.shape);
  }
}

// Conv -> Add(residual) -> activation fuses into one kernel (Node::epilogue); the numbers must
// still match, for the packed and the depthwise kernel.
TEST(Conv, FusedResidualAndActivationMatchReference) {
  std::mt19937 rng(14);
  struct Fused {
    ConvCase c;
    const char* act;
    bool residual;
  };
  const std::vector<Fused> cases = {
      {{1, 6, 10, 1, {9, 11}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, "Relu", true},
      // 48 channels: two 16-channel vectors per work-item where the CPU has 16-float registers,
      // the second block's second vector empty.
      {{1, 8, 48, 1, {9, 11}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, "Relu", true},
      // 20 channels (one 16-channel vector per work-item), rows of 17: whole 8-pixel blocks
      // stored through the in-register transpose, the last pixel lane by lane.
      {{1, 5, 20, 1, {6, 17}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, "Sigmoid", true},
      {{1, 6, 10, 1, {9, 11}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}}, "Sigmoid", false},
      {{2, 5, 5, 5, {7, 12}, {3, 3}, {2, 1}, {1, 1}, {1, 1, 1, 1}}, "Clip", true},
      // Depthwise: rows narrower than a vector with 2 channels per work-item; an activation
      // applied lane by lane; 5x5 stride 2.
      {{1, 64, 64, 64, {6, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, "Clip", true},
      {{1, 16, 16, 16, {10, 19}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, "Sigmoid", false},
      // Rows of 7 (narrower than a vector): the last row's vector epilogue with a residual.
      {{1, 24, 24, 24, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, "Sigmoid", true},
      {{2, 8, 8, 8, {9, 12}, {5, 5}, {2, 2}, {1, 1}, {2, 2, 2, 2}}, "Relu", true},
      // Pointwise with pixel vectors, residual and Clip; planes of 49 and 56 pixels (on CPUs two
      // blocks of 24, then a block of one 8-pixel vector ending at the plane's end, with a
      // compiled activation and with the run-time clamp).
      {{2, 12, 20, 1, {5, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}}, "Clip", true},
      {{2, 12, 20, 1, {7, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}}, "Sigmoid", true},
      {{1, 9, 13, 1, {7, 8}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}}, "Relu", true},
      // Winograd (the CPU-shaped default from 16 channels in, 64 out and 10x10 outputs): odd
      // output sizes (partial tiles, 4-tile vectors with padding tiles, 8-channel vectors); 16-tile
      // rows (8-tile vectors) with asymmetric padding and a compiled activation; 66 channels
      // (4-channel vectors, the last block overlapping its neighbour) over two images.
      {{1, 16, 64, 1, {11, 13}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, "Relu", true},
      {{1, 20, 72, 1, {6, 32}, {3, 3}, {1, 1}, {1, 1}, {1, 0, 1, 2}}, "Sigmoid", true},
      {{2, 16, 66, 1, {10, 13}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, "Clip", true},
      {{1, 16, 64, 1, {12, 12}, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}}, "Relu", false},
  };
  for (const Fused& f : cases) {
    const ConvCase& c = f.c;
    const std::vector<int64_t> xs = concat({c.N, c.C}, c.in), ws = concat({c.M, c.C / c.G}, c.k);
    Tensor x = random_tensor(xs, rng), w = random_tensor(ws, rng), b = random_tensor({c.M}, rng);
    Tensor ref = conv_reference(c, x, w, &b);
    Tensor r = random_tensor(ref.shape, rng);
    ModelBuilder m;
    m.input("x", DType::Float32, xs).output("y");
    m.initializer("w", w).initializer("b", b);
    auto& node = m.node("Conv", {"x", "w", "b"}, {"conv"});
    attr_ints(node, "strides", c.s);
    attr_ints(node, "pads", c.pads);
    attr_i(node, "group", c.G);
    std::map<std::string, Tensor> feeds{{"x", x}};
    std::string pre = "conv";
    if (f.residual) {
      m.input("r", DType::Float32, ref.shape);
      m.node("Add", {"conv", "r"}, {"sum"});
      feeds["r"] = r;
      pre = "sum";
    }
    std::string act = f.act;
    if (act == "Clip") {
      Tensor lo(DType::Float32, {}), hi(DType::Float32, {});
      lo.data<float>()[0] = 0.0f;
      hi.data<float>()[0] = 0.5f;
      m.initializer("lo", lo).initializer("hi", hi);
      m.node("Clip", {pre, "lo", "hi"}, {"y"});
    } else {
      m.node(act, {pre}, {"y"});
    }
    for (int64_t i = 0; i < ref.numel(); ++i) {
      float v = ref.data<float>()[i] + (f.residual ? r.data<float>()[i] : 0.0f);
      v = act == "Relu"      ? std::max(v, 0.0f)
          : act == "Sigmoid" ? 1.0f / (1.0f + std::exp(-v))
                             : std::min(std::max(v, 0.0f), 0.5f);
      ref.data<float>()[i] = v;
    }
    // The 3x3 stride-1 convs with 64+ output channels above run as Winograd (forced: the
    // default takes it on CPU-shaped devices with vectors narrower than 16 floats only).
    const bool winograd =
        c.G == 1 && c.M >= 64 && c.k == std::vector<int64_t>{3, 3} && c.s == std::vector<int64_t>{1, 1};
    ocl_infer::SessionOptions opt;
    if (winograd) opt.kernel_variants = "conv=winograd";
    auto s = open_session(m, opt);
    auto out = s.run(feeds);
    EXPECT_LE(rel_error(out.at("y"), ref), 1e-5) << act;
    const std::string fused = std::string("Conv") + (f.residual ? "+Add+" : "+") + act;
    EXPECT_NE(s.dump("graph").find(fused), std::string::npos) << s.dump("graph");
    if (winograd) {
      EXPECT_NE(s.dump("plan.json").find("\"name\": \"winograd\""), std::string::npos) << s.dump("plan");
    }
  }
}

TEST(Conv, BadGroupIsAModelError) {
  ModelBuilder m;
  m.input("x", DType::Float32, {1, 4, 5, 5}).input("w", DType::Float32, {6, 2, 3, 3}).output("y");
  attr_i(m.node("Conv", {"x", "w"}, {"y"}), "group", 3);
  try {
    run_model(m, {{"x", Tensor(DType::Float32, {1, 4, 5, 5})},
                  {"w", Tensor(DType::Float32, {6, 2, 3, 3})}});
    FAIL() << "expected a ModelError";
  } catch (const ocl_infer::ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("group 3"), std::string::npos) << e.what();
  }
}

TEST(Conv, Float64IsUnsupported) {
  ModelBuilder m;
  m.input("x", DType::Float64, {1, 1, 3, 3}).input("w", DType::Float64, {1, 1, 1, 1}).output("y");
  m.node("Conv", {"x", "w"}, {"y"});
  EXPECT_THROW(run_model(m, {{"x", Tensor(DType::Float64, {1, 1, 3, 3})},
                             {"w", Tensor(DType::Float64, {1, 1, 1, 1})}}),
               ocl_infer::UnsupportedError);
}

// ---- ConvTranspose -------------------------------------------------------------------------
struct ConvTCase {
  int64_t N, C, Mg, G;
  std::vector<int64_t> in, k, s, d, pads, out_pad;
  bool bias = true;
};

Tensor conv_transpose_reference(const ConvTCase& c, const Tensor& x, const Tensor& w,
                                const Tensor* b) {
  const size_t r = c.in.size();
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i)
    out[i] = c.s[i] * (c.in[i] - 1) + c.out_pad[i] + (c.k[i] - 1) * c.d[i] + 1 - c.pads[i] -
             c.pads[i + r];
  std::vector<int64_t> pb(c.pads.begin(), c.pads.begin() + r);
  auto in3 = pad3(c.in, 1), k3 = pad3(c.k, 1), s3 = pad3(c.s, 1), d3 = pad3(c.d, 1),
       o3 = pad3(out, 1), p3 = pad3(pb, 0);
  const int64_t M = c.Mg * c.G, Cg = c.C / c.G;
  Tensor y(DType::Float32, concat({c.N, M}, out));
  float* Y = y.data<float>();
  const int64_t oplane = o3[0] * o3[1] * o3[2];
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t i = 0; i < oplane; ++i)
        Y[(n * M + m) * oplane + i] = b ? b->data<float>()[m] : 0;
  // Scatter form, the definition's own direction.
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t ci = 0; ci < c.C; ++ci)
      for (int64_t id = 0; id < in3[0]; ++id)
        for (int64_t ih = 0; ih < in3[1]; ++ih)
          for (int64_t iw = 0; iw < in3[2]; ++iw) {
            const float xv =
                x.data<float>()[(((n * c.C + ci) * in3[0] + id) * in3[1] + ih) * in3[2] + iw];
            const int64_t g = ci / Cg;
            for (int64_t mo = 0; mo < c.Mg; ++mo)
              for (int64_t kd = 0; kd < k3[0]; ++kd)
                for (int64_t kh = 0; kh < k3[1]; ++kh)
                  for (int64_t kw = 0; kw < k3[2]; ++kw) {
                    const int64_t od = id * s3[0] + kd * d3[0] - p3[0];
                    const int64_t oh = ih * s3[1] + kh * d3[1] - p3[1];
                    const int64_t ow = iw * s3[2] + kw * d3[2] - p3[2];
                    if (od < 0 || od >= o3[0] || oh < 0 || oh >= o3[1] || ow < 0 || ow >= o3[2])
                      continue;
                    const float wv =
                        w.data<float>()[(((ci * c.Mg + mo) * k3[0] + kd) * k3[1] + kh) * k3[2] +
                                        kw];
                    Y[(n * M + g * c.Mg + mo) * oplane + (od * o3[1] + oh) * o3[2] + ow] += xv * wv;
                  }
          }
  return y;
}

TEST(ConvTranspose, MatchesReference) {
  std::mt19937 rng(13);
  const std::vector<ConvTCase> cases = {
      {2, 3, 5, 1, {7, 5}, {3, 3}, {2, 2}, {1, 1}, {1, 0, 1, 2}, {1, 0}},
      {1, 4, 3, 2, {5, 6}, {3, 2}, {1, 3}, {2, 1}, {0, 1, 2, 0}, {0, 2}, false},
      {1, 2, 3, 1, {11}, {4}, {3}, {1}, {1, 1}, {2}},
      {1, 2, 2, 1, {3, 4, 3}, {2, 3, 2}, {2, 1, 2}, {1, 1, 1}, {0, 1, 0, 1, 0, 0}, {1, 0, 0}},
      // Kernel = stride (the FPN / U-Net / text-detector upsampling; one source per output: a
      // scatter kernel on CPU devices): plain, cropped by pads, 2 images x 2 groups, 1-D, 3 x 2,
      // and with output_padding (outputs with no source: the general kernel).
      {1, 6, 4, 1, {5, 7}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}, {0, 0}},
      {1, 3, 5, 1, {4, 6}, {2, 2}, {2, 2}, {1, 1}, {1, 0, 0, 1}, {0, 0}},
      {2, 4, 3, 2, {3, 5}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}, {0, 0}, false},
      {1, 2, 3, 1, {9}, {3}, {3}, {1}, {1, 2}, {0}},
      {1, 5, 2, 1, {4, 3}, {3, 2}, {3, 2}, {1, 1}, {2, 1, 1, 0}, {0, 0}},
      {1, 3, 2, 1, {4, 5}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}, {1, 1}},
  };
  for (const ConvTCase& c : cases)
    for (bool constant : {true, false}) {
      const std::vector<int64_t> xs = concat({c.N, c.C}, c.in), ws = concat({c.C, c.Mg}, c.k);
      Tensor x = random_tensor(xs, rng), w = random_tensor(ws, rng),
             b = random_tensor({c.Mg * c.G}, rng);
      ModelBuilder m;
      m.input("x", DType::Float32, xs).output("y");
      std::map<std::string, Tensor> feeds{{"x", x}};
      if (constant) {
        m.initializer("w", w);
        if (c.bias) m.initializer("b", b);
      } else {
        m.input("w", DType::Float32, ws);
        feeds["w"] = w;
        if (c.bias) {
          m.input("b", DType::Float32, {c.Mg * c.G});
          feeds["b"] = b;
        }
      }
      std::vector<std::string> ins{"x", "w"};
      if (c.bias) ins.push_back("b");
      auto& node = m.node("ConvTranspose", ins, {"y"});
      attr_ints(node, "strides", c.s);
      attr_ints(node, "dilations", c.d);
      attr_ints(node, "pads", c.pads);
      attr_ints(node, "output_padding", c.out_pad);
      attr_i(node, "group", c.G);
      Tensor ref = conv_transpose_reference(c, x, w, c.bias ? &b : nullptr);
      auto out = run_model(m, feeds);
      EXPECT_LE(rel_error(out.at("y"), ref), 1e-4)
          << "in " << ocl_infer::shape_to_string(xs) << (constant ? " constant" : " input")
          << " weights, got " << ocl_infer::shape_to_string(out.at("y").shape) << " want "
          << ocl_infer::shape_to_string(ref.shape);
    }
}

// ---- timing (not run by default: --gtest_also_run_disabled_tests) ---------------------------
double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Prints the best wall-clock rate and the rate per CPU-second of all the process's threads (the
// latter is steadier on a shared machine).
void time_conv(int64_t C, int64_t M, int64_t HW, int64_t k, int64_t stride, int64_t group,
               int reps) {
  std::mt19937 rng(5);
  ModelBuilder m;
  m.input("x", DType::Float32, {1, C, HW, HW}).output("y");
  m.initializer("w", random_tensor({M, C / group, k, k}, rng))
      .initializer("b", random_tensor({M}, rng));
  auto& node = m.node("Conv", {"x", "w", "b"}, {"y"});
  attr_ints(node, "pads", std::vector<int64_t>(4, k / 2));
  attr_ints(node, "strides", {stride, stride});
  attr_i(node, "group", group);
  std::string bytes = m.bytes();
  auto s = ocl_infer::Session::from_memory(bytes.data(), bytes.size());
  std::map<std::string, Tensor> feeds{{"x", random_tensor({1, C, HW, HW}, rng)}};
  s.run(feeds);
  double best = 1e30;
  const double cpu0 = cpu_seconds();
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    s.run(feeds);
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double cpu = (cpu_seconds() - cpu0) / reps;
  const int64_t out = (HW + stride - 1) / stride;
  const double flops = 2.0 * (C / group) * M * k * k * out * out;
  std::printf(
      "conv %ldx%ld %ld->%ld %ldx%ld stride %ld group %ld: %.1f GFLOP/s wall, %.1f per CPU-second, "
      "%.3f ms\n",
      static_cast<long>(k), static_cast<long>(k), static_cast<long>(C), static_cast<long>(M),
      static_cast<long>(HW), static_cast<long>(HW), static_cast<long>(stride),
      static_cast<long>(group), flops / best * 1e-9, flops / cpu * 1e-9, best * 1e3);
}

TEST(Conv, DISABLED_Timing) {
  {
    // What a run costs besides the conv: upload, download, launch.
    std::mt19937 rng(5);
    ModelBuilder m;
    m.input("x", DType::Float32, {1, 128, 56, 56}).output("y");
    m.node("Relu", {"x"}, {"y"});
    std::string bytes = m.bytes();
    auto s = ocl_infer::Session::from_memory(bytes.data(), bytes.size());
    std::map<std::string, Tensor> feeds{{"x", random_tensor({1, 128, 56, 56}, rng)}};
    s.run(feeds);
    double best = 1e30;
    for (int r = 0; r < 30; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      s.run(feeds);
      best = std::min(best,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf("baseline: Relu on [1,128,56,56] %.3f ms\n", best * 1e3);
  }
  time_conv(64, 64, 56, 3, 1, 1, 30);
  time_conv(256, 64, 56, 1, 1, 1, 30);
  time_conv(256, 256, 14, 3, 1, 1, 30);
  time_conv(512, 512, 7, 3, 1, 1, 30);
  time_conv(128, 128, 56, 3, 2, 1, 30);
  time_conv(3, 64, 224, 7, 2, 1, 10);
  time_conv(128, 128, 56, 3, 1, 128, 30);
}

// MobileNetV2 pointwise layers: expansions with few input channels on large planes, projections.
TEST(Conv, DISABLED_PointwiseTiming) {
  time_conv(16, 96, 112, 1, 1, 1, 20);
  time_conv(32, 16, 112, 1, 1, 1, 20);
  time_conv(24, 144, 56, 1, 1, 1, 30);
  time_conv(144, 24, 56, 1, 1, 1, 30);
  time_conv(32, 192, 28, 1, 1, 1, 30);
  time_conv(96, 576, 14, 1, 1, 1, 30);
  time_conv(576, 96, 14, 1, 1, 1, 30);
  time_conv(320, 1280, 7, 1, 1, 1, 30);
}

// MobileNetV2 / EfficientNet-Lite0 depthwise layers.
TEST(Conv, DISABLED_DepthwiseTiming) {
  time_conv(32, 32, 112, 3, 1, 32, 30);
  time_conv(96, 96, 112, 3, 2, 96, 30);
  time_conv(144, 144, 56, 3, 1, 144, 30);
  time_conv(144, 144, 56, 3, 2, 144, 30);
  time_conv(192, 192, 28, 3, 1, 192, 30);
  time_conv(384, 384, 14, 3, 1, 384, 30);
  time_conv(576, 576, 14, 3, 1, 576, 30);
  time_conv(576, 576, 14, 3, 2, 576, 30);
  time_conv(960, 960, 7, 3, 1, 960, 30);
  time_conv(240, 240, 28, 5, 1, 240, 30);
  time_conv(672, 672, 14, 5, 2, 672, 30);
}

}  // namespace
