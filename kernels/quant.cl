// 8-bit integer kernels: convolution and matrix product with int32 accumulation (QLinearConv,
// ConvInteger, QLinearMatMul, MatMulInteger and the DequantizeLinear -> Conv/Gemm/MatMul ->
// QuantizeLinear chains the fuse_qdq pass turns into them), their weight packing, and the min/max
// reduction of DynamicQuantizeLinear. QuantizeLinear and DequantizeLinear themselves are
// elementwise ops (kernels/elementwise.cl, OP_QUANTIZE / OP_DEQUANTIZE).
//
// Arithmetic: every product is (x - x_zero_point) * (w - w_zero_point) in int, summed in int32;
// weights are packed as shorts with their zero point already subtracted (so int8 and uint8 weights
// share one kernel). A quantized output is requantized as ONNX Runtime does:
//   y = saturate(round_half_even((acc + bias) * (x_scale * w_scale[c] / y_scale)) + y_zero_point)
// with a fused activation applied before rounding (in the scaled domain when the activation is
// positively homogeneous, i.e. Relu/LeakyRelu/Clip with bounds pre-divided by y_scale; else on
// the real value).
//
// Build options:
//   -DXT=char|uchar -DYT=char|uchar|int   input and output element types
//   -DOUT_I32                            output the raw int32 sums (ConvInteger, MatMulInteger)
//   -DOUT_F32                            output the real value as float (no requantization)
//   -DQMIN=.. -DQMAX=..                  the quantized output's range
//   -DPACK_WEIGHTS -DWT=char|uchar       the weight packing kernels (-DWZ_PER_CHANNEL: one zero
//                                        point per output channel / column)
//   -DW_PER_CHANNEL                      w_scale holds one scale per output channel / column
//   -DHAS_BIAS                           add an int32 bias per output channel / column
//   -DEPILOGUE_ACT=.. (activation.cl)    fused activation; -DACT_SCALED: apply it to the scaled
//                                        value, else to the real value (multiplied by y_scale)
//   conv: -DOCB=4|8|16 -DOWB=n and the window (-DKD.. -DSD.. -DDD..)
//   matmul: -DNB=4|8|16 -DMB=n
#include "activation.cl"

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

#ifndef QMIN
#define QMIN 0
#define QMAX 255
#endif
#ifndef ACT_ALPHA
#define ACT_ALPHA 0.0f
#endif
#ifndef ACT_BETA
#define ACT_BETA 0.0f
#endif

// Requantizes one accumulator: `m` is x_scale * w_scale / y_scale, `ys` y_scale, `yz` the output
// zero point. The clamp before rounding keeps the float -> int conversion defined.
inline int requantize(int acc, float m, float ys, int yz) {
  float v = (float)acc * m;
#ifdef EPILOGUE_ACT
#ifdef ACT_SCALED
  v = EPILOGUE_ACT(v, ACT_ALPHA, ACT_BETA);
#else
  v = EPILOGUE_ACT(v * ys, ACT_ALPHA, ACT_BETA) / ys;
#endif
#endif
  v = clamp(v, (float)(QMIN - yz), (float)(QMAX - yz));
  return (int)rint(v) + yz;
}

#if defined(OUT_I32)
#define STORE_RESULT(Y, o, acc, m, ys, yz) (Y[o] = (acc))
#elif defined(OUT_F32)
inline float real_value(int acc, float xw) {
  float v = (float)acc * xw;
#ifdef EPILOGUE_ACT
  v = EPILOGUE_ACT(v, ACT_ALPHA, ACT_BETA);
#endif
  return v;
}
#define STORE_RESULT(Y, o, acc, m, ys, yz) (Y[o] = real_value(acc, m))
#else
#define STORE_RESULT(Y, o, acc, m, ys, yz) (Y[o] = (YT)requantize(acc, m, ys, yz))
#endif

// The multiplier of output channel c: x_scale * w_scale[c] / y_scale for a quantized output,
// x_scale * w_scale[c] for a float one.
inline float out_multiplier(__global const float* xs, __global const float* ws, __global const float* ys,
                            int c) {
#ifdef W_PER_CHANNEL
  const float w = ws[c];
#else
  const float w = ws[0];
#endif
#if defined(OUT_F32)
  return xs[0] * w;
#else
  return xs[0] * w / ys[0];
#endif
}

