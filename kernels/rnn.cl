// Recurrent layers (ops/rnn_ops.cpp): LSTM, GRU and RNN steps. Every kernel runs over
// (hidden unit j, batch b, direction d). The input projection XW [D][rows][G*H] (float32, row =
// t*B+b for layout 0, b*T+t for layout 1) is computed before the steps by a GEMM; RT is R
// transposed (float32): [D][H][G*H] so that neighbouring work-items read neighbouring weights, or
// (PACKED, the blocked variant) [D][H/VW][H][G][VW] so that a work-item reads one stream.
// States are float32 [2][D][B][H]: step s reads half s%2 and writes the other half.
//
// sequence_lens: batch b runs len[b] steps; the forward direction visits t = s, the reverse one
// t = len[b]-1-s. A step s >= len[b] carries the state over and zeroes Y at t = s, so positions
// past a sequence's end are 0 in both directions.
//
// A step work-item computes VW consecutive hidden units of one (batch, direction) with float
// vectors of width VW (CPU-shaped: local size 1, the "blocked" variant), or one unit (VW 1,
// GPU-shaped: neighbouring work-items read neighbouring weights, the "wide" variant). Biases and
// peepholes are converted to float32 once per run (rnn_prep): BF [D][2*G*H] (Wb, Rb), PF [D][3H].
//
// Build options: -DVW=1|2|4|8|16; -DSB/-DSP/-DSH0/-DSC0/-DSY/-DSYH/-DSYC/-DSR=F16 storage of B, P,
// initial_h, initial_c, Y, Y_h, Y_c, R (kernels/storage.cl); -DLENS_I64 sequence_lens as int64;
// -DLINEAR_BEFORE_RESET GRU's variant. Flags (argument): 1 layout 1, 2 the only direction is
// reverse, 4 LSTM input_forget.
#include "storage.cl"
#ifndef SB
#define SB F32
#endif
#ifndef SP
#define SP F32
#endif
#ifndef SH0
#define SH0 F32
#endif
#ifndef SC0
#define SC0 F32
#endif
#ifndef SY
#define SY F32
#endif
#ifndef SYH
#define SYH F32
#endif
#ifndef SYC
#define SYC F32
#endif
#ifndef SR
#define SR F32
#endif
#ifdef LENS_I64
typedef long lens_t;
#else
typedef int lens_t;
#endif

#ifndef VW
#define VW 1
#endif
#if VW == 1
typedef float vt;
#define VLOAD(p, i) ((p)[i])
#define VSTORE(v, p, i) ((p)[i] = (v))
#else
#define VCAT_(a, b) a##b
#define VCAT(a, b) VCAT_(a, b)
typedef VCAT(float, VW) vt;
#define VLOAD(p, i) VCAT(vload, VW)(0, (p) + (i))
#define VSTORE(v, p, i) VCAT(vstore, VW)(v, 0, (p) + (i))
#endif

#define LAYOUT1 1
#define REVERSE_ONLY 2
#define INPUT_FORGET 4

// The activation in slot `slot` of the table: (code, alpha, beta) per slot, codes as
// ops/rnn_ops.cpp's ActCode. select() keeps it one expression for scalars and vectors.
static inline vt rnn_act(__global const float* acts, int slot, vt x) {
  const int code = (int)acts[3 * slot];
  const float alpha = acts[3 * slot + 1], beta = acts[3 * slot + 2];
  switch (code) {
    case 0: return fmax(x, (vt)0.0f);
    case 1: return tanh(x);
    case 2: return (vt)1.0f / ((vt)1.0f + exp(-x));
    case 3: return alpha * x + beta;
    case 4: return select(alpha * x, x, x >= (vt)0.0f);
    case 5: return select((vt)0.0f, x, x > (vt)alpha);
    case 6: return alpha * tanh(beta * x);
    case 7: return clamp(alpha * x + beta, 0.0f, 1.0f);
    case 8: return select(alpha * (exp(x) - 1.0f), x, x >= (vt)0.0f);
    case 9: return x / (1.0f + fabs(x));
    default: return select(log1p(exp(x)), x, x > (vt)20.0f);
  }
}

static inline vt rnn_clip(vt x, float clip) { return clip > 0.0f ? clamp(x, -clip, clip) : x; }

// Steps batch b runs (its sequence_lens entry clamped to [0, T]).
static inline int rnn_len(__global const lens_t* lens, int has_lens, int b, int T) {
  if (!has_lens) return T;
  const lens_t n = lens[b];  // compared before widening (kernels/index.cl says why)
  return n < 0 ? 0 : n > T ? T : (int)n;
}

static inline size_t y_index(int layout1, int t, int d, int b, int j, int T, int D, int B, int H) {
  return layout1 ? (((size_t)b * T + t) * D + d) * H + j : (((size_t)t * D + d) * B + b) * H + j;
}

