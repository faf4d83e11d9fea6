// Gather along one axis, dtype-agnostic (elements move as words of their byte size).
//
// Build options:
//   -DE=uchar|ushort|uint|ulong   word type of the data elements
//   -DTI=int|long                 index type
//   -DIDX=int                     32-bit offset arithmetic when every offset fits (else long)
//
// The data is viewed as [outer, axis_dim, inner] and the output as [outer, nidx, inner].
// Indices come from a device buffer, so they may be computed at run time; a negative index counts
// from the end. An index out of range sets the node's error flag `err` (the run then fails naming
// the node) and reads as zero rather than out of bounds. Constant indices are checked when the
// plan is made; their launches get a buffer for `err` that is never written.
#include "index.cl"

#ifndef IDX
#define IDX long
#endif

__kernel void gather_axis(__global const E* data, __global const TI* idx, __global E* out,
                          long inner, long nidx, long axis_dim, long n, __global int* err) {
  IDX i = (IDX)get_global_id(0);
  if (i >= (IDX)n) return;
  IDX k = i % (IDX)inner;
  IDX t = i / (IDX)inner;
  IDX j = t % (IDX)nidx;
  IDX o = t / (IDX)nidx;
  const TI v = idx[j];
  const long ix = FROM_END(v, axis_dim);
  if (ix < 0 || ix >= axis_dim) {
    atomic_or(err, 1);
    out[i] = (E)0;
    return;
  }
  out[i] = data[(o * (IDX)axis_dim + (IDX)ix) * (IDX)inner + k];
}

// gather_axis with rows of `inner` elements copied as runs: work-item (c, t) copies up to `chunk`
// consecutive elements of output row t (t = o * nidx + j) from its source row, the index read
// once (CPU devices, rows of 64+ elements; gather_axis's per-element divisions made SSDlite's
// [1,3,320,320] -> [3,320,320] Gather 0.68 ms, ONNX Runtime 0.14). Global: (ceil(inner / chunk),
// outer * nidx).
__kernel void gather_rows(__global const E* data, __global const TI* idx, __global E* out, long inner,
                          long nidx, long axis_dim, long chunk, __global int* err) {
  const IDX c0 = (IDX)get_global_id(0) * (IDX)chunk, t = (IDX)get_global_id(1);
  if (c0 >= (IDX)inner) return;
  const IDX j = t % (IDX)nidx, o = t / (IDX)nidx;
  const IDX end = min((IDX)chunk, (IDX)inner - c0);
  __global E* dst = out + t * (IDX)inner + c0;
  const TI v = idx[j];
  const long ix = FROM_END(v, axis_dim);
  if (ix < 0 || ix >= axis_dim) {
    atomic_or(err, 1);
    for (IDX k = 0; k < end; ++k) dst[k] = (E)0;
    return;
  }
  __global const E* src = data + (o * (IDX)axis_dim + (IDX)ix) * (IDX)inner + c0;
  for (IDX k = 0; k < end; ++k) dst[k] = src[k];
}

// GatherElements: out has the indices' shape; along `axis` the coordinate comes from the index
// tensor. p holds ndim output dims, then ndim data strides.
__kernel void gather_elements(__global const E* data, __global const TI* idx, __global E* out,
                              __global const long* p, int ndim, int axis, long axis_dim,
                              long n, __global int* err) {
  long i = get_global_id(0);
  if (i >= n) return;
  long r = i, src = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    long c = r % p[d];
    r /= p[d];
    if (d == axis) {
      const TI v = idx[i];
      c = FROM_END(v, axis_dim);
      if (c < 0 || c >= axis_dim) {
        atomic_or(err, 1);
        out[i] = (E)0;
        return;
      }
    }
    src += c * p[ndim + d];
  }
  out[i] = data[src];
}

// GatherND: indices viewed as [batch, nsel, depth] (depth = last index dim), data as
// [batch, ...indexed dims..., slice]; every index tuple selects one contiguous slice.
// p holds the `depth` indexed dims, then their strides (in elements of the per-batch data).
__kernel void gather_nd(__global const E* data, __global const TI* idx, __global E* out,
                        __global const long* p, int depth, long slice, long nsel,
                        long batch_stride, long n, __global int* err) {
  long i = get_global_id(0);
  if (i >= n) return;
  long k = i % slice;
  long s = i / slice;  // index tuple number over batch * nsel
  long b = s / nsel;
  long src = b * batch_stride;
  for (int d = 0; d < depth; ++d) {
    const TI v = idx[s * depth + d];
    const long c = FROM_END(v, p[d]);
    if (c < 0 || c >= p[d]) {
      atomic_or(err, 1);
      out[i] = (E)0;
      return;
    }
    src += c * p[depth + d];
  }
  out[i] = data[src + k];
}
