// The activations of ops/core/activation.cpp's table, one macro each: ACT_<KERNEL>(x, A, B) with
// the row's parameters A and B. Shared by the elementwise kernel (kernels/elementwise.cl, where x
// may also be a double, or an integer for rows marked `integers`) and the fused epilogue of
// conv/gemm/norm kernels (kernels/epilogue.cl, float). Written with ?: and untyped integer
// literals so that one expression serves every element type; rows marked `vector_exact` are also
// applied to whole float vectors (the ?: operator is then a per-lane select with the same
// results).
#ifndef ACTIVATION_CL
#define ACTIVATION_CL

#define ACT_MAX_(a, b) ((a) > (b) ? (a) : (b))
#define ACT_MIN_(a, b) ((a) < (b) ? (a) : (b))

// Relu and Clip let NaN through (as ONNX Runtime and numpy do): a NaN compares false everywhere.
#define ACT_RELU(x, A, B) ((x) < 0 ? 0 : (x))
#define ACT_CLIP(x, A, B) ((x) < (A) ? (A) : (x) > (B) ? (B) : (x))
#define ACT_LEAKYRELU(x, A, B) ((x) < 0 ? (A) * (x) : (x))
#define ACT_SIGMOID(x, A, B) (1 / (1 + exp(-(x))))
#define ACT_TANH(x, A, B) tanh(x)
#define ACT_HARDSIGMOID(x, A, B) ACT_MAX_(0, ACT_MIN_(1, (A) * (x) + (B)))
#define ACT_HARDSWISH(x, A, B) ((x) * ACT_HARDSIGMOID(x, A, B))
#define ACT_ELU(x, A, B) ((x) < 0 ? (A) * (exp(x) - 1) : (x))
#define ACT_CELU(x, A, B) (ACT_MAX_(0, x) + ACT_MIN_(0, (A) * (exp((x) / (A)) - 1)))
#define ACT_SELU(x, A, B) ((x) <= 0 ? (B) * ((A) * exp(x) - (A)) : (B) * (x))
// log(1 + e^x) without overflow for large x.
#define ACT_SOFTPLUS(x, A, B) ((x) > 0 ? (x) + log1p(exp(-(x))) : log1p(exp(x)))
#define ACT_SOFTSIGN(x, A, B) ((x) / (1 + fabs(x)))
#define ACT_THRESHOLDEDRELU(x, A, B) ((x) > (A) ? (x) : 0)
#define ACT_SILU(x, A, B) ((x) / (1 + exp(-(x))))
#define ACT_GELU(x, A, B) (0.5f * (x) * (1 + erf((x) * 0.70710678118654752f)))

#endif
