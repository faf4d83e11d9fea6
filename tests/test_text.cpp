// TfIdfVectorizer against a reference written here from the spec's description: every n-gram of
// the row (each skip, start and length in range; unigrams once) collected into a multiset, then
// each pool n-gram looked up. Random rows over a small vocabulary (so n-grams repeat), TF / IDF /
// TFIDF with weights, int32 and int64 tokens, 1-D and 2-D input, two pool n-grams sharing an output
// column, skips beyond the row, and the errors.
#include <gtest/gtest.h>

#include <map>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

using Shape = std::vector<int64_t>;

struct Spec {
  std::string mode = "TF";
  int64_t min_n = 1, max_n = 2, max_skip = 0;
  std::vector<int64_t> pool, counts, indexes;
  std::vector<float> weights;
};

Tensor reference(const Spec& s, const std::vector<int64_t>& x, int64_t rows, int64_t len, bool one_d) {
  int64_t columns = 0;
  for (int64_t c : s.indexes) columns = std::max(columns, c + 1);
  Tensor y(DType::Float32, one_d ? Shape{columns} : Shape{rows, columns});
  for (int64_t r = 0; r < rows; ++r) {
    std::map<std::vector<int64_t>, int> seen;
    for (int64_t skip = 0; skip <= s.max_skip; ++skip)
      for (int64_t i = 0; i < len; ++i)
        for (int64_t n = std::max<int64_t>(s.min_n, skip > 0 ? 2 : 1); n <= s.max_n; ++n) {
          if (i + (n - 1) * (skip + 1) >= len) continue;
          std::vector<int64_t> g;
          for (int64_t k = 0; k < n; ++k) g.push_back(x[r * len + i + k * (skip + 1)]);
          seen[g]++;
        }
    std::vector<double> count(columns, 0);
    size_t gram = 0;
    for (size_t k = 0; k < s.counts.size(); ++k) {
      const int64_t n = static_cast<int64_t>(k) + 1;
      const int64_t end = k + 1 < s.counts.size() ? s.counts[k + 1] : static_cast<int64_t>(s.pool.size());
      for (int64_t at = s.counts[k]; at < end; at += n, ++gram) {
        if (n < s.min_n || n > s.max_n) continue;
        std::vector<int64_t> g(s.pool.begin() + at, s.pool.begin() + at + n);
        auto it = seen.find(g);
        if (it != seen.end()) count[s.indexes[gram]] += it->second;
      }
    }
    for (int64_t c = 0; c < columns; ++c) {
      const double w = s.weights.empty() ? 1.0 : s.weights[c];
      const double v = s.mode == "TF" ? count[c] : s.mode == "IDF" ? (count[c] > 0 ? w : 0) : count[c] * w;
      y.data<float>()[r * columns + c] = static_cast<float>(v);
    }
  }
  return y;
}

ModelBuilder model(const Spec& s, DType t, const Shape& shape) {
  ModelBuilder m(13);
  m.input("x", t, shape).output("y");
  auto& n = m.node("TfIdfVectorizer", {"x"}, {"y"});
  attr_s(n, "mode", s.mode);
  attr_i(n, "min_gram_length", s.min_n);
  attr_i(n, "max_gram_length", s.max_n);
  attr_i(n, "max_skip_count", s.max_skip);
  attr_ints(n, "pool_int64s", s.pool);
  attr_ints(n, "ngram_counts", s.counts);
  attr_ints(n, "ngram_indexes", s.indexes);
  if (!s.weights.empty()) {
    auto* a = n.add_attribute();
    a->set_name("weights");
    a->set_type(onnx::AttributeProto::FLOATS);
    for (float w : s.weights) a->add_floats(w);
  }
  return m;
}

Tensor tokens(DType t, const Shape& shape, const std::vector<int64_t>& v) {
  Tensor x(t, shape);
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::Int64) x.data<int64_t>()[i] = v[i];
    else x.data<int32_t>()[i] = static_cast<int32_t>(v[i]);
  }
  return x;
}

TEST(TfIdfVectorizer, MatchesReference) {
  std::mt19937 rng(3);
  int k = 0;
  for (const char* mode : {"TF", "IDF", "TFIDF"})
    for (DType t : {DType::Int32, DType::Int64})
      for (int64_t max_skip : {0, 2, 9})
        for (bool one_d : {false, true}) {
          if (fp16_sampled_out(k++)) continue;
          Spec s;
          s.mode = mode;
          s.max_skip = max_skip;
          s.min_n = 1 + (k % 2);
          s.max_n = 3;
          // 4 unigrams, 5 bigrams, 2 trigrams over tokens 0..5; the last bigram shares column 2.
          s.pool = {1, 2, 3, 5, 1, 2, 2, 3, 3, 1, 0, 5, 4, 4, 1, 2, 3, 2, 2, 2};
          s.counts = {0, 4, 14};
          s.indexes = {0, 1, 2, 3, 4, 5, 6, 7, 2, 8, 9};
          if (std::string(mode) != "TF") s.weights = {0.5f, 1.5f, 2.0f, 0.25f, 3.0f, 1.0f, 0.75f, 2.5f, 1.25f, 4.0f};
          const int64_t rows = one_d ? 1 : 3, len = 17;
          std::vector<int64_t> v(rows * len);
          for (auto& e : v) e = static_cast<int64_t>(rng() % 6);
          const Shape shape = one_d ? Shape{len} : Shape{rows, len};
          auto out = run_model(model(s, t, shape), {{"x", tokens(t, shape, v)}});
          const Tensor want = reference(s, v, rows, len, one_d);
          EXPECT_LE(rel_error(out.at("y"), want), 1e-6) << mode << " skip " << max_skip << " min " << s.min_n;
        }
}

TEST(TfIdfVectorizer, Errors) {
  Spec s;
  s.pool = {1, 2, 3, 4};
  s.counts = {0, 1};  // one unigram, then "bigrams" from the 3 values left: not whole bigrams
  s.indexes = {0, 1};
  const Tensor x = tokens(DType::Int64, {4}, {1, 2, 3, 1});
  EXPECT_THROW(run_model(model(s, DType::Int64, {4}), {{"x", x}}), ocl_infer::ModelError);
  Spec m;
  m.mode = "BM25";
  m.pool = {1};
  m.counts = {0};
  m.indexes = {0};
  EXPECT_THROW(run_model(model(m, DType::Int64, {4}), {{"x", x}}), ocl_infer::ModelError);
  Spec g = m;
  g.mode = "TF";
  g.min_n = 3;
  g.max_n = 2;
  EXPECT_THROW(run_model(model(g, DType::Int64, {4}), {{"x", x}}), ocl_infer::ModelError);
}

}  // namespace
