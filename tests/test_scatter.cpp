// Scatter family (ScatterElements, Scatter, ScatterND) and OneHot, EyeLike, Trilu, CumSum against
// CPU references written here from the ONNX definitions, on random shapes with odd and prime
// sizes. Each case runs twice: with the data fed at run time (the device kernels) and with every
// input a constant (folded on the host). Data movement must match bit for bit; arithmetic uses
// values whose sums and products are exact in float32 (and float16), so it must too, except
// CumSum of random floats, compared within a float32 tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

using Shape = std::vector<int64_t>;

std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> c(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    c[d] = i % s[d];
    i /= s[d];
  }
  return c;
}

int64_t ravel(const std::vector<int64_t>& c, const Shape& s) {
  int64_t i = 0;
  for (size_t d = 0; d < s.size(); ++d) i = i * s[d] + c[d];
  return i;
}

int64_t count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string str(const Shape& s) { return ocl_infer::shape_to_string(s); }

// Element access by dtype for the few types the tests use.
double get(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DType::Float32: return t.data<float>()[i];
    case DType::Float64: return t.data<double>()[i];
    case DType::Int64: return static_cast<double>(t.data<int64_t>()[i]);
    case DType::Int32: return t.data<int32_t>()[i];
    case DType::UInt8: case DType::Bool: return t.data<uint8_t>()[i];
    default: ADD_FAILURE() << "test helper: dtype"; return 0;
  }
}
void set(Tensor& t, int64_t i, double v) {
  switch (t.dtype) {
    case DType::Float32: t.data<float>()[i] = static_cast<float>(v); break;
    case DType::Float64: t.data<double>()[i] = v; break;
    case DType::Int64: t.data<int64_t>()[i] = static_cast<int64_t>(v); break;
    case DType::Int32: t.data<int32_t>()[i] = static_cast<int32_t>(v); break;
    case DType::UInt8: case DType::Bool: t.data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
    default: ADD_FAILURE() << "test helper: dtype";
  }
}

bool is_float_type(DType t) { return t == DType::Float32 || t == DType::Float64 || t == DType::Float16; }

// Values k/4 for k in [-40, 40]: every sum of a few of them is exact in float32 and float16.
Tensor quarters(DType t, const Shape& s, std::mt19937& rng) {
  Tensor x(t, s);
  std::uniform_int_distribution<int> k(-40, 40);
  for (int64_t i = 0; i < x.numel(); ++i) set(x, i, is_float_type(t) ? k(rng) / 4.0 : k(rng));
  return x;
}

// Factors whose products stay exact in float16: powers of two (and small integers for ints).
Tensor factors(DType t, const Shape& s, std::mt19937& rng) {
  static const double f[] = {0.5, -1, 2, -0.5, 1, -2};
  static const double fi[] = {-1, 2, 3, 1, -2, -3};
  Tensor x(t, s);
  std::uniform_int_distribution<int> k(0, 5);
  for (int64_t i = 0; i < x.numel(); ++i) set(x, i, is_float_type(t) ? f[k(rng)] : fi[k(rng)]);
  return x;
}

Tensor index_tensor(const std::vector<int64_t>& v, const Shape& s, DType t) {
  Tensor r(t, s);
  for (size_t k = 0; k < v.size(); ++k) set(r, static_cast<int64_t>(k), static_cast<double>(v[k]));
  return r;
}

void expect_match(const Tensor& got, const Tensor& want, const std::string& what, double tol = 0) {
  ASSERT_EQ(str(got.shape), str(want.shape)) << what;
  ASSERT_EQ(got.dtype, want.dtype) << what;
  if (got.dtype == DType::Float32 && (tol > 0 || fp16_mode())) {
    EXPECT_LE(rel_error(got, want), tol) << what;
    return;
  }
  if (got.bytes == want.bytes) return;
  for (int64_t i = 0; i < want.numel(); ++i)
    if (get(got, i) != get(want, i)) {
      ADD_FAILURE() << what << ": element " << i << " is " << get(got, i) << ", want " << get(want, i);
      return;
    }
  ADD_FAILURE() << what << ": bytes differ";
}

struct Input {
  std::string name;
  Tensor t;
  bool runtime = false;  // fed at run time on the device path (else always an initializer)
};

