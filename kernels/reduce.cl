// Reductions over a set of axes (ReduceSum, ReduceMean, ...) and ArgMax/ArgMin.
//
// Build options:
//   -DT=<element type> -DTA=<accumulator type>    float/float, double/double, int/long, ...
//   -DOP_<SUM|MEAN|MAX|MIN|PROD|L1|L2|LOGSUM|LOGSUMEXP|SUMSQUARE>
//   -DIS_FLOAT                                     T is a floating-point type
//   -DT_LOWEST=.. -DT_HIGHEST=..                   integer limits, the Max/Min identities
//   -DNK=.. -DNR=..                                kept and reduced ranks (ReduceGeometry)
//   -DWG=n                                         work-group size of reduce_wg
//   -DARG_MAX | -DARG_MIN [-DSELECT_LAST]          for arg_reduce
//   -DUSE_FP64                                     a double is involved
#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#ifndef NK
#define NK 0
#endif
#ifndef NR
#define NR 1
#endif
#ifndef TA
#define TA T
#endif

// Half storage: -DT=half -DS=F16 -DCT=float (kernels/storage.cl), accumulation in TA=float.
#include "storage.cl"
#ifndef S
#define S F32
#endif
#ifndef CT
#define CT T
#endif

#ifdef IS_FLOAT
#define LOWEST (-INFINITY)
#define HIGHEST INFINITY
// A NaN anywhere makes the result NaN, as numpy's maximum.reduce does.
#define MAXV(a, b) (isnan(a) || (a) > (b) ? (a) : (b))
#define MINV(a, b) (isnan(a) || (a) < (b) ? (a) : (b))
#define ABSV(a) fabs((TA)(a))
// LogSumExp works in the element's float type, integers in float.
#define TF TA
#else
#define LOWEST ((TA)(T_LOWEST))
#define HIGHEST ((TA)(T_HIGHEST))
#define MAXV(a, b) ((a) > (b) ? (a) : (b))
#define MINV(a, b) ((a) < (b) ? (a) : (b))
// |x| widened to TA, the sign tested on the element's own type before widening (an int widened
// to long and then compared with 0 is miscompiled by Mesa 22.3's rusticl: kernels/index.cl).
#define ABSV(x) ((x) < (T)0 ? -(TA)(x) : (TA)(x))
#define TF float
#endif

#if defined(OP_SUM) || defined(OP_MEAN) || defined(OP_LOGSUM)
#define INIT ((TA)0)
#define ACC(a, x) ((a) + (TA)(x))
#define COMB(a, b) ((a) + (b))
#elif defined(OP_L1)
#define INIT ((TA)0)
#define ACC(a, x) ((a) + ABSV(x))
#define COMB(a, b) ((a) + (b))
#elif defined(OP_L2) || defined(OP_SUMSQUARE)
#define INIT ((TA)0)
#define ACC(a, x) ((a) + (TA)(x) * (TA)(x))
#define COMB(a, b) ((a) + (b))
#elif defined(OP_PROD)
#define INIT ((TA)1)
#define ACC(a, x) ((a) * (TA)(x))
#define COMB(a, b) ((a) * (b))
#elif defined(OP_MAX)
#define INIT LOWEST
#define ACC(a, x) MAXV((TA)(x), a)
#define COMB(a, b) MAXV(a, b)
#elif defined(OP_MIN)
#define INIT HIGHEST
#define ACC(a, x) MINV((TA)(x), a)
#define COMB(a, b) MINV(a, b)
#endif

#if defined(OP_MEAN) && defined(IS_FLOAT)
#define FINAL(a, n) ((a) / (TA)(n))
#elif defined(OP_MEAN)
// The mean of an empty integer set is 0 rather than a division by zero.
#define FINAL(a, n) ((n) ? (a) / (TA)(n) : (TA)0)
#elif defined(OP_L2)
#define FINAL(a, n) sqrt((TF)(a))
#elif defined(OP_LOGSUM)
#define FINAL(a, n) log((TF)(a))
#else
#define FINAL(a, n) (a)
#endif

