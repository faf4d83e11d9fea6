// GridSample, RoiAlign and MaxUnpool. Float operands are loaded and stored through
// kernels/storage.cl (each with its own storage: -DSX/-DSG/-DSR/-DSY=F16, float32 otherwise) and
// computed in float, following the ONNX reference implementation's formulas step by step.
//
// Build options:
//   grid_sample: -DMODE_LINEAR|MODE_NEAREST|MODE_CUBIC -DPAD_ZEROS|PAD_BORDER|PAD_REFLECTION
//                [-DALIGN_CORNERS]
//   roi_align:   -DTI=int|long (batch indices) [-DROI_MAX] [-DHALF_PIXEL]
//   max_unpool:  -DE=uchar|ushort|uint|ulong (element word)
#include "storage.cl"
#ifndef SX
#define SX F32
#endif
#ifndef SY
#define SY F32
#endif
#ifndef SG
#define SG F32
#endif
#ifndef SR
#define SR F32
#endif

#if defined(MODE_LINEAR) || defined(MODE_NEAREST) || defined(MODE_CUBIC)
// Grid value g in [-1, 1] to a pixel coordinate along a dim of `len`.
static inline float gs_denormalize(float g, int len) {
#ifdef ALIGN_CORNERS
  return (g + 1.0f) / 2.0f * (float)(len - 1);
#else
  return ((g + 1.0f) * (float)len - 1.0f) / 2.0f;
#endif
}

// Reflects x into [lo, hi] by the nearer border until it lies inside (a zero-width range, one
// pixel with align_corners, maps everything to lo, where the reference would divide by zero).
static inline float gs_reflect(float x, float lo, float hi) {
  const float range = hi - lo;
  if (range <= 0.0f) return lo;
  if (x < lo) {
    const float dx = lo - x;
    const float n = trunc(dx / range);
    const float r = dx - n * range;
    return fmod(n, 2.0f) == 0.0f ? lo + r : hi - r;
  }
  if (x > hi) {
    const float dx = x - hi;
    const float n = trunc(dx / range);
    const float r = dx - n * range;
    return fmod(n, 2.0f) == 0.0f ? hi - r : lo + r;
  }
  return x;
}

static inline float gs_lo(int len) {
#ifdef ALIGN_CORNERS
  return 0.0f;
#else
  return -0.5f;
#endif
}
static inline float gs_hi(int len) {
#ifdef ALIGN_CORNERS
  return (float)len - 1.0f;
#else
  return (float)len - 0.5f;
#endif
}

// The source coordinate after the reference's out-of-border step (nearest rounds first).
static inline float gs_source(float g, int len) {
  float x = gs_denormalize(g, len);
#ifdef MODE_NEAREST
  x = rint(x);
#endif
  const float lo = gs_lo(len), hi = gs_hi(len);
  if (x < lo || x > hi) {
#if defined(PAD_BORDER)
    x = clamp(x, 0.0f, (float)(len - 1));
#elif defined(PAD_REFLECTION)
    x = gs_reflect(x, lo, hi);
#endif
  }
  // Far outside (or NaN) every tap reads padding: keep the integer arithmetic in range.
  return fmin(fmax(x, -8.0f), (float)len + 8.0f);
}

// The pixel index a tap at integer position i reads along a dim of `len`, or -1 for a zero.
static inline int gs_tap(int i, int len) {
#if defined(PAD_ZEROS)
  return (i >= 0 && i < len) ? i : -1;
#elif defined(PAD_BORDER)
  return clamp(i, 0, len - 1);
#else
  return clamp((int)gs_reflect((float)i, gs_lo(len), gs_hi(len)), 0, len - 1);
#endif
}

static inline float gs_pixel(const __global STORE_TYPE(SX)* x, long plane, int W, int iy, int ix) {
  return (iy < 0 || ix < 0) ? 0.0f : LD(SX, x, plane + (long)iy * W + ix);
}

static inline void gs_cubic_coeffs(float t, float* c) {
  const float a = -0.75f;
  const float t1 = t + 1.0f, t2 = 1.0f - t, t3 = 2.0f - t;
  c[0] = ((a * t1 - 5.0f * a) * t1 + 8.0f * a) * t1 - 4.0f * a;
  c[1] = ((a + 2.0f) * t - (a + 3.0f)) * t * t + 1.0f;
  c[2] = ((a + 2.0f) * t2 - (a + 3.0f)) * t2 * t2 + 1.0f;
  c[3] = ((a * t3 - 5.0f * a) * t3 + 8.0f * a) * t3 - 4.0f * a;
}