// Runs `op` on `inputs` twice: with the `runtime` inputs fed at run time (device), and with every
// input an initializer (folded on the host). Both must match `want`.
void check_both(const std::string& op, const std::vector<Input>& inputs,
                const std::function<void(onnx::NodeProto&)>& attrs, const Tensor& want, const std::string& what,
                int opset, double tol = 0) {
  for (bool folded : {false, true}) {
    ModelBuilder m(opset);
    std::vector<std::string> names;
    std::map<std::string, Tensor> feeds;
    for (auto& in : inputs) {
      names.push_back(in.name);
      if (in.name.empty()) continue;  // an omitted optional input
      if (in.runtime && !folded) {
        m.input(in.name, in.t.dtype, in.t.shape);
        feeds[in.name] = in.t;
      } else {
        m.initializer(in.name, in.t);
      }
    }
    m.output("y");
    auto& n = m.node(op, names, {"y"});
    if (attrs) attrs(n);
    // A device without cl_khr_fp64 (rusticl) must refuse float64 arithmetic, naming the extension
    // (an empty output needs none).
    if (!folded && want.dtype == DType::Float64 && want.numel() > 0 && !test_device().fp64) {
      try {
        run_model(m, feeds);
        ADD_FAILURE() << what << ": float64 ran on a device without cl_khr_fp64";
      } catch (const ocl_infer::UnsupportedError& e) {
        EXPECT_NE(std::string(e.what()).find("cl_khr_fp64"), std::string::npos) << e.what();
      }
      continue;
    }
    auto out = run_model(m, feeds);
    expect_match(out.at("y"), want, what + (folded ? " (host)" : " (device)"), tol);
  }
}

enum class Red { None, Add, Mul, Max, Min };
const char* red_name(Red r) {
  switch (r) {
    case Red::None: return "none";
    case Red::Add: return "add";
    case Red::Mul: return "mul";
    case Red::Max: return "max";
    case Red::Min: return "min";
  }
  return "";
}
double apply(Red r, double a, double u) {
  switch (r) {
    case Red::None: return u;
    case Red::Add: return a + u;
    case Red::Mul: return a * u;
    case Red::Max: return std::max(a, u);
    case Red::Min: return std::min(a, u);
  }
  return u;
}
int opset_for(Red r) { return r == Red::None ? 13 : r == Red::Add || r == Red::Mul ? 16 : 18; }

Tensor updates_for(Red r, DType t, const Shape& s, std::mt19937& rng) {
  return r == Red::Mul ? factors(t, s, rng) : quarters(t, s, rng);
}

// Distinct indices along each line when there is no reduction (duplicates are undefined there),
// any indices otherwise; about a third negative.
std::vector<int64_t> random_axis_indices(const Shape& us, int64_t axis, int64_t dim, bool distinct,
                                         std::mt19937& rng) {
  std::vector<int64_t> v(count(us));
  std::uniform_int_distribution<int64_t> pick(0, dim - 1);
  std::bernoulli_distribution neg(0.35);
  Shape line_shape = us;
  line_shape[axis] = 1;
  std::vector<int64_t> perm(dim);
  for (int64_t l = 0; l < count(line_shape); ++l) {
    auto c = unravel(l, line_shape);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int64_t j = 0; j < us[axis]; ++j) {
      c[axis] = j;
      int64_t ix = distinct ? perm[j] : pick(rng);
      if (neg(rng)) ix -= dim;
      v[ravel(c, us)] = ix;
    }
  }
  return v;
}

Tensor scatter_elements_ref(const Tensor& data, const std::vector<int64_t>& idx, const Tensor& upd, int64_t axis,
                            Red r) {
  Tensor out = data;
  for (int64_t i = 0; i < upd.numel(); ++i) {
    auto c = unravel(i, upd.shape);
    int64_t ix = idx[i];
    c[axis] = ix < 0 ? ix + data.shape[axis] : ix;
    const int64_t o = ravel(c, data.shape);
    set(out, o, apply(r, get(out, o), get(upd, i)));
  }
  return out;
}

