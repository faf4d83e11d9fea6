// Scaled dot-product attention in one kernel (the fuse_attention pass makes the node from
// MatMul -> [scale] -> [mask] -> Softmax(last axis) -> MatMul):
//
//   s[n] = sum_d q[m, d] * kt[d, n]            (kt: the keys already transposed, [D, N])
//   s[n] = s[n] * scale | s[n] / scale          (-DSCALE_MUL | -DSCALE_DIV)
//   s[n] = s[n] + mask[m, n]                    (-DMASK_ADD)
//        | cond[m, n] ? fill : s[n]             (-DMASK_FILL_TRUE)
//        | cond[m, n] ? s[n] : fill             (-DMASK_FILL_FALSE)
//   (-DMASK_FIRST: the mask before the scale)
//   a row whose every score is -inf: zeros (-DZERO_MASKED_ROWS, Attention-23), else NaN
//   p[n] = exp(s[n] - max s) / sum exp(...)
//   y[m, dv] = sum_n p[n] * v[n, dv]
//
// RB query rows of one batch (b1, b2) per work-item. The rows' scores live in `sc` (float), so
// they are computed and kept in float whatever the storage:
// the unfused chain rounded each step to the storage type. Each step is the same arithmetic as the
// op it replaces (a float division for Div, the softmax of kernels/softmax.cl with each exp() kept),
// the two products summed in order of d and n: within float rounding of the unfused chain, whose
// GEMMs sum in blocks. The last dims of q, kt, v and y are contiguous; their rows and batch dims
// have strides (0 where an operand broadcasts; a transposed view of attention heads), and so do the
// mask's four dims.
//
// Build options:
//   -DT=float|half (with half: -DS=F16)   storage of q, kt, v, an added mask and y
//   -DVW=4|8|16                           vector width of the score and output loops
//   -DRB=n                                query rows per work-item (CPU devices: 4)
//   -DKT_GATHER                           Kt's keys have a stride (k_sn != 1), or are float16 on a
//                                         CPU device: each work-item first
//                                         copies its batch's [D, N] block into its scratch (float)
//   -DF32_COPIES                          float16 storage on CPU devices: each work-item also copies
//                                         its batch's values [N, DV] and, per block, its RB query
//                                         rows into its scratch as float, so that the products
//                                         read floats (a broadcast from memory per query element
//                                         instead of a conversion and a shuffle at every use)
#include "storage.cl"
#ifndef S
#define S F32
#endif
#ifndef VW
#define VW 8
#endif
#ifndef RB
#define RB 1
#endif

#define AT_(a, b) a##b
#define AT(a, b) AT_(a, b)
#define vecf AT(float, VW)

// The keys' storage as the score loops read them: gathered keys are float.
#ifdef KT_GATHER
#define KS F32
#define SC_ROWS (RB + D)
#else
#define KS S
#define SC_ROWS RB
#endif
// The queries' and values' storage as the product loops read them.
#ifdef F32_COPIES
#define QS F32
#define VS F32
#define VT float
#else
#define QS S
#define VS S
#define VT T
#endif

#if defined(MASK_FILL_TRUE) || defined(MASK_FILL_FALSE)
#define MASK_T uchar
#else
#define MASK_T T
#endif

#if defined(SCALE_MUL)
#define APPLY_SCALE(x) ((x) * scale)
#elif defined(SCALE_DIV)
#define APPLY_SCALE(x) ((x) / scale)
#else
#define APPLY_SCALE(x) (x)
#endif

#if defined(MASK_ADD)
#define APPLY_MASK(x, mr, n) ((x) + LD(S, mr, (n) * m_sn))
#elif defined(MASK_FILL_TRUE)
#define APPLY_MASK(x, mr, n) ((mr)[(n) * m_sn] ? fill : (x))
#elif defined(MASK_FILL_FALSE)
#define APPLY_MASK(x, mr, n) ((mr)[(n) * m_sn] ? (x) : fill)
#else
#define APPLY_MASK(x, mr, n) (x)
#endif

// The mask for VW scores from n: a vector when the mask varies along n (m_sn == 1), else its one
// value for the row.
#if defined(MASK_ADD)
#define APPLY_MASKV(x, mr, n) ((x) + (m_sn ? LDN(S, VW, (mr) + (n), 0) : (vecf)LD(S, mr, 0)))
#elif defined(MASK_FILL_TRUE) || defined(MASK_FILL_FALSE)
#define MASK_BITS(mr, n) \
  (m_sn ? AT(convert_int, VW)(AT(vload, VW)(0, (mr) + (n))) != 0 : (AT(int, VW))(-((mr)[0] != 0)))
