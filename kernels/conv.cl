// Float32 convolution for CPU-like devices, as an implicit GEMM with register blocking.
//
// conv_f32_packed: a work-item computes OCB output channels (one vector) x OWB output pixels along
// one output row: per reduction step (input channel, kd, kh, kw) it loads one vector of OCB
// weights and FMAs it with OWB broadcast input pixels. Weights come packed as
// [group][channel block][C_g*KD*KH*KW][OCB], zero-padded past the group's output channels, so the
// weight stream is contiguous. Spatial dims are always 3 (1-D and 2-D convs have D = H = 1 or
// D = 1); a kernel extent of 1 makes the compiler drop the loop. Work-items whose input columns
// are all inside the image read memory directly; the others first copy the row segment they need
// into registers with zeros for the padding.
//
// conv_f32_depthwise: one input channel per group; a work-item computes one output row of one
// channel, OWB pixels (a vector) at a time, weights read directly as [C_out][1][KH][KW].
//
// Both end with the node's fused epilogue: y = act(conv + bias + residual) (see epilogue.cl).
//
// Build options:
//   -DOCB=4|8|16 -DOWB=n                 packed kernel and its weight packing, register block
//   -DDEPTHWISE -DOWB=4|8|16             depthwise kernel, pixels per vector
//   -DKD -DKH -DKW, -DSD -DSH -DSW, -DDD -DDH -DDW   kernel extents, strides, dilations
//   -DHAS_BIAS                           add bias[output channel]
//   epilogue.cl's options                fused activation / residual

#include "epilogue.cl"

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

#ifdef OCB
#define wvec CAT(float, OCB)
#define WLOAD CAT(vload, OCB)
#define WSTORE CAT(vstore, OCB)

// Input columns one work-item reads from a row: OWB pixels, KW taps.
#define SPAN ((OWB - 1) * SW + (KW - 1) * DW + 1)

// Accumulates one input row (all kw) into acc. Near the left/right border the row segment is
// first copied into registers with zeros for the padding, so the FMAs stay unconditional; `checked`
// is a literal, so inlining yields two specialised copies.
__attribute__((always_inline)) inline void conv_row(wvec* acc, const __global float* restrict xr,
                                                    const __global float* restrict wr, int iw0,
                                                    int W, const bool checked) {
  float seg[SPAN];
  if (checked) {
#pragma unroll
    for (int t = 0; t < SPAN; ++t) {
      const int iw = iw0 + t;
      const float v = xr[clamp(iw, 0, W - 1)];
      seg[t] = iw >= 0 && iw < W ? v : 0.0f;
    }
  }
#pragma unroll
  for (int kw = 0; kw < KW; ++kw) {
    const wvec w = WLOAD(kw, wr);
#pragma unroll
    for (int j = 0; j < OWB; ++j) {
      const int t = j * SW + kw * DW;
      acc[j] = fma((wvec)(checked ? seg[t] : xr[iw0 + t]), w, acc[j]);
    }
  }
}

// Global: (oc_blocks, ceil(OW/OWB), N*G*OD*OH); X is [N][G*C_g][D][H][W], Y [N][G*M_g][OD][OH][OW].
__kernel void conv_f32_packed(__global const float* restrict X, __global const float* restrict Wp,
                              __global const float* restrict bias,
                              __global const float* restrict residual, __global float* restrict Y,
                              int C_g, int D, int H, int W, int M_g, int OD, int OH, int OW, int G,
                              int oc_blocks, int pad_d, int pad_h, int pad_w) {
  const int ob = get_global_id(0);
  const int ow0 = get_global_id(1) * OWB;
  if (ob >= oc_blocks || ow0 >= OW) return;
  const int ohw = OD * OH;
  const int odh = get_global_id(2) % ohw;
  const int od = odh / OH, oh = odh % OH;
  const int ng = get_global_id(2) / ohw;
  const int g = ng % G, n = ng / G;
  const int oc0 = ob * OCB;  // within the group

  const long plane = (long)D * H * W;
  X += ((long)n * G + g) * C_g * plane;
  Wp += ((long)g * oc_blocks + ob) * C_g * (KD * KH * KW * OCB);

  wvec init = (wvec)0.0f;
#ifdef HAS_BIAS
  {
    float b[OCB];
#pragma unroll
    for (int c = 0; c < OCB; ++c) b[c] = oc0 + c < M_g ? bias[g * M_g + oc0 + c] : 0.0f;
    init = WLOAD(0, b);
  }
#endif
  wvec acc[OWB];
#pragma unroll
  for (int j = 0; j < OWB; ++j) acc[j] = init;

  const int id0 = od * SD - pad_d, ih0 = oh * SH - pad_h, iw0 = ow0 * SW - pad_w;
  const bool interior = iw0 >= 0 && iw0 + (OWB - 1) * SW + (KW - 1) * DW < W;
  for (int c = 0; c < C_g; ++c) {
    for (int kd = 0; kd < KD; ++kd) {
      const int id = id0 + kd * DD;
      if (id < 0 || id >= D) continue;
      for (int kh = 0; kh < KH; ++kh) {
        const int ih = ih0 + kh * DH;
        if (ih < 0 || ih >= H) continue;
        const __global float* xr = X + ((long)c * D + id) * H * W + (long)ih * W;
        const __global float* wr = Wp + ((c * KD + kd) * KH + kh) * (KW * OCB);
        if (interior) conv_row(acc, xr, wr, iw0, W, false);
        else conv_row(acc, xr, wr, iw0, W, true);
      }
    }
  }

  const long oplane = (long)OD * OH * OW;
  const long y0 = (((long)n * G + g) * M_g + oc0) * oplane + (long)odh * OW + ow0;
  const int pixels = min(OWB, OW - ow0), channels = min(OCB, M_g - oc0);
#pragma unroll
  for (int j = 0; j < OWB; ++j) {
    if (j < pixels) {
      float r[OCB];
      WSTORE(acc[j], 0, r);
      for (int c = 0; c < channels; ++c) {
        const long o = y0 + c * oplane + j;
#ifdef HAS_RESIDUAL
        r[c] += residual[o];
#endif
        Y[o] = epilogue_act(r[c]);
      }
    }
  }
}

