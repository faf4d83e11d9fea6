// Small, obvious CPU reference implementations of ONNX ops on float32 tensors, written straight
// from the ONNX definitions with <cmath> and independent of the runtime's own host code. For tests
// that check whole graphs (the randomised differential test, fusion regressions).
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "ocl_infer/ocl_infer.hpp"

namespace reference {

using ocl_infer::DType;
using ocl_infer::Tensor;
using Shape = std::vector<int64_t>;

inline std::vector<int64_t> strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

inline int64_t count(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

inline float at(const Tensor& t, int64_t i) { return t.data<float>()[i]; }

// y = f(x) element by element.
inline Tensor unary(const Tensor& x, const std::function<double(double)>& f) {
  Tensor y(DType::Float32, x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) y.data<float>()[i] = static_cast<float>(f(at(x, i)));
  return y;
}

// y = f(a, b) with numpy broadcasting.
inline Tensor binary(const Tensor& a, const Tensor& b, const std::function<double(double, double)>& f) {
  const size_t r = std::max(a.shape.size(), b.shape.size());
  Shape pa(r - a.shape.size(), 1), pb(r - b.shape.size(), 1), out(r);
  pa.insert(pa.end(), a.shape.begin(), a.shape.end());
  pb.insert(pb.end(), b.shape.begin(), b.shape.end());
  for (size_t d = 0; d < r; ++d) {
    if (pa[d] != pb[d] && pa[d] != 1 && pb[d] != 1) throw std::runtime_error("reference: shapes do not broadcast");
    out[d] = pa[d] == 1 ? pb[d] : pa[d];
  }
  Tensor y(DType::Float32, out);
  auto so = strides(out), sa = strides(pa), sb = strides(pb);
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < r; ++d) {
      const int64_t c = (i / so[d]) % out[d];
      ia += (pa[d] == 1 ? 0 : c) * sa[d];
      ib += (pb[d] == 1 ? 0 : c) * sb[d];
    }
    y.data<float>()[i] = static_cast<float>(f(at(a, ia), at(b, ib)));
  }
  return y;
}

// 2-D convolution, NCHW, square kernel, stride 1, symmetric padding, groups.
inline Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor* bias, int64_t pad, int64_t group) {
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t M = w.shape[0], K = w.shape[2], Cg = C / group, Mg = M / group;
  const int64_t OH = H + 2 * pad - K + 1, OW = W + 2 * pad - K + 1;
  Tensor y(DType::Float32, {N, M, OH, OW});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = bias ? at(*bias, m) : 0.0;
          const int64_t g = m / Mg;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t kh = 0; kh < K; ++kh)
              for (int64_t kw = 0; kw < K; ++kw) {
                const int64_t ih = oh - pad + kh, iw = ow - pad + kw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += static_cast<double>(at(x, ((n * C + g * Cg + c) * H + ih) * W + iw)) *
                       at(w, ((m * Cg + c) * K + kh) * K + kw);
              }
          y.data<float>()[((n * M + m) * OH + oh) * OW + ow] = static_cast<float>(acc);
        }
  return y;
}

// BatchNormalization in inference mode over axis 1.
inline Tensor batchnorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& mean,
                        const Tensor& var, double eps) {
  Tensor y(DType::Float32, x.shape);
  const int64_t C = x.shape[1], inner = count(x.shape) / (x.shape[0] * C);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / inner) % C;
    y.data<float>()[i] = static_cast<float>((at(x, i) - at(mean, c)) / std::sqrt(at(var, c) + eps) * at(gamma, c) +
                                            at(beta, c));
  }
  return y;
}

// Matrix product of 2-D tensors.
inline Tensor matmul(const Tensor& a, const Tensor& b) {
  const int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
  Tensor y(DType::Float32, {M, N});
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(at(a, i * K + k)) * at(b, k * N + j);
      y.data<float>()[i * N + j] = static_cast<float>(acc);
    }
  return y;
}

// Elements [start, end) of `axis`.
inline Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end) {
  Shape out = x.shape;
  out[axis] = end - start;
  Tensor y(DType::Float32, out);
  auto sx = strides(x.shape), so = strides(out);
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t src = 0;
    for (size_t d = 0; d < out.size(); ++d) {
      int64_t c = (i / so[d]) % out[d];
      if (static_cast<int64_t>(d) == axis) c += start;
      src += c * sx[d];
    }
    y.data<float>()[i] = at(x, src);
  }
  return y;
}

