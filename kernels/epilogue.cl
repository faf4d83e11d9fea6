// Fused epilogue for kernels that produce a tensor (conv, gemm, matmul): y = act(x + residual).
// Included by those kernels; build options (made by ops/epilogue.cpp):
//   -DACT_RELU | ACT_CLIP | ACT_LEAKYRELU | ACT_SIGMOID | ACT_TANH | ACT_HARDSIGMOID |
//   ACT_HARDSWISH | ACT_SILU | ACT_GELU           the activation (none: identity)
//   -DACT_ALPHA=.. -DACT_BETA=..                  its parameters (Clip: min/max)
//   -DHAS_RESIDUAL                                the kernel also reads a residual tensor
#ifndef ACT_ALPHA
#define ACT_ALPHA 0.0f
#endif
#ifndef ACT_BETA
#define ACT_BETA 0.0f
#endif

inline float epilogue_act(float v) {
#if defined(ACT_RELU)
  return fmax(v, 0.0f);
#elif defined(ACT_CLIP)
  return fmin(fmax(v, ACT_ALPHA), ACT_BETA);
#elif defined(ACT_LEAKYRELU)
  return v < 0.0f ? ACT_ALPHA * v : v;
#elif defined(ACT_SIGMOID)
  return 1.0f / (1.0f + exp(-v));
#elif defined(ACT_TANH)
  return tanh(v);
#elif defined(ACT_HARDSIGMOID)
  return fmax(0.0f, fmin(1.0f, ACT_ALPHA * v + ACT_BETA));
#elif defined(ACT_HARDSWISH)
  return v * fmax(0.0f, fmin(1.0f, ACT_ALPHA * v + ACT_BETA));
#elif defined(ACT_SILU)
  return v / (1.0f + exp(-v));
#elif defined(ACT_GELU)
  return 0.5f * v * (1.0f + erf(v * 0.70710678118654752f));
#else
  return v;
#endif
}
