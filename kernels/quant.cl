// 8-bit integer kernels: convolution and matrix product with int32 accumulation (QLinearConv,
// ConvInteger, QLinearMatMul, MatMulInteger and the DequantizeLinear -> Conv/Gemm/MatMul ->
// QuantizeLinear chains the fuse_qdq pass turns into them), their weight packing, and the min/max
// reduction of DynamicQuantizeLinear. QuantizeLinear and DequantizeLinear themselves are
// elementwise ops (kernels/elementwise.cl, OP_QUANTIZE / OP_DEQUANTIZE).
//
// Arithmetic: every product is (x - x_zero_point) * (w - w_zero_point), summed exactly into int32
// (see "accumulation" below); weights are packed as floats with their zero point already
// subtracted (so int8 and uint8 weights share one kernel). A quantized output is requantized as ONNX Runtime does:
//   y = saturate(round_half_even((acc + bias) * (x_scale * w_scale[c] / y_scale)) + y_zero_point)
// with a fused activation applied before rounding (in the scaled domain when the activation is
// positively homogeneous, i.e. Relu/LeakyRelu/Clip with bounds pre-divided by y_scale; else on
// the real value).
//
// Build options:
//   -DXT=char|uchar -DYT=char|uchar|int   input and output element types
//   -DOUT_I32                            output the raw int32 sums (ConvInteger, MatMulInteger)
//   -DQMIN=.. -DQMAX=..                  the quantized output's range
//   -DPACK_WEIGHTS -DWT=char|uchar       the weight packing kernels (-DWZ_PER_CHANNEL: one zero
//                                        point per output channel / column)
//   -DW_PER_CHANNEL                      w_scale holds one scale per output channel / column
//   -DHAS_BIAS                           add an int32 bias per output channel / column
//   -DEPILOGUE_ACT=.. (activation.cl)    fused activation; -DACT_SCALED: apply it to the scaled
//                                        value, else to the real value (multiplied by y_scale)
//   -DCHUNK=n                            reduction steps between flushes of the float sums (below)
//   conv: -DOCB=4|8|16 -DOWB=n and the window (-DKD.. -DSD.. -DDD..); -DPOINTWISE -DPXB=8|16 for
//         1x1 convs; -DDEPTHWISE -DOWB=n for one channel per group; -DQTILED with tiled.cl's
//         -DTS -DRM -DRN -DTK and -DFLUSH_TILES for the GPU-shaped one
//   VNNI conv (x86 AVX-512 VNNI, see below): -DQVNNI -DOWB=n -DOCV=1|2|4, the window, -DX_SIGNED
//         for int8 inputs (-DPACK_INPUT_ONLY: only its input packing, which reads XT and X_SIGNED);
//         1x1 with -DPWB= -DPXV= (-DPW_DIRECT -DPW_GROUPS=n: no packing launch),
//         along output rows with -DPW_ROWS -DPWB= -DPXV= -DRB= (qconv_vnni_rows)
//   VNNI depthwise conv: -DQDWVNNI, the window, -DIN_W= -DOUT_W= -DPAD_W=, -DX_SIGNED for int8 inputs
//   VNNI matmul: -DQMVNNI -DNBV=1|2|4 -DMB=n, -DX_SIGNED for int8 inputs
//   matmul: -DNB=4|8|16 -DMB=n; -DQMTILED with tiled.cl's options and -DFLUSH_TILES for the
//         GPU-shaped one
#include "epilogue.cl"
#include "storage.cl"

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

#ifndef QMIN
#define QMIN 0
#define QMAX 255
#endif

// Round half to even of a float whose magnitude is at most 2^22 (a requantized value after its
// clamp): adding 1.5 * 2^23 leaves no fraction bits, so the addition rounds as rint does, and the
// subtraction is exact. PoCL's vector rint cost a quarter of an int8 depthwise conv (75 of 303 us).
#define RINT_SMALL(v) (((v) + 12582912.0f) - 12582912.0f)
// The same rounding straight to an int, plus `z` (an int or int vector): the sum's bits are
// 0x4B400000 + round(v) (its exponent stays 2^23), so one float add and one integer add replace
// the subtraction and the float -> int conversion (a shorter dependency chain in every vector
// requantization; the same values).
#define RINT_SMALL_INT(v, z, N) (CAT(as_int, N)((v) + 12582912.0f) + ((z) - 0x4B400000))

// Requantizes one accumulator: `m` is x_scale * w_scale / y_scale, `ys` y_scale, `yz` the output
// zero point. The clamp before rounding keeps the float -> int conversion defined.
static inline int requantize(int acc, float m, float ys, int yz) {
  float v = (float)acc * m;
#if defined(EPILOGUE_ACT) && defined(ACT_SCALED)
  v = epilogue_act(v);
#elif defined(EPILOGUE_ACT)
  v = epilogue_act(v * ys) / ys;
#endif
  v = clamp(v, (float)(QMIN - yz), (float)(QMAX - yz));
  return (int)RINT_SMALL(v) + yz;  // |v| <= 510 after the clamp
}

#if defined(OUT_I32)
#define STORE_RESULT(Y, o, acc, m, ys, yz) (Y[o] = (acc))
#else
#define STORE_RESULT(Y, o, acc, m, ys, yz) (Y[o] = (YT)requantize(acc, m, ys, yz))
#endif

// The multiplier of output channel c: x_scale * w_scale[c] / y_scale.
static inline float out_multiplier(__global const float* xs, __global const float* ws, __global const float* ys,
                            int c) {
#ifdef W_PER_CHANNEL
  const float w = ws[c];
#else
  const float w = ws[0];
#endif
  return xs[0] * w / ys[0];
}

// ---- accumulation -----------------------------------------------------------------------------
// Products of 8-bit values (zero points subtracted) are integers below 2^16 in magnitude; sums of
// them are exact in float as long as every partial sum stays below 2^24. The kernels therefore
// accumulate with float FMAs (what CPUs and GPUs do fastest) and move the float sums into int32
// accumulators every CHUNK reduction steps, where CHUNK * max|x - x_zero| * max|w - w_zero| < 2^24
// (computed on the host from the actual weights): the result is the exact int32 sum.

// The SPAN input columns from iw0 of row xr as floats minus the zero point; columns outside the
// row give 0 (padding stands for the zero point). `interior`: all of them are inside.
#define LOAD_SEGMENT(seg, xr, iw0, W, x_zero, interior)                                       \
  do {                                                                                       \
    if (interior) {                                                                          \
      _Pragma("unroll") for (int t_ = 0; t_ < SPAN; ++t_) seg[t_] = (float)xr[iw0 + t_] - x_zero; \
    } else {                                                                                 \
      _Pragma("unroll") for (int t_ = 0; t_ < SPAN; ++t_) {                                  \
        const int iw_ = iw0 + t_;                                                            \
        seg[t_] = iw_ >= 0 && iw_ < W ? (float)xr[iw_] - x_zero : 0.0f;                      \
      }                                                                                      \
    }                                                                                        \
  } while (0)

// ---- weight packing -------------------------------------------------------------------------
// W [G*M_g][K] (K = C_g * taps) of type WT -> [G][blocks][K][OCB] floats, minus the zero point of
// its output channel (per channel when -DWZ_PER_CHANNEL), zero past M_g. Global: (G*blocks*OCB, K).
#ifdef PACK_WEIGHTS
#ifdef OCB
__kernel void qconv_pack_weights(__global const WT* w, __global const WT* wz, __global float* wp, int M_g, int K,
                                 int blocks) {
  const int r = get_global_id(0), k = get_global_id(1);
  const int lane = r % OCB, gb = r / OCB;
  const int g = gb / blocks, oc = (gb % blocks) * OCB + lane;
  float v = 0;
  if (oc < M_g) {
    const int m = g * M_g + oc;
#ifdef WZ_PER_CHANNEL
    v = (float)((int)w[(long)m * K + k] - (int)wz[m]);
#else
    v = (float)((int)w[(long)m * K + k] - (int)wz[0]);
#endif
  }
  wp[((long)gb * K + k) * OCB + lane] = v;
}
#endif

// B [count][K][N] of type WT -> [count][K][NP] floats (NP = N rounded up to NB), minus the zero
// point of its column, zero past N. Global: (NP, K, count).
__kernel void qmatmul_pack_b(__global const WT* b, __global const WT* bz, __global float* bp, int K, int N, int NP) {
  const int n = get_global_id(0), k = get_global_id(1), j = get_global_id(2);
  float v = 0;
  if (n < N) {
#ifdef WZ_PER_CHANNEL
    v = (float)((int)b[((long)j * K + k) * N + n] - (int)bz[n]);
#else
    v = (float)((int)b[((long)j * K + k) * N + n] - (int)bz[0]);
#endif
  }
  bp[((long)j * K + k) * NP + n] = v;
}
#endif

// The epilogue of one output value: int32 sum plus the channel's bias, requantized with the
// channel's multiplier (or raw, or real). Kernels read BIAS and MULT once per channel.
#define FINISH(Y, o, acc, b, m) STORE_RESULT(Y, o, (acc) + (b), m, y_scale, y_zero)
// Requantizes and stores N consecutive outputs from an intN of sums at once (quantized outputs with
// no activation or a vector-exact one applied in the scaled domain; -DVEC_FINISH says so).
#if defined(VEC_FINISH)
// The clamp to the output range as two compare-and-selects (x86: one vmaxps and one vminps; the
// clamp() builtin added a NaN fix-up to each, and no sum here is NaN). A scaled Relu or Clip
// (-DACT_LO/-DACT_HI, its bounds) is a clamp itself: one clamp to both ranges' intersection.
// FINISH_VEC stores to global memory (VSTORE_BYTES: one vector store on x86), FINISH_VEC_PRIVATE
// to a private array.
#define FINISH_VEC_WITH(STORE, N, Y, o, accv, b, m)                                                \
  do {                                                                                             \
    CAT(float, N) v_ = CAT(convert_float, N)((accv) + (b)) * (m);                                  \
    VEC_ACT(v_);                                                                                   \
    v_ = select(v_, (CAT(float, N))(VEC_LO), v_ < VEC_LO);                                         \
    v_ = select(v_, (CAT(float, N))(VEC_HI), v_ > VEC_HI);                                         \
    STORE(N, CAT(CAT(convert_, YT), N)(RINT_SMALL_INT(v_, y_zero, N)), 0, (Y) + (o)); \
  } while (0)
#define VSTORE_PRIVATE(N, v, i, p) CAT(vstore, N)(v, i, p)
#define FINISH_VEC(N, Y, o, accv, b, m) FINISH_VEC_WITH(VSTORE_BYTES, N, Y, o, accv, b, m)
#define FINISH_VEC_PRIVATE(N, Y, o, accv, b, m) FINISH_VEC_WITH(VSTORE_PRIVATE, N, Y, o, accv, b, m)
#if defined(EPILOGUE_ACT) && defined(ACT_LO)
#define VEC_ACT(v)
// Both bounds inside the output range: the result is too, whatever the activation's bounds
// (the same as the activation's clamp followed by the output range's where lo <= hi).
#define VEC_LO clamp(ACT_LO, (float)(QMIN - y_zero), (float)(QMAX - y_zero))
#define VEC_HI clamp(ACT_HI, (float)(QMIN - y_zero), (float)(QMAX - y_zero))
#else
#ifdef EPILOGUE_ACT
#define VEC_ACT(v) (v) = EPILOGUE_ACT(v, ACT_ALPHA, ACT_BETA)
#else
#define VEC_ACT(v)
#endif
#define VEC_LO ((float)(QMIN - y_zero))
#define VEC_HI ((float)(QMAX - y_zero))
#endif
#endif

#ifdef HAS_BIAS
#define BIAS(m) bias[m]
#else
#define BIAS(m) 0
#endif
#if defined(OUT_I32)
#define MULT(m) 0.0f
#define OUT_PARAMS const float y_scale = 0; const int y_zero = 0;
#else
#define MULT(m) out_multiplier(xs, ws, ys, m)
#define OUT_PARAMS const float y_scale = ys[0]; const int y_zero = (int)yzp[0];
#endif

// ---- convolution ----------------------------------------------------------------------------
#if defined(OCB) && !defined(PACK_WEIGHTS)
#define fvec CAT(float, OCB)
#define ivec CAT(int, OCB)
#define fvec_load CAT(vload, OCB)
#define ivec_convert CAT(convert_int, OCB)
#define ivec_store CAT(vstore, OCB)

