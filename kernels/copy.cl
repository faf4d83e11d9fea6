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

// Rows of `len` words contiguous on both sides (the view's last dim): a work-item copies `per`
// rows, each row's offsets walked from the outer dims (p as copy_strided's; its last dim is the
// row). On CPU devices copy_strided's division walk per element cost ~5 ns an element (attention
// heads' Transpose and Split, 12- to 48-word rows).
__kernel void copy_rows(__global const E* src, __global E* dst, __global const long* p, int ndim,
                        long in_off, long out_off, long rows, int len, int per) {
  const IDX r0 = (IDX)get_global_id(0) * per;
  const IDX r1 = min((IDX)rows, r0 + per);
  for (IDX r = r0; r < r1; ++r) {
    IDX si = (IDX)in_off, di = (IDX)out_off, q = r;
    for (int d = ndim - 2; d >= 0; --d) {
      const IDX c = q % (IDX)p[d];
      q /= (IDX)p[d];
      si += c * (IDX)p[ndim + d];
      di += c * (IDX)p[2 * ndim + d];
    }
    for (int k = 0; k < len; ++k) dst[di + k] = src[si + k];
  }
}

// Straight contiguous copy: the common case after collapsing (Concat on axis 0, Split, Identity
// that could not alias).
__kernel void copy_contiguous(__global const E* src, __global E* dst, long in_off, long out_off,
                              long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  dst[out_off + i] = src[in_off + i];
}

// A (batched) transpose: view dims [batch, A, B] where the input is contiguous along A and the
// output along B. A work-item moves a TILE x TILE block through registers, so that both its reads
// and its writes are runs of TILE neighbours instead of one stride-B gather per element.
#ifdef TILE
__kernel void copy_transpose(__global const E* src, __global E* dst, long in_off, long out_off, int A, int B,
                             long in_bs, long in_js, long out_bs, long out_as) {
  const int a0 = get_global_id(0) * TILE, j0 = get_global_id(1) * TILE;
  const long b = get_global_id(2);
  if (a0 >= A || j0 >= B) return;
  src += in_off + b * in_bs;
  dst += out_off + b * out_bs;
  E t[TILE][TILE];
  const int na = min(TILE, A - a0), nj = min(TILE, B - j0);
  if (na == TILE && nj == TILE) {
#pragma unroll
    for (int j = 0; j < TILE; ++j)
#pragma unroll
      for (int a = 0; a < TILE; ++a) t[j][a] = src[(long)(j0 + j) * in_js + a0 + a];
#pragma unroll
    for (int a = 0; a < TILE; ++a)
#pragma unroll
      for (int j = 0; j < TILE; ++j) dst[(long)(a0 + a) * out_as + j0 + j] = t[j][a];
  } else {
    for (int j = 0; j < nj; ++j)
      for (int a = 0; a < na; ++a) t[j][a] = src[(long)(j0 + j) * in_js + a0 + a];
    for (int a = 0; a < na; ++a)
      for (int j = 0; j < nj; ++j) dst[(long)(a0 + a) * out_as + j0 + j] = t[j][a];
  }
}
#endif