static inline size_t state_io_index(int layout1, int d, int b, int j, int D, int B, int H) {
  return layout1 ? ((size_t)b * D + d) * H + j : ((size_t)d * B + b) * H + j;
}

// VW consecutive hidden units of Y (contiguous in both layouts).
static inline void store_y(__global STORE_TYPE(SY)* Y, size_t at, vt v) {
#if VW == 1
  ST(SY, Y, at, v);
#else
  float t[VW];
  VSTORE(v, t, 0);
  for (int i = 0; i < VW; ++i) ST(SY, Y, at + i, t[i]);
#endif
}

__kernel void rnn_fill_zero(__global float* y) { y[get_global_id(0)] = 0.0f; }

// R [D][G*H][H] in the layout the steps read (see RT_ROW): with PACKED, [D][H/VW][H][G][VW] (a
// work-item's weights one contiguous stream); else [D][H][G*H].
__kernel void rnn_transpose_r(__global const STORE_TYPE(SR)* r, __global float* rt, int G, int H) {
  const int row = get_global_id(0), k = get_global_id(1), d = get_global_id(2);
  const int g = row / H, j = row % H;
#ifdef PACKED
  const size_t at = ((((size_t)d * (H / VW) + j / VW) * H + k) * G + g) * VW + j % VW;
#else
  const size_t at = ((size_t)d * H + k) * G * H + row;
#endif
  rt[at] = LD(SR, r, ((size_t)d * G * H + row) * H + k);
}

// BF[d][i] = B[d][i] (2*G*H per direction) and PF[d][i] = P[d][i] (3H) as float32, zeros when
// absent; over max(2GH, 3H) x D.
__kernel void rnn_prep(__global const STORE_TYPE(SB)* B, __global const STORE_TYPE(SP)* P, __global float* bf,
                       __global float* pf, int has_b, int has_p, int gh2, int h3) {
  const int i = get_global_id(0), d = get_global_id(1);
  if (i < gh2) bf[(size_t)d * gh2 + i] = has_b ? LD(SB, B, (size_t)d * gh2 + i) : 0.0f;
  if (i < h3) pf[(size_t)d * h3 + i] = has_p ? LD(SP, P, (size_t)d * h3 + i) : 0.0f;
}

__kernel void rnn_init(__global const STORE_TYPE(SH0)* h0, __global const STORE_TYPE(SC0)* c0, __global float* hs,
                       __global float* cs, int has_h0, int has_c0, __global const lens_t* lens, int has_lens, int T,
                       int B, int H, int layout1, __global int* err) {
  const int j = get_global_id(0), b = get_global_id(1), d = get_global_id(2), D = get_global_size(2);
  const size_t src = state_io_index(layout1, d, b, j, D, B, H);
  const size_t dst = ((size_t)d * B + b) * H + j;
  hs[dst] = has_h0 ? LD(SH0, h0, src) : 0.0f;
  cs[dst] = has_c0 ? LD(SC0, c0, src) : 0.0f;
  if (has_lens && j == 0 && d == 0 && (lens[b] < 0 || lens[b] > T)) atomic_or(err, 1);
}

// Shared prologue of a step body: this work-item's first hidden unit j (of VW), batch row b and
// direction d (of D) come from the caller; which time position t it computes; a batch whose
// sequence has ended (step >= len) carries its state over and zeroes Y at t = step instead.
#define STEP_PROLOGUE(G)                                                                           \
  const int layout1 = flags & LAYOUT1;                                                             \
  const int len = rnn_len(lens, has_lens, b, T);                                                   \
  const size_t plane = (size_t)D * B * H;                                                          \
  const size_t cur = (size_t)(step & 1) * plane, nxt = (size_t)((step + 1) & 1) * plane;             \
  const size_t sidx = ((size_t)d * B + b) * H;                                                     \
  __global const float* h_in = hs + cur + sidx;                                                    \
  const int rev = d == 1 || (flags & REVERSE_ONLY);                                                \
  const int t = rev ? len - 1 - step : step;                                                       \
  const int GH = (G) * H;                                                                          \
  __global const float* xw = XW + ((size_t)d * T * B + (layout1 ? (size_t)b * T + max(t, 0) : (size_t)max(t, 0) * B + b)) * GH; \
  __global const float* rt = RT + (size_t)d * H * GH + RT_BLOCK(G);                               \
  __global const float* bw = BF + (size_t)d * 2 * GH;                                              \
  __global const float* br = bw + GH;

// The weights of this work-item's units for input k of the recurrence, and gate g's offset in them.
#ifdef PACKED
#define RT_BLOCK(G) (size_t)(j / VW) * H * (G) * VW
#define RT_ROW(k) (rt + (size_t)(k) * (GH / H) * VW)
#define GATE(g) ((g) * VW)
#else
#define RT_BLOCK(G) 0
#define RT_ROW(k) (rt + (size_t)(k) * GH + j)
#define GATE(g) ((g) * H)
#endif