#if defined(MASK_FILL_TRUE)
#define APPLY_MASKV(x, mr, n) select((x), (vecf)fill, MASK_BITS(mr, n))
#else
#define APPLY_MASKV(x, mr, n) select((vecf)fill, (x), MASK_BITS(mr, n))
#endif
#else
#define APPLY_MASKV(x, mr, n) (x)
#endif

// The softmax of one row of scores in place: scale and mask, the maximum, each exp() once and
// the division (kernels/softmax.cl's EXP_ONCE order), in vectors (scalar exp() calls cost ~6 ns
// an element on PoCL) and the last N % VW one by one.
void softmax_row(__global float* s, __global const MASK_T* mr, long N, long m_sn, float scale,
                 float fill) {
  const long nv = N / VW * VW;
  long n = 0;
  vecf mxv = (vecf)(-INFINITY);
  for (; n < nv; n += VW) {
    vecf x = AT(vload, VW)(0, s + n);
#ifdef MASK_FIRST
    x = APPLY_SCALE(APPLY_MASKV(x, mr, n));
#else
    x = APPLY_MASKV(APPLY_SCALE(x), mr, n);
#endif
    AT(vstore, VW)(x, 0, s + n);
    mxv = fmax(mxv, x);
  }
  float lanes[VW];
  AT(vstore, VW)(mxv, 0, lanes);
  float mx = -INFINITY;
  for (int i = 0; i < VW; ++i) mx = fmax(mx, lanes[i]);
  for (; n < N; ++n) {
#ifdef MASK_FIRST
    const float x = APPLY_SCALE(APPLY_MASK(s[n], mr, n));
#else
    const float x = APPLY_MASK(APPLY_SCALE(s[n]), mr, n);
#endif
    s[n] = x;
    mx = fmax(mx, x);
  }
#ifdef ZERO_MASKED_ROWS
  // Every key masked (Attention-23): a row of zeros, not the NaNs of exp(-inf - -inf).
  if (mx == -INFINITY) {
    for (n = 0; n < N; ++n) s[n] = 0.0f;
    return;
  }
#endif
  vecf sumv = (vecf)0.0f;
  for (n = 0; n < nv; n += VW) {
    const vecf e = exp(AT(vload, VW)(0, s + n) - mx);
    AT(vstore, VW)(e, 0, s + n);
    sumv += e;
  }
  AT(vstore, VW)(sumv, 0, lanes);
  float sum = 0.0f;
  for (int i = 0; i < VW; ++i) sum += lanes[i];
  for (; n < N; ++n) {
    const float e = exp(s[n] - mx);
    s[n] = e;
    sum += e;
  }
  for (n = 0; n < nv; n += VW) AT(vstore, VW)(AT(vload, VW)(0, s + n) / sum, 0, s + n);
  for (; n < N; ++n) s[n] = s[n] / sum;
}

