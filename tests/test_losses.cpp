// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss against a reference written here from the
// spec's definitions (double arithmetic): every reduction, with and without class weights, an
// ignore_index (also negative, also every target ignored: a mean of 0 / 0 is NaN as the function
// body gives), inputs [N, C] and [N, C, d1, d2, d3], int32 and int64 targets, SCE's log_prob
// output, opset 12 and 13 forms, and the errors (a target outside the classes, a weight of the
// wrong size, a target of the wrong shape).
#include <gtest/gtest.h>

#include <cmath>

#include "tests/model_builder.hpp"

using namespace testing_util;

namespace {

using Shape = std::vector<int64_t>;

struct Case {
  std::string op = "NegativeLogLikelihoodLoss";
  std::string reduction = "mean";
  Shape shape{3, 5};
  bool weight = false, ignore = false, int32_target = false;
  int64_t ignore_index = 0;
  int opset = 13;
};

struct Result {
  Tensor loss, log_prob;
};

Result reference(const Case& c, const Tensor& x, const Tensor& target, const Tensor& w) {
  const int64_t N = c.shape[0], C = c.shape[1];
  int64_t D = 1;
  for (size_t k = 2; k < c.shape.size(); ++k) D *= c.shape[k];
  Result r;
  r.log_prob = Tensor(DType::Float32, c.shape);
  std::vector<double> lp(static_cast<size_t>(N * C * D));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      auto at = [&](int64_t cl) { return (n * C + cl) * D + d; };
      if (c.op == "SoftmaxCrossEntropyLoss") {
        double mx = -1e300, sum = 0;
        for (int64_t cl = 0; cl < C; ++cl) mx = std::max<double>(mx, x.data<float>()[at(cl)]);
        for (int64_t cl = 0; cl < C; ++cl) sum += std::exp(x.data<float>()[at(cl)] - mx);
        for (int64_t cl = 0; cl < C; ++cl) lp[at(cl)] = x.data<float>()[at(cl)] - mx - std::log(sum);
      } else {
        for (int64_t cl = 0; cl < C; ++cl) lp[at(cl)] = x.data<float>()[at(cl)];
      }
      for (int64_t cl = 0; cl < C; ++cl) r.log_prob.data<float>()[at(cl)] = static_cast<float>(lp[at(cl)]);
    }
  Shape out_shape = c.shape;
  out_shape.erase(out_shape.begin() + 1);
  Tensor none(DType::Float32, out_shape);
  double sum = 0, wsum = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      const int64_t t = c.int32_target ? target.data<int32_t>()[n * D + d] : target.data<int64_t>()[n * D + d];
      double l = 0, wt = 0;
      if (!(c.ignore && t == c.ignore_index)) {
        wt = c.weight ? w.data<float>()[t] : 1.0;
        l = -lp[(n * C + t) * D + d] * wt;
      }
      none.data<float>()[n * D + d] = static_cast<float>(l);
      sum += l;
      wsum += wt;
    }
  if (c.reduction == "none") {
    r.loss = none;
  } else {
    r.loss = Tensor(DType::Float32, {});
    r.loss.data<float>()[0] = static_cast<float>(c.reduction == "sum" ? sum : sum / wsum);
  }
  return r;
}

ModelBuilder model(const Case& c) {
  ModelBuilder m(c.opset);
  Shape ts = c.shape;
  ts.erase(ts.begin() + 1);
  m.input("x", DType::Float32, c.shape).input("t", c.int32_target ? DType::Int32 : DType::Int64, ts);
  std::vector<std::string> ins{"x", "t"};
  if (c.weight) m.input("w", DType::Float32, {c.shape[1]}), ins.push_back("w");
  m.output("loss");
  std::vector<std::string> outs{"loss"};
  if (c.op == "SoftmaxCrossEntropyLoss") m.output("log_prob"), outs.push_back("log_prob");
  auto& n = m.node(c.op, ins, outs);
  attr_s(n, "reduction", c.reduction);
  if (c.ignore) attr_i(n, "ignore_index", c.ignore_index);
  return m;
}

struct Feeds {
  Tensor x, t, w;
};

