// Normalizations: BatchNormalization (inference), the row normalizations (LayerNormalization,
// InstanceNormalization, MeanVarianceNormalization) and LRN.
//
// Build options:
//   -DT=float|double|half -DTA=float|double element (pointer) type; statistics type
//   -DS=F16 -DCT=float                      T is half: stored as half, computed in float
//   -DUSE_FP64                              T is double
//   -DINDEX32                               element indices fit in 32 bits (bn_*, lrn)
//   -DBN_CHUNK=8|64                         bn_rows: values per work-item
// norm_rows only:
//   -DNK=.. -DNR=..                         kept (row) and reduced ranks (ReduceGeometry)
//   -DWG=n                                  work-group size
//   -DAFFINE_COL | -DAFFINE_ROW             scale/bias indexed by position in the row, or by row
//   -DHAS_BIAS                              a bias tensor is given
//   -DSTATS_OUT                             write each row's mean and inverse std-dev
//   -DSTD_PLUS_EPS                          divide by sqrt(var) + eps (MeanVarianceNormalization)
//                                           instead of sqrt(var + eps)
//   -DRMS                                   no mean: divide by sqrt(mean(x^2) + eps) (RMSNormalization)
#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#ifndef TA
#define TA T
#endif

// Storage: T is the pointer type of every float operand (x, y, parameters, residual), all in one
// storage S (F16: half, see storage.cl); values are computed in CT (float for half, else T).
// Parameters folded on the host (bn_scale_shift's a and b) come in CT.
#include "storage.cl"
#ifndef S
#define S F32
#endif
#ifndef CT
#define CT T
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
#define BN_STORE(i, v) ST(S, y, i, epilogue_act((v) + LD(S, residual, i)))
#else
#define BN_STORE(i, v) ST(S, y, i, epilogue_act(v))
#endif

// Per-channel y = x * a[c] + b[c]: BatchNormalization with a and b folded on the host. The input
// is viewed as [.., channels, block].
__kernel void bn_scale_shift(__global const T* x, __global T* y, __global const CT* a,
                             __global const CT* b, long n, long block, long channels,
                             __global const T* residual) {
  long i = get_global_id(0);
  if (i >= n) return;
  long c = CHANNEL_OF(i, block, channels);
  BN_STORE(i, LD(S, x, i) * a[c] + b[c]);
}

// bn_scale_shift by rows (-DBN_CHUNK=8|64, float compute): work-item (j, r) takes BN_CHUNK
// consecutive values of row r, a channel of one batch item (channel r % channels), as 8-float
// vectors, with a[c] and b[c] read once; a row's last chunk may be partial (element by element).
// bn_scale_shift's per-element 64-bit channel division and scalar accesses made DenseNet-121's
// pre-activation BN + ReLU 6x ONNX Runtime's time on PoCL.
#if defined(BN_CHUNK) && !defined(USE_FP64)
__kernel void bn_rows(__global const T* x, __global T* y, __global const CT* a, __global const CT* b,
                      long block, long channels, __global const T* residual) {
  const long r = get_global_id(1);
  const long j0 = (long)get_global_id(0) * BN_CHUNK;
  if (j0 >= block) return;
  const long c = r % channels;
  const float av = a[c], bv = b[c];
  const long base = r * block + j0;
  if (j0 + BN_CHUNK <= block) {
    __global const T* xr = x + base;
    __global T* yr = y + base;
#ifdef HAS_RESIDUAL
    __global const T* rr = residual + base;
#endif
#pragma unroll
    for (int k = 0; k < BN_CHUNK / 8; ++k) {
      float8 v = LDN(S, 8, xr, k) * av + bv;
#ifdef HAS_RESIDUAL
      v += LDN(S, 8, rr, k);
#endif
      STN(S, 8, yr, k, EPILOGUE_VEC(v, 8));
    }
  } else {
    for (long j = base; j < r * block + block; ++j) BN_STORE(j, LD(S, x, j) * av + bv);
  }
}
#endif

// BatchNormalization whose parameters are only known at run time.
__kernel void bn_generic(__global const T* x, __global const T* scale, __global const T* bias,
                         __global const T* mean, __global const T* var, __global T* y, long n,
                         long block, long channels, float eps, __global const T* residual) {
  long i = get_global_id(0);
  if (i >= n) return;
  long c = CHANNEL_OF(i, block, channels);
  BN_STORE(i, (LD(S, x, i) - LD(S, mean, c)) / sqrt(LD(S, var, c) + (CT)eps) * LD(S, scale, c) + LD(S, bias, c));
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
  CT sq = 0;
  for (long k = lo; k <= hi; ++k) {
    CT v = LD(S, x0, k * spatial);
    sq += v * v;
  }
  ST(S, y, i, LD(S, x, i) / pow((CT)bias + (CT)alpha / (CT)size * sq, (CT)beta));
}

