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
// conv_f32_pointwise: 1x1 convs (stride 1, no padding), the same packed weights, but vectors
// along the pixels, so that outputs are stored as whole vectors.
//
// conv_f32_pixvec: short reductions (3-channel stems): vectors along a row's output pixels, the
// input from a copy with its column padding made real.
//
// conv_f32_depthwise: one input channel per group; a work-item computes a band of output rows of
// one or more channels, 8 pixels per vector, with the row geometry compiled in; weights read
// directly as [C_out][1][KH][KW].
//
// All end with the node's fused epilogue: y = act(conv + bias + residual) (see epilogue.cl); the
// packed and pointwise kernels take Relu/Clip bounds and the residual at run time.
//
// Build options:
//   -DOCB=4|8|16 -DOWB=n [-DOCV=2]      packed kernel and its weight packing, register block
//                                        (OCV vectors of OCB channels x OWB pixels)
//   -DOCB=4|8 -DPOINTWISE -DPXB=8|16 -DPXV=n   pointwise kernel: OCB channels x PXV vectors of
//                                        PXB pixels (and the weight packing)
//   -DOCB=4|8 -DPIXVEC -DPXV=n           pixvec kernel: OCB channels x PXV vectors of 16 pixels
//                                        of a row (and the weight packing)
//   -DDEPTHWISE -DOWB=4|8|16             depthwise kernel, pixels per vector
//   -DIN_W -DOUT_W -DPAD_W               depthwise: input and output row width, left padding
//                                        (without IN_W and OUT_W: the widths at run time)
//   -DDW_RING                            depthwise, widths compiled in: input rows converted
//                                        once into a ring of floats (float16 input on CPUs)
//   -DKD -DKH -DKW, -DSD -DSH -DSW, -DDD -DDH -DDW   kernel extents, strides, dilations
//   -DHAS_BIAS                           add bias[output channel]
//   -DIN_SCALE                           input channels multiplied by in_scale (a fused Mul)
//   -DPAD_ROWS_SCALED                    conv_pad_rows_scaled (the padded copy with that scale)
//   -DPLANE_MEAN                         depthwise: also store each output plane's mean (a fused
//                                        GlobalAveragePool; the work-item must own whole planes)
//   -DPLANE_MEAN_ONLY                    conv_plane_mean (the same means as a launch of its own)
//   -DXS -DPS -DWS -DBS -DRS -DYS -DSS -DMS=F16  an operand stored as half (see storage.cl)
//   -DCPU_PREFETCH=n                     packed and pointwise kernels: prefetch the input rows of
//                                        the reduction step n steps ahead (PoCL on x86 CPUs)
//   epilogue.cl's options                fused activation / residual

#include "epilogue.cl"
#include "storage.cl"
#include "operand_storage.cl"

// Storage of each float operand (kernels/storage.cl): X input, P packed weights, W raw weights
// (depthwise, packing), B bias, R residual, Y output. Arithmetic is in float.
#define XT STORE_TYPE(XS)
#define PT STORE_TYPE(PS)
#define WT STORE_TYPE(WS)
#define BT STORE_TYPE(BS)
#define RT STORE_TYPE(RS)
#define YT STORE_TYPE(YS)
// The fused per-channel input scale (IN_SCALE; SS its storage). Kernels take it as an argument in
// every build: a dummy where the conv has none.
#ifndef SS
#define SS F32
#endif
#define SCT STORE_TYPE(SS)
// The plane means of a fused GlobalAveragePool (PLANE_MEAN, PLANE_MEAN_ONLY; MS their storage).
#ifndef MS
#define MS F32
#endif
#define MT STORE_TYPE(MS)

#if defined(PLANE_MEAN) || defined(PLANE_MEAN_ONLY)
// The mean of an output plane: pool.cl's summation (storage.cl), so a fused GlobalAveragePool
// gives the value the pool kernel would.
DEFINE_PLANE_MEAN(plane_mean, YS, YT)
#endif

#ifdef PLANE_MEAN_ONLY
// M[p] = the mean of plane p of Y (planes of `plane` values), one work-item per plane.
__kernel void conv_plane_mean(__global const YT* restrict Y, __global MT* restrict M, long plane, long planes) {
  const long p = get_global_id(0);
  if (p < planes) ST(MS, M, p, plane_mean(Y + p * plane, plane));
}
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

// Software prefetch of the input rows a later reduction step reads (CPU_PREFETCH steps ahead).
// The packed and pointwise kernels read each input channel's row at a stride of a whole plane
// (NCHW): every step's loads miss L1, and the CPU's own stride prefetcher does not follow strides
// of more than 2 KB (a 48x48 plane is 9 KB). A 1x1 conv over 256 channels of 48x48: 8.1 -> 7.4 ms
// for four of them on one core (2-core Intel Xeon, AVX-512, PoCL 3.1); the same loop in C with
// intrinsics 147 -> 163 GFLOP/s. PoCL's OpenCL `prefetch()` compiles to nothing there, so this is
// clang's __builtin_prefetch, which only the host passes for PoCL's CPU drivers (DeviceCaps::
// cpu_prefetch). The address is clamped to the operand's last channel: nothing past the buffer is
// touched even where a prefetch could fault.
#ifdef CPU_PREFETCH
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p)
#endif

#ifdef OCB
#define wvec CAT(float, OCB)
#define WLOAD CAT(vload, OCB)
#define WSTORE CAT(vstore, OCB)

#if !defined(POINTWISE) && !defined(PIXVEC)
// Channel vectors per work-item (OCV x OCB output channels): a second vector reuses every input
// broadcast twice and doubles the independent accumulators.
#ifndef OCV
#define OCV 1
#endif
#define OCT (OCB * OCV)
// Input columns one work-item reads from a row: OWB pixels, KW taps.
#define SPAN ((OWB - 1) * SW + (KW - 1) * DW + 1)