// Packs W [G*M_g][C_g*KD*KH*KW] into the layout of conv_f32_packed, at run time (for weights that
// are not constants). Global: (G*oc_blocks*OCB, K).
__kernel void conv_f32_pack_weights(__global const float* restrict Wt, __global float* restrict Wp,
                                    int M_g, int K, int oc_blocks) {
  const int i = get_global_id(0), k = get_global_id(1);
  const int lane = i % OCB, blk = i / OCB;
  const int g = blk / oc_blocks, oc = (blk % oc_blocks) * OCB + lane;
  if (k >= K) return;
  Wp[((long)blk * K + k) * OCB + lane] = oc < M_g ? Wt[((long)g * M_g + oc) * K + k] : 0.0f;
}

#endif  // OCB

// ---- depthwise -------------------------------------------------------------------------------
#ifdef DEPTHWISE
#define pvec CAT(float, OWB)
#define PLOAD CAT(vload, OWB)
#define PSTORE CAT(vstore, OWB)

// One OWB-pixel block of an output row; `checked` is a literal (see conv_row).
__attribute__((always_inline)) inline pvec dw_block(const __global float* restrict X,
                                                    const float* w, float b, int ih0, int iw0,
                                                    int H, int W, const bool checked) {
  pvec acc = (pvec)b;
#pragma unroll
  for (int kh = 0; kh < KH; ++kh) {
    const int ih = ih0 + kh * DH;
    if (ih < 0 || ih >= H) continue;
    const __global float* xr = X + (long)ih * W;
#pragma unroll
    for (int kw = 0; kw < KW; ++kw) {
      pvec x;
      if (SW == 1 && !checked) {
        x = PLOAD(0, xr + iw0 + kw * DW);
      } else {
        float p[OWB];
#pragma unroll
        for (int j = 0; j < OWB; ++j) {
          const int iw = iw0 + j * SW + kw * DW;
          const float v = xr[checked ? clamp(iw, 0, W - 1) : iw];
          p[j] = !checked || (iw >= 0 && iw < W) ? v : 0.0f;
        }
        x = PLOAD(0, p);
      }
      acc = fma((pvec)w[kh * KW + kw], x, acc);
    }
  }
  return acc;
}

// A work-item computes a whole output row of one channel, OWB pixels at a time: a single block is
// too little work to amortise a PoCL work-group. Global: (OH, N*C_out); X is [N][C_in][H][W],
// output channel oc reads input channel oc / mult.
__kernel void conv_f32_depthwise(__global const float* restrict X,
                                 __global const float* restrict Wt,
                                 __global const float* restrict bias,
                                 __global const float* restrict residual,
                                 __global float* restrict Y, int C_in, int H, int W, int mult,
                                 int OH, int OW, int pad_h, int pad_w) {
  const int oh = get_global_id(0), noc = get_global_id(1);
  if (oh >= OH) return;
  const int C_out = C_in * mult;
  const int n = noc / C_out, oc = noc % C_out;
  X += ((long)n * C_in + oc / mult) * H * W;
  float w[KH * KW];
#pragma unroll
  for (int i = 0; i < KH * KW; ++i) w[i] = Wt[oc * (KH * KW) + i];
#ifdef HAS_BIAS
  const float b = bias[oc];
#else
  const float b = 0.0f;
#endif
  const int ih0 = oh * SH - pad_h;
  const long y0 = (long)noc * OH * OW + (long)oh * OW;

  for (int ow0 = 0; ow0 < OW; ow0 += OWB) {
    const int iw0 = ow0 * SW - pad_w;
    const bool interior = iw0 >= 0 && iw0 + (OWB - 1) * SW + (KW - 1) * DW < W;
    pvec acc;
    if (interior) acc = dw_block(X, w, b, ih0, iw0, H, W, false);
    else acc = dw_block(X, w, b, ih0, iw0, H, W, true);
    float r[OWB];
    PSTORE(acc, 0, r);
    const int pixels = min(OWB, OW - ow0);
    for (int j = 0; j < pixels; ++j) {
      const long o = y0 + ow0 + j;
#ifdef HAS_RESIDUAL
      r[j] += residual[o];
#endif
      Y[o] = epilogue_act(r[j]);
    }
  }
}
#endif  // DEPTHWISE
