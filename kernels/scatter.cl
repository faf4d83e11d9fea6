// Scatter family (ScatterElements, ScatterND), OneHot, EyeLike, Trilu and CumSum.
//
// Build options:
//   -DE=uchar|ushort|uint|ulong   word type of the elements, for kernels that only move them
//   -DT=<storage type>            element type of kernels that compute (half: float16 storage)
//   -DACC=float|double|<int type> the type they compute in (float for half and float storage)
//   -DHALF_STORAGE                T is half: loaded and stored through kernels/storage.cl
//   -DRED_ADD|RED_MUL|RED_MAX|RED_MIN   the scatter reduction
//   -DTI=int|long|float|...       index (OneHot: indices) element type; -DTI_HALF: float16 bits,
//                                 -DTI_FLOAT: float or double (OneHot)
//   -DUSE_FP64                    a double is involved
//
// Scatters start from a copy of the data (made by copy.cl) and then write the updates into the
// output. Indices come from device buffers; one out of range cannot raise an error here, so the
// kernel sets err[0] (the run then fails naming the node) and skips that update.
//
// Determinism: with a reduction, the updates that meet in one output element are applied in
// their order in the updates tensor, by one work-item, as the ONNX reference does. That needs no
// float atomics (OpenCL 1.2 has none) and gives the same bits on every run and device. The price
// is parallelism: ScatterElements gives each work-item one line of updates along the axis (the
// updates' other coordinates fix the output line, so lines never collide) and walks it serially;
// ScatterND gives each work-item one offset within the slices and walks every index tuple, so a
// scatter of single elements (indices' last dim = data rank) runs on one work-item. Without a
// reduction every update element has its own work-item: duplicate targets are undefined in ONNX.
#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#include "index.cl"
#include "storage.cl"

#ifdef T
#ifdef HALF_STORAGE
#define LOADV(p, i) LD(F16, p, i)
#define STOREV(p, i, v) ST(F16, p, i, v)
#else
#define LOADV(p, i) ((ACC)(p)[i])
#define STOREV(p, i, v) ((p)[i] = (T)(v))
#endif

#if defined(RED_ADD)
#define REDUCE(a, u) ((a) + (u))
#elif defined(RED_MUL)
#define REDUCE(a, u) ((a) * (u))
// max / min: a NaN on either side gives NaN, as the Max and Min operators (x != x only for NaN).
#elif defined(RED_MAX)
#define REDUCE(a, u) ((a) != (a) ? (a) : (u) != (u) ? (u) : (u) > (a) ? (u) : (a))
#elif defined(RED_MIN)
#define REDUCE(a, u) ((a) != (a) ? (a) : (u) != (u) ? (u) : (u) < (a) ? (u) : (a))
#endif
#endif  // T

#if defined(E) && defined(TI)
// ScatterElements without reduction, one work-item per update element. p holds ndim updates
// dims, then ndim output strides.
__kernel void scatter_elements(__global const TI* idx, __global const E* upd, __global E* out,
                               __global const long* p, int ndim, int axis, long axis_dim, long n,
                               __global int* err) {
  long i = get_global_id(0);
  if (i >= n) return;
  long r = i, dst = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    long c = r % p[d];
    r /= p[d];
    if (d == axis) {
      const TI v = idx[i];
      c = FROM_END(v, axis_dim);
      if (c < 0 || c >= axis_dim) {
        err[0] = 1;
        return;
      }
    }
    dst += c * p[ndim + d];
  }
  out[dst] = upd[i];
}

// ScatterND without reduction, one work-item per update element. Index tuples of `depth` entries
// address slices of `slice` elements; p holds the indexed dims, then their strides.
__kernel void scatter_nd(__global const TI* idx, __global const E* upd, __global E* out,
                         __global const long* p, int depth, long slice, long n,
                         __global int* err) {
  long i = get_global_id(0);
  if (i >= n) return;
  long s = i / slice;
  long dst = i % slice;
  for (int k = 0; k < depth; ++k) {
    const TI v = idx[s * depth + k];
    const long c = FROM_END(v, p[k]);
    if (c < 0 || c >= p[k]) {
      err[0] = 1;
      return;
    }
    dst += c * p[depth + k];
  }
  out[dst] = upd[i];
}
#endif

