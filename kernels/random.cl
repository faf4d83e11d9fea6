// Counter-based random numbers (ops/random_ops.cpp): element i of run r is a function of (key, r,
// i) through splitmix64's mixer, so work-items need no state. Uniforms have 24 random bits;
// normals come from two uniforms by Box-Muller.
//
// Build options: -DUNIFORM (low a, high b) | -DNORMAL (mean a, scale b) | -DBERNOULLI (p from the
// input); -DTY=<type> the output type or -DOUT_HALF (float16 storage); -DTP=<type> or -DP_HALF the
// probabilities' type; -DUSE_FP64 when a double is involved.
#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#include "storage.cl"

static inline ulong rng_mix(ulong z) {
  z += 0x9e3779b97f4a7c15UL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9UL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebUL;
  return z ^ (z >> 31);
}

// A uniform in [0, 1) (or (0, 1] with `open_low`) from draw j of element i.
static inline float rng_uniform(ulong key, ulong run, ulong i, int open_low) {
  const ulong h = rng_mix(key ^ rng_mix(run * 0x632be59bd9b4e019UL ^ rng_mix(i)));
  return ((float)(h >> 40) + (open_low ? 1.0f : 0.0f)) * 0x1p-24f;
}

#if defined(UNIFORM) || defined(NORMAL) || defined(BERNOULLI)
#ifdef OUT_HALF
#define OUT_T half
#else
#define OUT_T TY
#endif
#if defined(BERNOULLI) && defined(P_HALF)
#define P_T half
#elif defined(BERNOULLI)
#define P_T TP
#else
#define P_T ulong
#endif

__kernel void random_draw(__global const P_T* p, __global OUT_T* y, __global const ulong* counter, long key, float a,
                          float b) {
  const ulong i = get_global_id(0);
  const ulong run = counter[0];
#if defined(UNIFORM)
  const float v = a + (b - a) * rng_uniform((ulong)key, run, i, 0);
#elif defined(NORMAL)
  const float u1 = rng_uniform((ulong)key, run, 2 * i, 1), u2 = rng_uniform((ulong)key, run, 2 * i + 1, 0);
  const float v = a + b * sqrt(-2.0f * log(u1)) * cospi(2.0f * u2);
#else
#ifdef P_HALF
  const float prob = LD(F16, p, i);
#else
  const float prob = (float)p[i];
#endif
  const float v = rng_uniform((ulong)key, run, i, 0) < prob ? 1.0f : 0.0f;
#endif
#ifdef OUT_HALF
  ST(F16, y, i, v);
#else
  y[i] = (TY)v;
#endif
}
#endif

__kernel void random_advance(__global ulong* counter) { counter[0] += 1; }
