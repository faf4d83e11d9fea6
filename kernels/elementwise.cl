// Elementwise unary, binary and ternary operators, generic over element types.
//
// Build options pick the types and the operator:
//   -DTA=float [-DTB=.. -DTC=..] -DTO=float   element (storage) types of inputs and output; a
//                                              half operand also gets -DSA=F16 -DCA=float (SB..,
//                                              SO..): stored as half, computed in float
//   -DOP_<NAME>                                the operator (see the tables below)
//   -DOP_ACTIVATION -DACTIVATION=ACT_<KERNEL>  an activation of kernels/activation.cl
//   -DALPHA=.. -DBETA=..                       operator parameters, as float literals
//   -DIDX_A=0|1|2|3 (IDX_B, IDX_C)             how an input is indexed: 0 same shape as the output,
//                                              1 a single element, 2 broadcast through strides,
//                                              3 (i / INNER_x) % COUNT_x (a per-channel or per-row
//                                              operand: one contiguous block of output dims)
//   -DNDIM=n                                   rank used by broadcast indexing
//   -DTO_INT                                   output is an integer/bool type
//   -DQMIN=.. -DQMAX=..                        QuantizeLinear's output range
//   -DUSE_FP64                                 a double is involved
#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#include "activation.cl"
#include "storage.cl"

// Storage (SA.. SO: F16 for half, else F32 = the element type itself) and compute types (CA..
// CO: float for half storage, else the element type).
#ifndef SA
#define SA F32
#endif
#ifndef SB
#define SB F32
#endif
#ifndef SC
#define SC F32
#endif
#ifndef SO
#define SO F32
#endif
#ifndef CA
#define CA TA
#endif
#ifndef CB
#define CB TB
#endif
#ifndef CC
#define CC TC
#endif
#ifndef CO
#define CO TO
#endif

#ifndef TB
#define TB TA
#endif
#ifndef TC
#define TC TA
#endif
#ifndef NDIM
#define NDIM 1
#endif
#ifndef ALPHA
#define ALPHA 0.0f
#endif
#ifndef BETA
#define BETA 0.0f
#endif

#define MAXV(a, b) ((a) > (b) ? (a) : (b))
#define MINV(a, b) ((a) < (b) ? (a) : (b))

// Float math happens in float unless a double is involved.
#ifdef USE_FP64
typedef double real;
#else
typedef float real;
#endif