// One work-item per output element of Y [N, C, Ho, Wo]; grid [N, Ho, Wo, 2] holds (x, y).
__kernel void grid_sample(const __global STORE_TYPE(SX)* x, const __global STORE_TYPE(SG)* grid,
                          __global STORE_TYPE(SY)* y, int C, int H,
                          int W, int Ho, int Wo, long total) {
  const long i = get_global_id(0);
  if (i >= total) return;
  const long ow = i % Wo;
  long r = i / Wo;
  const long oh = r % Ho;
  r /= Ho;  // n * C + c
  const long nb = r / C;
  const long gi = ((nb * Ho + oh) * Wo + ow) * 2;
  const float sx = gs_source(LD(SG, grid, gi), W);
  const float sy = gs_source(LD(SG, grid, gi + 1), H);
  const long plane = r * (long)H * W;
  float v;
#if defined(MODE_NEAREST)
  v = gs_pixel(x, plane, W, gs_tap((int)sy, H), gs_tap((int)sx, W));
#elif defined(MODE_LINEAR)
  const float fx = floor(sx), fy = floor(sy);
  const int x0 = (int)fx, y0 = (int)fy;
  const float wx = sx - fx, wy = sy - fy;
  const int tx0 = gs_tap(x0, W), tx1 = gs_tap(x0 + 1, W);
  const float row0 = (1.0f - wx) * gs_pixel(x, plane, W, gs_tap(y0, H), tx0) + wx * gs_pixel(x, plane, W, gs_tap(y0, H), tx1);
  const float row1 =
      (1.0f - wx) * gs_pixel(x, plane, W, gs_tap(y0 + 1, H), tx0) + wx * gs_pixel(x, plane, W, gs_tap(y0 + 1, H), tx1);
  v = (1.0f - wy) * row0 + wy * row1;
#else
  const float fx = floor(sx), fy = floor(sy);
  const int x0 = (int)fx, y0 = (int)fy;
  float cx[4], cy[4];
  gs_cubic_coeffs(sx - fx, cx);
  gs_cubic_coeffs(sy - fy, cy);
  int tx[4];
  for (int k = 0; k < 4; ++k) tx[k] = gs_tap(x0 - 1 + k, W);
  v = 0.0f;
  for (int j = 0; j < 4; ++j) {
    const int ty = gs_tap(y0 - 1 + j, H);
    float row = 0.0f;
    for (int k = 0; k < 4; ++k) row += cx[k] * gs_pixel(x, plane, W, ty, tx[k]);
    v += cy[j] * row;
  }
#endif
  ST(SY, y, i, v);
}
#endif

