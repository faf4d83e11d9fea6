// Tensor/shape ops against small CPU references on random shapes with odd and prime sizes. Data
// movement is exact, so device results must equal the reference bit for bit. Each op also runs
// once with constant inputs, which folds it on the host, and must give the same bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

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

// A float tensor whose values are distinct (its flat index plus a random offset), so a misplaced
// element is always visible. In fp16 mode the offset is a whole number, so every value up to 2048
// apart stays exactly representable in float16.
Tensor iota_tensor(const Shape& s, std::mt19937& rng) {
  Tensor t(DType::Float32, s);
  float base = std::uniform_real_distribution<float>(-100, 100)(rng);
  if (fp16_mode()) {
    base = std::round(base);
    EXPECT_LE(t.numel(), 1900) << "fp16 mode: values would stop being exact";
  }
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = base + static_cast<float>(i);
  return t;
}

Tensor ints(const std::vector<int64_t>& v, DType t = DType::Int64) {
  Tensor r(t, {static_cast<int64_t>(v.size())});
  for (size_t k = 0; k < v.size(); ++k) {
    if (t == DType::Int64)
      r.data<int64_t>()[k] = v[k];
    else
      r.data<int32_t>()[k] = static_cast<int32_t>(v[k]);
  }
  return r;
}

// Output f(out_coord) = input[in_coord] reference.
template <typename F>
Tensor reference(const Tensor& x, const Shape& out_shape, F src_coord) {
  Tensor y(x.dtype, out_shape);
  const size_t es = ocl_infer::dtype_size(x.dtype);
  for (int64_t i = 0; i < y.numel(); ++i) {
    auto c = src_coord(unravel(i, out_shape));
    std::memcpy(y.bytes.data() + i * es, x.bytes.data() + ravel(c, x.shape) * es, es);
  }
  return y;
}

void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(ocl_infer::shape_to_string(got.shape), ocl_infer::shape_to_string(want.shape)) << what;
  ASSERT_EQ(got.dtype, want.dtype) << what;
  EXPECT_TRUE(got.bytes == want.bytes) << what;
}

// Runs `op` once with `x` fed at run time (device path) and once with `x` as an initializer
// (folded on the host); both must equal `want`. `extra` are constant inputs (shapes, indices).
void check_both_paths(const std::string& op, const Tensor& x,
                      const std::vector<std::pair<std::string, Tensor>>& extra,
                      const std::function<void(onnx::NodeProto&)>& attrs, const Tensor& want,
                      const std::string& what, int opset = 13) {
  for (bool folded : {false, true}) {
    ModelBuilder m(opset);
    std::vector<std::string> ins{"x"};
    if (folded)
      m.initializer("x", x);
    else
      m.input("x", x.dtype, x.shape);
    for (auto& [name, t] : extra) {
      m.initializer(name, t);
      ins.push_back(name);
    }
    m.output("y");
    auto& n = m.node(op, ins, {"y"});
    if (attrs) attrs(n);
    std::map<std::string, Tensor> feeds;
    if (!folded) feeds["x"] = x;
    auto out = run_model(m, feeds);
    expect_same(out.at("y"), want, what + (folded ? " (host)" : " (device)"));
  }
}

