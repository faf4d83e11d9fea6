// GPU-shaped convolution (the conv family's "tiled" variant): per image and group, the implicit
// GEMM Y[M_g][P] = W[M_g][K] x im2col(X)[K][P] (K = C_g*KD*KH*KW, P the output pixels) on the
// local-memory tiles of tiled.cl; the im2col element is computed while the B tile is staged, so
// nothing is materialised. Weights are read in place ([M][C_g][KD][KH][KW]).
// Build options: tiled.cl's; -DKD -DKH -DKW -DSD -DSH -DSW -DDD -DDH -DDW as for conv.cl;
// -DHAS_BIAS; -DIN_SCALE (input channels scaled by in_scale); -DXS -DWS -DBS -DRS -DYS -DSS=F16 for
// half storage; epilogue.cl's.
#include "epilogue.cl"
#include "storage.cl"
#include "operand_storage.cl"
// The window origin of the work-item's B column (output pixel p), computed once.
#define TILED_B_COLUMN(p)                                                                   \
  const int col_z0 = (p) / (OH * OW) * SD - PD, col_y0 = (p) / OW % OH * SH - PH, col_x0 = (p) % OW * SW - PW;

#include "tiled.cl"

#define KVOL (KD * KH * KW)

#ifndef SS
#define SS F32
#endif

// Tap k of the output pixel whose input window starts at (z0, y0, x0) (0 in the padding). With
// IN_SCALE (a Mul folded into the conv: ops/conv_ops.cpp) input channel c is multiplied by sc[c];
// the padding stays 0.
static inline float conv_tap(__global const STORE_TYPE(XS)* x, __global const STORE_TYPE(SS)* sc, int k, int z0, int y0,
                      int x0, int ID, int IH, int IW) {
  const int c = k / KVOL, r = k % KVOL;
  const int iz = z0 + (r / (KH * KW)) * DD, iy = y0 + ((r / KW) % KH) * DH, ix = x0 + (r % KW) * DW;
  if (iz < 0 || iz >= ID || iy < 0 || iy >= IH || ix < 0 || ix >= IW) return 0.0f;
#ifdef IN_SCALE
  return LD(XS, x, (((long)c * ID + iz) * IH + iy) * IW + ix) * LD(SS, sc, c);
#else
  return LD(XS, x, (((long)c * ID + iz) * IH + iy) * IW + ix);
#endif
}

__kernel __attribute__((reqd_work_group_size(WX, WY, 1))) void conv_f32_tiled(
    __global const STORE_TYPE(XS)* restrict X, __global const STORE_TYPE(WS)* restrict Wt,
    __global const STORE_TYPE(BS)* restrict bias, __global const STORE_TYPE(RS)* restrict residual,
    __global STORE_TYPE(YS)* restrict Y, int C_g, int ID, int IH, int IW, int M_g, int OD, int OH, int OW, int G,
    int PD, int PH, int PW, __global const STORE_TYPE(SS)* restrict in_scale, int scale_n) {
  const int n0 = get_group_id(0) * TS, m0 = get_group_id(1) * TS, b = get_group_id(2);
  const int g = b % G, P = OD * OH * OW, K = C_g * KVOL;
  const __global STORE_TYPE(XS)* x = X + (long)b * C_g * ID * IH * IW;  // image b / G, group g
  const __global STORE_TYPE(WS)* w = Wt + (long)g * M_g * K;
  const __global STORE_TYPE(SS)* sc = in_scale + (long)(b / G) * scale_n + (long)g * C_g;
  Y += (long)b * M_g * P;
#ifdef HAS_RESIDUAL
  residual += (long)b * M_g * P;
#endif
#define LOAD_A(m, k) LD(WS, w, (long)(m) * K + (k))
#define LOAD_B(k, p) conv_tap(x, sc, k, col_z0, col_y0, col_x0, ID, IH, IW)
  float acc[RM][RN];
  TILED_PRODUCT(acc, m0, n0, M_g, P, K)
  for (int i = 0; i < RM; ++i)
    for (int j = 0; j < RN; ++j) {
      const int m = TILED_ROW(m0, i), p = TILED_COL(n0, j);
      if (m >= M_g || p >= P) continue;
      float r = acc[i][j];
#ifdef HAS_BIAS
      r += LD(BS, bias, g * M_g + m);
#endif
      const long o = (long)m * P + p;
#ifdef HAS_RESIDUAL
      r += LD(RS, residual, o);
#endif
      ST(YS, Y, o, epilogue_act(r));
    }
}