// Statistics and output of one contiguous row of n elements: two passes (mean, then the mean of
// squared deviations) and the normalised, scaled row. -DROW_VEC=8 (n a multiple of 8, float
// statistics): the passes run on float8 vectors.
#if defined(ROW_VEC) && !defined(USE_FP64)
#define RV 8
#define rvec float8
#define RV_SUM(v) (((v).s0 + (v).s4) + ((v).s1 + (v).s5) + ((v).s2 + (v).s6) + ((v).s3 + (v).s7))
static inline void norm_row(__global const T* xr, __global T* yr, long row, long n, __global const T* scale,
                     __global const T* bias, long scale_n, long bias_n, __global T* mean_out,
                     __global T* inv_out, float eps) {
  const long nv = n / RV;
#ifdef RMS
  const float mean = 0;
#else
  rvec s = 0;
  for (long r = 0; r < nv; ++r) s += LDN(S, 8, xr, r);
  const float mean = RV_SUM(s) / (float)n;
#endif
  rvec q = 0;
  for (long r = 0; r < nv; ++r) {
    const rvec d = LDN(S, 8, xr, r) - mean;
    q += d * d;
  }
  const float var = RV_SUM(q) / (float)n;
#ifdef STD_PLUS_EPS
  const float inv = 1.0f / (sqrt(var) + eps);
#else
  const float inv = 1.0f / sqrt(var + eps);
#endif
#ifdef STATS_OUT
  if (mean_out) ST(S, mean_out, row, mean);
  if (inv_out) ST(S, inv_out, row, inv);
#endif
  for (long r = 0; r < nv; ++r) {
    rvec v = (LDN(S, 8, xr, r) - mean) * inv;
#if defined(AFFINE_COL)
    // scale_n and bias_n divide n here (a suffix of the row), and are multiples of 8 or 1.
    v *= scale_n == 1 ? (rvec)LD(S, scale, 0) : LDN(S, 8, scale, r % (scale_n / RV));
#ifdef HAS_BIAS
    v += bias_n == 1 ? (rvec)LD(S, bias, 0) : LDN(S, 8, bias, r % (bias_n / RV));
#endif
#elif defined(AFFINE_ROW)
    v = v * LD(S, scale, row % scale_n) + LD(S, bias, row % bias_n);
#endif
    STN(S, 8, yr, r, v);
  }
}
#else
static inline void norm_row(__global const T* xr, __global T* yr, long row, long n, __global const T* scale,
                     __global const T* bias, long scale_n, long bias_n, __global T* mean_out,
                     __global T* inv_out, float eps) {
#ifdef RMS
  const TA mean = 0;
#else
  TA s = 0;
  for (long r = 0; r < n; ++r) s += (TA)LD(S, xr, r);
  const TA mean = s / (TA)n;
#endif
  TA q = 0;
  for (long r = 0; r < n; ++r) {
    const TA d = (TA)LD(S, xr, r) - mean;
    q += d * d;
  }
  const TA var = q / (TA)n;
#ifdef STD_PLUS_EPS
  const TA inv = (TA)1 / (sqrt(var) + (TA)eps);
#else
  const TA inv = (TA)1 / sqrt(var + (TA)eps);
#endif
#ifdef STATS_OUT
  if (mean_out) ST(S, mean_out, row, (CT)mean);
  if (inv_out) ST(S, inv_out, row, (CT)inv);
#endif
  for (long r = 0; r < n; ++r) {
    TA v = ((TA)LD(S, xr, r) - mean) * inv;
#if defined(AFFINE_COL)
    v *= (TA)LD(S, scale, r % scale_n);
#ifdef HAS_BIAS
    v += (TA)LD(S, bias, r % bias_n);
#endif
#elif defined(AFFINE_ROW)
    v = v * (TA)LD(S, scale, row % scale_n) + (TA)LD(S, bias, row % bias_n);
#endif
    ST(S, yr, r, (CT)v);
  }
}
#endif

// One work-item per contiguous row (CPU devices: no local-memory reduction).
__kernel void norm_rows_serial(__global const T* x, __global T* y, long rows, long n, __global const T* scale,
                               __global const T* bias, long scale_n, long bias_n, __global T* mean_out,
                               __global T* inv_out, float eps) {
  const long row = get_global_id(0);
  if (row >= rows) return;
  norm_row(x + row * n, y + row * n, row, n, scale, bias, scale_n, bias_n, mean_out, inv_out, eps);
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
                        long bias_n, __global T* mean_out, __global T* inv_out,
                        float eps) {
  const long row = get_group_id(0);
  const int lid = (int)get_local_id(0);
  const long off = kept_offset(row, p);
  __global const T* xr = x + off;
  __global T* yr = y + off;
  __local TA buf[WG];
#ifdef RMS
  const TA mean = 0;
#else
  TA s = 0;
  for (long r = lid; r < n_red; r += WG) s += (TA)LD(S, xr, red_offset(r, p));
  WG_SUM(buf, s);
  const TA mean = s / (TA)n_red;
#endif
  TA q = 0;
  for (long r = lid; r < n_red; r += WG) {
    TA d = (TA)LD(S, xr, red_offset(r, p)) - mean;
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
    if (mean_out) ST(S, mean_out, row, (CT)mean);
    if (inv_out) ST(S, inv_out, row, (CT)inv);
  }
#endif
  for (long r = lid; r < n_red; r += WG) {
    long a = red_offset(r, p);
    TA v = ((TA)LD(S, xr, a) - mean) * inv;
#if defined(AFFINE_COL)
    v *= (TA)LD(S, scale, r % scale_n);
#ifdef HAS_BIAS
    v += (TA)LD(S, bias, r % bias_n);
#endif
#elif defined(AFFINE_ROW)
    v = v * (TA)LD(S, scale, row % scale_n) + (TA)LD(S, bias, row % bias_n);
#endif
    ST(S, yr, a, (CT)v);
  }
}
#endif
