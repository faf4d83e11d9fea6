// Blocked float32 matrix multiply shaped for CPU-like devices:
//   Y[b][m][n] = act(alpha * sum_k A[b][m][k] * B[b][k][n] + beta * C[m][n] + residual[b][m][n])
//
// B arrives packed in panels of NR = VW*NV columns, [panel][K][NR], zero-padded past N, so a
// work-item reads each k's NR values as NV contiguous vectors. Each work-item owns an MR x NR block
// held in MR*NV vector accumulators and broadcasts one A element per row and k. On PoCL a
// work-group is a loop over work-items, so the register block (not local memory) is what makes
// this fast; the same kernel stays correct on GPUs.
//
// Build options:
//   -DMR=6        rows per work-item
//   -DVW=16       vector width (4, 8 or 16)
//   -DNV=2        vectors per row (NR = VW*NV)
//   -DHAS_C       add beta * C (C read through strides c_rs, c_cs; 0 for a broadcast dim)
//   epilogue.cl's options: the fused activation / residual (laid out like Y)

#include "epilogue.cl"
#include "storage.cl"
#include "operand_storage.cl"

// Storage of each float operand (kernels/storage.cl): A, P packed B, B raw B (packing), C,
// R residual, Y. Arithmetic is in float.

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define vec CAT(float, VW)
#define VLOAD CAT(vload, VW)
#define VSTORE CAT(vstore, VW)
#define NR (VW * NV)

// Offsets per batch: batch_off[2*b] into A (elements), batch_off[2*b+1] into the packed B.
__kernel void gemm_f32_packed(__global const STORE_TYPE(AS)* restrict A, int a_rs, int a_ks,
                              __global const STORE_TYPE(PS)* restrict Bp,
                              __global const long* restrict batch_off,
                              __global const STORE_TYPE(CS)* restrict C, int c_rs, int c_cs,
                              __global const STORE_TYPE(RS)* restrict residual, __global STORE_TYPE(YS)* restrict Y,
                              int M, int N, int K, float alpha, float beta) {
  // Row blocks vary fastest so that consecutive work-items share one B panel in cache; A rows
  // are the smaller stream.
  const int m0 = get_global_id(0) * MR;
  const int panel = get_global_id(1);
  const int b = get_global_id(2);
  const int n0 = panel * NR;
  if (m0 >= M || n0 >= N) return;

  A += batch_off[2 * b];
  Bp += batch_off[2 * b + 1] + (long)panel * K * NR;
  Y += (long)b * M * N;
#ifdef HAS_RESIDUAL
  residual += (long)b * M * N;
#endif

  // Rows past M repeat the last row: the loads stay in bounds and the stores are skipped.
  const __global STORE_TYPE(AS)* a[MR];
#pragma unroll
  for (int i = 0; i < MR; ++i) a[i] = A + (long)min(m0 + i, M - 1) * a_rs;

  vec acc[MR][NV];
#pragma unroll
  for (int i = 0; i < MR; ++i)
#pragma unroll
    for (int v = 0; v < NV; ++v) acc[i][v] = (vec)0.0f;

  long ak = 0;
  int k = 0;
#ifdef AS_HALF
  // Float16 A contiguous along k: 16 k of a row converted as one vector into private memory, then
  // read element by element with a k that the loop leaves in a register, so that each is a
  // broadcast from memory as in float32 (kept in registers, the 16 x 8 lanes were broadcast by
  // shuffles that take the FMAs' port: a [197, 768] x [768, 2304] product 9 % slower); the last
  // K % 16 go through the loop below, in the same k order (so the same sums). One conversion per
  // element and row throughout made ViT-B/16's float16 run 2x its float32 time.
  if (a_ks == 1) {
    for (; k + 16 <= K; k += 16, ak += 16) {
      float16 at16[MR];
#pragma unroll
      for (int i = 0; i < MR; ++i) at16[i] = LDN(AS, 16, a[i] + ak, 0);
      const float(*at)[16] = (const float(*)[16])at16;
#pragma unroll 2
      for (int kk = 0; kk < 16; ++kk) {
        vec bv[NV];
#pragma unroll
        for (int v = 0; v < NV; ++v) bv[v] = LDN(PS, VW, Bp, v);
        Bp += NR;
#pragma unroll
        for (int i = 0; i < MR; ++i)
#pragma unroll
          for (int v = 0; v < NV; ++v) acc[i][v] = fma((vec)at[i][kk], bv[v], acc[i][v]);
      }
    }
  }
#endif
  for (; k < K; ++k, ak += a_ks) {
    vec bv[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v) bv[v] = LDN(PS, VW, Bp, v);
    Bp += NR;
#pragma unroll
    for (int i = 0; i < MR; ++i) {
      const vec av = (vec)LD(AS, a[i], ak);
#pragma unroll
      for (int v = 0; v < NV; ++v) acc[i][v] = fma(av, bv[v], acc[i][v]);
    }
  }

  const int cols = min(NR, N - n0);
#pragma unroll
  for (int i = 0; i < MR; ++i) {
    const int m = m0 + i;
    if (m < M && cols == NR) {
      // A whole panel: the epilogue on vectors (vectorised activations such as GELU).
      const long o = (long)m * N + n0;
#pragma unroll
      for (int v = 0; v < NV; ++v) {
        vec r = alpha * acc[i][v];
#ifdef HAS_C
        if (c_cs == 1) {
          // Contiguous C rows (a bias over N, or a full matrix): one vector load. Element by element,
          // the strided reads cost convnext_tiny's MatMul+bias (K = 96) a third of its time.
          r += beta * LDN(CS, VW, C + (long)m * c_rs + n0 + v * VW, 0);
        } else {
          float cv[VW];
#pragma unroll
          for (int j = 0; j < VW; ++j) cv[j] = beta * LD(CS, C, (long)m * c_rs + (long)(n0 + v * VW + j) * c_cs);
          r += VLOAD(0, cv);
        }
#endif
#ifdef HAS_RESIDUAL
        r += LDN(RS, VW, residual + o + v * VW, 0);
#endif
        STN(YS, VW, Y + o + v * VW, 0, EPILOGUE_VEC(r, VW));
      }
    } else if (m < M) {
      float row[NR];
#pragma unroll
      for (int v = 0; v < NV; ++v) VSTORE(alpha * acc[i][v], v, row);
      const long o = (long)m * N + n0;
      for (int j = 0; j < cols; ++j) {
        float r = row[j];
#ifdef HAS_C
        r += beta * LD(CS, C, (long)m * c_rs + (long)(n0 + j) * c_cs);
#endif
#ifdef HAS_RESIDUAL
        r += LD(RS, residual, o + j);
#endif
        ST(YS, Y, o + j, epilogue_act(r));
      }
    }
  }
}

// Packs B (any strides) into the panel layout above: Bp[bb][panel][k][j] = B[bb][k][panel*NR+j],
// zero past N. One work-item per packed element.
__kernel void gemm_f32_pack_b(__global const STORE_TYPE(BS)* restrict B, int b_ks, int b_ns, long b_bs,
                              __global float* restrict Bp, int K, int N, int npad) {
  const int n = get_global_id(0), k = get_global_id(1), bb = get_global_id(2);
  if (n >= npad || k >= K) return;
  const int panel = n / NR, j = n % NR;
  const float v = n < N ? LD(BS, B, bb * b_bs + (long)k * b_ks + (long)n * b_ns) : 0.0f;
  Bp[(((long)bb * (npad / NR) + panel) * K + k) * NR + j] = v;
}
