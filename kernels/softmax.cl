// Softmax, LogSoftmax and Hardmax along one axis of a tensor viewed as [outer, len, inner].
//
// Build options:
//   -DT=float|double|half                  element (pointer) type; with half also -DS=F16
//                                          -DCT=float (kernels/storage.cl): computed in float
//   -DOP_SOFTMAX | -DOP_LOGSOFTMAX | -DOP_HARDMAX
//   -DWG=n                                 work-group size of softmax_rows_wg
//   -DEXP_ONCE                             softmax_generic: store each exp in y, then divide (float32/64)
//   -DUSE_FP64                             T is double
//   -DROW_VW=4|8|16                        softmax_rows_vec: the row in vectors of this width
//   -DINNER_VW=4|8|16                      softmax_inner_vec: this many inner positions per work-item
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

#ifndef OP_HARDMAX
// Softmax or LogSoftmax of the `len` values xr[0], xr[stride], ... into yr (same offsets).
static inline void softmax_column(__global const T* xr, __global T* yr, long len, long stride) {
  CT m = -INFINITY;
  for (long k = 0; k < len; ++k) m = fmax(m, LD(S, xr, k * stride));
  CT s = 0;
#ifdef EXP_ONCE
  // y may be x (in place): x[k] is not read again once its exp is stored.
  for (long k = 0; k < len; ++k) {
    const CT e = exp(LD(S, xr, k * stride) - m);
    ST(S, yr, k * stride, e);
    s += e;
  }
  for (long k = 0; k < len; ++k) ST(S, yr, k * stride, LD(S, yr, k * stride) / s);
#else
  for (long k = 0; k < len; ++k) s += exp(LD(S, xr, k * stride) - m);
#endif
#ifdef OP_LOGSOFTMAX
  CT shift = m + log(s);
  for (long k = 0; k < len; ++k) ST(S, yr, k * stride, LD(S, xr, k * stride) - shift);
#elif defined(EXP_ONCE)
  // (done above)
#else
  for (long k = 0; k < len; ++k) ST(S, yr, k * stride, exp(LD(S, xr, k * stride) - m) / s);
#endif
}
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
  softmax_column(xr, yr, len, inner);
#endif
}

#if defined(ROW_VW) && !defined(OP_HARDMAX) && !defined(USE_FP64)
#define RV_(a, b) a##b
#define RV(a, b) RV_(a, b)
#define rvec RV(float, ROW_VW)

// The ROW_VW lanes of v folded with F (max or +), lane q with q + ROW_VW/2 first.
#define RV_FOLD(v, F, out)                                 \
  do {                                                     \
    float t_[ROW_VW];                                      \
    RV(vstore, ROW_VW)(v, 0, t_);                          \
    for (int w_ = ROW_VW / 2; w_ > 0; w_ /= 2)             \
      for (int q_ = 0; q_ < w_; ++q_) t_[q_] = F(t_[q_], t_[q_ + w_]); \
    out = t_[0];                                           \
  } while (0)
#define RV_MAX(a, b) fmax(a, b)
#define RV_ADD(a, b) ((a) + (b))