// ---- weight packing -------------------------------------------------------------------------
// W [G*M_g][K] (K = C_g * taps) of type WT -> [G][blocks][K][OCB] shorts, minus the zero point of
// its output channel (per channel when -DWZ_PER_CHANNEL), zero past M_g. Global: (G*blocks*OCB, K).
#ifdef PACK_WEIGHTS
#ifdef OCB
__kernel void qconv_pack_weights(__global const WT* w, __global const WT* wz, __global short* wp, int M_g, int K,
                                 int blocks) {
  const int r = get_global_id(0), k = get_global_id(1);
  const int lane = r % OCB, gb = r / OCB;
  const int g = gb / blocks, oc = (gb % blocks) * OCB + lane;
  short v = 0;
  if (oc < M_g) {
    const int m = g * M_g + oc;
#ifdef WZ_PER_CHANNEL
    v = (short)((int)w[(long)m * K + k] - (int)wz[m]);
#else
    v = (short)((int)w[(long)m * K + k] - (int)wz[0]);
#endif
  }
  wp[((long)gb * K + k) * OCB + lane] = v;
}
#endif

// B [count][K][N] of type WT -> [count][K][NP] shorts (NP = N rounded up to NB), minus the zero
// point of its column, zero past N. Global: (NP, K, count).
__kernel void qmatmul_pack_b(__global const WT* b, __global const WT* bz, __global short* bp, int K, int N, int NP) {
  const int n = get_global_id(0), k = get_global_id(1), j = get_global_id(2);
  short v = 0;
  if (n < N) {
#ifdef WZ_PER_CHANNEL
    v = (short)((int)b[((long)j * K + k) * N + n] - (int)bz[n]);
#else
    v = (short)((int)b[((long)j * K + k) * N + n] - (int)bz[0]);
#endif
  }
  bp[((long)j * K + k) * NP + n] = v;
}
#endif

// ---- convolution ----------------------------------------------------------------------------
#if defined(OCB) && !defined(PACK_WEIGHTS)
#define ivec CAT(int, OCB)
#define svec_load CAT(vload, OCB)
#define ivec_convert CAT(convert_int, OCB)
#define SPAN ((OWB - 1) * SW + (KW - 1) * DW + 1)

// Global: (oc_blocks, ceil(OW/OWB), N*G*OD*OH), one work-item per OCB channels x OWB pixels of one
// output row; X is [N][G*C_g][D][H][W], Y [N][G*M_g][OD][OH][OW]. Padding contributes nothing to
// the sums (it stands for the zero point).
__kernel void qconv(__global const XT* restrict X, __global const short* restrict Wp,
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
  const int x_zero = (int)xz[0];

  const long plane = (long)D * H * W;
  X += ((long)n * G + g) * C_g * plane;
  Wp += ((long)g * oc_blocks + ob) * C_g * (KD * KH * KW * OCB);

  ivec acc[OWB];
#pragma unroll
  for (int j = 0; j < OWB; ++j) acc[j] = (ivec)0;

  const int id0 = od * SD - pad_d, ih0 = oh * SH - pad_h, iw0 = ow0 * SW - pad_w;
  for (int c = 0; c < C_g; ++c) {
    for (int kd = 0; kd < KD; ++kd) {
      const int id = id0 + kd * DD;
      if (id < 0 || id >= D) continue;
      for (int kh = 0; kh < KH; ++kh) {
        const int ih = ih0 + kh * DH;
        if (ih < 0 || ih >= H) continue;
        const __global XT* xr = X + ((long)c * D + id) * H * W + (long)ih * W;
        const __global short* wr = Wp + ((c * KD + kd) * KH + kh) * (KW * OCB);
        int seg[SPAN];
#pragma unroll
        for (int t = 0; t < SPAN; ++t) {
          const int iw = iw0 + t;
          seg[t] = iw >= 0 && iw < W ? (int)xr[iw] - x_zero : 0;
        }
#pragma unroll
        for (int kw = 0; kw < KW; ++kw) {
          const ivec w = ivec_convert(svec_load(kw, wr));
#pragma unroll
          for (int j = 0; j < OWB; ++j) acc[j] += (ivec)(seg[j * SW + kw * DW]) * w;
        }
      }
    }
  }

  const long oplane = (long)OD * OH * OW;
  const long y0 = (((long)n * G + g) * M_g + oc0) * oplane + (long)odh * OW + ow0;
  const int pixels = min(OWB, OW - ow0), channels = min(OCB, M_g - oc0);
#if !defined(OUT_I32)
  const float y_scale = ys[0];
  const int y_zero = (int)yzp[0];
#else
  const float y_scale = 0;
  const int y_zero = 0;
#endif
  for (int c = 0; c < channels; ++c) {
    const int m = g * M_g + oc0 + c;
#ifdef HAS_BIAS
    const int b = bias[m];
#else
    const int b = 0;
#endif
#if !defined(OUT_I32)
    const float mult = out_multiplier(xs, ws, ys, m);
#else
    const float mult = 0;
#endif
    int a[OWB];
#pragma unroll
    for (int j = 0; j < OWB; ++j) {
      int r[OCB];
      CAT(vstore, OCB)(acc[j], 0, r);
      a[j] = r[c];
    }
#pragma unroll
    for (int j = 0; j < OWB; ++j)
      if (j < pixels) STORE_RESULT(Y, y0 + c * oplane + j, a[j] + b, mult, y_scale, y_zero);
  }
}
#endif  // OCB

