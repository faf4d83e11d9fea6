// Einsum against a CPU reference written here: every case names, next to the equation the model
// uses (implicit outputs, '...'), the same contraction spelt out with letters only, which the
// reference evaluates by brute force over every assignment of its letters (a dim of 1 broadcasts).
// Odd and prime sizes; each case runs on the device and folded on the host (constant inputs).
#include <gtest/gtest.h>

#include <map>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

using Shape = std::vector<int64_t>;

// `eq` explicit, letters only ("aij,ajk->aik"). Inputs are read as doubles whatever their type.
std::vector<double> reference_einsum(const std::string& eq, const std::vector<Tensor>& xs,
                                     Shape* out_shape) {
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms;
  std::string lhs = eq.substr(0, arrow), out = eq.substr(arrow + 2);
  for (size_t at = 0;;) {
    size_t c = lhs.find(',', at);
    terms.push_back(lhs.substr(at, c == std::string::npos ? std::string::npos : c - at));
    if (c == std::string::npos) break;
    at = c + 1;
  }
  std::map<char, int64_t> size;
  for (size_t k = 0; k < terms.size(); ++k)
    for (size_t d = 0; d < terms[k].size(); ++d)
      size[terms[k][d]] = std::max(size[terms[k][d]], xs[k].shape[d]);
  std::vector<char> letters;
  for (auto& [c, n] : size) letters.push_back(c);
  out_shape->clear();
  for (char c : out) out_shape->push_back(size[c]);
  auto get = [](const Tensor& t, int64_t i) -> double {
    switch (t.dtype) {
      case DType::Float32:
        return t.data<float>()[i];
      case DType::Float64:
        return t.data<double>()[i];
      case DType::Int32:
        return t.data<int32_t>()[i];
      case DType::Int64:
        return static_cast<double>(t.data<int64_t>()[i]);
      default:
        ADD_FAILURE() << "reference: unexpected dtype";
        return 0;
    }
  };
  int64_t n_out = 1;
  for (int64_t d : *out_shape) n_out *= d;
  std::vector<double> y(n_out, 0.0);
  int64_t total = 1;
  for (char c : letters) total *= size[c];
  std::map<char, int64_t> at;
  for (int64_t i = 0; i < total; ++i) {
    int64_t rem = i;
    for (size_t l = letters.size(); l-- > 0;) {
      at[letters[l]] = rem % size[letters[l]];
      rem /= size[letters[l]];
    }
    double p = 1;
    for (size_t k = 0; k < terms.size(); ++k) {
      int64_t off = 0;
      for (size_t d = 0; d < terms[k].size(); ++d)
        off = off * xs[k].shape[d] + (xs[k].shape[d] == 1 ? 0 : at[terms[k][d]]);
      p *= get(xs[k], off);
    }
    int64_t o = 0;
    for (size_t d = 0; d < out.size(); ++d) o = o * (*out_shape)[d] + at[out[d]];
    y[o] += p;
  }
  return y;
}

struct Case {
  std::string equation;  // as the model has it
  std::string explicit_letters;
  std::vector<Shape> shapes;
};

// Runs Einsum(equation) over xs, inputs fed at run time or as initializers.
Tensor run_einsum(const std::string& equation, const std::vector<Tensor>& xs, bool folded,
                  int opset = 12) {
  ModelBuilder m(opset);
  std::vector<std::string> names;
  std::map<std::string, Tensor> feeds;
  for (size_t k = 0; k < xs.size(); ++k) {
    const std::string name = "x" + std::to_string(k);
    names.push_back(name);
    if (folded) {
      m.initializer(name, xs[k]);
    } else {
      m.input(name, xs[k].dtype, xs[k].shape);
      feeds[name] = xs[k];
    }
  }
  m.output("y");
  attr_s(m.node("Einsum", names, {"y"}), "equation", equation);
  return run_model(m, feeds).at("y");
}

Tensor as_float_tensor(const std::vector<double>& v, const Shape& s) {
  Tensor t(DType::Float32, s);
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = static_cast<float>(v[i]);
  return t;
}

