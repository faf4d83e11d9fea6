// Pooling ops against direct CPU loops: MaxPool (with dilations, ceil_mode, Indices, uint8),
// AveragePool (count_include_pad both ways), LpPool and the Global* forms, over 1-D, 2-D and 3-D
// inputs of odd sizes.
#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

struct PoolCase {
  std::string op;
  std::vector<int64_t> x;  // N, C, spatial...
  std::vector<int64_t> k, s, d, pads;
  bool ceil = false, count_pad = false;
};

std::array<int64_t, 3> pad3(const std::vector<int64_t>& v, int64_t fill) {
  std::array<int64_t, 3> r{fill, fill, fill};
  for (size_t i = 0; i < v.size(); ++i) r[3 - v.size() + i] = v[i];
  return r;
}

// Returns Y and (for MaxPool) the flat argmax indices.
std::pair<Tensor, Tensor> pool_reference(const PoolCase& c, const Tensor& x) {
  const size_t r = c.x.size() - 2;
  std::vector<int64_t> in(c.x.begin() + 2, c.x.end()), out(r), pe(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t ek = (c.k[i] - 1) * c.d[i] + 1;
    const int64_t span = in[i] + c.pads[i] + c.pads[i + r] - ek;
    out[i] = (c.ceil ? (span + c.s[i] - 1) / c.s[i] : span / c.s[i]) + 1;
    if (c.ceil && (out[i] - 1) * c.s[i] >= in[i] + c.pads[i]) --out[i];
    pe[i] = c.pads[i + r];
  }
  std::vector<int64_t> pb(c.pads.begin(), c.pads.begin() + r);
  auto i3 = pad3(in, 1), o3 = pad3(out, 1), k3 = pad3(c.k, 1), s3 = pad3(c.s, 1), d3 = pad3(c.d, 1),
       b3 = pad3(pb, 0), e3 = pad3(pe, 0);
  std::vector<int64_t> ys{c.x[0], c.x[1]};
  ys.insert(ys.end(), out.begin(), out.end());
  Tensor y(x.dtype, ys), idx(DType::Int64, ys);
  const int64_t plane = i3[0] * i3[1] * i3[2];
  int64_t o = 0;
  for (int64_t nc = 0; nc < c.x[0] * c.x[1]; ++nc)
    for (int64_t od = 0; od < o3[0]; ++od)
      for (int64_t oh = 0; oh < o3[1]; ++oh)
        for (int64_t ow = 0; ow < o3[2]; ++ow, ++o) {
          double best = -INFINITY, sum = 0;
          int64_t at = 0, valid = 0, padded = 0;
          for (int64_t kd = 0; kd < k3[0]; ++kd)
            for (int64_t kh = 0; kh < k3[1]; ++kh)
              for (int64_t kw = 0; kw < k3[2]; ++kw) {
                const int64_t pos[3] = {od * s3[0] - b3[0] + kd * d3[0],
                                        oh * s3[1] - b3[1] + kh * d3[1],
                                        ow * s3[2] - b3[2] + kw * d3[2]};
                bool inside = true, in_padded = true;
                for (int a = 0; a < 3; ++a) {
                  inside &= pos[a] >= 0 && pos[a] < i3[a];
                  in_padded &= pos[a] >= -b3[a] && pos[a] < i3[a] + e3[a];
                }
                padded += in_padded;
                if (!inside) continue;
                const int64_t flat = (pos[0] * i3[1] + pos[1]) * i3[2] + pos[2];
                const double v = x.dtype == DType::UInt8 ? x.data<uint8_t>()[nc * plane + flat]
                                                         : x.data<float>()[nc * plane + flat];
                if (v > best) {
                  best = v;
                  at = nc * plane + flat;
                }
                sum += c.op == "LpPool" ? v * v : v;
                ++valid;
              }
          double res = c.op == "MaxPool"  ? best
                       : c.op == "LpPool" ? std::sqrt(sum)
                                          : sum / static_cast<double>(c.count_pad ? padded : valid);
          if (x.dtype == DType::UInt8)
            y.data<uint8_t>()[o] = static_cast<uint8_t>(res);
          else
            y.data<float>()[o] = static_cast<float>(res);
          idx.data<int64_t>()[o] = at;
        }
  return {y, idx};
}