// ---- matrix product -------------------------------------------------------------------------
#if defined(NB) && !defined(PACK_WEIGHTS)
#define nvec CAT(int, NB)
#define nvec_load CAT(vload, NB)
#define nvec_convert CAT(convert_int, NB)

// Y[b] = A[b] (M x K, rows at a_off[b]) x Bp[b_index[b]] (K x NP packed shorts), per output column
// requantized. Global: (NP/NB, ceil(M/MB), batch); `offs` holds per batch a_off, b_index.
__kernel void qmatmul(__global const XT* restrict A, __global const short* restrict Bp,
                      __global const int* restrict bias, __global const float* xs, __global const XT* az,
                      __global const float* ws, __global const float* ys, __global const YT* yzp,
                      __global YT* restrict Y, __global const long* offs, int M, int N, int K, int NP) {
  const int nb = get_global_id(0), m0 = get_global_id(1) * MB, bt = get_global_id(2);
  if (m0 >= M) return;
  const int n0 = nb * NB;
  const __global XT* a = A + offs[2 * bt];
  const __global short* bp = Bp + offs[2 * bt + 1] * K * NP + n0;
  const int a_zero = (int)az[0];
  const int rows = min(MB, M - m0);

  nvec acc[MB];
#pragma unroll
  for (int i = 0; i < MB; ++i) acc[i] = (nvec)0;
  for (int k = 0; k < K; ++k) {
    const nvec w = nvec_convert(nvec_load(0, bp + (long)k * NP));
#pragma unroll
    for (int i = 0; i < MB; ++i) {
      const int row = min(m0 + i, M - 1);
      acc[i] += (nvec)((int)a[(long)row * K + k] - a_zero) * w;
    }
  }

#if !defined(OUT_I32)
  const float y_scale = ys[0];
  const int y_zero = (int)yzp[0];
#else
  const float y_scale = 0;
  const int y_zero = 0;
#endif
  const int cols = min(NB, N - n0);
  for (int c = 0; c < cols; ++c) {
    const int col = n0 + c;
#ifdef HAS_BIAS
    const int b = bias[col];
#else
    const int b = 0;
#endif
#if !defined(OUT_I32)
    const float mult = out_multiplier(xs, ws, ys, col);
#else
    const float mult = 0;
#endif
#pragma unroll
    for (int i = 0; i < MB; ++i) {
      if (i < rows) {
        int r[NB];
        CAT(vstore, NB)(acc[i], 0, r);
        STORE_RESULT(Y, (long)bt * M * N + (long)(m0 + i) * N + col, r[c] + b, mult, y_scale, y_zero);
      }
    }
  }
}
#endif  // NB

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
__kernel void qrequant_into(__global const XT* restrict x, __global YT* restrict y, long n, long in_block,
                            long out_block, long offset, float xs, int xz, float ys, int yz) {
  const long i = get_global_id(0);
  if (i >= n) return;
  const long o = i / in_block, r = i % in_block;
  const float v = (float)((int)x[i] - xz) * xs;
  y[o * out_block + offset + r] = (YT)clamp(rint(v / ys) + (float)yz, (float)QMIN, (float)QMAX);
}
#endif

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