// Accumulates one input row (all kw) into acc. The row segment is first read into registers,
// so that one copy of the unrolled FMAs serves every work-item (two copies made PoCL's code
// generation, which runs at a kernel's first launch, take longer without being faster). With
// CHECK_COLUMNS, work-items whose segment leaves the row (`interior` false) read it with clamped
// loads and zeros for the padding; without it the host guarantees that every segment lies inside
// the row (no column padding, or the input copied with its padding made real: ops/conv_ops.cpp).
// With IN_SCALE every value read is multiplied by `sc`, its channel's fused scale (the padding
// stays 0, as before the Mul was fused).
__attribute__((always_inline)) static inline void conv_row(wvec* acc, const __global XT* restrict xr,
                                                    const __global PT* restrict wr, int iw0,
                                                    int W, const bool interior, const float sc) {
  float seg[SPAN];
#ifdef IN_SCALE
#define SCALED(v) ((v) * sc)
#else
#define SCALED(v) (v)
#endif
#ifdef CHECK_COLUMNS
  if (!interior) {
#pragma unroll
    for (int t = 0; t < SPAN; ++t) {
      const int iw = iw0 + t;
      const float v = SCALED(LD(XS, xr, clamp(iw, 0, W - 1)));
      seg[t] = iw >= 0 && iw < W ? v : 0.0f;
    }
  } else
#endif
  {
#ifdef XS_HALF
    // Halves converted eight and four at a time (one conversion instruction each where the CPU
    // has them: kernels/storage.cl) rather than one by one.
    int t = 0;
#pragma unroll
    for (; t + 8 <= SPAN; t += 8) vstore8(SCALED(LDN(XS, 8, xr + iw0 + t, 0)), 0, seg + t);
#pragma unroll
    for (; t + 4 <= SPAN; t += 4) vstore4(SCALED(LDN(XS, 4, xr + iw0 + t, 0)), 0, seg + t);
#pragma unroll
    for (; t < SPAN; ++t) seg[t] = SCALED(LD(XS, xr, iw0 + t));
#else
#pragma unroll
    for (int t = 0; t < SPAN; ++t) seg[t] = SCALED(LD(XS, xr, iw0 + t));
#endif
  }
#undef SCALED
#if KW * OCV <= 8
  // Pixels outer, all of the row's weights in registers: each broadcast meets its weights at once.
  // With taps outer (below) LLVM kept every broadcast of the segment live across the taps and
  // spilled accumulators (3x3 stride-2 stems: 17 broadcasts + 16 accumulators).
  wvec w[KW * OCV];
#pragma unroll
  for (int k = 0; k < KW * OCV; ++k) w[k] = LDN(PS, OCB, wr, k);
#pragma unroll
  for (int j = 0; j < OWB; ++j) {
#pragma unroll
    for (int kw = 0; kw < KW; ++kw) {
      const wvec x = (wvec)(seg[j * SW + kw * DW]);
#pragma unroll
      for (int v = 0; v < OCV; ++v) acc[v * OWB + j] = fma(x, w[kw * OCV + v], acc[v * OWB + j]);
    }
  }
#else
#pragma unroll
  for (int kw = 0; kw < KW; ++kw) {
    wvec w[OCV];
#pragma unroll
    for (int v = 0; v < OCV; ++v) w[v] = LDN(PS, OCB, wr, kw * OCV + v);
#pragma unroll
    for (int j = 0; j < OWB; ++j) {
      const int t = j * SW + kw * DW;
      const wvec x = (wvec)(seg[t]);
#pragma unroll
      for (int v = 0; v < OCV; ++v) acc[v * OWB + j] = fma(x, w[v], acc[v * OWB + j]);
    }
  }
#endif
}

// Global: (oc_blocks, ceil(OW/OWB), N*G*OD*OH), or with rows_first != 0 (N*G*OD*OH, ceil(OW/OWB),
// oc_blocks) so that neighbouring work-items share a block's weights (a run-time argument: one
// program serves both orders); X is [N][G*C_g][D][H][W],
// Y [N][G*M_g][OD][OH][OW].
__kernel void conv_f32_packed(__global const XT* restrict X, __global const PT* restrict Wp,
                              __global const BT* restrict bias,
                              __global const RT* restrict residual, __global YT* restrict Y,
                              int C_g, int D, int H, int W, int M_g, int OD, int OH, int OW, int G,
                              int oc_blocks, int pad_d, int pad_h, int pad_w, float act_lo,
                              float act_hi, int rows_first, __global const SCT* restrict in_scale,
                              int scale_n) {
  const int ob = get_global_id(rows_first ? 2 : 0);
  const int nodh = get_global_id(rows_first ? 0 : 2);
  const int ow0 = get_global_id(1) * OWB;
  if (ob >= oc_blocks || ow0 >= OW) return;
  const int ohw = OD * OH;
  const int odh = nodh % ohw;
  const int od = odh / OH, oh = odh % OH;
  const int ng = nodh / ohw;
  const int g = ng % G, n = ng / G;
  const int oc0 = ob * OCT;  // within the group

  const long plane = (long)D * H * W;
  X += ((long)n * G + g) * C_g * plane;
  Wp += ((long)g * oc_blocks + ob) * C_g * (KD * KH * KW * OCT);

  wvec acc[OCV * OWB];
#pragma unroll
  for (int v = 0; v < OCV; ++v) {
    wvec init = (wvec)0.0f;
#ifdef HAS_BIAS
    float b[OCB];
#pragma unroll
    for (int c = 0; c < OCB; ++c) {
      const int oc = oc0 + v * OCB + c;
      b[c] = oc < M_g ? LD(BS, bias, g * M_g + oc) : 0.0f;
    }
    init = WLOAD(0, b);
#endif
#pragma unroll
    for (int j = 0; j < OWB; ++j) acc[v * OWB + j] = init;
  }

  const int id0 = od * SD - pad_d, ih0 = oh * SH - pad_h, iw0 = ow0 * SW - pad_w;
#ifdef CHECK_COLUMNS
  const bool interior = iw0 >= 0 && iw0 + (OWB - 1) * SW + (KW - 1) * DW < W;
#else
  const bool interior = true;
#endif
#ifdef IN_SCALE
  in_scale += (long)n * scale_n + (long)g * C_g;
#endif
  // The taps whose rows lie inside the input, found once: the others read only padding (zeros).
  // The loops below then step pointers with no bounds test per row: on AVX-512 CPUs the 512-bit
  // FMAs take ports 0, 1 and 5, which scalar address and loop arithmetic also need (a row's 48
  // FMAs came with ~20 scalar operations before). The taps are summed in the same order as
  // before: the same bits.
  int kd_lo = 0, kd_hi = KD, kh_lo = 0, kh_hi = KH;
  while (kd_lo < KD && id0 + kd_lo * DD < 0) ++kd_lo;
  while (kd_hi > kd_lo && id0 + (kd_hi - 1) * DD >= D) --kd_hi;
  while (kh_lo < KH && ih0 + kh_lo * DH < 0) ++kh_lo;
  while (kh_hi > kh_lo && ih0 + (kh_hi - 1) * DH >= H) --kh_hi;
  const long row_step = (long)DH * W, depth_step = (long)DD * H * W;
  const __global XT* xc = X + (long)(id0 + kd_lo * DD) * H * W + (long)(ih0 + kh_lo * DH) * W;
  const __global PT* wc = Wp + (kd_lo * KH + kh_lo) * (KW * OCT);
  for (int c = 0; c < C_g; ++c, xc += plane, wc += KD * KH * KW * OCT) {
#ifdef IN_SCALE
    const float sc = LD(SS, in_scale, c);
#else
    const float sc = 1.0f;
#endif
#ifdef CPU_PREFETCH
    const long ahead = (long)(min(c + CPU_PREFETCH, C_g - 1) - c) * plane;
#endif
    const __global XT* xd = xc;
    const __global PT* wd = wc;
    for (int kd = kd_lo; kd < kd_hi; ++kd, xd += depth_step, wd += KH * KW * OCT) {
      const __global XT* xr = xd;
      const __global PT* wr = wd;
      for (int kh = kh_lo; kh < kh_hi; ++kh, xr += row_step, wr += KW * OCT) {
#ifdef CPU_PREFETCH
        // The same row of a later channel: the segment's first and last columns (two lines at most).
        PREFETCH(xr + ahead + clamp(iw0, 0, W - 1));
        PREFETCH(xr + ahead + clamp(iw0 + SPAN - 1, 0, W - 1));
#endif
        conv_row(acc, xr, wr, iw0, W, interior, sc);
      }
    }
  }

  const long oplane = (long)OD * OH * OW;
  const long y0 = (((long)n * G + g) * M_g + oc0) * oplane + (long)odh * OW + ow0;
  const int pixels = min(OWB, OW - ow0);
  const int channels = min(OCT, M_g - oc0);
  // The stores run once per work-item, after C_g*KD*KH*KW reduction steps, from a private copy
  // of the accumulators in rolled loops: unrolled over the OCV x OWB accumulators (the compiler
  // also vectorised each channel loop) they were most of the kernel's code, and PoCL generates
  // a kernel's code three times at its first launch (cold start: resnet18's conv code 8-16 KB ->
  // 3-4 KB, its first run ~2.5 s shorter).
#if OCB == 16 && OWB == 8
  if (pixels == OWB) {
    // Whole-row block: transpose each 8 (pixels) x 16 (channels) block and store 8-pixel vectors
    // per channel instead of 128 single floats (with few input channels, as in 3-channel stems,
    // lane-by-lane stores cost more than the FMAs). Four rounds of "evens, then odds" over the
    // 128 values (index j*16 + c) rotate the index bits into c*8 + j: afterwards vector k holds
    // channel 2k's 8 pixels in lanes 0-7 and channel 2k+1's in lanes 8-15.
    float16 blk[OCV][8];
#pragma unroll
    for (int v = 0; v < OCV; ++v)
#pragma unroll
      for (int j = 0; j < 8; ++j) blk[v][j] = acc[v * OWB + j];
#pragma clang loop unroll(disable)
    for (int v = 0; v < OCV; ++v) {
      float16 t[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) t[j] = blk[v][j];
#pragma unroll
      for (int round = 0; round < 4; ++round) {
        float16 u[8];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          u[k] = (float16)(t[2 * k].even, t[2 * k + 1].even);
          u[k + 4] = (float16)(t[2 * k].odd, t[2 * k + 1].odd);
        }
#pragma unroll
        for (int k = 0; k < 8; ++k) t[k] = u[k];
      }
#pragma unroll
      for (int k = 0; k < 8; ++k) blk[v][k] = t[k];
    }
    // Channels 2k and 2k+1 together: the epilogue runs on whole 16-float vectors.
#pragma clang loop unroll(disable) vectorize(disable)
    for (int q = 0; q < (channels + 1) / 2; ++q) {
      const int v = q / 8, k = q % 8;
      const long o = y0 + (2 * q) * oplane;
      const bool hi = 2 * q + 1 < channels;
      float16 r = blk[v][k];
      if (residual)
        r += (float16)(LDN(RS, 8, residual + o, 0), hi ? LDN(RS, 8, residual + o + oplane, 0) : (float8)0.0f);
      r = EPILOGUE_VEC(r, 16);
      r = EPILOGUE_CLAMP_VEC(r, float16, act_lo, act_hi);
      STN(YS, 8, Y + o, 0, r.lo);
      if (hi) STN(YS, 8, Y + o + oplane, 0, r.hi);
    }
    return;
  }
