// Pooling over up to three spatial dims (1-D and 2-D pools use D = H = 1 or D = 1), one work-item
// per output element; global: (OW, OD*OH, N*C). Pools are memory-bound, so the geometry stays a
// run-time parameter block instead of multiplying program variants.
//
// Build options:
//   -DT=<type>             element type (float, double, uchar, char ...); -DUSE_FP64 with double
//   -DPOOL_MAX -DT_LOWEST=<literal> [-DHAS_INDICES] [-DCOLUMN_MAJOR]
//   -DPOOL_AVG [-DCOUNT_PAD]       divide by the window inside the padded input (else: the valid
//                                  part of the window)
//   -DPOOL_LP -DP_NORM=<int>
//   pool_max_rows: -DROWS_VEC (vector runs), -DPOOL_BYTES (8-bit X and Y: runs of bytes)
//   pool_avg_rows: -DAVG_ROWS
#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double acc_t;
#else
typedef float acc_t;
#endif

// X's storage (S, with T the pointer type; half: -DS=F16 -DC=float) and Y's (YS, YT: the same
// unless given); values are handled in C, float for half (kernels/storage.cl).
#include "storage.cl"
#ifndef S
#define S F32
#endif
#ifndef C
#define C T
#endif
#ifndef YT
#define YT T
#endif
#ifndef YS
#define YS S
#endif

// p: in D,H,W | out D,H,W | kernel | strides | dilations | pads begin | pads end (18..20)
// Window extents, strides and dilations are build options when known (-DWIN_KH=3 ...), so the
// window loops unroll; otherwise they come from the parameter array.
#ifdef WIN_KD
#define WIN_CONST  // the window is compiled in
#else
#define WIN_KD p[6]
#define WIN_KH p[7]
#define WIN_KW p[8]
#define WIN_SD p[9]
#define WIN_SH p[10]
#define WIN_SW p[11]
#define WIN_DD p[12]
#define WIN_DH p[13]
#define WIN_DW p[14]
#endif

__kernel void pool_generic(__global const T* restrict X, __global YT* restrict Y,
                           __global long* restrict indices, __global const int* restrict p) {
  const int D = p[0], H = p[1], W = p[2], OD = p[3], OH = p[4], OW = p[5];
  const int ow = get_global_id(0), odh = get_global_id(1), nc = get_global_id(2);
  if (ow >= OW || odh >= OD * OH) return;
  const int od = odh / OH, oh = odh % OH;
  const int d0 = od * WIN_SD - p[15], h0 = oh * WIN_SH - p[16], w0 = ow * WIN_SW - p[17];
  const long plane = (long)D * H * W;
  const __global T* x = X + nc * plane;

#if defined(POOL_MAX)
  C best = T_LOWEST;
  long best_at = -1;
#else
  acc_t sum = 0;
  int valid = 0;
#endif
  for (int kd = 0; kd < WIN_KD; ++kd) {
    const int id = d0 + kd * WIN_DD;
    if (id < 0 || id >= D) continue;
    for (int kh = 0; kh < WIN_KH; ++kh) {
      const int ih = h0 + kh * WIN_DH;
      if (ih < 0 || ih >= H) continue;
#pragma unroll
      for (int kw = 0; kw < WIN_KW; ++kw) {
        const int iw = w0 + kw * WIN_DW;
        if (iw < 0 || iw >= W) continue;
        const C v = LD(S, x, ((long)id * H + ih) * W + iw);
#if defined(POOL_MAX)
        if (v > best || best_at < 0) {
          best = v;
#ifdef COLUMN_MAJOR
          best_at = id + (long)D * (ih + (long)H * iw);
#else
          best_at = ((long)id * H + ih) * W + iw;
#endif
        }
#elif defined(POOL_LP)
        const acc_t a = fabs((acc_t)v);
        sum += P_NORM == 1 ? a : (P_NORM == 2 ? a * a : pow(a, (acc_t)P_NORM));
#else
        sum += (acc_t)v;
        ++valid;
#endif
      }
    }
  }

  const long o = (long)nc * OD * OH * OW + (long)odh * OW + ow;
#if defined(POOL_MAX)
  ST(YS, Y, o, best);
#ifdef HAS_INDICES
  indices[o] = best_at < 0 ? 0 : nc * plane + best_at;
#endif
#elif defined(POOL_LP)
  ST(YS, Y, o, (C)(P_NORM == 1 ? sum : (P_NORM == 2 ? sqrt(sum) : pow(sum, (acc_t)1 / P_NORM))));
#else
#ifdef COUNT_PAD
  // The window clipped to the padded input [-pad_begin, size + pad_end).
  int count = 1;
  const int start[3] = {d0, h0, w0}, size[3] = {D, H, W};
  for (int a = 0; a < 3; ++a) {
    int inside = 0;
    for (int k = 0; k < p[6 + a]; ++k) {
      const int i = start[a] + k * p[12 + a];
      inside += i >= -p[15 + a] && i < size[a] + p[18 + a];
    }
    count *= inside;
  }
#else
  const int count = valid;
#endif
  ST(YS, Y, o, (C)(count > 0 ? sum / (acc_t)count : (acc_t)0));
#endif
}