TEST(TensorOps, TransposeMatchesReference) {
  std::mt19937 rng(11);
  struct Case {
    Shape s;
    std::vector<int64_t> perm;
  };
  for (auto c : std::vector<Case>{{{7, 3}, {1, 0}},
                                  {{2, 3, 5}, {2, 0, 1}},
                                  {{3, 1, 7, 5}, {0, 2, 3, 1}},
                                  {{2, 3, 5, 7}, {3, 2, 1, 0}},
                                  {{1, 13, 1, 11, 2}, {4, 1, 3, 0, 2}},
                                  // Tiled transposes (copy_transpose): whole 8x8 tiles and
                                  // partial ones, batched, NCHW <-> NHWC.
                                  {{2, 19, 37}, {0, 2, 1}},
                                  {{1, 16, 8, 8}, {0, 2, 3, 1}},
                                  {{1, 16, 5, 16}, {0, 3, 1, 2}},
                                  {{40, 8}, {1, 0}},
                                  // Rows contiguous on both sides (copy_rows on CPU devices):
                                  // attention heads split and merged, a 51-word row, 3-word rows
                                  // (too short: the element walk).
                                  {{1, 6, 4, 12}, {0, 2, 1, 3}},
                                  {{1, 4, 6, 12}, {0, 2, 1, 3}},
                                  {{2, 5, 3, 17}, {1, 0, 2, 3}},
                                  {{4, 5, 3}, {1, 0, 2}}}) {
    Tensor x = iota_tensor(c.s, rng);
    Shape os;
    for (auto p : c.perm) os.push_back(c.s[p]);
    Tensor want = reference(x, os, [&](const std::vector<int64_t>& oc) {
      std::vector<int64_t> ic(c.s.size());
      for (size_t k = 0; k < c.perm.size(); ++k) ic[c.perm[k]] = oc[k];
      return ic;
    });
    check_both_paths(
        "Transpose", x, {}, [&](onnx::NodeProto& n) { attr_ints(n, "perm", c.perm); }, want,
        "transpose " + ocl_infer::shape_to_string(c.s));
  }
}

TEST(TensorOps, SliceWithNegativeStepsAndClamping) {
  std::mt19937 rng(12);
  struct Case {
    Shape s;
    std::vector<int64_t> starts, ends, axes, steps;
  };
  for (auto c : std::vector<Case>{
           {{11, 7}, {1, 0}, {9, 7}, {0, 1}, {2, 3}},
           {{13, 5}, {-1}, {-1000}, {0}, {-2}},                 // walk backwards to the start
           {{5, 17}, {100, 3}, {-100, 1000}, {1, 0}, {-3, 1}},  // clamped both ways
           {{3, 7, 5}, {0, 2}, {INT64_MAX, 3}, {-1, 1}, {1, 1}},
           {{3, 4, 5}, {2}, {2}, {1}, {1}},  // empty result
       }) {
    Tensor x = iota_tensor(c.s, rng);
    // numpy semantics, written the obvious way.
    std::vector<std::vector<int64_t>> picks(c.s.size());
    for (size_t d = 0; d < c.s.size(); ++d)
      for (int64_t i = 0; i < c.s[d]; ++i) picks[d].push_back(i);
    for (size_t k = 0; k < c.starts.size(); ++k) {
      int64_t a = c.axes[k] < 0 ? c.axes[k] + static_cast<int64_t>(c.s.size()) : c.axes[k];
      int64_t n = c.s[a], st = c.steps[k];
      int64_t b = c.starts[k], e = c.ends[k];
      if (b < 0) b += n;
      if (e < 0) e += n;
      picks[a].clear();
      if (st > 0) {
        b = std::clamp<int64_t>(b, 0, n);
        e = std::clamp<int64_t>(e, 0, n);
        for (int64_t i = b; i < e; i += st) picks[a].push_back(i);
      } else {
        b = std::clamp<int64_t>(b, 0, n - 1);
        e = std::clamp<int64_t>(e, -1, n - 1);
        for (int64_t i = b; i > e; i += st) picks[a].push_back(i);
      }
    }
    Shape os;
    for (auto& p : picks) os.push_back(static_cast<int64_t>(p.size()));
    Tensor want = reference(x, os, [&](const std::vector<int64_t>& oc) {
      std::vector<int64_t> ic(oc.size());
      for (size_t d = 0; d < oc.size(); ++d) ic[d] = picks[d][oc[d]];
      return ic;
    });
    check_both_paths("Slice", x,
                     {{"starts", ints(c.starts)},
                      {"ends", ints(c.ends)},
                      {"axes", ints(c.axes)},
                      {"steps", ints(c.steps)}},
                     nullptr, want, "slice " + ocl_infer::shape_to_string(c.s));
  }
}

