// Float32 ConvTranspose, second half: the product cols[n][g] = X[n][g]^T x W[g], laid out as
// [D*H*W][M_g*KD*KH*KW], comes from the GEMM kernel (kernels/gemm.cl); this gathers every output
// element from the columns that scatter into it.
//
// Build options: -DHAS_BIAS; -DBS=F16 / -DYS=F16: bias / Y stored as half (storage.cl). The
// columns are float32 scratch.
#include "storage.cl"
#include "operand_storage.cl"

// One work-item per output element; global: (OW, OD*OH, N*G*M_g). p holds the geometry (see
// ops/conv_ops.cpp).
__kernel void conv_transpose_f32_col2im(__global const float* restrict cols,
                                        __global const STORE_TYPE(BS)* restrict bias,
                                        __global STORE_TYPE(YS)* restrict Y,
                                        __global const int* restrict p) {
  const int D = p[0], H = p[1], W = p[2], OD = p[3], OH = p[4], OW = p[5];
  const int kd_n = p[6], kh_n = p[7], kw_n = p[8], sd = p[9], sh = p[10], sw = p[11];
  const int dd = p[12], dh = p[13], dw = p[14], pd = p[15], ph = p[16], pw = p[17];
  const int M_g = p[18], G = p[19];
  const int ow = get_global_id(0), odh = get_global_id(1), t = get_global_id(2);
  if (ow >= OW || odh >= OD * OH) return;
  const int od = odh / OH, oh = odh % OH;
  const int oc = t % M_g, ng = t / M_g;  // ng = n*G + g
  const int Q = M_g * kd_n * kh_n * kw_n;
  const __global float* c = cols + (long)ng * D * H * W * Q + (long)oc * kd_n * kh_n * kw_n;

#ifdef HAS_BIAS
  float acc = LD(BS, bias, (ng % G) * M_g + oc);
#else
  float acc = 0.0f;
#endif
  for (int kd = 0; kd < kd_n; ++kd) {
    const int td = od + pd - kd * dd;
    if (td < 0 || td % sd) continue;
    const int id = td / sd;
    if (id >= D) continue;
    for (int kh = 0; kh < kh_n; ++kh) {
      const int th = oh + ph - kh * dh;
      if (th < 0 || th % sh) continue;
      const int ih = th / sh;
      if (ih >= H) continue;
      for (int kw = 0; kw < kw_n; ++kw) {
        const int tw = ow + pw - kw * dw;
        if (tw < 0 || tw % sw) continue;
        const int iw = tw / sw;
        if (iw >= W) continue;
        acc += c[(((long)id * H + ih) * W + iw) * Q + (kd * kh_n + kh) * kw_n + kw];
      }
    }
  }
  ST(YS, Y, (long)t * OD * OH * OW + (long)odh * OW + ow, acc);
}
