// Reductions and ArgMax/ArgMin against a CPU reference on random shapes (odd and prime sizes),
// through both kernel paths (one work-item per output, one work-group per output), plus constant
// folding and error cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

using Shape = std::vector<int64_t>;

// Reference: for each output (row-major over the kept dims) visit every input element that maps
// to it, accumulating in double.
Tensor ref_reduce(const std::string& op, const Tensor& x, const std::vector<int64_t>& axes_in,
                  bool keepdims) {
  const size_t rank = x.shape.size();
  std::vector<bool> red(rank, axes_in.empty());
  for (int64_t a : axes_in) red[a < 0 ? a + rank : a] = true;
  Shape out;
  for (size_t d = 0; d < rank; ++d)
    if (!red[d])
      out.push_back(x.shape[d]);
    else if (keepdims)
      out.push_back(1);
  Tensor y(x.dtype, out);
  const int64_t n = x.numel();
  std::vector<double> acc(y.numel(), 0), mx(y.numel(), -INFINITY), mn(y.numel(), INFINITY),
      prod(y.numel(), 1);
  std::vector<int64_t> cnt(y.numel(), 0), idx(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, o = 0, ostride = 1;
    for (size_t d = rank; d-- > 0;) {
      int64_t c = rem % x.shape[d];
      rem /= x.shape[d];
      if (!red[d]) {
        o += c * ostride;
        ostride *= x.shape[d];
      }
    }
    idx[i] = o;
  }
  auto get = [&](int64_t i) -> double {
    if (x.dtype == DType::Float32) return x.data<float>()[i];
    if (x.dtype == DType::Int32) return x.data<int32_t>()[i];
    return static_cast<double>(x.data<int64_t>()[i]);
  };
  for (int64_t i = 0; i < n; ++i) mx[idx[i]] = std::max(mx[idx[i]], get(i));
  for (int64_t i = 0; i < n; ++i) {
    double v = get(i);
    int64_t o = idx[i];
    cnt[o]++;
    mn[o] = std::min(mn[o], v);
    prod[o] *= v;
    if (op == "ReduceSum" || op == "ReduceMean" || op == "ReduceLogSum")
      acc[o] += v;
    else if (op == "ReduceL1")
      acc[o] += std::fabs(v);
    else if (op == "ReduceL2" || op == "ReduceSumSquare")
      acc[o] += v * v;
    else if (op == "ReduceLogSumExp")
      acc[o] += std::exp(v - mx[o]);
  }
  for (int64_t o = 0; o < y.numel(); ++o) {
    double r = acc[o];
    if (op == "ReduceMean")
      r /= static_cast<double>(cnt[o]);
    else if (op == "ReduceMax")
      r = mx[o];
    else if (op == "ReduceMin")
      r = mn[o];
    else if (op == "ReduceProd")
      r = prod[o];
    else if (op == "ReduceL2")
      r = std::sqrt(r);
    else if (op == "ReduceLogSum")
      r = std::log(r);
    else if (op == "ReduceLogSumExp")
      r = std::log(r) + mx[o];
    if (y.dtype == DType::Float32)
      y.data<float>()[o] = static_cast<float>(r);
    else if (y.dtype == DType::Int32)
      y.data<int32_t>()[o] = static_cast<int32_t>(r);
    else
      y.data<int64_t>()[o] = static_cast<int64_t>(r);
  }
  return y;
}

Tensor ints(const Shape& shape, const std::vector<int64_t>& v) {
  Tensor t(DType::Int64, shape);
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}

// Builds Reduce<op> in the form its opset wants: axes as an attribute, or as input 1 (ReduceSum
// from 13, all from 18).
ModelBuilder reduce_model(const std::string& op, int opset, DType t, const Shape& shape,
                          const std::vector<int64_t>& axes, bool keepdims) {
  ModelBuilder m(opset);
  m.input("x", t, shape).output("y");
  const bool axes_input = opset >= 18 || (op == "ReduceSum" && opset >= 13);
  std::vector<std::string> ins{"x"};
  if (axes_input && !axes.empty()) {
    m.initializer("axes", ints({static_cast<int64_t>(axes.size())}, axes));
    ins.push_back("axes");
  }
  auto& n = m.node(op, ins, {"y"});
  if (!axes_input && !axes.empty()) attr_ints(n, "axes", axes);
  attr_i(n, "keepdims", keepdims ? 1 : 0);
  return m;
}

const char* kOps[] = {"ReduceSum",       "ReduceMean",     "ReduceMax", "ReduceMin",
                      "ReduceProd",      "ReduceL1",       "ReduceL2",  "ReduceLogSum",
                      "ReduceLogSumExp", "ReduceSumSquare"};

struct Case {
  Shape shape;
  std::vector<int64_t> axes;
  bool keepdims;
};