TEST(TensorOps, ConcatAndSplitRoundTrip) {
  std::mt19937 rng(13);
  for (int64_t axis : {0, 1, 2, -1}) {
    Shape base{3, 5, 7};
    int64_t a = axis < 0 ? axis + 3 : axis;
    std::vector<int64_t> parts{2, 1, 4};
    ModelBuilder m;
    std::vector<std::string> names;
    std::map<std::string, Tensor> feeds;
    std::vector<Tensor> xs;
    for (size_t k = 0; k < parts.size(); ++k) {
      Shape s = base;
      s[a] = parts[k];
      names.push_back("x" + std::to_string(k));
      xs.push_back(iota_tensor(s, rng));
      m.input(names.back(), DType::Float32, s);
      feeds[names.back()] = xs.back();
    }
    m.initializer("split", ints(parts));
    m.output("cat").output("y0").output("y1").output("y2");
    attr_i(m.node("Concat", names, {"cat"}), "axis", axis);
    attr_i(m.node("Split", {"cat", "split"}, {"y0", "y1", "y2"}), "axis", axis);
    auto out = run_model(m, feeds);
    Shape cs = base;
    cs[a] = 7;
    Tensor want(DType::Float32, cs);
    for (int64_t i = 0; i < want.numel(); ++i) {
      auto c = unravel(i, cs);
      size_t k = 0;
      while (c[a] >= parts[k]) c[a] -= parts[k++];
      want.data<float>()[i] = xs[k].data<float>()[ravel(c, xs[k].shape)];
    }
    expect_same(out.at("cat"), want, "concat axis " + std::to_string(axis));
    for (size_t k = 0; k < 3; ++k)
      expect_same(out.at("y" + std::to_string(k)), xs[k], "split part");
  }
}

TEST(TensorOps, ExpandAndTile) {
  std::mt19937 rng(14);
  {
    Tensor x = iota_tensor({3, 1, 5}, rng);
    Shape os{2, 3, 7, 5};
    Tensor want = reference(x, os, [](const std::vector<int64_t>& oc) {
      return std::vector<int64_t>{oc[1], 0, oc[3]};
    });
    check_both_paths("Expand", x, {{"shape", ints({2, 1, 7, 1})}}, nullptr, want, "expand");
  }
  {
    Tensor x = iota_tensor({2, 3, 5}, rng);
    std::vector<int64_t> reps{3, 1, 2};
    Shape os{6, 3, 10};
    Tensor want = reference(x, os, [&](const std::vector<int64_t>& oc) {
      return std::vector<int64_t>{oc[0] % 2, oc[1] % 3, oc[2] % 5};
    });
    check_both_paths("Tile", x, {{"repeats", ints(reps)}}, nullptr, want, "tile");
  }
}

TEST(TensorOps, GatherWithRuntimeNegativeIndices) {
  std::mt19937 rng(15);
  for (int64_t axis : {0, 1, 2}) {
    Shape s{5, 7, 3};
    Tensor x = iota_tensor(s, rng);
    std::vector<int64_t> iv{0, -1, 2, 1, -s[axis]};
    for (DType it : {DType::Int64, DType::Int32}) {
      Tensor idx = ints(iv, it);
      idx.shape = {5, 1};
      ModelBuilder m;
      m.input("x", DType::Float32, s).input("i", it, {5, 1}).output("y");
      attr_i(m.node("Gather", {"x", "i"}, {"y"}), "axis", axis);
      auto out = run_model(m, {{"x", x}, {"i", idx}});
      Shape os;
      for (int64_t d = 0; d < 3; ++d) {
        if (d == axis)
          os.insert(os.end(), {5, 1});
        else
          os.push_back(s[d]);
      }
      Tensor want = reference(x, os, [&](const std::vector<int64_t>& oc) {
        std::vector<int64_t> ic;
        for (size_t d = 0; d < oc.size(); ++d) {
          if (static_cast<int64_t>(d) == axis) {
            int64_t k = iv[oc[d]];
            ic.push_back(k < 0 ? k + s[axis] : k);
            ++d;  // skip the index tensor's second dim
          } else {
            ic.push_back(oc[d]);
          }
        }
        return ic;
      });
      expect_same(out.at("y"), want, "gather axis " + std::to_string(axis));
    }
  }
}

