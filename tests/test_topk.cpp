// TopK against a CPU reference written here: a stable sort of each slice (equal values keep index
// order, NaN above every value, -0 == +0), the first K kept. Values and indices must match
// exactly (TopK moves elements, it computes nothing). Odd and prime shapes, every axis, K of 0, 1,
// some and the whole axis, largest and smallest, heavy ties, NaN, integer and double inputs, a
// long axis (5000, K 300; 20000, K 1000), opsets 1, 10 and 11, and the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

using Shape = std::vector<int64_t>;

Tensor int64s(const Shape& v) {
  Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
  for (size_t k = 0; k < v.size(); ++k) t.data<int64_t>()[k] = v[k];
  return t;
}

// Element i of t as a double (float, double and integer tensors).
double value_at(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DType::Float32:
      return t.data<float>()[i];
    case DType::Float64:
      return t.data<double>()[i];
    case DType::Int32:
      return t.data<int32_t>()[i];
    case DType::Int64:
      return static_cast<double>(t.data<int64_t>()[i]);
    case DType::UInt8:
      return t.data<uint8_t>()[i];
    default:
      ADD_FAILURE() << "unexpected dtype";
      return 0;
  }
}

struct TopKResult {
  Shape shape;
  std::vector<double> values;
  std::vector<int64_t> indices;
};

TopKResult reference(const Tensor& x, int64_t k, int64_t axis, bool largest) {
  const int64_t r = static_cast<int64_t>(x.shape.size());
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1, n = x.shape[axis];
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
  for (int64_t d = axis + 1; d < r; ++d) inner *= x.shape[d];
  TopKResult res;
  res.shape = x.shape;
  res.shape[axis] = k;
  res.values.resize(outer * k * inner);
  res.indices.resize(outer * k * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      std::vector<int64_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      auto v = [&](int64_t j) { return value_at(x, (o * n + j) * inner + in); };
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        const double va = v(a), vb = v(b);
        if (std::isnan(va) || std::isnan(vb))
          return largest ? std::isnan(va) && !std::isnan(vb) : !std::isnan(va) && std::isnan(vb);
        return largest ? va > vb : va < vb;
      });
      for (int64_t j = 0; j < k; ++j) {
        res.values[(o * k + j) * inner + in] = v(order[j]);
        res.indices[(o * k + j) * inner + in] = order[j];
      }
    }
  return res;
}

struct Options {
  int opset = 11;
  bool largest = true;
  bool sorted = true;
  bool k_as_input = false;  // K fed at run time instead of an initializer
};

std::map<std::string, Tensor> run_topk(const Tensor& x, int64_t k, int64_t axis, const Options& o) {
  ModelBuilder b(o.opset);
  b.input("x", x.dtype, x.shape).output("values").output("indices");
  std::vector<std::string> ins{"x"};
  std::map<std::string, Tensor> feeds{{"x", x}};
  if (o.opset >= 10) {
    ins.push_back("k");
    if (o.k_as_input) {
      b.input("k", DType::Int64, {1});
      feeds["k"] = int64s({k});
    } else {
      b.initializer("k", int64s({k}));
    }
  }
  auto& n = b.node("TopK", ins, {"values", "indices"});
  attr_i(n, "axis", axis);
  if (o.opset < 10) attr_i(n, "k", k);
  if (o.opset >= 11) {
    attr_i(n, "largest", o.largest ? 1 : 0);
    attr_i(n, "sorted", o.sorted ? 1 : 0);
  }
  return run_model(b, feeds);
}