// ---- unary: y = F(x) ----
#if defined(OP_ACTIVATION)
// A row of the activation table: -DACTIVATION=ACT_<KERNEL> (kernels/activation.cl).
#define F(x) ACTIVATION(x, ALPHA, BETA)
#elif defined(OP_NEG)
#define F(x) (-(x))
#elif defined(OP_ABS)
#define F(x) ((x) < (CA)0 ? -(x) : (x))
#elif defined(OP_EXP)
#define F(x) exp(x)
#elif defined(OP_LOG)
#define F(x) log(x)
#elif defined(OP_SQRT)
#define F(x) sqrt(x)
#elif defined(OP_RECIPROCAL)
#define F(x) ((CA)1 / (x))
#elif defined(OP_FLOOR)
#define F(x) floor(x)
#elif defined(OP_CEIL)
#define F(x) ceil(x)
#elif defined(OP_ROUND)
#define F(x) rint(x)  // round half to even, as ONNX requires
#elif defined(OP_SIGN)
// NaN stays NaN (x != x only for NaN), as numpy and ONNX Runtime.
#define F(x) ((x) != (x) ? (x) : ((x) > (CA)0 ? (CA)1 : ((x) < (CA)0 ? (CA)-1 : (CA)0)))
#elif defined(OP_ERF) && defined(USE_FP64)
#define F(x) erf(x)
#elif defined(OP_ERF)
#define F(x) erf_fast(x)
#elif defined(OP_POW_2)
#define F(x) ((x) * (x))
#elif defined(OP_POW_3)
#define F(x) ((x) * (x) * (x))
#elif defined(OP_POW_HALF)
// pow(x, 0.5) is +0 at -0 and +inf at -inf, where sqrt gives -0 and NaN. (Not fabs(sqrt(x)):
// Mesa's rusticl folds that to sqrt(x) and returned -0.)
#define F(x) (isinf(x) ? fabs(x) : (x) == 0 ? 0 : sqrt(x))
#elif defined(OP_NOT)
#define F(x) (!(x))
#elif defined(OP_SIN)
#define F(x) sin(x)
#elif defined(OP_COS)
#define F(x) cos(x)
#elif defined(OP_TAN)
#define F(x) tan(x)
#elif defined(OP_ASIN)
#define F(x) asin(x)
#elif defined(OP_ACOS)
#define F(x) acos(x)
#elif defined(OP_ATAN)
#define F(x) atan(x)
#elif defined(OP_SINH)
#define F(x) sinh(x)
#elif defined(OP_COSH)
#define F(x) cosh(x)
#elif defined(OP_ASINH)
#define F(x) asinh(x)
#elif defined(OP_ACOSH)
#define F(x) acosh(x)
#elif defined(OP_ATANH)
#define F(x) atanh(x)
#elif defined(OP_ISNAN)
#define F(x) isnan(x)
#elif defined(OP_ISINF)
#define F(x) (isinf(x) && (((x) > 0 && ALPHA != 0) || ((x) < 0 && BETA != 0)))
#elif defined(OP_CAST_BOOL)
#define F(x) ((x) != (CA)0)
#elif defined(OP_CAST) && defined(CAST_VIA_LONG)
// Float to uint32 / uint64 through int64, as the host fold (and ONNX Runtime on x86) does: a
// negative value wraps (-2.5 -> 2^32 - 2) instead of the conversion instruction's saturation.
#define F(x) ((long)(x))
#elif defined(OP_CAST)
#define F(x) (x)
#elif defined(OP_SCALE)
#define F(x) ((x) * (CA)(ALPHA))
#elif defined(OP_AFFINE)
#define F(x) ((x) * (CA)(ALPHA) + (CA)(BETA))
#elif defined(OP_QACTIVATION)
// QLinearSigmoid, QLinearLeakyRelu: y = Q(act(DQ(x))), QA_S the input scale, QY_S the output's.
#define F(x) clamp(rint(ACTIVATION((real)((int)(x) - QA_Z) * QA_S, ALPHA, BETA) / QY_S) + (real)QY_Z, \
                   (real)QMIN, (real)QMAX)
#endif

// ---- binary: y = G(a, b) ----
#if defined(OP_ADD)
#define G(a, b) ((a) + (b))
#elif defined(OP_SUB)
#define G(a, b) ((a) - (b))
#elif defined(OP_MUL)
#define G(a, b) ((a) * (b))
#elif defined(OP_DIV)
#define G(a, b) ((a) / (b))
#elif defined(OP_POW)
#ifdef TO_INT
#define G(a, b) rint(pow((real)(a), (real)(b)))
#else
#define G(a, b) pow((real)(a), (real)(b))
#endif
#elif defined(OP_MIN)
// A NaN in either operand gives NaN (numpy's minimum / maximum, ONNX Runtime).
#define G(a, b) (isnan((real)(a)) ? (a) : isnan((real)(b)) ? (b) : ((a) < (b) ? (a) : (b)))
#elif defined(OP_MAX)
#define G(a, b) (isnan((real)(a)) ? (a) : isnan((real)(b)) ? (b) : ((a) > (b) ? (a) : (b)))
#elif defined(OP_EQUAL)
#define G(a, b) ((a) == (b))
#elif defined(OP_LESS)
#define G(a, b) ((a) < (b))
#elif defined(OP_LESSOREQUAL)
#define G(a, b) ((a) <= (b))
#elif defined(OP_GREATER)
#define G(a, b) ((a) > (b))
#elif defined(OP_GREATEROREQUAL)
#define G(a, b) ((a) >= (b))
#elif defined(OP_AND)
#define G(a, b) ((a) && (b))
#elif defined(OP_OR)
#define G(a, b) ((a) || (b))
#elif defined(OP_XOR)
#define G(a, b) ((a) != (b))
#elif defined(OP_PRELU)
#define G(a, b) ((a) < (CA)0 ? (a) * (b) : (a))
#elif defined(OP_MOD_INT)
// Python-style modulo: the result has the divisor's sign.
#define G(a, b) ((((a) % (b)) != 0 && (((a) % (b)) < 0) != ((b) < 0)) ? ((a) % (b)) + (b) : ((a) % (b)))
#elif defined(OP_MOD_TRUNC)
#define G(a, b) ((a) % (b))
#elif defined(OP_FMOD)
#define G(a, b) fmod(a, b)
#elif defined(OP_BITSHIFT_LEFT)
#define G(a, b) ((a) << (b))
#elif defined(OP_BITSHIFT_RIGHT)
#define G(a, b) ((a) >> (b))
#elif defined(OP_QADD)
// QLinearAdd: y = saturate(round(act((a - QA_Z) * QA_M + (b - QB_Z) * QB_M)) + QY_Z) with the
// scale ratios QA_M = a_scale / y_scale, QB_M = b_scale / y_scale, as ONNX Runtime computes it.
#define G(a, b) QFINISH((real)((int)(a) - QA_Z) * QA_M + (real)((int)(b) - QB_Z) * QB_M)
#elif defined(OP_QMUL)
// QLinearMul: y = saturate(round(act((a - QA_Z) * (b - QB_Z) * QA_M)) + QY_Z), QA_M =
// a_scale * b_scale / y_scale.
#define G(a, b) QFINISH((real)(((int)(a) - QA_Z) * ((int)(b) - QB_Z)) * QA_M)
#endif

