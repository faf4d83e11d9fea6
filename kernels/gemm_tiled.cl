// GPU-shaped GEMM (the gemm family's "tiled" variant): local-memory tiles (kernels/tiled.cl), B
// read in place through its strides (no packing pass). Same operands and epilogue as
// gemm_f32_packed in gemm.cl:
//   Y[b] = act(alpha * A[b] x B[b] + beta * C + residual)
// Build options: tiled.cl's (TS, RM, RN, TK); -DAS -DBS -DCS -DRS -DYS=F16 for half storage;
// -DHAS_C; epilogue.cl's.
#include "epilogue.cl"
#include "storage.cl"
#include "operand_storage.cl"
#include "tiled.cl"

// batch_off[2*b]: offset of A[b] (elements); batch_off[2*b+1]: offset of B[b].
__kernel __attribute__((reqd_work_group_size(WX, WY, 1))) void gemm_f32_tiled(
    __global const STORE_TYPE(AS)* restrict A, int a_rs, int a_ks, __global const STORE_TYPE(BS)* restrict B,
    int b_ks, int b_ns, __global const long* restrict batch_off, __global const STORE_TYPE(CS)* restrict C, int c_rs,
    int c_cs, __global const STORE_TYPE(RS)* restrict residual, __global STORE_TYPE(YS)* restrict Y, int M, int N,
    int K, float alpha, float beta) {
  const int n0 = get_group_id(0) * TS, m0 = get_group_id(1) * TS, b = get_group_id(2);
  A += batch_off[2 * b];
  B += batch_off[2 * b + 1];
  Y += (long)b * M * N;
#ifdef HAS_RESIDUAL
  residual += (long)b * M * N;
#endif
#define LOAD_A(m, k) LD(AS, A, (long)(m) * a_rs + (long)(k) * a_ks)
#define LOAD_B(k, n) LD(BS, B, (long)(k) * b_ks + (long)(n) * b_ns)
  float acc[RM][RN];
  TILED_PRODUCT(acc, m0, n0, M, N, K)
  for (int i = 0; i < RM; ++i)
    for (int j = 0; j < RN; ++j) {
      const int m = TILED_ROW(m0, i), n = TILED_COL(n0, j);
      if (m >= M || n >= N) continue;
      float r = alpha * acc[i][j];
#ifdef HAS_C
      r += beta * LD(CS, C, (long)m * c_rs + (long)n * c_cs);
#endif
      const long o = (long)m * N + n;
#ifdef HAS_RESIDUAL
      r += LD(RS, residual, o);
#endif
      ST(YS, Y, o, epilogue_act(r));
    }
}