Feeds make_feeds(const Case& c, std::mt19937& rng, bool all_ignored = false) {
  Feeds f;
  f.x = random_tensor(c.shape, rng, -3, 3);
  Shape ts = c.shape;
  ts.erase(ts.begin() + 1);
  f.t = Tensor(c.int32_target ? DType::Int32 : DType::Int64, ts);
  for (int64_t i = 0; i < f.t.numel(); ++i) {
    int64_t v = static_cast<int64_t>(rng() % static_cast<uint32_t>(c.shape[1]));
    if (c.ignore && (all_ignored || rng() % 4 == 0)) v = c.ignore_index;
    if (c.int32_target) f.t.data<int32_t>()[i] = static_cast<int32_t>(v);
    else f.t.data<int64_t>()[i] = v;
  }
  f.w = random_tensor({c.shape[1]}, rng, 0.25f, 2.0f);
  return f;
}

// fp16 storage rounds the log-probabilities before they are summed (one rounding each).
double tolerance() { return fp16_mode() ? 4e-3 : 2e-6; }

void check(const Case& c, uint32_t seed) {
  SCOPED_TRACE(c.op + " " + c.reduction + " " + ocl_infer::shape_to_string(c.shape) + (c.weight ? " weight" : "") +
               (c.ignore ? " ignore " + std::to_string(c.ignore_index) : "") + " opset " + std::to_string(c.opset));
  std::mt19937 rng(seed);
  const Feeds f = make_feeds(c, rng);
  std::map<std::string, Tensor> in{{"x", f.x}, {"t", f.t}};
  if (c.weight) in["w"] = f.w;
  auto out = run_model(model(c), in);
  const Result want = reference(c, f.x, f.t, f.w);
  EXPECT_LE(rel_error(out.at("loss"), want.loss), tolerance());
  if (c.op == "SoftmaxCrossEntropyLoss") {
    EXPECT_LE(rel_error(out.at("log_prob"), want.log_prob), tolerance());
  }
}

TEST(Losses, EveryReductionWeightAndIgnoreIndex) {
  int k = 0, seed = 0;
  for (const char* op : {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"})
    for (const char* red : {"none", "sum", "mean"})
      for (int form = 0; form < 4; ++form) {
        if (fp16_sampled_out(k++)) continue;
        Case c;
        c.op = op;
        c.reduction = red;
        c.weight = form & 1;
        c.ignore = form & 2;
        c.ignore_index = form == 3 ? -1 : 2;  // negative, or a real class
        c.shape = form % 2 ? Shape{4, 7, 3, 2, 5} : Shape{9, 6};
        c.int32_target = form == 1;
        c.opset = k % 3 == 0 ? 12 : 13;
        check(c, static_cast<uint32_t>(++seed));
      }
}

TEST(Losses, EveryTargetIgnored) {
  for (const char* op : {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"}) {
    Case c;
    c.op = op;
    c.ignore = true;
    c.ignore_index = 1;
    std::mt19937 rng(11);
    const Feeds f = make_feeds(c, rng, true);
    auto out = run_model(model(c), {{"x", f.x}, {"t", f.t}});
    EXPECT_TRUE(std::isnan(out.at("loss").data<float>()[0])) << op << ": a mean over no target is 0 / 0";
    c.reduction = "sum";
    out = run_model(model(c), {{"x", f.x}, {"t", f.t}});
    EXPECT_EQ(out.at("loss").data<float>()[0], 0.0f) << op;
  }
}

TEST(Losses, Errors) {
  Case c;
  std::mt19937 rng(5);
  Feeds f = make_feeds(c, rng);
  f.t.data<int64_t>()[1] = 5;  // C = 5: out of range, not ignored
  try {
    run_model(model(c), {{"x", f.x}, {"t", f.t}});
    ADD_FAILURE() << "no error for a target outside the classes";
  } catch (const ocl_infer::Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
  Case w = c;
  w.weight = true;
  ModelBuilder m = model(w);
  m.proto().mutable_graph()->mutable_input(2)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(4);
  Feeds g = make_feeds(w, rng);
  EXPECT_THROW(run_model(m, {{"x", g.x}, {"t", g.t}, {"w", random_tensor({4}, rng)}}), ocl_infer::ModelError);
  Case s = c;
  s.shape = {3, 5, 2};
  ModelBuilder bad = model(s);
  bad.proto().mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(3);
  Feeds h = make_feeds(s, rng);
  Tensor t3(DType::Int64, {3, 3});
  for (int64_t i = 0; i < 9; ++i) t3.data<int64_t>()[i] = 0;
  EXPECT_THROW(run_model(bad, {{"x", h.x}, {"t", t3}}), ocl_infer::ModelError);
}

}  // namespace