#ifndef POINTWISE
#define SPAN ((OWB - 1) * SW + (KW - 1) * DW + 1)
// Global: (oc_blocks, ceil(OW/OWB), N*G*OD*OH), one work-item per OCB channels x OWB pixels of one
// output row; X is [N][G*C_g][D][H][W], Y [N][G*M_g][OD][OH][OW]. Padding contributes nothing to
// the sums (it stands for the zero point). CHUNK counts input channels between flushes.
__kernel void qconv(__global const XT* restrict X, __global const float* restrict Wp,
                    __global const int* restrict bias, __global const float* xs, __global const XT* xz,
                    __global const float* ws, __global const float* ys, __global const YT* yzp,
                    __global YT* restrict Y, int C_g, int D, int H, int W, int M_g, int OD, int OH, int OW, int G,
                    int oc_blocks, int pad_d, int pad_h, int pad_w) {
  const int ob = get_global_id(0);
  const int ow0 = get_global_id(1) * OWB;
  if (ob >= oc_blocks || ow0 >= OW) return;
  const int ohw = OD * OH;
  const int odh = get_global_id(2) % ohw;
  const int od = odh / OH, oh = odh % OH;
  const int ng = get_global_id(2) / ohw;
  const int g = ng % G, n = ng / G;
  const int oc0 = ob * OCB;
  const float x_zero = (float)xz[0];

  const long plane = (long)D * H * W;
  X += ((long)n * G + g) * C_g * plane;
  Wp += ((long)g * oc_blocks + ob) * C_g * (KD * KH * KW * OCB);

  ivec total[OWB];
  fvec acc[OWB];
#pragma unroll
  for (int j = 0; j < OWB; ++j) total[j] = (ivec)0, acc[j] = (fvec)0.0f;

  const int id0 = od * SD - pad_d, ih0 = oh * SH - pad_h, iw0 = ow0 * SW - pad_w;
  const bool interior = iw0 >= 0 && iw0 + SPAN <= W;
  for (int c0 = 0; c0 < C_g; c0 += CHUNK) {
    const int c1 = min(C_g, c0 + CHUNK);
    for (int c = c0; c < c1; ++c) {
      for (int kd = 0; kd < KD; ++kd) {
        const int id = id0 + kd * DD;
        if (id < 0 || id >= D) continue;
        for (int kh = 0; kh < KH; ++kh) {
          const int ih = ih0 + kh * DH;
          if (ih < 0 || ih >= H) continue;
          const __global XT* xr = X + ((long)c * D + id) * H * W + (long)ih * W;
          const __global float* wr = Wp + ((c * KD + kd) * KH + kh) * (KW * OCB);
          float seg[SPAN];
          LOAD_SEGMENT(seg, xr, iw0, W, x_zero, interior);
#pragma unroll
          for (int kw = 0; kw < KW; ++kw) {
            const fvec w = fvec_load(kw, wr);
#pragma unroll
            for (int j = 0; j < OWB; ++j) acc[j] = fma((fvec)(seg[j * SW + kw * DW]), w, acc[j]);
          }
        }
      }
    }
#pragma unroll
    for (int j = 0; j < OWB; ++j) total[j] += ivec_convert(acc[j]), acc[j] = (fvec)0.0f;
  }

  OUT_PARAMS
  const long oplane = (long)OD * OH * OW;
  const long y0 = (((long)n * G + g) * M_g + oc0) * oplane + (long)odh * OW + ow0;
  const int pixels = min(OWB, OW - ow0), channels = min(OCB, M_g - oc0);
  int r[OWB][OCB];
#pragma unroll
  for (int j = 0; j < OWB; ++j) ivec_store(total[j], 0, r[j]);
  for (int c = 0; c < channels; ++c) {
    const int m = g * M_g + oc0 + c;
    const int b = BIAS(m);
    const float mult = MULT(m);
#if defined(VEC_FINISH) && OWB == 8
    if (pixels == 8) {
      int t[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) t[j] = r[j][c];
      FINISH_VEC(8, Y, y0 + c * oplane, vload8(0, t), b, mult);
      continue;
    }
#endif
#pragma unroll
    for (int j = 0; j < OWB; ++j)
      if (j < pixels) FINISH(Y, y0 + c * oplane + j, r[j][c], b, mult);
  }
}
#else  // POINTWISE
#define pvec CAT(float, PXB)
#define pivec CAT(int, PXB)
#define pconvert CAT(convert_float, PXB)
#define piconvert CAT(convert_int, PXB)
#define pload CAT(vload, PXB)
#define pistore CAT(vstore, PXB)
// 1x1 convs (stride 1, no padding): P = pixels per image; one work-item per OCB channels x PXB
// consecutive pixels, vectors along the pixels. Global: (oc_blocks, ceil(P/PXB), N*G).
__kernel void qconv_pointwise(__global const XT* restrict X, __global const float* restrict Wp,
                              __global const int* restrict bias, __global const float* xs, __global const XT* xz,
                              __global const float* ws, __global const float* ys, __global const YT* yzp,
                              __global YT* restrict Y, int C_g, int P, int M_g, int G, int oc_blocks) {
  const int ob = get_global_id(0);
  const int p0 = get_global_id(1) * PXB;
  if (ob >= oc_blocks || p0 >= P) return;
  const int ng = get_global_id(2);
  const int g = ng % G, n = ng / G;
  const int oc0 = ob * OCB;
  const float x_zero = (float)xz[0];
  X += ((long)n * G + g) * C_g * (long)P + p0;
  Wp += ((long)g * oc_blocks + ob) * C_g * OCB;
  const bool full = p0 + PXB <= P;

  pivec total[OCB];
  pvec acc[OCB];
#pragma unroll
  for (int k = 0; k < OCB; ++k) total[k] = (pivec)0, acc[k] = (pvec)0.0f;
  for (int c0 = 0; c0 < C_g; c0 += CHUNK) {
    const int c1 = min(C_g, c0 + CHUNK);
    for (int c = c0; c < c1; ++c) {
      const __global XT* xr = X + (long)c * P;
      pvec x;
      if (full) {
        x = pconvert(pload(0, xr)) - x_zero;
      } else {
        float t[PXB];
#pragma unroll
        for (int q = 0; q < PXB; ++q) t[q] = p0 + q < P ? (float)xr[q] - x_zero : 0.0f;
        x = pload(0, t);
      }
      const fvec w = fvec_load(c, Wp);
      float wl[OCB];
      CAT(vstore, OCB)(w, 0, wl);
#pragma unroll
      for (int k = 0; k < OCB; ++k) acc[k] = fma(x, (pvec)(wl[k]), acc[k]);
    }
#pragma unroll
    for (int k = 0; k < OCB; ++k) total[k] += piconvert(acc[k]), acc[k] = (pvec)0.0f;
  }

  OUT_PARAMS
  const int channels = min(OCB, M_g - oc0), pixels = min(PXB, P - p0);
  const long y0 = (((long)n * G + g) * M_g + oc0) * (long)P + p0;
  for (int k = 0; k < channels; ++k) {
    const int m = g * M_g + oc0 + k;
    const int b = BIAS(m);
    const float mult = MULT(m);
#ifdef VEC_FINISH
    if (full) {
      FINISH_VEC(PXB, Y, y0 + (long)k * P, total[k], b, mult);
      continue;
    }
#endif
    int r[PXB];
    pistore(total[k], 0, r);
    for (int q = 0; q < pixels; ++q) FINISH(Y, y0 + (long)k * P + q, r[q], b, mult);
  }
}
#endif  // POINTWISE
#endif  // OCB

// ---- depthwise convolution --------------------------------------------------------------------
#if defined(DEPTHWISE) && !defined(PACK_WEIGHTS)
#define SPAN ((OWB - 1) * SW + (KW - 1) * DW + 1)
#define TAPS (KD * KH * KW)
#define dvec CAT(float, OWB)
#define divec CAT(int, OWB)
// Requantizes and stores the OWB sums in `acc` (floats, exact) as outputs [ow0, ow0 + OWB) of
// the row, those before OW. A whole block is stored as a vector (and `continue`s the caller's
// block loop); a block past the row's end (rows narrower than OWB: every block of a 7x7 plane) is
// requantized as a whole vector too and stored lane by lane.
#ifdef VEC_FINISH
#define DW_STORE_VEC(yrow, ow0, OW, sums, b, mult) \
  if ((ow0) + OWB <= (OW)) {                       \
    FINISH_VEC(OWB, yrow, ow0, sums, b, mult);     \
    continue;                                      \
  }
#define DW_STORE_PART(yrow, ow0, OW, sums, b, mult)                          \
  YT r_[OWB];                                                                \
  FINISH_VEC_PRIVATE(OWB, r_, 0, sums, b, mult);                             \
  for (int j = 0; j < OWB && (ow0) + j < (OW); ++j) (yrow)[(ow0) + j] = r_[j];
#else
#define DW_STORE_VEC(yrow, ow0, OW, sums, b, mult)
#define DW_STORE_PART(yrow, ow0, OW, sums, b, mult)                                            \
  int r[OWB];                                                                                \
  CAT(vstore, OWB)(sums, 0, r);                                                              \
  for (int j = 0; j < OWB && (ow0) + j < (OW); ++j) FINISH(yrow, (ow0) + j, r[j], b, mult);
#endif
// Channel c's weights (wk: TAPS floats from W), bias sum and multiplier, as the depthwise kernels
// read them once per channel.
#define DW_CHANNEL(W, c)                                                  \
  float wk[TAPS];                                                         \
  _Pragma("unroll") for (int t = 0; t < TAPS; ++t) wk[t] = (W)[(long)(c) * TAPS + t]; \
  const int b = BIAS(c);                                                  \
  const float mult = MULT(c);
#define DW_STORE_BLOCK(yrow, ow0, OW, acc, b, mult)  \
  {                                                \
    const divec sums = CAT(convert_int, OWB)(acc); \
    DW_STORE_VEC(yrow, ow0, OW, sums, b, mult)     \
    DW_STORE_PART(yrow, ow0, OW, sums, b, mult)    \
  }
// DW_LOAD(p): the OWB inputs p[0], p[SW], ... as floats, from DW_VLOAD consecutive elements.
// With DW_FLOAT_COPY the padded copy holds x - x_zero as floats (PT): a tap is one vector load
// and one FMA, as in the float32 depthwise kernel (converting 8-bit vectors at every tap had made
// the 8-bit kernel 2-3x slower than that one).
#ifdef DW_FLOAT_COPY
#define PT float
#define DW_CVT(v) (v)
#else
#define PT XT
#define DW_CVT(v) CAT(convert_float, OWB)(v)
#endif
#if SW == 1
#define DW_VLOAD OWB
#define DW_LOAD(p) DW_CVT(CAT(vload, OWB)(0, p))
#elif SW == 2 && OWB == 4
#define DW_VLOAD 8
#define DW_LOAD(p) DW_CVT(vload8(0, p).even)
#elif SW == 2 && OWB == 8
#define DW_VLOAD 16
#define DW_LOAD(p) DW_CVT(vload16(0, p).even)
#elif SW == 2 && OWB == 16
#define DW_VLOAD 32
#define DW_LOAD(p) DW_CVT((CAT(PT, 16))(vload16(0, p).even, vload16(0, (p) + 16).even))
#endif
// One input channel per group and one output channel per group: a work-item computes one output
// row of one channel, OWB pixels per vector. Weights [C][KD*KH*KW] floats (zero point subtracted);
// TAPS products stay exact in float (checked on the host). Global: (OD*OH, N*C).
__kernel void qconv_depthwise(__global const XT* restrict X, __global const float* restrict Wp,
                              __global const int* restrict bias, __global const float* xs, __global const XT* xz,
                              __global const float* ws, __global const float* ys, __global const YT* yzp,
                              __global YT* restrict Y, int C, int D, int H, int W, int OD, int OH, int OW, int pad_d,
                              int pad_h, int pad_w) {
  const int odh = get_global_id(0);
  const int nc = get_global_id(1);
  if (odh >= OD * OH) return;
  const int od = odh / OH, oh = odh % OH, c = nc % C;
  const float x_zero = (float)xz[0];
  X += (long)nc * D * H * W;
  OUT_PARAMS
  DW_CHANNEL(Wp, c)
  __global YT* yrow = Y + (long)nc * OD * OH * OW + (long)odh * OW;
  const int id0 = od * SD - pad_d, ih0 = oh * SH - pad_h;
  for (int ow0 = 0; ow0 < OW; ow0 += OWB) {
    const int iw0 = ow0 * SW - pad_w;
    const bool interior = iw0 >= 0 && iw0 + SPAN <= W;
    dvec acc = (dvec)0.0f;
    for (int kd = 0; kd < KD; ++kd) {
      const int id = id0 + kd * DD;
      if (id < 0 || id >= D) continue;
      for (int kh = 0; kh < KH; ++kh) {
        const int ih = ih0 + kh * DH;
        if (ih < 0 || ih >= H) continue;
        const __global XT* xr = X + ((long)id * H + ih) * W;
        float seg[SPAN];
        LOAD_SEGMENT(seg, xr, iw0, W, x_zero, interior);
#pragma unroll
        for (int kw = 0; kw < KW; ++kw) {
          float lane[OWB];
#pragma unroll
          for (int j = 0; j < OWB; ++j) lane[j] = seg[j * SW + kw * DW];
          acc = fma(CAT(vload, OWB)(0, lane), (dvec)(wk[(kd * KH + kh) * KW + kw]), acc);
        }
      }
    }
    DW_STORE_BLOCK(yrow, ow0, OW, acc, b, mult);
  }
}

