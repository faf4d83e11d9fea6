// Winograd F(2x2, 3x3) convolution (the conv family's "winograd" variant: 3x3 taps, stride 1,
// dilation 1, one group). Each 2x2 block of outputs comes from a 4x4 input patch d:
//   Y = A^T [ (G g G^T) (.) (B^T d B) ] A
// with the weights' transform U = G g G^T made on the host at plan time, so that the 9
// multiply-adds per output of a direct 3x3 conv become 16 per 4 outputs, done as 16 GEMMs over
// the channels:  M[xi][p][m] = sum_c V[xi][p][c] U[xi][c][m]  (xi = one of the 16 positions).
//
// Tiles are numbered p = (n * TH + ty) * TWP + tx, with each tile row padded to TWP tiles (a
// multiple of TV): the padding tiles read zeros, are multiplied like the others and never stored.
//
// winograd_input: V[xi][c][p] for one tile row of one channel per work-item, TV neighbouring
// tiles at a time as vectors along the tiles (the even and odd input columns of a row segment),
// stored as whole vectors. (TV tiles per work-item had made 12,544 one-work-item groups of
// resnet18's first 3x3 convs, whose quarter-line stores neighbouring groups shared: the
// transforms of resnet18 summed 3.33 -> 2.74 ms with a row per work-item, Xeon AVX-512.)
// winograd_output: y = act(A^T M A + bias + residual) for one tile and MV output channels per
// work-item, as vectors along the channels (M's rows are contiguous in m); tiles that stick out
// past the output's last row or column store only what is inside.
//
// Build options: -DTV=4|8 (input), -DMV=4|8 (output); -DXS -DBS -DRS -DYS=F16 for half storage
// of x, bias, residual, y; -DHAS_BIAS; epilogue.cl's options with the run-time clamp bounds
// (lo, hi) and an optional residual (a null pointer when there is none).
#include "epilogue.cl"
#include "storage.cl"
#include "operand_storage.cl"


#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

#ifdef TV
#define tvec CAT(float, TV)
#if TV == 4
#define TV2 8
#elif TV == 8
#define TV2 16
#else
#error TV must be 4 or 8
#endif
#define wvec CAT(float, TV2)
#define VLOAD_T CAT(vload, TV)
#define VLOAD_W CAT(vload, TV2)
#define VSTORE_T CAT(vstore, TV)

// x: [N][C][H][W]; V: [16][C][Pp] from element v_off. Global: (TH, N * C); tile (ty, tx) reads input rows
// 2*ty - pad_t .. +3 and columns 2*tx - pad_l .. +3.
__kernel void winograd_input(__global const STORE_TYPE(XS)* restrict x, __global float* restrict V, long v_off, int C,
                             int H, int W, int TH, int TWP, int pad_t, int pad_l, int Pp) {
  const int ty = get_global_id(0), nc = get_global_id(1);
  const int n = nc / C, c = nc % C;
  const int y0 = ty * 2 - pad_t;
  const __global STORE_TYPE(XS)* plane = x + (long)nc * H * W;
  for (int tx0 = 0; tx0 < TWP; tx0 += TV) {
    const int x0 = tx0 * 2 - pad_l;
    const bool inside = x0 >= 0 && x0 + TV2 + 2 <= W;
    // d[i][j]: input row y0+i, column x0 + 2*t + j for the TV tiles t.
    tvec d[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int iy = y0 + i;
      float row[TV2 + 2];
      if (iy < 0 || iy >= H) {
#pragma unroll
        for (int j = 0; j < TV2 + 2; ++j) row[j] = 0.0f;
      } else if (inside) {
        const __global STORE_TYPE(XS)* r = plane + (long)iy * W + x0;
        CAT(vstore, TV2)(LDN(XS, TV2, r, 0), 0, row);
        row[TV2] = LD(XS, r, TV2);
        row[TV2 + 1] = LD(XS, r, TV2 + 1);
      } else {
        const __global STORE_TYPE(XS)* r = plane + (long)iy * W;
#pragma unroll
        for (int j = 0; j < TV2 + 2; ++j) row[j] = x0 + j >= 0 && x0 + j < W ? LD(XS, r, x0 + j) : 0.0f;
      }
      const wvec a = VLOAD_W(0, row), b = VLOAD_W(0, row + 2);
      d[i][0] = a.even;
      d[i][1] = a.odd;
      d[i][2] = b.even;
      d[i][3] = b.odd;
    }
    // B^T d: rows (d0 - d2, d1 + d2, d2 - d1, d1 - d3); then the same on the columns.
    tvec t4[4][4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      t4[0][j] = d[0][j] - d[2][j];
      t4[1][j] = d[1][j] + d[2][j];
      t4[2][j] = d[2][j] - d[1][j];
      t4[3][j] = d[1][j] - d[3][j];
    }
    const long stride = (long)Pp * C;
    __global float* out = V + v_off + (long)c * Pp + ((long)n * TH + ty) * TWP + tx0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      VSTORE_T(t4[i][0] - t4[i][2], 0, out + (i * 4 + 0) * stride);
      VSTORE_T(t4[i][1] + t4[i][2], 0, out + (i * 4 + 1) * stride);
      VSTORE_T(t4[i][2] - t4[i][1], 0, out + (i * 4 + 2) * stride);
      VSTORE_T(t4[i][1] - t4[i][3], 0, out + (i * 4 + 3) * stride);
    }
  }
}
#endif  // TV

