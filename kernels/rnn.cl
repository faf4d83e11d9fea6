// Recurrent layers (ops/rnn_ops.cpp): LSTM, GRU and RNN steps. Every kernel runs over
// (hidden unit j, batch b, direction d). The input projection XW [D][rows][G*H] (float32, row =
// t*B+b for layout 0, b*T+t for layout 1) is computed before the steps by a GEMM; RT is R
// transposed to [D][H][G*H] (float32) so that neighbouring work-items read neighbouring weights.
// States are float32 [2][D][B][H]: step s reads half s%2 and writes the other half.
//
// sequence_lens: batch b runs len[b] steps; the forward direction visits t = s, the reverse one
// t = len[b]-1-s. A step s >= len[b] carries the state over and zeroes Y at t = s, so positions
// past a sequence's end are 0 in both directions.
//
// Build options: -DSB/-DSP/-DSH0/-DSC0/-DSY/-DSYH/-DSYC/-DSR=F16 storage of B, P, initial_h,
// initial_c, Y, Y_h, Y_c, R (kernels/storage.cl); -DLENS_I64 sequence_lens as int64;
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

#define LAYOUT1 1
#define REVERSE_ONLY 2
#define INPUT_FORGET 4

// The activation in slot `slot` of the table: (code, alpha, beta) per slot, codes as
// ops/rnn_ops.cpp's ActCode.
inline float rnn_act(__global const float* acts, int slot, float x) {
  const int code = (int)acts[3 * slot];
  const float alpha = acts[3 * slot + 1], beta = acts[3 * slot + 2];
  switch (code) {
    case 0: return fmax(x, 0.0f);
    case 1: return tanh(x);
    case 2: return 1.0f / (1.0f + exp(-x));
    case 3: return alpha * x + beta;
    case 4: return x >= 0.0f ? x : alpha * x;
    case 5: return x > alpha ? x : 0.0f;
    case 6: return alpha * tanh(beta * x);
    case 7: return clamp(alpha * x + beta, 0.0f, 1.0f);
    case 8: return x >= 0.0f ? x : alpha * (exp(x) - 1.0f);
    case 9: return x / (1.0f + fabs(x));
    default: return x > 20.0f ? x : log1p(exp(x));
  }
}

inline float rnn_clip(float x, float clip) { return clip > 0.0f ? clamp(x, -clip, clip) : x; }

// Steps batch b runs (its sequence_lens entry clamped to [0, T]).
inline int rnn_len(__global const lens_t* lens, int has_lens, int b, int T) {
  return has_lens ? (int)clamp((long)lens[b], 0L, (long)T) : T;
}

inline size_t y_index(int layout1, int t, int d, int b, int j, int T, int D, int B, int H) {
  return layout1 ? (((size_t)b * T + t) * D + d) * H + j : (((size_t)t * D + d) * B + b) * H + j;
}

inline size_t state_io_index(int layout1, int d, int b, int j, int D, int B, int H) {
  return layout1 ? ((size_t)b * D + d) * H + j : ((size_t)d * B + b) * H + j;
}

__kernel void rnn_fill_zero(__global float* y) { y[get_global_id(0)] = 0.0f; }