#ifdef DW_VLOAD
// The input with its padding made real (the zero point), for qconv_depthwise_padded: X
// [N*C][D][H][W] -> Xp [N*C][Dp][Hp][Wp], pad_* before the input; a work-item copies `rows` padded
// rows of `chans` planes, each row's inside 16 values at a time (a row per work-item had made
// PoCL's per-work-group cost most of the copy). Global: (ceil(Dp*Hp / rows), ceil(N*C / chans)).
__kernel void qdw_pad_input(__global const XT* restrict X, __global const XT* xz, __global PT* restrict Xp, int D,
                            int H, int W, int Dp, int Hp, int Wp, int pad_d, int pad_h, int pad_w, int planes,
                            int rows, int chans) {
  const int dh0 = get_global_id(0) * rows, nc0 = get_global_id(1) * chans;
  const int dh_end = min(Dp * Hp, dh0 + rows), nc_end = min(planes, nc0 + chans);
#ifdef DW_FLOAT_COPY
  // x - x_zero as floats (exact): the padding is 0.
  const PT z = 0.0f;
  const float xzf = (float)xz[0];
#define DW_COPY16(s) (convert_float16(s) - xzf)
#define DW_COPY1(s) ((float)(s) - xzf)
#else
  const PT z = xz[0];
#define DW_COPY16(s) (s)
#define DW_COPY1(s) (s)
#endif
  for (int nc = nc0; nc < nc_end; ++nc) {
    for (int dh = dh0; dh < dh_end; ++dh) {
      const int dd = dh / Hp, hh = dh % Hp;
      const int id = dd - pad_d, ih = hh - pad_h;
      __global PT* dst = Xp + (((long)nc * Dp + dd) * Hp + hh) * Wp;
      // Columns [lo, hi) of the padded row come from the input row; the rest is the zero point.
      const int lo = min(pad_w, Wp), hi = id >= 0 && id < D && ih >= 0 && ih < H ? min(Wp, pad_w + W) : lo;
      for (int x = 0; x < lo; ++x) dst[x] = z;
      const __global XT* src = X + (((long)nc * D + id) * H + ih) * W - pad_w;
      int x = lo;
      for (; x + 16 <= hi; x += 16) vstore16(DW_COPY16(vload16(0, src + x)), 0, dst + x);
      for (; x < hi; ++x) dst[x] = DW_COPY1(src[x]);
      for (x = hi; x < Wp; ++x) dst[x] = z;
    }
  }
}

// qconv_depthwise on the padded input (qdw_pad_input): every block of every row is read with one
// vector load per tap, without bounds checks (the border blocks' per-element path cost more than
// all the others together). Xp's extents cover whole OWB blocks. A work-item computes `rows`
// output rows of `chans` planes (as the float32 depthwise kernel: one row of one channel per
// work-item had made a 7x7x960 layer 5x slower than float32's). Global: (ceil(OD*OH / rows),
// ceil(N*C / chans)).
__kernel void qconv_depthwise_padded(__global const PT* restrict Xp, __global const float* restrict Wp_,
                                     __global const int* restrict bias, __global const float* xs,
                                     __global const XT* xz, __global const float* ws, __global const float* ys,
                                     __global const YT* yzp, __global YT* restrict Y, int C, int Dp, int Hp,
                                     int Wp, int OD, int OH, int OW, int planes, int rows, int chans) {
  const int odh0 = get_global_id(0) * rows, nc0 = get_global_id(1) * chans;
  const int odh_end = min(OD * OH, odh0 + rows), nc_end = min(planes, nc0 + chans);
#ifdef DW_FLOAT_COPY
  const float x_zero = 0.0f;  // subtracted in the copy
#else
  const float x_zero = (float)xz[0];
#endif
  OUT_PARAMS
  for (int nc = nc0; nc < nc_end; ++nc) {
    const int c = nc % C;
    const __global PT* xp = Xp + (long)nc * Dp * Hp * Wp;
    DW_CHANNEL(Wp_, c)
    for (int odh = odh0; odh < odh_end; ++odh) {
      const int od = odh / OH, oh = odh % OH;
      __global YT* yrow = Y + (long)nc * OD * OH * OW + (long)odh * OW;
      const int id0 = od * SD, ih0 = oh * SH;
      for (int ow0 = 0; ow0 < OW; ow0 += OWB) {
        dvec acc = (dvec)0.0f;
        for (int kd = 0; kd < KD; ++kd) {
#pragma unroll
          for (int kh = 0; kh < KH; ++kh) {
            const __global PT* xr = xp + ((long)(id0 + kd * DD) * Hp + ih0 + kh * DH) * Wp + ow0 * SW;
#pragma unroll
            for (int kw = 0; kw < KW; ++kw)
              acc = fma(DW_LOAD(xr + kw * DW) - x_zero, (dvec)(wk[(kd * KH + kh) * KW + kw]), acc);
          }
        }
        DW_STORE_BLOCK(yrow, ow0, OW, acc, b, mult);
      }
    }
  }
}
#ifdef DW_ROWS
// qconv_depthwise_rows (CPU-shaped, 2-D): no padded copy in global memory. A work-item keeps the
// input rows its output rows read as floats (x - x_zero, 0 in the padding) in a ring of RSLOTS rows
// of RPW floats in private memory: each input row is converted once per band (SH rows per output
// row), and a tap is one vector load from the ring and one FMA. The padded copy had cost as much
// as the conv itself (mobilenet_v2: 0.8 of 1.9 ms). IN_W, OUT_W, PAD_W compiled in; a work-item
// computes `rows` output rows of `chans` planes. Global: (ceil(OH / rows), ceil(N*C / chans)).
#define NBLK ((OUT_W + OWB - 1) / OWB)
#define PW (NBLK * OWB * SW + (KW - 1) * DW)
#define RING ((KH - 1) * DH + 1)
// The ring holds RSLOTS rows: an output row's RING and the next two output rows' new ones, which
// are converted before the current row's taps read the ring. Converted just before their first
// read (a row filled, then read at once), the taps' vector loads found the row's stores still in
// the store buffer across their addresses and waited for them at every tap: mobilenet_v2's 17
// 8-bit depthwise convs 2.46 -> 1.64 ms summed with two rows ahead, 1.77 with one (Intel Xeon,
// AVX-512, PoCL 3.1; 7x7 to 14x14 planes had run 7-10x the float32 kernel's time).
// Ring slot of input row ih (ih >= -pad_h): RSLOTS consecutive rows take RSLOTS distinct slots.
#define RSLOTS (RING + 2 * SH)
#define DW_SLOT(ih) (((ih) + pad_h) % RSLOTS)
// A row is converted 16 values at a time (CPY_W values, over-reading past the row where the
// buffer goes on: the next row's values land in the right padding, which is zeroed after); a
// ring row holds RPW floats so that those stores stay inside it. Converting element by element
// had cost 3x the float32 kernel's time on 14- and 7-pixel rows.
#define CPY_W ((IN_W + 15) / 16 * 16)
#define RPW (PAD_W + CPY_W > PW ? PAD_W + CPY_W : PW)
// Input row ih into ring row `dst`: columns [PAD_W, PAD_W + IN_W) from the row, zeros around.
// `overread_ok`: CPY_W values from the row's start lie inside the input buffer.
static inline void dw_ring_row(float* dst, const __global XT* restrict x, int ih, int H, float x_zero,
                               bool overread_ok) {
  if (ih < 0 || ih >= H) {
    for (int i = 0; i < PW; ++i) dst[i] = 0.0f;
    return;
  }
  const __global XT* src = x + (long)ih * IN_W;
#pragma unroll
  for (int i = 0; i < PAD_W && i < PW; ++i) dst[i] = 0.0f;
  if (overread_ok) {
#pragma unroll
    for (int i = 0; i < CPY_W; i += 16) vstore16(convert_float16(vload16(0, src + i)) - x_zero, 0, dst + PAD_W + i);
  } else {
    int i = 0;
    for (; i + 16 <= IN_W; i += 16) vstore16(convert_float16(vload16(0, src + i)) - x_zero, 0, dst + PAD_W + i);
    for (; i < IN_W; ++i) dst[PAD_W + i] = (float)src[i] - x_zero;
  }
  for (int i = PAD_W + IN_W; i < PW; ++i) dst[i] = 0.0f;
}

__kernel void qconv_depthwise_rows(__global const XT* restrict X, __global const float* restrict Wp_,
                                   __global const int* restrict bias, __global const float* xs,
                                   __global const XT* xz, __global const float* ws, __global const float* ys,
                                   __global const YT* yzp, __global YT* restrict Y, int C, int H, int OH, int pad_h,
                                   int planes, int rows, int chans) {
  const int oh0 = get_global_id(0) * rows, nc0 = get_global_id(1) * chans;
  const int oh_end = min(OH, oh0 + rows), nc_end = min(planes, nc0 + chans);
  const float x_zero = (float)xz[0];
  OUT_PARAMS
  float ring[RSLOTS * RPW];
  const long buffer_end = (long)planes * H * IN_W;  // the input's values
  for (int nc = nc0; nc < nc_end; ++nc) {
    const int c = nc % C;
    const __global XT* x = X + (long)nc * H * IN_W;
    DW_CHANNEL(Wp_, c)  // TAPS = KH * KW here (2-D)
    int next = oh0 * SH - pad_h;  // the first input row not yet in the ring
    for (int oh = oh0; oh < oh_end; ++oh) {
      const int first = oh * SH - pad_h, last = first + (KH - 1) * DH;
      const int ahead = last + SH * min(2, oh_end - 1 - oh);
      for (int ih = max(next, first); ih <= ahead; ++ih)
        dw_ring_row(ring + DW_SLOT(ih) * RPW, x, ih, H, x_zero, ((long)nc * H + ih) * IN_W + CPY_W <= buffer_end);
      next = ahead + 1;
      __global YT* yrow = Y + (long)nc * OH * OUT_W + (long)oh * OUT_W;
#pragma unroll
      for (int j = 0; j < NBLK; ++j) {
        const int ow0 = j * OWB;
        dvec acc = (dvec)0.0f;
#pragma unroll
        for (int kh = 0; kh < KH; ++kh) {
          const float* xr = ring + DW_SLOT(first + kh * DH) * RPW + ow0 * SW;
#pragma unroll
          for (int kw = 0; kw < KW; ++kw) acc = fma(DW_LOAD(xr + kw * DW), (dvec)(wk[kh * KW + kw]), acc);
        }
        DW_STORE_BLOCK(yrow, ow0, OUT_W, acc, b, mult);
      }
    }
  }
}
#endif  // DW_ROWS
#endif  // DW_VLOAD
#endif  // DEPTHWISE

// ---- GPU-shaped convolution ------------------------------------------------------------------
// The implicit GEMM of conv_tiled.cl on 8-bit data: Y[M_g][P] = W[M_g][K] x im2col(X)[K][P] per
// image and group on the local-memory tiles of tiled.cl, work-groups of (TS/RN) x (TS/RM); taps are
// x - x_zero (0 in the padding), weights [G*M_g][K] floats with their zero point subtracted. The
// float sums move into int32 every FLUSH_TILES steps of TK (FLUSH_TILES * TK <= CHUNK).
// The kernel loader includes a file once per program: tiled.cl comes in here for both tiled
// kernels, with the hooks they share.
#if (defined(QTILED) || defined(QMTILED)) && !defined(PACK_WEIGHTS)
#ifdef QTILED
#define TILED_B_COLUMN(p)                                                                   \
  const int col_z0 = (p) / (OH * OW) * SD - PD, col_y0 = (p) / OW % OH * SH - PH, col_x0 = (p) % OW * SW - PW;
#endif
#define TILED_STEP_DONE(k0)                                                                 \
  if (((k0) / TK + 1) % FLUSH_TILES == 0) {                                                 \
    for (int i = 0; i < RM; ++i)                                                            \
      for (int j = 0; j < RN; ++j) total[i][j] += (int)acc[i][j], acc[i][j] = 0.0f;         \
  }
#include "tiled.cl"
#endif

#if defined(QTILED) && !defined(PACK_WEIGHTS)
#define KVOL (KD * KH * KW)

static inline float qconv_tap(__global const XT* x, float x_zero, int k, int z0, int y0, int x0, int ID, int IH, int IW) {
  const int c = k / KVOL, r = k % KVOL;
  const int iz = z0 + (r / (KH * KW)) * DD, iy = y0 + ((r / KW) % KH) * DH, ix = x0 + (r % KW) * DW;
  if (iz < 0 || iz >= ID || iy < 0 || iy >= IH || ix < 0 || ix >= IW) return 0.0f;
  return (float)x[(((long)c * ID + iz) * IH + iy) * IW + ix] - x_zero;
}