TEST(Scatter, ScatterElementsEveryAxisAndReduction) {
  std::mt19937 rng(101);
  struct Case {
    Shape data, upd;
  };
  const std::vector<Case> cases{{{13}, {7}},
                                {{7, 5}, {3, 5}},
                                {{5, 11}, {5, 2}},
                                {{3, 7, 5}, {2, 7, 3}},
                                {{2, 3, 5, 7}, {2, 2, 5, 3}}};
  int combo = 0;
  for (const Case& c : cases)
    for (int64_t a = 0; a < static_cast<int64_t>(c.data.size()); ++a)
      for (Red r : {Red::None, Red::Add, Red::Mul, Red::Max, Red::Min})
        for (DType t : {DType::Float32, DType::Int64, DType::Int32}) {
          if (fp16_sampled_out(combo++) && t != DType::Float32) continue;
          const int64_t axis = combo % 2 ? a - static_cast<int64_t>(c.data.size()) : a;  // negative half the time
          Shape us = c.upd;
          // Along the axis the updates may be longer than the data when duplicates are allowed.
          us[a] = r == Red::None ? std::min<int64_t>(us[a], c.data[a]) : us[a] + 2;
          const DType it = combo % 2 ? DType::Int32 : DType::Int64;
          auto iv = random_axis_indices(us, a, c.data[a], r == Red::None, rng);
          Tensor data = quarters(t, c.data, rng);
          Tensor upd = updates_for(r, t, us, rng);
          Tensor want = scatter_elements_ref(data, iv, upd, a, r);
          const std::string what = std::string("ScatterElements ") + str(c.data) + " updates " + str(us) +
                                   " axis " + std::to_string(axis) + " " + red_name(r) + " " +
                                   ocl_infer::dtype_name(t);
          check_both(
              "ScatterElements", {{"data", data, true}, {"indices", index_tensor(iv, us, it)}, {"updates", upd, true}},
              [&](onnx::NodeProto& n) {
                attr_i(n, "axis", axis);
                if (r != Red::None) attr_s(n, "reduction", red_name(r));
              },
              want, what, opset_for(r));
        }
}

// Indices computed at run time (no plan-time check), int32, through the deprecated Scatter too.
TEST(Scatter, RuntimeIndicesAndDeprecatedScatter) {
  std::mt19937 rng(102);
  for (std::string op : {"Scatter", "ScatterElements"})
    for (int opset : {9, 11, 13}) {
      if (op == "ScatterElements" && opset < 11) continue;
      const Shape ds{5, 7}, us{5, 3};
      auto iv = random_axis_indices(us, 1, 7, true, rng);
      if (opset < 11)
        for (auto& v : iv) v = v < 0 ? v + 7 : v;  // Scatter-9 has no negative indices
      Tensor data = quarters(DType::Float32, ds, rng), upd = quarters(DType::Float32, us, rng);
      Tensor want = scatter_elements_ref(data, iv, upd, 1, Red::None);
      check_both(op,
                 {{"data", data, true}, {"indices", index_tensor(iv, us, DType::Int32), true}, {"updates", upd, true}},
                 [](onnx::NodeProto& n) { attr_i(n, "axis", -1); }, want, op + "-" + std::to_string(opset), opset);
    }
}

Tensor scatter_nd_ref(const Tensor& data, const std::vector<int64_t>& idx, int64_t depth, const Tensor& upd, Red r) {
  Tensor out = data;
  int64_t slice = 1;
  for (size_t d = depth; d < data.shape.size(); ++d) slice *= data.shape[d];
  const int64_t nsel = slice == 0 ? 0 : upd.numel() / slice;
  for (int64_t s = 0; s < nsel; ++s) {
    std::vector<int64_t> c(data.shape.size(), 0);
    for (int64_t k = 0; k < depth; ++k) {
      int64_t ix = idx[s * depth + k];
      c[k] = ix < 0 ? ix + data.shape[k] : ix;
    }
    const int64_t base = ravel(c, data.shape);
    for (int64_t e = 0; e < slice; ++e)
      set(out, base + e, apply(r, get(out, base + e), get(upd, s * slice + e)));
  }
  return out;
}