#if defined(POOL_AVG) && defined(AVG_ROWS) && defined(WIN_CONST) && !defined(USE_FP64)
// 2-D AveragePool without padding or dilation whose windows lie inside the input (float or half
// storage): one output row per work-item. With 2-wide windows at stride 2 (DenseNet's transitions,
// U-Net downsampling), 8 outputs at a time from 16-value vectors, split into even and odd lanes.
// The taps are summed in pool_generic's order (rows, then columns, from 0), so both give the same
// bits; pool_generic took 350 us for DenseNet-121's first 2x2 AveragePool on PoCL, ONNX Runtime 78.
__kernel void pool_avg_rows(__global const T* restrict X, __global YT* restrict Y, int H, int W, int OH, int OW) {
  const int oh = get_global_id(0), nc = get_global_id(1);
  if (oh >= OH) return;
  const __global T* x = X + ((long)nc * H + (long)oh * WIN_SH) * W;
  __global YT* y = Y + ((long)nc * OH + oh) * OW;
  const float count = (float)(WIN_KH * WIN_KW);
  int ow = 0;
#if WIN_KW == 2 && WIN_SW == 2
  for (; ow + 8 <= OW; ow += 8) {
    float8 acc = 0;
#pragma unroll
    for (int kh = 0; kh < WIN_KH; ++kh) {
      const float16 v = LDN(S, 16, x + kh * W + 2 * ow, 0);
      acc += v.even;
      acc += v.odd;
    }
    STN(YS, 8, y + ow, 0, acc / count);
  }
#endif
  for (; ow < OW; ++ow) {
    float sum = 0;
#pragma unroll
    for (int kh = 0; kh < WIN_KH; ++kh)
#pragma unroll
      for (int kw = 0; kw < WIN_KW; ++kw) sum += LD(S, x, kh * W + ow * WIN_SW + kw);
    ST(YS, y, ow, sum / count);
  }
}
#endif

#if defined(POOL_AVG) && defined(PLANE_AVG)
// Average over whole planes (GlobalAveragePool, or an AveragePool whose unpadded window is the
// input): one work-item per plane, summed as 8 float lanes along the contiguous plane, then the
// lanes and the tail. Float or half storage.
DEFINE_PLANE_MEAN(pool_plane_mean, S, T)
__kernel void pool_plane_avg(__global const T* restrict X, __global YT* restrict Y, long plane,
                             long planes) {
  const long nc = get_global_id(0);
  if (nc >= planes) return;
  ST(YS, Y, nc, pool_plane_mean(X + nc * plane, plane));
}
#endif

#if defined(POOL_MAX) && !defined(HAS_INDICES) && defined(WIN_CONST)
// MaxPool with a compile-time window, one output row per work-item (local size 1): on CPU devices
// a work-item per output pays the runtime's per-item cost ~10x over; a row amortizes it.
// With -DROWS_VEC (float or half storage, computed in float), runs of 8 outputs whose windows lie
// inside the input are done as float8 vectors (stride 2: the even lanes of a 16-float load);
// borders take the per-output path. Both take the first tap of the window, then any greater one
// (a NaN is kept only as the first tap), so the two paths agree exactly.

