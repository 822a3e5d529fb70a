// The worker's side of time to train: the gradient-noise measurement on a problem with a known noise
// scale (the same closed form as tests/knobs/noise_scale_test.cpp, here through the real Stepper, hooks
// and AdamW), noise-scale and converge trials end to end, weights files, and a token order that does not
// depend on the batch size.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "knobs/error.h"
#include "knobs/noise_scale.h"
#include "profiler/step_timer.h"
#include "tests/support/temp_dir.h"
#include "workloads/engine/grad_noise.h"
#include "knobs/noise_trajectory.h"
#include "workloads/engine/optim.h"
#include "workloads/engine/stepper.h"
#include "workloads/engine/trainer.h"
#include "workloads/engine/weights_file.h"
#include "workloads/input/pipeline.h"
#include "workloads/registry.h"

namespace autotune {
namespace {

namespace fs = std::filesystem;

/// Linear regression at fixed weights: x ~ N(0, I_d), y = x·w* + σε, w = w* + e_1. Its noise scale is
/// d(1 + σ²/|δ|²) + 1 = 21 for d = 10, σ = 1, |δ| = 1 (derivation in tests/knobs/noise_scale_test.cpp).
class LinearRegression : public Workload {
 public:
  LinearRegression() {
    info_.name = "linreg";
    info_.default_batch_size = 4;
  }
  const WorkloadInfo& info() const override { return info_; }
  void build(const BuildOptions& o) override {
    w_star_ = torch::randn({kD}, torch::TensorOptions().dtype(torch::kFloat64));
    w_ = (w_star_.clone() + torch::one_hot(torch::tensor(0), kD).to(torch::kFloat64)).set_requires_grad(true);
    gen_ = at::detail::createCPUGenerator(o.setup.seed + 7);
  }
  std::vector<torch::Tensor> parameters() override { return {w_}; }
  void to_device(const torch::Device&) override {}
  Batch next_batch(std::int64_t b) override {
    const auto x = at::randn({b, kD}, gen_, torch::kFloat64);
    const auto y = torch::mv(x, w_star_) + at::randn({b}, gen_, torch::kFloat64);
    return {x, y};
  }
  torch::Tensor loss(const Batch& b) override { return 0.5 * (torch::mv(b.input, w_) - b.target).square().mean(); }
  static constexpr int kD = 10;

