// The GPU-shaped GEMM core shared by gemm_tiled.cl and conv_tiled.cl: a work-group of
// (TS/RN) x (TS/RM) work-items computes a TS x TS tile of C = A[M][K] x B[K][N]. Per step of TK
// along K, the whole work-group stages a TS x TK slice of A and a TK x TS slice of B in local
// memory (consecutive work-items load consecutive elements: coalesced), then each work-item
// multiplies an RM x RN register block whose rows and columns are strided by the work-group's
// extent, so that neighbouring work-items read neighbouring local-memory words.
//
// Build options: -DTS=16|32|64 -DRM=1|2|4 -DRN=1|2|4 -DTK=4|8|16 (so that NT = (TS/RM)*(TS/RN)
// is a multiple of TS and of TK).
// The includer defines LOAD_A(m, k) and LOAD_B(k, n) (in-range indices only) before
// TILED_PRODUCT(acc, m0, n0, M, N, K).
#ifndef TILED_CL
#define TILED_CL

#ifndef TS
#define TS 32
#endif
#ifndef RM
#define RM 2
#endif
#ifndef RN
#define RN 2
#endif
#ifndef TK
#define TK 8
#endif
#define WX (TS / RN)  // work-items along N
#define WY (TS / RM)  // work-items along M
#define NT (WX * WY)

// Each work-item stages the same column of B (and the same k of A) at every step, since NT is a
// multiple of TS and of TK: TILED_B_COLUMN(n), which the includer may define, runs once per
// work-item before the loop to precompute what LOAD_B needs for its column n (integer divisions
// that would otherwise run for every element).
#ifndef TILED_B_COLUMN
#define TILED_B_COLUMN(n)
#endif
// TILED_STEP_DONE(k0), which the includer may define, runs after each TK step (the integer kernels
// move their float sums into int32 accumulators there).
#ifndef TILED_STEP_DONE
#define TILED_STEP_DONE(k0)
#endif
#define TILED_PRODUCT(acc, m0, n0, M, N, K)                                                  \
  __local float As[TK][TS];                                                                  \
  __local float Bs[TK][TS];                                                                  \
  const int lx = get_local_id(0), ly = get_local_id(1), tid = ly * WX + lx;                  \
  const int a_kk = tid % TK, b_nn = tid % TS, b_n = (n0) + b_nn;                             \
  TILED_B_COLUMN(b_n)                                                                        \
  for (int i = 0; i < RM; ++i)                                                               \
    for (int j = 0; j < RN; ++j) acc[i][j] = 0.0f;                                           \
  for (int k0 = 0; k0 < (K); k0 += TK) {                                                     \
    const int ka = k0 + a_kk;                                                                \
    for (int mm = tid / TK; mm < TS; mm += NT / TK) {                                        \
      const int m = (m0) + mm;                                                               \
      As[a_kk][mm] = m < (M) && ka < (K) ? LOAD_A(m, ka) : 0.0f;                             \
    }                                                                                        \
    for (int kk = tid / TS; kk < TK; kk += NT / TS) {                                        \
      const int k = k0 + kk;                                                                 \
      Bs[kk][b_nn] = b_n < (N) && k < (K) ? LOAD_B(k, b_n) : 0.0f;                           \
    }                                                                                        \
    barrier(CLK_LOCAL_MEM_FENCE);                                                            \
    for (int kk = 0; kk < TK; ++kk) {                                                        \
      float av[RM], bv[RN];                                                                  \
      for (int i = 0; i < RM; ++i) av[i] = As[kk][ly + i * WY];                              \
      for (int j = 0; j < RN; ++j) bv[j] = Bs[kk][lx + j * WX];                              \
      for (int i = 0; i < RM; ++i)                                                           \
        for (int j = 0; j < RN; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);               \
    }                                                                                        \
    barrier(CLK_LOCAL_MEM_FENCE);                                                            \
    TILED_STEP_DONE(k0)                                                                      \
  }

// Row i / column j of the work-item's register block.
#define TILED_ROW(m0, i) ((m0) + (int)get_local_id(1) + (i) * WY)
#define TILED_COL(n0, j) ((n0) + (int)get_local_id(0) + (j) * WX)

#endif