void check(const Tensor& x, int64_t k, int64_t axis, const Options& o = {}) {
  const std::string what = ocl_infer::shape_to_string(x.shape) + " k=" + std::to_string(k) +
                           " axis=" + std::to_string(axis) +
                           (o.largest ? " largest" : " smallest") + " opset " +
                           std::to_string(o.opset);
  const TopKResult want = reference(x, k, axis, o.largest);
  const auto out = run_topk(x, k, axis, o);
  const Tensor& v = out.at("values");
  const Tensor& i = out.at("indices");
  ASSERT_EQ(v.shape, want.shape) << what;
  ASSERT_EQ(i.shape, want.shape) << what;
  ASSERT_EQ(v.dtype, x.dtype) << what;
  ASSERT_EQ(i.dtype, DType::Int64) << what;
  int bad = 0;
  for (size_t e = 0; e < want.values.size() && bad < 5; ++e) {
    const double got = value_at(v, static_cast<int64_t>(e)), exp = want.values[e];
    const bool same = (std::isnan(got) && std::isnan(exp)) || got == exp;
    if (!same || i.data<int64_t>()[e] != want.indices[e]) {
      ++bad;
      ADD_FAILURE() << what << ": element " << e << " is " << got << " @" << i.data<int64_t>()[e]
                    << ", want " << exp << " @" << want.indices[e];
    }
  }
}

// Values from a few levels so that most of them tie.
Tensor tied_tensor(const Shape& shape, std::mt19937& rng, int levels) {
  Tensor t(DType::Float32, shape);
  std::uniform_int_distribution<int> d(0, levels - 1);
  for (int64_t e = 0; e < t.numel(); ++e)
    t.data<float>()[e] = static_cast<float>(d(rng)) * 0.5f - 1.0f;
  return t;
}

TEST(TopK, EveryAxisAndKMatchReference) {
  std::mt19937 rng(5);
  int combo = 0;
  for (const Shape& s :
       {Shape{7}, Shape{3, 5}, Shape{2, 13, 5}, Shape{4, 3, 7, 2}, Shape{1, 11, 1}}) {
    Tensor x = random_tensor(s, rng);
    for (int64_t axis = -static_cast<int64_t>(s.size()); axis < static_cast<int64_t>(s.size());
         ++axis) {
      const int64_t n = s[axis < 0 ? axis + s.size() : axis];
      for (int64_t k : {int64_t{1}, (n + 1) / 2, n})
        for (bool largest : {true, false}) {
          if (fp16_sampled_out(combo++)) continue;
          Options o;
          o.largest = largest;
          check(x, k, axis, o);
        }
    }
  }
}

TEST(TopK, TiesKeepTheLowerIndexFirst) {
  std::mt19937 rng(7);
  for (const Shape& s : {Shape{3, 17}, Shape{5, 101}, Shape{2, 300}, Shape{1, 97, 3}})
    for (bool largest : {true, false}) {
      Tensor x = tied_tensor(s, rng, 3);
      Options o;
      o.largest = largest;
      check(x, std::min<int64_t>(s[1], 10), 1, o);
      check(x, s[1], 1, o);
    }
}

TEST(TopK, NanIsAboveEveryValueAndZerosTie) {
  Tensor x(DType::Float32, {2, 9});
  const float nan = std::nanf("");
  const float v[18] = {1,    nan,   -0.0f, 3,   0.0f, nan,   -INFINITY, INFINITY, 2,
                       0.0f, -0.0f, 0.0f,  nan, -1,   -0.0f, 5,         -5,       nan};
  std::copy(v, v + 18, x.data<float>());
  for (bool largest : {true, false})
    for (int64_t k : {3, 6, 9}) {
      Options o;
      o.largest = largest;
      check(x, k, 1, o);
    }
}

TEST(TopK, KZeroGivesEmptyOutputs) {
  std::mt19937 rng(9);
  Tensor x = random_tensor({3, 7}, rng);
  const auto out = run_topk(x, 0, 1, {});
  EXPECT_EQ(out.at("values").shape, (Shape{3, 0}));
  EXPECT_EQ(out.at("indices").shape, (Shape{3, 0}));
}

TEST(TopK, LongAxis) {
  std::mt19937 rng(11);
  check(random_tensor({5000}, rng), 300, 0);
  Options small;
  small.largest = false;
  check(random_tensor({2, 5000}, rng), 300, -1, small);
  // A detector's score selection: one long row, K 1000; and along a non-innermost axis.
  check(random_tensor({1, 20000}, rng), 1000, 1);
  check(random_tensor({3, 4001, 2}, rng), 1000, 1);
  check(random_tensor({7, 211}, rng), 211, 1);
  // Sorted ascending input: every element replaces the worst of the kept ones.
  Tensor up(DType::Float32, {6000});
  for (int64_t e = 0; e < 6000; ++e) up.data<float>()[e] = static_cast<float>(e % 1500);
  check(up, 1000, 0);
  check(up, 1000, 0, small);
}