// Output ow of row `x` (already offset to plane nc), rows d0/h0 of the window's start.
static inline C pool_max_one(const __global T* restrict x, int D, int H, int W, int d0, int h0, int pw,
                      int ow) {
  const int w0 = ow * WIN_SW - pw;
  C best = T_LOWEST;
  bool any = false;
  for (int kd = 0; kd < WIN_KD; ++kd) {
    const int id = d0 + kd * WIN_DD;
    const bool okd = id >= 0 && id < D;
    const int idc = clamp(id, 0, D - 1);
#pragma unroll
    for (int kh = 0; kh < WIN_KH; ++kh) {
      const int ih = h0 + kh * WIN_DH;
      const bool okh = okd && ih >= 0 && ih < H;
      const __global T* xr = x + ((long)idc * H + clamp(ih, 0, H - 1)) * W;
#pragma unroll
      for (int kw = 0; kw < WIN_KW; ++kw) {
        const int iw = w0 + kw * WIN_DW;
        const bool ok = okh && iw >= 0 && iw < W;
        const C v = LD(S, xr, clamp(iw, 0, W - 1));
        best = ok && (v > best || !any) ? v : best;
        any |= ok;
      }
    }
  }
  return best;
}

// The vector path needs a compile-time stride of 1 or 2 (tested only when ROWS_VEC is given: the
// host gives it with the window's build options; without them WIN_SW is a run-time value).
#ifdef ROWS_VEC
#if WIN_SW == 1 || WIN_SW == 2
#define ROWS_VEC_ON
#endif
#endif
#ifdef ROWS_VEC_ON
// The input row of window row h. With undilated rows, a window row in the plane's top or bottom
// padding reads the nearest row of the plane instead, which is another row of the same window: a
// repeated tap changes no maximum, and the first tap read is then the window's first valid one, as
// on the per-output path (so the top and bottom rows of a padded plane take the vector path too).
#if WIN_DH == 1
#define POOL_ROW(h) clamp((h), 0, H - 1)
#else
#define POOL_ROW(h) (h)
#endif
// Floats one vector load reads from a window column: 8 lanes, or 16 for the even lanes.
#define ROW_LOAD (8 * WIN_SW)
static inline float8 row_load(const __global T* restrict q) {
#if WIN_SW == 1
  return LDN(S, 8, q, 0);
#else
  return LDN(S, 16, q, 0).even;
#endif
}

// Outputs [ow, ow + 8) of the row, every window inside the input (rows and all loads).
// Inlined by force: in a program bundle PoCL's LLVM left it (and pool_max_inside) as real calls,
// and squeezenet1_1's MaxPools took 234 instead of 167 us (AMD EPYC Zen 4, PoCL 3.1).
// `rows`: the window's input rows (kd * WIN_KH + kh), set once per output row (POOL_ROW).
#if WIN_SW == 2 && WIN_DW == 1 && WIN_KW <= 3
// Stride 2, up to 3 adjacent columns (the 3x3 / stride 2 pools of ResNets and SqueezeNets, 2x2 /
// stride 2): the second column's taps are the odd lanes of the 16 floats whose even lanes are the
// first column's (two loads per window row instead of three), and each window row is reduced on
// its own before the rows are combined, so that the chain of dependent maxima is short
// (squeezenet1_1's first two MaxPools 78 / 50 -> 71 / 36 us, resnet18's 78 -> 65 us; smallest
// times over alternating processes on a 2-core AMD EPYC Zen 5, PoCL 3.1). The value
// is the folded taps' below, bit for bit: the fold keeps the first tap if it is NaN, and otherwise
// the first of the greatest non-NaN taps in row-major order (which decides between -0 and +0).
// Here every reduction starts from -inf and takes a tap only when it is greater (a NaN never is):
// the first of the greatest non-NaN taps; then a NaN first tap replaces it.
__attribute__((always_inline)) static inline float8 pool_max_run8(const __global T* const* rows, int pw,
                                                           int ow) {
  const int w0 = ow * 2 - pw;
  float8 best = -INFINITY, first = 0.0f;
  for (int kd = 0; kd < WIN_KD; ++kd) {
#pragma unroll
    for (int kh = 0; kh < WIN_KH; ++kh) {
      const __global T* xr = rows[kd * WIN_KH + kh] + w0;
      const float16 v = LDN(S, 16, xr, 0);
      if (kd == 0 && kh == 0) first = v.even;
      float8 m = -INFINITY;
      m = select(m, v.even, v.even > m);
#if WIN_KW >= 2
      m = select(m, v.odd, v.odd > m);
#endif
#if WIN_KW == 3
      const float8 v2 = LDN(S, 16, xr + 2, 0).even;
      m = select(m, v2, v2 > m);
#endif
      best = select(best, m, m > best);
    }
  }
  return select(best, first, first != first);
}
#else
__attribute__((always_inline)) static inline float8 pool_max_run8(const __global T* const* rows, int pw,
                                                           int ow) {
  const int w0 = ow * WIN_SW - pw;
  float8 best = 0.0f;  // the first tap's value, below
  for (int kd = 0; kd < WIN_KD; ++kd) {
#pragma unroll
    for (int kh = 0; kh < WIN_KH; ++kh) {
      const __global T* xr = rows[kd * WIN_KH + kh] + w0;
#pragma unroll
      for (int kw = 0; kw < WIN_KW; ++kw) {
        const float8 v = row_load(xr + kw * WIN_DW);
        best = kd == 0 && kh == 0 && kw == 0 ? v : select(best, v, v > best);
      }
    }
  }
  return best;
}
#endif