// Gathers whose rows hold 64+ elements take gather_rows on CPU devices (a row's index read once,
// runs of up to 4096 elements a work-item): axes 0 and 1, rows longer than a run, float32, int64
// and uint8 data (words of 4, 8 and 1 bytes), runtime negative indices, each row copied exactly;
// a runtime index out of range fails naming the node, as gather_axis does.
TEST(TensorOps, GatherOfLongRows) {
  std::mt19937 rng(16);
  struct Case {
    Shape s;
    int64_t axis;
    std::vector<int64_t> idx;
  };
  for (const Case& c : {Case{{3, 5, 100}, 0, {2, -3, 1, 1}}, Case{{3, 5, 100}, 1, {4, 0, -1}},
                        Case{{2, 9000}, 0, {1, 0, -1}}, Case{{1, 3, 20, 20}, 0, {0}}}) {
    for (DType t : {DType::Float32, DType::Int64, DType::UInt8}) {
      Tensor x(t, c.s);
      for (int64_t i = 0; i < x.numel(); ++i) {
        if (t == DType::Float32) x.data<float>()[i] = fp16_mode() ? static_cast<float>(i % 2048) : static_cast<float>(rng()) / 7.0f;
        if (t == DType::Int64) x.data<int64_t>()[i] = static_cast<int64_t>(rng()) * 977 - i;
        if (t == DType::UInt8) x.data<uint8_t>()[i] = static_cast<uint8_t>(rng());
      }
      const Tensor idx = ints(c.idx);
      ModelBuilder m;
      m.input("x", t, c.s).input("i", DType::Int64, {static_cast<int64_t>(c.idx.size())}).output("y");
      attr_i(m.node("Gather", {"x", "i"}, {"y"}), "axis", c.axis);
      auto session = open_session(m, ocl_infer::SessionOptions{});
      const Tensor y = session.run({{"x", x}, {"i", idx}}).at("y");
      Shape os = c.s;
      os[c.axis] = static_cast<int64_t>(c.idx.size());
      const Tensor want = reference(x, os, [&](const std::vector<int64_t>& oc) {
        std::vector<int64_t> ic = oc;
        const int64_t k = c.idx[oc[c.axis]];
        ic[c.axis] = k < 0 ? k + c.s[c.axis] : k;
        return ic;
      });
      const std::string what = ocl_infer::shape_to_string(c.s) + " axis " + std::to_string(c.axis) + " " +
                               ocl_infer::dtype_name(t);
      expect_same(y, want, what);
      if (session.device().type == "CPU") {
        EXPECT_NE(session.dump("plan").find("gather_rows"), std::string::npos) << what;
      }
      std::vector<int64_t> bad = c.idx;
      bad.back() = c.s[c.axis];
      EXPECT_THROW(session.run({{"x", x}, {"i", ints(bad)}}), ocl_infer::InputError) << what;
    }
  }
}