#ifdef TI
// One work-item per output element of Y [num_rois, C, out_h, out_w]. Sampling points outside
// [-1, H] x [-1, W] count as zero (in the average's count too). Max mode is ONNX's definition
// (the reference implementation and ONNX Runtime): the maximum over the sampling points of the
// largest of the four weighted corner terms w_k * v_k, not of the interpolated values.
__kernel void roi_align(const __global STORE_TYPE(SX)* x, const __global STORE_TYPE(SR)* rois,
                        const __global TI* batch, __global STORE_TYPE(SY)* y, __global int* err, int N, int C, int H, int W, int out_h, int out_w,
                        int sampling_ratio, float spatial_scale, long total) {
  const long i = get_global_id(0);
  if (i >= total) return;
  const int pw = (int)(i % out_w);
  long r = i / out_w;
  const int ph = (int)(r % out_h);
  r /= out_h;
  const int c = (int)(r % C);
  const long n = r / C;
  const TI bi = batch[n];  // tested before widening (kernels/index.cl says why)
  const long b = bi;
  if (bi < 0 || b >= N) {
    atomic_or(err, 1);
    ST(SY, y, i, 0.0f);
    return;
  }
#ifdef HALF_PIXEL
  const float offset = 0.5f;
#else
  const float offset = 0.0f;
#endif
  const float x1 = LD(SR, rois, n * 4) * spatial_scale - offset;
  const float y1 = LD(SR, rois, n * 4 + 1) * spatial_scale - offset;
  const float x2 = LD(SR, rois, n * 4 + 2) * spatial_scale - offset;
  const float y2 = LD(SR, rois, n * 4 + 3) * spatial_scale - offset;
  float roi_w = x2 - x1, roi_h = y2 - y1;
#ifndef HALF_PIXEL
  roi_w = fmax(roi_w, 1.0f);
  roi_h = fmax(roi_h, 1.0f);
#endif
  const float bin_h = roi_h / (float)out_h, bin_w = roi_w / (float)out_w;
  const int grid_h = sampling_ratio > 0 ? sampling_ratio : (int)ceil(roi_h / (float)out_h);
  const int grid_w = sampling_ratio > 0 ? sampling_ratio : (int)ceil(roi_w / (float)out_w);
  const long plane = (b * C + c) * (long)H * W;
  float acc = 0.0f;
  bool first = true;
  for (int iy = 0; iy < grid_h; ++iy) {
    float yy = y1 + (float)ph * bin_h + ((float)iy + 0.5f) * bin_h / (float)grid_h;
    for (int ix = 0; ix < grid_w; ++ix) {
      float xx = x1 + (float)pw * bin_w + ((float)ix + 0.5f) * bin_w / (float)grid_w;
      float w1 = 0.0f, w2 = 0.0f, w3 = 0.0f, w4 = 0.0f;
      long p1 = 0, p2 = 0, p3 = 0, p4 = 0;
      if (!(yy < -1.0f || yy > (float)H || xx < -1.0f || xx > (float)W)) {
        float yc = fmax(yy, 0.0f), xc = fmax(xx, 0.0f);
        int yl = (int)yc, xl = (int)xc, yh, xh;
        if (yl >= H - 1) {
          yh = yl = H - 1;
          yc = (float)yl;
        } else {
          yh = yl + 1;
        }
        if (xl >= W - 1) {
          xh = xl = W - 1;
          xc = (float)xl;
        } else {
          xh = xl + 1;
        }
        const float ly = yc - (float)yl, lx = xc - (float)xl;
        const float hy = 1.0f - ly, hx = 1.0f - lx;
        w1 = hy * hx;
        w2 = hy * lx;
        w3 = ly * hx;
        w4 = ly * lx;
        p1 = (long)yl * W + xl;
        p2 = (long)yl * W + xh;
        p3 = (long)yh * W + xl;
        p4 = (long)yh * W + xh;
      }
      const float v1 = LD(SX, x, plane + p1), v2 = LD(SX, x, plane + p2);
      const float v3 = LD(SX, x, plane + p3), v4 = LD(SX, x, plane + p4);
#ifdef ROI_MAX
      const float v = fmax(fmax(w1 * v1, w2 * v2), fmax(w3 * v3, w4 * v4));
      acc = first ? v : fmax(acc, v);
      first = false;
#else
      acc += w1 * v1 + w2 * v2 + w3 * v3 + w4 * v4;
#endif
    }
  }
#ifndef ROI_MAX
  acc /= (float)max(grid_h * grid_w, 1);
#endif
  (void)first;
  ST(SY, y, i, acc);
}
#endif

#ifdef E
__kernel void max_unpool_zero(__global E* y, long total) {
  const long i = get_global_id(0);
  if (i < total) y[i] = (E)0;
}

// Y[I[i]] = X[i]: the indices address the flattened unpooled tensor of the size the attributes
// give (its `inferred` dims). An output_shape larger than that pads it at the end of each dim, as
// ONNX's own test data and ONNX Runtime have it (with -DPADDED, p holds ndim inferred dims, then
// ndim output strides). An index out of range sets the error flag (the run then fails naming the
// node) and is skipped. Indices that repeat leave one of their values (which one is unspecified,
// as in ONNX Runtime).
__kernel void max_unpool_scatter(const __global E* x, const __global long* idx, __global E* y, __global int* err,
                                 __global const long* p, int ndim, long n, long total) {
  const long i = get_global_id(0);
  if (i >= n) return;
  long j = idx[i];
  if (j < 0 || j >= total) {
    atomic_or(err, 1);
    return;
  }
#ifdef PADDED
  long r = j, dst = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    dst += (r % p[d]) * p[ndim + d];
    r /= p[d];
  }
  j = dst;
#else
  (void)p;
  (void)ndim;
#endif
  y[j] = x[i];
}
#endif
