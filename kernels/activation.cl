// The activations of ops/core/activation.cpp's table, one macro each: ACT_<KERNEL>(x, A, B) with
// the row's parameters A and B. Shared by the elementwise kernel (kernels/elementwise.cl, where x
// may also be a double, or an integer for rows marked `integers`) and the fused epilogue of
// conv/gemm/norm kernels (kernels/epilogue.cl, float). Written with ?: and untyped integer
// literals so that one expression serves every element type; rows marked `vector_exact` are also
// applied to whole float vectors (the ?: operator is then a per-lane select with the same
// results).
#ifndef ACTIVATION_CL
#define ACTIVATION_CL

#define ACT_MAX_(a, b) ((a) > (b) ? (a) : (b))
#define ACT_MIN_(a, b) ((a) < (b) ? (a) : (b))

// Relu and Clip let NaN through (as ONNX Runtime and numpy do): a NaN compares false everywhere.
#define ACT_RELU(x, A, B) ((x) < 0 ? 0 : (x))
#define ACT_CLIP(x, A, B) ((x) < (A) ? (A) : (x) > (B) ? (B) : (x))
#define ACT_LEAKYRELU(x, A, B) ((x) < 0 ? (A) * (x) : (x))
#ifdef USE_FP64
#define ACT_SIGMOID(x, A, B) (1 / (1 + exp(-(x))))
#else
#define ACT_SIGMOID(x, A, B) sigmoid_fast_float(x)
#endif
#define ACT_TANH(x, A, B) tanh(x)
#define ACT_HARDSIGMOID(x, A, B) ACT_MAX_(0, ACT_MIN_(1, (A) * (x) + (B)))
#define ACT_HARDSWISH(x, A, B) ((x) * ACT_HARDSIGMOID(x, A, B))
#define ACT_ELU(x, A, B) ((x) < 0 ? (A) * (exp(x) - 1) : (x))
#define ACT_CELU(x, A, B) (ACT_MAX_(0, x) + ACT_MIN_(0, (A) * (exp((x) / (A)) - 1)))
#define ACT_SELU(x, A, B) ((x) <= 0 ? (B) * ((A) * exp(x) - (A)) : (B) * (x))
// log(1 + e^x) without overflow for large x.
#define ACT_SOFTPLUS(x, A, B) ((x) > 0 ? (x) + log1p(exp(-(x))) : log1p(exp(x)))
#define ACT_SOFTSIGN(x, A, B) ((x) / (1 + fabs(x)))
#define ACT_MISH(x, A, B) ((x) * tanh(ACT_SOFTPLUS(x, A, B)))
#define ACT_SWISH(x, A, B) ((x) / (1 + exp(-(A) * (x))))
// Gelu-20 with approximate "tanh": 0.5 x (1 + tanh(u)) written as x / (1 + exp(-2u)), which does not
// cancel to a few ulps of 1 where x is large and negative.
#define ACT_GELU_TANH(x, A, B) ((x) / (1 + exp(-1.5957691216057308f * ((x) + 0.044715f * (x) * (x) * (x)))))
#define ACT_THRESHOLDEDRELU(x, A, B) ((x) > (A) ? (x) : 0)
#define ACT_SHRINK(x, A, B) ((x) < -(A) ? (x) + (B) : (x) > (A) ? (x) - (B) : 0)
#ifdef USE_FP64
#define ACT_SILU(x, A, B) ((x) / (1 + exp(-(x))))
#else
#define ACT_SILU(x, A, B) silu_fast_float(x)
#endif

// e^x for the sigmoid family in float without the library call: PoCL's exp made a fused
// conv + SiLU epilogue 3.4x slower than the conv itself (efficientnet_b0's 112x112 expansion:
// 1.95 ms, 0.57 ms without the exp), and it runs lane by lane. n = round(x / ln 2), r = x - n ln 2
// in two steps (Cody-Waite, |r| <= ln2/2 up to rounding), e^r by its Taylor series to r^7 (truncation 3e-9
// relative), times 2^n through the exponent bits. Within about one float rounding on [-87, 88];
// below it is e^-87, above infinity (1/(1 + e^-x) and x/(1 + e^-x) are then 1 or 0 times x to
// within |x| 1e-38), and NaN stays NaN. Defined for float and float vectors (T, with integer type
// I), so that fused epilogues apply Sigmoid and SiLU to whole vectors.
#define ACT_DEFINE_EXP(T, I)                                                                       \
  static inline T exp_sigmoid_##T(T x) {                                                                  \
    const T xc = clamp(x, -87.0f, 88.0f);                                                          \
    /* n = round(xc / ln 2) by truncating a positive value: PoCL's rint on vectors runs lane by  */ \
    /* lane with branches (a SiLU epilogue cost 8x its depthwise conv); -125 <= n <= 127 here   */ \
    const I ni = convert_##I(fma(xc, 1.44269504088896341f, 126.5f)) - 126;                         \
    const T n = convert_##T(ni);                                                                   \
    T r = fma(-n, 0.693145751953125f, xc);                                                         \
    r = fma(-n, 1.42860682030941723e-06f, r);                                                      \
    T p = 1.0f / 5040;                                                                             \
    p = fma(p, r, 1.0f / 720);                                                                     \
    p = fma(p, r, 1.0f / 120);                                                                     \
    p = fma(p, r, 1.0f / 24);                                                                      \
    p = fma(p, r, 1.0f / 6);                                                                       \
    p = fma(p, r, 0.5f);                                                                           \
    p = fma(p, r, 1.0f);                                                                           \
    p = fma(p, r, 1.0f);                                                                           \
    const T e = p * as_##T((ni + 127) << 23);                                                      \
    return x != x ? x : x > 88.0f ? (T)(INFINITY) : e;                                             \
  }                                                                                                \
  static inline T sigmoid_fast_##T(T x) { return 1.0f / (1.0f + exp_sigmoid_##T(-x)); }                  \
  static inline T silu_fast_##T(T x) { return x / (1.0f + exp_sigmoid_##T(-x)); }
