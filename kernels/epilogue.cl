// Fused epilogue for kernels that produce a tensor (conv, gemm, matmul, normalization):
// y = act(x + residual). Included by those kernels; build options (made by ops/epilogue.cpp from
// the activation table):
//   -DEPILOGUE_ACT=ACT_<KERNEL>       the activation's macro in activation.cl (none: identity)
//   -DEPILOGUE_ACT_VECTOR             that macro may be applied to whole float vectors
//   -DEPILOGUE_ACT_VECTOR_FN=f        else functions f_float4/8/16 apply it to whole vectors
//   -DACT_ALPHA=.. -DACT_BETA=..      its parameters
//   -DHAS_RESIDUAL                    the kernel also reads a residual tensor
// Kernels that take the epilogue at run time (conv_f32_packed, conv_f32_pointwise) add a clamp to
// [act_lo, act_hi] after the compiled activation and read the residual when its pointer is not
// null: one program then serves identity, Relu, Clip and any residual add (ops/epilogue.cpp's
// epilogue_defines_runtime).
#include "activation.cl"

#ifndef ACT_ALPHA
#define ACT_ALPHA 0.0f
#endif
#ifndef ACT_BETA
#define ACT_BETA 0.0f
#endif

static inline float epilogue_act(float v) {
#ifdef EPILOGUE_ACT
  return EPILOGUE_ACT(v, ACT_ALPHA, ACT_BETA);
#else
  return v;
#endif
}

// The epilogue on a vector of 4, 8 or 16 floats: whole-vector when the activation allows it,
// else lane by lane through registers. EPILOGUE_VEC(v, N) picks the function for width N (which
// may itself be a macro).
#if defined(EPILOGUE_ACT) && defined(EPILOGUE_ACT_VECTOR_FN) && !defined(EPILOGUE_ACT_VECTOR)
#define EPILOGUE_VEC__(f, N) f##_float##N
#define EPILOGUE_VEC_(f, N) EPILOGUE_VEC__(f, N)
#define EPILOGUE_VEC(v, N) EPILOGUE_VEC_(EPILOGUE_ACT_VECTOR_FN, N)(v)
#elif defined(EPILOGUE_ACT) && !defined(EPILOGUE_ACT_VECTOR)
static inline float4 epilogue_vec4(float4 v) {
  float t[4];
  vstore4(v, 0, t);
#pragma unroll
  for (int q = 0; q < 4; ++q) t[q] = epilogue_act(t[q]);
  return vload4(0, t);
}
static inline float8 epilogue_vec8(float8 v) {
  float t[8];
  vstore8(v, 0, t);
#pragma unroll
  for (int q = 0; q < 8; ++q) t[q] = epilogue_act(t[q]);
  return vload8(0, t);
}
static inline float16 epilogue_vec16(float16 v) {
  float t[16];
  vstore16(v, 0, t);
#pragma unroll
  for (int q = 0; q < 16; ++q) t[q] = epilogue_act(t[q]);
  return vload16(0, t);
}
#define EPILOGUE_VEC_(v, N) epilogue_vec##N(v)
#define EPILOGUE_VEC(v, N) EPILOGUE_VEC_(v, N)
#elif defined(EPILOGUE_ACT)
#define EPILOGUE_VEC(v, N) EPILOGUE_ACT(v, ACT_ALPHA, ACT_BETA)
#else
#define EPILOGUE_VEC(v, N) (v)
#endif

// y < lo ? lo : y > hi ? hi : y, as ACT_CLIP (NaN stays NaN, lo wins when lo > hi).
static inline float epilogue_clamp(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }
// The same on a vector of type T.
#define EPILOGUE_CLAMP_VEC(v, T, lo, hi) \
  select(select((v), (T)(hi), (v) > (T)(hi)), (T)(lo), (v) < (T)(lo))