// Blocks of RB query rows of one batch, `bpg` blocks per work-item (global {groups, B2, B1}): each
// key and value vector loaded once for a block's RB rows, as a GEMM's register block does. A
// block's rows past M compute row M - 1 again and store nothing. `sc` holds RB rows of N floats
// per work-item (and with KT_GATHER its [D, N] keys, gathered once for all its blocks; with
// F32_COPIES then its [N, DV] values and RB query rows of D, as float).
__kernel void attention_rows(__global const T* q, __global const T* kt, __global const T* v,
                             __global const MASK_T* mask, __global T* y, __global float* sc, long M,
                             long N, long D, long DV, long q_off, long q_s1, long q_s2, long q_sm,
                             long q_sd, long k_off, long k_s1, long k_s2, long k_sd, long k_sn,
                             long v_off, long v_s1, long v_s2, long v_sn, long y_s1, long y_s2,
                             long y_sm, long m_s1, long m_s2, long m_sm, long m_sn, float scale,
                             float fill, long bpg) {
  const long grp = get_global_id(0), b2 = get_global_id(1), b1 = get_global_id(2);
  const long groups = get_global_size(0), B2 = get_global_size(1);
  const long first = grp * bpg;
  if (first * RB >= M) return;
  __global const T* qb = q + q_off + b1 * q_s1 + b2 * q_s2;
  __global const T* vb = v + v_off + b1 * v_s1 + b2 * v_s2;
  __global const MASK_T* mb = mask + b1 * m_s1 + b2 * m_s2;
#ifdef F32_COPIES
  const long per = SC_ROWS * N + N * DV + RB * D;
#else
  const long per = SC_ROWS * N;
#endif
  __global float* s = sc + ((b1 * B2 + b2) * groups + grp) * per;
  __global T* yb = y + b1 * y_s1 + b2 * y_s2;
#ifdef KT_GATHER
  // Kt's keys are not contiguous (K's rows, transposed by a view): copied into this work-item's
  // scratch after its scores' rows as a contiguous [D, N] block, in float.
  __global float* kb = s + RB * N;
  {
    __global const T* kg = kt + k_off + b1 * k_s1 + b2 * k_s2;
    for (long d = 0; d < D; ++d)
      for (long n = 0; n < N; ++n) kb[d * N + n] = LD(S, kg, d * k_sd + n * k_sn);
  }
  const long kd = N;
#else
  __global const T* kb = kt + k_off + b1 * k_s1 + b2 * k_s2;
  const long kd = k_sd;
#endif
#ifdef F32_COPIES
  // The values as float [N, DV], once for all the work-item's blocks; the query rows per block.
  __global float* vf = s + SC_ROWS * N;
  __global float* qf = vf + N * DV;
  for (long n = 0; n < N; ++n) {
    long c = 0;
    for (; c + VW <= DV; c += VW) AT(vstore, VW)(LDN(S, VW, vb + n * v_sn + c, 0), 0, vf + n * DV + c);
    for (; c < DV; ++c) vf[n * DV + c] = LD(S, vb, n * v_sn + c);
  }
  __global const VT* vbx = vf;
  const long vsn = DV;
  __global const float* qbx = qf;
  const long qsd = 1;
#else
  __global const VT* vbx = vb;
  const long vsn = v_sn;
  __global const T* qbx = qb;
  const long qsd = q_sd;
#endif
  for (long blk = first; blk < first + bpg && blk * RB < M; ++blk) {
    const long m0 = blk * RB;
    long rows[RB];
#pragma unroll
    for (int r = 0; r < RB; ++r) rows[r] = min(m0 + r, M - 1);
    // Where each block row's query starts in qbx (elements).
    long qrow[RB];
#ifdef F32_COPIES
#pragma unroll
    for (int r = 0; r < RB; ++r) {
      for (long d = 0; d < D; ++d) qf[r * D + d] = LD(S, qb, rows[r] * q_sm + d * q_sd);
      qrow[r] = r * D;
    }
#else
#pragma unroll
    for (int r = 0; r < RB; ++r) qrow[r] = rows[r] * q_sm;
#endif

    // Scores: two vectors of keys at a time, then one, then four, then one by one.
    long n = 0;
    for (; n + 2 * VW <= N; n += 2 * VW) {
      vecf a0[RB], a1[RB];
#pragma unroll
      for (int r = 0; r < RB; ++r) a0[r] = a1[r] = (vecf)0.0f;
      for (long d = 0; d < D; ++d) {
        const vecf k0 = LDN(KS, VW, kb + d * kd + n, 0), k1 = LDN(KS, VW, kb + d * kd + n + VW, 0);
#pragma unroll
        for (int r = 0; r < RB; ++r) {
          const vecf qd = (vecf)LD(QS, qbx, qrow[r] + d * qsd);
          a0[r] = fma(qd, k0, a0[r]);
          a1[r] = fma(qd, k1, a1[r]);
        }
      }
#pragma unroll
      for (int r = 0; r < RB; ++r) {
        AT(vstore, VW)(a0[r], 0, s + r * N + n);
        AT(vstore, VW)(a1[r], 0, s + r * N + n + VW);
      }
    }
    for (; n + VW <= N; n += VW) {
      vecf a0[RB];
#pragma unroll
      for (int r = 0; r < RB; ++r) a0[r] = (vecf)0.0f;
      for (long d = 0; d < D; ++d) {
        const vecf k0 = LDN(KS, VW, kb + d * kd + n, 0);
#pragma unroll
        for (int r = 0; r < RB; ++r) a0[r] = fma((vecf)LD(QS, qbx, qrow[r] + d * qsd), k0, a0[r]);
      }
#pragma unroll
      for (int r = 0; r < RB; ++r) AT(vstore, VW)(a0[r], 0, s + r * N + n);
    }
#if VW > 4
    for (; n + 4 <= N; n += 4) {
      float4 a0[RB];
#pragma unroll
      for (int r = 0; r < RB; ++r) a0[r] = (float4)0.0f;
      for (long d = 0; d < D; ++d) {
        const float4 k0 = LDN(KS, 4, kb + d * kd + n, 0);
#pragma unroll
        for (int r = 0; r < RB; ++r) a0[r] = fma((float4)LD(QS, qbx, qrow[r] + d * qsd), k0, a0[r]);
      }
#pragma unroll
      for (int r = 0; r < RB; ++r) vstore4(a0[r], 0, s + r * N + n);
    }
#endif
    for (; n < N; ++n) {
      float a0[RB];
#pragma unroll
      for (int r = 0; r < RB; ++r) a0[r] = 0.0f;
      for (long d = 0; d < D; ++d) {
        const float k0 = LD(KS, kb, d * kd + n);
#pragma unroll
        for (int r = 0; r < RB; ++r) a0[r] = fma(LD(QS, qbx, qrow[r] + d * qsd), k0, a0[r]);
      }
#pragma unroll
      for (int r = 0; r < RB; ++r) s[r * N + n] = a0[r];
    }

    for (int r = 0; r < RB; ++r) softmax_row(s + r * N, mb + rows[r] * m_sm, N, m_sn, scale, fill);

    // Output: two vectors of columns at a time, then one, then four, then one by one.
    long c = 0;
    for (; c + 2 * VW <= DV; c += 2 * VW) {
      vecf a0[RB], a1[RB];
#pragma unroll
      for (int r = 0; r < RB; ++r) a0[r] = a1[r] = (vecf)0.0f;
      for (long k = 0; k < N; ++k) {
        const vecf v0 = LDN(VS, VW, vbx + k * vsn + c, 0), v1 = LDN(VS, VW, vbx + k * vsn + c + VW, 0);
#pragma unroll
        for (int r = 0; r < RB; ++r) {
          const vecf p = (vecf)s[r * N + k];
          a0[r] = fma(p, v0, a0[r]);
          a1[r] = fma(p, v1, a1[r]);
        }
      }
      for (int r = 0; r < RB && m0 + r < M; ++r) {
        STN(S, VW, yb + (m0 + r) * y_sm + c, 0, a0[r]);
        STN(S, VW, yb + (m0 + r) * y_sm + c + VW, 0, a1[r]);
      }
    }
    for (; c + VW <= DV; c += VW) {
      vecf a0[RB];
#pragma unroll
      for (int r = 0; r < RB; ++r) a0[r] = (vecf)0.0f;
      for (long k = 0; k < N; ++k) {
        const vecf v0 = LDN(VS, VW, vbx + k * vsn + c, 0);
#pragma unroll
        for (int r = 0; r < RB; ++r) a0[r] = fma((vecf)s[r * N + k], v0, a0[r]);
      }
      for (int r = 0; r < RB && m0 + r < M; ++r) STN(S, VW, yb + (m0 + r) * y_sm + c, 0, a0[r]);
    }
#if VW > 4
    for (; c + 4 <= DV; c += 4) {
      float4 a0[RB];
#pragma unroll
      for (int r = 0; r < RB; ++r) a0[r] = (float4)0.0f;
      for (long k = 0; k < N; ++k) {
        const float4 v0 = LDN(VS, 4, vbx + k * vsn + c, 0);
#pragma unroll
        for (int r = 0; r < RB; ++r) a0[r] = fma((float4)s[r * N + k], v0, a0[r]);
      }
      for (int r = 0; r < RB && m0 + r < M; ++r) STN(S, 4, yb + (m0 + r) * y_sm + c, 0, a0[r]);
    }
#endif
    for (; c < DV; ++c) {
      float a0[RB];
#pragma unroll
      for (int r = 0; r < RB; ++r) a0[r] = 0.0f;
      for (long k = 0; k < N; ++k) {
        const float v0 = LD(VS, vbx, k * vsn + c);
#pragma unroll
        for (int r = 0; r < RB; ++r) a0[r] = fma(s[r * N + k], v0, a0[r]);
      }
      for (int r = 0; r < RB && m0 + r < M; ++r) ST(S, yb + (m0 + r) * y_sm, c, a0[r]);
    }
  }
}