#ifdef MV
#define mvec CAT(float, MV)
#define VLOAD_M CAT(vload, MV)
#define VSTORE_M CAT(vstore, MV)

// Mt: [16][Pp][M]; y: [N][M][OH][OW]. Global: (ceil(M / MV), TW, N * TH); the last channel
// block is moved down to end at M (it overlaps its neighbour, which stores the same values;
// y never aliases Mt or residual). Needs M >= MV.
__kernel void winograd_output(__global const float* restrict Mt, __global const STORE_TYPE(BS)* restrict bias,
                              __global const STORE_TYPE(RS)* restrict residual, __global STORE_TYPE(YS)* restrict y,
                              int M, int OH, int OW, int TH, int TWP, int Pp, float act_lo, float act_hi) {
  const int m0 = min((int)get_global_id(0) * MV, M - MV), tx = get_global_id(1), nty = get_global_id(2);
  const int n = nty / TH, ty = nty % TH, oy = ty * 2, ox = tx * 2;
  const long stride = (long)Pp * M;
  const __global float* in = Mt + ((long)nty * TWP + tx) * M + m0;
  mvec s[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) s[i][j] = VLOAD_M(0, in + (i * 4 + j) * stride);
  // A^T s: rows (s0 + s1 + s2, s1 - s2 - s3); then the same on the columns.
  mvec r[2][4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    r[0][j] = s[0][j] + s[1][j] + s[2][j];
    r[1][j] = s[1][j] - s[2][j] - s[3][j];
  }
#ifdef HAS_BIAS
  const mvec b = LDN(BS, MV, bias + m0, 0);
#else
  const mvec b = (mvec)0.0f;
#endif
  const long plane = (long)OH * OW, base = ((long)n * M + m0) * plane;
  const bool full = oy + 1 < OH && ox + 1 < OW;
  float o[2][2][MV];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    mvec v[2] = {r[i][0] + r[i][1] + r[i][2] + b, r[i][1] - r[i][2] - r[i][3] + b};
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      if (residual) {
        // Gathered along the channels (a plane apart); positions outside the output read nothing.
        float rv[MV];
#pragma unroll
        for (int k = 0; k < MV; ++k)
          rv[k] = full || (oy + i < OH && ox + j < OW) ? LD(RS, residual, base + k * plane + (long)(oy + i) * OW + ox + j)
                                                       : 0.0f;
        v[j] += VLOAD_M(0, rv);
      }
      v[j] = EPILOGUE_VEC(v[j], MV);
      VSTORE_M(EPILOGUE_CLAMP_VEC(v[j], mvec, act_lo, act_hi), 0, o[i][j]);
    }
  }
#pragma unroll
  for (int k = 0; k < MV; ++k) {
    __global STORE_TYPE(YS)* yk = y + base + k * plane + (long)oy * OW + ox;
    if (full) {
      STN(YS, 2, yk, 0, ((float2)(o[0][0][k], o[0][1][k])));
      STN(YS, 2, yk + OW, 0, ((float2)(o[1][0][k], o[1][1][k])));
    } else {
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j)
          if (oy + i < OH && ox + j < OW) ST(YS, yk, i * OW + j, o[i][j][k]);
    }
  }
}
#endif  // MV