TEST(TensorOps, GatherElementsAndGatherNd) {
  std::mt19937 rng(20);
  Shape s{3, 5, 7};
  Tensor x = iota_tensor(s, rng);
  for (DType it : {DType::Int64, DType::Int32}) {
    // GatherElements on axis 1 with indices of shape [3, 4, 7], some negative.
    Shape is{3, 4, 7};
    std::vector<int64_t> iv(3 * 4 * 7);
    std::uniform_int_distribution<int64_t> pick(-5, 4);
    for (auto& v : iv) v = pick(rng);
    Tensor idx = ints(iv, it);
    idx.shape = is;
    ModelBuilder m;
    m.input("x", DType::Float32, s).input("i", it, is).output("y");
    attr_i(m.node("GatherElements", {"x", "i"}, {"y"}), "axis", 1);
    auto out = run_model(m, {{"x", x}, {"i", idx}});
    Tensor want(DType::Float32, is);
    for (int64_t i = 0; i < want.numel(); ++i) {
      auto c = unravel(i, is);
      int64_t k = iv[i];
      c[1] = k < 0 ? k + 5 : k;
      want.data<float>()[i] = x.data<float>()[ravel(c, s)];
    }
    expect_same(out.at("y"), want, std::string("gather_elements ") + ocl_infer::dtype_name(it));
  }
  {
    // GatherND with batch_dims=1: indices [3, 2, 1] pick rows of each batch's [5, 7] matrix.
    Tensor idx(DType::Int64, {3, 2, 1});
    std::vector<int64_t> iv{4, 0, -1, 2, 1, 3};
    for (size_t k = 0; k < iv.size(); ++k) idx.data<int64_t>()[k] = iv[k];
    ModelBuilder m;
    m.input("x", DType::Float32, s).input("i", DType::Int64, {3, 2, 1}).output("y");
    attr_i(m.node("GatherND", {"x", "i"}, {"y"}), "batch_dims", 1);
    auto out = run_model(m, {{"x", x}, {"i", idx}});
    Tensor want = reference(x, {3, 2, 7}, [&](const std::vector<int64_t>& oc) {
      int64_t k = iv[oc[0] * 2 + oc[1]];
      return std::vector<int64_t>{oc[0], k < 0 ? k + 5 : k, oc[2]};
    });
    expect_same(out.at("y"), want, "gather_nd");
  }
}

// constant_value fed at run time is read from its device buffer.
// Indices computed at run time that fall outside the data: the run fails naming the node (never a
// silent zero or an out-of-bounds read); the same values as constants fail when the plan is made.
TEST(TensorOps, RuntimeIndicesOutOfRangeFail) {
  std::mt19937 rng(21);
  const Shape s{3, 5};
  const Tensor x = iota_tensor(s, rng);
  struct Op {
    const char* op;
    Shape idx_shape;
    std::vector<int64_t> idx;
    DType it;
  };
  // int32 indices too, below -dim as well as above it (rusticl once let (long)int32 < 0 through);
  // GatherND takes int64 only.
  constexpr DType I64 = DType::Int64, I32 = DType::Int32;
  for (const Op& o : {Op{"Gather", {2}, {1, 5}, I64}, Op{"Gather", {2}, {-6, 0}, I64},
                      Op{"Gather", {2}, {1, 5}, I32}, Op{"Gather", {2}, {-6, 0}, I32},
                      Op{"GatherElements", {3, 1}, {0, 7, 1}, I64}, Op{"GatherElements", {3, 1}, {0, 7, 1}, I32},
                      Op{"GatherElements", {3, 1}, {0, -6, 1}, I32}, Op{"GatherND", {1, 2}, {2, 5}, I64}}) {
    const DType it = o.it;
    SCOPED_TRACE(std::string(o.op) + " " + ocl_infer::dtype_name(it));
    Tensor idx = ints(o.idx, it);
    idx.shape = o.idx_shape;
    ModelBuilder m;
    m.input("x", DType::Float32, s).input("i", it, o.idx_shape).output("y");
    auto& n = m.node(o.op, {"x", "i"}, {"y"});
    if (std::string(o.op) != "GatherND") attr_i(n, "axis", std::string(o.op) == "GatherElements" ? 1 : 1);
    try {
      run_model(m, {{"x", x}, {"i", idx}});
      ADD_FAILURE() << "no error";
    } catch (const ocl_infer::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(o.op), std::string::npos) << e.what();
    }
    ModelBuilder c;
    c.input("x", DType::Float32, s).initializer("i", idx).output("y");
    auto& cn = c.node(o.op, {"x", "i"}, {"y"});
    if (std::string(o.op) != "GatherND") attr_i(cn, "axis", 1);
    EXPECT_THROW(run_model(c, {{"x", x}}), ocl_infer::ModelError);
  }
}

