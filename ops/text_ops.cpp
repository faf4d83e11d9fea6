// TfIdfVectorizer: counts of the pool's n-grams in each row of integer tokens (kernels/text.cl).
//
// Counting follows ONNX Runtime and the ONNX reference: for every skip s in [0, max_skip_count]
// and every start position, the tokens x[i], x[i + s + 1], ... form an n-gram of each length n in
// [min_gram_length, max_gram_length]; a pool n-gram that matches is counted once per (s, i).
// Unigrams do not depend on the skip, so they are counted at s = 0 only. The output column of pool
// n-gram j is ngram_indexes[j]; mode TF gives the counts, IDF weights[column] where the count is
// non-zero, TFIDF count x weights[column] (weights default to 1). String pools are not supported
// (the runtime has no string tensors).
#include <algorithm>

#include "ops/build_context.hpp"
#include "ops/elementwise.hpp"

namespace oi {

namespace {

using ocl_infer::dtype_name;
using ocl_infer::shape_to_string;

struct NGram {
  int64_t column;
  std::vector<int64_t> tokens;
};

struct TfIdfSpec {
  int mode = 0;  // 0 TF, 1 IDF, 2 TFIDF
  int64_t min_n = 1, max_n = 1, max_skip = 0, columns = 0;
  std::vector<NGram> grams;  // the pool's n-grams whose length is in [min_n, max_n]
  std::vector<float> weights;  // per column (empty: 1)
};

TfIdfSpec tfidf_spec(const OpContext& ctx) {
  const Node& n = ctx.node();
  TfIdfSpec s;
  const std::string mode = n.attr_string("mode", "");
  if (mode == "TF") s.mode = 0;
  else if (mode == "IDF") s.mode = 1;
  else if (mode == "TFIDF") s.mode = 2;
  else ctx.fail("mode must be TF, IDF or TFIDF, not '" + mode + "'");
  s.min_n = n.attr_int("min_gram_length", 0);
  s.max_n = n.attr_int("max_gram_length", 0);
  s.max_skip = n.attr_int("max_skip_count", 0);
  if (s.min_n < 1 || s.max_n < s.min_n || s.max_n > 64)
    ctx.fail("gram lengths must satisfy 1 <= min_gram_length <= max_gram_length <= 64 (got " + std::to_string(s.min_n) +
             ", " + std::to_string(s.max_n) + ")");
  if (s.max_skip < 0 || s.max_skip > 1 << 20) ctx.fail("max_skip_count " + std::to_string(s.max_skip) + " is out of range");
  if (n.has("pool_strings")) ctx.unsupported("pool_strings (string tensors are not supported; pool_int64s is)");
  const std::vector<int64_t> pool = n.attr_ints("pool_int64s", {});
  const std::vector<int64_t> counts = n.attr_ints("ngram_counts", {});
  const std::vector<int64_t> indexes = n.attr_ints("ngram_indexes", {});
  // Pool segment k (n-grams of length k + 1) runs from counts[k] to counts[k + 1] (or the end).
  size_t gram = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    const int64_t len = static_cast<int64_t>(k) + 1;
    const int64_t begin = counts[k], end = k + 1 < counts.size() ? counts[k + 1] : static_cast<int64_t>(pool.size());
    if (begin < 0 || end < begin || end > static_cast<int64_t>(pool.size()) || (end - begin) % len != 0)
      ctx.fail("ngram_counts " + std::to_string(begin) + ".." + std::to_string(end) + " does not split pool_int64s (" +
               std::to_string(pool.size()) + " values) into " + std::to_string(len) + "-grams");
    for (int64_t at = begin; at < end; at += len, ++gram) {
      if (gram >= indexes.size()) ctx.fail("ngram_indexes has fewer entries than the pool has n-grams");
      if (indexes[gram] < 0 || indexes[gram] > 1 << 24) ctx.fail("ngram_indexes holds " + std::to_string(indexes[gram]));
      s.columns = std::max(s.columns, indexes[gram] + 1);
      if (len >= s.min_n && len <= s.max_n)
        s.grams.push_back({indexes[gram], std::vector<int64_t>(pool.begin() + at, pool.begin() + at + len)});
    }
  }
  for (int64_t ix : indexes) s.columns = std::max(s.columns, ix + 1);
  s.weights = n.attr_floats("weights", {});
  if (!s.weights.empty() && static_cast<int64_t>(s.weights.size()) < s.columns)
    ctx.fail("weights has " + std::to_string(s.weights.size()) + " entries, the output " + std::to_string(s.columns) + " columns");
  return s;
}

void tfidf_infer(OpContext& ctx) {
  const TfIdfSpec s = tfidf_spec(ctx);
  const DType t = ctx.in_type(0);
  if (t != DType::Int32 && t != DType::Int64)
    ctx.unsupported(std::string("input of type ") + dtype_name(t) + " (int32 and int64 are supported)");
  const Shape& x = ctx.in_shape(0);
  if (x.size() == 1) ctx.set_out(0, DType::Float32, {s.columns});
  else if (x.size() == 2) ctx.set_out(0, DType::Float32, {x[0], s.columns});
  else ctx.fail("input must be 1-D or 2-D, not " + shape_to_string(x));
}

void tfidf_build(BuildContext& ctx) {
  const TfIdfSpec s = tfidf_spec(ctx);
  const Shape& x = ctx.in_shape(0);
  const int64_t rows = x.size() == 1 ? 1 : x[0], len = x.back();
  if (rows == 0 || s.columns == 0) return;
  // Per column: its n-grams as (length, offset into the token table) pairs.
  std::vector<int32_t> col_start(static_cast<size_t>(s.columns) + 1, 0), gram_len, gram_at;
  std::vector<int64_t> tokens;
  for (int64_t c = 0; c < s.columns; ++c) {
    col_start[c] = static_cast<int32_t>(gram_len.size());
    for (const NGram& g : s.grams)
      if (g.column == c) {
        gram_len.push_back(static_cast<int32_t>(g.tokens.size()));
        gram_at.push_back(static_cast<int32_t>(tokens.size()));
        tokens.insert(tokens.end(), g.tokens.begin(), g.tokens.end());
      }
  }
  col_start[s.columns] = static_cast<int32_t>(gram_len.size());
  gram_len.push_back(0), gram_at.push_back(0), tokens.push_back(0);  // never empty buffers
  std::vector<float> weights(static_cast<size_t>(s.columns), 1.0f);
  for (size_t c = 0; c < weights.size() && c < s.weights.size(); ++c) weights[c] = s.weights[c];
  const std::string opts = std::string("-DTX=") + (ctx.input(0).dtype == DType::Int64 ? "long" : "int") +
                           " -DMODE=" + std::to_string(s.mode) + BuildContext::storage_option("SY", ctx.output(0).dtype);
  ctx.launch("text", "tfidf_count", opts, {static_cast<size_t>(s.columns), static_cast<size_t>(rows)}, {}, ctx.in_buf(0),
             ctx.out_buf(0), ctx.params(col_start.data(), col_start.size() * sizeof(int32_t)),
             ctx.params(gram_len.data(), gram_len.size() * sizeof(int32_t)),
             ctx.params(gram_at.data(), gram_at.size() * sizeof(int32_t)),
             ctx.params(tokens.data(), tokens.size() * sizeof(int64_t)), ctx.constant_floats(weights),
             static_cast<int32_t>(len), static_cast<int32_t>(s.columns), static_cast<int32_t>(s.max_skip));
}

}  // namespace

void add_text_ops(std::vector<OpDef>& t) {
  t.push_back(OpDef("TfIdfVectorizer", 9, tfidf_infer).build(tfidf_build).any_storage());
}

}  // namespace oi