 private:
  WorkloadInfo info_;
  torch::Tensor w_, w_star_;
  at::Generator gen_;
};

TEST(GradNoise, StepperMeasuresTheKnownNoiseScale) {
  LinearRegression w;
  TrialSetup setup;
  setup.seed = 3;
  w.build(BuildOptions{setup, Settings{}, torch::kCPU});
  AdamWOptions o;
  o.lr = 0;  // the weights stay put: the true noise scale stays 21
  auto opt = make_adamw("loop", w.parameters(), o);
  Settings s;
  s.batch_size = 4;
  s.grad_accum = 4;  // B = 16
  SteadyClock clock;
  StepTimer timer(clock);
  Stepper stepper(w, *opt, torch::kCPU, s, timer);
  stepper.measure_noise();
  for (int i = 0; i < 300; ++i) stepper.step();
  ASSERT_EQ(stepper.noise_steps().size(), 300u);
  const NoiseEstimate e = estimate_noise_scale(stepper.noise_steps(), 4, 16, /*t for 15 dof*/ 2.131);
  EXPECT_NEAR(e.grad_sq, 1.0, 0.25);   // |G|² = |δ|² = 1
  EXPECT_NEAR(e.trace_sigma, 21.0, 3.0);  // tr Σ = d(|δ|² + σ²) + |δ|² = 21
  EXPECT_LE(e.lo, 21.0);
  EXPECT_GE(e.hi, 21.0);
  EXPECT_LT(std::abs(e.b_simple / 21.0 - 1), 0.25) << e.b_simple;
}

TEST(GradNoise, HooksSeeEachMicroBatchBeforeAccumulation) {
  // Two backwards into the same .grad: the meter's per-micro sums are each backward's own |g|², and the
  // accumulated one is |g1 + g2|².
  auto p = torch::tensor({1.0, -2.0, 3.0}, torch::kFloat64).set_requires_grad(true);
  GradNoiseMeter m({p});
  (p * torch::tensor({1.0, 1.0, 1.0}, torch::kFloat64)).sum().backward();
  const double n1 = m.take_micro().item<double>();
  (p * torch::tensor({0.0, 2.0, 0.0}, torch::kFloat64)).sum().backward();
  const double n2 = m.take_micro().item<double>();
  EXPECT_DOUBLE_EQ(n1, 3.0);
  EXPECT_DOUBLE_EQ(n2, 4.0);
  EXPECT_DOUBLE_EQ(m.accumulated().item<double>(), 1.0 + 9.0 + 1.0);  // grad = (1, 3, 1)
}

TEST(GradNoise, StepRecordUndoesAccumulationAndLossScale) {
  // Each micro-batch loss was divided by K = 2 and multiplied by a loss scale of 1024: a micro gradient
  // g' = 512·g, so |g|² = |g'|²·4/1024², and the accumulated ḡ' = 1024·ḡ.
  const auto micro = std::vector<torch::Tensor>{torch::tensor(512.0 * 512.0 * 2.0, torch::kFloat64),
                                                torch::tensor(512.0 * 512.0 * 4.0, torch::kFloat64)};
  const NoiseStep s = GradNoiseMeter::step_record(micro, torch::tensor(1024.0 * 1024.0 * 1.5, torch::kFloat64), 2, 1024.0);
  EXPECT_DOUBLE_EQ(s.small_sq, (2.0 + 4.0) / 2);
  EXPECT_DOUBLE_EQ(s.big_sq, 1.5);
}

TrialPlan mlp_plan() {
  TrialPlan p;
  p.setup.workload = "mlp";
  p.setup.device = "cpu";
  p.config.set("batch_size", "16").set("threads", "1");
  return p;
}

TEST(NoiseTrial, RecordsStepsUntilItsTargetOrCap) {
  TrialPlan p = mlp_plan();
  p.config.set("grad_accum", "4");
  p.noise.on = true;
  p.noise.min_steps = 8;
  p.noise.max_steps = 40;
  p.noise.max_seconds = 30;
  const TrialResult r = run_trial(p);
  ASSERT_EQ(r.status, TrialStatus::ok) << r.message;
  ASSERT_TRUE(r.noise.has_value());
  EXPECT_EQ(r.noise->micro_batch, 16);
  EXPECT_EQ(r.noise->micro_batches, 4);
  EXPECT_GE(static_cast<int>(r.noise->steps.size()), 8);
  EXPECT_LE(static_cast<int>(r.noise->steps.size()), 40);
  EXPECT_EQ(r.noise->weights, "random init");
  EXPECT_TRUE(r.noise->stopped == "target" || r.noise->stopped == "max_steps") << r.noise->stopped;
  EXPECT_TRUE(r.windows.empty());  // nothing of it is a throughput
  for (const auto& s : r.noise->steps) EXPECT_GT(s.small_sq, s.big_sq);  // averaging K gradients shrinks the norm
}

/// A noise trial of mlp with 3 windows along the run after a burn-in of `burn_in_seconds`, 2 micro-batches of 16.
TrialPlan windowed_noise_plan(double burn_in_seconds) {
  TrialPlan p = mlp_plan();
  p.config.set("grad_accum", "2");
  p.noise.on = true;
  p.noise.windows = 3;
  p.noise.max_steps = 100000;
  p.noise.max_seconds = 60;
  p.noise.burn_in_seconds = burn_in_seconds;
  return p;
}

// Windows along the run (knobs/noise_trajectory.h): after a burn-in of n0 steps the trial records until step 8·n0,
// whatever its error, and says where its first window ends; the losses line up with the recorded steps.
TEST(NoiseTrial, RecordsWindowsOfDoublingLengthAfterItsBurnIn) {
  const TrialResult r = run_trial(windowed_noise_plan(0.15));
  ASSERT_EQ(r.status, TrialStatus::ok) << r.message;
  ASSERT_TRUE(r.noise.has_value());
  const NoiseRecord& n = *r.noise;
  ASSERT_GT(n.burn_in_steps, 0);
  EXPECT_EQ(n.stopped, "windows");
  EXPECT_EQ(n.windows, 3);
  EXPECT_EQ(n.first_window_end, 2 * n.burn_in_steps * 32);  // 2·n0 steps of 16 × 2 samples
  EXPECT_EQ(static_cast<std::int64_t>(n.steps.size()), 7 * n.burn_in_steps);  // to 8·n0 steps since the first
  EXPECT_EQ(r.losses.size(), n.steps.size());
  const auto w = noise_windows(n.steps, r.losses, n.burn_in_steps, 16, 32, n.first_window_end, 3, nullptr);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].estimate.steps, n.burn_in_steps);
  EXPECT_EQ(w[2].estimate.steps, 4 * n.burn_in_steps);
  EXPECT_GT(w[0].loss, w[2].loss);  // it trains: the last window's loss is lower
}

