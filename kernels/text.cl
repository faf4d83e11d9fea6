// TfIdfVectorizer (ops/text_ops.cpp): one work-item per (output column, row) counts the column's
// pool n-grams in the row. Tables: col_start[c]..col_start[c+1] index the column's n-grams, each
// gram_len[g] tokens at tokens[gram_at[g]].
//
// Build options: -DTX=int|long the token type; -DMODE=0 TF, 1 IDF, 2 TFIDF; -DSY=F16 output storage.
#include "storage.cl"
#ifndef SY
#define SY F32
#endif

__kernel void tfidf_count(__global const TX* x, __global STORE_TYPE(SY)* y, __global const int* col_start,
                          __global const int* gram_len, __global const int* gram_at, __global const long* tokens,
                          __global const float* weights, int len, int columns, int max_skip) {
  const int c = get_global_id(0), row = get_global_id(1);
  __global const TX* r = x + (size_t)row * len;
  float count = 0.0f;
  for (int g = col_start[c]; g < col_start[c + 1]; ++g) {
    const int n = gram_len[g];
    __global const long* want = tokens + gram_at[g];
    // Unigrams do not depend on the skip: counted at skip 0 only.
    const int skips = n == 1 ? 0 : max_skip;
    for (int s = 0; s <= skips; ++s) {
      const int stride = s + 1;
      for (int i = 0; i + (n - 1) * stride < len; ++i) {
        int k = 0;
        while (k < n && (long)r[i + k * stride] == want[k]) ++k;
        if (k == n) count += 1.0f;
      }
    }
  }
#if MODE == 0
  const float v = count;
#elif MODE == 1
  const float v = count > 0.0f ? weights[c] : 0.0f;
#else
  const float v = count * weights[c];
#endif
  ST(SY, y, (size_t)row * columns + c, v);
}