TEST(Scatter, ScatterNdEveryDepthAndReduction) {
  std::mt19937 rng(103);
  struct Case {
    Shape data;
    Shape sel;  // indices' leading dims
  };
  const std::vector<Case> cases{{{11}, {4}}, {{7, 5}, {3}}, {{3, 7, 5}, {2, 3}}, {{2, 3, 5, 3}, {5}}};
  int combo = 0;
  for (const Case& c : cases)
    for (int64_t depth = 1; depth <= static_cast<int64_t>(c.data.size()); ++depth)
      for (Red r : {Red::None, Red::Add, Red::Mul, Red::Max, Red::Min})
        for (DType t : {DType::Float32, DType::Int64}) {
          if (fp16_sampled_out(combo++) && t != DType::Float32) continue;
          Shape prefix(c.data.begin(), c.data.begin() + depth);
          const int64_t cells = count(prefix);
          // Without a reduction the tuples must be distinct: at most one per cell.
          Shape sel = c.sel;
          if (r == Red::None && count(sel) > cells) sel = {cells};
          std::vector<int64_t> order(cells);
          std::iota(order.begin(), order.end(), 0);
          std::shuffle(order.begin(), order.end(), rng);
          std::uniform_int_distribution<int64_t> any(0, cells - 1);
          std::bernoulli_distribution neg(0.35);
          std::vector<int64_t> iv;
          for (int64_t s = 0; s < count(sel); ++s) {
            auto cell = unravel(r == Red::None ? order[s] : any(rng), prefix);
            for (int64_t k = 0; k < depth; ++k) iv.push_back(neg(rng) ? cell[k] - prefix[k] : cell[k]);
          }
          Shape is = sel;
          is.push_back(depth);
          Shape us = sel;
          us.insert(us.end(), c.data.begin() + depth, c.data.end());
          Tensor data = quarters(t, c.data, rng);
          Tensor upd = updates_for(r, t, us, rng);
          Tensor want = scatter_nd_ref(data, iv, depth, upd, r);
          const std::string what = "ScatterND " + str(c.data) + " indices " + str(is) + " " + red_name(r) + " " +
                                   ocl_infer::dtype_name(t);
          check_both(
              "ScatterND",
              {{"data", data, true}, {"indices", index_tensor(iv, is, DType::Int64), combo % 3 == 0},
               {"updates", upd, true}},
              [&](onnx::NodeProto& n) {
                if (r != Red::None) attr_s(n, "reduction", red_name(r));
              },
              want, what, opset_for(r));
        }
}

// Empty updates leave the data as it is; empty data with empty updates is empty.
TEST(Scatter, ZeroSizeUpdates) {
  std::mt19937 rng(104);
  for (Red r : {Red::None, Red::Add}) {
    Tensor data = quarters(DType::Float32, {3, 5}, rng);
    check_both(
        "ScatterElements",
        {{"data", data, true}, {"indices", Tensor(DType::Int64, {3, 0}), true},
         {"updates", Tensor(DType::Float32, {3, 0}), true}},
        [&](onnx::NodeProto& n) {
          attr_i(n, "axis", 1);
          if (r != Red::None) attr_s(n, "reduction", red_name(r));
        },
        data, std::string("ScatterElements empty updates ") + red_name(r), opset_for(r));
    check_both(
        "ScatterND",
        {{"data", data, true}, {"indices", Tensor(DType::Int64, {0, 1}), true},
         {"updates", Tensor(DType::Float32, {0, 5}), true}},
        [&](onnx::NodeProto& n) {
          if (r != Red::None) attr_s(n, "reduction", red_name(r));
        },
        data, std::string("ScatterND empty updates ") + red_name(r), opset_for(r));
    Tensor empty(DType::Float32, {0, 4});
    check_both("ScatterElements",
               {{"data", empty, true}, {"indices", Tensor(DType::Int64, {0, 4})}, {"updates", empty, true}},
               [&](onnx::NodeProto& n) {
                 if (r != Red::None) attr_s(n, "reduction", red_name(r));
               },
               empty, std::string("ScatterElements empty data ") + red_name(r), opset_for(r));
  }
}