#endif
  float r[OCV * OWB * OCB];
#pragma unroll
  for (int k = 0; k < OCV * OWB; ++k) WSTORE(acc[k], k, r);
#pragma clang loop unroll(disable) vectorize(disable)
  for (int c = 0; c < channels; ++c) {
    const int v = c / OCB, lane = c % OCB;
#pragma clang loop unroll(disable) vectorize(disable)
    for (int j = 0; j < pixels; ++j) {
      const long o = y0 + c * oplane + j;
      float t = r[(v * OWB + j) * OCB + lane];
      if (residual) t += LD(RS, residual, o);
      ST(YS, Y, o, epilogue_clamp(epilogue_act(t), act_lo, act_hi));
    }
  }
}
#endif  // !POINTWISE && !PIXVEC

#ifdef POINTWISE
#define xvec CAT(float, PXB)
#define XLOAD CAT(vload, PXB)
#define XSTORE CAT(vstore, PXB)
#define PIX (PXB * PXV)
// -DPOST_AFFINE: y = post_s * epilogue(x) + post_b (a scalar Mul / Add after the activation).
#ifdef POST_AFFINE
#define APPLY_POST_AFFINE(v) fma((v), (xvec)post_s, (xvec)post_b)
#else
#define APPLY_POST_AFFINE(v) (v)
#endif

// conv_f32_pointwise: a 1x1 conv (stride 1, no padding) over P = D*H*W pixels, with the roles
// of conv_f32_packed's register block swapped: a work-item computes OCB output channels x PIX
// pixels, as OCB x PXV vectors along the pixels, each step broadcasting one packed weight
// against a vector of input pixels. Outputs then leave as whole vectors: with few input
// channels (expansion layers), conv_f32_packed's lane-by-lane stores of channel vectors cost
// more than its FMAs. Needs P >= PIX. The pixels past the last whole block: when they fit one
// vector (7x7 = 2 x 24 + 1, 14x14 = 8 x 24 + 4, 13x13 = 7 x 24 + 1), a block of one vector ending
// at P (pw_block with nv = 1: 56 pixels computed for 7x7 planes instead of 72); else the last
// whole block is moved left to end at P. Blocks overlap their neighbour (Y never aliases X or
// residual).
// Global: (oc_blocks, ceil(P / PIX), N*G), or with pixels_first != 0 (ceil(P / PIX), oc_blocks,
// N*G) so that neighbouring work-items share a channel block's weights; X [N][G*C_g][P],
// Y [N][G*M_g][P], weights packed as for conv_f32_packed.