void check_float_cases(const std::vector<Case>& cases, int opset, uint32_t seed) {
  std::mt19937 rng(seed);
  int k = 0;
  for (const char* op : kOps) {
    for (const Case& c : cases) {
      if (fp16_sampled_out(k++)) continue;
      // Products stay near 1 and LogSum needs a positive sum.
      std::string o = op;
      float lo = o == "ReduceProd" ? 0.9f : o == "ReduceLogSum" ? 0.1f : -2.f;
      float hi = o == "ReduceProd" ? 1.1f : 2.f;
      Tensor x = random_tensor(c.shape, rng, lo, hi);
      auto out = run_model(reduce_model(op, opset, DType::Float32, c.shape, c.axes, c.keepdims),
                           {{"x", x}});
      Tensor ref = ref_reduce(op, x, c.axes, c.keepdims);
      EXPECT_LE(rel_error(out.at("y"), ref), 2e-5)
          << op << " shape " << ocl_infer::shape_to_string(c.shape) << " opset " << opset;
    }
  }
}

TEST(Reduce, AllOpsMatchReferenceOnSmallShapes) {
  // Kept and reduced dims interleaved, negative axes, size-1 dims, all axes.
  check_float_cases({{{7}, {0}, false},
                     {{3, 5, 11}, {1}, true},
                     {{2, 3, 13, 17}, {0, 2}, false},
                     {{5, 1, 7, 3}, {-1, 1}, true},
                     {{3, 4, 5}, {}, true}},
                    13, 1);
}

TEST(Reduce, LongReductionsUseBothKernelPaths) {
  // Contiguous long rows, a long strided reduction with few outputs, and many outputs over a
  // strided axis.
  check_float_cases({{{2, 4999}, {1}, true},
                     {{3, 1031, 7}, {1}, false},
                     {{37, 701}, {0}, true},
                     {{2, 3, 61, 67}, {0, 2, 3}, false}},
                    13, 2);
}

TEST(Reduce, AxesAsInputFromOpset18) {
  std::mt19937 rng(3);
  for (const char* op : {"ReduceMean", "ReduceMax", "ReduceL2"}) {
    Shape s{4, 9, 5};
    Tensor x = random_tensor(s, rng);
    auto out = run_model(reduce_model(op, 18, DType::Float32, s, {0, -1}, true), {{"x", x}});
    EXPECT_LE(rel_error(out.at("y"), ref_reduce(op, x, {0, 2}, true)), 2e-5) << op;
  }
}