// Out of range: a constant index is a ModelError when the session is made; one computed at run
// time fails the run with an error naming the node. Nothing crashes either way.
TEST(Scatter, OutOfRangeIndicesAreClearErrors) {
  for (std::string op : {"ScatterElements", "ScatterND"})
    for (Red r : {Red::None, Red::Add})
      for (int64_t bad : {5, -6, 1000}) {
        const bool nd = op == "ScatterND";
        const Shape ds{5, 3}, is = nd ? Shape{2, 1} : Shape{2, 3}, us = nd ? Shape{2, 3} : Shape{2, 3};
        Tensor idx = index_tensor(std::vector<int64_t>(count(is), 0), is, DType::Int64);
        idx.data<int64_t>()[1] = bad;
        const std::string ctx = op + " " + red_name(r) + " index " + std::to_string(bad);
        for (bool constant : {true, false}) {
          ModelBuilder m(opset_for(r));
          m.input("data", DType::Float32, ds).input("updates", DType::Float32, us).output("y");
          std::map<std::string, Tensor> feeds{{"data", Tensor(DType::Float32, ds)}, {"updates", Tensor(DType::Float32, us)}};
          if (constant) {
            m.initializer("indices", idx);
          } else {
            m.input("indices", DType::Int64, is);
            feeds["indices"] = idx;
          }
          auto& n = m.node(op, {"data", "indices", "updates"}, {"y"});
          if (!nd) attr_i(n, "axis", 0);
          if (r != Red::None) attr_s(n, "reduction", red_name(r));
          try {
            run_model(m, feeds);
            ADD_FAILURE() << ctx << ": expected an error";
          } catch (const ocl_infer::ModelError& e) {
            EXPECT_TRUE(constant) << ctx << ": " << e.what();
            EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
          } catch (const ocl_infer::Error& e) {
            EXPECT_FALSE(constant) << ctx << ": " << e.what();
            EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << e.what();
          }
        }
      }
}

TEST(Scatter, BadShapesAreModelErrors) {
  {
    ModelBuilder m(16);
    m.input("data", DType::Float32, {3, 4}).input("updates", DType::Float32, {2, 5}).output("y");
    m.initializer("indices", Tensor(DType::Int64, {2, 5}));
    m.node("ScatterElements", {"data", "indices", "updates"}, {"y"});
    EXPECT_THROW(run_model(m, {{"data", Tensor(DType::Float32, {3, 4})}, {"updates", Tensor(DType::Float32, {2, 5})}}),
                 ocl_infer::ModelError);
  }
  {
    ModelBuilder m(16);
    m.input("data", DType::Float32, {3, 4}).input("updates", DType::Float32, {2, 3}).output("y");
    m.initializer("indices", Tensor(DType::Int64, {2, 1}));
    m.node("ScatterND", {"data", "indices", "updates"}, {"y"});
    EXPECT_THROW(run_model(m, {{"data", Tensor(DType::Float32, {3, 4})}, {"updates", Tensor(DType::Float32, {2, 3})}}),
                 ocl_infer::ModelError);
  }
  {
    ModelBuilder m(16);  // max needs opset 18
    m.input("data", DType::Float32, {3}).input("updates", DType::Float32, {1}).output("y");
    m.initializer("indices", Tensor(DType::Int64, {1}));
    attr_s(m.node("ScatterElements", {"data", "indices", "updates"}, {"y"}), "reduction", "max");
    EXPECT_THROW(run_model(m, {{"data", Tensor(DType::Float32, {3})}, {"updates", Tensor(DType::Float32, {1})}}),
                 ocl_infer::ModelError);
  }
}

// ---- OneHot --------------------------------------------------------------------------------
TEST(Scatter, OneHotAxesNegativeAndOutOfRangeIndices) {
  std::mt19937 rng(105);
  const std::vector<Shape> shapes{{7}, {3, 5}, {2, 3, 5}};
  int combo = 0;
  for (const Shape& s : shapes)
    for (int64_t axis = -static_cast<int64_t>(s.size()) - 1; axis <= static_cast<int64_t>(s.size()); ++axis)
      for (int opset : {9, 11})
        for (DType it : {DType::Int64, DType::Int32, DType::Float32}) {
          if (fp16_sampled_out(combo++)) continue;
          const int64_t depth = 7;
          std::uniform_int_distribution<int64_t> pick(-depth - 2, depth + 1);  // some out of range
          std::vector<int64_t> iv(count(s));
          for (auto& v : iv) v = pick(rng);
          Tensor idx(it, s);
          for (int64_t i = 0; i < idx.numel(); ++i) set(idx, i, static_cast<double>(iv[i]));
          if (it == DType::Float32 && idx.numel() > 1) idx.data<float>()[0] = 2.75f;  // truncates to 2
          if (it == DType::Float32 && idx.numel() > 1) iv[0] = 2;
          const DType vt = combo % 2 ? DType::Float32 : DType::Int64;
          Tensor values(vt, {2});
          set(values, 0, -3);
          set(values, 1, 5);
          const int64_t a = axis < 0 ? axis + static_cast<int64_t>(s.size()) + 1 : axis;
          Shape os = s;
          os.insert(os.begin() + a, depth);
          Tensor want(vt, os);
          for (int64_t i = 0; i < want.numel(); ++i) {
            auto c = unravel(i, os);
            const int64_t d = c[a];
            c.erase(c.begin() + a);
            int64_t ix = iv[ravel(c, s)];
            if (opset >= 11 && ix < 0) ix += depth;
            set(want, i, ix == d ? 5 : -3);
          }
          Tensor dt(combo % 3 ? DType::Int64 : DType::Float32, {});
          set(dt, 0, static_cast<double>(depth));
          check_both(
              "OneHot", {{"indices", idx, true}, {"depth", dt}, {"values", values, true}},
              [&](onnx::NodeProto& n) { attr_i(n, "axis", axis); }, want,
              "OneHot " + str(s) + " axis " + std::to_string(axis) + " opset " + std::to_string(opset) + " " +
                  ocl_infer::dtype_name(it),
              opset);
        }
}

