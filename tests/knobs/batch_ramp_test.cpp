// A batch ramp (knobs/batch_ramp.h): the time of a fixed batch and of a ramp over a growth curve, checked against
// closed forms (a constant noise scale) and an independent fine integration (a square-root curve), the switch where
// two batches' lines cross, the same switches priced under another curve, the curve moved to a run mean, and the
// learning-rate gain with its hold (AdaScale's gain itself, knobs/adascale.h, at its limits).
#include "knobs/batch_ramp.h"

#include "knobs/adascale.h"

#include <gtest/gtest.h>

#include <cmath>

namespace autotune {
namespace {

NoiseGrowthCurve constant(double b) {
  NoiseGrowthCurve c;
  c.log_b_at_pivot = std::log(b);
  return c;
}
NoiseGrowthCurve square_root() {  // B(e) = √e
  NoiseGrowthCurve c;
  c.exponent = 0.5;
  return c;
}

/// ∫ (B + √e)/(B0 + √e) de over [a, b], by the midpoint rule on a linear grid of a million steps.
double own_reference(double B, double B0, double a, double b) {
  const int n = 1000000;
  const double h = (b - a) / n;
  double s = 0;
  for (int i = 0; i < n; ++i) {
    const double e = std::max(1.0, a + (i + 0.5) * h), bn = std::sqrt(e);
    s += h * (B + bn) / (B0 + bn);
  }
  return s;
}

TEST(BatchRamp, FixedBatchAtAConstantNoiseScaleIsTheClosedForm) {
  const double B0 = 32, run = 1e5, X = 250, bn = 100;
  EXPECT_NEAR(fixed_batch_seconds(constant(bn), B0, run, 128, X), run * (128 + bn) / (B0 + bn) / X, 1e-6 * run / X);
  EXPECT_NEAR(fixed_batch_seconds(constant(bn), B0, run, B0, X), run / X, 1e-6 * run / X);  // the user's own run
}

TEST(BatchRamp, OneBatchCheapestAllAlongIsOnePhase) {
  // Constant B = 100: 32 costs (32+100)/100 = 1.32 per progress sample, 128 costs (128+100)/150 = 1.52.
  const auto r = cheapest_ramp(constant(100), 32, 1e5, {{32, 100}, {128, 150}});
  ASSERT_EQ(r.phases.size(), 1u);
  EXPECT_EQ(r.phases[0].global_batch, 32);
  EXPECT_NEAR(r.seconds, fixed_batch_seconds(constant(100), 32, 1e5, 32, 100), 1e-6 * r.seconds);
}

TEST(BatchRamp, SwitchesWhereTheLinesCross) {
  // 32 at 100/s and 128 at 200/s cross at B = (128·100 − 32·200)/(200 − 100) = 64, which √e passes at e = 4096.
  const double B0 = 32, run = 1e5;
  const std::vector<RampOption> o = {{32, 100}, {128, 200}, {64, 90}};  // 64 is never the cheapest
  const auto r = cheapest_ramp(square_root(), B0, run, o);
  ASSERT_EQ(r.phases.size(), 2u);
  EXPECT_EQ(r.phases[0].global_batch, 32);
  EXPECT_EQ(r.phases[1].global_batch, 128);
  EXPECT_NEAR(r.phases[0].to_progress, 4096, 1);
  EXPECT_NEAR(r.phases[1].noise_at_start, 64, 0.01);
  EXPECT_NEAR(r.phases[0].to_samples, 4096, 1);  // at the user's batch the own samples are the progress
  const double second = own_reference(128, B0, 4096, run);
  EXPECT_NEAR(r.phases[1].to_samples - r.phases[1].from_samples, second, 1e-3 * second);
  EXPECT_NEAR(r.seconds, 4096.0 / 100 + second / 200, 1e-3 * r.seconds);
  // Cheaper than either batch alone.
  EXPECT_LT(r.seconds, fixed_batch_seconds(square_root(), B0, run, 32, 100));
  EXPECT_LT(r.seconds, fixed_batch_seconds(square_root(), B0, run, 128, 200));
}

TEST(BatchRamp, PricingTheSwitchesAgainReproducesThePlan) {
  const std::vector<RampOption> o = {{16, 80}, {32, 100}, {128, 200}};
  const auto plan = cheapest_ramp(square_root(), 32, 2e5, o);
  ASSERT_GE(plan.phases.size(), 2u);
  const auto again = price_ramp(square_root(), 32, 2e5, plan.phases, o);
  ASSERT_EQ(again.phases.size(), plan.phases.size());
  EXPECT_NEAR(again.seconds, plan.seconds, 2e-3 * plan.seconds);
  for (std::size_t k = 0; k + 1 < plan.phases.size(); ++k)
    EXPECT_NEAR(again.phases[k].to_progress, plan.phases[k].to_progress, 2e-3 * plan.phases[k].to_progress);
  // One phase priced is the fixed batch.
  const auto one = price_ramp(square_root(), 32, 2e5, {plan.phases.back()}, o);
  EXPECT_NEAR(one.seconds, fixed_batch_seconds(square_root(), 32, 2e5, 128, 200), 1e-3 * one.seconds);
}

TEST(BatchRamp, TheSameSwitchesUnderAnotherCurveFollowTheirOwnSamples) {
  // Switch at 10,000 own samples from 32 (100/s) to 128 (200/s), run 1e5 at B0 = 32, under a constant B = 50:
  // phase 1 covers 10,000 progress samples (rate 1); phase 2 the remaining 90,000 at rate (128+50)/(32+50).
  RampPhase a, b;
  a.option = 0;
  a.global_batch = 32;
  a.to_samples = 10000;
  b.option = 1;
  b.global_batch = 128;
  const std::vector<RampOption> o = {{32, 100}, {128, 200}};
  const auto r = price_ramp(constant(50), 32, 1e5, {a, b}, o);
  ASSERT_EQ(r.phases.size(), 2u);
  const double rate = (128.0 + 50) / (32 + 50);
  EXPECT_NEAR(r.phases[0].to_progress, 10000, 1);
  EXPECT_NEAR(r.seconds, 10000.0 / 100 + 90000 * rate / 200, 1e-4 * r.seconds);
  EXPECT_NEAR(r.samples, 10000 + 90000 * rate, 1e-4 * r.samples);
}

TEST(BatchRamp, ACurveMovedToARunMeanHasIt) {
  for (double target : {5.0, 60.0, 3000.0}) {
    const NoiseGrowthCurve c = with_run_mean(square_root(), 32, 1e5, target);
    EXPECT_NEAR(run_mean_noise_scale(c, 32, 1e5), target, 1e-6 * target);
    EXPECT_EQ(c.exponent, 0.5);  // the shape is kept
  }
}

TEST(BatchRamp, LearningRateGainIsAdaScalesHeldPastTheNoiseScale) {
  EXPECT_DOUBLE_EQ(ramp_lr_gain(32, 32, 100, 200), 1);
  EXPECT_NEAR(ramp_lr_gain(64, 32, 100, 200), 2.0 * 132 / 164, 1e-12);
  EXPECT_LT(ramp_lr_gain(16, 32, 100, 200), 1);
  // Past B̄ = 200 the gain is the one at 200, whatever the batch.
  EXPECT_DOUBLE_EQ(ramp_lr_gain(1024, 32, 100, 200), ramp_lr_gain(200, 32, 100, 200));
  // A run mean below the user's batch holds bigger batches at the user's learning rate.
  EXPECT_DOUBLE_EQ(ramp_lr_gain(128, 32, 10, 20), 1);
  // A tiny local noise scale early in training: a bigger batch barely gains.
  EXPECT_LT(ramp_lr_gain(128, 32, 1, 1000), 1.05);
}

TEST(BatchRamp, AdaScalesGainAtItsLimits) {
  EXPECT_DOUBLE_EQ(adascale_gain(32, 32, 100), 1);
  EXPECT_NEAR(adascale_gain(128, 32, 1e9), 4, 1e-6);            // far below the noise scale: linear
  EXPECT_NEAR(adascale_gain(1e9, 32, 100), 132.0 / 32, 1e-6);   // far above it: (Bn + B0)/B0, no further
  EXPECT_DOUBLE_EQ(adascale_gain(128, 32, -1), 4);                // no noise scale: B/B0
  EXPECT_DOUBLE_EQ(adascale_gain(128, 32, INFINITY), 4);
  EXPECT_DOUBLE_EQ(adascale_gain(128, 0, 100), 1);                // no user batch: no gain
}

}  // namespace
}  // namespace autotune