// One block of OCB channels x nv vectors of pixels from p0 (X and Y at the block's image and
// group, Wp at its channel block). nv is a constant after inlining; the loops run to PXV with
// `v < nv` inside, so that they unroll and the accumulators become registers before the inlining
// (with `v < nv` as the bound they stayed an array on the stack: 10-20 % slower).
__attribute__((always_inline)) static inline void pw_block(
    __global const XT* restrict X, __global const PT* restrict Wp, __global const BT* restrict bias,
    __global const RT* restrict residual, __global YT* restrict Y, int C_g, int P, int M_g, int g, int oc0,
    int p0, long y0, float act_lo, float act_hi, __global const SCT* restrict in_scale, const int nv, float post_s,
    float post_b) {
  X += p0;
  xvec acc[OCB][PXV];
#pragma unroll
  for (int c = 0; c < OCB; ++c) {
#ifdef HAS_BIAS
    const float b = oc0 + c < M_g ? LD(BS, bias, g * M_g + oc0 + c) : 0.0f;
#else
    const float b = 0.0f;
#endif
#pragma unroll
    for (int v = 0; v < PXV; ++v)
      if (v < nv) acc[c][v] = (xvec)b;
  }
  for (int k = 0; k < C_g; ++k) {
    xvec x[PXV];
#pragma unroll
    for (int v = 0; v < PXV; ++v)
      if (v < nv) x[v] = LDN(XS, PXB, X + (long)k * P + v * PXB, 0);
#ifdef CPU_PREFETCH
    {
      const __global XT* pr = X + (long)min(k + CPU_PREFETCH, C_g - 1) * P;
#pragma unroll
      for (int v = 0; v < PXV; ++v)
        if (v < nv) PREFETCH(pr + v * PXB);
    }
#endif
#ifdef IN_SCALE
    const float sc = LD(SS, in_scale, k);
#pragma unroll
    for (int v = 0; v < PXV; ++v)
      if (v < nv) x[v] *= sc;
#endif
    // Each weight broadcast straight from memory (a vector load spilled to the stack and
    // reloaded lane by lane before).
    const __global PT* wk = Wp + (long)k * OCB;
#pragma unroll
    for (int c = 0; c < OCB; ++c) {
      const float w = LD(PS, wk, c);
#pragma unroll
      for (int v = 0; v < PXV; ++v)
        if (v < nv) acc[c][v] = fma((xvec)w, x[v], acc[c][v]);
    }
  }

  const int channels = min(OCB, M_g - oc0);
#ifdef EPILOGUE_ACT
  // A compiled activation (SiLU, GELU, ...): the stores from a private copy of the accumulators in
  // a rolled loop, so that the activation is inlined once rather than once per accumulator vector
  // (efficientnet_b0's SiLU pointwise programs were 40-55 KB of code for PoCL to generate at the
  // first run; rolled 9-10 KB, and no slower: the activation dominates the stores).
  xvec r[OCB * PXV];
#pragma unroll
  for (int c = 0; c < OCB; ++c)
#pragma unroll
    for (int v = 0; v < PXV; ++v)
      if (v < nv) r[c * nv + v] = acc[c][v];
#pragma clang loop unroll(disable) vectorize(disable)
  for (int k = 0; k < channels * nv; ++k) {
    const int c = k / nv, v = k % nv;
    const long o = y0 + (long)c * P + p0 + v * PXB;
    xvec t = r[k];
    if (residual) t += LDN(RS, PXB, residual + o, 0);
    t = EPILOGUE_VEC(t, PXB);
    STN(YS, PXB, Y + o, 0, APPLY_POST_AFFINE(EPILOGUE_CLAMP_VEC(t, xvec, act_lo, act_hi)));
  }
#else
  // Only the run-time clamp and residual: unrolled (rolled, mobilenet_v2's expansions with ReLU6
  // ran 5-42 % slower per launch).
#pragma unroll
  for (int c = 0; c < OCB; ++c) {
    if (c < channels) {
#pragma unroll
      for (int v = 0; v < PXV; ++v) {
        if (v >= nv) break;
        const long o = y0 + (long)c * P + p0 + v * PXB;
        xvec r = acc[c][v];
        if (residual) r += LDN(RS, PXB, residual + o, 0);
        STN(YS, PXB, Y + o, 0, APPLY_POST_AFFINE(EPILOGUE_CLAMP_VEC(r, xvec, act_lo, act_hi)));
      }
    }
  }
#endif
}

__kernel void conv_f32_pointwise(__global const XT* restrict X,
                                 __global const PT* restrict Wp,
                                 __global const BT* restrict bias,
                                 __global const RT* restrict residual,
                                 __global YT* restrict Y, int C_g, int P, int M_g, int G,
                                 int oc_blocks, float act_lo, float act_hi, int pixels_first,
                                 __global const SCT* restrict in_scale, int scale_n, float post_s, float post_b) {
  const int ob = get_global_id(pixels_first ? 1 : 0);
  const int pb = get_global_id(pixels_first ? 0 : 1);
  const int ng = get_global_id(2);
  if (ob >= oc_blocks) return;
  const int g = ng % G, n = ng / G;
  const int oc0 = ob * OCB;
  X += ((long)n * G + g) * C_g * P;
  Wp += ((long)g * oc_blocks + ob) * C_g * OCB;
#ifdef IN_SCALE
  in_scale += (long)n * scale_n + (long)g * C_g;
#endif
  const long y0 = (((long)n * G + g) * M_g + oc0) * P;
#if PXV > 1
  const int whole = P / PIX, rest = P - whole * PIX;
  if (pb == whole && rest <= PXB) {
    pw_block(X, Wp, bias, residual, Y, C_g, P, M_g, g, oc0, P - PXB, y0, act_lo, act_hi, in_scale, 1, post_s, post_b);
    return;
  }
#endif
  pw_block(X, Wp, bias, residual, Y, C_g, P, M_g, g, oc0, min(pb * PIX, P - PIX), y0, act_lo, act_hi, in_scale,
           PXV, post_s, post_b);
}
#endif  // POINTWISE

#ifdef PIXVEC
#define PIX (16 * PXV)