// Global: (ceil(P/TS)*WX, ceil(M_g/TS)*WY, N*G), local (WX, WY, 1).
__kernel __attribute__((reqd_work_group_size(WX, WY, 1))) void qconv_tiled(
    __global const XT* restrict X, __global const float* restrict Wt, __global const int* restrict bias,
    __global const float* xs, __global const XT* xz, __global const float* ws, __global const float* ys,
    __global const YT* yzp, __global YT* restrict Y, int C_g, int ID, int IH, int IW, int M_g, int OD, int OH,
    int OW, int G, int PD, int PH, int PW) {
  const int n0 = get_group_id(0) * TS, m0 = get_group_id(1) * TS, b = get_group_id(2);
  const int g = b % G, P = OD * OH * OW, K = C_g * KVOL;
  const float x_zero = (float)xz[0];
  const __global XT* x = X + (long)b * C_g * ID * IH * IW;
  const __global float* w = Wt + (long)g * M_g * K;
  Y += (long)b * M_g * P;
#define LOAD_A(m, k) w[(long)(m) * K + (k)]
#define LOAD_B(k, p) qconv_tap(x, x_zero, k, col_z0, col_y0, col_x0, ID, IH, IW)
  int total[RM][RN];
  for (int i = 0; i < RM; ++i)
    for (int j = 0; j < RN; ++j) total[i][j] = 0;
  float acc[RM][RN];
  TILED_PRODUCT(acc, m0, n0, M_g, P, K)
  OUT_PARAMS
  for (int i = 0; i < RM; ++i) {
    const int m = TILED_ROW(m0, i);
    if (m >= M_g) continue;
    const int bm = BIAS(g * M_g + m);
    const float mult = MULT(g * M_g + m);
    for (int j = 0; j < RN; ++j) {
      const int p = TILED_COL(n0, j);
      if (p < P) FINISH(Y, (long)m * P + p, total[i][j] + (int)acc[i][j], bm, mult);
    }
  }
}
#endif  // QTILED

// ---- x86 AVX-512 VNNI convolution (-DQVNNI) ---------------------------------------------------
// Only built where DeviceCaps::x86_vnni512 holds (PoCL's CPU driver on a host whose CPU has
// AVX512_VNNI): vpdpbusd adds to each int lane the dot product of 4 unsigned bytes with 4 signed
// bytes, 64 exact 8-bit products per instruction where a float FMA does 16. OpenCL C has no such
// builtin and PoCL's work-group functions lack the CPU feature the clang builtin asks for, so
// the instruction comes as inline assembly (AT&T operand order: dst += src1(u8) . src2(s8)).
//
// Arithmetic, exact like the float kernels: inputs become unsigned bytes u = x - XMIN (signed
// inputs + 128) with the zero point z shifted alike, weights signed bytes w' = w - w_zero (the
// host checks that every one fits), and
//   sum (x - x_zero) * w'  =  sum u * w'  -  z * sum w'
// where every position outside the input (padding) and every channel past C_g holds z, so that
// their products cancel exactly; the host keeps sum |u * w'| below 2^30.
// U8: an input value as the unsigned byte u; X_FLIP: the same for 4 bytes of a dword at once
// (the top bit of each flipped). Shared with qmatmul_vnni below.
#if (defined(QVNNI) || defined(QMVNNI) || defined(QDWVNNI)) && !defined(PACK_WEIGHTS)
#ifdef X_SIGNED
#define U8(v) ((uint)((int)(v) + 128))
#define X_FLIP 0x80808080u
#else
#define U8(v) ((uint)(v))
#define X_FLIP 0u
#endif
#define DPBUSD(acc, x, w) __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(w))
#endif
// MADD(x, w): vpmaddwd of two short16 (8 lanes of two 16-bit values each): per lane
// x.lo * w.lo + x.hi * w.hi, exact in 32 bits. For qconv_madd_pw and the QPAIRS conv.
#if (defined(QPAIRS) || defined(QMADD)) && !defined(PACK_WEIGHTS)
#ifdef X86_MADD
// x86 with AVX2 (-DX86_MADD, PoCL on this host): the instruction itself. Written as C, LLVM 15
// matched each half of the pair separately (two vpmaddwd with blends, 2.5x slower).
static inline int8 madd_x86(short16 x, short16 w) {
  int8 r;
  __asm__("vpmaddwd %2, %1, %0" : "=v"(r) : "v"(x), "v"(w));
  return r;
}
#define MADD(x, w) madd_x86(x, w)
#else
#define MADD(x, w) \
  (convert_int8((x).even) * convert_int8((w).even) + convert_int8((x).odd) * convert_int8((w).odd))
#endif
#endif
#if defined(QVNNI) && !defined(PACK_WEIGHTS)
// -DQPAIRS: the same kernels with 2 input channels per 32-bit lane as 16-bit halves (u and the
// weight w', |w'| <= 255, any 8-bit weights) and vpmaddwd for CPUs without VNNI (x86 AVX2), whose
// vectors are 8 lanes (VL); else 4 channels per lane as bytes, 16 lanes. Exact alike: the host
// keeps sum |u * w'| below 2^31.
// The kernels' names say which: qmadd_pack_input and qconv_madd with QPAIRS (each kernel's name
// written out, for the program bundler's scan of the source).
#ifdef QPAIRS
#define GRP 2
#define VL 8
#define DOT(acc, x, w) ((acc) += MADD(as_short16(x), as_short16(w)))
#else
#define GRP 4
#define VL 16
#define DOT(acc, x, w) DPBUSD(acc, x, w)
#endif
#define lvec CAT(int, VL)
#define lfvec CAT(float, VL)

// X [N][G*C_g][D][H][W] -> Xp [N*G][CG][Dp][Hp][Wp] uints, part q of a uint (a byte, or a 16-bit
// half with QPAIRS) from channel GRP*cg+q; padded coordinates (the padding before the input is
// pad_*, the extents Dp/Hp/Wp cover every read of qconv_vnni). A work-item packs 16 consecutive
// columns, as vectors where all of them and all GRP channels are inside the input (one column per
// work-item cost 2.5 ns per column). Global: (ceil(Wp/16), Dp*Hp, N*G*CG).
// GRP channels a plane apart, 16 consecutive values of each, as 16 lanes of GRP parts (U8 of
// each value): the vector step of pack_input and of qconv_vnni_pw_x's gather.
static inline uint16 group_lanes16(const __global XT* restrict src, long plane) {
  uint16 v = (uint16)0;
#pragma unroll
  for (int q = 0; q < GRP; ++q) {
#ifdef X_SIGNED
    const uint16 u = convert_uint16(convert_int16(vload16(0, src + q * plane)) + 128);
#else
    const uint16 u = convert_uint16(vload16(0, src + q * plane));
#endif
    v |= u << (uint)(32 / GRP * q);
  }
  return v;
}
// One lane: value i of the first `here` channels, z for the others and where it is not `inside`.
static inline uint group_lane(const __global XT* restrict src, long plane, long i, bool inside, int here,
                              uint z) {
  uint v = 0;
#pragma unroll
  for (int q = 0; q < GRP; ++q) v |= (inside && q < here ? U8(src[q * plane + i]) : z) << (32 / GRP * q);
  return v;
}
#define PACK_INPUT_PARAMS                                                                                \
  __global const XT *restrict X, __global const XT *xz, __global uint *restrict Xp, int C_g, int D, int H, int W, \
      int CG, int Dp, int Hp, int Wp, int pad_d, int pad_h, int pad_w