// inner == 1 on CPU devices: one work-item per contiguous row (`rows` of `len`), the row read in
// ROW_VW-wide vectors (vector max, exp and sums) and its last len % ROW_VW values one by one. A
// work-item per row with a scalar loop (softmax_generic) spent ~6.6 ns an element on PoCL (a GPT
// decoder's 64-wide attention rows); the exp()s are most of the work.
__kernel void softmax_rows_vec(__global const T* x, __global T* y, long len, long rows) {
  const long r = get_global_id(0);
  if (r >= rows) return;
  __global const T* xr = x + r * len;
  __global T* yr = y + r * len;
  const long nv = len / ROW_VW, tail = nv * ROW_VW;
  rvec mv = (rvec)(-INFINITY);
  for (long v = 0; v < nv; ++v) mv = fmax(mv, LDN(S, ROW_VW, xr, v));
  float m;
  RV_FOLD(mv, RV_MAX, m);
  for (long k = tail; k < len; ++k) m = fmax(m, LD(S, xr, k));
  rvec sv = (rvec)0.0f;
  float s = 0.0f;
#if defined(OP_SOFTMAX) && defined(EXP_ONCE)
  // -DEXP_ONCE (float32 storage): each exp() once, kept in y (which may be x) until the sum is known.
  for (long v = 0; v < nv; ++v) {
    const rvec e = exp(LDN(S, ROW_VW, xr, v) - m);
    STN(S, ROW_VW, yr, v, e);
    sv += e;
  }
  RV_FOLD(sv, RV_ADD, s);
  for (long k = tail; k < len; ++k) {
    const float e = exp(LD(S, xr, k) - m);
    ST(S, yr, k, e);
    s += e;
  }
  for (long v = 0; v < nv; ++v) STN(S, ROW_VW, yr, v, LDN(S, ROW_VW, yr, v) / s);
  for (long k = tail; k < len; ++k) ST(S, yr, k, LD(S, yr, k) / s);
#else
  for (long v = 0; v < nv; ++v) sv += exp(LDN(S, ROW_VW, xr, v) - m);
  RV_FOLD(sv, RV_ADD, s);
  for (long k = tail; k < len; ++k) s += exp(LD(S, xr, k) - m);
#ifdef OP_LOGSOFTMAX
  const float shift = m + log(s);
  for (long v = 0; v < nv; ++v) STN(S, ROW_VW, yr, v, LDN(S, ROW_VW, xr, v) - shift);
  for (long k = tail; k < len; ++k) ST(S, yr, k, LD(S, xr, k) - shift);
#else
  for (long v = 0; v < nv; ++v) STN(S, ROW_VW, yr, v, exp(LDN(S, ROW_VW, xr, v) - m) / s);
  for (long k = tail; k < len; ++k) ST(S, yr, k, exp(LD(S, xr, k) - m) / s);
#endif
#endif
}
#endif

#if defined(INNER_VW) && !defined(OP_HARDMAX) && !defined(USE_FP64)
#define IV_(a, b) a##b
#define IV(a, b) IV_(a, b)
#define ivec IV(float, INNER_VW)

// inner > 1 on CPU devices: a work-item per INNER_VW neighbouring inner positions of one outer
// index, its lanes the positions (each lane a strided column of len values, read as one vector per
// k). softmax_generic's work-item per position spent ~4.6 ns an element on PoCL in scalar exp()s
// (YOLOv8's DFL softmax, len 16, inner 33,600). `blocks` work-items per outer index; the last one
// of an inner run shorter than INNER_VW takes its lanes one by one (y may be x: no overlap).
__kernel void softmax_inner_vec(__global const T* x, __global T* y, long len, long inner, long blocks,
                                long n_items) {
  const long i = get_global_id(0);
  if (i >= n_items) return;
  const long o = i / blocks;
  const long in0 = (i - o * blocks) * INNER_VW;
  __global const T* xr = x + o * len * inner + in0;
  __global T* yr = y + o * len * inner + in0;
  if (in0 + INNER_VW <= inner) {
    ivec m = (ivec)(-INFINITY);
    for (long k = 0; k < len; ++k) m = fmax(m, LDN(S, INNER_VW, xr + k * inner, 0));
    ivec s = (ivec)0.0f;
#if defined(OP_SOFTMAX) && defined(EXP_ONCE)
    for (long k = 0; k < len; ++k) {
      const ivec e = exp(LDN(S, INNER_VW, xr + k * inner, 0) - m);
      STN(S, INNER_VW, yr + k * inner, 0, e);
      s += e;
    }
    for (long k = 0; k < len; ++k) STN(S, INNER_VW, yr + k * inner, 0, LDN(S, INNER_VW, yr + k * inner, 0) / s);
#else
    for (long k = 0; k < len; ++k) s += exp(LDN(S, INNER_VW, xr + k * inner, 0) - m);
#ifdef OP_LOGSOFTMAX
    const ivec shift = m + log(s);
    for (long k = 0; k < len; ++k) STN(S, INNER_VW, yr + k * inner, 0, LDN(S, INNER_VW, xr + k * inner, 0) - shift);
#else
    for (long k = 0; k < len; ++k) STN(S, INNER_VW, yr + k * inner, 0, exp(LDN(S, INNER_VW, xr + k * inner, 0) - m) / s);
#endif
#endif
    return;
  }
  for (long lane = 0; lane < inner - in0; ++lane) softmax_column(xr + lane, yr + lane, len, inner);
}
#endif

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
