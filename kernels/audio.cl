// DFT and STFT (ops/audio_ops.cpp): one work-item per output bin k of one transform (o) and inner
// position (i), a direct sum over the samples with float32 accumulation. Sample n of transform
// (o, i) is at (o / frames) * batch_stride + (o % frames) * frame_stride + n * n_stride + i * cplx
// (cplx = 1: real samples, 2: real and imaginary parts); samples past `samples` are the zero
// padding of a longer transform. tw holds cos and sin of 2 pi m / L, and the angle index k * n is
// reduced mod L in integers, so a long transform keeps the twiddles' accuracy. The output is
// [transforms, bins, inner, 2].
//
// Build options: -DSX/-DSY/-DSW=F16 storage of the signal, output and window (kernels/storage.cl);
// -DINVERSE e^{+i...} and 1/L; -DIRFFT (with INVERSE) a one-sided spectrum in, the real signal out
// (one float per sample); -DWINDOW multiply sample n by window[n] (STFT).
#include "storage.cl"
#ifndef SX
#define SX F32
#endif
#ifndef SY
#define SY F32
#endif
#ifndef SW
#define SW F32
#endif

__kernel void dft_direct(__global const STORE_TYPE(SX)* x, __global STORE_TYPE(SY)* y, __global const float* tw,
                         __global const STORE_TYPE(SW)* window, long frames, long batch_stride, long frame_stride,
                         long n_stride, long cplx, long samples, long length, long bins) {
  const long k = get_global_id(0), i = get_global_id(1), o = get_global_id(2);
  const long inner = get_global_size(1);
  __global const STORE_TYPE(SX)* p = x + (o / frames) * batch_stride + (o % frames) * frame_stride + i * cplx;
  float re = 0.0f, im = 0.0f;
  long m = 0;  // k * n mod length
  for (long n = 0; n < samples; ++n) {
    float xr = LD(SX, p, n * n_stride);
    float xi = cplx == 2 ? LD(SX, p, n * n_stride + 1) : 0.0f;
#ifdef WINDOW
    const float w = LD(SW, window, n);
    xr *= w;
    xi *= w;
#endif
    const float c = tw[2 * m], s = tw[2 * m + 1];
#ifdef IRFFT
    // Re(X[n] e^{2 pi i nk / L}), each bin but the first (and the middle one of an even length)
    // standing for its conjugate mirror too; their imaginary parts do not count (numpy's irfft).
    const bool self_mirror = n == 0 || 2 * n == length;
    re += (self_mirror ? 1.0f : 2.0f) * (xr * c - (self_mirror ? 0.0f : xi * s));
#elif defined(INVERSE)
    re = fma(xr, c, fma(-xi, s, re));
    im = fma(xr, s, fma(xi, c, im));
#else
    re = fma(xr, c, fma(xi, s, re));
    im = fma(-xr, s, fma(xi, c, im));
#endif
    m += k;
    if (m >= length) m -= length;
  }
#ifdef INVERSE
  re /= (float)length;
  im /= (float)length;
#endif
#ifdef IRFFT
  ST(SY, y, (o * bins + k) * inner + i, re);
#else
  const long at = ((o * bins + k) * inner + i) * 2;
  ST(SY, y, at, re);
  ST(SY, y, at + 1, im);
#endif
}