TEST(TensorOps, PadWithRuntimeConstantValue) {
  std::mt19937 rng(22);
  Tensor x(DType::Int32, {3, 4});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<int32_t>()[i] = static_cast<int32_t>(i * 7 - 30);
  Tensor v(DType::Int32, {});
  v.data<int32_t>()[0] = -123456;
  ModelBuilder m;
  m.input("x", DType::Int32, {3, 4}).input("v", DType::Int32, {}).output("y");
  m.initializer("pads", ints({1, 0, 0, 2}));
  m.node("Pad", {"x", "pads", "v"}, {"y"});
  auto out = run_model(m, {{"x", x}, {"v", v}});
  Tensor want(DType::Int32, {4, 6});
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 6; ++c)
      want.data<int32_t>()[r * 6 + c] =
          r >= 1 && c < 4 ? x.data<int32_t>()[(r - 1) * 4 + c] : -123456;
  expect_same(out.at("y"), want, "pad int32 runtime value");
}

TEST(TensorOps, PadModes) {
  std::mt19937 rng(16);
  Shape s{2, 5, 7};
  Tensor x = iota_tensor(s, rng);
  for (std::string mode : {"constant", "reflect", "edge"}) {
    // Begins then ends; the last crops. Reflection mirrors once, so its pads stay below the dims
    // (wider ones are an error, see test_limits).
    const std::vector<int64_t> pads =
        mode == "reflect" ? std::vector<int64_t>{0, 2, 6, 1, 3, -2} : std::vector<int64_t>{0, 2, 9, 1, 3, -2};
    const Shape os{3, 10, mode == "reflect" ? 11 : 14};
    Tensor want(DType::Float32, os);
    for (int64_t i = 0; i < want.numel(); ++i) {
      auto c = unravel(i, os);
      bool outside = false;
      for (size_t d = 0; d < 3; ++d) {
        int64_t v = c[d] - pads[d], n = s[d];
        if (v >= 0 && v < n) {
          c[d] = v;
          continue;
        }
        outside = true;
        if (mode == "edge")
          v = std::clamp<int64_t>(v, 0, n - 1);
        else if (mode == "reflect")
          while (v < 0 || v >= n) v = v < 0 ? -v : 2 * (n - 1) - v;
        c[d] = v;
      }
      want.data<float>()[i] = mode == "constant" && outside ? 2.5f : x.data<float>()[ravel(c, s)];
    }
    Tensor value(DType::Float32, {});
    value.data<float>()[0] = 2.5f;
    std::vector<std::pair<std::string, Tensor>> extra{{"pads", ints(pads)}};
    if (mode == "constant") extra.push_back({"value", value});
    check_both_paths(
        "Pad", x, extra, [&](onnx::NodeProto& n) { attr_s(n, "mode", mode); }, want, "pad " + mode);
  }
}

TEST(TensorOps, DepthToSpaceAndSpaceToDepth) {
  std::mt19937 rng(17);
  const int64_t b = 3, N = 2, C = 2, H = 5, W = 7;
  Tensor x = iota_tensor({N, C * b * b, H, W}, rng);
  Shape os{N, C, H * b, W * b};
  for (std::string mode : {"DCR", "CRD"}) {
    Tensor want = reference(x, os, [&](const std::vector<int64_t>& oc) {
      int64_t h = oc[2] / b, bh = oc[2] % b, w = oc[3] / b, bw = oc[3] % b;
      int64_t c = mode == "DCR" ? (bh * b + bw) * C + oc[1] : oc[1] * b * b + bh * b + bw;
      return std::vector<int64_t>{oc[0], c, h, w};
    });
    check_both_paths(
        "DepthToSpace", x, {},
        [&](onnx::NodeProto& n) {
          attr_i(n, "blocksize", b);
          attr_s(n, "mode", mode);
        },
        want, "depth_to_space " + mode);
    if (mode == "DCR")  // SpaceToDepth inverts DCR
      check_both_paths(
          "SpaceToDepth", want, {}, [&](onnx::NodeProto& n) { attr_i(n, "blocksize", b); }, x,
          "space_to_depth");
  }
}