// Wb + Rb of gate g for this work-item's units.
#define BIAS(g) (VLOAD(bw, (g) * H + j) + VLOAD(br, (g) * H + j))

#define CARRY_OVER(with_c)                                                                         \
  VSTORE(VLOAD(h_in, j), hs + nxt + sidx, j);                                                       \
  if (with_c) VSTORE(VLOAD(cs + cur + sidx, j), cs + nxt + sidx, j);                                \
  if (has_y) store_y(Y, y_index(layout1, step, d, b, j, T, D, B, H), (vt)0.0f);

// The arguments every step body takes, and the ids it gets from its kernel.
#define STEP_PARAMS                                                                                \
  __global const float *XW, __global const float *RT, __global const float *BF, __global const float *PF, \
      __global float *hs, __global float *cs, __global float *rh, __global STORE_TYPE(SY) *Y,      \
      __global const float *acts, __global const lens_t *lens, int has_lens, int has_y, int T, int B, int H, \
      int flags, float clip
#define STEP_ARGS XW, RT, BF, PF, hs, cs, rh, Y, acts, lens, has_lens, has_y, T, B, H, flags, clip
#define IDS int j, int b, int d, int D, int step

// The step bodies are plain `inline` (an external definition), unlike every other helper: made
// `static inline`, clang inlines each body into both its step and its fused kernel, and PoCL's
// code generation of the fused kernels (a barrier inside the step loop, early returns inside the
// body) takes longer: test_rnn from empty caches 48 s with plain inline, 60-63 s with static
// (AMD EPYC, 2026-12-04). The bodies are four functions, so the bitcode they add is small.

inline void lstm_body(STEP_PARAMS, IDS) {
  STEP_PROLOGUE(4)
  if (step >= len) {
    CARRY_OVER(1)
    return;
  }
  vt gi = 0.0f, go = 0.0f, gf = 0.0f, gc = 0.0f;
  for (int k = 0; k < H; ++k) {
    const vt h = (vt)h_in[k];
    __global const float* w = RT_ROW(k);
    gi = fma(h, VLOAD(w, GATE(0)), gi);
    go = fma(h, VLOAD(w, GATE(1)), go);
    gf = fma(h, VLOAD(w, GATE(2)), gf);
    gc = fma(h, VLOAD(w, GATE(3)), gc);
  }
  gi += VLOAD(xw, j) + BIAS(0);
  go += VLOAD(xw, H + j) + BIAS(1);
  gf += VLOAD(xw, 2 * H + j) + BIAS(2);
  gc += VLOAD(xw, 3 * H + j) + BIAS(3);
  const vt c_prev = VLOAD(cs + cur + sidx, j);
  __global const float* p = PF + (size_t)d * 3 * H;
  const int a = d * 3;
  const vt i = rnn_act(acts, a, rnn_clip(gi + VLOAD(p, j) * c_prev, clip));
  const vt f = (flags & INPUT_FORGET) ? (vt)1.0f - i : rnn_act(acts, a, rnn_clip(gf + VLOAD(p, 2 * H + j) * c_prev, clip));
  const vt cc = rnn_act(acts, a + 1, rnn_clip(gc, clip));
  const vt c = f * c_prev + i * cc;
  const vt o = rnn_act(acts, a, rnn_clip(go + VLOAD(p, H + j) * c, clip));
  const vt h = o * rnn_act(acts, a + 2, c);
  VSTORE(h, hs + nxt + sidx, j);
  VSTORE(c, cs + nxt + sidx, j);
  if (has_y) store_y(Y, y_index(layout1, t, d, b, j, T, D, B, H), h);
}

// GRU without linear_before_reset, first half of a step: rh = r (.) H_{t-1}.
inline void gru_reset_body(STEP_PARAMS, IDS) {
  STEP_PROLOGUE(3)
  if (step >= len) return;
  vt gr = 0.0f;
  for (int k = 0; k < H; ++k) gr = fma((vt)h_in[k], VLOAD(RT_ROW(k), GATE(1)), gr);
  const vt r = rnn_act(acts, d * 2, rnn_clip(gr + VLOAD(xw, H + j) + BIAS(1), clip));
  VSTORE(r * VLOAD(h_in, j), rh + sidx, j);
}

