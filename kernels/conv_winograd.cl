// Winograd F(2x2, 3x3) convolution (the conv family's "winograd" variant: 3x3 taps, stride 1,
// dilation 1, one group). Each 2x2 block of outputs comes from a 4x4 input patch d:
//   Y = A^T [ (G g G^T) (.) (B^T d B) ] A
// with the weights' transform U = G g G^T made on the host at plan time, so that the 9
// multiply-adds per output of a direct 3x3 conv become 16 per 4 outputs, done as 16 GEMMs over
// the channels:  M[xi][p][m] = sum_c V[xi][p][c] U[xi][c][m]  (xi = one of the 16 positions).
//
// winograd_input: V[xi][c][p] for every tile p (image, tile row, tile column) and channel c
// (tiles fastest, so that neighbouring work-items read neighbouring columns and store contiguously).
// winograd_output: y = act(A^T M A + bias + residual) for every tile and output channel; tiles
// that stick out past the output's last row or column store only what is inside.
//
// Build options: -DXS -DBS -DRS -DYS=F16 for half storage of x, bias, residual, y;
// -DHAS_BIAS; epilogue.cl's options.
#include "epilogue.cl"
#include "storage.cl"
#include "operand_storage.cl"

// x: [N][C][H][W]; V: [16][C][P], P = N * TH * TW tiles, tile (ty, tx) reading input rows
// 2*ty - pad_t .. +3 and columns 2*tx - pad_l .. +3.
__kernel void winograd_input(__global const STORE_TYPE(XS)* restrict x, __global float* restrict V, int C, int H,
                             int W, int TH, int TW, int pad_t, int pad_l, int P) {
  const int p = get_global_id(0), c = get_global_id(1);
  if (c >= C || p >= P) return;
  const int n = p / (TH * TW), t = p % (TH * TW), y0 = (t / TW) * 2 - pad_t, x0 = (t % TW) * 2 - pad_l;
  const __global STORE_TYPE(XS)* plane = x + ((long)n * C + c) * H * W;
  float d[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      const int iy = y0 + i, ix = x0 + j;
      d[i][j] = iy >= 0 && iy < H && ix >= 0 && ix < W ? LD(XS, plane, (long)iy * W + ix) : 0.0f;
    }
  // B^T d: rows (d0 - d2, d1 + d2, d2 - d1, d1 - d3); then the same on the columns.
  float t4[4][4];
  for (int j = 0; j < 4; ++j) {
    t4[0][j] = d[0][j] - d[2][j];
    t4[1][j] = d[1][j] + d[2][j];
    t4[2][j] = d[2][j] - d[1][j];
    t4[3][j] = d[1][j] - d[3][j];
  }
  const long stride = (long)P * C;
  __global float* out = V + (long)c * P + p;
  for (int i = 0; i < 4; ++i) {
    out[(i * 4 + 0) * stride] = t4[i][0] - t4[i][2];
    out[(i * 4 + 1) * stride] = t4[i][1] + t4[i][2];
    out[(i * 4 + 2) * stride] = t4[i][2] - t4[i][1];
    out[(i * 4 + 3) * stride] = t4[i][1] - t4[i][3];
  }
}

// M: [16][P][M_out]; y: [N][M_out][OH][OW].
__kernel void winograd_output(__global const float* restrict Mt, __global const STORE_TYPE(BS)* restrict bias,
                              __global const STORE_TYPE(RS)* restrict residual, __global STORE_TYPE(YS)* restrict y,
                              int M, int OH, int OW, int TH, int TW, int P) {
  const int m = get_global_id(0), p = get_global_id(1);
  if (m >= M || p >= P) return;
  const int n = p / (TH * TW), t = p % (TH * TW), oy = (t / TW) * 2, ox = (t % TW) * 2;
  const long stride = (long)P * M;
  const __global float* in = Mt + (long)p * M + m;
  float s[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) s[i][j] = in[(i * 4 + j) * stride];
  // A^T s: rows (s0 + s1 + s2, s1 - s2 - s3); then the same on the columns.
  float r[2][4];
  for (int j = 0; j < 4; ++j) {
    r[0][j] = s[0][j] + s[1][j] + s[2][j];
    r[1][j] = s[1][j] - s[2][j] - s[3][j];
  }
#ifdef HAS_BIAS
  const float b = LD(BS, bias, m);
#else
  const float b = 0.0f;
#endif
  const long base = ((long)n * M + m) * OH * OW;
  for (int i = 0; i < 2; ++i) {
    const float v[2] = {r[i][0] + r[i][1] + r[i][2] + b, r[i][1] - r[i][2] - r[i][3] + b};
    for (int j = 0; j < 2; ++j) {
      if (oy + i >= OH || ox + j >= OW) continue;
      const long o = base + (long)(oy + i) * OW + ox + j;
      float val = v[j];
#ifdef HAS_RESIDUAL
      val += LD(RS, residual, o);
#endif
      ST(YS, y, o, epilogue_act(val));
    }
  }
}