// The end of a quantized elementwise op: the fused activation (in the scaled domain, see
// ops/quant_ops.cpp), rounding half to even, the output zero point and saturation.
#ifdef QACT
#define QACT_APPLY(v) QACT(v, ALPHA, BETA)
#else
#define QACT_APPLY(v) (v)
#endif
#define QFINISH(v) clamp(rint(QACT_APPLY(v)) + (real)QY_Z, (real)QMIN, (real)QMAX)

// ---- ternary: y = H(a, b, c) ----
#if defined(OP_WHERE)
#define H(a, b, c) ((a) ? (b) : (c))
#elif defined(OP_CLIP)
#define H(a, b, c) MINV(MAXV(a, b), c)
#elif defined(OP_QUANTIZE)
// QuantizeLinear: saturate(round_half_even(x / scale) + zero_point) into [QMIN, QMAX]; clamp()
// maps NaN to QMIN (fmax semantics) and keeps the conversion defined.
#define H(x, s, z) clamp(rint((real)(x) / (real)(s)) + (real)(z), (real)QMIN, (real)QMAX)
#elif defined(OP_DEQUANTIZE)
// DequantizeLinear: (x - zero_point) * scale, the difference exact in integers.
#define H(x, s, z) ((real)((long)(x) - (long)(z)) * (real)(s))
#endif

// Broadcast indexing: meta holds NDIM output dims, then NDIM strides per input (0 on broadcast
// dims).
static inline long strided_index(long i, __global const long* meta, int which) {
  long idx = 0;
  for (int d = NDIM - 1; d >= 0; --d) {
    long n = meta[d];
    long c = i % n;
    i /= n;
    idx += c * meta[NDIM * (which + 1) + d];
  }
  return idx;
}

#ifndef INNER_A
#define INNER_A 1
#define COUNT_A 1
#endif
#ifndef INNER_B
#define INNER_B 1
#define COUNT_B 1
#endif
#ifndef INNER_C
#define INNER_C 1
#define COUNT_C 1
#endif

// Mode 3 divides by compile-time constants, which is far cheaper than walking every dimension.
#define INDEX(mode, i, which, inner, count)                    \
  ((mode) == 0   ? (i)                                         \
   : (mode) == 1 ? 0                                           \
   : (mode) == 3 ? ((i) / (inner)) % (count)                   \
                 : strided_index(i, meta, which))

#ifndef IDX_A
#define IDX_A 0
#endif
#ifndef IDX_B
#define IDX_B 0
#endif
#ifndef IDX_C
#define IDX_C 0
#endif

#ifdef F
__kernel void ew_unary(__global const TA* a, __global TO* y, long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  CA x = LD(SA, a, i);
  ST(SO, y, i, (CO)(F(x)));
}
#endif

