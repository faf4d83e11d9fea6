// Generic strided copy, dtype-agnostic: elements move as opaque words of their byte size.
//
// Build options:
//   -DE=uchar|ushort|uint|ulong   the word type matching the element size
//   -DIDX=int                     index arithmetic in 32 bits when every offset fits (64-bit
//                                 division is several times slower on GPUs); long otherwise
//
// p holds ndim output-walk dims, then ndim input strides, then ndim output strides (all in
// elements). The walk is over the view's dims, not over the whole output, so Concat can write
// into a slice of a larger buffer and Expand/Tile can read one element many times (stride 0).
#ifndef IDX
#define IDX long
#endif

__kernel void copy_strided(__global const E* src, __global E* dst, __global const long* p,
                           int ndim, long in_off, long out_off, long n) {
  IDX i = (IDX)get_global_id(0);
  if (i >= (IDX)n) return;
  IDX si = (IDX)in_off, di = (IDX)out_off, r = i;
  for (int d = ndim - 1; d >= 0; --d) {
    IDX c = r % (IDX)p[d];
    r /= (IDX)p[d];
    si += c * (IDX)p[ndim + d];
    di += c * (IDX)p[2 * ndim + d];
  }
  dst[di] = src[si];
}

// Straight contiguous copy: the common case after collapsing (Concat on axis 0, Split, Identity
// that could not alias).
__kernel void copy_contiguous(__global const E* src, __global E* dst, long in_off, long out_off,
                              long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  dst[out_off + i] = src[in_off + i];
}