// conv_f32_pixvec: convs with a short reduction (few input channels: 3-channel stems), where
// conv_f32_packed's channel vectors leave through a transpose or lane by lane and the stores
// outweigh the FMAs. A work-item computes OCB output channels x PXV vectors of 16 consecutive
// output pixels of one row: per tap one vector of input pixels, OCB packed weights broadcast from
// memory, OCB x PXV FMAs; the outputs leave as whole vectors. X is the input copied with its
// column padding made real (pad_rows: every column a work-item reads lies inside its padded row);
// with stride 2 each copied row holds its even columns, then its odd ones (pad_rows' split), so
// a tap's 16 inputs are 16 consecutive floats of one half: (2 * p + t) / 2 = p + t / 2 in the
// even half for even column offsets t = kw * DW, in the odd half for odd ones. (Read as the even
// lanes of 32 consecutive floats instead, the stride-2 stems took 1.8x the time of the same
// convs at stride 1.) Rows are checked for the vertical padding. Needs OW >= PIX: the last pixel
// block is moved left to end at OW (it overlaps its neighbour; Y never aliases X or residual).
// Global: (oc_blocks, ceil(OW / PIX), N*G*OD*OH); X [N][G*C_g][D][H][WP], weights packed as for
// conv_f32_pointwise (blocks of OCB), Y [N][G*M_g][OD][OH][OW].
__kernel void conv_f32_pixvec(__global const XT* restrict X, __global const PT* restrict Wp,
                              __global const BT* restrict bias, __global const RT* restrict residual,
                              __global YT* restrict Y, int C_g, int D, int H, int WP, int M_g, int OD,
                              int OH, int OW, int G, int oc_blocks, int pad_d, int pad_h, float act_lo,
                              float act_hi) {
  const int ob = get_global_id(0);
  const int p0 = min((int)get_global_id(1) * PIX, OW - PIX);
  const int nodh = get_global_id(2);
  if (ob >= oc_blocks) return;
  const int ohw = OD * OH;
  const int odh = nodh % ohw;
  const int od = odh / OH, oh = odh % OH;
  const int ng = nodh / ohw;
  const int g = ng % G, n = ng / G;
  const int oc0 = ob * OCB;
  const long plane = (long)D * H * WP;
#if SW == 2
  const int odd0 = (WP + 1) / 2;  // the odd columns' offset in a split row
  X += ((long)n * G + g) * C_g * plane + p0;
#else
  X += ((long)n * G + g) * C_g * plane + (long)p0 * SW;
#endif
  Wp += ((long)g * oc_blocks + ob) * C_g * (KD * KH * KW * OCB);

  float16 acc[OCB][PXV];
#pragma unroll
  for (int o = 0; o < OCB; ++o) {
#ifdef HAS_BIAS
    const float b = oc0 + o < M_g ? LD(BS, bias, g * M_g + oc0 + o) : 0.0f;
#else
    const float b = 0.0f;
#endif
#pragma unroll
    for (int v = 0; v < PXV; ++v) acc[o][v] = (float16)b;
  }
  const int id0 = od * SD - pad_d, ih0 = oh * SH - pad_h;
  for (int c = 0; c < C_g; ++c) {
    for (int kd = 0; kd < KD; ++kd) {
      const int id = id0 + kd * DD;
      if (id < 0 || id >= D) continue;
      for (int kh = 0; kh < KH; ++kh) {
        const int ih = ih0 + kh * DH;
        if (ih < 0 || ih >= H) continue;
        const __global XT* xr = X + ((long)c * D + id) * H * WP + (long)ih * WP;
        const __global PT* wr = Wp + ((c * KD + kd) * KH + kh) * (KW * OCB);
#pragma unroll
        for (int kw = 0; kw < KW; ++kw) {
          float16 x[PXV];
#pragma unroll
          for (int v = 0; v < PXV; ++v) {
#if SW == 1
            x[v] = LDN(XS, 16, xr + kw * DW + v * 16, 0);
#else
            x[v] = LDN(XS, 16, xr + ((kw * DW) % 2 ? odd0 : 0) + (kw * DW) / 2 + v * 16, 0);
#endif
          }
#pragma unroll
          for (int o = 0; o < OCB; ++o) {
            const float16 w = (float16)LD(PS, wr, kw * OCB + o);
#pragma unroll
            for (int v = 0; v < PXV; ++v) acc[o][v] = fma(w, x[v], acc[o][v]);
          }
        }
      }
    }
  }

  const long oplane = (long)OD * OH * OW;
  const long y0 = (((long)n * G + g) * M_g + oc0) * oplane + (long)odh * OW + p0;
  const int channels = min(OCB, M_g - oc0);
#pragma unroll
  for (int o = 0; o < OCB; ++o) {
    if (o < channels) {
#pragma unroll
      for (int v = 0; v < PXV; ++v) {
        const long at = y0 + (long)o * oplane + v * 16;
        float16 r = acc[o][v];
        if (residual) r += LDN(RS, 16, residual + at, 0);
        r = EPILOGUE_VEC(r, 16);
        STN(YS, 16, Y + at, 0, EPILOGUE_CLAMP_VEC(r, float16, act_lo, act_hi));
      }
    }
  }
}
#endif  // PIXVEC

// Packs W [G*M_g][C_g*KD*KH*KW] into the layout of conv_f32_packed (blocks of OCB*OCV channels)
// or conv_f32_pointwise and conv_f32_pixvec (blocks of OCB), at run time (for weights that are not constants).
// Global: (G*oc_blocks*block, K).
#if defined(POINTWISE) || defined(PIXVEC)
#define PACK_B OCB
#else
#define PACK_B OCT
#endif
__kernel void conv_f32_pack_weights(__global const WT* restrict Wt, __global float* restrict Wp,
                                    int M_g, int K, int oc_blocks) {
  const int i = get_global_id(0), k = get_global_id(1);
  const int lane = i % PACK_B, blk = i / PACK_B;
  const int g = blk / oc_blocks, oc = (blk % oc_blocks) * PACK_B + lane;
  if (k >= K) return;
  Wp[((long)blk * K + k) * PACK_B + lane] = oc < M_g ? LD(WS, Wt, ((long)g * M_g + oc) * K + k) : 0.0f;
}

#endif  // OCB

// ---- depthwise -------------------------------------------------------------------------------
// Why it looks like this (PoCL on a CPU): a work-group is one call of a compiled loop over its
// work-items with a fixed cost (~16 ns measured), and vectorising across work-items with border
// conditions gave ~6 GFLOP/s. So a work-item does a lot of explicit vector work: a band of output
// rows of one or more channels, OWB pixels per vector. The row geometry (IN_W, OUT_W, PAD_W) is
// compiled in: every vector's column range is then a constant, so interior vectors are plain
// unaligned loads and border vectors get constant blend masks; the same code with runtime border
// tests ran up to 2x slower on 14x14 planes.
//
// Border vectors read a few floats before or after their row (into the neighbouring row or
// plane) and zero those lanes with the mask. Only the first and last planes of X could read
// outside the buffer; they take a path that loads lane by lane.
#ifdef DEPTHWISE
// Without -DIN_W/-DOUT_W (the variant's quick=1) the row widths are the kernel's in_w/out_w
// arguments (DW_RUNTIME_W): one program serves every width of a network (mobilenet_v2: 2 programs
// instead of 9), a row is a rolled loop over masked vectors, and PoCL generates its code in
// ~0.2 s instead of 0.15-0.45 s per width. The plan's first run on a driver that compiles at
// first launch uses it (runtime/exec/compile_helpers.hpp); each output value is the same sum in the same
// order as with the widths compiled in. The functions below take the widths as arguments in
// both builds; with the widths compiled in, the arguments are unused.
#ifndef IN_W
#define DW_RUNTIME_W
#define IN_W in_w
#define OUT_W out_w
#define DW_RUNTIME 1
// The host uses it only for rows at least one vector wide: the lane-by-lane stores of narrower
// rows, loops of a run-time length there, are left out.
#define ROWS_FIT_VECTORS true
#else
#define DW_RUNTIME 0
#define ROWS_FIT_VECTORS false
#endif
#define pvec CAT(float, OWB)
#define ivec CAT(int, OWB)
#define PLOAD CAT(vload, OWB)
#define PSTORE CAT(vstore, OWB)
#if OWB == 4
#define LANES ((ivec)(0, 1, 2, 3))
#elif OWB == 8
#define LANES ((ivec)(0, 1, 2, 3, 4, 5, 6, 7))
#elif OWB == 16
#define LANES ((ivec)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
#endif
// Vectors per output row; with OW >= OWB the last one is moved left to end at OW (it overlaps
// its neighbour, which is cheaper than a partial store).
#define NBLK ((OUT_W + OWB - 1) / OWB)
#define BLOCK_START(j) (OUT_W >= OWB ? min((j) * OWB, OUT_W - OWB) : 0)
// Floats the vector loads may reach past the end of a row (lanes that are masked off).
#define LAST_COLUMN_READ (BLOCK_START(NBLK - 1) * SW + (KW - 1) * DW - PAD_W + OWB * SW - 1)
#define OVERREAD (LAST_COLUMN_READ >= IN_W ? LAST_COLUMN_READ - IN_W + 1 : 0)