ACT_DEFINE_EXP(float, int)
ACT_DEFINE_EXP(float4, int4)
ACT_DEFINE_EXP(float8, int8)
ACT_DEFINE_EXP(float16, int16)

// erf in float without the library call (PoCL's erf costs ~13 ns per value on a Xeon). |x| < 0.5:
// the Maclaurin series to x^13 (truncation below 1e-9 relative). Beyond: 1 - erfc, with
// erfc(a) = t exp(-a^2 + P(t)), t = 1/(1 + a/2), the Chebyshev-fitted form published in Numerical
// Recipes (relative error of erfc below 1.2e-7, so erf stays within about one float rounding),
// its exp inlined as above (PoCL's exp runs lane by lane: GELU after convnext_tiny's first MatMul
// cost more than the MatMul).
// Both branches are computed and selected so that the function vectorises; it is defined for
// float and float vectors (T), so that fused epilogues can apply GELU to whole vectors.
// NaN propagates; +-inf give +-1.
#define ACT_DEFINE_ERF(T)                                                                          \
  static inline T erfc_nonneg_##T(T a) {                                                                  \
    const T t = 1.0f / (1.0f + 0.5f * a);                                                          \
    const T p = -1.26551223f +                                                                     \
                t * (1.00002368f +                                                                 \
                     t * (0.37409196f +                                                            \
                          t * (0.09678418f +                                                       \
                               t * (-0.18628806f +                                                 \
                                    t * (0.27886807f +                                             \
                                         t * (-1.13520398f +                                       \
                                              t * (1.48851587f + t * (-0.82215223f + t * 0.17087277f))))))));      \
    return t * exp_sigmoid_##T(-a * a + p);                                                        \
  }                                                                                                \
  /* 2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1)), for |x| < 0.5 */                             \
  static inline T erf_series_##T(T x) {                                                                   \
    const T z = x * x;                                                                             \
    const T s = 1.0f + z * (-1.0f / 3 + z * (1.0f / 10 + z * (-1.0f / 42 + z * (1.0f / 216 +       \
                z * (-1.0f / 1320 + z * (1.0f / 9360))))));                                        \
    return 1.12837916709551257f * x * s;                                                           \
  }                                                                                                \
  static inline T erf_fast_##T(T x) {                                                                     \
    const T a = fabs(x);                                                                           \
    const T tail = copysign(1.0f - erfc_nonneg_##T(a), x);                                         \
    return a < 0.5f ? erf_series_##T(x) : tail;                                                    \
  }                                                                                                \
  /* 0.5 x (1 + erf(x / sqrt 2)); for x < 0 through erfc, which keeps the small tail values      \
     accurate where 1 + erf would cancel. */                                                       \
  static inline T gelu_fast_##T(T x) {                                                                    \
    const T u = x * 0.70710678118654752f, a = fabs(u);                                             \
    const T e = erfc_nonneg_##T(a); /* one exp for both signs */                                  \
    const T one_plus_erf = a < 0.5f ? 1.0f + erf_series_##T(u) : 2.0f - e;                         \
    return 0.5f * x * (u < 0 ? e : one_plus_erf);                                                  \
  }
ACT_DEFINE_ERF(float)
ACT_DEFINE_ERF(float4)
ACT_DEFINE_ERF(float8)
ACT_DEFINE_ERF(float16)
#define erf_fast(x) erf_fast_float(x)

#ifdef USE_FP64
#define ACT_GELU(x, A, B) (0.5 * (x) * (1 + erf((x) * 0.70710678118654752)))
#else
#define ACT_GELU(x, A, B) gelu_fast_float(x)
#endif

#endif