// -DPOOL_BYTES (8-bit storage, X and Y alike): runs of 16 outputs, then of 8, as vectors of the
// stored bytes (a maximum of integers needs no float: int8 squeezenet1_1's and resnet18's MaxPools
// spent their time converting each byte to a float and back). The value is any greatest tap, and
// equal integers are the same value, so the float path's tap-order rules have nothing to decide.
#ifdef POOL_BYTES
#define POOL_CAT_(a, b) a##b
#define POOL_CAT(a, b) POOL_CAT_(a, b)
#define BYTES16 POOL_CAT(T, 16)
#define BYTES8 POOL_CAT(T, 8)
#define BYTE_MAX(a, b) ((a) > (b) ? (a) : (b))
// n taps from q at stride WIN_SW (1 or 2): one unaligned load (VLOAD_BYTES), with stride 2 of 2n
// bytes whose even lanes are taken.
#if WIN_SW == 2 && defined(__x86_64__)
typedef uchar oi_uchar32 __attribute__((ext_vector_type(32)));
typedef struct { oi_uchar32 lanes; } __attribute__((packed)) oi_bytes32;
#endif
static inline BYTES16 bytes_load16(const __global T* restrict q) {
#if WIN_SW == 1
  return POOL_CAT(as_, BYTES16)(VLOAD_BYTES(16, q));
#elif defined(__x86_64__)
  const oi_uchar32 v = VLOAD_BYTES(32, q);
  return POOL_CAT(as_, BYTES16)(
      __builtin_shufflevector(v, v, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30));
#else
  const BYTES16 lo = vload16(0, q), hi = vload16(1, q);
  return __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
#endif
}
static inline BYTES8 bytes_load8(const __global T* restrict q) {
#if WIN_SW == 1
  return POOL_CAT(as_, BYTES8)(VLOAD_BYTES(8, q));
#else
  return POOL_CAT(as_, BYTES16)(VLOAD_BYTES(16, q)).even;
#endif
}
// The maximum over the window of outputs [ow, ow + n), every window inside the input.
#define BYTES_RUN_BODY(n)                                           \
  const int w0 = ow * WIN_SW - pw;                                 \
  BYTES##n best = bytes_load##n(rows[0] + w0);                     \
  for (int kd = 0; kd < WIN_KD; ++kd) {                            \
    _Pragma("unroll") for (int kh = 0; kh < WIN_KH; ++kh) {        \
      const __global T* xr = rows[kd * WIN_KH + kh] + w0;          \
      _Pragma("unroll") for (int kw = 0; kw < WIN_KW; ++kw) {      \
        const BYTES##n v = bytes_load##n(xr + kw * WIN_DW);        \
        best = BYTE_MAX(v, best);                                  \
      }                                                            \
    }                                                              \
  }                                                                \
  return best;
__attribute__((always_inline)) static inline BYTES16 pool_max_bytes16(const __global T* const* rows, int pw,
                                                                      int ow) {
  BYTES_RUN_BODY(16)
}
__attribute__((always_inline)) static inline BYTES8 pool_max_bytes8(const __global T* const* rows, int pw, int ow) {
  BYTES_RUN_BODY(8)
}
#define RUN8_LOAD (8 * WIN_SW)
#define RUN8_STORE(y, ow, v) VSTORE_BYTES(8, (v), 0, (y) + (ow))
#define RUN8_VALUE(rows, pw, ow) pool_max_bytes8(rows, pw, ow)
#else
#define RUN8_LOAD ROW_LOAD
#define RUN8_STORE(y, ow, v) STN(YS, 8, (y) + (ow), 0, (v))
#define RUN8_VALUE(rows, pw, ow) pool_max_run8(rows, pw, ow)
#endif