TEST(Pool, MatchesReference) {
  std::mt19937 rng(31);
  const std::vector<PoolCase> cases = {
      {"MaxPool", {2, 3, 7, 13}, {3, 2}, {2, 1}, {1, 1}, {1, 0, 1, 1}},
      {"MaxPool", {1, 2, 11, 9}, {3, 3}, {2, 2}, {2, 1}, {0, 0, 0, 0}, true},
      {"MaxPool", {1, 3, 17}, {4}, {3}, {1}, {2, 1}, true},
      {"MaxPool", {1, 2, 5, 6, 7}, {2, 3, 2}, {2, 2, 1}, {1, 1, 1}, {0, 1, 0, 1, 0, 1}},
      {"AveragePool", {2, 3, 7, 13}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
      {"AveragePool", {2, 3, 7, 13}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, false, true},
      {"AveragePool", {1, 2, 10, 10}, {3, 3}, {3, 3}, {1, 1}, {1, 0, 1, 0}, true, true},
      {"AveragePool", {1, 2, 19}, {5}, {2}, {1}, {2, 2}, false, false},
      {"AveragePool", {1, 1, 4, 5, 6}, {2, 2, 3}, {1, 2, 2}, {1, 1, 1}, {0, 0, 1, 1, 1, 1}},
      {"LpPool", {1, 3, 8, 9}, {2, 3}, {2, 2}, {1, 1}, {0, 1, 0, 1}},
  };
  for (const PoolCase& c : cases) {
    Tensor x = random_tensor(c.x, rng);
    ModelBuilder m;
    m.input("x", DType::Float32, c.x).output("y");
    const bool indices = c.op == "MaxPool";
    if (indices) m.output("i");
    auto& node = m.node(
        c.op, {"x"}, indices ? std::vector<std::string>{"y", "i"} : std::vector<std::string>{"y"});
    attr_ints(node, "kernel_shape", c.k);
    attr_ints(node, "strides", c.s);
    if (c.op != "LpPool") attr_ints(node, "dilations", c.d);
    attr_ints(node, "pads", c.pads);
    if (c.op != "LpPool") attr_i(node, "ceil_mode", c.ceil);
    if (c.op == "AveragePool") attr_i(node, "count_include_pad", c.count_pad);
    auto [ref, ref_idx] = pool_reference(c, x);
    auto out = run_model(m, {{"x", x}});
    EXPECT_LE(rel_error(out.at("y"), ref), 1e-5)
        << c.op << " " << ocl_infer::shape_to_string(c.x) << " got "
        << ocl_infer::shape_to_string(out.at("y").shape);
    if (indices) {
      const Tensor& got = out.at("i");
      ASSERT_EQ(got.shape, ref_idx.shape);
      for (int64_t i = 0; i < got.numel(); ++i)
        ASSERT_EQ(got.data<int64_t>()[i], ref_idx.data<int64_t>()[i]) << c.op << " at " << i;
    }
  }
}

// A pool of case c (its op: MaxPool without indices, or AveragePool), and a MaxPool's random input
// with ties and some -inf values.
ModelBuilder pool_model(const PoolCase& c, DType t = DType::Float32) {
  ModelBuilder m;
  m.input("x", t, c.x).output("y");
  auto& node = m.node(c.op, {"x"}, {"y"});
  attr_ints(node, "kernel_shape", c.k);
  attr_ints(node, "strides", c.s);
  attr_ints(node, "dilations", c.d);
  attr_ints(node, "pads", c.pads);
  attr_i(node, "ceil_mode", c.ceil);
  return m;
}
Tensor maxpool_input(const PoolCase& c, std::mt19937& rng) {
  Tensor x = random_tensor(c.x, rng);
  for (int64_t i = 0; i < x.numel(); i += 7) x.data<float>()[i] = x.data<float>()[i / 2];  // ties
  for (int64_t i = 3; i < x.numel(); i += 29) x.data<float>()[i] = -INFINITY;
  return x;
}

// MaxPool without indices over wide rows takes pool_max_rows' vector path (runs of 8 outputs whose
// windows lie inside the input, stride 1 or 2) next to its per-output path at the borders: both
// against the reference on values with ties and -inf, and, with NaN in the input, exactly equal to
// the one-output-per-work-item kernel (pool=generic): a NaN counts only as a window's first tap.
TEST(Pool, MaxPoolRowsVectorPath) {
  std::mt19937 rng(33);
  const std::vector<PoolCase> cases = {
      {"MaxPool", {1, 3, 9, 61}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
      {"MaxPool", {2, 2, 6, 40}, {2, 2}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      {"MaxPool", {1, 2, 8, 50}, {3, 3}, {1, 1}, {2, 2}, {1, 2, 1, 2}},
      {"MaxPool", {1, 1, 5, 45}, {3, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0}, true},
      {"MaxPool", {1, 2, 20, 23}, {3, 5}, {1, 2}, {1, 1}, {0, 2, 0, 2}},
      {"MaxPool", {1, 2, 4, 5, 37}, {2, 2, 3}, {1, 1, 2}, {1, 1, 1}, {0, 0, 1, 0, 0, 1}},
      {"MaxPool", {1, 1, 1, 33}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      // Rows whose last outputs lie inside but past the last vector run (squeezenet1_1's 111-wide
      // rows), and the same with dilated, padded windows.
      {"MaxPool", {1, 2, 5, 111}, {3, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0}, true},
      {"MaxPool", {1, 1, 6, 70}, {3, 3}, {2, 2}, {2, 2}, {1, 1, 1, 1}},
      // Stride 2 with two adjacent columns, and a 3-D window of three (one load per window row).
      {"MaxPool", {1, 2, 6, 53}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}},
      {"MaxPool", {1, 1, 4, 5, 58}, {2, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1, 0, 1, 1}},
  };
  for (const PoolCase& c : cases) {
    const ModelBuilder m = pool_model(c);
    Tensor x = maxpool_input(c, rng);
    const Tensor ref = pool_reference(c, x).first;
    const std::string what = ocl_infer::shape_to_string(c.x);
    ocl_infer::SessionOptions rows, generic;
    rows.kernel_variants = "pool=rows";
    generic.kernel_variants = "pool=generic";
    auto rows_session = open_session(m, rows);
    auto generic_session = open_session(m, generic);
    EXPECT_LE(rel_error(rows_session.run({{"x", x}}).at("y"), ref), 1e-6) << what;
    // Signed zeros (the two compare equal: which one a window gives depends on the tap order) and
    // NaNs: the rows kernel must give the generic kernel's bits.
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::max(x.data<float>()[i], 0.0f);
    for (int64_t i = 2; i < x.numel(); i += 3) x.data<float>()[i] = i % 2 ? -0.0f : 0.0f;
    for (int64_t i = 5; i < x.numel(); i += 13) x.data<float>()[i] = NAN;
    const Tensor a = rows_session.run({{"x", x}}).at("y"), g = generic_session.run({{"x", x}}).at("y");
    ASSERT_EQ(a.shape, g.shape) << what;
    for (int64_t i = 0; i < a.numel(); ++i) {
      const float u = a.data<float>()[i], v = g.data<float>()[i];
      ASSERT_TRUE((u == v && std::signbit(u) == std::signbit(v)) || (std::isnan(u) && std::isnan(v)))
          << what << " at " << i << ": " << u << " vs " << v;
    }
  }
}

// 2-D MaxPools with stride 1 (SPP / SPPF blocks) take pool_max_sep on CPU devices: rows reduced
// along their columns into a ring, then down the columns, 8-float vectors with a tail. Against the
// reference on values with ties and -inf, by default and forced, for YOLOv8's 5x5 SPPF window,
// odd widths (a row's last vector partial), asymmetric and no padding, windows as tall as the
// plane, one-row planes and 1xK / Kx1 windows; forced, the plan must name the kernel.
TEST(Pool, MaxPoolSeparableStrideOne) {
  std::mt19937 rng(35);
  const std::vector<PoolCase> cases = {
      {"MaxPool", {1, 8, 20, 20}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}},
      {"MaxPool", {2, 3, 13, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {"MaxPool", {1, 2, 11, 30}, {9, 9}, {1, 1}, {1, 1}, {4, 4, 4, 4}},
      {"MaxPool", {1, 3, 9, 17}, {3, 5}, {1, 1}, {1, 1}, {2, 0, 0, 4}},
      {"MaxPool", {1, 2, 6, 17}, {2, 2}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      {"MaxPool", {1, 2, 5, 9}, {5, 3}, {1, 1}, {1, 1}, {0, 1, 0, 1}},
      {"MaxPool", {1, 4, 1, 40}, {1, 7}, {1, 1}, {1, 1}, {0, 3, 0, 3}},
      {"MaxPool", {1, 2, 12, 1}, {7, 1}, {1, 1}, {1, 1}, {3, 0, 3, 0}},
      {"MaxPool", {1, 1, 3, 3}, {13, 13}, {1, 1}, {1, 1}, {6, 6, 6, 6}},
  };
  for (const PoolCase& c : cases) {
    const ModelBuilder m = pool_model(c);
    const Tensor x = maxpool_input(c, rng);
    const Tensor ref = pool_reference(c, x).first;
    const std::string what = ocl_infer::shape_to_string(c.x) + " k " + std::to_string(c.k[0]) + "x" +
                             std::to_string(c.k[1]);
    ocl_infer::SessionOptions forced;
    forced.kernel_variants = "pool=sep";
    for (const auto& opt : {ocl_infer::SessionOptions{}, forced}) {
      auto s = open_session(m, opt);
      const Tensor y = s.run({{"x", x}}).at("y");
      ASSERT_EQ(y.shape, ref.shape) << what;
      EXPECT_LE(rel_error(y, ref), 0.0) << what;
      // The default is `sep` on CPU devices only; forced, it applies on any device.
      if (!opt.kernel_variants.empty()) {
        EXPECT_NE(s.dump("plan").find("pool_max_sep"), std::string::npos) << what << "\n" << s.dump("plan");
      }
    }
  }
}

// AveragePools without padding whose windows lie inside the input take pool_avg_rows on CPU
// devices (DenseNet's 2x2 stride-2 transitions: 8 outputs at a time from 16-value vectors split
// into even and odd lanes, then the row's tail one by one; other windows one by one): against the
// reference, and bit for bit the generic kernel's values (the same summation order), by default
// and forced; forced, the plan must name the kernel. Cases it must not take (padding, a ceil_mode
// window past the end, dilation) match the reference by default, without it.
TEST(Pool, AveragePoolRowsMatchGenericBits) {
  std::mt19937 rng(37);
  const std::vector<PoolCase> rows_cases = {
      {"AveragePool", {2, 3, 16, 37}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}},  // 18 outputs: 2 runs + 2
      {"AveragePool", {1, 4, 9, 24}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}},   // odd height: floor
      {"AveragePool", {1, 2, 56, 56}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}},  // DenseNet's first
      {"AveragePool", {1, 2, 11, 13}, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      {"AveragePool", {1, 2, 11, 14}, {3, 2}, {2, 3}, {1, 1}, {0, 0, 0, 0}},
      {"AveragePool", {1, 3, 40}, {2}, {2}, {1}, {0, 0}},                      // 1-D
      {"AveragePool", {1, 3, 6, 8}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}, true},  // ceil_mode, nothing past the end
  };
  const std::vector<PoolCase> other_cases = {
      {"AveragePool", {1, 3, 7, 7}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}, true},  // a window past the end
      {"AveragePool", {1, 2, 9, 20}, {2, 2}, {2, 2}, {1, 1}, {1, 1, 0, 0}},
      {"AveragePool", {1, 2, 9, 20}, {2, 2}, {2, 2}, {2, 2}, {0, 0, 0, 0}},
  };
  for (bool expect_rows : {true, false}) {
    for (const PoolCase& c : expect_rows ? rows_cases : other_cases) {
      const ModelBuilder m = pool_model(c);
      const Tensor x = random_tensor(c.x, rng, -4, 4);
      const Tensor ref = pool_reference(c, x).first;
      const std::string what = ocl_infer::shape_to_string(c.x) + " k " + std::to_string(c.k[0]);
      ocl_infer::SessionOptions rows, generic;
      rows.kernel_variants = "pool=avg_rows";
      generic.kernel_variants = "pool=generic";
      auto def = open_session(m, ocl_infer::SessionOptions{});
      const Tensor y = def.run({{"x", x}}).at("y");
      ASSERT_EQ(y.shape, ref.shape) << what;
      EXPECT_LE(rel_error(y, ref), 1e-6) << what;
      // (The default takes it where the device prefers CPU-shaped kernels: PoCL, not rusticl.)
      if (!expect_rows) {
        EXPECT_EQ(def.dump("plan").find("pool_avg_rows"), std::string::npos) << what;
        continue;
      }
      auto forced = open_session(m, rows);
      auto gen = open_session(m, generic);
      const Tensor a = forced.run({{"x", x}}).at("y"), g = gen.run({{"x", x}}).at("y");
      EXPECT_NE(forced.dump("plan").find("pool_avg_rows"), std::string::npos) << what;
      ASSERT_EQ(a.shape, g.shape) << what;
      EXPECT_EQ(a.bytes, g.bytes) << what;
      EXPECT_EQ(y.bytes, g.bytes) << what;
    }
  }
}

TEST(Pool, MaxPoolUint8) {
  std::mt19937 rng(32);
  PoolCase c{"MaxPool", {1, 2, 9, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}};
  Tensor x(DType::UInt8, c.x);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<uint8_t>()[i] = static_cast<uint8_t>(rng() % 256);
  ModelBuilder m = pool_model(c, DType::UInt8);
  auto ref = pool_reference(c, x).first;
  auto out = run_model(m, {{"x", x}});
  ASSERT_EQ(out.at("y").shape, ref.shape);
  EXPECT_EQ(out.at("y").bytes, ref.bytes);
}

// 8-bit MaxPool over rows long enough for the vector path (runs of 16 and of 8 outputs as bytes, a
// run moved left to the row's end, the per-output rest), with ragged ends, padding, ceil_mode and
// strides 1 and 2 (3x3 and 2x2 windows), uint8 and int8 (as uint8 + 128); the rows of 111 and 27
// columns are squeezenet1_1's first and last MaxPool's.
TEST(Pool, MaxPool8BitRowsMatchReference) {
  // 8-bit tensors are the same in the fp16 run (only float32 values become float16).
  if (fp16_mode()) GTEST_SKIP() << "no float operands";
  std::mt19937 rng(34);
  const std::vector<PoolCase> cases = {
      {"MaxPool", {1, 3, 20, 37}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
      {"MaxPool", {2, 2, 9, 45}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {"MaxPool", {1, 2, 7, 111}, {3, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0}, true},
      {"MaxPool", {1, 3, 6, 27}, {3, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0}, true},
      {"MaxPool", {1, 2, 4, 70}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}},
      {"MaxPool", {1, 2, 5, 100}, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
  };
  for (const auto& c : cases)
    for (DType t : {DType::UInt8, DType::Int8}) {
      SCOPED_TRACE(std::to_string(c.x.back()) + " columns, stride " + std::to_string(c.s[0]) +
                   (t == DType::UInt8 ? ", uint8" : ", int8"));
      Tensor x(DType::UInt8, c.x), xi(t, c.x);
      for (int64_t i = 0; i < x.numel(); ++i) {
        x.data<uint8_t>()[i] = static_cast<uint8_t>(rng() % 256);
        if (t == DType::Int8) xi.data<int8_t>()[i] = static_cast<int8_t>(static_cast<int>(x.data<uint8_t>()[i]) - 128);
      }
      ModelBuilder m;
      m.input("x", t, c.x).output("y");
      auto& node = m.node("MaxPool", {"x"}, {"y"});
      attr_ints(node, "kernel_shape", c.k);
      attr_ints(node, "strides", c.s);
      attr_ints(node, "pads", c.pads);
      attr_i(node, "ceil_mode", c.ceil);
      const Tensor ref = pool_reference(c, x).first;
      auto out = run_model(m, {{"x", t == DType::UInt8 ? x : xi}});
      ASSERT_EQ(out.at("y").shape, ref.shape);
      int64_t bad = 0;
      for (int64_t i = 0; i < ref.numel(); ++i) {
        const int got = t == DType::UInt8 ? out.at("y").data<uint8_t>()[i] : out.at("y").data<int8_t>()[i] + 128;
        bad += got != ref.data<uint8_t>()[i];
      }
      EXPECT_EQ(bad, 0);
    }
}

TEST(Pool, GlobalPoolsMatchReference) {
  std::mt19937 rng(33);
  for (auto shape : std::vector<std::vector<int64_t>>{{2, 5, 7, 3}, {1, 3, 29}, {1, 2, 3, 4, 5}, {2, 3, 16, 16}}) {
    Tensor x = random_tensor(shape, rng);
    const int64_t nc = shape[0] * shape[1], plane = x.numel() / nc;
    std::vector<int64_t> ys(shape.size(), 1);
    ys[0] = shape[0];
    ys[1] = shape[1];
    for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) {
      ModelBuilder m;
      m.input("x", DType::Float32, shape).output("y");
      m.node(op, {"x"}, {"y"});
      Tensor ref(DType::Float32, ys);
      for (int64_t i = 0; i < nc; ++i) {
        double sum = 0, sq = 0, mx = -INFINITY;
        for (int64_t j = 0; j < plane; ++j) {
          const double v = x.data<float>()[i * plane + j];
          sum += v;
          sq += v * v;
          mx = std::max(mx, v);
        }
        const std::string o = op;
        ref.data<float>()[i] = static_cast<float>(
            o == "GlobalAveragePool" ? sum / plane : (o == "GlobalMaxPool" ? mx : std::sqrt(sq)));
      }
      auto out = run_model(m, {{"x", x}});
      EXPECT_LE(rel_error(out.at("y"), ref), 1e-5)
          << op << " " << ocl_infer::shape_to_string(shape);
    }
  }
}

TEST(Pool, BadKernelShapeIsAModelError) {
  ModelBuilder m;
  m.input("x", DType::Float32, {1, 1, 4, 4}).output("y");
  attr_ints(m.node("MaxPool", {"x"}, {"y"}), "kernel_shape", {3});
  try {
    run_model(m, {{"x", Tensor(DType::Float32, {1, 1, 4, 4})}});
    FAIL() << "expected a ModelError";
  } catch (const ocl_infer::ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("kernel_shape"), std::string::npos) << e.what();
  }
}

}  // namespace
