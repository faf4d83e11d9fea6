// Float32 ConvTranspose, second half: the product cols[n][g] = X[n][g]^T x W[g], laid out as
// [D*H*W][M_g*KD*KH*KW], comes from the GEMM kernel (kernels/gemm.cl); this gathers every output
// element from the columns that scatter into it.
//
// Build options: -DHAS_BIAS; -DBS=F16 / -DYS=F16: bias / Y stored as half (storage.cl). The
// columns are float32 scratch.
#include "storage.cl"
#include "operand_storage.cl"

// Kernel size equal to the stride, no dilation, every output inside the scattered area (no
// output_padding), two spatial dims: each output element has exactly one source column. A
// work-item takes one input row of one image and group and writes the KH output rows it
// scatters into, plane by plane, in order; its W*Q columns stay in cache. Global: (H, N*G).
// p as below. Chosen for CPU devices, where this replaces a division walk per output element and
// reads strided by Q.
__kernel void conv_transpose_f32_scatter2d(__global const float* restrict cols,
                                           __global const STORE_TYPE(BS)* restrict bias,
                                           __global STORE_TYPE(YS)* restrict Y,
                                           __global const int* restrict p) {
  const int H = p[1], W = p[2], OH = p[4], OW = p[5], KH = p[7], KW = p[8];
  const int PH = p[16], PW = p[17], M_g = p[18], G = p[19];
  const int ih = get_global_id(0), ng = get_global_id(1);
  if (ih >= H) return;
  const int Q = M_g * KH * KW;
  const __global float* c = cols + ((long)ng * H + ih) * W * Q;
  for (int oc = 0; oc < M_g; ++oc) {
#ifdef HAS_BIAS
    const float b = LD(BS, bias, (ng % G) * M_g + oc);
#else
    const float b = 0.0f;
#endif
    for (int kh = 0; kh < KH; ++kh) {
      const int oh = ih * KH + kh - PH;
      if (oh < 0 || oh >= OH) continue;
      const long row = ((long)(ng * M_g + oc) * OH + oh) * OW;
      const __global float* cr = c + (oc * KH + kh) * KW;
      for (int iw = 0; iw < W; ++iw)
        for (int kw = 0; kw < KW; ++kw) {
          const int ow = iw * KW + kw - PW;
          if (ow >= 0 && ow < OW) ST(YS, Y, row + ow, cr[iw * Q + kw] + b);
        }
    }
  }
}

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
