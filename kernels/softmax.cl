// Softmax, LogSoftmax and Hardmax along one axis of a tensor viewed as [outer, len, inner].
//
// Build options:
//   -DT=float|double|half                  element (pointer) type; with half also -DS=F16
//                                          -DCT=float (kernels/storage.cl): computed in float
//   -DOP_SOFTMAX | -DOP_LOGSOFTMAX | -DOP_HARDMAX
//   -DWG=n                                 work-group size of softmax_rows_wg
//   -DEXP_ONCE                             softmax_generic: store each exp in y, then divide (float32/64)
//   -DUSE_FP64                             T is double
#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#include "storage.cl"
#ifndef S
#define S F32
#endif
#ifndef CT
#define CT T
#endif

// One work-item per (outer, inner) pair: neighbouring work-items read neighbouring elements when
// inner > 1. The maximum is subtracted before exp() so that large inputs cannot overflow.
__kernel void softmax_generic(__global const T* x, __global T* y, long n_out, long len,
                              long inner) {
  long i = get_global_id(0);
  if (i >= n_out) return;
  long o = i / inner;
  long base = o * len * inner + (i - o * inner);
  __global const T* xr = x + base;
  __global T* yr = y + base;
#ifdef OP_HARDMAX
  CT best = LD(S, xr, 0);
  long bi = 0;
  for (long k = 1; k < len; ++k) {
    CT v = LD(S, xr, k * inner);
    if (v > best) {
      best = v;
      bi = k;
    }
  }
  for (long k = 0; k < len; ++k) ST(S, yr, k * inner, k == bi ? (CT)1 : (CT)0);
#else
  CT m = -INFINITY;
  for (long k = 0; k < len; ++k) m = fmax(m, LD(S, xr, k * inner));
  CT s = 0;
#ifdef EXP_ONCE
  // y may be x (in place): x[k] is not read again once its exp is stored.
  for (long k = 0; k < len; ++k) {
    const CT e = exp(LD(S, xr, k * inner) - m);
    ST(S, yr, k * inner, e);
    s += e;
  }
  for (long k = 0; k < len; ++k) ST(S, yr, k * inner, LD(S, yr, k * inner) / s);
#else
  for (long k = 0; k < len; ++k) s += exp(LD(S, xr, k * inner) - m);
#endif
#ifdef OP_LOGSOFTMAX
  CT shift = m + log(s);
  for (long k = 0; k < len; ++k) ST(S, yr, k * inner, LD(S, xr, k * inner) - shift);
#elif defined(EXP_ONCE)
  // (done above)
#else
  for (long k = 0; k < len; ++k) ST(S, yr, k * inner, exp(LD(S, xr, k * inner) - m) / s);
#endif
#endif
}

#if defined(WG) && !defined(OP_HARDMAX)
#define SUMV(a, b) ((a) + (b))
#define MAXV(a, b) fmax(a, b)

#include "reduction.cl"

// inner == 1: one work-group per contiguous row, so that long rows (class scores, attention)
// are read coalesced and by many work-items.
__kernel void softmax_rows_wg(__global const T* x, __global T* y, long len) {
  const int lid = (int)get_local_id(0);
  __global const T* xr = x + get_group_id(0) * len;
  __global T* yr = y + get_group_id(0) * len;
  __local CT buf[WG];
  CT m = -INFINITY;
  for (long k = lid; k < len; k += WG) m = fmax(m, LD(S, xr, k));
  WG_REDUCE(buf, m, MAXV);
  CT s = 0;
  for (long k = lid; k < len; k += WG) s += exp(LD(S, xr, k) - m);
  WG_REDUCE(buf, s, SUMV);
#ifdef OP_LOGSOFTMAX
  CT shift = m + log(s);
  for (long k = lid; k < len; k += WG) ST(S, yr, k, LD(S, xr, k) - shift);
#else
  for (long k = lid; k < len; k += WG) ST(S, yr, k, exp(LD(S, xr, k) - m) / s);
#endif
}
#endif