// RT[d][k][row] = R[d][row][k].
__kernel void rnn_transpose_r(__global const STORE_TYPE(SR)* r, __global float* rt, int gh, int H) {
  const int row = get_global_id(0), k = get_global_id(1), d = get_global_id(2);
  rt[((size_t)d * H + k) * gh + row] = LD(SR, r, ((size_t)d * gh + row) * H + k);
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

// Shared prologue of a step: which time position (t) this work-item computes, or -1 when the
// batch's sequence has ended (then the state is carried over and Y zeroed here).
#define STEP_PROLOGUE(G)                                                                           \
  const int j = get_global_id(0), b = get_global_id(1), d = get_global_id(2), D = get_global_size(2); \
  const int layout1 = flags & LAYOUT1;                                                             \
  const int len = rnn_len(lens, has_lens, b, T);                                                   \
  const size_t plane = (size_t)D * B * H;                                                          \
  const size_t cur = (size_t)(step & 1) * plane, nxt = (size_t)((step + 1) & 1) * plane;               \
  const size_t sidx = ((size_t)d * B + b) * H;                                                     \
  __global const float* h_in = hs + cur + sidx;                                                    \
  const int rev = d == 1 || (flags & REVERSE_ONLY);                                                \
  const int t = rev ? len - 1 - step : step;                                                       \
  const int GH = (G) * H;                                                                          \
  __global const float* xw = XW + ((size_t)d * T * B + (layout1 ? (size_t)b * T + max(t, 0) : (size_t)max(t, 0) * B + b)) * GH; \
  __global const float* rt = RT + (size_t)d * H * GH;                                              \
  const int bias = d * 2 * GH;

#define BIAS(g) (has_b ? LD(SB, Bias, bias + (g) * H + j) + LD(SB, Bias, bias + GH + (g) * H + j) : 0.0f)

__kernel void rnn_lstm_step(__global const float* XW, __global const float* RT, __global const STORE_TYPE(SB)* Bias,
                            __global const STORE_TYPE(SP)* P, __global float* hs, __global float* cs,
                            __global float* unused, __global STORE_TYPE(SY)* Y, __global const float* acts,
                            __global const lens_t* lens, int has_lens, int has_b, int has_p, int has_y, int step, int T,
                            int B, int H, int flags, float clip) {
  STEP_PROLOGUE(4)
  if (step >= len) {
    hs[nxt + sidx + j] = h_in[j];
    cs[nxt + sidx + j] = cs[cur + sidx + j];
    if (has_y) ST(SY, Y, y_index(layout1, step, d, b, j, T, D, B, H), 0.0f);
    return;
  }
  float gi = 0.0f, go = 0.0f, gf = 0.0f, gc = 0.0f;
  for (int k = 0; k < H; ++k) {
    const float h = h_in[k];
    __global const float* w = rt + (size_t)k * GH + j;
    gi = fma(h, w[0], gi);
    go = fma(h, w[H], go);
    gf = fma(h, w[2 * H], gf);
    gc = fma(h, w[3 * H], gc);
  }
  gi += xw[j] + BIAS(0);
  go += xw[H + j] + BIAS(1);
  gf += xw[2 * H + j] + BIAS(2);
  gc += xw[3 * H + j] + BIAS(3);
  const float c_prev = cs[cur + sidx + j];
  float pi = 0.0f, po = 0.0f, pf = 0.0f;
  if (has_p) {
    pi = LD(SP, P, d * 3 * H + j);
    po = LD(SP, P, d * 3 * H + H + j);
    pf = LD(SP, P, d * 3 * H + 2 * H + j);
  }
  const int a = d * 3;
  const float i = rnn_act(acts, a, rnn_clip(gi + pi * c_prev, clip));
  const float f = (flags & INPUT_FORGET) ? 1.0f - i : rnn_act(acts, a, rnn_clip(gf + pf * c_prev, clip));
  const float cc = rnn_act(acts, a + 1, rnn_clip(gc, clip));
  const float c = f * c_prev + i * cc;
  const float o = rnn_act(acts, a, rnn_clip(go + po * c, clip));
  const float h = o * rnn_act(acts, a + 2, c);
  hs[nxt + sidx + j] = h;
  cs[nxt + sidx + j] = c;
  if (has_y) ST(SY, Y, y_index(layout1, t, d, b, j, T, D, B, H), h);
}

// GRU without linear_before_reset, first half of a step: rh = r (.) H_{t-1}.
__kernel void rnn_gru_reset(__global const float* XW, __global const float* RT, __global const STORE_TYPE(SB)* Bias,
                            __global const float* hs, __global float* rh, __global const float* acts,
                            __global const lens_t* lens, int has_lens, int has_b, int step, int T, int B, int H,
                            int flags, float clip) {
  STEP_PROLOGUE(3)
  if (step >= len) return;
  float gr = 0.0f;
  for (int k = 0; k < H; ++k) gr = fma(h_in[k], rt[(size_t)k * GH + H + j], gr);
  const float r = rnn_act(acts, d * 2, rnn_clip(gr + xw[H + j] + BIAS(1), clip));
  rh[sidx + j] = r * h_in[j];
}

__kernel void rnn_gru_step(__global const float* XW, __global const float* RT, __global const STORE_TYPE(SB)* Bias,
                           __global const float* unused_p, __global float* hs, __global float* unused_c,
                           __global const float* rh, __global STORE_TYPE(SY)* Y, __global const float* acts,
                           __global const lens_t* lens, int has_lens, int has_b, int has_p, int has_y, int step, int T,
                           int B, int H, int flags, float clip) {
  STEP_PROLOGUE(3)
  if (step >= len) {
    hs[nxt + sidx + j] = h_in[j];
    if (has_y) ST(SY, Y, y_index(layout1, step, d, b, j, T, D, B, H), 0.0f);
    return;
  }
  const int a = d * 2;
  float gz = 0.0f, gh = 0.0f;
#ifdef LINEAR_BEFORE_RESET
  float gr = 0.0f;
  for (int k = 0; k < H; ++k) {
    const float h = h_in[k];
    __global const float* w = rt + (size_t)k * GH + j;
    gz = fma(h, w[0], gz);
    gr = fma(h, w[H], gr);
    gh = fma(h, w[2 * H], gh);
  }
  const float r = rnn_act(acts, a, rnn_clip(gr + xw[H + j] + BIAS(1), clip));
  const float rb = has_b ? LD(SB, Bias, bias + GH + 2 * H + j) : 0.0f;
  const float wb = has_b ? LD(SB, Bias, bias + 2 * H + j) : 0.0f;
  const float hh = rnn_act(acts, a + 1, rnn_clip(xw[2 * H + j] + wb + r * (gh + rb), clip));
#else
  __global const float* rhb = rh + sidx;
  for (int k = 0; k < H; ++k) {
    __global const float* w = rt + (size_t)k * GH + j;
    gz = fma(h_in[k], w[0], gz);
    gh = fma(rhb[k], w[2 * H], gh);
  }
  const float hh = rnn_act(acts, a + 1, rnn_clip(gh + xw[2 * H + j] + BIAS(2), clip));
#endif
  const float z = rnn_act(acts, a, rnn_clip(gz + xw[j] + BIAS(0), clip));
  const float h = (1.0f - z) * hh + z * h_in[j];
  hs[nxt + sidx + j] = h;
  if (has_y) ST(SY, Y, y_index(layout1, t, d, b, j, T, D, B, H), h);
}

__kernel void rnn_rnn_step(__global const float* XW, __global const float* RT, __global const STORE_TYPE(SB)* Bias,
                           __global const float* unused_p, __global float* hs, __global float* unused_c,
                           __global const float* unused_rh, __global STORE_TYPE(SY)* Y, __global const float* acts,
                           __global const lens_t* lens, int has_lens, int has_b, int has_p, int has_y, int step, int T,
                           int B, int H, int flags, float clip) {
  STEP_PROLOGUE(1)
  if (step >= len) {
    hs[nxt + sidx + j] = h_in[j];
    if (has_y) ST(SY, Y, y_index(layout1, step, d, b, j, T, D, B, H), 0.0f);
    return;
  }
  float g = 0.0f;
  for (int k = 0; k < H; ++k) g = fma(h_in[k], rt[(size_t)k * GH + j], g);
  const float h = rnn_act(acts, d, rnn_clip(g + xw[j] + BIAS(0), clip));
  hs[nxt + sidx + j] = h;
  if (has_y) ST(SY, Y, y_index(layout1, t, d, b, j, T, D, B, H), h);
}

__kernel void rnn_final(__global const float* hs, __global const float* cs, __global STORE_TYPE(SYH)* yh,
                        __global STORE_TYPE(SYC)* yc, int has_yh, int has_yc, int last, int B, int H, int layout1) {
  const int j = get_global_id(0), b = get_global_id(1), d = get_global_id(2), D = get_global_size(2);
  const size_t src = (size_t)last * D * B * H + ((size_t)d * B + b) * H + j;
  const size_t dst = state_io_index(layout1, d, b, j, D, B, H);
  if (has_yh) ST(SYH, yh, dst, hs[src]);
  if (has_yc) ST(SYC, yc, dst, cs[src]);
}