// A burn-in too short for a window (a loaded host, a slow model) still trains a window's worth of steps, so the first
// window is not dropped: on a loaded 2-core host a 0.15-s burn-in gave 3 steps and the trial 2 windows of its 3.
TEST(NoiseTrial, BurnsInAtLeastAWindowsWorthOfSteps) {
  const TrialResult r = run_trial(windowed_noise_plan(1e-9));
  ASSERT_EQ(r.status, TrialStatus::ok) << r.message;
  const NoiseRecord& n = *r.noise;
  EXPECT_EQ(n.burn_in_steps, kMinWindowSteps);
  EXPECT_EQ(n.stopped, "windows");
  EXPECT_EQ(static_cast<std::int64_t>(n.steps.size()), 7 * kMinWindowSteps);
  EXPECT_EQ(noise_windows(n.steps, r.losses, n.burn_in_steps, 16, 32, n.first_window_end, 3, nullptr).size(), 3u);
}

TEST(NoiseTrial, NeedsTwoMicroBatches) {
  TrialPlan p = mlp_plan();
  p.noise.on = true;
  const TrialResult r = run_trial(p);
  EXPECT_EQ(r.status, TrialStatus::error);
  EXPECT_NE(r.message.find("grad_accum ≥ 2"), std::string::npos) << r.message;
}

/// A byte-level token file from some text: every byte one token (vocabulary 256 fits gpt-mini's 512).
std::string byte_tokens(const fs::path& dir, std::size_t n) {
  std::string text;
  while (text.size() < n) text += "the quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs. ";
  text.resize(n);
  const fs::path out = dir / "tokens.bin";
  std::ofstream f(out, std::ios::binary);
  for (unsigned char c : text) {
    const std::uint16_t t = c;
    f.write(reinterpret_cast<const char*>(&t), 2);
  }
  return out.string();
}

/// A converge trial of gpt-mini at batch 8 on byte tokens in `dir`.
TrialPlan gpt_converge_plan(const testing::TempDir& dir) {
  TrialPlan p;
  p.setup.workload = "gpt-mini";
  p.setup.device = "cpu";
  p.setup.data = byte_tokens(fs::path(dir.str()), 20000);
  p.config.set("batch_size", "8").set("threads", "1");
  p.converge.on = true;
  return p;
}