// Output ow of a row whose window rows lie inside the input but whose columns may not (the
// outputs before a row's first vector run): only the columns are checked, in the per-output
// path's tap order with its first-valid-tap rule, so that both give the same value. Inlined: as a
// call, pool_max_one took ~40 % of resnet18's MaxPool for one output per row (AMD EPYC Zen 5).
__attribute__((always_inline)) static inline C pool_max_cols(const __global T* const* rows, int W, int pw,
                                                      int ow) {
  const int w0 = ow * WIN_SW - pw;
  C best = T_LOWEST;
  bool any = false;
  for (int kd = 0; kd < WIN_KD; ++kd) {
#pragma unroll
    for (int kh = 0; kh < WIN_KH; ++kh) {
      const __global T* xr = rows[kd * WIN_KH + kh];
#pragma unroll
      for (int kw = 0; kw < WIN_KW; ++kw) {
        const int iw = w0 + kw * WIN_DW;
        if (iw < 0 || iw >= W) continue;
        const C v = LD(S, xr, iw);
        best = v > best || !any ? v : best;
        any = true;
      }
    }
  }
  return best;
}

// Output ow of a row whose window lies inside the input (rows and columns): the taps without
// bounds checks (the per-output path's clamps and flags made the one or two outputs at a row's
// end cost as much as the row's vector runs).
__attribute__((always_inline)) static inline C pool_max_inside(const __global T* const* rows, int pw, int ow) {
  const int w0 = ow * WIN_SW - pw;
  C best = LD(S, rows[0], w0);
  for (int kd = 0; kd < WIN_KD; ++kd) {
#pragma unroll
    for (int kh = 0; kh < WIN_KH; ++kh) {
      const __global T* xr = rows[kd * WIN_KH + kh] + w0;
#pragma unroll
      for (int kw = 0; kw < WIN_KW; ++kw) {
        const C v = LD(S, xr, kw * WIN_DW);
        best = v > best ? v : best;
      }
    }
  }
  return best;
}
#endif

__kernel void pool_max_rows(__global const T* restrict X, __global YT* restrict Y,
                            __global const int* restrict p) {
  const int D = p[0], H = p[1], W = p[2], OD = p[3], OH = p[4], OW = p[5];
  const int odh = get_global_id(0), nc = get_global_id(1);
  if (odh >= OD * OH) return;
  const int od = odh / OH, oh = odh % OH;
  const int d0 = od * WIN_SD - p[15], h0 = oh * WIN_SH - p[16], pw = p[17];
  const __global T* x = X + (long)nc * D * H * W;
  __global YT* y = Y + ((long)nc * OD * OH + odh) * OW;
  int ow = 0;
#ifdef ROWS_VEC_ON
  // Rows the vector path can take: the window's depth inside the input, and its rows inside or,
  // undilated, at least one of them inside (POOL_ROW).
#if WIN_DH == 1
  const bool rows_inside = d0 >= 0 && d0 + (WIN_KD - 1) * WIN_DD < D && h0 + WIN_KH - 1 >= 0 && h0 < H;
#else
  const bool rows_inside = d0 >= 0 && d0 + (WIN_KD - 1) * WIN_DD < D && h0 >= 0 &&
                           h0 + (WIN_KH - 1) * WIN_DH < H;
#endif
  if (rows_inside) {
    const __global T* rows[WIN_KD * WIN_KH];
    for (int kd = 0; kd < WIN_KD; ++kd)
#pragma unroll
      for (int kh = 0; kh < WIN_KH; ++kh)
        rows[kd * WIN_KH + kh] = x + ((long)(d0 + kd * WIN_DD) * H + POOL_ROW(h0 + kh * WIN_DH)) * W;
    // Outputs before the first window that starts inside the row, one by one.
    const int first = min(OW, (pw + WIN_SW - 1) / WIN_SW);
    for (; ow < first; ++ow) ST(YS, y, ow, pool_max_cols(rows, W, pw, ow));
    // Vectors while the last tap's load stays inside the row: ow * SW <= lim.
#ifdef POOL_BYTES
    const int lim16 = W - 16 * WIN_SW - (WIN_KW - 1) * WIN_DW + pw;
    for (; ow + 16 <= OW && ow * WIN_SW <= lim16; ow += 16)
      VSTORE_BYTES(16, pool_max_bytes16(rows, pw, ow), 0, y + ow);
#endif
    const int lim = W - RUN8_LOAD - (WIN_KW - 1) * WIN_DW + pw;
    for (; ow + 8 <= OW && ow * WIN_SW <= lim; ow += 8) RUN8_STORE(y, ow, RUN8_VALUE(rows, pw, ow));
    // One more run moved left to end where the loads must stop (it overlaps the previous one and
    // writes the same values again), so that few outputs are left to the per-output path.
    const int last = lim >= 0 ? min(OW - 8, lim / WIN_SW) : -1;
    if (ow < OW && last >= first && last > ow - 8) {
      RUN8_STORE(y, last, RUN8_VALUE(rows, pw, last));
      ow = last + 8;
    }
    // The rest while their windows end inside the row.
    for (; ow < OW && ow * WIN_SW - pw + (WIN_KW - 1) * WIN_DW < W; ++ow)
      ST(YS, y, ow, pool_max_inside(rows, pw, ow));
  }
#endif
  for (; ow < OW; ++ow) ST(YS, y, ow, pool_max_one(x, D, H, W, d0, h0, pw, ow));
}
#endif

