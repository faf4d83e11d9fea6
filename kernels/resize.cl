// Resize / Upsample through per-dim tap tables computed on the host.
//
// For every resized dim the host tabulates, per output coordinate, that dim's taps: source
// indices and weights (1 tap for nearest, 2 for linear, 4 for cubic; with antialias the filter's
// widened footprint when the dim shrinks). An index of -1 marks a coordinate
// outside the input (tf_crop_and_resize), whose output is the extrapolation value. The kernel
// sums over the combinations of the k resized dims' taps; dims that keep their size map
// straight through. Doing the coordinate arithmetic once on the host in double keeps every
// coordinate_transformation_mode / nearest_mode exactly as the reference computes it.
//
// Build options:
//   -DE=uchar|ushort|uint|ulong   (resize_nearest) word type of the elements
//   -DT=float|double -DACC=...    (resize_interp) element and accumulator types
//   -DUSE_FP64
//   -DIDX=int                     32-bit offset arithmetic when every offset fits (else long)
//
// p holds ndim output dims, ndim input strides, then per resized dim: its dim index and the
// offset of its rows in the tables (row of output coordinate c starts at offset + c * taps), then
// each resized dim's tap count (resize_interp).
#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#define MAX_RESIZED 8
#ifndef IDX
#define IDX long
#endif

#ifdef E
__kernel void resize_nearest(__global const E* src, __global E* dst, __global const long* p,
                             __global const int* tidx, __global const E* extrap, int ndim, int k,
                             long n) {
  IDX i = (IDX)get_global_id(0);
  if (i >= (IDX)n) return;
  IDX r = i, si = 0;
  int j = k - 1;
  for (int d = ndim - 1; d >= 0; --d) {
    IDX c = r % (IDX)p[d];
    r /= (IDX)p[d];
    if (j >= 0 && p[2 * ndim + 2 * j] == d) {
      const int tc = tidx[(IDX)p[2 * ndim + 2 * j + 1] + c];  // tested as an int (index.cl)
      --j;
      if (tc < 0) {
        dst[i] = extrap[0];
        return;
      }
      c = tc;
    }
    si += c * (IDX)p[ndim + d];
  }
  dst[i] = src[si];
}

// Nearest resize of the last two dims (rows and columns) of a contiguous tensor, no extrapolation:
// the FPN / U-Net upsampling case. A work-item writes `xper` consecutive outputs of one row
// (all of it on CPU devices, one on GPUs), its source row found once; ytab / xtab give each
// output row's / column's source index. Global: (ceil(wo / xper), ho, planes).
__kernel void resize_nearest_rows(__global const E* src, __global E* dst, __global const int* ytab,
                                  __global const int* xtab, int hi, int wi, int ho, int wo, int xper) {
  const int x0 = (int)get_global_id(0) * xper, oy = (int)get_global_id(1);
  const IDX plane = (IDX)get_global_id(2);
  if (x0 >= wo) return;
  __global const E* s = src + (plane * hi + ytab[oy]) * (IDX)wi;
  __global E* d = dst + (plane * ho + oy) * (IDX)wo;
  const int x1 = min(x0 + xper, wo);
  for (int x = x0; x < x1; ++x) d[x] = s[xtab[x]];
}
#endif

#ifdef T
// Half storage: -DT=half -DS=F16 (kernels/storage.cl), interpolated in ACC=float.
#include "storage.cl"
#ifndef S
#define S F32
#endif
__kernel void resize_interp(__global const T* src, __global T* dst, __global const long* p,
                            __global const int* tidx, __global const ACC* tw, int ndim, int k,
                            ACC extrap, long n) {
  IDX i = (IDX)get_global_id(0);
  if (i >= (IDX)n) return;
  IDX r = i, base = 0;
  IDX row[MAX_RESIZED], stride[MAX_RESIZED];
  int taps[MAX_RESIZED];
  int j = k - 1;
  for (int d = ndim - 1; d >= 0; --d) {
    IDX c = r % (IDX)p[d];
    r /= (IDX)p[d];
    if (j >= 0 && p[2 * ndim + 2 * j] == d) {
      taps[j] = (int)p[2 * ndim + 2 * k + j];
      row[j] = (IDX)p[2 * ndim + 2 * j + 1] + c * taps[j];
      stride[j] = (IDX)p[ndim + d];
      --j;
    } else {
      base += c * (IDX)p[ndim + d];
    }
  }
  int combos = 1;
  for (j = 0; j < k; ++j) combos *= taps[j];
  ACC acc = 0;
  for (int t = 0; t < combos; ++t) {
    int rest = t;
    IDX si = base;
    ACC w = 1;
    for (j = 0; j < k; ++j) {
      int tap = rest % taps[j];
      rest /= taps[j];
      int ix = tidx[row[j] + tap];
      if (ix < 0) {
        ST(S, dst, i, extrap);
        return;
      }
      w *= tw[row[j] + tap];
      si += ix * stride[j];
    }
    if (w != (ACC)0) acc += w * (ACC)LD(S, src, si);
  }
  ST(S, dst, i, acc);
}

// resize_interp for the last two dims only, every output inside the input (no extrapolation): a
// work-item writes `xper` consecutive outputs of one row (all of it on CPU devices, one on GPUs)
// with the row's taps read once. yi / yw hold ty taps per output row, xi / xw tx per output
// column (one tap of weight 1 for a dim that keeps its size). The taps are visited, weighted and
// summed as resize_interp visits them (rows' taps fastest, weight (1 * wy) * wx, weightless taps
// skipped), so both give the same bits. Global: (ceil(wo / xper), ho, planes).
__kernel void resize_interp_rows(__global const T* src, __global T* dst, __global const int* yi,
                                 __global const ACC* yw, __global const int* xi, __global const ACC* xw, int hi,
                                 int wi, int ho, int wo, int ty, int tx, int xper) {
  const int x0 = (int)get_global_id(0) * xper, oy = (int)get_global_id(1);
  const IDX plane = (IDX)get_global_id(2);
  if (x0 >= wo) return;
  __global const T* s = src + plane * hi * (IDX)wi;
  __global T* d = dst + (plane * ho + oy) * (IDX)wo;
  __global const int* yr = yi + oy * ty;
  __global const ACC* ywr = yw + oy * ty;
  const int x1 = min(x0 + xper, wo);
  for (int x = x0; x < x1; ++x) {
    ACC acc = 0;
    for (int a = 0; a < tx; ++a) {
      const int ix = xi[x * tx + a];
      const ACC wx = xw[x * tx + a];
      for (int b = 0; b < ty; ++b) {
        const ACC w = ywr[b] * wx;
        if (w != (ACC)0) acc += w * (ACC)LD(S, s, (IDX)yr[b] * wi + ix);
      }
    }
    ST(S, d, x, acc);
  }
}
#endif