// Float16 storage (-DSA_HALF, -DSB_HALF, -DSO_HALF from the host): a chunk's consecutive values
// are loaded and stored as vectors of halves, one conversion instruction per vector; one half at
// a time, each value took its own conversion and inserts (PoCL 3.1 on x86: the elementwise
// kernels of the PP-OCRv4 detector ran 2-6x their float32 time at fp16 storage).
// EW_LOAD_CHUNK(dst, S, p, i, steps): EW_CHUNK values from p[i] (steps) or p[i] repeated.
#define EW_LOAD_CHUNK_SCALAR(dst, S, p, i, steps) \
  _Pragma("unroll") for (int k_ = 0; k_ < EW_CHUNK; ++k_) dst[k_] = LD(S, p, (steps) ? (i) + k_ : (i));
#define EW_LOAD_CHUNK_VECTOR(dst, S, p, i, steps)                                          \
  if (steps) {                                                                             \
    CAT_EW(vstore, EW_CHUNK)(LDN(S, EW_CHUNK, (p) + (i), 0), 0, dst);                      \
  } else {                                                                                 \
    EW_LOAD_CHUNK_SCALAR(dst, S, p, i, false)                                              \
  }
#define CAT_EW_(a, b) a##b
#define CAT_EW(a, b) CAT_EW_(a, b)
#define EW_VEC_FN_(f, n) f##_float##n
#define EW_VEC_FN(f, n) EW_VEC_FN_(f, n)
#ifdef SA_HALF
#define EW_LOAD_A EW_LOAD_CHUNK_VECTOR
#else
#define EW_LOAD_A EW_LOAD_CHUNK_SCALAR
#endif
#ifdef SB_HALF
#define EW_LOAD_B EW_LOAD_CHUNK_VECTOR
#else
#define EW_LOAD_B EW_LOAD_CHUNK_SCALAR
#endif
#ifdef SO_HALF
#define EW_STORE_CHUNK(y, i0, r) STN(SO, EW_CHUNK, (y) + (i0), 0, CAT_EW(vload, EW_CHUNK)(0, r))
#else
#define EW_STORE_CHUNK(y, i0, r) \
  _Pragma("unroll") for (int k_ = 0; k_ < EW_CHUNK; ++k_) ST(SO, y, (i0) + k_, r[k_]);
#endif

// ew_unary_chunk (-DEW_CHUNK=4|8|16, float16 storage of the input or the output): EW_CHUNK
// consecutive values per work-item; n is a multiple of EW_CHUNK.
#if defined(F) && defined(EW_CHUNK)
__kernel void ew_unary_chunk(__global const TA* a, __global TO* y, long n) {
  const long i0 = (long)get_global_id(0) * EW_CHUNK;
  if (i0 >= n) return;
  CA x_[EW_CHUNK];
  EW_LOAD_A(x_, SA, a, i0, true)
  CO r_[EW_CHUNK];
#ifdef ACTIVATION_VECTOR_FN
  // An activation with whole-vector functions (activation.cl's <fn>_float4/8/16; float compute
  // only): the chunk as one vector, the same per-lane operations as the scalar calls (YOLOv8n's
  // Sigmoid over [1,80,8400], whose scalar calls LLVM left unvectorised).
  CAT_EW(vstore, EW_CHUNK)(EW_VEC_FN(ACTIVATION_VECTOR_FN, EW_CHUNK)(CAT_EW(vload, EW_CHUNK)(0, x_)), 0, r_);
#else
#pragma unroll
  for (int k = 0; k < EW_CHUNK; ++k) r_[k] = (CO)(F(x_[k]));
#endif
  EW_STORE_CHUNK(y, i0, r_);
}
#endif

#ifdef G
#ifdef CHECK_ZERO_DIVISOR
// Integer division and modulo: a zero divisor (undefined in OpenCL C) sets err[0] and yields 0;
// the executor reports the node after the run.
__kernel void ew_binary_checked(__global const TA* a, __global const TB* b, __global TO* y,
                                __global const long* meta, long n, __global int* err) {
  long i = get_global_id(0);
  if (i >= n) return;
  CA x = LD(SA, a, INDEX(IDX_A, i, 0, INNER_A, COUNT_A));
  CB z = LD(SB, b, INDEX(IDX_B, i, 1, INNER_B, COUNT_B));
  if (z == (CB)0) {
    err[0] = 1;
    ST(SO, y, i, (CO)0);
    return;
  }
  ST(SO, y, i, (CO)(G(x, z)));
}
#endif