TEST(Einsum, MatchesReference) {
  const std::vector<Case> cases = {
      {"bij,bjk->bik", "bij,bjk->bik", {{3, 5, 7}, {3, 7, 11}}},
      {"bhqd,bhkd->bhqk", "bhqd,bhkd->bhqk", {{2, 3, 5, 7}, {2, 3, 6, 7}}},
      {"ij->ji", "ij->ji", {{5, 7}}},
      {"ij->", "ij->", {{13, 7}}},
      {"i,i", "i,i->", {{17}, {17}}},
      {"ii->i", "ii->i", {{7, 7}}},
      {"ii", "ii->", {{11, 11}}},
      {"iij->j", "iij->j", {{3, 3, 5}}},
      {"...ii->...i", "aii->ai", {{3, 5, 5}}},
      {"ij,jk", "ij,jk->ik", {{5, 3}, {3, 7}}},
      {"ba", "ba->ab", {{3, 5}}},
      {"...ij,...jk->...ik", "xyij,yjk->xyik", {{2, 1, 3, 5}, {4, 5, 7}}},
      {"...ij,...jk", "xyij,yjk->xyik", {{2, 3, 3, 5}, {3, 5, 2}}},
      {"i...->...", "iab->ab", {{5, 3, 2}}},
      {"i,j->ij", "i,j->ij", {{5}, {7}}},
      {"ij,ij->ij", "ij,ij->ij", {{5, 7}, {5, 7}}},
      {"ij,jk,kl->il", "ij,jk,kl->il", {{3, 4}, {4, 5}, {5, 2}}},
      {"i,i,i,i->i", "i,i,i,i->i", {{13}, {13}, {13}, {13}}},
      {"Ab,bC->AC", "Ab,bC->AC", {{3, 5}, {5, 7}}},
      {"bC,Ab", "bC,Ab->AC", {{5, 7}, {3, 5}}},  // implicit: upper case first (numpy's order)
      {"bij->", "bij->", {{2, 37, 41}}},
      {"bij -> jb", "bij->jb", {{3, 1, 5}}},
      {"i,i->i", "i,i->i", {{1}, {9}}},  // a dim of 1 broadcasts
      {"ijk,kji->", "ijk,kji->", {{3, 4, 5}, {5, 4, 3}}},
      {"bn,anm,bm->ba", "bn,anm,bm->ba", {{3, 5}, {2, 5, 7}, {3, 7}}},
  };
  std::mt19937 rng(31);
  int k = 0;
  for (const Case& c : cases) {
    std::vector<Tensor> xs;
    for (const Shape& s : c.shapes) xs.push_back(random_tensor(s, rng));
    Shape shape;
    Tensor want = as_float_tensor(reference_einsum(c.explicit_letters, xs, &shape), shape);
    for (bool folded : {false, true}) {
      if (fp16_sampled_out(k++)) continue;
      Tensor got = run_einsum(c.equation, xs, folded);
      EXPECT_LE(rel_error(got, want), 2e-5)
          << c.equation << (folded ? " (folded)" : " (device)") << " got shape "
          << ocl_infer::shape_to_string(got.shape) << " want "
          << ocl_infer::shape_to_string(want.shape);
    }
  }
}