// Lane q: input column iw0 + q*SW of row xr, 0 outside [0, IN_W). iw0 is a constant after
// unrolling (except for `interior` vectors, known to lie inside the row), so the branches fold.
// Strides 1 and 2 load whole vectors, which may reach PAD_W floats before the row and OVERREAD
// after it (the caller keeps those inside the buffer: dw_rows).
__attribute__((always_inline)) static inline pvec dw_tap(const __global XT* restrict xr, const int iw0,
                                                  const bool interior, const int in_w) {
  const bool all_valid = interior || (iw0 >= 0 && iw0 + (OWB - 1) * SW < IN_W);
  if (SW <= 2) {
#if SW == 1
    pvec x = LDN(XS, OWB, xr + iw0, 0);
#elif OWB == 16
    const float16 a = LDN(XS, 16, xr + iw0, 0), b = LDN(XS, 16, xr + iw0 + 16, 0);
    pvec x = (float16)(a.even, b.even);
#elif OWB == 8
    pvec x = LDN(XS, 16, xr + iw0, 0).even;
#else
    pvec x = LDN(XS, 8, xr + iw0, 0).even;
#endif
    // With the widths at run time, branch-free for every border vector: a branch per tap tripled
    // the kernel's blocks.
    if (DW_RUNTIME ? !interior : !all_valid) {
      const ivec iw = iw0 + LANES * SW;
      x = select((pvec)0.0f, x, iw >= 0 && iw < IN_W);
    }
    return x;
  }
  float t[OWB];
#pragma unroll
  for (int q = 0; q < OWB; ++q) {
    const int iw = iw0 + q * SW;
    t[q] = iw >= 0 && iw < IN_W ? LD(XS, xr, iw) : 0.0f;
  }
  return PLOAD(0, t);
}

#define SEG_MAX 16
// Output vectors [j0, j0 + count) of row oh from their sums `acc`: the residual, the epilogue,
// the output's storage type.
__attribute__((always_inline)) static inline void dw_store(const pvec* acc, const __global RT* restrict residual,
                                                    __global YT* restrict Y, int oh, int oh_end, const int j0,
                                                    const int count, const bool interior, const int out_w) {
#pragma unroll
  for (int j = 0; j < SEG_MAX; ++j) {
    if (j >= count) continue;  // not break: a loop with a second exit does not unroll fully
    const int o = oh * OUT_W + (interior ? (j0 + j) * OWB : BLOCK_START(j0 + j));
    // A row narrower than a vector: the full store spills into the following rows, which this
    // work-item writes afterwards; where it would pass the work-item's last row, lane by lane.
    if (ROWS_FIT_VECTORS || OUT_W >= OWB || o + OWB <= oh_end * OUT_W) {
      pvec v = acc[j];
#ifdef HAS_RESIDUAL
      v += LDN(RS, OWB, residual + o, 0);
#endif
      STN(YS, OWB, Y + o, 0, EPILOGUE_VEC(v, OWB));
    } else {
      // Only reached when OUT_W < OWB. The epilogue still runs on the whole vector (lane by lane,
      // a SiLU cost efficientnet_b0's 7x7 layers more than their other six rows together).
      pvec v = acc[j];
#ifdef HAS_RESIDUAL
      float rr[OWB];
#pragma unroll
      for (int q = 0; q < OWB; ++q) rr[q] = q < OUT_W ? LD(RS, residual, o + q) : 0.0f;
      v += PLOAD(0, rr);
#endif
      float t[OWB];
      PSTORE(EPILOGUE_VEC(v, OWB), 0, t);
#pragma unroll
      for (int q = 0; q < (OUT_W < OWB ? OUT_W : OWB); ++q) ST(YS, Y, o + q, t[q]);
    }
  }
}

// Output vectors [j0, j0 + count) of row oh, input rows outermost (one row test and one set of
// weight broadcasts per input row). j0 and count are constants, except that j0 may vary for
// `interior` vectors (no padding columns; never the moved last vector).
__attribute__((always_inline)) static inline void dw_segment(const __global XT* restrict X,
                                                      const __global RT* restrict residual,
                                                      __global YT* restrict Y, const float* w,
                                                      float b, int H, int pad_h, int oh, int oh_end,
                                                      const int j0, const int count,
                                                      const bool interior, const int in_w,
                                                      const int out_w) {
  // Loops run to the constant SEG_MAX (not `count`), so that they unroll before the
  // accumulators are assigned registers; otherwise acc stays in memory.
  pvec acc[SEG_MAX];
#pragma unroll
  for (int j = 0; j < SEG_MAX; ++j) acc[j] = (pvec)b;
  // Unrolled over kh too for float32 3x3 and smaller, and for larger kernels on rows of at most
  // two vectors (the taps' weights then stay in registers across the row: EfficientNet-Lite0's
  // 5x5 layers on 7x7 and 14x14 planes 6-11 % faster); larger kernels on wider rows and float16
  // loads exceed the compiler's unroll budget with the j and kw loops unrolled inside (it said so
  // in a warning on every build, and left the loop rolled). With the F16C conversions the
  // unrolled float16 version measured the same (mobilenet_v2, EfficientNet-Lite0).
#if (KH * KW <= 9 || (!DW_RUNTIME && NBLK <= 2)) && !defined(XS_HALF)
#pragma unroll
#endif
  for (int kh = 0; kh < KH; ++kh) {
    const int ih = oh * SH - pad_h + kh * DH;
    if (ih < 0 || ih >= H) continue;
    const __global XT* xr = X + ih * IN_W;
#pragma unroll
    for (int j = 0; j < SEG_MAX; ++j) {
      if (j < count) {  // not break: a loop with a second exit does not unroll fully
        const int ow0 = interior ? (j0 + j) * OWB : BLOCK_START(j0 + j);
#pragma unroll
        for (int kw = 0; kw < KW; ++kw)
          acc[j] = fma((pvec)w[kh * KW + kw],
                       dw_tap(xr, ow0 * SW + kw * DW - PAD_W, interior, in_w), acc[j]);
      }
    }
  }
  dw_store(acc, residual, Y, oh, oh_end, j0, count, interior, out_w);
}

// Rows up to SEG_MAX vectors wide are unrolled whole. Wider rows: vectors [0, LEAD) touch the
// left padding and [TRAIL, NBLK) the right padding or the row's end (unrolled, constant masks);
// those between run as a loop over chunks, so that wide rows do not unroll into huge code.
#define CHUNK 8
// 0 <= LEAD <= TRAIL <= NBLK.
#define LEAD_ ((PAD_W + OWB * SW - 1) / (OWB * SW))
#define LEAD (LEAD_ < NBLK ? LEAD_ : NBLK)
#define FIT_END (IN_W + PAD_W - (KW - 1) * DW - OWB * SW)
#define FIT_ (FIT_END >= 0 ? FIT_END / (OWB * SW) + 1 : 0)
#define FIT (FIT_ < NBLK - 1 ? FIT_ : NBLK - 1)
#define TRAIL (FIT > LEAD ? FIT : LEAD)
#define MID_REST ((TRAIL - LEAD) % CHUNK)