inline Tensor concat(const std::vector<const Tensor*>& xs, int64_t axis) {
  Shape out = xs[0]->shape;
  out[axis] = 0;
  for (auto* x : xs) out[axis] += x->shape[axis];
  Tensor y(DType::Float32, out);
  auto so = strides(out);
  int64_t at_axis = 0;
  for (auto* x : xs) {
    auto sx = strides(x->shape);
    for (int64_t i = 0; i < x->numel(); ++i) {
      int64_t dst = 0;
      for (size_t d = 0; d < out.size(); ++d) {
        int64_t c = (i / sx[d]) % x->shape[d];
        if (static_cast<int64_t>(d) == axis) c += at_axis;
        dst += c * so[d];
      }
      y.data<float>()[dst] = at(*x, i);
    }
    at_axis += x->shape[axis];
  }
  return y;
}

inline Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  Shape out;
  for (auto p : perm) out.push_back(x.shape[p]);
  Tensor y(DType::Float32, out);
  auto sx = strides(x.shape), so = strides(out);
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t src = 0;
    for (size_t d = 0; d < out.size(); ++d) src += ((i / so[d]) % out[d]) * sx[perm[d]];
    y.data<float>()[i] = at(x, src);
  }
  return y;
}

// The same elements under another shape (Reshape, Squeeze, Unsqueeze, Flatten).
inline Tensor reshape(const Tensor& x, const Shape& s) {
  if (count(s) != x.numel()) throw std::runtime_error("reference: reshape changes the element count");
  Tensor y = x;
  y.shape = s;
  return y;
}

// Zero padding of the last two dims.
inline Tensor pad_hw(const Tensor& x, int64_t top, int64_t left, int64_t bottom, int64_t right) {
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t OH = H + top + bottom, OW = W + left + right;
  Tensor y(DType::Float32, {N, C, OH, OW});
  for (int64_t p = 0; p < N * C; ++p)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w)
        y.data<float>()[(p * OH + h + top) * OW + w + left] = at(x, (p * H + h) * W + w);
  return y;
}

// The activations the optimizer fuses, from their ONNX definitions.
inline double relu(double x) { return x > 0 ? x : 0; }
inline double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
inline double hard_sigmoid(double x, double a = 0.2, double b = 0.5) { return std::max(0.0, std::min(1.0, a * x + b)); }
inline double hard_swish(double x) { return x * hard_sigmoid(x, 1.0 / 6, 0.5); }
inline double leaky_relu(double x, double a) { return x < 0 ? a * x : x; }
inline double clip(double x, double lo, double hi) { return std::min(hi, std::max(lo, x)); }
inline double gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }

// max |got - want| / max(1, max |want|); +inf when shapes or types differ or got has a NaN that
// want has not.
inline double rel_error(const Tensor& got, const Tensor& want) {
  if (got.shape != want.shape || got.dtype != DType::Float32 || want.dtype != DType::Float32) return INFINITY;
  double mx = 1, err = 0;
  for (int64_t i = 0; i < want.numel(); ++i) mx = std::max<double>(mx, std::fabs(at(want, i)));
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = at(got, i), w = at(want, i);
    if (std::isnan(g) != std::isnan(w)) return INFINITY;
    if (!std::isnan(w)) err = std::max(err, std::fabs(g - w));
  }
  return err / mx;
}

// Rows of x normalised over the trailing dims from `axis`: (x - mean) / sqrt(var + eps), in
// double, then times scale and plus bias (each optional), indexed by position in the row modulo
// their size (LayerNormalization), or by row modulo their size when per_row (InstanceNormalization).
inline Tensor normalize_rows(const Tensor& x, size_t axis, double eps, const Tensor* scale, const Tensor* bias,
                             bool per_row = false) {
  int64_t n = 1;
  for (size_t d = axis; d < x.shape.size(); ++d) n *= x.shape[d];
  Tensor y(DType::Float32, x.shape);
  for (int64_t r = 0; r < x.numel() / n; ++r) {
    const float* xr = x.data<float>() + r * n;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += xr[i];
    mean /= n;
    for (int64_t i = 0; i < n; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= n;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = per_row ? r : i;
      double v = (xr[i] - mean) / std::sqrt(var + eps);
      if (scale) v *= scale->data<float>()[k % scale->numel()];
      if (bias) v += bias->data<float>()[k % bias->numel()];
      y.data<float>()[r * n + i] = static_cast<float>(v);
    }
  }
  return y;
}

}  // namespace reference
