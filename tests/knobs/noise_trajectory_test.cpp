// The noise scale along a run (knobs/noise_trajectory.h): windows of doubling length, the growth fit with its prior,
// and the run's mean noise scale. The coverage test trains nothing: it draws each step's micro-batch gradients from
// linear regression with Gaussian inputs (tests/support/regression_noise.h), moving δ along the run so that B_simple
// follows a known power law in samples.
#include "knobs/noise_trajectory.h"
#include "tests/support/regression_noise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

namespace autotune {
namespace {

double t_975(int dof) {  // Student's t, the tuner's table for the dofs these windows have
  static const double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086};
  return dof < 1 ? 0 : dof <= 20 ? table[dof - 1] : 1.96;
}

/// A trial of `burn_in` unrecorded steps then windows up to 8× that, B_simple = b_start·(samples / start)^alpha.
struct Trial {
  std::vector<NoiseStep> steps;
  std::int64_t first_step = 0, first_window_end = 0;
};
Trial simulate(std::mt19937_64& rng, double alpha, int burn_in, int b, int K, double b_start) {
  const int d = 10;
  const double sigma = 1.0;
  const std::int64_t B = static_cast<std::int64_t>(b) * K;
  Trial t;
  t.first_step = burn_in;
  t.first_window_end = 2 * burn_in * B;
  const double start = static_cast<double>(burn_in * B);
  for (int s = burn_in + 1; s <= 8 * burn_in; ++s) {
    const double bs = b_start * std::pow(static_cast<double>(s * B) / start, alpha);
    std::vector<double> delta(d, 0.0);  // along the first axis: B_simple = d(1 + σ²/|δ|²) + 1
    delta[0] = std::sqrt(sigma * sigma * d / (bs - 1 - d));
    t.steps.push_back(testing::regression_step(rng, delta, sigma, b, K));
  }
  return t;
}

TEST(NoiseTrajectory, WindowsDoubleAndStartAfterTheBurnIn) {
  std::vector<NoiseStep> steps(70, NoiseStep{2.0, 1.0});
  std::vector<double> losses(70);
  for (size_t i = 0; i < losses.size(); ++i) losses[i] = i < 10 ? 3.0 : i < 30 ? 2.0 : 1.0;
  // 10 steps of burn-in, 16 samples a step: windows (160, 320], (320, 640], (640, 1280] samples = steps 11–20, 21–40, 41–80.
  const auto w = noise_windows(steps, losses, 10, 4, 16, 320, 3, t_975);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].from_samples, 160);
  EXPECT_EQ(w[0].to_samples, 320);
  EXPECT_EQ(w[0].estimate.steps, 10);
  EXPECT_EQ(w[1].estimate.steps, 20);
  EXPECT_EQ(w[2].estimate.steps, 40);  // the trial ended at step 80: its 40 steps
  EXPECT_DOUBLE_EQ(w[0].loss, 3.0);
  EXPECT_DOUBLE_EQ(w[1].loss, 2.0);
  EXPECT_DOUBLE_EQ(w[2].loss, 1.0);
  EXPECT_NEAR(w[1].at_samples(), std::sqrt(320.0 * 640.0), 1e-9);
  // A trial cut short by its time: the last window has 2 steps and is dropped, not estimated from too little.
  std::vector<NoiseStep> cut(steps.begin(), steps.begin() + 32);
  EXPECT_EQ(noise_windows(cut, {}, 10, 4, 16, 320, 3, t_975).size(), 2u);
}

