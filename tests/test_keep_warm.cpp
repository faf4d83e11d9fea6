// Idle-worker markers (runtime/backend/keep_warm.hpp): how the count per launch is chosen, that the
// markers outstanding stay bounded however fast runs follow each other, and that a model gives the
// same bits with and without them (and matches a CPU reference).
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>

#include "runtime/backend/cl_runtime.hpp"
#include "runtime/backend/keep_warm.hpp"
#include "tests/model_builder.hpp"
#include "tests/reference_ops.hpp"

using namespace testing_util;

namespace {

struct EnvVar {
  std::string name;
  EnvVar(const char* n, const char* v) : name(n) { setenv(n, v, 1); }
  ~EnvVar() { unsetenv(name.c_str()); }
};

TEST(KeepWarm, CountPerLaunch) {
  unsetenv("OCL_INFER_KEEP_WARM");
  std::string why;
  EXPECT_EQ(oi::KeepWarm::resolve(-1, true, 2, &why), 12);
  EXPECT_EQ(why, "default for this device type");
  EXPECT_EQ(oi::KeepWarm::resolve(-1, true, 1, nullptr), 0);    // one worker: nobody sleeps while another works
  EXPECT_EQ(oi::KeepWarm::resolve(-1, false, 64, nullptr), 0);  // GPUs schedule work-groups in hardware
  EXPECT_EQ(oi::KeepWarm::resolve(3, false, 64, &why), 3);
  EXPECT_EQ(why, "set by the session options");
  EXPECT_EQ(oi::KeepWarm::resolve(0, true, 8, nullptr), 0);
  EXPECT_EQ(oi::KeepWarm::resolve(5000, true, 8, nullptr), 1000);
  {
    EnvVar e("OCL_INFER_KEEP_WARM", "9");
    EXPECT_EQ(oi::KeepWarm::resolve(-1, false, 1, &why), 9);
    EXPECT_EQ(why, "set by $OCL_INFER_KEEP_WARM");
    EXPECT_EQ(oi::KeepWarm::resolve(2, false, 1, nullptr), 2);  // the option wins over the variable
  }
  for (const char* bad : {"x", "-1", "3 ", "1.5"}) {
    EnvVar e("OCL_INFER_KEEP_WARM", bad);
    EXPECT_EQ(oi::KeepWarm::resolve(-1, true, 4, &why), 12) << bad;
    EXPECT_NE(why.find("is not a count"), std::string::npos) << bad;
  }
}

TEST(KeepWarm, OutstandingMarkersStayBounded) {
  oi::ClRuntime rt(oi::select_device(""), "off", nullptr);
  oi::KeepWarm warm(rt, 4);
  ASSERT_EQ(warm.markers_per_launch(), 4);
  // Runs of 50 launches back to back with nothing else for the device to do: each begin() may top
  // the supply up to 4 x 50 markers, never more, however many of the last runs' are still queued.
  for (int run = 0; run < 200; ++run) {
    warm.begin(50);
    EXPECT_LE(warm.outstanding(), 200u + 16u) << run;  // checkpoints every 16 markers
    for (int l = 0; l < 50; ++l) warm.feed();
    EXPECT_LE(warm.outstanding(), 200u + 16u) << run;
    warm.end();
  }
  EXPECT_GE(warm.enqueued(), 200u);
  oi::KeepWarm off(rt, 0);
  off.begin(50);
  off.feed();
  off.end();
  EXPECT_EQ(off.enqueued(), 0u);
}

// The automatic choice: runs alternate between the markers and none (half each), and after
// kTrialRuns the markers stay unless their median was the larger.
TEST(KeepWarm, AdaptiveTrialKeepsTheFasterSetting) {
  oi::ClRuntime rt(oi::select_device(""), "off", nullptr);
  bool adaptive = false;
  unsetenv("OCL_INFER_KEEP_WARM");
  std::string why;
  EXPECT_EQ(oi::KeepWarm::resolve(-1, true, 2, &why, &adaptive), 12);
  EXPECT_TRUE(adaptive);
  EXPECT_NE(why.find("try them against none"), std::string::npos) << why;
  EXPECT_EQ(oi::KeepWarm::resolve(6, true, 2, nullptr, &adaptive), 6);
  EXPECT_FALSE(adaptive);  // a count that was asked for is not second-guessed
  EXPECT_EQ(oi::KeepWarm::resolve(-1, true, 1, nullptr, &adaptive), 0);
  EXPECT_FALSE(adaptive);

  const int plan_a = 0, plan_b = 0;
  // ms(with markers), ms(without) -> markers kept?
  const struct {
    double on, off;
    bool kept;
  } cases[] = {{2.0, 1.0, false}, {1.0, 2.0, true}, {1.0, 1.0, true}, {1.01, 1.0, false}, {0.5, 0.6, true}};
  for (const auto& c : cases) {
    oi::KeepWarm warm(rt, 4, true);
    ASSERT_EQ(warm.trial_runs_left(), oi::KeepWarm::kTrialRuns);
    // A plan change restarts the trial.
    warm.begin(10);
    warm.record_run(&plan_b, 9.0);
    EXPECT_EQ(warm.trial_runs_left(), oi::KeepWarm::kTrialRuns - 1);
    std::string decided;
    int with_runs = 0;
    for (int run = 0; run < oi::KeepWarm::kTrialRuns; ++run) {
      warm.begin(10);
      for (int l = 0; l < 10; ++l) warm.feed();
      warm.end();
      const bool with = warm.markers_this_run() == 4;
      EXPECT_TRUE(with || warm.markers_this_run() == 0) << warm.markers_this_run();
      with_runs += with;
      EXPECT_TRUE(decided.empty());
      decided = warm.record_run(&plan_a, with ? c.on : c.off);
      EXPECT_EQ(warm.trial_runs_left(), run + 1 < oi::KeepWarm::kTrialRuns ? oi::KeepWarm::kTrialRuns - run - 1 : 0);
    }
    EXPECT_EQ(with_runs, oi::KeepWarm::kTrialRuns / 2);  // half of the runs each way
    EXPECT_FALSE(decided.empty());
    EXPECT_EQ(warm.markers_per_launch(), c.kept ? 4 : 0) << decided;
    EXPECT_NE(decided.find(c.kept ? "kept" : "off from now on"), std::string::npos) << decided;
    // Decided: later runs (of any plan) keep the setting, and record nothing more.
    for (int run = 0; run < 4; ++run) {
      warm.begin(10);
      for (int l = 0; l < 10; ++l) warm.feed();
      warm.end();
      EXPECT_EQ(warm.markers_this_run(), c.kept ? 4 : 0);
      EXPECT_EQ(warm.record_run(&plan_b, 1.0), "");
      EXPECT_EQ(warm.trial_runs_left(), 0);
    }
  }
}

// Twelve 3x3 convolutions with ReLU: a dozen kernel boundaries per run.
ModelBuilder conv_chain(std::mt19937& rng, std::vector<Tensor>* weights, std::vector<Tensor>* biases) {
  ModelBuilder m(13);
  m.input("x", DType::Float32, {1, 8, 14, 14}).output("y");
  std::string in = "x";
  for (int i = 0; i < 12; ++i) {
    const std::string k = std::to_string(i);
    weights->push_back(random_tensor({8, 8, 3, 3}, rng, -0.25f, 0.25f));
    biases->push_back(random_tensor({8}, rng, -0.1f, 0.1f));
    m.initializer("w" + k, weights->back()).initializer("b" + k, biases->back());
    attr_ints(m.node("Conv", {in, "w" + k, "b" + k}, {"c" + k}), "pads", {1, 1, 1, 1});
    in = i == 11 ? "y" : "r" + k;
    m.node("Relu", {"c" + k}, {in});
  }
  return m;
}

TEST(KeepWarm, SameBitsWithAndWithout) {
  std::mt19937 rng(7);
  std::vector<Tensor> w, b;
  const ModelBuilder m = conv_chain(rng, &w, &b);
  ocl_infer::SessionOptions on, off;
  on.keep_warm = 8;
  off.keep_warm = 0;
  auto with = open_session(m, on);
  auto without = open_session(m, off);
  EXPECT_EQ(with.stats().keep_warm, 8);
  EXPECT_EQ(without.stats().keep_warm, 0);
  // The default: on a CPU device with two or more compute units, markers tried against none on
  // the runs after the first; the session reports the trial and the choice, with the same bits.
  auto chosen = open_session(m, ocl_infer::SessionOptions{});
  const bool trial = chosen.stats().keep_warm > 0;
  EXPECT_EQ(chosen.stats().keep_warm_trial_runs, trial ? oi::KeepWarm::kTrialRuns : 0);
  for (int run = 0; run < 30; ++run) {
    const Tensor x = random_tensor({1, 8, 14, 14}, rng);
    EXPECT_EQ(chosen.run({{"x", x}}).at("y").bytes, without.run({{"x", x}}).at("y").bytes) << "run " << run;
  }
  // (A plan replaced after the first run, as by a tier-up, restarts the trial: 30 runs cover it.)
  EXPECT_EQ(chosen.stats().keep_warm_trial_runs, 0);
  if (trial) {
    EXPECT_TRUE(chosen.stats().keep_warm == 0 || chosen.stats().keep_warm == 12) << chosen.stats().keep_warm;
  }
  for (int run = 0; run < 30; ++run) {
    const Tensor x = random_tensor({1, 8, 14, 14}, rng);
    const Tensor got = with.run({{"x", x}}).at("y");
    EXPECT_EQ(got.bytes, without.run({{"x", x}}).at("y").bytes) << "run " << run;
    if (run % 10 == 0) {
      Tensor want = x;
      for (size_t i = 0; i < w.size(); ++i) want = reference::unary(reference::conv2d(want, w[i], &b[i], 1, 1), reference::relu);
      EXPECT_LT(reference::rel_error(got, want), fp16_mode() ? 1e-2 : 1e-5) << "run " << run;
    }
  }
}

}  // namespace
