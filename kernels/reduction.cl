// Shared by reduce.cl, norm.cl and softmax.cl: reduction geometry and a work-group tree reduction.
//
// Geometry (when the includer defines NK, NR): p holds the kept dims, kept strides, reduced dims
// and reduced strides (the layout of ReduceGeometry::params() in ops/reduce_ops.hpp).
#if defined(NK)
// Offset of output `o`'s first element.
static inline long kept_offset(long o, __global const long* p) {
  long off = 0;
  for (int d = NK - 1; d >= 0; --d) {
    long n = p[d];
    off += (o % n) * p[NK + d];
    o /= n;
  }
  return off;
}
#endif

#if defined(NK) && defined(NR)
// Offset of reduced index r from an output's first element.
static inline long red_offset(long r, __global const long* p) {
#if NR == 0
  return 0;
#elif NR == 1
  return r * p[2 * NK + 1];
#else
  long off = 0;
  for (int d = NR - 1; d >= 0; --d) {
    long n = p[2 * NK + d];
    off += (r % n) * p[2 * NK + NR + d];
    r /= n;
  }
  return off;
#endif
}
#endif

// Tree reduction over the work-group (WG work-items, local id `lid`, local buffer `buf`); every
// work-item gets the result in v.
#define WG_REDUCE(buf, v, COMBINE)                               \
  do {                                                           \
    buf[lid] = v;                                                \
    barrier(CLK_LOCAL_MEM_FENCE);                                \
    for (int s_ = WG / 2; s_ > 0; s_ >>= 1) {                    \
      if (lid < s_) buf[lid] = COMBINE(buf[lid], buf[lid + s_]); \
      barrier(CLK_LOCAL_MEM_FENCE);                              \
    }                                                            \
    v = buf[0];                                                  \
    barrier(CLK_LOCAL_MEM_FENCE);                                \
  } while (0)