// Depth fed at run time: it decides the output shape, so the plan is made for its value.
TEST(Scatter, OneHotRuntimeDepth) {
  ModelBuilder m(11);
  m.input("indices", DType::Int64, {4}).input("depth", DType::Int64, {1}).output("y");
  Tensor values(DType::Float32, {2});
  values.data<float>()[0] = 0;
  values.data<float>()[1] = 1;
  m.initializer("values", values);
  m.node("OneHot", {"indices", "depth", "values"}, {"y"});
  Tensor idx = index_tensor({0, 2, -1, 9}, {4}, DType::Int64);
  for (int64_t depth : {3, 5}) {
    auto out = run_model(m, {{"indices", idx}, {"depth", index_tensor({depth}, {1}, DType::Int64)}});
    Tensor want(DType::Float32, {4, depth});
    set(want, 0 * depth + 0, 1);
    set(want, 1 * depth + 2, 1);
    set(want, 2 * depth + depth - 1, 1);
    expect_match(out.at("y"), want, "OneHot runtime depth " + std::to_string(depth));
  }
}

// ---- EyeLike -------------------------------------------------------------------------------
TEST(Scatter, EyeLikeShapesOffsetsAndTypes) {
  const std::vector<Shape> shapes{{1, 1}, {5, 5}, {3, 7}, {11, 4}, {0, 3}};
  int combo = 0;
  for (const Shape& s : shapes)
    for (int64_t k : {0, 1, -1, 3, -4, 20, -20})
      for (int dtype : {0, static_cast<int>(DType::Float32), static_cast<int>(DType::Int64),
                        static_cast<int>(DType::Int32), static_cast<int>(DType::Bool)}) {
        if (fp16_sampled_out(combo++)) continue;
        const DType in_t = combo % 2 ? DType::Float32 : DType::Int32;
        const DType out_t = dtype ? static_cast<DType>(dtype) : in_t;
        Tensor x(in_t, s);
        Tensor want(out_t, s);
        for (int64_t r = 0; r < s[0]; ++r)
          for (int64_t c = 0; c < s[1]; ++c) set(want, r * s[1] + c, c - r == k ? 1 : 0);
        check_both(
            "EyeLike", {{"x", x, true}},
            [&](onnx::NodeProto& n) {
              attr_i(n, "k", k);
              if (dtype) attr_i(n, "dtype", dtype);
            },
            want, "EyeLike " + str(s) + " k " + std::to_string(k) + " dtype " + std::to_string(dtype), 9);
      }
}

