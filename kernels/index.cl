// Index arithmetic shared by the kernels that read index tensors (Gather*, Scatter*, OneHot).
#ifndef INDEX_CL
#define INDEX_CL

// FROM_END(v, dim): the index v (a plain variable of any integer or float type) as a long, counted
// from the end of a dimension of `dim` entries when negative. The sign is tested on v's own type,
// before widening: Mesa 22.3's rusticl (llvmpipe) compiles a comparison of an int widened to long
// with a constant (`(long)i < 0`, `(long)i >= 0`, `(long)i < 1`) as if the int were never
// negative, so Gather with int32 index -1 there read element -1 and raised no error. Narrower
// types, arithmetic on the widened value and comparisons with variables compile correctly.
#define FROM_END(v, dim) ((v) < 0 ? (long)(v) + (long)(dim) : (long)(v))

#endif
