// Normalizations: BatchNormalization (inference), the row normalizations (LayerNormalization,
// InstanceNormalization, MeanVarianceNormalization) and LRN.
//
// Build options:
//   -DT=float|double -DTA=float|double      element type; statistics type
//   -DUSE_FP64                              T is double
//   -DINDEX32                               element indices fit in 32 bits (bn_*, lrn)
// norm_rows only:
//   -DNK=.. -DNR=..                         kept (row) and reduced ranks (ReduceGeometry)
//   -DWG=n                                  work-group size
//   -DAFFINE_COL | -DAFFINE_ROW             scale/bias indexed by position in the row, or by row
//   -DHAS_BIAS                              a bias tensor is given
//   -DSTATS_OUT                             write each row's mean and inverse std-dev
//   -DSTD_PLUS_EPS                          divide by sqrt(var) + eps (MeanVarianceNormalization)
//                                           instead of sqrt(var + eps)
#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#ifndef TA
#define TA T
#endif

// 64-bit integer division is several times slower than 32-bit on GPUs.
#ifdef INDEX32
typedef uint index_t;
#else
typedef ulong index_t;
#endif
#define CHANNEL_OF(i, block, channels) \
  ((long)(((index_t)(i) / (index_t)(block)) % (index_t)(channels)))

#include "epilogue.cl"

// The fused epilogue (an activation / residual add the optimizer moved into this node, e.g. the
// Relu after a BatchNormalization that follows a Concat in DenseNet).
#ifdef HAS_RESIDUAL
#define BN_STORE(i, v) y[i] = epilogue_act((v) + residual[i])
#else
#define BN_STORE(i, v) y[i] = epilogue_act(v)
#endif

// Per-channel y = x * a[c] + b[c]: BatchNormalization with a and b folded on the host. The input
// is viewed as [.., channels, block].
__kernel void bn_scale_shift(__global const T* x, __global T* y, __global const T* a,
                             __global const T* b, long n, long block, long channels,
                             __global const T* residual) {
  long i = get_global_id(0);
  if (i >= n) return;
  long c = CHANNEL_OF(i, block, channels);
  BN_STORE(i, x[i] * a[c] + b[c]);
}

// BatchNormalization whose parameters are only known at run time.
__kernel void bn_generic(__global const T* x, __global const T* scale, __global const T* bias,
                         __global const T* mean, __global const T* var, __global T* y, long n,
                         long block, long channels, float eps, __global const T* residual) {
  long i = get_global_id(0);
  if (i >= n) return;
  long c = CHANNEL_OF(i, block, channels);
  BN_STORE(i, (x[i] - mean[c]) / sqrt(var[c] + (T)eps) * scale[c] + bias[c]);
}

// y = x / (bias + alpha / size * sum of x^2 over the channel window) ^ beta, for x viewed as
// [n, channels, spatial].
__kernel void lrn(__global const T* x, __global T* y, long n, long channels, long spatial,
                  int size, float alpha, float beta, float bias) {
  long i = get_global_id(0);
  if (i >= n) return;
  long c = CHANNEL_OF(i, spatial, channels);
  __global const T* x0 = x + (i - c * spatial);
  long lo = max(c - (long)((size - 1) / 2), 0L);
  long hi = min(c + (long)(size / 2), channels - 1);
  T sq = 0;
  for (long k = lo; k <= hi; ++k) {
    T v = x0[k * spatial];
    sq += v * v;
  }
  y[i] = x[i] / pow((T)bias + (T)alpha / (T)size * sq, (T)beta);
}

#ifdef WG
#ifndef NK
#define NK 0
#endif
#ifndef NR
#define NR 1
#endif

#include "reduction.cl"
#define NORM_SUM(a, b) ((a) + (b))
#define WG_SUM(buf, v) WG_REDUCE(buf, v, NORM_SUM)

// One work-group per row: mean and variance, then the normalized (and scaled) row. The variance
// is the mean of squared deviations (two passes), which loses nothing to cancellation when the
// mean is large.
__kernel void norm_rows(__global const T* x, __global T* y, __global const long* p, long n_red,
                        __global const T* scale, __global const T* bias, long scale_n,
                        long bias_n, __global float* mean_out, __global float* inv_out,
                        float eps) {
  const long row = get_group_id(0);
  const int lid = (int)get_local_id(0);
  const long off = kept_offset(row, p);
  __global const T* xr = x + off;
  __global T* yr = y + off;
  __local TA buf[WG];
  TA s = 0;
  for (long r = lid; r < n_red; r += WG) s += (TA)xr[red_offset(r, p)];
  WG_SUM(buf, s);
  const TA mean = s / (TA)n_red;
  TA q = 0;
  for (long r = lid; r < n_red; r += WG) {
    TA d = (TA)xr[red_offset(r, p)] - mean;
    q += d * d;
  }
  WG_SUM(buf, q);
  const TA var = q / (TA)n_red;
#ifdef STD_PLUS_EPS
  const TA inv = (TA)1 / (sqrt(var) + (TA)eps);
#else
  const TA inv = (TA)1 / sqrt(var + (TA)eps);
#endif
#ifdef STATS_OUT
  if (lid == 0) {
    if (mean_out) mean_out[row] = (float)mean;
    if (inv_out) inv_out[row] = (float)inv;
  }
#endif
  for (long r = lid; r < n_red; r += WG) {
    long a = red_offset(r, p);
    TA v = ((TA)xr[a] - mean) * inv;
#if defined(AFFINE_COL)
    v *= (TA)scale[r % scale_n];
#ifdef HAS_BIAS
    v += (TA)bias[r % bias_n];
#endif
#elif defined(AFFINE_ROW)
    v = v * (TA)scale[row % scale_n] + (TA)bias[row % bias_n];
#endif
    yr[a] = (T)v;
  }
}
#endif