TEST(TopK, IntegerAndDoubleInputs) {
  std::mt19937 rng(13);
  std::uniform_int_distribution<int> d(-50, 50);
  Tensor i32(DType::Int32, {4, 37}), i64(DType::Int64, {37, 3}), f64(DType::Float64, {5, 23});
  Tensor u8(DType::UInt8, {3, 41});
  for (int64_t e = 0; e < i32.numel(); ++e) i32.data<int32_t>()[e] = d(rng) * 1000003;
  for (int64_t e = 0; e < i64.numel(); ++e) i64.data<int64_t>()[e] = int64_t{d(rng)} << 40;
  for (int64_t e = 0; e < f64.numel(); ++e) f64.data<double>()[e] = d(rng) / 7.0;
  for (int64_t e = 0; e < u8.numel(); ++e)
    u8.data<uint8_t>()[e] = static_cast<uint8_t>(d(rng) + 100);
  for (bool largest : {true, false}) {
    Options o;
    o.largest = largest;
    check(i32, 5, 1, o);
    check(i64, 8, 0, o);
    if (test_device().fp64)
      check(f64, 23, 1, o);
    else  // (rusticl) a clear error, not a build log
      EXPECT_THROW(check(f64, 23, 1, o), ocl_infer::UnsupportedError);
    check(u8, 7, 1, o);
  }
}

TEST(TopK, OlderOpsetsAndRuntimeK) {
  std::mt19937 rng(17);
  Tensor x = random_tensor({3, 19}, rng);
  Options o1;
  o1.opset = 1;
  check(x, 4, 1, o1);
  Options o10;
  o10.opset = 10;
  check(x, 5, -1, o10);
  Options fed;
  fed.k_as_input = true;
  check(x, 6, 1, fed);
  Options unsorted;
  unsorted.sorted = false;  // any order is allowed; this runtime sorts anyway
  check(x, 7, 1, unsorted);
}

TEST(TopK, ConstantInputsFoldOnTheHost) {
  std::mt19937 rng(19);
  Tensor c = tied_tensor({4, 13}, rng, 4);
  ModelBuilder b(11);
  b.initializer("c", c)
      .initializer("k", int64s({5}))
      .input("z", DType::Float32, {4, 5})
      .output("y")
      .output("i");
  auto& n = b.node("TopK", {"c", "k"}, {"v", "i"});
  attr_i(n, "largest", 0);
  b.node("Add", {"v", "z"}, {"y"});
  Tensor z(DType::Float32, {4, 5});
  for (int64_t e = 0; e < z.numel(); ++e) z.data<float>()[e] = 0;
  const auto out = run_model(b, {{"z", z}});
  const TopKResult want = reference(c, 5, 1, false);
  for (size_t e = 0; e < want.values.size(); ++e) {
    EXPECT_EQ(out.at("y").data<float>()[e], want.values[e]) << e;
    EXPECT_EQ(out.at("i").data<int64_t>()[e], want.indices[e]) << e;
  }
}

void expect_model_error(const Tensor& x, int64_t k, int64_t axis, int opset,
                        const std::string& needle) {
  try {
    Options o;
    o.opset = opset;
    run_topk(x, k, axis, o);
    ADD_FAILURE() << "expected a ModelError containing '" << needle << "'";
  } catch (const ocl_infer::ModelError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(TopK, BadInputsAreModelErrors) {
  std::mt19937 rng(23);
  Tensor x = random_tensor({3, 7}, rng);
  expect_model_error(x, 8, 1, 11, "larger than axis 1");
  expect_model_error(x, 4, 0, 10, "larger than axis 0");
  expect_model_error(x, -1, 1, 11, "must not be negative");
  expect_model_error(x, 2, 2, 11, "axis");
  Tensor scalar(DType::Float32, {});
  scalar.data<float>()[0] = 1;
  expect_model_error(scalar, 1, 0, 11, "rank");
}

}  // namespace