TEST(Einsum, Float64AndIntegers) {
  std::mt19937 rng(32);
  const std::string eq = "bij,bjk->bik";
  const Shape sa = {2, 5, 7}, sb = {2, 7, 3};
  for (DType t : {DType::Float64, DType::Int32, DType::Int64}) {
    std::vector<Tensor> xs;
    for (const Shape& s : {sa, sb}) {
      Tensor x(t, s);
      std::uniform_int_distribution<int> d(-50, 50);
      std::uniform_real_distribution<double> f(-1, 1);
      for (int64_t i = 0; i < x.numel(); ++i) {
        if (t == DType::Float64) x.data<double>()[i] = f(rng);
        if (t == DType::Int32) x.data<int32_t>()[i] = d(rng);
        // Large enough that float accumulation would lose bits: the sum must stay exact.
        if (t == DType::Int64) x.data<int64_t>()[i] = int64_t{d(rng)} * 100003;
      }
      xs.push_back(x);
    }
    if (t == DType::Float64 && !test_device().fp64) {  // (rusticl) a clear error, not a build log
      EXPECT_THROW(run_einsum(eq, xs, false), ocl_infer::UnsupportedError);
      continue;
    }
    Shape shape;
    std::vector<double> want = reference_einsum(eq, xs, &shape);
    for (bool folded : {false, true}) {
      Tensor got = run_einsum(eq, xs, folded);
      ASSERT_EQ(got.dtype, t);
      ASSERT_EQ(got.shape, shape);
      for (int64_t i = 0; i < got.numel(); ++i) {
        const std::string what = std::string(ocl_infer::dtype_name(t)) +
                                 (folded ? " folded" : " device") + " at " + std::to_string(i);
        if (t == DType::Float64) {
          EXPECT_NEAR(got.data<double>()[i], want[i], 1e-12) << what;
        } else if (t == DType::Int32) {
          EXPECT_EQ(got.data<int32_t>()[i], static_cast<int32_t>(want[i])) << what;
        } else {
          EXPECT_EQ(got.data<int64_t>()[i], static_cast<int64_t>(want[i])) << what;
        }
      }
    }
  }
}

TEST(Einsum, EmptyContractionGivesZeros) {
  std::vector<Tensor> xs = {Tensor(DType::Float32, {3, 0}), Tensor(DType::Float32, {0, 5})};
  Tensor got = run_einsum("ij,jk->ik", xs, false);
  ASSERT_EQ(got.shape, (Shape{3, 5}));
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_EQ(got.data<float>()[i], 0.0f);
}

// A bad equation is a ModelError (an unsupported operand count an UnsupportedError) that names
// the problem.
TEST(Einsum, BadEquationsAreClearErrors) {
  struct Bad {
    std::string equation;
    std::vector<Shape> shapes;
    std::string message;
  };
  const std::vector<Bad> bad = {
      {"ij,jk->ik", {{2, 3}}, "has 2 input terms for 1 inputs"},
      {"ij->ik", {{2, 3}}, "output label 'k' is in no input term"},
      {"ij->ii", {{2, 3}}, "output label 'i' repeats"},
      {"ijk->i", {{2, 3}}, "term 0 has 3 labels for input 0 of rank 2"},
      {"i,i", {{3}, {4}}, "label 'i' has size 3 in one input and 4 in input 1"},
      {"ii->i", {{3, 4}}, "label 'i' repeats in term 0 over dims of different sizes"},
      {"i1->i", {{3, 4}}, "unexpected character '1'"},
      {"..i->i", {{3}}, "one '...' and no other dots"},
      {"...ij->ij", {{2, 3, 4}}, "covers 1 dims but the output has no '...'"},
      {"ij->j->i", {{2, 3}}, "more than one '->'"},
      {"i-j->i", {{2, 3}}, "stray '-'"},
      {"", {{2, 3}}, "'equation' is required"},
  };
  for (const Bad& b : bad) {
    std::vector<Tensor> xs;
    for (const Shape& s : b.shapes) xs.push_back(Tensor(DType::Float32, s));
    try {
      run_einsum(b.equation, xs, false);
      ADD_FAILURE() << "'" << b.equation << "' was accepted";
    } catch (const ocl_infer::ModelError& e) {
      EXPECT_NE(std::string(e.what()).find(b.message), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("Einsum"), std::string::npos) << e.what();
    }
  }
  std::vector<Tensor> five(5, Tensor(DType::Float32, {3}));
  EXPECT_THROW(run_einsum("i,i,i,i,i->i", five, false), ocl_infer::UnsupportedError);
  // Inputs of two types.
  EXPECT_THROW(run_einsum("i,i", {Tensor(DType::Float32, {3}), Tensor(DType::Float64, {3})}, false),
               ocl_infer::ModelError);
}

}  // namespace
