// Einsum (ops/einsum_ops.cpp): one work-item per output element, summing the product of the
// operands over every combination of the contracted indices. The host turns the equation into
// strides (diagonals add their dims' strides, broadcast dims have stride 0), so the kernel knows
// nothing of labels.
//
// Build options:
//   -DNOPS=1..4            operands
//   -DNOUT=n -DNRED=k      output rank and contracted indices (k >= 1; the last one is walked
//                          innermost, chosen by the host for unit strides)
//   -DT0..T3=<type> -DTY=<type>  pointer element types (half for float16 storage)
//   -DS0..S3, -DSY=F16     float16 storage (kernels/storage.cl), else F32 (plain loads)
//   -DACC=float|double|long  accumulation type (long for every integer type: wraps as theirs)
//   -DUSE_FP64             a double is involved
//   -DIDX=int              32-bit index arithmetic, when every offset and count fits (PoCL ran
//                          a [8,128,64] x [8,64,128] product 1.8x faster than with long)
// Parameters p (longs): out_dims[NOUT], then per operand out_strides[NOUT]; red_dims[NRED], then
// per operand red_strides[NRED].
#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#include "storage.cl"

#ifndef S0
#define S0 F32
#endif
#ifndef S1
#define S1 F32
#endif
#ifndef S2
#define S2 F32
#endif
#ifndef S3
#define S3 F32
#endif
#ifndef SY
#define SY F32
#endif
#ifndef T1
#define T1 T0
#endif
#ifndef T2
#define T2 T0
#endif
#ifndef T3
#define T3 T0
#endif

#ifndef IDX
#define IDX long
#endif

#define LOAD(s, p, i) ((ACC)LD(s, p, i))

#if NOPS == 1
#define PRODUCT(o) LOAD(S0, a0, o[0])
#elif NOPS == 2
#define PRODUCT(o) (LOAD(S0, a0, o[0]) * LOAD(S1, a1, o[1]))
#elif NOPS == 3
#define PRODUCT(o) (LOAD(S0, a0, o[0]) * LOAD(S1, a1, o[1]) * LOAD(S2, a2, o[2]))
#else
#define PRODUCT(o) (LOAD(S0, a0, o[0]) * LOAD(S1, a1, o[1]) * LOAD(S2, a2, o[2]) * LOAD(S3, a3, o[3]))
#endif

#define OUT_DIM(d) ((IDX)p[d])
#define OUT_STRIDE(k, d) ((IDX)p[NOUT + (k) * NOUT + (d)])
#define RED_BASE (NOUT * (NOPS + 1))
#define RED_DIM(d) ((IDX)p[RED_BASE + (d)])
#define RED_STRIDE(k, d) ((IDX)p[RED_BASE + NRED + (k) * NRED + (d)])

__kernel void einsum_generic(__global const T0* restrict a0, __global const T1* restrict a1,
                             __global const T2* restrict a2, __global const T3* restrict a3,
                             __global TY* restrict y, __global const long* restrict p, long n) {
  if ((long)get_global_id(0) >= n) return;
  const IDX i = (IDX)get_global_id(0);
  IDX base[NOPS];
  for (int k = 0; k < NOPS; ++k) base[k] = 0;
  IDX rem = i;
  for (int d = NOUT - 1; d >= 0; --d) {
    const IDX c = rem % OUT_DIM(d);
    rem /= OUT_DIM(d);
    for (int k = 0; k < NOPS; ++k) base[k] += c * OUT_STRIDE(k, d);
  }
  // The outer contracted indices, decomposed once per run of the innermost one.
  IDX outer = 1;
  for (int d = 0; d < NRED - 1; ++d) outer *= RED_DIM(d);
  const IDX len = RED_DIM(NRED - 1);
  IDX step[NOPS];
  for (int k = 0; k < NOPS; ++k) step[k] = RED_STRIDE(k, NRED - 1);
  ACC acc = 0;
  for (IDX o = 0; o < outer; ++o) {
    IDX off[NOPS];
    for (int k = 0; k < NOPS; ++k) off[k] = base[k];
    IDX r = o;
    for (int d = NRED - 2; d >= 0; --d) {
      const IDX c = r % RED_DIM(d);
      r /= RED_DIM(d);
      for (int k = 0; k < NOPS; ++k) off[k] += c * RED_STRIDE(k, d);
    }
    for (IDX j = 0; j < len; ++j) {
      acc += PRODUCT(off);
      for (int k = 0; k < NOPS; ++k) off[k] += step[k];
    }
  }
  ST(SY, y, i, acc);
}