// ---- Trilu ---------------------------------------------------------------------------------
TEST(Scatter, TriluBatchedUpperLowerAndOffsets) {
  std::mt19937 rng(106);
  const std::vector<Shape> shapes{{4, 5}, {7, 3}, {2, 5, 5}, {3, 1, 7}, {2, 3, 6, 11}, {2, 0, 3}};
  int combo = 0;
  for (const Shape& s : shapes)
    for (bool upper : {true, false})
      for (int64_t k : {INT64_MIN, int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{2}, int64_t{-3}, int64_t{12},
                        int64_t{-12}})  // INT64_MIN: no k input
        for (DType t : {DType::Float32, DType::Int64, DType::UInt8}) {
          if (fp16_sampled_out(combo++) && t != DType::Float32) continue;
          Tensor x = quarters(t == DType::UInt8 ? DType::Int32 : t, s, rng);
          if (t == DType::UInt8) {
            Tensor b(DType::UInt8, s);
            for (int64_t i = 0; i < b.numel(); ++i) b.data<uint8_t>()[i] = static_cast<uint8_t>(get(x, i) + 100);
            x = b;
          }
          const int64_t kk = k == INT64_MIN ? 0 : k;
          const int64_t rows = s[s.size() - 2], cols = s.back();
          Tensor want = x;
          for (int64_t i = 0; i < want.numel(); ++i) {
            const int64_t c = i % cols, r = (i / cols) % rows;
            const bool keep = upper ? c - r >= kk : c - r <= kk;
            if (!keep) set(want, i, 0);
          }
          std::vector<Input> ins{{"x", x, true}};
          if (k != INT64_MIN) ins.push_back({"k", index_tensor({k}, {}, DType::Int64)});
          check_both(
              "Trilu", ins, [&](onnx::NodeProto& n) { attr_i(n, "upper", upper); }, want,
              "Trilu " + str(s) + (upper ? " upper" : " lower") + " k " + std::to_string(kk) + " " +
                  ocl_infer::dtype_name(t),
              14);
        }
}

// ---- CumSum --------------------------------------------------------------------------------
Tensor cumsum_ref(const Tensor& x, int64_t axis, bool exclusive, bool reverse) {
  Tensor y(x.dtype, x.shape);
  const int64_t len = x.shape[axis];
  for (int64_t i = 0; i < y.numel(); ++i) {
    auto c = unravel(i, x.shape);
    const int64_t at = c[axis];
    double acc = 0;
    float acc32 = 0;  // float32 sums in float, in order, as the definition's loop
    for (int64_t t = 0; t < len; ++t) {
      const int64_t j = reverse ? len - 1 - t : t;
      if (exclusive ? (reverse ? j <= at : j >= at) : (reverse ? j < at : j > at)) break;
      c[axis] = j;
      const double v = get(x, ravel(c, x.shape));
      acc += v;
      acc32 += static_cast<float>(v);
    }
    set(y, i, x.dtype == DType::Float32 ? acc32 : acc);
  }
  return y;
}

TEST(Scatter, CumSumEveryAxisExclusiveReverse) {
  std::mt19937 rng(107);
  const std::vector<Shape> shapes{{1}, {13}, {5, 7}, {3, 1, 11}, {2, 3, 5, 7}, {3, 0, 2}};
  int combo = 0;
  for (const Shape& s : shapes)
    for (int64_t a = 0; a < static_cast<int64_t>(s.size()); ++a)
      for (int flags = 0; flags < 4; ++flags)
        for (DType t : {DType::Float32, DType::Int64, DType::Int32, DType::Float64}) {
          if (fp16_sampled_out(combo++) && t != DType::Float32) continue;
          const bool exclusive = flags & 1, reverse = flags & 2;
          Tensor x = t == DType::Float32 ? random_tensor(s, rng) : quarters(t, s, rng);
          const int64_t axis = (combo / 3) % 2 ? a - static_cast<int64_t>(s.size()) : a;  // negative half the time
          Tensor want = cumsum_ref(x, a, exclusive, reverse);
          const DType at = combo % 2 ? DType::Int32 : DType::Int64;
          check_both(
              "CumSum", {{"x", x, true}, {"axis", index_tensor({axis}, {}, at)}},
              [&](onnx::NodeProto& n) {
                attr_i(n, "exclusive", exclusive);
                attr_i(n, "reverse", reverse);
              },
              want,
              "CumSum " + str(s) + " axis " + std::to_string(axis) + (exclusive ? " exclusive" : "") +
                  (reverse ? " reverse" : "") + " " + ocl_infer::dtype_name(t),
              combo % 3 ? 14 : 11, t == DType::Float32 ? 1e-6 : 0);
        }
}

// A long line of positive values: in fp16 mode the running sum must still be kept in float (a
// float16 accumulator stops growing once its step exceeds the values, far beyond the tolerance).
TEST(Scatter, CumSumLongLineAccumulatesInFloat) {
  std::mt19937 rng(108);
  const Shape s{2, 3001};
  Tensor x = random_tensor(s, rng, 0.25f, 1.0f);
  Tensor want = cumsum_ref(x, 1, false, false);
  check_both("CumSum", {{"x", x, true}, {"axis", index_tensor({-1}, {}, DType::Int64)}}, nullptr, want,
             "CumSum long line", 14, 1e-6);
}

}  // namespace
