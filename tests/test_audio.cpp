// The audio front-end against references written here: a naive double-precision DFT (odd and prime
// lengths, real and complex input, onesided, inverse and the round trip, an axis other than the
// last signal axis, dft_length shorter and longer than the signal), STFT with and
// without a window and with frames where the last samples do not fill one, the window formulas of
// the spec (periodic and symmetric, output_datatype) and a mel matrix from the spec's
// construction; and the errors (DFT length 0, frame longer than the signal, window and
// frame_length disagreeing, onesided on complex input).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

using Shape = std::vector<int64_t>;
using cd = std::complex<double>;

Tensor scalar_i64(int64_t v) {
  Tensor t(DType::Int64, {});
  t.data<int64_t>()[0] = v;
  return t;
}

// x [outer, n, inner, c] -> y [outer, bins, inner, 2]: the transform of each (outer, inner) line.
Tensor dft_reference(const Tensor& x, int64_t outer, int64_t n, int64_t inner, int64_t c, int64_t length, bool onesided,
                     bool inverse) {
  const int64_t bins = onesided ? length / 2 + 1 : length;
  Tensor y(DType::Float32, {outer, bins, inner, 2});
  const double pi = std::acos(-1.0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      for (int64_t k = 0; k < bins; ++k) {
        cd acc = 0;
        for (int64_t t = 0; t < std::min(n, length); ++t) {
          const float* p = x.data<float>() + ((o * n + t) * inner + i) * c;
          const cd v(p[0], c == 2 ? p[1] : 0.0);
          acc += v * std::polar(1.0, (inverse ? 2 : -2) * pi * static_cast<double>(k * t % length) / static_cast<double>(length));
        }
        if (inverse) acc /= static_cast<double>(length);
        y.data<float>()[((o * bins + k) * inner + i) * 2] = static_cast<float>(acc.real());
        y.data<float>()[((o * bins + k) * inner + i) * 2 + 1] = static_cast<float>(acc.imag());
      }
  return y;
}

// Errors of a transform grow with its length (each output sums `length` rounded products).
double dft_tolerance(int64_t length) { return (fp16_mode() ? 2e-3 : 4e-6) * std::sqrt(static_cast<double>(length)); }

TEST(Dft, LengthsAxesAndModes) {
  std::mt19937 rng(1);
  int k = 0;
  for (int64_t n : {1, 2, 7, 16, 97, 400})
    for (int64_t c : {1, 2})
      for (int mode = 0; mode < 4; ++mode) {  // 0 plain, 1 onesided, 2 inverse, 3 dft_length != n
        if (fp16_sampled_out(k++)) continue;
        if (mode == 1 && c == 2) continue;
        const int64_t outer = 2, inner = 3;
        const int64_t length = mode == 3 ? (n % 2 ? n + 5 : std::max<int64_t>(1, n / 2)) : n;
        // Signal axis 1 of [outer, n, inner, c]: an axis other than the one before the last.
        const Tensor x = random_tensor({outer, n, inner, c}, rng);
        ModelBuilder m(17);
        m.input("x", DType::Float32, x.shape).output("y");
        std::vector<std::string> ins{"x"};
        if (mode == 3) m.initializer("len", scalar_i64(length)), ins.push_back("len");
        auto& node = m.node("DFT", ins, {"y"});
        attr_i(node, "axis", 1);
        if (mode == 1) attr_i(node, "onesided", 1);
        if (mode == 2) attr_i(node, "inverse", 1);
        auto out = run_model(m, {{"x", x}});
        const Tensor want = dft_reference(x, outer, n, inner, c, length, mode == 1, mode == 2);
        EXPECT_LE(rel_error(out.at("y"), want), dft_tolerance(length)) << "n " << n << " c " << c << " mode " << mode;
      }
}

TEST(Dft, InverseRoundTrip) {
  std::mt19937 rng(2);
  const Tensor x = random_tensor({3, 45, 2}, rng);
  ModelBuilder m(17);
  m.input("x", DType::Float32, x.shape).output("back");
  m.node("DFT", {"x"}, {"f"});
  attr_i(m.node("DFT", {"f"}, {"back"}), "inverse", 1);
  auto out = run_model(m, {{"x", x}});
  EXPECT_LE(rel_error(out.at("back"), x), dft_tolerance(45) * 4);
}

TEST(Stft, WindowsAndFrames) {
  std::mt19937 rng(3);
  int k = 0;
  for (int64_t signal : {64, 1000})
    for (int64_t frame : {16, 25})
      for (int64_t step : {8, 10})
        for (int wmode = 0; wmode < 3; ++wmode) {  // none; a constant (in the DFT matrix); an input (direct kernel)
          if (fp16_sampled_out(k++)) continue;
          const bool window = wmode > 0;
          const Tensor x = random_tensor({2, signal, 1}, rng);
          const Tensor w = random_tensor({frame}, rng, 0, 1);
          ModelBuilder m(17);
          m.input("x", DType::Float32, x.shape).output("y");
          m.initializer("step", scalar_i64(step));
          if (wmode == 1) m.initializer("w", w);
          if (wmode == 2) m.input("w", DType::Float32, {frame});
          if (!window) m.initializer("len", scalar_i64(frame));
          m.node("STFT", window ? std::vector<std::string>{"x", "step", "w"} : std::vector<std::string>{"x", "step", "", "len"},
                 {"y"});
          std::map<std::string, Tensor> feeds{{"x", x}};
          if (wmode == 2) feeds["w"] = w;
          auto out = run_model(m, feeds);
          // Each frame, windowed, through the DFT reference as a [1, frame, 1, 1] signal.
          const int64_t frames = 1 + (signal - frame) / step, bins = frame / 2 + 1;
          Tensor want(DType::Float32, {2, frames, bins, 2});
          for (int64_t b = 0; b < 2; ++b)
            for (int64_t f = 0; f < frames; ++f) {
              Tensor piece(DType::Float32, {1, frame, 1, 1});
              for (int64_t t = 0; t < frame; ++t)
                piece.data<float>()[t] = x.data<float>()[b * signal + f * step + t] * (window ? w.data<float>()[t] : 1.0f);
              const Tensor y = dft_reference(piece, 1, frame, 1, 1, frame, true, false);
              std::copy(y.data<float>(), y.data<float>() + bins * 2, want.data<float>() + (b * frames + f) * bins * 2);
            }
          EXPECT_LE(rel_error(out.at("y"), want), dft_tolerance(frame)) << signal << " " << frame << " " << step;
        }
}

TEST(Windows, FormulasAndTypes) {
  const double pi = std::acos(-1.0);
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    for (int periodic : {1, 0})
      for (int64_t size : {1, 10, 33}) {
        ModelBuilder m(17);
        m.input("unused", DType::Float32, {1}).output("w");
        m.initializer("n", scalar_i64(size));
        auto& node = m.node(op, {"n"}, {"w"});
        attr_i(node, "periodic", periodic);
        auto out = run_model(m, {{"unused", Tensor(DType::Float32, {1})}});
        Tensor want(DType::Float32, {size});
        const double N = periodic ? size : size - 1;
        for (int64_t k = 0; k < size; ++k) {
          const double a = N > 0 ? 2 * pi * k / N : 0;
          const std::string o = op;
          const double v = o == "HannWindow"      ? 0.5 - 0.5 * std::cos(a)
                           : o == "HammingWindow" ? 25.0 / 46 - 21.0 / 46 * std::cos(a)
                                                  : 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
          want.data<float>()[k] = static_cast<float>(v);
        }
        EXPECT_LE(rel_error(out.at("w"), want), 1e-6) << op << " periodic " << periodic << " size " << size;
      }
  ModelBuilder d(17);
  d.input("unused", DType::Float32, {1}).output("w");
  d.initializer("n", scalar_i64(8));
  attr_i(d.node("HannWindow", {"n"}, {"w"}), "output_datatype", static_cast<int>(DType::Float64));
  EXPECT_EQ(run_model(d, {{"unused", Tensor(DType::Float32, {1})}}).at("w").dtype, DType::Float64);
}

TEST(MelWeightMatrix, SpecConstruction) {
  ModelBuilder m(17);
  m.input("unused", DType::Float32, {1}).output("mel");
  m.initializer("bins", scalar_i64(10)).initializer("len", scalar_i64(64)).initializer("rate", scalar_i64(16000));
  Tensor lo(DType::Float32, {}), hi(DType::Float32, {});
  lo.data<float>()[0] = 20;
  hi.data<float>()[0] = 8000;
  m.initializer("lo", lo).initializer("hi", hi);
  m.node("MelWeightMatrix", {"bins", "len", "rate", "lo", "hi"}, {"mel"});
  auto out = run_model(m, {{"unused", Tensor(DType::Float32, {1})}});
  // Edges equally spaced in mel over bins + 2 steps, mapped to DFT bins, triangles between them.
  auto mel = [](double f) { return 2595 * std::log10(1 + f / 700); };
  const double step = (mel(8000) - mel(20)) / 12;
  std::vector<int64_t> edge;
  for (int k = 0; k < 12; ++k)
    edge.push_back(static_cast<int64_t>(std::floor(65 * 700 * (std::pow(10, (mel(20) + k * step) / 2595) - 1) / 16000)));
  Tensor want(DType::Float32, {33, 10});
  std::fill(want.data<float>(), want.data<float>() + want.numel(), 0.0f);
  for (int i = 0; i < 10; ++i) {
    const int64_t l = edge[i], c = edge[i + 1], r = edge[i + 2];
    for (int64_t j = l; j <= c; ++j) want.data<float>()[j * 10 + i] = c == l ? 1.0f : static_cast<float>(double(j - l) / double(c - l));
    for (int64_t j = c; j < r; ++j) want.data<float>()[j * 10 + i] = static_cast<float>(double(r - j) / double(r - c));
  }
  EXPECT_LE(rel_error(out.at("mel"), want), 1e-6);
}

TEST(Audio, Errors) {
  std::mt19937 rng(4);
  const Tensor x = random_tensor({1, 32, 1}, rng);
  auto fails = [&](ModelBuilder& m, const std::string& needle) {
    try {
      run_model(m, {{"x", x}});
      ADD_FAILURE() << "no error; expected '" << needle << "'";
    } catch (const ocl_infer::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  {
    ModelBuilder m(17);
    m.input("x", DType::Float32, x.shape).output("y");
    m.initializer("len", scalar_i64(0));
    m.node("DFT", {"x", "len"}, {"y"});
    fails(m, "DFT length must be positive");
  }
  {
    ModelBuilder m(17);
    m.input("x", DType::Float32, x.shape).output("y");
    m.initializer("step", scalar_i64(4)).initializer("len", scalar_i64(40));
    m.node("STFT", {"x", "step", "", "len"}, {"y"});
    fails(m, "longer than the signal");
  }
  {
    ModelBuilder m(17);
    m.input("x", DType::Float32, x.shape).output("y");
    m.initializer("step", scalar_i64(4)).initializer("len", scalar_i64(8)).initializer("w", random_tensor({16}, rng));
    m.node("STFT", {"x", "step", "w", "len"}, {"y"});
    fails(m, "does not match the window");
  }
  {
    ModelBuilder m(17);
    m.input("x", DType::Float32, {1, 32, 2}).output("y");
    attr_i(m.node("DFT", {"x"}, {"y"}), "onesided", 1);
    try {
      run_model(m, {{"x", random_tensor({1, 32, 2}, rng)}});
      ADD_FAILURE() << "no error for onesided on a complex input";
    } catch (const ocl_infer::ModelError& e) {
      EXPECT_NE(std::string(e.what()).find("onesided"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