__kernel void ew_binary(__global const TA* a, __global const TB* b, __global TO* y,
                        __global const long* meta, long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  CA x = LD(SA, a, INDEX(IDX_A, i, 0, INNER_A, COUNT_A));
  CB z = LD(SB, b, INDEX(IDX_B, i, 1, INNER_B, COUNT_B));
  ST(SO, y, i, (CO)(G(x, z)));
}
#endif

// ew_binary_chunk (-DEW_CHUNK=4|8|16): EW_CHUNK consecutive outputs per work-item when no input
// is strided (modes 0, 1, 3) and every mode-3 block's INNER is a multiple of EW_CHUNK (or 1, with
// COUNT a multiple): the broadcast operands' index is then computed once per chunk and the loop
// vectorizes. On PoCL a work-item per element paid ~1 ns per element for a [N,C,H,W] x [N,C,1,1]
// Mul.
// A mode-3 block with INNER 1 (the output's last dims) steps along the chunk like a mode-0 operand
// (the host then has COUNT a multiple of EW_CHUNK); any other stays at its chunk's first index.
#define CHUNK_STEPS(mode, inner) ((mode) == 0 || ((mode) == 3 && (inner) == 1))
// ew_binary_chunk takes its mode-3 blocks' INNER and COUNT as arguments (one program for every
// shape of, e.g., an SE block's per-channel Mul: a program per shape cost ~0.05 s of code
// generation each at a first run) and only whether INNER is 1 as -DSTEP_A / -DSTEP_B.
#ifndef STEP_A
#define STEP_A 0
#endif
#ifndef STEP_B
#define STEP_B 0
#endif
#define CHUNK_STEPS_RT(mode, step) ((mode) == 0 || ((mode) == 3 && (step)))
#if defined(G) && defined(EW_CHUNK) && !defined(CHECK_ZERO_DIVISOR)
__kernel void ew_binary_chunk(__global const TA* a, __global const TB* b, __global TO* y, long n, long inner_a,
                              long count_a, long inner_b, long count_b) {
  const long i0 = (long)get_global_id(0) * EW_CHUNK;
  if (i0 >= n) return;
  __global const long* meta = 0;  // INDEX's strided branch, never taken here
  const long ia = INDEX(IDX_A, i0, 0, inner_a, count_a), ib = INDEX(IDX_B, i0, 1, inner_b, count_b);
#if defined(SA_HALF) || defined(SB_HALF) || defined(SO_HALF)
  CA x_[EW_CHUNK];
  CB z_[EW_CHUNK];
  EW_LOAD_A(x_, SA, a, ia, CHUNK_STEPS_RT(IDX_A, STEP_A))
  EW_LOAD_B(z_, SB, b, ib, CHUNK_STEPS_RT(IDX_B, STEP_B))
  CO r_[EW_CHUNK];
#pragma unroll
  for (int k = 0; k < EW_CHUNK; ++k) r_[k] = (CO)(G(x_[k], z_[k]));
  EW_STORE_CHUNK(y, i0, r_);
#else
#pragma unroll
  for (int k = 0; k < EW_CHUNK; ++k) {
    CA x = LD(SA, a, CHUNK_STEPS_RT(IDX_A, STEP_A) ? ia + k : ia);
    CB z = LD(SB, b, CHUNK_STEPS_RT(IDX_B, STEP_B) ? ib + k : ib);
    ST(SO, y, i0 + k, (CO)(G(x, z)));
  }
#endif
}
#endif

// ew_ternary_chunk: ew_binary_chunk's scheme for three operands (Where: a [1,1,T,T] mask, a
// scalar and [1,H,T,T] attention scores took ~6.7 ns an element a work-item each on PoCL).
#if defined(H) && defined(EW_CHUNK)
__kernel void ew_ternary_chunk(__global const TA* a, __global const TB* b, __global const TC* c,
                               __global TO* y, long n) {
  const long i0 = (long)get_global_id(0) * EW_CHUNK;
  if (i0 >= n) return;
  __global const long* meta = 0;  // INDEX's strided branch, never taken here
  const long ia = INDEX(IDX_A, i0, 0, INNER_A, COUNT_A), ib = INDEX(IDX_B, i0, 1, INNER_B, COUNT_B),
             ic = INDEX(IDX_C, i0, 2, INNER_C, COUNT_C);
#pragma unroll
  for (int k = 0; k < EW_CHUNK; ++k) {
    CA x = LD(SA, a, CHUNK_STEPS(IDX_A, INNER_A) ? ia + k : ia);
    CB u = LD(SB, b, CHUNK_STEPS(IDX_B, INNER_B) ? ib + k : ib);
    CC v = LD(SC, c, CHUNK_STEPS(IDX_C, INNER_C) ? ic + k : ic);
    ST(SO, y, i0 + k, (CO)(H(x, u, v)));
  }
}
#endif

