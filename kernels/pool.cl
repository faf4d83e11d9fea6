// Pooling over up to three spatial dims (1-D and 2-D pools use D = H = 1 or D = 1), one work-item
// per output element; global: (OW, OD*OH, N*C). Pools are memory-bound, so the geometry stays a
// run-time parameter block instead of multiplying program variants.
//
// Build options:
//   -DT=<type>             element type (float, double, uchar, char ...); -DUSE_FP64 with double
//   -DPOOL_MAX -DT_LOWEST=<literal> [-DHAS_INDICES] [-DCOLUMN_MAJOR]
//   -DPOOL_AVG [-DCOUNT_PAD]       divide by the window inside the padded input (else: the valid
//                                  part of the window)
//   -DPOOL_LP -DP_NORM=<int>
#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double acc_t;
#else
typedef float acc_t;
#endif

// p: in D,H,W | out D,H,W | kernel | strides | dilations | pads begin | pads end (18..20)
__kernel void pool_generic(__global const T* restrict X, __global T* restrict Y,
                           __global long* restrict indices, __global const int* restrict p) {
  const int D = p[0], H = p[1], W = p[2], OD = p[3], OH = p[4], OW = p[5];
  const int ow = get_global_id(0), odh = get_global_id(1), nc = get_global_id(2);
  if (ow >= OW || odh >= OD * OH) return;
  const int od = odh / OH, oh = odh % OH;
  const int d0 = od * p[9] - p[15], h0 = oh * p[10] - p[16], w0 = ow * p[11] - p[17];
  const long plane = (long)D * H * W;
  const __global T* x = X + nc * plane;

#if defined(POOL_MAX)
  T best = T_LOWEST;
  long best_at = -1;
#else
  acc_t sum = 0;
  int valid = 0;
#endif
  for (int kd = 0; kd < p[6]; ++kd) {
    const int id = d0 + kd * p[12];
    if (id < 0 || id >= D) continue;
    for (int kh = 0; kh < p[7]; ++kh) {
      const int ih = h0 + kh * p[13];
      if (ih < 0 || ih >= H) continue;
      for (int kw = 0; kw < p[8]; ++kw) {
        const int iw = w0 + kw * p[14];
        if (iw < 0 || iw >= W) continue;
        const T v = x[((long)id * H + ih) * W + iw];
#if defined(POOL_MAX)
        if (v > best || best_at < 0) {
          best = v;
#ifdef COLUMN_MAJOR
          best_at = id + (long)D * (ih + (long)H * iw);
#else
          best_at = ((long)id * H + ih) * W + iw;
#endif
        }
#elif defined(POOL_LP)
        const acc_t a = fabs((acc_t)v);
        sum += P_NORM == 1 ? a : (P_NORM == 2 ? a * a : pow(a, (acc_t)P_NORM));
#else
        sum += (acc_t)v;
        ++valid;
#endif
      }
    }
  }

  const long o = (long)nc * OD * OH * OW + (long)odh * OW + ow;
#if defined(POOL_MAX)
  Y[o] = best;
#ifdef HAS_INDICES
  indices[o] = best_at < 0 ? 0 : nc * plane + best_at;
#endif
#elif defined(POOL_LP)
  Y[o] = (T)(P_NORM == 1 ? sum : (P_NORM == 2 ? sqrt(sum) : pow(sum, (acc_t)1 / P_NORM)));
#else
#ifdef COUNT_PAD
  // The window clipped to the padded input [-pad_begin, size + pad_end).
  int count = 1;
  const int start[3] = {d0, h0, w0}, size[3] = {D, H, W};
  for (int a = 0; a < 3; ++a) {
    int inside = 0;
    for (int k = 0; k < p[6 + a]; ++k) {
      const int i = start[a] + k * p[12 + a];
      inside += i >= -p[15 + a] && i < size[a] + p[18 + a];
    }
    count *= inside;
  }
#else
  const int count = valid;
#endif
  Y[o] = (T)(count > 0 ? sum / (acc_t)count : (acc_t)0);
#endif
}