#if !defined(QPAIRS) && defined(__x86_64__)
// Columns iw0 .. iw0 + 15 of one input row (src: its first column, channel GRP*cg; `row`: the row
// lies inside the input, `here`: channels of the group inside) as 16 lanes of 4 channels, z
// outside the input. AVX-512 (the VNNI kernels' devices): blocks at a row's ends, padding rows and
// groups short of 4 channels as vectors too, the inside columns [lo, hi) through masked byte loads
// (lanes outside are neither read nor faulted on) and z elsewhere. One lane at a time, these
// blocks took most of the packing time (2 of a 56-column row's 4 blocks with padding 1).
__attribute__((always_inline)) static inline uint16 group_block16(const __global XT* restrict src, long plane,
                                                                  int iw0, int W, bool row, int here, uint z) {
  if (row && here == GRP && iw0 >= 0 && iw0 + 16 <= W) return group_lanes16(src + iw0, plane);
  const int lo = clamp(-iw0, 0, 16), hi = row ? clamp(W - iw0, 0, 16) : 0;
  const uint zz = z * 0x01010101u;
  if (hi <= lo) return (uint16)zz;
  const uint mask = (uint)(((1ul << hi) - 1ul) & ~((1ul << lo) - 1ul));
  uint16 v = (uint16)0;
#pragma unroll
  for (int q = 0; q < GRP; ++q) {
    uint16 u = (uint16)z;
    if (q < here) {
      uchar16 b;
      __asm__("kmovw %1, %%k1\n\tvmovdqu8 (%2), %0%{%%k1%}%{z%}" : "=v"(b) : "r"(mask), "r"(src + q * plane + iw0) : "k1");
#ifdef X_SIGNED
      u = convert_uint16(convert_int16(as_char16(b)) + 128);
#else
      u = convert_uint16(b);
#endif
    }
    v |= u << (uint)(8 * q);
  }
  const int16 lane = (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  return select((uint16)zz, v, convert_uint16(lane >= lo && lane < hi));
}
#endif
// Columns x0 .. x0 + 15 of padded row dh of group ngc.
__attribute__((always_inline)) static inline void pack_block(PACK_INPUT_PARAMS, int x0, int dh, int ngc) {
  const int cg = ngc % CG, ng = ngc / CG;
  const int dd = dh / Hp, hh = dh % Hp;
  const int id = dd - pad_d, ih = hh - pad_h, iw0 = x0 - pad_w;
  const uint z = U8(xz[0]);
  const long plane = (long)D * H * W;
  const int here = min(GRP, C_g - cg * GRP);
  __global uint* dst = Xp + (((long)ngc * Dp + dd) * Hp + hh) * Wp + x0;
  const bool row = id >= 0 && id < D && ih >= 0 && ih < H;
  const __global XT* src = X + ((long)ng * C_g + cg * GRP) * plane + ((long)id * H + ih) * W;
#if !defined(QPAIRS) && defined(__x86_64__)
  if (x0 + 16 <= Wp) {
    vstore16(group_block16(src, plane, iw0, W, row, here, z), 0, dst);
    return;
  }
#else
  if (row && here == GRP && iw0 >= 0 && iw0 + 16 <= W && x0 + 16 <= Wp) {
    vstore16(group_lanes16(src + iw0, plane), 0, dst);
    return;
  }
#endif
  for (int t = 0; t < 16 && x0 + t < Wp; ++t) {
    const int iw = iw0 + t;
    dst[t] = group_lane(src, plane, iw, row && iw >= 0 && iw < W, here, z);
  }
}
#define PACK_INPUT_ARGS X, xz, Xp, C_g, D, H, W, CG, Dp, Hp, Wp, pad_d, pad_h, pad_w
// A work-item packs blocks of 16 columns from get_global_id(0) on, get_global_size(0) apart: the
// VNNI convs launch one work-item per row (a work-item per block cost int8 resnet18's packings
// more than the copying).
__attribute__((always_inline)) static inline void pack_input(PACK_INPUT_PARAMS) {
  const int dh = get_global_id(1), ngc = get_global_id(2);
  if (dh >= Dp * Hp) return;
  for (int x0 = get_global_id(0) * 16; x0 < Wp; x0 += get_global_size(0) * 16)
    pack_block(PACK_INPUT_ARGS, x0, dh, ngc);
}
#ifdef QPAIRS
__kernel void qmadd_pack_input(PACK_INPUT_PARAMS) { pack_input(PACK_INPUT_ARGS); }
#else
__kernel void qvnni_pack_input(PACK_INPUT_PARAMS) { pack_input(PACK_INPUT_ARGS); }
#endif
// -DPACK_INPUT_ONLY: the packing kernel alone (its options name only the input's type and grouping,
// so one program packs for every conv).
#ifndef PACK_INPUT_ONLY


// A work-item computes OCV x VL output channels x OWB pixels of one output row. Wq
// [G][oc_blocks][CG][KD][KH][KW][OCV] vectors of VL lanes (lane l of vector v: output channel
// VL*(OCV*block + v) + l, its GRP parts the weights of channels GRP*cg..GRP*cg+GRP-1); wsum[m] =
// sum of output channel m's w'. Global: (oc_blocks, ceil(OW/OWB), N*G*OD*OH).
#define GROUPED_CONV_PARAMS                                                                                     \
  __global const uint *restrict Xp, __global const lvec *restrict Wq, __global const int *restrict wsum,             \
      __global const int *restrict bias, __global const float *xs, __global const XT *xz, __global const float *ws, \
      __global const float *ys, __global const YT *yzp, __global YT *restrict Y, int CG, int Dp, int Hp, int Wp,     \
      int M_g, int OD, int OH, int OW, int G, int oc_blocks
__attribute__((always_inline)) static inline void grouped_conv(GROUPED_CONV_PARAMS) {
  const int ob = get_global_id(0);
  const int ow0 = get_global_id(1) * OWB;
  if (ob >= oc_blocks || ow0 >= OW) return;
  const int ohw = OD * OH;
  const int odh = get_global_id(2) % ohw;
  const int od = odh / OH, oh = odh % OH;
  const int ng = get_global_id(2) / ohw;
  const int g = ng % G, n = ng / G;
  Xp += (long)ng * CG * Dp * Hp * Wp;
  Wq += ((long)g * oc_blocks + ob) * CG * (KD * KH * KW * OCV);

  lvec acc[OCV * OWB];
#pragma unroll
  for (int i = 0; i < OCV * OWB; ++i) acc[i] = (lvec)0;
  const int id0 = od * SD, ih0 = oh * SH, iw0 = ow0 * SW;
  for (int c = 0; c < CG; ++c) {
    for (int kd = 0; kd < KD; ++kd) {
      for (int kh = 0; kh < KH; ++kh) {
        const __global uint* xr = Xp + (((long)c * Dp + id0 + kd * DD) * Hp + ih0 + kh * DH) * Wp + iw0;
        const __global lvec* wr = Wq + ((c * KD + kd) * KH + kh) * (KW * OCV);
#pragma unroll
        for (int kw = 0; kw < KW; ++kw) {
          lvec w[OCV];
#pragma unroll
          for (int v = 0; v < OCV; ++v) w[v] = wr[kw * OCV + v];
#pragma unroll
          for (int j = 0; j < OWB; ++j) {
            const lvec x = (lvec)((int)xr[j * SW + kw * DW]);
#pragma unroll
            for (int v = 0; v < OCV; ++v) DOT(acc[v * OWB + j], x, w[v]);
          }
        }
      }
    }
  }

  // Requantization runs on whole vectors of VL channels (per pixel), then each channel's pixels
  // are stored from a private copy; per element it cost twice the products.
  OUT_PARAMS
  const int z = (int)U8(xz[0]);
  const long oplane = (long)OD * OH * OW;
  const int pixels = min(OWB, OW - ow0);
#pragma clang loop unroll(disable)
  for (int v = 0; v < OCV; ++v) {
    const int oc0 = (ob * OCV + v) * VL;
    const int channels = min(VL, M_g - oc0);
    if (channels <= 0) break;
    int ov[VL];
    float mv[VL];
    for (int l = 0; l < VL; ++l) {
      const int m = g * M_g + oc0 + min(l, channels - 1);
      ov[l] = BIAS(m) - z * wsum[m];
      mv[l] = MULT(m);
    }
    const lvec offs = CAT(vload, VL)(0, ov);
    YT r[OWB][VL];
#if defined(OUT_I32)
#pragma unroll
    for (int j = 0; j < OWB; ++j) CAT(vstore, VL)(acc[v * OWB + j] + offs, 0, r[j]);
#elif defined(VEC_FINISH)
    const lfvec mult = CAT(vload, VL)(0, mv);
#pragma unroll
    for (int j = 0; j < OWB; ++j) {
      lfvec f = CAT(convert_float, VL)(acc[v * OWB + j] + offs) * mult;
      VEC_ACT(f);
      f = clamp(f, (float)(QMIN - y_zero), (float)(QMAX - y_zero));
      CAT(vstore, VL)(CAT(convert_, CAT(YT, VL))(RINT_SMALL_INT(f, y_zero, VL)), 0, r[j]);
    }
#else
    for (int j = 0; j < OWB; ++j) {
      int t[VL];
      CAT(vstore, VL)(acc[v * OWB + j] + offs, 0, t);
      for (int l = 0; l < VL; ++l) r[j][l] = (YT)requantize(t[l], mv[l], y_scale, y_zero);
    }
#endif
    const long y0 = (((long)n * G + g) * M_g + oc0) * oplane + (long)odh * OW + ow0;
    for (int c = 0; c < channels; ++c)
#pragma unroll
      for (int j = 0; j < OWB; ++j)
        if (j < pixels) Y[y0 + c * oplane + j] = r[j][c];
  }
}
#define GROUPED_CONV_ARGS Xp, Wq, wsum, bias, xs, xz, ws, ys, yzp, Y, CG, Dp, Hp, Wp, M_g, OD, OH, OW, G, oc_blocks
#ifdef QPAIRS
__kernel void qconv_madd(GROUPED_CONV_PARAMS) { grouped_conv(GROUPED_CONV_ARGS); }
#else
__kernel void qconv_vnni(GROUPED_CONV_PARAMS) { grouped_conv(GROUPED_CONV_ARGS); }
#endif

// 1x1 convs (stride 1, unpadded): vectors along 16 pixels instead of 16 channels, so that each
// output channel's pixels are requantized and stored as whole vectors (with channels in the
// lanes, small reductions spent most of their time on single-byte stores). Xp is the packed input
// of the pixels as one row, [N*G][C4][Pp] uints (Pp = P rounded up to 16 * PXV, the tail holding
// the zero point); Wq [G][oc_blocks][C4][PWB] uints (4 signed bytes each). A work-item computes
// PWB channels x PXV vectors of 16 pixels. Global: (oc_blocks, ceil(P / (16 * PXV)), N*G).
#if defined(PXV) && !defined(QPAIRS)
// With -DPW_DIRECT (qconv_vnni_pw_x) there is no packing launch: a work-item gathers its pixels'
// input (PXV x 16 pixels of every 4-channel group, interleaved into 4-byte lanes in registers)
// once into private memory, then computes a range of channel blocks from it (global dimension 0
// counts those ranges). C4 <= PW_GROUPS (-DPW_GROUPS, the host's limit). Lanes past C_g or P
// hold z, as in the packed copy.
#ifdef PW_DIRECT
// Channels 4*c .. 4*c+3 at pixels p .. p+15 of one image's input as 16 lanes of 4 bytes.
// `whole`: all sixteen pixels are inside.
static inline int16 pw_gather(const __global XT* restrict x, int c, int C_g, int P, int p, bool whole, uint z) {
  const __global XT* xc = x + (long)(4 * c) * P + p;
  const int here = min(4, C_g - 4 * c);
  if (whole && here == 4) return as_int16(group_lanes16(xc, P));
  uint t[16];
  for (int l = 0; l < 16; ++l) t[l] = group_lane(xc, P, l, p + l < P, here, z);
  return as_int16(vload16(0, t));
}
#endif

// One block of PWB output channels for PXV x 16 pixels from p0: the sums, requantized and stored.
// X(c, v): input group c's pixel vector v.
#define PW_BLOCK(ob, X)                                                                                  \
  {                                                                                                      \
    __global const uint* wq = Wq + ((long)g * oc_blocks + (ob)) * C4 * PWB;                              \
    int16 acc[PWB * PXV];                                                                                \
    _Pragma("unroll") for (int i = 0; i < PWB * PXV; ++i) acc[i] = (int16)0;                             \
    for (int c = 0; c < C4; ++c) {                                                                       \
      int16 x[PXV];                                                                                      \
      _Pragma("unroll") for (int v = 0; v < PXV; ++v) x[v] = X(c, v);                                    \
      _Pragma("unroll") for (int k = 0; k < PWB; ++k) {                                                  \
        const int16 w = (int16)((int)wq[c * PWB + k]);                                                   \
        _Pragma("unroll") for (int v = 0; v < PXV; ++v) DPBUSD(acc[k * PXV + v], x[v], w);               \
      }                                                                                                  \
    }                                                                                                    \
    pw_finish(acc, ob, g, Y + (long)n * G * M_g * P + p0, P, P - p0, wsum, bias, xs, xz, ws, ys, yzp, M_g);      \
  }

#ifdef VEC_FINISH
// The first `count` (1..15) bytes of v stored at p, the others left alone: an AVX-512BW masked
// store (these kernels run on x86 VNNI CPUs only). A vector's tail (rows of 13 or 27 columns in
// 16-pixel vectors) was requantized and stored byte by byte, which cost int8 squeezenet1_1's 13x13
// convs more than their products.
static inline void store_first_bytes16(__global YT* p, uchar16 v, int count) {
  const uint mask = (1u << count) - 1u;
  __asm__ volatile("kmovw %1, %%k1\n\tvmovdqu8 %2, (%0)%{%%k1%}" : : "r"(p), "r"(mask), "v"(v) : "k1", "memory");
}
#define VSTORE_FIRST(N, v, i, p) store_first_bytes16((p) + (i) * N, as_uchar16(v), part_)
#endif
// Requantizes and stores PWB channels x PXV vectors of 16 pixels: channel m's pixels at
// y0 + m * cstride (y0: image n's first channel at the vectors' first pixel), `count` of them.
static inline void pw_finish(const int16* acc, int ob, int g, __global YT* restrict y0, long cstride, int count,
                             __global const int* restrict wsum, __global const int* restrict bias,
                             __global const float* xs, __global const XT* xz, __global const float* ws,
                             __global const float* ys, __global const YT* yzp, int M_g) {
  OUT_PARAMS
  const int z = (int)U8(xz[0]);
  const int channels = min(PWB, M_g - ob * PWB);
  for (int k = 0; k < channels; ++k) {
    const int m = g * M_g + ob * PWB + k;
    const int offs = BIAS(m) - z * wsum[m];
    const float mult = MULT(m);
    __global YT* y = y0 + m * cstride;
#pragma unroll
    for (int v = 0; v < PXV; ++v) {
      const int q0 = 16 * v;
      if (q0 >= count) break;
      const int16 t = acc[k * PXV + v] + offs;
#if defined(VEC_FINISH) || defined(OUT_I32)
      if (q0 + 16 <= count) {
#if defined(OUT_I32)
        vstore16(t, v, y);
#else
        FINISH_VEC(16, y, 16 * v, t, 0, mult);
#endif
        continue;
      }
#endif
#ifdef VEC_FINISH
      const int part_ = count - q0;
      FINISH_VEC_WITH(VSTORE_FIRST, 16, y, 16 * v, t, 0, mult);
#else
      int r[16];
      vstore16(t, 0, r);
      for (int l = 0; l < 16 && q0 + l < count; ++l) FINISH(y, 16 * v + l, r[l], 0, mult);
#endif
    }
  }
}

#define PW_PARAMS                                                                                              \
  __global const uint *restrict Wq, __global const int *restrict wsum, __global const int *restrict bias,            \
      __global const float *xs, __global const XT *xz, __global const float *ws, __global const float *ys,           \
      __global const YT *yzp, __global YT *restrict Y, int C4, int C_g, int P, int Pp, int M_g, int G, int oc_blocks
#ifdef PW_ROWS
// Convs with stride 1 or 2 along rows (-DPW_ROWS, qconv_vnni_rows): the 1x1 kernels' pixel vectors
// on RB output rows. Lane l of vector v of a row is output column ow0 + 16 v + l, whose input for
// tap (kd, kh, kw) lies at column (ow0 + 16 v + l) * SW + kw * DW of a row of the packed input
// (qvnni_pack_input: the padding made real, Hp and Wp covering every vector's reads), so a tap is
// one unaligned load of 16 uints per vector (stride 2: two, and a shuffle) and its weights one
// broadcast per channel, used by the RB x PXV vectors; each channel's pixels are then requantized and stored as whole vectors
// (pw_finish). qconv_vnni (channels in the lanes) stored every output byte on its own, which cost
// as much as the products for convs with few input channels (int8 squeezenet1_1's 3x3 expand
// convs). Wq [G][oc_blocks][CG][KD][KH][KW][PWB] uints (4 signed bytes each).
// Global: (oc_blocks, ceil(OW / (16 * PXV)), N*G*OD*ceil(OH / RB)).
#define NV (RB * PXV)
// Vector v of a row's taps from q, LOAD16(p) the 16 uints at p: with stride 2 the even ones of 32
// (one vpermt2d).
#if SW == 1
#define ROWS_TAPS(LOAD16, q, v) LOAD16((q) + 16 * (v))
#else
#define ROWS_TAPS(LOAD16, q, v)                                                                       \
  __builtin_shufflevector(LOAD16((q) + 32 * (v)), LOAD16((q) + 32 * (v) + 16), 0, 2, 4, 6, 8, 10, 12, 14, \
                          16, 18, 20, 22, 24, 26, 28, 30)
#endif
#define GLOBAL_LOAD16(p) as_int16(vload16(0, p))
static inline int16 rows_load(const __global uint* restrict q, int v) { return ROWS_TAPS(GLOBAL_LOAD16, q, v); }
// The products of one block of PWB channels: acc [row][channel][vector] over every group, kd, kh
// and kw; X_ROW(c, kd, kh) is the first column of the input row that tap row (kd, kh) of output
// row 0 reads, ROW_STEP the distance to the next output row's, LOADX(q, v) vector v from q.
#define ROWS_BLOCK(acc, wq, CG, X_ROW, ROW_STEP, LOADX)                                                  \
  {                                                                                                     \
    _Pragma("unroll") for (int i = 0; i < PWB * NV; ++i) acc[i] = (int16)0;                             \
    for (int c = 0; c < CG; ++c)                                                                        \
      for (int kd = 0; kd < KD; ++kd)                                                                   \
        for (int kh = 0; kh < KH; ++kh) {                                                               \
          const XR_SPACE uint* xr = X_ROW(c, kd, kh);                                        \
          const __global uint* wr = wq + ((c * KD + kd) * KH + kh) * (KW * PWB);                        \
          _Pragma("unroll") for (int kw = 0; kw < KW; ++kw) {                                           \
            int16 x[NV];                                                                                \
            _Pragma("unroll") for (int r = 0; r < RB; ++r)                                              \
              _Pragma("unroll") for (int v = 0; v < PXV; ++v) x[r * PXV + v] =                          \
                  LOADX(xr + r * (ROW_STEP) + kw * DW, v);                                              \
            _Pragma("unroll") for (int k = 0; k < PWB; ++k) {                                           \
              const int16 w = (int16)((int)wr[kw * PWB + k]);                                           \
              _Pragma("unroll") for (int r = 0; r < RB; ++r)                                            \
                _Pragma("unroll") for (int v = 0; v < PXV; ++v)                                         \
                  DPBUSD(acc[(r * PWB + k) * PXV + v], x[r * PXV + v], w);                              \
            }                                                                                           \
          }                                                                                             \
        }                                                                                               \
  }
#ifdef ROWS_DIRECT
// -DROWS_DIRECT (qconv_vnni_rows_x, 2-D convs): no packing launch. A work-item gathers the input
// rows its RB output rows read (IN_ROWS rows of IN_VECS vectors of 16 columns from its first
// column's input, 4-channel groups interleaved into uints, z in the padding: group_block16) into
// private memory once, then computes `blocks` channel blocks from that copy. CG <= ROWS_GROUPS.
#define IN_ROWS ((RB - 1) * SH + (KH - 1) * DH + 1)
#define IN_VECS ((16 * PXV * SW + (KW - 1) * DW + 15) / 16)
typedef struct { int16 lanes; } __attribute__((packed)) oi_ints16;
// An unaligned vector of 16 uints from private memory: one load (vload16 from private memory was
// assembled from pieces by PoCL 3.1's LLVM).
#define PRIV_LOAD16(p) (((const oi_ints16*)(p))->lanes)
static inline int16 rows_load_private(const uint* q, int v) { return ROWS_TAPS(PRIV_LOAD16, q, v); }
// Global: (ceil(oc_blocks / blocks), ceil(OW / (16 * PXV)), N*G*ceil(OH / RB)).
__kernel void qconv_vnni_rows_x(__global const XT* restrict X, __global const uint* restrict Wq,
                                __global const int* restrict wsum, __global const int* restrict bias,
                                __global const float* xs, __global const XT* xz, __global const float* ws,
                                __global const float* ys, __global const YT* yzp, __global YT* restrict Y, int C_g,
                                int H, int W, int pad_h, int pad_w, int M_g, int OH, int OW, int G, int oc_blocks,
                                int blocks) {
  const int ob0 = get_global_id(0) * blocks;
  const int ow0 = get_global_id(1) * (16 * PXV);
  if (ob0 >= oc_blocks || ow0 >= OW) return;
  const int row_blocks = (OH + RB - 1) / RB;
  const int oh0 = get_global_id(2) % row_blocks * RB;
  const int ng = get_global_id(2) / row_blocks;
  const int g = ng % G, n = ng / G;
  const int CG = (C_g + GRP - 1) / GRP;
  const long plane = (long)H * W;
  X += (long)ng * C_g * plane;
  const uint z = U8(xz[0]);
  uint16 xg[ROWS_GROUPS * IN_ROWS * IN_VECS];
  const int ih0 = oh0 * SH - pad_h, iw0 = ow0 * SW - pad_w;
  for (int c = 0; c < CG; ++c) {
    const int here = min(GRP, C_g - c * GRP);
    for (int r = 0; r < IN_ROWS; ++r) {
      const int ih = ih0 + r;
      const bool row = ih >= 0 && ih < H;
      const __global XT* src = X + (long)(c * GRP) * plane + (long)ih * W;
#pragma unroll
      for (int v = 0; v < IN_VECS; ++v)
        xg[(c * IN_ROWS + r) * IN_VECS + v] = group_block16(src, plane, iw0 + 16 * v, W, row, here, z);
    }
  }
  const long oplane = (long)OH * OW;
  __global YT* y0 = Y + (long)n * G * M_g * oplane + (long)oh0 * OW + ow0;
  const int ob_end = min(oc_blocks, ob0 + blocks);
  for (int ob = ob0; ob < ob_end; ++ob) {
    const __global uint* wq = Wq + ((long)g * oc_blocks + ob) * CG * (KH * KW * PWB);
    int16 acc[PWB * NV];
#define XR_SPACE
#define XG_ROW(c, kd, kh) ((const uint*)(xg + ((c) * IN_ROWS + (kh) * DH) * IN_VECS))
    ROWS_BLOCK(acc, wq, CG, XG_ROW, SH * IN_VECS * 16, rows_load_private)
#undef XG_ROW
#undef XR_SPACE
    for (int r = 0; r < RB && oh0 + r < OH; ++r)
      pw_finish(acc + r * PWB * PXV, ob, g, y0 + r * OW, oplane, OW - ow0, wsum, bias, xs, xz, ws, ys, yzp, M_g);
  }
}
#else
__kernel void qconv_vnni_rows(__global const uint* restrict Xp, __global const uint* restrict Wq,
                              __global const int* restrict wsum, __global const int* restrict bias,
                              __global const float* xs, __global const XT* xz, __global const float* ws,
                              __global const float* ys, __global const YT* yzp, __global YT* restrict Y, int CG,
                              int Dp, int Hp, int Wp, int M_g, int OD, int OH, int OW, int G, int oc_blocks) {
  const int ob = get_global_id(0);
  const int ow0 = get_global_id(1) * (16 * PXV);
  if (ob >= oc_blocks || ow0 >= OW) return;
  const int row_blocks = (OH + RB - 1) / RB;
  const int odb = get_global_id(2) % (OD * row_blocks);
  const int od = odb / row_blocks, oh0 = odb % row_blocks * RB;
  const int ng = get_global_id(2) / (OD * row_blocks);
  const int g = ng % G, n = ng / G;
  Xp += (long)ng * CG * Dp * Hp * Wp + ow0 * SW;
  const __global uint* wq = Wq + ((long)g * oc_blocks + ob) * CG * (KD * KH * KW * PWB);
  int16 acc[PWB * NV];  // [row][channel][vector]
  const int id0 = od * SD, ih0 = oh0 * SH;
#define XR_SPACE __global
#define XP_ROW(c, kd, kh) (Xp + (((long)(c) * Dp + id0 + (kd) * DD) * Hp + ih0 + (kh) * DH) * Wp)
  ROWS_BLOCK(acc, wq, CG, XP_ROW, SH * Wp, rows_load)
#undef XP_ROW
#undef XR_SPACE
  const long oplane = (long)OD * OH * OW;
  __global YT* y0 = Y + (long)n * G * M_g * oplane + ((long)od * OH + oh0) * OW + ow0;
  for (int r = 0; r < RB && oh0 + r < OH; ++r)
    pw_finish(acc + r * PWB * PXV, ob, g, y0 + r * OW, oplane, OW - ow0, wsum, bias, xs, xz, ws, ys, yzp, M_g);
}
#endif
#elif defined(PW_DIRECT)
// Global: (ceil(oc_blocks / blocks), ceil(P / (16 * PXV)), N*G); `blocks` channel blocks per work-item.
__kernel void qconv_vnni_pw_x(__global const XT* restrict X, PW_PARAMS, int blocks) {
  const int ob0 = get_global_id(0) * blocks;
  const int p0 = get_global_id(1) * (16 * PXV);
  if (ob0 >= oc_blocks || p0 >= P) return;
  const int ng = get_global_id(2);
  const int g = ng % G, n = ng / G;
  X += (long)ng * C_g * P;
  const bool whole = p0 + 16 * PXV <= P;
  const uint zu = U8(xz[0]);
  int16 xg[PW_GROUPS * PXV];
  for (int c = 0; c < C4; ++c)
#pragma unroll
    for (int v = 0; v < PXV; ++v) xg[c * PXV + v] = pw_gather(X, c, C_g, P, p0 + 16 * v, whole, zu);
#define PW_PRIVATE(c, v) xg[(c) * PXV + (v)]
  const int ob_end = min(oc_blocks, ob0 + blocks);
  for (int ob = ob0; ob < ob_end; ++ob) PW_BLOCK(ob, PW_PRIVATE)
}
#else
// Global: (oc_blocks, ceil(P / (16 * PXV)), N*G).
__kernel void qconv_vnni_pw(__global const uint* restrict Xp, PW_PARAMS) {
  const int ob = get_global_id(0);
  const int p0 = get_global_id(1) * (16 * PXV);
  if (ob >= oc_blocks || p0 >= P) return;
  const int ng = get_global_id(2);
  const int g = ng % G, n = ng / G;
  Xp += (long)ng * C4 * Pp + p0;
#define PW_PACKED(c, v) as_int16(vload16((v), Xp + (long)(c) * Pp))
  PW_BLOCK(ob, PW_PACKED)
}
#endif
#endif  // PXV
#endif  // PACK_INPUT_ONLY
#endif  // QVNNI

// ---- depthwise convolution on x86 AVX-512 VNNI (-DQDWVNNI) -------------------------------------
// One channel in and out per group, 2-D. A vpdpbusd lane is one output pixel and its 4 bytes are 4
// taps of one kernel row: u at input columns p * SW + (4 * g + t) * DW (t = 0..3) for tap group g
// of the row (TG groups; the last group's missing taps have weight 0). So a kernel row of up to 4
// taps is one instruction for 16 pixels where the float kernel (qconv_depthwise_rows) does one
// FMA per tap for 8 or 16. The arithmetic is that of qconv_vnni (U8, the zero point z in the
// padding, sum w' * (u - z) = sum w' * u - z * sum w'), exact in int32.
// Input rows are copied as bytes u into a ring of RSLOTS rows in private memory (z in the padding
// columns and in rows outside the input), each row once, two output rows ahead of its first read
// (as qconv_depthwise_rows). A tap group of 16 pixels: one 64-byte load from the ring row at byte
// 16 * SW * j + 4 * DW * g, a dword shuffle giving each 16-byte lane of 4 pixels its own 16 bytes
// (vpermd), a byte shuffle inside the lanes (vpshufb), one vpdpbusd. Needs 3 * SW + 3 * DW < 16
// (the host checks). Wq [C][KH][TG] uints of 4 signed bytes w' = w - w_zero; wsum [C] each
// channel's sum of w'. A work-item computes `rows` output rows of `chans` planes.
// Global: (ceil(OH / rows), ceil(N*C / chans)).
#if defined(QDWVNNI) && !defined(PACK_WEIGHTS)
#define TG ((KW + 3) / 4)
#define VBLK ((OUT_W + 15) / 16)
#define VRING ((KH - 1) * DH + 1)
// RING's rows and two output rows' more, rounded up to a power of two: a slot is then a mask
// of the row number (with the modulo's multiply-and-shift, four per output row, mobilenet_v2's 17
// 8-bit depthwise convs took 0.80 ms summed, 0.68 ms with the mask).
#define VSLOTS_MIN (VRING + 2 * SH)
#define VSLOTS (VSLOTS_MIN <= 4 ? 4 : VSLOTS_MIN <= 8 ? 8 : VSLOTS_MIN <= 16 ? 16 : VSLOTS_MIN <= 32 ? 32 : 64)
#define VSLOT(ih) (((ih) + pad_h) & (VSLOTS - 1))
// A ring row: 16 uints of z, the input row's bytes from uint 16 in whole 16-byte chunks (VCH),
// z after them. A window starts VLEFT uints before the row's data, so that its bytes are the row's
// shifted by VSHIFT = 4 * VLEFT - PAD_W (the byte shuffle adds VSHIFT back).
#define VCH ((IN_W + 15) / 16)
#define VLEFT ((PAD_W + 3) / 4)
#define VSHIFT (4 * VLEFT - PAD_W)
// Uints a row must hold: every window's 64-byte load, and the copy's chunks; whole 64-byte lines.
#define VNEED (16 - VLEFT + (VBLK - 1) * 4 * SW + (TG - 1) * DW + 16)
#define VCOPY (16 + 4 * VCH)
#define VRB (((VNEED > VCOPY ? VNEED : VCOPY) + 15) / 16 * 16)
typedef uchar oi_u8x64 __attribute__((ext_vector_type(64)));
#define VDL(l) (l) * SW, (l) * SW + 1, (l) * SW + 2, (l) * SW + 3
#define VBX(l, j, t) (16 * (l) + VSHIFT + (j) * SW + (t) * DW)
#define VBJ(l, j) VBX(l, j, 0), VBX(l, j, 1), VBX(l, j, 2), VBX(l, j, 3)
#define VBL(l) VBJ(l, 0), VBJ(l, 1), VBJ(l, 2), VBJ(l, 3)
// The 16 pixels' lanes of one tap group from the 64 bytes at p (its window's start). The dword
// step is vpermd written as inline assembly with the window as its memory operand: from the
// shuffle LLVM 15 built each lane's 16 bytes out of 8-byte loads and inserts, and from vload16 of
// the ring it assembled each window out of 5 loads and inserts (the kernel was no faster than the
// float one).
typedef struct {
  uint v[16];
} oi_window;
static inline int16 vdw_lanes(const uint* p) {
  const uint16 idx = (uint16)(VDL(0), VDL(1), VDL(2), VDL(3));
  uint16 d;
  __asm__("vpermd %2, %1, %0" : "=v"(d) : "v"(idx), "m"(*(const oi_window*)p));
  const oi_u8x64 b = __builtin_astype(d, oi_u8x64);
  return __builtin_astype(__builtin_shufflevector(b, b, VBL(0), VBL(1), VBL(2), VBL(3)), int16);
}
#ifdef X_SIGNED
#define U8_16(v) (as_uchar16(v) ^ (uchar16)0x80)
#else
#define U8_16(v) as_uchar16(v)
#endif
// Input row ih into the data chunks of ring row `dst` (its other uints hold z from the kernel's
// start on): the row's bytes, z past its end; all z for a row outside the input. Chunks are
// stored as aligned uint4 (vstore16 of bytes into private memory became one store per byte).
// `overread_ok`: whole 16-byte chunks from the row's start lie inside the input buffer.
static inline void vdw_ring_row(uint4* dst, const __global XT* restrict x, int ih, int H, uint z, bool overread_ok) {
  const uchar16 zb = (uchar16)(uchar)z;
  if (ih < 0 || ih >= H) {
#pragma unroll
    for (int k = 0; k < VCH; ++k) dst[k] = as_uint4(zb);
    return;
  }
  const __global XT* src = x + (long)ih * IN_W;
#pragma unroll
  for (int k = 0; k < IN_W / 16; ++k) dst[k] = as_uint4(U8_16(vload16(k, src)));
#if IN_W % 16 != 0
  if (overread_ok) {
    // The chunk past the row's end: its lanes beyond the row keep z.
    const uchar16 lane = (uchar16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    dst[IN_W / 16] = as_uint4(select(zb, U8_16(vload16(IN_W / 16, src)), lane < (uchar)(IN_W % 16)));
  } else {
    uchar t[16];
    for (int k = 0; k < 16; ++k) t[k] = IN_W / 16 * 16 + k < IN_W ? (uchar)U8(src[IN_W / 16 * 16 + k]) : (uchar)z;
    dst[IN_W / 16] = as_uint4(vload16(0, t));
  }
#endif
}

__kernel void qconv_depthwise_vnni(__global const XT* restrict X, __global const uint* restrict Wq,
                                   __global const int* restrict wsum, __global const int* restrict bias,
                                   __global const float* xs, __global const XT* xz, __global const float* ws,
                                   __global const float* ys, __global const YT* yzp, __global YT* restrict Y, int C,
                                   int H, int OH, int pad_h, int planes, int rows, int chans) {
  const int oh0 = get_global_id(0) * rows, nc0 = get_global_id(1) * chans;
  const int oh_end = min(OH, oh0 + rows), nc_end = min(planes, nc0 + chans);
  OUT_PARAMS
  const uint z = U8(xz[0]);
  uint16 ring16[VSLOTS * VRB / 16];  // 64-byte aligned
  for (int i = 0; i < VSLOTS * VRB / 16; ++i) ring16[i] = (uint16)(z * 0x01010101u);
  const uint* ring = (const uint*)ring16;
  const long buffer_end = (long)planes * H * IN_W;
  for (int nc = nc0; nc < nc_end; ++nc) {
    const int c = nc % C;
    const __global XT* x = X + (long)nc * H * IN_W;
    int16 wk[KH * TG];
#pragma unroll
    for (int t = 0; t < KH * TG; ++t) wk[t] = (int16)((int)Wq[(long)c * (KH * TG) + t]);
    const int offs = BIAS(c) - (int)z * wsum[c];
    const float mult = MULT(c);
    int next = oh0 * SH - pad_h;  // the first input row not yet in the ring
    for (int oh = oh0; oh < oh_end; ++oh) {
      const int first = oh * SH - pad_h, last = first + (KH - 1) * DH;
      const int ahead = last + SH * min(2, oh_end - 1 - oh);
      for (int ih = max(next, first); ih <= ahead; ++ih)
        vdw_ring_row((uint4*)(ring16 + VSLOT(ih) * (VRB / 16) + 1), x, ih, H, z,
                     ((long)nc * H + ih) * IN_W + VCH * 16 <= buffer_end);
      next = ahead + 1;
      __global YT* yrow = Y + ((long)nc * OH + oh) * OUT_W;
      // A row narrower than its vectors: a whole vector store spills into the next rows, which
      // this work-item writes afterwards; where that would pass its last row, lane by lane.
      const bool spill_ok = oh + (16 * VBLK - OUT_W + OUT_W - 1) / OUT_W < oh_end;
#pragma unroll
      for (int j = 0; j < VBLK; ++j) {
        int16 acc = (int16)0;
#pragma unroll
        for (int kh = 0; kh < KH; ++kh) {
          const uint* xr = ring + VSLOT(first + kh * DH) * VRB + 16 - VLEFT + j * 4 * SW;
#pragma unroll
          for (int g = 0; g < TG; ++g) DPBUSD(acc, vdw_lanes(xr + g * DW), wk[kh * TG + g]);
        }
        const int16 t = acc + offs;
#if defined(VEC_FINISH) || defined(OUT_I32)
        if (16 * j + 16 <= OUT_W || (j == VBLK - 1 && spill_ok)) {
#if defined(OUT_I32)
          vstore16(t, 0, yrow + 16 * j);
#else
          FINISH_VEC(16, yrow, 16 * j, t, 0, mult);
#endif
          continue;
        }
#endif
#if defined(VEC_FINISH)
        YT r_[16];
        FINISH_VEC_PRIVATE(16, r_, 0, t, 0, mult);
        for (int l = 0; l < 16 && 16 * j + l < OUT_W; ++l) yrow[16 * j + l] = r_[l];
#else
        int r[16];
        vstore16(t, 0, r);
        for (int l = 0; l < 16 && 16 * j + l < OUT_W; ++l) FINISH(yrow, 16 * j + l, r[l], 0, mult);
#endif
      }
    }
  }
}
#endif  // QDWVNNI

// Matrix product on x86 AVX-512 VNNI (-DQMVNNI, see qconv_vnni above for the arithmetic):
// Y[b] = A[b] (M x K, rows at a_off[b]) x B[b_index[b]], B constant and packed as Bq
// [count][blocks][K4][NBV] int16 vectors (lane l of vector v: column 16 * (NBV * block + v) + l,
// its 4 bytes the signed w' = w - w_zero of rows 4*k4 .. 4*k4+3; 0 past K and past N) with
// bsum[count][N] each column's sum of w'. A's 4 bytes of a row are one unsigned dword (signed
// inputs with their top bit flipped: + 128), the row's last partial group read byte by byte with
// 0 past K (whose weights are 0). A work-item computes MB rows x NBV * 16 columns.
// Global: (blocks, ceil(M / MB), batch); `offs` holds per batch a_off, b_index.
#if defined(QMVNNI) && !defined(PACK_WEIGHTS)
__kernel void qmatmul_vnni(__global const XT* restrict A, __global const int16* restrict Bq,
                           __global const int* restrict bsum, __global const int* restrict bias,
                           __global const float* xs, __global const XT* az, __global const float* ws,
                           __global const float* ys, __global const YT* yzp, __global YT* restrict Y,
                           __global const long* offs, int M, int N, int K, int blocks) {
  const int nb = get_global_id(0), m0 = get_global_id(1) * MB, bt = get_global_id(2);
  if (nb >= blocks || m0 >= M) return;
  const int K4 = (K + 3) / 4, Kf = K / 4;  // groups of 4 rows of B; whole groups
  const __global uchar* a = (const __global uchar*)(A + offs[2 * bt]);
  Bq += (offs[2 * bt + 1] * blocks + nb) * (long)K4 * NBV;
  bsum += offs[2 * bt + 1] * N;
  long row[MB];
#pragma unroll
  for (int i = 0; i < MB; ++i) row[i] = (long)min(m0 + i, M - 1) * K;
  int16 acc[MB * NBV];
#pragma unroll
  for (int i = 0; i < MB * NBV; ++i) acc[i] = (int16)0;
  for (int k4 = 0; k4 < Kf; ++k4) {
    int16 w[NBV];
#pragma unroll
    for (int v = 0; v < NBV; ++v) w[v] = Bq[k4 * NBV + v];
#pragma unroll
    for (int i = 0; i < MB; ++i) {
      const int16 x = (int16)((int)(as_uint(vload4(0, a + row[i] + 4 * k4)) ^ X_FLIP));
#pragma unroll
      for (int v = 0; v < NBV; ++v) DPBUSD(acc[i * NBV + v], x, w[v]);
    }
  }
  if (Kf < K4) {
    int16 w[NBV];
#pragma unroll
    for (int v = 0; v < NBV; ++v) w[v] = Bq[Kf * NBV + v];
#pragma unroll
    for (int i = 0; i < MB; ++i) {
      uint u = 0;
      for (int q = 0; q < K - 4 * Kf; ++q) u |= U8(((const __global XT*)a)[row[i] + 4 * Kf + q]) << (8 * q);
      const int16 x = (int16)((int)u);
#pragma unroll
      for (int v = 0; v < NBV; ++v) DPBUSD(acc[i * NBV + v], x, w[v]);
    }
  }

  // sum (x - x_zero) w' = sum u w' - z sum w' (u, z: the unsigned input and zero point).
  OUT_PARAMS
  const int z = (int)U8(az[0]);
#pragma clang loop unroll(disable)
  for (int v = 0; v < NBV; ++v) {
    const int n0 = (nb * NBV + v) * 16;
    const int cols = min(16, N - n0);
    if (cols <= 0) break;
    int ov[16];
    float mv[16];
    for (int l = 0; l < 16; ++l) {
      const int n = n0 + min(l, cols - 1);
      ov[l] = BIAS(n) - z * bsum[n];
      mv[l] = MULT(n);
    }
    const int16 col_offs = vload16(0, ov);
#pragma unroll
    for (int i = 0; i < MB; ++i) {
      if (m0 + i >= M) continue;
      __global YT* y = Y + (long)bt * M * N + (long)(m0 + i) * N + n0;
      const int16 t = acc[i * NBV + v] + col_offs;
#if defined(OUT_I32)
      if (cols == 16) {
        vstore16(t, 0, y);
        continue;
      }
#elif defined(VEC_FINISH)
      if (cols == 16) {
        FINISH_VEC(16, y, 0, t, 0, vload16(0, mv));
        continue;
      }
#endif
      int r[16];
      vstore16(t, 0, r);
      for (int l = 0; l < cols; ++l) FINISH(y, l, r[l], 0, mv[l]);
    }
  }
}
#endif  // QMVNNI

// ---- 1x1 convs with 16-bit pairwise products (-DQMADD) ----------------------------------------
// For CPUs without VNNI (x86 AVX2: vpmaddwd multiplies 16 pairs of 16-bit values and adds each
// pair into a 32-bit lane, 16 products per instruction against a float FMA's 8; on a Zen 3 core
// both issue 2 per cycle). A lane holds two input channels' raw values x (uint8 zero-extended,
// int8 sign-extended) and the two channels' weights w' = w - w_zero (|w'| <= 255), so every
// product and pair sum is exact; sum (x - x_zero) w' = sum x w' - x_zero * sum w' (wsum, per
// output channel). The host keeps C_g * 255 * 255 below 2^31. MADD: see above.
#if defined(QMADD) && !defined(PACK_WEIGHTS)
// The 8 pixels from p of channels rows a and b, interleaved (a0 b0 a1 b1 ...) as 16-bit values.
#define PAIR8(a, b) \
  convert_short16((CAT(XT, 16))((a).s0, (b).s0, (a).s1, (b).s1, (a).s2, (b).s2, (a).s3, (b).s3, (a).s4, (b).s4, \
                                (a).s5, (b).s5, (a).s6, (b).s6, (a).s7, (b).s7))
// 1x1 convs (stride 1, unpadded), vectors along 8 pixels: Wq [G][oc_blocks][C2][PWB] uints, the
// low half w' of channel 2*c2, the high half of channel 2*c2+1 (0 past C_g and past M_g); wsum[m]
// output channel m's sum of w'. A work-item computes PWB channels x PXV vectors of 8 pixels, the
// pairs interleaved from the two channels' rows as it goes (no packed copy of the input).
// Global: (oc_blocks, ceil(P / (8 * PXV)), N*G).
__kernel void qconv_madd_pw(__global const XT* restrict X, __global const uint* restrict Wq,
                            __global const int* restrict wsum, __global const int* restrict bias,
                            __global const float* xs, __global const XT* xz, __global const float* ws,
                            __global const float* ys, __global const YT* yzp, __global YT* restrict Y, int C_g,
                            int P, int M_g, int G, int oc_blocks) {
  const int ob = get_global_id(0);
  const int p0 = get_global_id(1) * (8 * PXV);
  if (ob >= oc_blocks || p0 >= P) return;
  const int ng = get_global_id(2);
  const int g = ng % G, n = ng / G;
  const int C2 = (C_g + 1) / 2;
  X += (long)ng * C_g * P + p0;
  Wq += ((long)g * oc_blocks + ob) * C2 * PWB;
  const bool full = p0 + 8 * PXV <= P;
  int8 acc[PWB * PXV];
#pragma unroll
  for (int i = 0; i < PWB * PXV; ++i) acc[i] = (int8)0;
  for (int c2 = 0; c2 < C2; ++c2) {
    const __global XT* xa = X + (long)(2 * c2) * P;
    // An odd C_g's last pair reads its first channel twice (its second weight is 0).
    const __global XT* xb = 2 * c2 + 1 < C_g ? xa + P : xa;
    short16 x[PXV];
    if (full) {
#pragma unroll
      for (int v = 0; v < PXV; ++v) x[v] = PAIR8(vload8(v, xa), vload8(v, xb));
    } else {
      XT ta[8 * PXV], tb[8 * PXV];
#pragma unroll
      for (int q = 0; q < 8 * PXV; ++q) {
        ta[q] = p0 + q < P ? xa[q] : 0;
        tb[q] = p0 + q < P ? xb[q] : 0;
      }
#pragma unroll
      for (int v = 0; v < PXV; ++v) x[v] = PAIR8(vload8(v, ta), vload8(v, tb));
    }
#pragma unroll
    for (int k = 0; k < PWB; ++k) {
      const short16 w = as_short16((uint8)Wq[c2 * PWB + k]);
#pragma unroll
      for (int v = 0; v < PXV; ++v) acc[k * PXV + v] += MADD(x[v], w);
    }
  }
  OUT_PARAMS
  const int z = (int)xz[0];
  const int channels = min(PWB, M_g - ob * PWB);
  for (int k = 0; k < channels; ++k) {
    const int m = g * M_g + ob * PWB + k;
    const int offs = BIAS(m) - z * wsum[m];
    const float mult = MULT(m);
    __global YT* y = Y + ((long)n * G * M_g + m) * P + p0;
#pragma unroll
    for (int v = 0; v < PXV; ++v) {
      const int q0 = p0 + 8 * v;
      if (q0 >= P) break;
      const int8 t = acc[k * PXV + v] + offs;
#if defined(VEC_FINISH) || defined(OUT_I32)
      if (q0 + 8 <= P) {
#if defined(OUT_I32)
        vstore8(t, v, y);
#else
        FINISH_VEC(8, y, 8 * v, t, 0, mult);
#endif
        continue;
      }
#endif
      int r[8];
      vstore8(t, 0, r);
      for (int l = 0; l < 8 && q0 + l < P; ++l) FINISH(y, 8 * v + l, r[l], 0, mult);
    }
  }
}
#endif  // QMADD

// ---- matrix product -------------------------------------------------------------------------
#if defined(NB) && !defined(PACK_WEIGHTS)
#define nvec CAT(float, NB)
#define nivec CAT(int, NB)
#define nvec_load CAT(vload, NB)
#define nivec_convert CAT(convert_int, NB)

// Y[b] = A[b] (M x K, rows at a_off[b]) x Bp[b_index[b]] (K x NP packed floats), per output column
// requantized. Global: (NP/NB, ceil(M/MB), batch); `offs` holds per batch a_off, b_index. CHUNK
// counts k steps between flushes.
__kernel void qmatmul(__global const XT* restrict A, __global const float* restrict Bp,
                      __global const int* restrict bias, __global const float* xs, __global const XT* az,
                      __global const float* ws, __global const float* ys, __global const YT* yzp,
                      __global YT* restrict Y, __global const long* offs, int M, int N, int K, int NP) {
  const int nb = get_global_id(0), m0 = get_global_id(1) * MB, bt = get_global_id(2);
  if (m0 >= M) return;
  const int n0 = nb * NB;
  const __global XT* a = A + offs[2 * bt];
  const __global float* bp = Bp + offs[2 * bt + 1] * K * NP + n0;
  const float a_zero = (float)az[0];
  const int rows = min(MB, M - m0);

  nivec total[MB];
  nvec acc[MB];
#pragma unroll
  for (int i = 0; i < MB; ++i) total[i] = (nivec)0, acc[i] = (nvec)0.0f;
  for (int k0 = 0; k0 < K; k0 += CHUNK) {
    const int k1 = min(K, k0 + CHUNK);
    for (int k = k0; k < k1; ++k) {
      const nvec w = nvec_load(0, bp + (long)k * NP);
#pragma unroll
      for (int i = 0; i < MB; ++i) {
        const int row = min(m0 + i, M - 1);
        acc[i] = fma((nvec)((float)a[(long)row * K + k] - a_zero), w, acc[i]);
      }
    }
#pragma unroll
    for (int i = 0; i < MB; ++i) total[i] += nivec_convert(acc[i]), acc[i] = (nvec)0.0f;
  }

  OUT_PARAMS
  const int cols = min(NB, N - n0);
  int bs[NB];
  float ms[NB];
  for (int c = 0; c < cols; ++c) bs[c] = BIAS(n0 + c), ms[c] = MULT(n0 + c);
#pragma unroll
  for (int i = 0; i < MB; ++i) {
    if (i >= rows) continue;
    int r[NB];
    CAT(vstore, NB)(total[i], 0, r);
    for (int c = 0; c < cols; ++c) FINISH(Y, (long)bt * M * N + (long)(m0 + i) * N + n0 + c, r[c], bs[c], ms[c]);
  }
}
#endif  // NB

// ---- QuantizeLinear / DequantizeLinear with one scale and zero point --------------------------
// 16 elements per work-item; the general (per-axis, broadcast) forms run through
// kernels/elementwise.cl. Global: (ceil(n / 16)).
#if defined(QT) && defined(QLINEAR)
__kernel void quantize_linear(__global const float* restrict x, __global const float* s, __global const QT* z,
                              __global QT* restrict y, long n) {
  const long i = get_global_id(0) * 16;
  if (i >= n) return;
  const float scale = s[0], zero = (float)z[0];
  if (i + 16 <= n) {
    const float16 v = clamp(rint(vload16(0, x + i) / scale) + zero, (float)QMIN, (float)QMAX);
    VSTORE_BYTES(16, CAT(convert_, CAT(QT, 16))(convert_int16(v)), 0, y + i);
    return;
  }
  for (long k = i; k < n; ++k) y[k] = (QT)(int)clamp(rint(x[k] / scale) + zero, (float)QMIN, (float)QMAX);
}

__kernel void dequantize_linear(__global const QT* restrict x, __global const float* s, __global const QT* z,
                                __global float* restrict y, long n) {
  const long i = get_global_id(0) * 16;
  if (i >= n) return;
  const float scale = s[0];
  const int zero = (int)z[0];
  if (i + 16 <= n) {
    vstore16(convert_float16(convert_int16(vload16(0, x + i)) - zero) * scale, 0, y + i);
    return;
  }
  for (long k = i; k < n; ++k) y[k] = (float)((int)x[k] - zero) * scale;
}
#endif

// ---- QLinearGlobalAveragePool --------------------------------------------------------------
// One work-item per (image, channel) of an NCHW input: the int sum of the plane, then
// y = saturate(round((sum - x_zero * HW) * (x_scale / (y_scale * HW))) + y_zero).
// Global: (N*C).
#if defined(XT) && defined(QGAP)
__kernel void qgap(__global const XT* restrict X, __global const float* xs, __global const XT* xz,
                   __global const float* ys, __global const YT* yzp, __global YT* restrict Y, int NC, int HW) {
  const int i = get_global_id(0);
  if (i >= NC) return;
  const __global XT* x = X + (long)i * HW;
  int sum = 0;
  for (int k = 0; k < HW; ++k) sum += (int)x[k];
  const int yz = (int)yzp[0];
  const float m = xs[0] / (ys[0] * (float)HW);
  float v = (float)(sum - (int)xz[0] * HW) * m;
  v = clamp(v, (float)(QMIN - yz), (float)(QMAX - yz));
  Y[i] = (YT)((int)rint(v) + yz);
}
#endif

// ---- QLinearConcat: one input requantized into its slice of the output ----------------------
// y[o * out_block + offset + r] = saturate(round((x[i] - xz) * xs / ys) + yz), i = o * in_block + r:
// DequantizeLinear then QuantizeLinear, as ONNX Runtime's lookup table computes it.
// Global: (n).
#if defined(XT) && defined(QREQUANT)
// Global: (ceil(in_block / 16), n / in_block): 16 consecutive values of one block per work-item,
// as vectors (one value per work-item with a 64-bit division for its block took 430 us for
// squeezenet1_1's [1,128,55,55] QLinearConcat on a 2-core Xeon).
__kernel void qrequant_into(__global const XT* restrict x, __global YT* restrict y, long n, long in_block,
                            long out_block, long offset, float xs, int xz, float ys, int yz) {
  const long r0 = (long)get_global_id(0) * 16, o = get_global_id(1);
  if (r0 >= in_block) return;
  x += o * in_block;
  y += o * out_block + offset;
  if (r0 + 16 <= in_block) {
    const float16 v = convert_float16(convert_int16(vload16(0, x + r0)) - xz) * xs;
    const float16 q =
        clamp(RINT_SMALL(clamp(v / ys, (float)(QMIN - yz - 1), (float)(QMAX - yz + 1))) + (float)yz, (float)QMIN,
              (float)QMAX);
    VSTORE_BYTES(16, CAT(convert_, CAT(YT, 16))(q), 0, y + r0);
    return;
  }
  for (long r = r0; r < in_block; ++r) {
    const float v = (float)((int)x[r] - xz) * xs;
    y[r] = (YT)clamp(rint(v / ys) + (float)yz, (float)QMIN, (float)QMAX);
  }
}
#endif

// ---- GPU-shaped matrix product ----------------------------------------------------------------
// tiled.cl's local-memory tiles on A (8-bit, minus its zero point) x Bp ([count][K][NP] floats,
// NP = N); int32 flushes every FLUSH_TILES steps as in qconv_tiled. Global: (ceil(N/TS)*WX,
// ceil(M/TS)*WY, batch), local (WX, WY, 1); `offs` as for qmatmul.
#if defined(QMTILED) && !defined(PACK_WEIGHTS)
__kernel __attribute__((reqd_work_group_size(WX, WY, 1))) void qmatmul_tiled(
    __global const XT* restrict A, __global const float* restrict Bp, __global const int* restrict bias,
    __global const float* xs, __global const XT* az, __global const float* ws, __global const float* ys,
    __global const YT* yzp, __global YT* restrict Y, __global const long* offs, int M, int N, int K, int NP) {
  const int n0 = get_group_id(0) * TS, m0 = get_group_id(1) * TS, bt = get_group_id(2);
  const __global XT* a = A + offs[2 * bt];
  const __global float* bp = Bp + offs[2 * bt + 1] * K * NP;
  const float a_zero = (float)az[0];
#define LOAD_A(m, k) ((float)a[(long)(m) * K + (k)] - a_zero)
#define LOAD_B(k, n) bp[(long)(k) * NP + (n)]
  int total[RM][RN];
  for (int i = 0; i < RM; ++i)
    for (int j = 0; j < RN; ++j) total[i][j] = 0;
  float acc[RM][RN];
  TILED_PRODUCT(acc, m0, n0, M, N, K)
  OUT_PARAMS
  for (int i = 0; i < RM; ++i) {
    const int m = TILED_ROW(m0, i);
    if (m >= M) continue;
    for (int j = 0; j < RN; ++j) {
      const int n = TILED_COL(n0, j);
      if (n < N) FINISH(Y, (long)bt * M * N + (long)m * N + n, total[i][j] + (int)acc[i][j], BIAS(n), MULT(n));
    }
  }
}
#endif  // QMTILED

// ---- DynamicQuantizeLinear ------------------------------------------------------------------
// Stage 1: work-item p reduces elements p, p + P, ... to a min and a max (NaN ignored).
// Global: (P).
__kernel void dynq_minmax_partial(__global const float* x, __global float* part, long n) {
  const int p = get_global_id(0), P = get_global_size(0);
  float lo = 0.0f, hi = 0.0f;  // the range always includes 0
  for (long i = p; i < n; i += P) {
    lo = fmin(lo, x[i]);
    hi = fmax(hi, x[i]);
  }
  part[2 * p] = lo;
  part[2 * p + 1] = hi;
}

// Stage 2 (one work-item): y_scale = (max - min) / 255 and the uint8 zero point
// saturate(round(-min / y_scale)), as the ONNX spec defines them.
__kernel void dynq_scale(__global const float* part, int P, __global float* scale, __global uchar* zero) {
  float lo = 0.0f, hi = 0.0f;
  for (int p = 0; p < P; ++p) {
    lo = fmin(lo, part[2 * p]);
    hi = fmax(hi, part[2 * p + 1]);
  }
  const float s = (hi - lo) / 255.0f;
  scale[0] = s;
  zero[0] = s > 0.0f ? (uchar)clamp(rint(-lo / s), 0.0f, 255.0f) : (uchar)0;
}