// Output row oh a pixel at a time, every tap checked, in rolled loops (a few hundred bytes of
// code): the rows next to the buffer's ends. The taps in the vector path's order (kh, then kw;
// a padding tap there adds w * 0), so both give the same values.
static inline void dw_row_checked(const __global XT* restrict X, const __global RT* restrict residual,
                           __global YT* restrict Y, const float* w, float b, int H, int pad_h,
                           int oh, const int in_w, const int out_w) {
#pragma clang loop unroll(disable) vectorize(disable)
  for (int ow = 0; ow < OUT_W; ++ow) {
    float acc = b;
#pragma clang loop unroll(disable)
    for (int kh = 0; kh < KH; ++kh) {
      const int ih = oh * SH - pad_h + kh * DH;
      if (ih < 0 || ih >= H) continue;
#pragma clang loop unroll(disable)
      for (int kw = 0; kw < KW; ++kw) {
        const int iw = ow * SW + kw * DW - PAD_W;
        if (iw >= 0 && iw < IN_W) acc = fma(w[kh * KW + kw], LD(XS, X, ih * IN_W + iw), acc);
      }
    }
    const int o = oh * OUT_W + ow;
#ifdef HAS_RESIDUAL
    acc += LD(RS, residual, o);
#endif
    ST(YS, Y, o, epilogue_act(acc));
  }
}

// Rows [oh0, oh_end) of one output plane. Rows outside [safe_lo, safe_hi) read input rows whose
// vector over-reads could leave the buffer (the first rows of the buffer's first plane, the last
// rows of its last): they take dw_row_checked, so that the unrolled vector path exists once in
// the program (a second, guarded copy of it doubled the kernel's code and PoCL's code generation
// at the first run).
__attribute__((always_inline)) static inline void dw_rows(const __global XT* restrict X,
                                                   const __global RT* restrict residual,
                                                   __global YT* restrict Y, const float* w,
                                                   float b, int H, int pad_h, int oh0, int oh_end,
                                                   int safe_lo, int safe_hi, const int in_w,
                                                   const int out_w) {
  for (int oh = oh0; oh < oh_end; ++oh) {
    if (oh < safe_lo || oh >= safe_hi) {
      dw_row_checked(X, residual, Y, w, b, H, pad_h, oh, in_w, out_w);
      continue;
    }
#ifdef DW_RUNTIME_W
    // One vector at a time, every one masked, in a rolled loop: the least code (a first run's
    // compile), ~15 % slower than the unrolled rows in mobilenet_v2 as a whole.
#pragma clang loop unroll(disable) vectorize(disable)
    for (int j = 0; j < NBLK; ++j)
      dw_segment(X, residual, Y, w, b, H, pad_h, oh, oh_end, j, 1, false, in_w, out_w);
#else
    if (NBLK <= SEG_MAX) {
      dw_segment(X, residual, Y, w, b, H, pad_h, oh, oh_end, 0, NBLK, false, in_w, out_w);
    } else {
#pragma unroll
      for (int j = 0; j < LEAD; j += SEG_MAX)
        dw_segment(X, residual, Y, w, b, H, pad_h, oh, oh_end, j, min(SEG_MAX, LEAD - j), false, in_w,
                   out_w);
      for (int j = LEAD; j + CHUNK <= TRAIL; j += CHUNK)
        dw_segment(X, residual, Y, w, b, H, pad_h, oh, oh_end, j, CHUNK, true, in_w, out_w);
      if (MID_REST > 0)
        dw_segment(X, residual, Y, w, b, H, pad_h, oh, oh_end, TRAIL - MID_REST, MID_REST, true, in_w,
                   out_w);
#pragma unroll
      for (int j = TRAIL; j < NBLK; j += SEG_MAX)
        dw_segment(X, residual, Y, w, b, H, pad_h, oh, oh_end, j, min(SEG_MAX, NBLK - j), false, in_w,
                   out_w);
    }
#endif
  }
}

#ifdef DW_RING
// -DDW_RING (CPU-shaped devices, float16 storage of X, widths compiled in, strides 1 and 2): the
// input rows a work-item's output rows read are converted to floats once, into a ring of RSL rows
// in private memory with the padding columns as zeros, and the taps read the ring: a tap is then
// one float vector load and one FMA, as in the float32 kernel, where with half storage every tap
// converted its vector again (mobilenet_v2's depthwise convs at fp16 storage ran 2x their fp32
// time). The sums are the float32 kernel's, term by term (rows outside the input skipped, padding
// columns multiplied as zeros). Rows are converted two output rows ahead of their first read.
#define RG ((KH - 1) * DH + 1)
#define RSL_MIN (RG + 2 * SH)
#define RSL (RSL_MIN <= 4 ? 4 : RSL_MIN <= 8 ? 8 : RSL_MIN <= 16 ? 16 : RSL_MIN <= 32 ? 32 : 64)
#define RSLOT(ih) (((ih) + pad_h) & (RSL - 1))
#define RCH ((IN_W + 15) / 16)
// Floats a ring row holds: PAD_W zeros and the copy's 16-value chunks; every tap vector's reach
// (RLAST: BLOCK_START(NBLK - 1) as a constant expression, for the array's size).
#define RLAST (OUT_W >= OWB ? ((NBLK - 1) * OWB < OUT_W - OWB ? (NBLK - 1) * OWB : OUT_W - OWB) : 0)
#define RREACH (RLAST * SW + (KW - 1) * DW + OWB * SW)
#define RCOPY (PAD_W + 16 * RCH)
#define RPW_ (RREACH > RCOPY ? RREACH : RCOPY)
#define RPW ((RPW_ + 15) / 16 * 16)
#if SW == 1
#define RING_TAP(p) PLOAD(0, p)
#elif OWB == 4
#define RING_TAP(p) vload8(0, p).even
#elif OWB == 8
#define RING_TAP(p) vload16(0, p).even
#else
#define RING_TAP(p) ((float16)(vload16(0, p).even, vload16(0, (p) + 16).even))
#endif

