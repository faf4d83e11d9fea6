// Storage types of float operands. A kernel names each float operand's storage with a build
// option (-DXS=F16, default F32) and reads and writes it through these macros; arithmetic always
// happens in float.
//
//   STORE_TYPE(S)            the pointer element type: float or half
//   LD(S, p, i)              element i as a float
//   ST(S, p, i, v)           stores float v as element i (half: round to nearest even)
//   LDN(S, N, p, i)          the i-th vector of N floats
//   STN(S, N, p, i, v)       stores a floatN as the i-th vector
//
// Half values are moved as 16-bit integers and converted with integer arithmetic (exact, round to
// nearest even, infinities and NaN kept), or with the CPU's conversion instructions where the
// compiler offers them (below): pointers to half are allowed without cl_khr_fp16, and this is
// portable. PoCL 3.1's vload_half/vstore_half are library calls (resnet18 ran 2x slower through
// them) and its vload_halfN crashed inside unrolled kernels.
#ifndef STORAGE_CL
#define STORAGE_CL

#define STORE_TYPE_F32 float
#define STORE_TYPE_F16 half
#define STORE_TYPE_(s) STORE_TYPE_##s
#define STORE_TYPE(s) STORE_TYPE_(s)

// half bits -> float: the exponent and mantissa moved into float position, times 2^112, rebias
// normal numbers and make subnormals exact in one multiplication (floats keep denormals on CPUs;
// a device that flushes them would lose halves below 2^-14 only); infinities and NaN by a select.
#define HALF_TO_FLOAT_BODY(U, F, I, CVT_U, CVT_F, CVT_I)                                       \
  const U u = CVT_U(h);                                                                    \
  const U em = u & 0x7fffu;                                                                \
  F r = as_##F(em << 13) * 0x1p112f;                                                       \
  r = select(r, as_##F((em << 13) | (U)0x7f800000u), CVT_I(em >= (U)0x7c00u));              \
  return as_##F(as_##U(r) | ((u & 0x8000u) << 16));

// float -> half bits, round to nearest even; beyond the largest half (65504 after rounding)
// becomes infinity, NaN stays NaN.
#define FLOAT_TO_HALF_BODY(U, F, I, S16, CVT_U, CVT_S16, CVT_I)                                 \
  const U x = as_##U(f);                                                                   \
  const U sign = (x >> 16) & 0x8000u;                                                      \
  const U ax = x & 0x7fffffffu;                                                            \
  const U normal = (ax + 0xfffu + ((ax >> 13) & 1u) - (U)0x38000000u) >> 13;               \
  const U sub = CVT_U(rint(as_##F(ax) * 16777216.0f));                                     \
  U r = select(normal, sub, CVT_I(ax < (U)0x38800000u));                                   \
  r = select(r, (U)0x7c00u, CVT_I(ax >= (U)0x477ff000u));                                  \
  r = select(r, (U)0x7e00u, CVT_I(ax > (U)0x7f800000u));                                   \
  return CVT_S16(sign | r);

#if defined(__clang__) && defined(__F16C__) && !defined(OI_FP16_CONVERT_SOFT)
// Where the kernel compiler is clang targeting an x86 CPU with F16C (PoCL on the CPUs of
// development), the compiler's own conversions: __fp16 vectors converted with
// __builtin_convertvector become vcvtph2ps/vcvtps2ph, exact and rounding to nearest even like the
// integer code below (NaN payloads aside). A half vector is only converted, never computed with,
// so cl_khr_fp16 is not needed. Scalars go through 2-vectors: clang refuses a scalar __fp16 cast
// in OpenCL C. mobilenet_v2 at fp16 storage on a 2-core Xeon: 9.3 -> 5.3 ms (fp32: 4.2 ms).
// -DOI_FP16_CONVERT_SOFT (OCL_INFER_EXTRA_BUILD_OPTIONS) forces the integer code; the
// test_fp16_soft ctest runs test_fp16 so.
typedef __fp16 oi_fp16x2 __attribute__((ext_vector_type(2)));
typedef __fp16 oi_fp16x4 __attribute__((ext_vector_type(4)));
typedef __fp16 oi_fp16x8 __attribute__((ext_vector_type(8)));
typedef __fp16 oi_fp16x16 __attribute__((ext_vector_type(16)));
static inline float half_bits_to_float(ushort h) {
  return __builtin_convertvector(__builtin_astype((ushort2)(h, 0), oi_fp16x2), float2).x;
}
static inline ushort float_to_half_bits(float f) {
  return (ushort)__builtin_astype(__builtin_convertvector((float2)(f, 0.0f), oi_fp16x2), uint);
}
#define HALF_VECTOR_CONVERSIONS(n)                                                             \
  static inline float##n half_bits_to_float##n(ushort##n h) {                                     \
    return __builtin_convertvector(__builtin_astype(h, oi_fp16x##n), float##n);            \
  }                                                                                        \
  static inline ushort##n float_to_half_bits##n(float##n f) {                                     \
    return __builtin_astype(__builtin_convertvector(f, oi_fp16x##n), ushort##n);           \
  }
#else
static inline float half_bits_to_float(ushort h) {
  const uint u = h;
  const uint em = u & 0x7fffu;
  float r = as_float(em << 13) * 0x1p112f;
  if (em >= 0x7c00u) r = as_float((em << 13) | 0x7f800000u);
  return as_float(as_uint(r) | ((u & 0x8000u) << 16));
}

static inline ushort float_to_half_bits(float f) {
  const uint x = as_uint(f);
  const uint sign = (x >> 16) & 0x8000u;
  const uint ax = x & 0x7fffffffu;
  uint r;
  if (ax > 0x7f800000u) r = 0x7e00u;                     // NaN
  else if (ax >= 0x477ff000u) r = 0x7c00u;               // rounds past 65504: infinity
  else if (ax < 0x38800000u) r = (uint)rint(as_float(ax) * 16777216.0f);  // subnormal
  else r = (ax + 0xfffu + ((ax >> 13) & 1u) - 0x38000000u) >> 13;
  return (ushort)(sign | r);
}

#define HALF_VECTOR_CONVERSIONS(n)                                                             \
  static inline float##n half_bits_to_float##n(ushort##n h) {                                     \
    HALF_TO_FLOAT_BODY(uint##n, float##n, int##n, convert_uint##n, convert_float##n,       \
                       convert_int##n)                                                     \
  }                                                                                        \
  static inline ushort##n float_to_half_bits##n(float##n f) {                                     \
    FLOAT_TO_HALF_BODY(uint##n, float##n, int##n, ushort##n, convert_uint##n,              \
                       convert_ushort##n, convert_int##n)                                  \
  }
#endif
HALF_VECTOR_CONVERSIONS(2)
HALF_VECTOR_CONVERSIONS(4)
HALF_VECTOR_CONVERSIONS(8)
HALF_VECTOR_CONVERSIONS(16)

// bfloat16 (Cast only): the upper 16 bits of a float32; stores round to nearest even, NaN stays NaN.
#define STORE_TYPE_BF16 ushort
static inline ushort float_to_bf16_bits(float f) {
  const uint x = as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (ushort)((x >> 16) | 0x40u);
  return (ushort)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// VSTORE_BYTES(n, v, i, p): vstore##n(v, i, p) for vectors of 8-bit values (char or uchar). PoCL 3.1
// (LLVM 15, x86) compiles vstoreN of 8-bit vectors into one byte store per lane after the
// conversion (int8 mobilenet_v2's pointwise conv spent ~15 % of its time there); a packed
// struct's member is one unaligned vector store (a store-bound probe kernel 5.6 -> 2.2 ms).
#if defined(__x86_64__)
typedef struct { uchar2 lanes; } __attribute__((packed)) oi_bytes2;
typedef struct { uchar4 lanes; } __attribute__((packed)) oi_bytes4;
typedef struct { uchar8 lanes; } __attribute__((packed)) oi_bytes8;
typedef struct { uchar16 lanes; } __attribute__((packed)) oi_bytes16;
#define VSTORE_BYTES_(n, val, i, p) \
  (((__global oi_bytes##n*)((__global uchar*)(p) + (size_t)(i) * n))->lanes = as_uchar##n(val))
#else
#define VSTORE_BYTES_(n, val, i, p) vstore##n(val, i, p)
#endif
#define VSTORE_BYTES(n, val, i, p) VSTORE_BYTES_(n, val, i, p)
// VLOAD_BYTES(n, p): vload##n(0, p) of uchar (as unsigned bytes; as_char##n for signed ones). PoCL 3.1
// loaded the lanes of a vload16 of bytes 4 at a time (vmovd and unpacks), for a byte MaxPool's
// 16 taps more instructions than its maxima.
#if defined(__x86_64__)
#define VLOAD_BYTES(n, p) (((const __global oi_bytes##n*)(p))->lanes)
#else
#define VLOAD_BYTES(n, p) as_uchar##n(vload##n(0, (const __global uchar*)(p)))
#endif
// VSTORE_SHORTS(n, v, i, p): the same for vectors of 16-bit values (half bits): PoCL 3.1 stored
// each lane of a vstoreN of ushort on its own (vcvtps2ph, then a vmovd or vpextrd, a shift and a
// 16-bit store per pair of lanes), which made every kernel with float16 storage of its output
// slower than its float32 build (mobilenet_v2's depthwise convs 2x).
#if defined(__x86_64__)
typedef struct { ushort2 lanes; } __attribute__((packed)) oi_shorts2;
typedef struct { ushort4 lanes; } __attribute__((packed)) oi_shorts4;
typedef struct { ushort8 lanes; } __attribute__((packed)) oi_shorts8;
typedef struct { ushort16 lanes; } __attribute__((packed)) oi_shorts16;
#define VSTORE_SHORTS_(n, val, i, p) \
  (((__global oi_shorts##n*)((__global ushort*)(p) + (size_t)(i) * n))->lanes = as_ushort##n(val))
#else
#define VSTORE_SHORTS_(n, val, i, p) vstore##n(val, i, (__global ushort*)(p))
#endif
#define VSTORE_SHORTS(n, val, i, p) VSTORE_SHORTS_(n, val, i, p)

#define LD_F32(p, i) ((p)[i])
#define LD_F16(p, i) half_bits_to_float(((const __global ushort*)(p))[i])
#define LD_BF16(p, i) as_float((uint)(((const __global ushort*)(p))[i]) << 16)
// 8-bit integer storage (U8: uchar, S8: char): scalars keep their type, vectors are handled as
// floats (exact), for kernels that select among stored values (max pooling).
#define LD_U8(p, i) ((p)[i])
#define LD_S8(p, i) ((p)[i])
#define LD_(s, p, i) LD_##s(p, i)
#define LD(s, p, i) LD_(s, p, i)

#define ST_F32(p, i, v) ((p)[i] = (v))
#define ST_F16(p, i, v) (((__global ushort*)(p))[i] = float_to_half_bits(v))
#define ST_BF16(p, i, v) (((__global ushort*)(p))[i] = float_to_bf16_bits(v))
#define ST_U8(p, i, v) ((p)[i] = (v))
#define ST_S8(p, i, v) ((p)[i] = (v))
#define ST_(s, p, i, v) ST_##s(p, i, v)
#define ST(s, p, i, v) ST_(s, p, i, v)

#define LDN_F32(n, p, i) vload##n((i), (p))
#define LDN_F16(n, p, i) half_bits_to_float##n(vload##n((i), (const __global ushort*)(p)))
#define LDN_U8(n, p, i) convert_float##n(vload##n((i), (p)))
#define LDN_S8(n, p, i) convert_float##n(vload##n((i), (p)))
#define LDN_(s, n, p, i) LDN_##s(n, p, i)
#define LDN(s, n, p, i) LDN_(s, n, p, i)

#define STN_F32(n, p, i, v) vstore##n((v), (i), (p))
#define STN_F16(n, p, i, v) VSTORE_SHORTS(n, float_to_half_bits##n(v), (i), (p))
#define STN_U8(n, p, i, v) VSTORE_BYTES(n, convert_uchar##n(v), (i), (p))
#define STN_S8(n, p, i, v) VSTORE_BYTES(n, convert_char##n(v), (i), (p))
#define STN_(s, n, p, i, v) STN_##s(n, p, i, v)
#define STN(s, n, p, i, v) STN_(s, n, p, i, v)

// Defines `float name(const __global T* x, long n)`: the mean of the n values at x (storage s),
// summed as 8 float lanes along x, then the lanes and the tail. One summation for pool.cl's
// pool_plane_avg and the GlobalAveragePool that conv.cl's depthwise kernel computes when the
// optimizer fused it in, so that both give the same value bit for bit.
#define DEFINE_PLANE_MEAN(name, s, T)                          \
  static inline float name(const __global T* x, long n) {             \
    float8 s8 = 0.0f;                                          \
    long i = 0;                                                \
    for (; i + 8 <= n; i += 8) s8 += LDN(s, 8, x + i, 0);      \
    const float4 s4 = s8.lo + s8.hi;                           \
    float sum = (s4.x + s4.y) + (s4.z + s4.w);                 \
    for (; i < n; ++i) sum += LD(s, x, i);                     \
    return sum / (float)n;                                     \
  }

#endif