// Every dtype moves through the byte-wise copy kernel, including ones no arithmetic kernel takes.
TEST(TensorOps, CopiesAreDtypeAgnostic) {
  for (DType t : {DType::Int64, DType::Int32, DType::UInt8, DType::Bool, DType::Float16,
                  DType::Float64, DType::Int16}) {
    Shape s{3, 5, 2};
    Tensor x(t, s);
    for (size_t i = 0; i < x.bytes.size(); ++i) x.bytes[i] = static_cast<uint8_t>(i * 37 + 11);
    if (t == DType::Bool)
      for (auto& byte : x.bytes) byte &= 1;
    Tensor want = reference(x, {2, 5, 3}, [](const std::vector<int64_t>& oc) {
      return std::vector<int64_t>{oc[2], oc[1], oc[0]};
    });
    check_both_paths("Transpose", x, {}, nullptr, want,
                     std::string("transpose ") + ocl_infer::dtype_name(t));
  }
}

// The usual exporter shape subgraph: Shape -> Gather -> Unsqueeze -> Concat -> Reshape, folded
// on the host in exact int64.
TEST(TensorOps, ShapeSubgraphFoldsExactly) {
  std::mt19937 rng(18);
  Shape s{2, 3, 5, 7};
  Tensor x = iota_tensor(s, rng);
  ModelBuilder m;
  m.input("x", DType::Float32, s).output("y").output("dims");
  Tensor zero(DType::Int64, {});
  m.initializer("zero", zero);
  m.initializer("minus1", ints({-1}));
  m.initializer("ax0", ints({0}));
  m.node("Shape", {"x"}, {"shape"});
  m.node("Gather", {"shape", "zero"}, {"batch"});
  m.node("Unsqueeze", {"batch", "ax0"}, {"batch1"});
  attr_i(m.node("Concat", {"batch1", "minus1"}, {"dims"}), "axis", 0);
  m.node("Reshape", {"x", "dims"}, {"y"});
  auto out = run_model(m, {{"x", x}});
  expect_same(out.at("dims"), ints({2, -1}), "dims");
  Tensor want = x;
  want.shape = {2, 105};
  expect_same(out.at("y"), want, "reshape");
}

TEST(TensorOps, ReshapeSqueezeUnsqueezeFlattenShapes) {
  std::mt19937 rng(19);
  struct Case {
    std::string op;
    Shape in;
    std::vector<int64_t> arg;  // shape / axes input
    int64_t axis;              // Flatten
    Shape want;
  };
  for (auto c : std::vector<Case>{{"Reshape", {2, 3, 5}, {0, -1}, 0, {2, 15}},
                                  {"Reshape", {2, 3, 5}, {5, 0, 2}, 0, {5, 3, 2}},
                                  // Empty tensors: an unambiguous -1 is 0; an ambiguous one (the
                                  // other dims multiply to 0) takes what the shapes give without
                                  // their zero dims, as for a non-empty batch; 0 where that does
                                  // not divide.
                                  {"Reshape", {0, 5}, {-1, 5}, 0, {0, 5}},
                                  {"Reshape", {0, 4, 6}, {0, -1, 2}, 0, {0, 12, 2}},
                                  {"Reshape", {0, 7, 128}, {0, -1, 4, 32}, 0, {0, 7, 4, 32}},
                                  {"Reshape", {0, 5}, {0, -1, 2}, 0, {0, 0, 2}},
                                  {"Squeeze", {1, 3, 1, 5}, {-2}, 0, {1, 3, 5}},
                                  {"Unsqueeze", {3, 5}, {-1, 0}, 0, {1, 3, 5, 1}},
                                  {"Flatten", {2, 3, 5, 7}, {}, -2, {6, 35}}}) {
    Tensor x = iota_tensor(c.in, rng);
    ModelBuilder m;
    m.input("x", DType::Float32, c.in).output("y");
    std::vector<std::string> ins{"x"};
    if (!c.arg.empty()) {
      m.initializer("arg", ints(c.arg));
      ins.push_back("arg");
    }
    auto& n = m.node(c.op, ins, {"y"});
    if (c.op == "Flatten") attr_i(n, "axis", c.axis);
    auto out = run_model(m, {{"x", x}});
    Tensor want = x;
    want.shape = c.want;
    expect_same(out.at("y"), want, c.op);
  }
}