#if defined(T) && defined(TI) && defined(REDUCE)
// ScatterElements with a reduction: one work-item per line of updates along the axis (see the
// top). p holds ndim updates dims, ndim updates strides, ndim output strides.
__kernel void scatter_elements_reduce(__global const TI* idx, __global const T* upd,
                                      __global T* out, __global const long* p, int ndim,
                                      int axis, long axis_dim, long lines,
                                      __global int* err) {
  long l = get_global_id(0);
  if (l >= lines) return;
  long r = l, ub = 0, ob = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    if (d == axis) continue;
    long c = r % p[d];
    r /= p[d];
    ub += c * p[ndim + d];
    ob += c * p[2 * ndim + d];
  }
  const long len = p[axis], ustride = p[ndim + axis], ostride = p[2 * ndim + axis];
  for (long j = 0; j < len; ++j) {
    const long u = ub + j * ustride;
    const TI v = idx[u];
    const long c = FROM_END(v, axis_dim);
    if (c < 0 || c >= axis_dim) {
      err[0] = 1;
      continue;
    }
    const long o = ob + c * ostride;
    STOREV(out, o, REDUCE(LOADV(out, o), LOADV(upd, u)));
  }
}

// ScatterND with a reduction: one work-item per offset within a slice, walking every index tuple
// in order (see the top).
__kernel void scatter_nd_reduce(__global const TI* idx, __global const T* upd, __global T* out,
                                __global const long* p, int depth, long slice, long nsel,
                                __global int* err) {
  long e = get_global_id(0);
  if (e >= slice) return;
  for (long s = 0; s < nsel; ++s) {
    long dst = e;
    int ok = 1;
    for (int k = 0; k < depth; ++k) {
      const TI v = idx[s * depth + k];
      const long c = FROM_END(v, p[k]);
      if (c < 0 || c >= p[k]) ok = 0;
      dst += c * p[depth + k];
    }
    if (!ok) {
      err[0] = 1;
      continue;
    }
    STOREV(out, dst, REDUCE(LOADV(out, dst), LOADV(upd, s * slice + e)));
  }
}
#endif

#if defined(E) && defined(TI) && defined(ONE_HOT)
// An index as a long (floats truncated, as ONNX's cast to int64) or, for integer types, as it is
// stored: FROM_END tests its sign before widening (index.cl).
#if defined(TI_HALF)
#define LOAD_INDEX(p, i) ((long)half_bits_to_float(((__global const ushort*)(p))[i]))
#define INDEX_T long
#elif defined(TI_FLOAT)
#define LOAD_INDEX(p, i) ((long)(p)[i])
#define INDEX_T long
#else
#define LOAD_INDEX(p, i) ((p)[i])
#define INDEX_T TI
#endif
// OneHot: the indices viewed as [outer, inner], the output as [outer, depth, inner]; values holds
// [off, on]. With NEGATIVE_INDICES (opset 11) an index in [-depth, 0) counts from the end; any
// other index outside [0, depth) gives a row of `off`.
__kernel void one_hot(__global const TI* idx, __global const E* values, __global E* out,
                      long depth, long inner, long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  const long in = i % inner;
  const long t = i / inner;
  const long d = t % depth;
  const INDEX_T v = LOAD_INDEX(idx, (t / depth) * inner + in);
#ifdef NEGATIVE_INDICES
  const long ix = FROM_END(v, depth);
#else
  const long ix = v;
#endif
  out[i] = values[ix == d ? 1 : 0];
}
#endif

#if defined(E) && defined(ONE)
// EyeLike: a [rows, cols] matrix with ONE (the bits of 1 in the output's storage) on diagonal k.
__kernel void eye_like(__global E* out, long cols, long k, long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  out[i] = (i % cols) - (i / cols) == k ? (E)ONE : (E)0;
}
#endif

#if defined(E) && defined(TRILU)
// Trilu over a batch of [rows, cols] matrices: keeps the elements on and above diagonal k (UPPER)
// or on and below it, zeroes the rest (zero bits are 0 in every element type).
__kernel void trilu(__global const E* x, __global E* y, long rows, long cols, long k, long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  const long diag = (i % cols) - (i / cols) % rows;
#ifdef UPPER
  y[i] = diag >= k ? x[i] : (E)0;
#else
  y[i] = diag <= k ? x[i] : (E)0;
#endif
}
#endif

#if defined(T) && defined(CUMSUM)
// CumSum: x viewed as [outer, len, inner]; one work-item per (outer, inner) line walks the axis
// with the running sum in ACC (float for float16 storage), so rounding happens once per stored
// element. Neighbouring work-items read neighbouring elements when inner > 1.
__kernel void cumsum(__global const T* x, __global T* y, long len, long inner, long lines) {
  long l = get_global_id(0);
  if (l >= lines) return;
  const long base = (l / inner) * len * inner + l % inner;
  ACC acc = (ACC)0;
  for (long t = 0; t < len; ++t) {
#ifdef REVERSE
    const long o = base + (len - 1 - t) * inner;
#else
    const long o = base + t * inner;
#endif
    const ACC v = LOADV(x, o);
#ifdef EXCLUSIVE
    STOREV(y, o, acc);
    acc += v;
#else
    acc += v;
    STOREV(y, o, acc);
#endif
  }
}
#endif