#if defined(POOL_SEP) && defined(POOL_MAX) && defined(WIN_CONST)
// 2-D MaxPool with stride 1 and no dilation (SPP / SPPF blocks: 5x5 windows with 2 of padding on
// 20x20 planes) on float or half storage, a work-item per plane: each input row is copied into a
// private row with -inf padding, its maximum over KW columns taken for every output column as
// 8-float vectors into a ring of KH rows (SEP_W floats each, a multiple of 8 >= OW), then each
// output row is the maximum of the ring rows its window covers. 2 * (KH + KW) vector comparisons
// per 8 outputs instead of KH * KW per output. Windows hold at least one input element (the host
// checks), so the -inf padding never wins over an input value (or -inf ties with it). Each pass
// takes a value only where it is greater (as the other MaxPool kernels' fold): a NaN after the
// first tap of a pass changes nothing (x86's vmaxps, which OpenCL's max() became here, returned
// whatever came after a NaN: [3, NaN, 1, 2] gave 2).
__kernel void pool_max_sep(__global const T* restrict X, __global YT* restrict Y, int H, int W, int OH, int OW,
                           int ph, int pw, int planes) {
  const int nc = get_global_id(0);
  if (nc >= planes) return;
  const __global T* x = X + (long)nc * H * W;
  __global YT* y = Y + (long)nc * OH * OW;
  float ring[WIN_KH][SEP_W];
  float row[SEP_W + WIN_KW + 8];
  const int vecs = (OW + 7) / 8;
  for (int i = 0; i < SEP_W + WIN_KW + 8; ++i) row[i] = -INFINITY;
  int next = 0;  // the next input row to reduce along its columns
  for (int oh = 0; oh < OH; ++oh) {
    const int lo = max(0, oh - ph), hi = min(H, oh - ph + WIN_KH);
    for (; next < hi; ++next) {
      const __global T* xr = x + (long)next * W;
      for (int iw = 0; iw < W; ++iw) row[pw + iw] = LD(S, xr, iw);
      float* r = ring[next % WIN_KH];
      for (int v = 0; v < vecs; ++v) {
        float8 best = vload8(0, row + v * 8);
#pragma unroll
        for (int kw = 1; kw < WIN_KW; ++kw) {
          const float8 t = vload8(0, row + v * 8 + kw);
          best = select(best, t, t > best);
        }
        vstore8(best, 0, r + v * 8);
      }
    }
    __global YT* yr = y + (long)oh * OW;
    for (int v = 0; v < vecs; ++v) {
      float8 best = vload8(0, ring[lo % WIN_KH] + v * 8);
      for (int ih = lo + 1; ih < hi; ++ih) {
        const float8 t = vload8(0, ring[ih % WIN_KH] + v * 8);
        best = select(best, t, t > best);
      }
      if (v * 8 + 8 <= OW) {
        STN(YS, 8, yr + v * 8, 0, best);
      } else {
        float t[8];
        vstore8(best, 0, t);
        for (int k = 0; v * 8 + k < OW; ++k) ST(YS, yr, v * 8 + k, t[k]);
      }
    }
  }
}
#endif
