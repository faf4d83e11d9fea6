// GPU-shaped depthwise convolution (the conv family's "depthwise_wg" variant): one work-item per
// output pixel of one output channel, work-groups of WX x WY pixels of an output plane, so that
// neighbouring work-items read neighbouring input columns (coalesced) and a GPU's SIMD lanes all
// have work. Input channel of output channel m: m / MULT; weights read in place as [M][1][KH][KW].
// 1-D and 2-D windows (D = 1). Build options: -DWX -DWY; -DKH -DKW -DSH -DSW -DDH -DDW as for
// conv.cl; -DHAS_BIAS; -DXS -DWS -DBS -DRS -DYS=F16 for half storage; epilogue.cl's.
#include "epilogue.cl"
#include "storage.cl"
#include "operand_storage.cl"

// Global: (ceil(OW/WX)*WX, ceil(OH/WY)*WY, N*M), local (WX, WY, 1).
__kernel __attribute__((reqd_work_group_size(WX, WY, 1))) void conv_f32_depthwise_wg(
    __global const STORE_TYPE(XS)* restrict X, __global const STORE_TYPE(WS)* restrict Wt,
    __global const STORE_TYPE(BS)* restrict bias, __global const STORE_TYPE(RS)* restrict residual,
    __global STORE_TYPE(YS)* restrict Y, int C, int MULT, int H, int W, int OH, int OW, int pad_h, int pad_w) {
  const int ow = get_global_id(0), oh = get_global_id(1), nm = get_global_id(2);
  if (ow >= OW || oh >= OH) return;
  const int M = C * MULT, m = nm % M, n = nm / M;
  const __global STORE_TYPE(XS)* x = X + ((long)n * C + m / MULT) * H * W;
  const __global STORE_TYPE(WS)* w = Wt + (long)m * (KH * KW);
  float acc = 0.0f;
  const int ih0 = oh * SH - pad_h, iw0 = ow * SW - pad_w;
#pragma unroll
  for (int kh = 0; kh < KH; ++kh) {
    const int ih = ih0 + kh * DH;
    if (ih < 0 || ih >= H) continue;
#pragma unroll
    for (int kw = 0; kw < KW; ++kw) {
      const int iw = iw0 + kw * DW;
      if (iw >= 0 && iw < W) acc = fma(LD(XS, x, (long)ih * W + iw), LD(WS, w, kh * KW + kw), acc);
    }
  }
#ifdef HAS_BIAS
  acc += LD(BS, bias, m);
#endif
  const long o = (long)nm * OH * OW + (long)oh * OW + ow;
#ifdef HAS_RESIDUAL
  acc += LD(RS, residual, o);
#endif
  ST(YS, Y, o, epilogue_act(acc));
}