TEST(ConvergeTrial, RecordsTheLossCurveAgainstSamplesAndTime) {
  testing::TempDir dir;
  TrialPlan p = gpt_converge_plan(dir);
  // A fixed number of steps, not seconds: how far 2 s of training gets (and so whether it has learnt yet) depended on
  // what else the machine ran; the stop by time is the second run's below.
  p.converge.max_seconds = 120;
  p.converge.max_samples = 8 * 30;
  p.converge.smooth_samples = 64;
  p.converge.save_checkpoint = (fs::path(dir.str()) / "trained.pt").string();
  const TrialResult r = run_trial(p);
  ASSERT_EQ(r.status, TrialStatus::ok) << r.message;
  ASSERT_TRUE(r.converge.has_value());
  const auto& pts = r.converge->points;
  ASSERT_EQ(pts.size(), 30u);
  EXPECT_EQ(r.converge->stopped, "max_samples");
  EXPECT_DOUBLE_EQ(r.converge->lr, 1e-3);
  for (size_t i = 0; i < pts.size(); ++i) {
    EXPECT_EQ(pts[i].samples, static_cast<std::int64_t>(8 * (i + 1)));
    if (i) {
      EXPECT_GT(pts[i].seconds, pts[i - 1].seconds);
    }
  }
  // It learns: the smoothed loss at the end is below the start's (ln 512 ≈ 6.2 at random init).
  EXPECT_LT(smoothed_loss(pts, pts.size() - 1, 64), smoothed_loss(pts, 7, 64));
  ASSERT_TRUE(fs::exists(p.converge.save_checkpoint));

  // A second run starting from those weights begins where the first ended; and a trained file is never
  // overwritten.
  TrialPlan q = p;
  q.setup.init_from = p.converge.save_checkpoint;
  q.converge.save_checkpoint = "";
  q.converge.max_seconds = 0.5;
  q.converge.max_samples = 0;
  const TrialResult r2 = run_trial(q);
  ASSERT_EQ(r2.status, TrialStatus::ok) << r2.message;
  EXPECT_EQ(r2.converge->stopped, "max_seconds");
  EXPECT_LT(r2.converge->points.front().loss, pts.front().loss - 0.5);
  const auto before = fs::last_write_time(p.converge.save_checkpoint);
  EXPECT_THROW(run_trial(p), UsageError);
  EXPECT_EQ(fs::last_write_time(p.converge.save_checkpoint), before);
}

// AdamW's β2 and ε from the setup reach the optimizer: the same run with other values trains other weights.
TEST(ConvergeTrial, AdamBetasAndEpsFromTheSetupAreApplied) {
  testing::TempDir dir;
  TrialPlan p = gpt_converge_plan(dir);
  p.converge.max_seconds = 30;
  p.converge.max_samples = 48;  // 6 steps of 8
  const TrialResult a = run_trial(p);
  p.setup.adam_beta2 = 0.5;
  p.setup.adam_eps = 1e-2;
  const TrialResult b = run_trial(p);
  ASSERT_EQ(a.status, TrialStatus::ok) << a.message;
  ASSERT_EQ(b.status, TrialStatus::ok) << b.message;
  ASSERT_EQ(a.converge->points.size(), b.converge->points.size());
  EXPECT_DOUBLE_EQ(a.converge->points[0].loss, b.converge->points[0].loss);  // the same first batch at the same weights
  EXPECT_NE(a.converge->points.back().loss, b.converge->points.back().loss);  // then other steps
}