#define SUMV(a, b) ((a) + (b))
#define FMAXV(a, b) fmax(a, b)

#include "reduction.cl"

#ifdef OP_LOGSUMEXP
// Shifted by the maximum so exp() cannot overflow; an infinite maximum is not subtracted, so that
// all -inf gives -inf and any +inf gives +inf.
static inline TF lse_shift(TF m) { return isinf(m) ? (TF)0 : m; }
#endif

#if defined(INIT) || defined(OP_LOGSUMEXP)
// One work-item per output: best when there are many outputs, or the reduced dims are strided
// so that neighbouring work-items read neighbouring elements.
__kernel void reduce_generic(__global const T* x, __global T* y, __global const long* p,
                             long n_out, long n_red) {
  long o = get_global_id(0);
  if (o >= n_out) return;
  __global const T* base = x + kept_offset(o, p);
#ifdef OP_LOGSUMEXP
  TF m = -INFINITY;
  for (long r = 0; r < n_red; ++r) m = fmax(m, (TF)LD(S, base, red_offset(r, p)));
  TF shift = lse_shift(m), s = 0;
  for (long r = 0; r < n_red; ++r) s += exp((TF)LD(S, base, red_offset(r, p)) - shift);
  ST(S, y, o, (CT)(log(s) + shift));
#else
  TA a = INIT;
  for (long r = 0; r < n_red; ++r) a = ACC(a, LD(S, base, red_offset(r, p)));
  ST(S, y, o, (CT)(FINAL(a, n_red)));
#endif
}

#ifdef WG
// One work-group per output: for few outputs over long reductions.
__kernel void reduce_wg(__global const T* x, __global T* y, __global const long* p, long n_red) {
  const long o = get_group_id(0);
  const int lid = (int)get_local_id(0);
  __global const T* base = x + kept_offset(o, p);
#ifdef OP_LOGSUMEXP
  __local TF buf[WG];
  TF m = -INFINITY;
  for (long r = lid; r < n_red; r += WG) m = fmax(m, (TF)LD(S, base, red_offset(r, p)));
  WG_REDUCE(buf, m, FMAXV);
  TF shift = lse_shift(m), s = 0;
  for (long r = lid; r < n_red; r += WG) s += exp((TF)LD(S, base, red_offset(r, p)) - shift);
  WG_REDUCE(buf, s, SUMV);
  if (lid == 0) ST(S, y, o, (CT)(log(s) + shift));
#else
  __local TA buf[WG];
  TA a = INIT;
  for (long r = lid; r < n_red; r += WG) a = ACC(a, LD(S, base, red_offset(r, p)));
  WG_REDUCE(buf, a, COMB);
  if (lid == 0) ST(S, y, o, (CT)(FINAL(a, n_red)));
#endif
}
#endif  // WG
#endif  // INIT || OP_LOGSUMEXP

#if defined(ARG_MAX) || defined(ARG_MIN)
#if defined(ARG_MAX) && defined(SELECT_LAST)
#define BETTER(v, best) ((v) >= (best))
#elif defined(ARG_MAX)
#define BETTER(v, best) ((v) > (best))
#elif defined(SELECT_LAST)
#define BETTER(v, best) ((v) <= (best))
#else
#define BETTER(v, best) ((v) < (best))
#endif

// The input viewed as [outer, axis_len, inner]; one work-item per (outer, inner).
__kernel void arg_reduce(__global const T* x, __global long* y, long n_out, long axis_len,
                         long inner) {
  long i = get_global_id(0);
  if (i >= n_out) return;
  long o = i / inner, in = i - o * inner;
  __global const T* base = x + o * axis_len * inner + in;
  CT best = LD(S, base, 0);
  long bi = 0;
  for (long k = 1; k < axis_len; ++k) {
    CT v = LD(S, base, k * inner);
    if (BETTER(v, best)) {
      best = v;
      bi = k;
    }
  }
  y[i] = bi;
}
#endif