// (ReduceL1 of int32 summed the values, not their magnitudes, on Mesa 22.3's rusticl: index.cl.)
TEST(Reduce, IntegerSumMaxMinAreExact) {
  std::mt19937 rng(4);
  std::uniform_int_distribution<int> d(-1000, 1000);
  for (DType t : {DType::Int32, DType::Int64}) {
    for (const char* op : {"ReduceSum", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL1"}) {
      Shape s{3, 257, 5};
      Tensor x(t, s);
      for (int64_t i = 0; i < x.numel(); ++i) {
        if (t == DType::Int32)
          x.data<int32_t>()[i] = d(rng);
        else
          x.data<int64_t>()[i] = d(rng);
      }
      auto out = run_model(reduce_model(op, 13, t, s, {1}, false), {{"x", x}});
      Tensor ref = ref_reduce(op, x, {1}, false);
      ASSERT_EQ(out.at("y").shape, ref.shape);
      EXPECT_EQ(out.at("y").bytes, ref.bytes) << op;
    }
  }
}

// Opset 20: ReduceMax / ReduceMin of bool are "any" / "all", on both kernel paths (short rows
// per work-item, a long contiguous row per work-group); an empty
// reduction gives false / true. Before opset 20 bool is refused.
TEST(Reduce, BoolMaxMinAreAnyAll) {
  std::mt19937 rng(6);
  for (Shape s : {Shape{4, 5, 3}, Shape{3, 2000}, Shape{2, 0, 3}}) {
    Tensor x(DType::Bool, s);
    // Sparse trues, so that some rows are all false and (with the complement) some all true.
    std::bernoulli_distribution d(s[1] > 100 ? 0.0005 : 0.2);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<uint8_t>()[i] = d(rng);
    for (bool flip : {false, true}) {
      if (flip)
        for (int64_t i = 0; i < x.numel(); ++i) x.data<uint8_t>()[i] ^= 1;
      for (const char* op : {"ReduceMax", "ReduceMin"}) {
        const bool is_max = std::string(op) == "ReduceMax";
        auto out = run_model(reduce_model(op, 20, DType::Bool, s, {1}, false), {{"x", x}});
        const Tensor& y = out.at("y");
        ASSERT_EQ(y.dtype, DType::Bool);
        Shape kept = s;
        kept.erase(kept.begin() + 1);
        ASSERT_EQ(y.shape, kept);
        const int64_t inner = s.size() == 3 ? s[2] : 1;
        for (int64_t o = 0; o < s[0]; ++o)
          for (int64_t k = 0; k < inner; ++k) {
            bool want = !is_max;
            for (int64_t r = 0; r < s[1]; ++r) {
              const bool v = x.data<uint8_t>()[(o * s[1] + r) * inner + k];
              want = is_max ? (want || v) : (want && v);
            }
            EXPECT_EQ(y.data<uint8_t>()[o * inner + k], want ? 1 : 0) << op << " " << o << "," << k;
          }
      }
    }
  }
  Tensor x(DType::Bool, {2, 3});
  EXPECT_THROW(run_model(reduce_model("ReduceMax", 18, DType::Bool, {2, 3}, {1}, false), {{"x", x}}),
               ocl_infer::UnsupportedError);
}

TEST(Reduce, NoopWithEmptyAxesIsIdentity) {
  std::mt19937 rng(5);
  ModelBuilder m(13);
  m.input("x", DType::Float32, {3, 7}).output("y");
  m.initializer("axes", Tensor(DType::Int64, {0}));
  auto& n = m.node("ReduceSum", {"x", "axes"}, {"y"});
  attr_i(n, "noop_with_empty_axes", 1);
  Tensor x = random_tensor({3, 7}, rng);
  auto out = run_model(m, {{"x", x}});
  EXPECT_EQ(out.at("y").bytes, x.bytes);
}

TEST(Reduce, ConstantInputsFoldOnTheHost) {
  // ReduceProd of a constant shape, as exporters write for flattening.
  ModelBuilder m(13);
  m.input("x", DType::Float32, {2}).output("y").output("p");
  m.initializer("shape", ints({4}, {2, 3, 5, 7}));
  auto& n = m.node("ReduceProd", {"shape"}, {"p"});
  attr_i(n, "keepdims", 0);
  m.node("Relu", {"x"}, {"y"});
  Tensor x(DType::Float32, {2});
  auto out = run_model(m, {{"x", x}});
  ASSERT_EQ(out.at("p").dtype, DType::Int64);
  EXPECT_EQ(out.at("p").shape, Shape{});
  EXPECT_EQ(out.at("p").data<int64_t>()[0], 210);
}

TEST(Reduce, BadAxesAreModelErrors) {
  Tensor x(DType::Float32, {2, 3});
  EXPECT_THROW(
      run_model(reduce_model("ReduceMean", 13, DType::Float32, {2, 3}, {1, -1}, true), {{"x", x}}),
      ocl_infer::ModelError);
  EXPECT_THROW(
      run_model(reduce_model("ReduceMax", 13, DType::Float32, {2, 3}, {2}, true), {{"x", x}}),
      ocl_infer::ModelError);
}

// ---- ArgMax, ArgMin ----
Tensor ref_arg(bool is_max, const Tensor& x, int64_t axis, bool keepdims, bool last) {
  const Shape& s = x.shape;
  int64_t outer = 1, inner = 1, len = s[axis];
  for (int64_t d = 0; d < axis; ++d) outer *= s[d];
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  Shape os = s;
  if (keepdims)
    os[axis] = 1;
  else
    os.erase(os.begin() + axis);
  Tensor y(DType::Int64, os);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      for (int64_t k = 1; k < len; ++k) {
        float v = x.data<float>()[(o * len + k) * inner + i];
        float b = x.data<float>()[(o * len + best) * inner + i];
        if (is_max ? (v > b || (last && v == b)) : (v < b || (last && v == b))) best = k;
      }
      y.data<int64_t>()[o * inner + i] = best;
    }
  return y;
}

TEST(ArgReduce, MatchesReferenceWithTies) {
  std::mt19937 rng(6);
  std::uniform_int_distribution<int> d(0, 4);  // few distinct values: many ties
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (auto c :
         std::vector<std::pair<Shape, int64_t>>{{{13}, 0}, {{3, 7, 5}, 1}, {{4, 11, 3}, -1}}) {
      for (int last = 0; last < 2; ++last) {
        for (int keep = 0; keep < 2; ++keep) {
          ModelBuilder m(13);
          m.input("x", DType::Float32, c.first).output("y");
          auto& n = m.node(op, {"x"}, {"y"});
          attr_i(n, "axis", c.second);
          attr_i(n, "keepdims", keep);
          attr_i(n, "select_last_index", last);
          Tensor x(DType::Float32, c.first);
          for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(d(rng));
          int64_t axis = c.second < 0 ? c.second + static_cast<int64_t>(c.first.size()) : c.second;
          Tensor ref = ref_arg(std::string(op) == "ArgMax", x, axis, keep, last);
          auto out = run_model(m, {{"x", x}});
          ASSERT_EQ(out.at("y").shape, ref.shape) << op;
          EXPECT_EQ(out.at("y").bytes, ref.bytes) << op << " last=" << last;
        }
      }
    }
  }
}

TEST(ArgReduce, AxisOutOfRangeIsModelError) {
  ModelBuilder m(13);
  m.input("x", DType::Float32, {2, 3}).output("y");
  attr_i(m.node("ArgMax", {"x"}, {"y"}), "axis", 2);
  Tensor x(DType::Float32, {2, 3});
  EXPECT_THROW(run_model(m, {{"x", x}}), ocl_infer::ModelError);
}

}  // namespace