// ew_qbinary_vec: QLinearAdd / QLinearMul of two operands of the output's shape, 16 outputs per
// work-item as vectors (the same arithmetic as G, lane by lane; the scalar chunk kernel paid
// ~2.3 ns per element on PoCL, as much as the conv before it). The last work-item's tail runs G.
#if (defined(OP_QADD) || defined(OP_QMUL)) && !defined(USE_FP64)
#define QVEC(t) CAT_(t, 16)
#define CAT_(a, b) CAT__(a, b)
#define CAT__(a, b) a##b
__kernel void ew_qbinary_vec(__global const TA* a, __global const TB* b, __global TO* y, long n) {
  const long i0 = (long)get_global_id(0) * 16;
  if (i0 >= n) return;
  if (i0 + 16 > n) {
    for (long i = i0; i < n; ++i) y[i] = (TO)(G(a[i], b[i]));
    return;
  }
  const int16 xa = convert_int16(vload16(0, a + i0)) - QA_Z, xb = convert_int16(vload16(0, b + i0)) - QB_Z;
#ifdef OP_QADD
  float16 v = convert_float16(xa) * QA_M + convert_float16(xb) * QB_M;
#else
  float16 v = convert_float16(xa * xb) * QA_M;
#endif
  // Clamped first so that the rounding can add and subtract 1.5 * 2^23 (exact below 2^22; PoCL's
  // vector rint is slow); values past the range still saturate, NaN still gives QMIN.
  v = clamp(QACT_APPLY(v), (float)(QMIN - QY_Z - 1), (float)(QMAX - QY_Z + 1));
  v = clamp(((v + 12582912.0f) - 12582912.0f) + (float)QY_Z, (float)QMIN, (float)QMAX);
  VSTORE_BYTES(16, CAT_(convert_, QVEC(TO))(v), 0, y + i0);
}
#endif

// ew_binary_rows (-DEW_ROW=n): a work-item per row of n consecutive outputs when no input is
// strided and every mode-3 block has INNER == n but n is no multiple of 4 (an SE block's
// [1,C,7,7] x [1,C,1,1] Mul): the broadcast operands' index is constant along the row, and the
// loop over the row (a compile-time length) vectorizes. Generic per-element indexing paid ~1.8 ns
// per element there on PoCL.
#if defined(G) && defined(EW_ROW) && !defined(CHECK_ZERO_DIVISOR)
__kernel void ew_binary_rows(__global const TA* a, __global const TB* b, __global TO* y, long rows) {
  const long r = get_global_id(0);
  if (r >= rows) return;
  const long i0 = r * EW_ROW;
  __global const long* meta = 0;  // INDEX's strided branch, never taken here
  const long ia = INDEX(IDX_A, i0, 0, INNER_A, COUNT_A), ib = INDEX(IDX_B, i0, 1, INNER_B, COUNT_B);
  for (int k = 0; k < EW_ROW; ++k) {
    CA x = LD(SA, a, IDX_A == 0 ? ia + k : ia);
    CB z = LD(SB, b, IDX_B == 0 ? ib + k : ib);
    ST(SO, y, i0 + k, (CO)(G(x, z)));
  }
}
#endif

#ifdef H
__kernel void ew_ternary(__global const TA* a, __global const TB* b, __global const TC* c,
                         __global TO* y, __global const long* meta, long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  CA x = LD(SA, a, INDEX(IDX_A, i, 0, INNER_A, COUNT_A));
  CB u = LD(SB, b, INDEX(IDX_B, i, 1, INNER_B, COUNT_B));
  CC v = LD(SC, c, INDEX(IDX_C, i, 2, INNER_C, COUNT_C));
  ST(SO, y, i, (CO)(H(x, u, v)));
}
#endif
