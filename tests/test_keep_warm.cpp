// Keep-warm (runtime/backend/keep_warm.hpp): how the setting is chosen, that the markers outstanding
// stay bounded however fast runs follow each other, that the spinners follow the kernels (counted,
// bounded, one session at a time per spare worker), the adaptive trial, and that a model gives the
// same bits with and without either (and matches a CPU reference), also from several threads.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>

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

TEST(KeepWarm, SettingPerDevice) {
  unsetenv("OCL_INFER_KEEP_WARM");
  using KW = oi::KeepWarm;
  // The default: the spinner on CPU devices with 2+ compute units, tried against none.
  KW::Setting d = KW::resolve(KW::kAuto, true, 2);
  EXPECT_TRUE(d.spin);
  EXPECT_TRUE(d.adaptive);
  EXPECT_EQ(d.markers, 0);
  EXPECT_NE(d.why.find("default for this device type"), std::string::npos) << d.why;
  EXPECT_FALSE(KW::resolve(KW::kAuto, true, 1).on());    // one worker: nobody sleeps while another works
  EXPECT_FALSE(KW::resolve(KW::kAuto, false, 64).on());  // GPUs schedule work-groups in hardware
  // Asked for: not second-guessed by a trial.
  d = KW::resolve(ocl_infer::kKeepWarmSpin, false, 64);
  EXPECT_TRUE(d.spin);
  EXPECT_FALSE(d.adaptive);
  EXPECT_EQ(d.why, "set by the session options");
  d = KW::resolve(ocl_infer::kKeepWarmSpin, true, 1);  // would hold the only worker
  EXPECT_FALSE(d.on());
  EXPECT_NE(d.why.find("one compute unit"), std::string::npos) << d.why;
  d = KW::resolve(3, false, 64);
  EXPECT_FALSE(d.spin);
  EXPECT_EQ(d.markers, 3);
  EXPECT_FALSE(d.adaptive);
  EXPECT_EQ(d.why, "set by the session options");
  EXPECT_FALSE(KW::resolve(0, true, 8).on());
  EXPECT_EQ(KW::resolve(5000, true, 8).markers, 1000);
  d = KW::resolve(-7, true, 2);  // not a setting: the default, said
  EXPECT_TRUE(d.spin && d.adaptive);
  EXPECT_NE(d.why.find("is not a setting"), std::string::npos) << d.why;
  {
    EnvVar e("OCL_INFER_KEEP_WARM", "9");
    d = KW::resolve(KW::kAuto, false, 1);
    EXPECT_EQ(d.markers, 9);
    EXPECT_EQ(d.why, "set by $OCL_INFER_KEEP_WARM");
    EXPECT_EQ(KW::resolve(2, false, 1).markers, 2);  // the option wins over the variable
  }
  {
    EnvVar e("OCL_INFER_KEEP_WARM", "spin");
    d = KW::resolve(KW::kAuto, false, 4);
    EXPECT_TRUE(d.spin);
    EXPECT_FALSE(d.adaptive);
    EXPECT_EQ(d.why, "set by $OCL_INFER_KEEP_WARM");
    EXPECT_FALSE(KW::resolve(0, true, 4).on());
  }
  {
    EnvVar e("OCL_INFER_KEEP_WARM", "auto");
    d = KW::resolve(KW::kAuto, true, 2);
    EXPECT_TRUE(d.spin && d.adaptive);
    EXPECT_EQ(d.why.find("is not"), std::string::npos) << d.why;
  }
  for (const char* bad : {"x", "-1", "3 ", "1.5", "Spin"}) {
    EnvVar e("OCL_INFER_KEEP_WARM", bad);
    d = KW::resolve(KW::kAuto, true, 4);
    EXPECT_TRUE(d.spin && d.adaptive) << bad;
    EXPECT_NE(d.why.find("is not spin, auto or a count"), std::string::npos) << bad;
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

// The automatic choice: after kTrialSkip runs that count for neither, runs alternate between the
// setting and none (half each), and after kTrialRuns it stays unless the median ratio of
// neighbouring runs (with / without) is above kTrialTolerance (1.02).
TEST(KeepWarm, AdaptiveTrialKeepsTheFasterSetting) {
  oi::ClRuntime rt(oi::select_device(""), "off", nullptr);
  const int plan_a = 0, plan_b = 0;
  const int trial = oi::KeepWarm::kTrialSkip + oi::KeepWarm::kTrialRuns;
  // ms(with), ms(without) for the k-th pair -> kept?
  const struct {
    double (*on)(int);
    double (*off)(int);
    bool kept;
  } cases[] = {
      {[](int) { return 2.0; }, [](int) { return 1.0; }, false},
      {[](int) { return 1.0; }, [](int) { return 2.0; }, true},
      {[](int) { return 1.0; }, [](int) { return 1.0; }, true},
      {[](int) { return 1.01; }, [](int) { return 1.0; }, true},  // within the tolerance
      {[](int) { return 1.03; }, [](int) { return 1.0; }, false},
      {[](int) { return 0.5; }, [](int) { return 0.6; }, true},
      // A machine that slows down during the trial: each run with beats its neighbour without by
      // 5 %, while the median of all runs with is the larger (the later half of them ran slowly).
      {[](int k) { return (k < 5 ? 1.0 : 3.0) * 0.95; }, [](int k) { return k < 8 ? 1.0 : 3.0; }, true},
  };
  for (bool spin : {false, true}) {
    for (const auto& c : cases) {
      oi::KeepWarm::Setting setting;
      setting.spin = spin;
      setting.markers = spin ? 0 : 4;
      setting.adaptive = true;
      oi::KeepWarm warm(rt, setting);
      ASSERT_EQ(warm.trial_runs_left(), trial);
      // A plan change restarts the trial.
      warm.begin(10);
      warm.end();
      warm.finished();
      warm.record_run(&plan_b, 9.0);
      EXPECT_EQ(warm.trial_runs_left(), trial - 1);
      std::string decided;
      int with_runs = 0, on_k = 0, off_k = 0;
      for (int run = 0; run < trial; ++run) {
        warm.begin(10);
        for (int l = 0; l < 10; ++l) warm.after_launch(nullptr);
        warm.end();
        const bool with = spin ? warm.spinning_this_run() : warm.markers_this_run() == 4;
        if (!spin) {
          EXPECT_TRUE(with || warm.markers_this_run() == 0) << warm.markers_this_run();
        }
        warm.finished();
        const bool counted = run >= oi::KeepWarm::kTrialSkip;
        if (counted) with_runs += with;
        EXPECT_TRUE(decided.empty());
        decided = warm.record_run(&plan_a, !counted ? 50.0 : with ? c.on(on_k++) : c.off(off_k++));
        EXPECT_EQ(warm.trial_runs_left(), trial - run - 1);
      }
      EXPECT_EQ(with_runs, oi::KeepWarm::kTrialRuns / 2);  // half of the counted runs each way
      EXPECT_FALSE(decided.empty());
      EXPECT_EQ(spin ? warm.spinning() : warm.markers_per_launch() == 4, c.kept) << decided;
      EXPECT_NE(decided.find(c.kept ? "kept" : "off from now on"), std::string::npos) << decided;
      // Decided: later runs (of any plan) keep the setting, and record nothing more.
      for (int run = 0; run < 4; ++run) {
        warm.begin(10);
        for (int l = 0; l < 10; ++l) warm.after_launch(nullptr);
        warm.end();
        EXPECT_EQ(spin ? warm.spinning_this_run() : warm.markers_this_run() == 4, c.kept);
        warm.finished();
        EXPECT_EQ(warm.record_run(&plan_b, 1.0), "");
        EXPECT_EQ(warm.trial_runs_left(), 0);
      }
    }
  }
}

// The spinner's bookkeeping on a real queue: a spinner for each kernel of two or more work-groups,
// none for a kernel of one, every announced kernel's start counted once its queue is finished,
// and at most compute units - 1 sessions spinning at once.
TEST(KeepWarm, SpinnersFollowTheKernels) {
  oi::ClRuntime rt(oi::select_device(""), "off", nullptr);
  if (rt.caps().compute_units < 2) GTEST_SKIP() << "one compute unit: no spinner";
  oi::KeepWarm::Setting spin;
  spin.spin = true;
  oi::KeepWarm warm(rt, spin);
  ASSERT_TRUE(warm.spinning());
  oi::KernelPtr k = rt.kernel("keep_warm", "idle_spin", "");  // any kernel: a spinner that returns at once
  oi::BufferPtr flag = rt.alloc(64);
  const cl_int zero = 0, bound = 1;
  ASSERT_EQ(clEnqueueFillBuffer(rt.queue(), flag->mem, &zero, sizeof zero, 0, 64, 0, nullptr, nullptr), CL_SUCCESS);
  ASSERT_EQ(clSetKernelArg(k.get(), 0, sizeof(cl_mem), &flag->mem), CL_SUCCESS);
  ASSERT_EQ(clSetKernelArg(k.get(), 1, sizeof zero, &zero), CL_SUCCESS);
  ASSERT_EQ(clSetKernelArg(k.get(), 2, sizeof bound, &bound), CL_SUCCESS);
  uint64_t expected = 0;
  for (int run = 0; run < 20; ++run) {
    warm.begin(30);
    ASSERT_TRUE(warm.spinning_this_run());
    for (int l = 0; l < 30; ++l) {
      const size_t groups = l % 3 == 0 ? 1 : 8;
      cl_event ev = nullptr;
      const bool wants = warm.spins_for(groups);
      EXPECT_EQ(wants, groups > 1);
      ASSERT_EQ(clEnqueueNDRangeKernel(rt.queue(), k.get(), 1, nullptr, &groups, nullptr, 0, nullptr,
                                       wants ? &ev : nullptr),
                CL_SUCCESS);
      warm.after_launch(ev);
      if (ev) clReleaseEvent(ev);
      expected += wants;
    }
    warm.end();
    ASSERT_EQ(clFinish(rt.queue()), CL_SUCCESS);
    warm.finished();
    EXPECT_EQ(warm.spinners(), expected);
    EXPECT_EQ(warm.announced(), expected);
    EXPECT_EQ(static_cast<uint64_t>(warm.started()), expected) << "run " << run;
  }
  // A second session of the process waits its turn while the first one's run spins.
  oi::KeepWarm other(rt, spin);
  const int limit = static_cast<int>(rt.caps().compute_units) - 1;
  warm.begin(1);
  EXPECT_TRUE(warm.spinning_this_run());
  other.begin(1);
  EXPECT_EQ(other.spinning_this_run(), limit >= 2);
  other.finished();
  warm.finished();
  other.begin(1);
  EXPECT_TRUE(other.spinning_this_run());
  EXPECT_FALSE(other.spins_for(1));
  other.finished();
}

// A kernel whose start is never announced (here a user event, which passes through no CL_RUNNING)
// leaves its spinner to its bound: the side queue still finishes, nothing hangs.
TEST(KeepWarm, ASpinnerWithoutItsKernelGivesUp) {
  oi::ClRuntime rt(oi::select_device(""), "off", nullptr);
  if (rt.caps().compute_units < 2) GTEST_SKIP() << "one compute unit: no spinner";
  oi::KeepWarm::Setting spin;
  spin.spin = true;
  auto warm = std::make_unique<oi::KeepWarm>(rt, spin);
  warm->begin(1);
  ASSERT_TRUE(warm->spinning_this_run());
  cl_int err = CL_SUCCESS;
  cl_event never = clCreateUserEvent(rt.context(), &err);
  ASSERT_EQ(err, CL_SUCCESS);
  warm->after_launch(never);
  warm->end();
  EXPECT_EQ(warm->spinners(), 1u);
  EXPECT_EQ(warm->started(), 0);
  const auto t0 = std::chrono::steady_clock::now();
  warm->drain();  // the spinner gives up on its bound
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 30.0);  // a hang check, not a speed one: the bound is ~0.1-0.2 ms
  EXPECT_EQ(warm->started(), 0);
  warm->finished();
  warm.reset();
  clSetUserEventStatus(never, CL_COMPLETE);
  clReleaseEvent(never);
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
  ocl_infer::SessionOptions markers, spin, off;
  markers.keep_warm = 8;
  spin.keep_warm = ocl_infer::kKeepWarmSpin;
  off.keep_warm = 0;
  auto with_markers = open_session(m, markers);
  auto with_spin = open_session(m, spin);
  auto without = open_session(m, off);
  EXPECT_EQ(with_markers.stats().keep_warm, 8);
  EXPECT_FALSE(with_markers.stats().keep_warm_spin);
  EXPECT_EQ(with_spin.stats().keep_warm, 0);
  EXPECT_EQ(with_spin.stats().keep_warm_spin, with_spin.device().compute_units >= 2);
  EXPECT_EQ(without.stats().keep_warm, 0);
  EXPECT_FALSE(without.stats().keep_warm_spin);
  // The default: on a CPU device with two or more compute units, the spinner tried against none on
  // the runs after the first; the session reports the trial and the choice, with the same bits.
  auto chosen = open_session(m, ocl_infer::SessionOptions{});
  const bool trial = chosen.stats().keep_warm_spin;
  EXPECT_EQ(chosen.stats().keep_warm_trial_runs,
            trial ? oi::KeepWarm::kTrialSkip + oi::KeepWarm::kTrialRuns : 0);
  for (int run = 0; run < 45; ++run) {
    const Tensor x = random_tensor({1, 8, 14, 14}, rng);
    EXPECT_EQ(chosen.run({{"x", x}}).at("y").bytes, without.run({{"x", x}}).at("y").bytes) << "run " << run;
  }
  // (A plan replaced after the first run, as by a tier-up, restarts the trial: 45 runs cover it.)
  EXPECT_EQ(chosen.stats().keep_warm_trial_runs, 0);
  EXPECT_EQ(chosen.stats().keep_warm, 0);
  for (int run = 0; run < 30; ++run) {
    const Tensor x = random_tensor({1, 8, 14, 14}, rng);
    const Tensor got = with_spin.run({{"x", x}}).at("y");
    const Tensor want_bits = without.run({{"x", x}}).at("y");
    EXPECT_EQ(got.bytes, want_bits.bytes) << "run " << run;
    EXPECT_EQ(with_markers.run({{"x", x}}).at("y").bytes, want_bits.bytes) << "run " << run;
    if (run % 10 == 0) {
      Tensor want = x;
      for (size_t i = 0; i < w.size(); ++i) want = reference::unary(reference::conv2d(want, w[i], &b[i], 1, 1), reference::relu);
      EXPECT_LT(reference::rel_error(got, want), fp16_mode() ? 1e-2 : 1e-5) << "run " << run;
    }
  }
}

// Sessions in several threads at once, all asking for the spinner: only compute units - 1 of them
// spin in any run, the others sleep between kernels; every result matches a session without.
TEST(KeepWarm, SpinningSessionsInThreads) {
  std::mt19937 rng(11);
  std::vector<Tensor> w, b;
  const ModelBuilder m = conv_chain(rng, &w, &b);
  ocl_infer::SessionOptions spin, off;
  spin.keep_warm = ocl_infer::kKeepWarmSpin;
  off.keep_warm = 0;
  auto reference_session = open_session(m, off);
  std::vector<Tensor> inputs, wanted;
  for (int i = 0; i < 8; ++i) {
    inputs.push_back(random_tensor({1, 8, 14, 14}, rng));
    wanted.push_back(reference_session.run({{"x", inputs.back()}}).at("y"));
  }
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0}, errors{0};
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      try {
        auto s = open_session(m, spin);
        for (int run = 0; run < 40; ++run) {
          const int i = (run + t) % 8;
          if (s.run({{"x", inputs[i]}}).at("y").bytes != wanted[i].bytes) ++mismatches;
        }
      } catch (const std::exception&) {
        ++errors;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
