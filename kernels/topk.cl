// TopK along one axis. X is viewed as [outer, n, inner], the outputs as [outer, k, inner]; a slice
// is one (outer, inner) pair.
//
// Order: every element gets an unsigned (or signed, for signed integers) key that orders like its
// value, with -0 == +0 and every NaN one key above +infinity; "a before b" is key_a > key_b
// (LARGEST) or key_a < key_b, equal keys by the lower index. That is a strict total order, so
// both kernels give the same, fully determined output.
//
// Build options:
//   -DTX=... -DTY=...      element types of X and the values output (half: storage, see SX/SY)
//   -DSX=F16 -DSY=F16      float16 storage (kernels/storage.cl); float otherwise
//   -DKEY_F32 | -DKEY_F64 | -DKEY_SIGNED | -DKEY_UNSIGNED
//   -DLARGEST              the K largest (else the K smallest)
#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#include "storage.cl"
#ifndef SX
#define SX F32
#endif
#ifndef SY
#define SY F32
#endif

#if defined(KEY_F32)
typedef uint key_t;
static inline key_t key_of(float v) {
  if (isnan(v)) return 0xffffffffu;
  const uint u = as_uint(v == 0.0f ? 0.0f : v);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
#define KEY(p, i) key_of(LD(SX, p, i))
#define COPY(y, j, x, i) ST(SY, y, j, LD(SX, x, i))
#elif defined(KEY_F64)
typedef ulong key_t;
static inline key_t key_of(double v) {
  if (isnan(v)) return 0xffffffffffffffffUL;
  const ulong u = as_ulong(v == 0.0 ? 0.0 : v);
  return (u & 0x8000000000000000UL) ? ~u : (u | 0x8000000000000000UL);
}
#define KEY(p, i) key_of((p)[i])
#define COPY(y, j, x, i) ((y)[j] = (TY)(x)[i])
#elif defined(KEY_SIGNED)
typedef long key_t;
#define KEY(p, i) ((long)(p)[i])
#define COPY(y, j, x, i) ((y)[j] = (x)[i])
#else
typedef ulong key_t;
#define KEY(p, i) ((ulong)(p)[i])
#define COPY(y, j, x, i) ((y)[j] = (x)[i])
#endif

// Whether element (ka, ia) comes before (kb, ib).
#ifdef LARGEST
#define BEFORE(ka, ia, kb, ib) ((ka) > (kb) || ((ka) == (kb) && (ia) < (ib)))
#else
#define BEFORE(ka, ia, kb, ib) ((ka) < (kb) || ((ka) == (kb) && (ia) < (ib)))
#endif

// One work-item per slice: a binary heap of the k best indices so far, kept in the slice's
// indices output (entry j at yi[j * inner]), its root the worst of them; a later element that
// comes before the root replaces it. O(n log k) comparisons, no scratch. A heap sort then leaves
// the indices best first, and the values are copied from X.
//
// Places element `e` (key ke) at heap position `p` of a heap of `size` entries, moving it down.
static inline void sift_down(const __global TX* x, long xb, __global long* h, long inner, long size, long p, long e, key_t ke) {
  for (;;) {
    long c = 2 * p + 1;
    if (c >= size) break;
    long ic = h[c * inner];
    key_t kc = KEY(x, xb + ic * inner);
    if (c + 1 < size) {
      const long ir = h[(c + 1) * inner];
      const key_t kr = KEY(x, xb + ir * inner);
      if (BEFORE(kc, ic, kr, ir)) {  // the worse child moves up
        c = c + 1;
        ic = ir;
        kc = kr;
      }
    }
    if (!BEFORE(ke, e, kc, ic)) break;
    h[p * inner] = ic;
    p = c;
  }
  h[p * inner] = e;
}

__kernel void topk_heap(const __global TX* x, __global TY* y, __global long* yi, long n, long k, long inner,
                        long slices) {
  const long s = get_global_id(0);
  if (s >= slices) return;
  const long o = s / inner, in = s % inner;
  const long xb = o * n * inner + in;
  __global long* h = yi + o * k * inner + in;
  for (long j = 0; j < k; ++j) h[j * inner] = j;
  for (long p = k / 2 - 1; p >= 0; --p) {
    const long e = h[p * inner];
    sift_down(x, xb, h, inner, k, p, e, KEY(x, xb + e * inner));
  }
  long ir = h[0];
  key_t kr = KEY(x, xb + ir * inner);
  for (long i = k; i < n; ++i) {
    const key_t ki = KEY(x, xb + i * inner);
    if (BEFORE(ki, i, kr, ir)) {
      sift_down(x, xb, h, inner, k, 0, i, ki);
      ir = h[0];
      kr = KEY(x, xb + ir * inner);
    }
  }
  for (long end = k - 1; end > 0; --end) {
    const long e = h[end * inner];
    h[end * inner] = h[0];
    sift_down(x, xb, h, inner, end, 0, e, KEY(x, xb + e * inner));
  }
  const long yb = o * k * inner + in;
  for (long j = 0; j < k; ++j) COPY(y, yb + j * inner, x, xb + h[j * inner] * inner);
}

// One work-item per element (dim 0: the element's position along the axis, dim 1: the slice): its
// rank is the number of elements of its slice that come before it; ranks below k are written.
// O(n^2) comparisons per slice, all in parallel; a work-item stops counting at k.
__kernel void topk_rank(const __global TX* x, __global TY* y, __global long* yi, long n, long k, long inner) {
  const long i = get_global_id(0), s = get_global_id(1);
  if (i >= n) return;
  const long o = s / inner, in = s % inner;
  const long xb = o * n * inner + in;
  const key_t ki = KEY(x, xb + i * inner);
  long rank = 0;
  for (long j = 0; j < n && rank < k; ++j) {
    const key_t kj = KEY(x, xb + j * inner);
    rank += BEFORE(kj, j, ki, i) ? 1 : 0;
  }
  if (rank >= k) return;
  const long dst = o * k * inner + in + rank * inner;
  yi[dst] = i;
  COPY(y, dst, x, xb + i * inner);
}