// A batch ramp (docs/time-to-train.md, "A batch ramp"): grad_accum switches after the step that reaches each phase's
// samples (the steps grow: 8, 8, then 16, 16, then 32, 32 samples), the switches are recorded, and each phase's
// learning rate reaches the optimizer (another third-phase lr: the same first five steps, another last one).
TEST(ConvergeTrial, ABatchRampSwitchesGradAccumAndTheLearningRate) {
  testing::TempDir dir;
  TrialPlan p = gpt_converge_plan(dir);
  p.converge.max_seconds = 60;
  p.converge.max_samples = 112;
  p.converge.ramp = {{0, 1, 1e-3}, {16, 2, 1e-3}, {48, 4, 2e-3}};
  const TrialResult a = run_trial(p);
  ASSERT_EQ(a.status, TrialStatus::ok) << a.message;
  std::vector<std::int64_t> samples;
  for (const auto& pt : a.converge->points) samples.push_back(pt.samples);
  EXPECT_EQ(samples, (std::vector<std::int64_t>{8, 16, 32, 48, 80, 112}));
  EXPECT_EQ(a.converge->switched_at, (std::vector<std::int64_t>{16, 48}));
  p.converge.ramp[2].lr = 2e-2;
  const TrialResult b = run_trial(p);
  ASSERT_EQ(b.status, TrialStatus::ok) << b.message;
  ASSERT_EQ(b.converge->points.size(), 6u);
  for (int i = 0; i < 5; ++i) EXPECT_DOUBLE_EQ(a.converge->points[i].loss, b.converge->points[i].loss) << i;
  EXPECT_NE(a.converge->points[5].loss, b.converge->points[5].loss);
}

TEST(ConvergeTrial, StopsAtTheTargetLoss) {
  testing::TempDir dir;
  TrialPlan p = gpt_converge_plan(dir);
  p.converge.max_seconds = 60;
  p.converge.smooth_samples = 32;
  p.converge.target_loss = 100;  // reached as soon as the window is full
  const TrialResult r = run_trial(p);
  ASSERT_EQ(r.status, TrialStatus::ok) << r.message;
  EXPECT_EQ(r.converge->stopped, "target");
  EXPECT_EQ(r.converge->points.back().samples, 32);
}

TEST(WeightsFile, RoundTripsAndRefusesWhatDoesNotMatch) {
  testing::TempDir dir;
  const std::string path = (fs::path(dir.str()) / "w.pt").string();
  TrialSetup s1;
  s1.seed = 1;
  auto a = make_workload("mlp");
  a->build(BuildOptions{s1, Settings{}, torch::kCPU});
  save_weights(a->named_state(), path);
  TrialSetup s2;
  s2.seed = 2;
  auto b = make_workload("mlp");
  b->build(BuildOptions{s2, Settings{}, torch::kCPU});
  ASSERT_FALSE(torch::equal(a->parameters()[0], b->parameters()[0]));
  auto state = b->named_state();
  load_weights(state, path);
  for (size_t i = 0; i < a->parameters().size(); ++i) EXPECT_TRUE(torch::equal(a->parameters()[i], b->parameters()[i]));

  auto g = make_workload("gpt-mini");
  g->build(BuildOptions{s2, Settings{}, torch::kCPU});
  const auto g0 = g->parameters()[0].clone();
  auto gs = g->named_state();
  try {
    load_weights(gs, path);
    FAIL() << "an mlp's weights loaded into gpt-mini";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("does not match the model"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos);
  }
  EXPECT_TRUE(torch::equal(g0, g->parameters()[0]));  // nothing was loaded
  EXPECT_THROW(save_weights(a->named_state(), path), UsageError);
}

TEST(TokenOrder, TheSameSamplesAtAnyBatchSize) {
  testing::TempDir dir;
  DataOptions d;
  d.data = byte_tokens(fs::path(dir.str()), 5000);
  d.decode = "tokens";
  d.seed = 11;
  d.batch_size = 8;
  TokenPipeline big(d, 16, 512);
  d.batch_size = 4;
  TokenPipeline small(d, 16, 512);
  const auto [x8, y8] = big.next();
  const auto [xa, ya] = small.next();
  const auto [xb, yb] = small.next();
  EXPECT_TRUE(torch::equal(x8, torch::cat({xa, xb})));
  EXPECT_TRUE(torch::equal(y8, torch::cat({ya, yb})));
}

}  // namespace
}  // namespace autotune