// Input row ih of plane x as floats into ring row `dst` from column PAD_W: the row's values, zeros
// past its end (the columns before PAD_W and after the copy's chunks stay zero from the start).
// `overread_ok`: RCH whole chunks from the row's start lie inside X.
__attribute__((always_inline)) static inline void dw_ring_fill(float* dst, const __global XT* restrict x, int ih,
                                                        int H, bool overread_ok) {
  float* d = dst + PAD_W;
  if (ih < 0 || ih >= H) return;  // never read (the taps skip such rows)
  const __global XT* src = x + (long)ih * IN_W;
#pragma unroll
  for (int k = 0; k < IN_W / 16; ++k) vstore16(LDN(XS, 16, src, k), k, d);
#if IN_W % 16 != 0
  if (overread_ok) {
    const int16 lane = (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    vstore16(select((float16)0.0f, LDN(XS, 16, src, IN_W / 16), lane < IN_W % 16), IN_W / 16, d);
  } else {
    float t[16];
#pragma unroll
    for (int q = 0; q < 16; ++q) t[q] = q < IN_W % 16 ? LD(XS, src, IN_W / 16 * 16 + q) : 0.0f;
    vstore16(vload16(0, t), IN_W / 16, d);
  }
#endif
}

// Output rows [oh0, oh_end) of one plane (x, its residual r, its output y) from the ring.
__attribute__((always_inline)) static inline void dw_rows_ring(float* ring, const __global XT* restrict x,
                                                        const __global RT* restrict r, __global YT* restrict y,
                                                        const float* w, float b, int H, int pad_h, int oh0,
                                                        int oh_end, long row0, long rows_total) {
  int next = oh0 * SH - pad_h;  // the first input row not yet in the ring
  for (int oh = oh0; oh < oh_end; ++oh) {
    const int first = oh * SH - pad_h, last = first + (KH - 1) * DH;
    const int ahead = last + SH * min(2, oh_end - 1 - oh);
    for (int ih = max(next, first); ih <= ahead; ++ih)
      dw_ring_fill(ring + RSLOT(ih) * RPW, x, ih, H, (row0 + ih) * IN_W + 16 * RCH <= rows_total * IN_W);
    next = ahead + 1;
    for (int j0 = 0; j0 < NBLK; j0 += SEG_MAX) {
      const int count = min(SEG_MAX, NBLK - j0);
      pvec acc[SEG_MAX];
#pragma unroll
      for (int j = 0; j < SEG_MAX; ++j) acc[j] = (pvec)b;
#pragma unroll
      for (int kh = 0; kh < KH; ++kh) {
        const int ih = first + kh * DH;
        if (ih < 0 || ih >= H) continue;
        const float* xr = ring + RSLOT(ih) * RPW;
#pragma unroll
        for (int j = 0; j < SEG_MAX; ++j) {
          if (j < count) {  // not break: a loop with a second exit does not unroll fully
            const int ow0 = BLOCK_START(j0 + j);
#pragma unroll
            for (int kw = 0; kw < KW; ++kw)
              acc[j] = fma((pvec)w[kh * KW + kw], RING_TAP(xr + ow0 * SW + kw * DW), acc[j]);
          }
        }
      }
      dw_store(acc, r, y, oh, oh_end, j0, count, false, OUT_W);
    }
  }
}
#endif  // DW_RING

// Input rows at a plane's start / end that vector over-reads (PAD_W floats before a row, OVERREAD
// after it) could take past the plane: the first HEAD_ROWS, the last TAIL_ROWS.
#define HEAD_ROWS ((PAD_W + IN_W - 1) / IN_W)
#define TAIL_ROWS ((OVERREAD + IN_W - 1) / IN_W)

// Global: (ceil(OH / rows), ceil(N*C_out / chans)): a work-item computes `rows` output rows of
// `chans` consecutive output planes (with PLANE_MEAN, rows = OH, and mean[n * C_out + oc] is each
// plane's mean; without it `mean` is not read or written). X is [N][C_in][H][IN_W] (planes = N*C_in), Y
// [N][C_out][OH][OUT_W]; output channel oc reads input channel oc / mult. Y must not alias X or
// residual (Conv is never in place).
__kernel void conv_f32_depthwise(__global const XT* restrict X,
                                 __global const WT* restrict Wt,
                                 __global const BT* restrict bias,
                                 __global const RT* restrict residual,
                                 __global YT* restrict Y, __global MT* restrict mean, int C_in,
                                 int H, int mult, int OH, int pad_h, int planes, int rows,
                                 int chans, int in_w, int out_w) {
  const int oh0 = get_global_id(0) * rows;
  if (oh0 >= OH) return;
  const int oh_end = min(OH, oh0 + rows);
  const int C_out = C_in * mult;
  const int noc0 = get_global_id(1) * chans, noc_end = min(noc0 + chans, planes * mult);
  const long plane_size = (long)H * IN_W, out_plane = (long)OH * OUT_W;
#ifdef DW_RING
  float ring[RSL * RPW];
  for (int i = 0; i < RSL * RPW; i += 16) vstore16((float16)0.0f, 0, ring + i);
#endif
  for (int noc = noc0; noc < noc_end; ++noc) {
    const int n = noc / C_out, oc = noc - n * C_out;
    const int plane = n * C_in + oc / mult;
    float w[KH * KW];
#pragma unroll
    for (int i = 0; i < KH * KW; ++i) w[i] = LD(WS, Wt, oc * (KH * KW) + i);
#ifdef HAS_BIAS
    const float b = LD(BS, bias, oc);
#else
    const float b = 0.0f;
#endif
    const __global XT* x = X + plane * plane_size;
    __global YT* y = Y + noc * out_plane;
    const __global RT* r = residual + noc * out_plane;
    // Over-reads stay within PAD_W floats before the plane and OVERREAD after it: only the buffer's
    // first plane's first rows and its last plane's last rows need the checked path. safe_lo: the
    // first output row whose window starts below the head rows; safe_hi: the first whose window
    // reaches the tail rows.
    const long start = plane * plane_size;
    int safe_lo = 0, safe_hi = OH;
    if (start < PAD_W) safe_lo = (HEAD_ROWS + pad_h + SH - 1) / SH;
    if (start + plane_size + OVERREAD > planes * plane_size) {
      const int reach = H - TAIL_ROWS + pad_h - (KH - 1) * DH;  // oh * SH >= reach: unsafe
      safe_hi = reach <= 0 ? 0 : (reach + SH - 1) / SH;
    }
#ifdef DW_RING
    dw_rows_ring(ring, x, r, y, w, b, H, pad_h, oh0, oh_end, (long)plane * H, (long)planes * H);
#else
    dw_rows(x, r, y, w, b, H, pad_h, oh0, oh_end, safe_lo, safe_hi, in_w, out_w);
#endif
#ifdef PLANE_MEAN
    // The plane is this work-item's alone (one band): its values are still in cache.
    ST(MS, mean, noc, plane_mean(y, out_plane));
#endif
  }
}
#endif  // DEPTHWISE

#ifdef PAD_ROWS_SCALED
// The padded copy of a conv input (as pad.cl's pad_rows: `rows` rows of `width` values into rows
// of `padded` values from column `left`, zeros around) for a conv with a fused per-channel scale:
// the values are multiplied by their channel's scale (row r belongs to plane r / plane_rows, image
// plane / channels), the padding stays 0; `split` as for pad_rows (even columns, then odd ones).
__kernel void conv_pad_rows_scaled(__global const XT* restrict src, __global XT* restrict dst,
                                   __global const SCT* restrict in_scale, int rows, int width, int padded,
                                   int left, int per_item, int plane_rows, int channels, int scale_n,
                                   int split) {
  const int r0 = (int)get_global_id(0) * per_item;
  const int r1 = min(rows, r0 + per_item);
  for (int r = r0; r < r1; ++r) {
    const int plane = r / plane_rows;
    const float sc = LD(SS, in_scale, (long)(plane / channels) * scale_n + plane % channels);
    const __global XT* s = src + (long)r * width;
    __global XT* d = dst + (long)r * padded;
    if (split) {
      const int odd0 = (padded + 1) / 2;
      for (int i = 0; i < padded; ++i)
        ST(XS, d, (i & 1) ? odd0 + i / 2 : i / 2, i >= left && i < left + width ? LD(XS, s, i - left) * sc : 0.0f);
      continue;
    }
#pragma clang loop unroll(disable) vectorize(disable)
    for (int i = 0; i < left; ++i) ST(XS, d, i, 0.0f);
    for (int i = 0; i < width; ++i) ST(XS, d, left + i, LD(XS, s, i) * sc);
#pragma clang loop unroll(disable) vectorize(disable)
    for (int i = left + width; i < padded; ++i) ST(XS, d, i, 0.0f);
  }
}
#endif  // PAD_ROWS_SCALED
