// ReverseSequence and Det (ops/linalg_ops.cpp).
//
// Build options: reverse_sequence: -DE=<element type> (moved unchanged). det_lu: -DSX/-DSY=F16
// storage (kernels/storage.cl), -DX_F64 a double input and output, -DUSE_FP64 eliminate in double.
#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double acc_t;
#else
typedef float acc_t;
#endif
#include "storage.cl"
#ifndef SX
#define SX F32
#endif
#ifndef SY
#define SY F32
#endif

#ifdef E
// x viewed as [B, T, inner] (batch_axis 0) or [T, B, inner] (batch_axis 1); one work-item per
// output element.
__kernel void reverse_sequence(__global const E* x, __global const long* lens, __global E* y, long B, long T, long inner,
                               int batch_axis, __global int* err) {
  const long i = get_global_id(0);
  const long k = i % inner, r = i / inner;
  const long b = batch_axis == 0 ? r / T : r % B;
  const long t = batch_axis == 0 ? r % T : r / B;
  long len = lens[b];
  if (len < 0 || len > T) {
    atomic_or(err, 1);
    len = 0;
  }
  const long src_t = t < len ? len - 1 - t : t;
  const long src = batch_axis == 0 ? (b * T + src_t) * inner + k : (src_t * B + b) * inner + k;
  y[i] = x[src];
}
#endif

// The determinant of matrix g of [count, m, m]: LU with partial pivoting on a copy in `work`.
__kernel void det_lu(
#ifdef X_F64
    __global const double* x, __global double* y,
#else
    __global const STORE_TYPE(SX)* x, __global STORE_TYPE(SY)* y,
#endif
    __global acc_t* work, long m) {
  const long g = get_global_id(0);
  __global acc_t* a = work + g * m * m;
  for (long i = 0; i < m * m; ++i)
#ifdef X_F64
    a[i] = x[g * m * m + i];
#else
    a[i] = LD(SX, x, g * m * m + i);
#endif
  acc_t det = 1;
  for (long c = 0; c < m; ++c) {
    long p = c;
    for (long r = c + 1; r < m; ++r)
      if (fabs(a[r * m + c]) > fabs(a[p * m + c])) p = r;
    if (a[p * m + c] == 0) {
      det = 0;
      break;
    }
    if (p != c) {
      for (long j = c; j < m; ++j) {
        const acc_t t = a[c * m + j];
        a[c * m + j] = a[p * m + j];
        a[p * m + j] = t;
      }
      det = -det;
    }
    const acc_t piv = a[c * m + c];
    det *= piv;
    for (long r = c + 1; r < m; ++r) {
      const acc_t f = a[r * m + c] / piv;
      for (long j = c + 1; j < m; ++j) a[r * m + j] -= f * a[c * m + j];
    }
  }
#ifdef X_F64
  y[g] = det;
#else
  ST(SY, y, g, (float)det);
#endif
}