TEST(NoiseTrajectory, FitRecoversAnExactPowerLawAndFallsBackOnThePrior) {
  std::vector<double> x, y, v;
  for (double s : {1e3, 2e3, 4e3, 8e3}) {
    x.push_back(std::log(s));
    y.push_back(std::log(7.0 * std::pow(s, 0.8)));
    v.push_back(0.01);
  }
  const GrowthFit f = fit_growth(x, y, v, 0.5, 0.3);
  EXPECT_NEAR(f.slope, 0.8, 0.02);  // 4 points of 10% error over a factor 8 outweigh the prior
  EXPECT_LT(f.prior_share, 0.1);
  EXPECT_NEAR(std::exp(f.at(std::log(4e3))), 7.0 * std::pow(4e3, 0.8), 0.05 * 7.0 * std::pow(4e3, 0.8));
  const GrowthFit none = fit_growth(x, y, v, 0, std::numeric_limits<double>::infinity());
  EXPECT_NEAR(none.slope, 0.8, 1e-9);
  EXPECT_DOUBLE_EQ(none.prior_share, 0);
  // One point cannot tell a slope: the prior's, with the prior's interval.
  const GrowthFit one = fit_growth({x[0]}, {y[0]}, {v[0]}, 0.5, 0.3);
  EXPECT_DOUBLE_EQ(one.slope, 0.5);
  EXPECT_DOUBLE_EQ(one.prior_share, 1);
  EXPECT_NEAR(one.hi - one.lo, 2 * 1.96 * 0.3, 1e-9);
  EXPECT_FALSE(fit_growth({x[0]}, {y[0]}, {v[0]}, 0, std::numeric_limits<double>::infinity()).valid());
  EXPECT_FALSE(fit_growth({}, {}, {}, 0.5, 0.3).valid());
}

// The bar: on synthetic windows with a known exponent, the exponent's 95% interval covers the truth in ≥ 90%
// of 50 seeds. Two truths, either side of the prior's 0.5, so that the prior's pull is part of what is tested.
void expect_coverage(double alpha) {
  int covered = 0, informative = 0;
  double mean_width = 0;
  for (int seed = 0; seed < 50; ++seed) {
    std::mt19937_64 rng(1000 + static_cast<std::uint64_t>(seed));
    const Trial t = simulate(rng, alpha, 64, 4, 4, 30.0);
    const auto w = noise_windows(t.steps, {}, t.first_step, 4, 16, t.first_window_end, 3, t_975);
    const GrowthFit f = fit_noise_growth_in_samples(w, kGrowthPriorExponent, kGrowthPriorSd);
    ASSERT_TRUE(f.valid());
    covered += f.lo <= alpha && alpha <= f.hi;
    informative += f.prior_share < 0.5;
    mean_width += (f.hi - f.lo) / 50;
  }
  std::printf("alpha %.2f: covered %d of 50, data-led fits %d, mean interval width %.2f\n", alpha, covered, informative, mean_width);
  EXPECT_GE(covered, 45);
  EXPECT_GE(informative, 35);  // the windows, not the prior, set the exponent (39–50 of 50 over four seed sets)
}

TEST(NoiseTrajectory, ExponentIntervalCoversTheTruth) {
  expect_coverage(0.3);
  expect_coverage(0.8);
}

TEST(NoiseTrajectory, RunMeanMatchesTheClosedForm) {
  // Constant B: the run's mean is B.
  NoiseGrowthCurve flat{std::log(50.0), 0, 0};
  EXPECT_NEAR(run_mean_noise_scale(flat, 32, 1e6), 50, 1e-6);
  // B = c·e^α and B0 → 0: weights 1/B, so B̄ = E / ∫ e^−α/c de = c(1 − α)E^α = (1 − α)·B(E).
  NoiseGrowthCurve pw{std::log(2.0), 0, 0.5};
  EXPECT_NEAR(run_mean_noise_scale(pw, 1e-9, 1e6), 0.5 * pw.at(1e6), 0.01 * pw.at(1e6));
  // A large B0 weights every part of the run alike: the plain mean of B, c·E^α/(1 + α).
  EXPECT_NEAR(run_mean_noise_scale(pw, 1e9, 1e6), pw.at(1e6) / 1.5, 0.01 * pw.at(1e6));
  // The cap holds B beyond it.
  NoiseGrowthCurve capped = pw;
  capped.cap_samples = 1e4;
  EXPECT_DOUBLE_EQ(capped.at(1e6), capped.at(1e4));
  EXPECT_LT(run_mean_noise_scale(capped, 32, 1e6), capped.at(1e4) * 1.0001);
  EXPECT_GT(run_mean_noise_scale(capped, 32, 1e6), 0.9 * capped.at(1e4));
  // Exponents outside [0, 1] are clamped.
  EXPECT_DOUBLE_EQ((NoiseGrowthCurve{0, 0, -0.4}).at(100), 1.0);
}

}  // namespace
}  // namespace autotune
