// The conv and gemm kernels' operands (A, B, C, P packed weights, R residual, W weights, X input,
// Y output, and B/C as bias where a kernel says so) are stored as float32 unless a build option
// names another storage (-DXS=F16, see storage.cl). Included after storage.cl.
#ifndef AS
#define AS F32
#endif
#ifndef BS
#define BS F32
#endif
#ifndef CS
#define CS F32
#endif
#ifndef PS
#define PS F32
#endif
#ifndef RS
#define RS F32
#endif
#ifndef WS
#define WS F32
#endif
#ifndef XS
#define XS F32
#endif
#ifndef YS
#define YS F32
#endif
