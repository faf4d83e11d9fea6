// Pad in constant, reflect, edge or wrap mode, dtype-agnostic (elements move as words of their size).
//
// Build options:
//   -DE=uchar|ushort|uint|ulong            word type of the elements
//   -DMODE_CONSTANT|MODE_REFLECT|MODE_EDGE|MODE_WRAP
//   -DIDX=int                              32-bit offset arithmetic when every offset fits
//
// p holds ndim output dims, ndim input dims, ndim leading pads (negative pads crop), ndim input
// strides, and with MODE_WRAP ndim starts and ndim lengths of the part negative pads leave.
// `value` is a one-element buffer with the constant, already in the tensor's type (it
// may be the node's runtime constant_value input).
#ifndef IDX
#define IDX long
#endif
#define EV16_(t) t##16
#define EV16__(t) EV16_(t)
#define EV16 EV16__(E)  // 16 words

__kernel void pad_generic(__global const E* src, __global E* dst, __global const long* p,
                          __global const E* value, int ndim, long n) {
  IDX i = (IDX)get_global_id(0);
  if (i >= (IDX)n) return;
  IDX r = i, si = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    IDX c = r % (IDX)p[d];
    r /= (IDX)p[d];
    IDX len = (IDX)p[ndim + d];
    c -= (IDX)p[2 * ndim + d];
    if (c < 0 || c >= len) {
#if defined(MODE_CONSTANT)
      dst[i] = value[0];
      return;
#elif defined(MODE_EDGE)
      c = c < 0 ? 0 : len - 1;
#elif defined(MODE_WRAP)
      // As if the input were a torus (Pad-19); pads wider than the input wrap again. Negative pads
      // crop first: the wrap goes around the part they leave, from p[4 ndim + d], p[5 ndim + d] long
      // (ONNX Runtime's order).
      const IDX lo = (IDX)p[4 * ndim + d], span = (IDX)p[5 * ndim + d];
      c = (c - lo) % span;
      if (c < 0) c += span;
      c += lo;
#else
      // numpy's reflect (edge not repeated), folded with period 2(len-1) so pads wider than the
      // input keep reflecting.
      if (len == 1) {
        c = 0;
      } else {
        IDX period = 2 * (len - 1);
        c %= period;
        if (c < 0) c += period;
        if (c >= len) c = period - c;
      }
#endif
    }
    si += c * (IDX)p[3 * ndim + d];
  }
  dst[i] = src[si];
}

// pad_rows: `rows` rows of `width` words copied into rows of `padded` words starting at column
// `left`, zeros around them: a conv's input with its column padding made real once, so that every
// work-item of the conv reads its row segments unchecked (ops/conv_ops.cpp, packed variant). A
// work-item copies `per_item` rows (rows are short: one work-group per row would cost more than
// the copy). With `split` each padded row is stored as its even columns, then its odd ones (the
// even half (padded + 1) / 2 words long): a stride-2 conv then reads each tap's inputs as
// consecutive words (conv.cl's pixvec).
__kernel void pad_rows(__global const E* restrict src, __global E* restrict dst, int rows, int width,
                       int padded, int left, int per_item, int split) {
  const int r0 = (int)get_global_id(0) * per_item;
  const int r1 = min(rows, r0 + per_item);
  const int right = left + width;
  for (int r = r0; r < r1; ++r) {
    const __global E* s = src + (long)r * width;
    __global E* d = dst + (long)r * padded;
    if (split) {
      // Padded column i goes to d[i / 2] (even i) or d[odd0 + i / 2] (odd i). Columns from the
      // first even one inside the row on, 32 at a time as two vectors split into their even and
      // odd lanes (YOLOv8n's 640-wide stem rows: 500-580 us for the copy, 890 us in the one
      // noisy profile of the scalar loop); the ends and the padding one by one.
      const int odd0 = (padded + 1) / 2;
      int i = 0;
#pragma clang loop unroll(disable) vectorize(disable)
      for (; i < padded && (i < left || (i & 1)); ++i)
        d[(i & 1) ? odd0 + i / 2 : i / 2] = i >= left && i < right ? s[i - left] : (E)0;
      for (; i + 32 <= right; i += 32) {
        const EV16 a = vload16(0, s + (i - left)), b = vload16(0, s + (i - left) + 16);
        vstore16((EV16)(a.even, b.even), 0, d + i / 2);
        vstore16((EV16)(a.odd, b.odd), 0, d + odd0 + i / 2);
      }
#pragma clang loop unroll(disable) vectorize(disable)
      for (; i < padded; ++i) d[(i & 1) ? odd0 + i / 2 : i / 2] = i >= left && i < right ? s[i - left] : (E)0;
      continue;
    }
    // A few zeros each side: rolled loops (vectorised copies of these cost compile time at the
    // kernel's first launch and gain nothing).
#pragma clang loop unroll(disable) vectorize(disable)
    for (int i = 0; i < left; ++i) d[i] = (E)0;
    for (int i = 0; i < width; ++i) d[left + i] = s[i];
#pragma clang loop unroll(disable) vectorize(disable)
    for (int i = right; i < padded; ++i) d[i] = (E)0;
  }
}