inline void gru_body(STEP_PARAMS, IDS) {
  STEP_PROLOGUE(3)
  if (step >= len) {
    CARRY_OVER(0)
    return;
  }
  const int a = d * 2;
  vt gz = 0.0f, gh = 0.0f;
#ifdef LINEAR_BEFORE_RESET
  vt gr = 0.0f;
  for (int k = 0; k < H; ++k) {
    const vt h = (vt)h_in[k];
    __global const float* w = RT_ROW(k);
    gz = fma(h, VLOAD(w, GATE(0)), gz);
    gr = fma(h, VLOAD(w, GATE(1)), gr);
    gh = fma(h, VLOAD(w, GATE(2)), gh);
  }
  const vt r = rnn_act(acts, a, rnn_clip(gr + VLOAD(xw, H + j) + BIAS(1), clip));
  const vt hh = rnn_act(acts, a + 1, rnn_clip(VLOAD(xw, 2 * H + j) + VLOAD(bw, 2 * H + j) + r * (gh + VLOAD(br, 2 * H + j)), clip));
#else
  __global const float* rhb = rh + sidx;
  for (int k = 0; k < H; ++k) {
    __global const float* w = RT_ROW(k);
    gz = fma((vt)h_in[k], VLOAD(w, GATE(0)), gz);
    gh = fma((vt)rhb[k], VLOAD(w, GATE(2)), gh);
  }
  const vt hh = rnn_act(acts, a + 1, rnn_clip(gh + VLOAD(xw, 2 * H + j) + BIAS(2), clip));
#endif
  const vt z = rnn_act(acts, a, rnn_clip(gz + VLOAD(xw, j) + BIAS(0), clip));
  const vt h = ((vt)1.0f - z) * hh + z * VLOAD(h_in, j);
  VSTORE(h, hs + nxt + sidx, j);
  if (has_y) store_y(Y, y_index(layout1, t, d, b, j, T, D, B, H), h);
}

inline void rnn_body(STEP_PARAMS, IDS) {
  STEP_PROLOGUE(1)
  if (step >= len) {
    CARRY_OVER(0)
    return;
  }
  vt g = 0.0f;
  for (int k = 0; k < H; ++k) g = fma((vt)h_in[k], VLOAD(RT_ROW(k), GATE(0)), g);
  const vt h = rnn_act(acts, d, rnn_clip(g + VLOAD(xw, j) + BIAS(0), clip));
  VSTORE(h, hs + nxt + sidx, j);
  if (has_y) store_y(Y, y_index(layout1, t, d, b, j, T, D, B, H), h);
}

// One launch per step: this work-item's ids from the global range (H/VW, B, D).
#define GLOBAL_IDS get_global_id(0) * VW, get_global_id(1), get_global_id(2), get_global_size(2), step

__kernel void rnn_lstm_step(STEP_PARAMS, int step) { lstm_body(STEP_ARGS, GLOBAL_IDS); }
__kernel void rnn_gru_reset(STEP_PARAMS, int step) { gru_reset_body(STEP_ARGS, GLOBAL_IDS); }
__kernel void rnn_gru_step(STEP_PARAMS, int step) { gru_body(STEP_ARGS, GLOBAL_IDS); }
__kernel void rnn_rnn_step(STEP_PARAMS, int step) { rnn_body(STEP_ARGS, GLOBAL_IDS); }

// Every step in one launch (the "fused" variant, for layers whose steps are too small to pay a
// launch each): one work-group holds every (unit block, batch row, direction), barriers order the
// steps (a global fence makes a step's states visible to the whole group).
#define LOCAL_IDS get_local_id(0) * VW, get_local_id(1), get_local_id(2), get_local_size(2), step

__kernel void rnn_lstm_fused(STEP_PARAMS) {
  for (int step = 0; step < T; ++step) {
    lstm_body(STEP_ARGS, LOCAL_IDS);
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
}

__kernel void rnn_gru_fused(STEP_PARAMS) {
  for (int step = 0; step < T; ++step) {
#ifndef LINEAR_BEFORE_RESET
    gru_reset_body(STEP_ARGS, LOCAL_IDS);
    barrier(CLK_GLOBAL_MEM_FENCE);
#endif
    gru_body(STEP_ARGS, LOCAL_IDS);
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
}

__kernel void rnn_rnn_fused(STEP_PARAMS) {
  for (int step = 0; step < T; ++step) {
    rnn_body(STEP_ARGS, LOCAL_IDS);
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
}

__kernel void rnn_final(__global const float* hs, __global const float* cs, __global STORE_TYPE(SYH)* yh,
                        __global STORE_TYPE(SYC)* yc, int has_yh, int has_yc, int last, int B, int H, int layout1) {
  const int j = get_global_id(0), b = get_global_id(1), d = get_global_id(2), D = get_global_size(2);
  const size_t src = (size_t)last * D * B * H + ((size_t)d * B + b) * H + j;
  const size_t dst = state_io_index(layout1, d, b, j, D, B, H);
  if (has_yh) ST(SYH, yh, dst, hs[src]);
  if (has_yc) ST(SYC, yc, dst, cs[src]);
}