TEST(TensorOps, RangeAndConstantOfShapeAreExact) {
  ModelBuilder m;
  Tensor s(DType::Int64, {}), l(DType::Int64, {}), d(DType::Int64, {});
  s.data<int64_t>()[0] = (int64_t{1} << 53) + 1;  // not representable as a double
  l.data<int64_t>()[0] = (int64_t{1} << 53) + 10;
  d.data<int64_t>()[0] = 4;
  m.initializer("s", s).initializer("l", l).initializer("d", d).output("r").output("c");
  m.node("Range", {"s", "l", "d"}, {"r"});
  m.initializer("shape", ints({2, 3}));
  auto& n = m.node("ConstantOfShape", {"shape"}, {"c"});
  auto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  a->mutable_t()->add_dims(1);
  a->mutable_t()->add_int64_data(-7);
  auto out = run_model(m, {});
  int64_t b = (int64_t{1} << 53) + 1;
  expect_same(out.at("r"), ints({b, b + 4, b + 8}), "range");
  Tensor want(DType::Int64, {2, 3});
  for (int k = 0; k < 6; ++k) want.data<int64_t>()[k] = -7;
  expect_same(out.at("c"), want, "constant_of_shape");
}

TEST(TensorOps, BadReshapeIsAModelError) {
  ModelBuilder m;
  m.input("x", DType::Float32, {2, 3, 5}).initializer("shape", ints({4, -1})).output("y");
  m.node("Reshape", {"x", "shape"}, {"y"});
  try {
    run_model(m, {{"x", Tensor(DType::Float32, {2, 3, 5})}});
    FAIL() << "expected a ModelError";
  } catch (const ocl_infer::ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot reshape [2,3,5]"), std::string::npos) << e.what();
  }
}

TEST(TensorOps, FloatIndicesAreAModelError) {
  ModelBuilder m;
  m.input("x", DType::Float32, {4, 3}).input("i", DType::Float32, {2}).output("y");
  m.node("Gather", {"x", "i"}, {"y"});
  try {
    run_model(m, {{"x", Tensor(DType::Float32, {4, 3})}, {"i", Tensor(DType::Float32, {2})}});
    FAIL() << "expected a ModelError";
  } catch (const ocl_infer::ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("indices must be int32 or int64"), std::string::npos)
        << e.what();
  }
}

TEST(TensorOps, SliceStepZeroIsAModelError) {
  ModelBuilder m;
  m.input("x", DType::Float32, {4, 3}).output("y");
  m.initializer("b", ints({0})).initializer("e", ints({2})).initializer("a", ints({0}));
  m.initializer("st", ints({0}));
  m.node("Slice", {"x", "b", "e", "a", "st"}, {"y"});
  EXPECT_THROW(run_model(m, {{"x", Tensor(DType::Float32, {4, 3})}}), ocl_infer::ModelError);
}

}  // namespace
