// The run's length and the noise scale priced over it (tuner/pricing/run_length.h, tuner/pricing/noise_over_run.h): parsing and bad
// input, and the run's B̄ from a trial whose noise scale grows along it — above the trial's own value when the run is
// longer, held beyond the extrapolation's cap, refused when the run is shorter than the trial.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "knobs/error.h"
#include "knobs/noise_trajectory.h"
#include "tests/support/expect_throw_msg.h"
#include "tuner/pricing/noise_over_run.h"
#include "tuner/pricing/run_length.h"

namespace autotune {
namespace {

TEST(RunLength, ParsesCountsAndUnits) {
  EXPECT_FALSE(parse_run_length("").given());
  EXPECT_DOUBLE_EQ(parse_run_length("500000").count, 500000);
  EXPECT_EQ(parse_run_length("500000").unit, RunLength::Unit::samples);
  EXPECT_EQ(parse_run_length("3epochs").unit, RunLength::Unit::epochs);
  EXPECT_EQ(parse_run_length("1 epoch").unit, RunLength::Unit::epochs);
  const RunLength t = parse_run_length("2.5e9tokens");
  EXPECT_DOUBLE_EQ(t.count, 2.5e9);
  EXPECT_EQ(t.unit, RunLength::Unit::tokens);
  EXPECT_DOUBLE_EQ(run_samples(parse_run_length("3epochs"), 1797, 0), 3 * 1797.0);
  EXPECT_DOUBLE_EQ(run_samples(t, 0, 128), 2.5e9 / 128);
  EXPECT_DOUBLE_EQ(run_samples(parse_run_length("2epochs"), 0, 0), 0);  // the data's size unknown
  EXPECT_EQ(describe(parse_run_length("3epochs")), "3 epochs");
  EXPECT_EQ(describe(parse_run_length("500000")), "500,000 samples");
}

TEST(RunLength, BadInputIsOneLine) {
  const std::string allowed = "allowed: a count of samples, epochs or tokens above 0, e.g. 500000, 3epochs, 2.5e9tokens";
  EXPECT_THROW_MSG(parse_run_length("0"), UsageError, "run-length '0' is not a count above 0; " + allowed);
  EXPECT_THROW_MSG(parse_run_length("-3epochs"), UsageError, "run-length '-3epochs' is not a count above 0; " + allowed);
  EXPECT_THROW_MSG(parse_run_length("nan"), UsageError, "run-length 'nan' is not a count above 0; " + allowed);
  EXPECT_THROW_MSG(parse_run_length("epochs"), UsageError, "run-length 'epochs' is not a count above 0; " + allowed);
  EXPECT_THROW_MSG(parse_run_length("3 weeks"), UsageError, "run-length '3 weeks' has an unknown unit 'weeks'; " + allowed);
}

/// A noise-scale trial's record: 32 burn-in steps of 4 × 4 samples, then windows to 256 steps, with exact norms for
/// B_simple = 20·(step / 64)^alpha (|G|² = 1) and a little multiplicative noise.
NoiseRecord grown_record(double alpha, std::vector<double>& losses) {
  NoiseRecord r;
  r.micro_batch = 4;
  r.micro_batches = 4;
  r.weights = "random init";
  r.burn_in_steps = 32;
  r.windows = 3;
  r.first_window_end = 2 * 32 * 16;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-0.05, 0.05);
  for (int step = 33; step <= 256; ++step) {
    const double tr = 20 * std::pow(step / 64.0, alpha);
    r.steps.push_back({(1 + tr / 4) * (1 + u(rng)), (1 + tr / 16) * (1 + u(rng))});
    losses.push_back(3.0 / (1 + step / 100.0));
  }
  return r;
}

NoiseScaleSummary trial_summary() {
  NoiseScaleSummary n;
  n.measured = true;
  n.early = true;
  n.value = 25;
  n.lo = 20;
  n.hi = 30;
  return n;
}

TEST(NoiseOverRun, ALongerRunPricesWithTheGrownNoiseScale) {
  std::vector<double> losses;
  const NoiseRecord rec = grown_record(0.5, losses);
  NoiseScaleSummary n = trial_summary();
  RunHorizon h;
  h.length = "100000";
  EXPECT_EQ(price_over_run(n, rec, losses, h, 16), "");
  ASSERT_EQ(n.windows.size(), 3u);
  EXPECT_EQ(n.windows[0].from_samples, 512);
  EXPECT_EQ(n.windows[2].to_samples, 4096);
  EXPECT_GT(n.windows[2].value, n.windows[0].value * 1.6);  // √4 between the first and last window's middles
  EXPECT_LT(n.windows[0].loss, 3.0);
  ASSERT_TRUE(n.growth.fitted);
  EXPECT_NEAR(n.growth.exponent, 0.5, 0.1);
  EXPECT_TRUE(n.growth.loss_fitted);
  EXPECT_LT(n.growth.loss_exponent, 0);  // B grows as the loss falls
  ASSERT_TRUE(n.over_run);
  EXPECT_DOUBLE_EQ(n.trial_value, 25);
  EXPECT_EQ(n.measured_to, 4096);
  EXPECT_DOUBLE_EQ(n.cap_samples, kExtrapolationCap * 4096);
  // The exact curve's mean over the run, B = 20·(e / 1024)^0.5 (a step is 16 samples): the fit recovers it.
  NoiseGrowthCurve truth{std::log(20.0), std::log(1024.0), 0.5};
  truth.cap_samples = n.cap_samples;
  const double expect = run_mean_noise_scale(truth, 16, 100000);
  EXPECT_NEAR(n.value, expect, 0.15 * expect);
  EXPECT_GT(n.value, 3 * n.windows[2].value);  // far beyond the trial: the run's B̄ is several times the last window
  EXPECT_LT(n.lo, n.value);
  EXPECT_GT(n.hi, n.value);
  EXPECT_NE(n.run_basis.find("--run-length 100,000 samples"), std::string::npos) << n.run_basis;
}

TEST(NoiseOverRun, TheExtrapolationIsHeldAtItsCap) {
  std::vector<double> losses;
  const NoiseRecord rec = grown_record(0.5, losses);
  NoiseScaleSummary a = trial_summary(), b = trial_summary();
  RunHorizon h;
  h.length = "1e9";
  price_over_run(a, rec, losses, h, 16);
  h.length = "1e10";
  price_over_run(b, rec, losses, h, 16);
  EXPECT_NEAR(a.value, b.value, 1e-3 * a.value);  // both runs end far past the cap: B is held, the mean nears the held value
}

TEST(NoiseOverRun, ARunShorterThanTheTrialIsRefusedAndTheDefaultIsOnePass) {
  std::vector<double> losses;
  const NoiseRecord rec = grown_record(0.5, losses);
  NoiseScaleSummary n = trial_summary();
  RunHorizon h;
  h.length = "1000";
  EXPECT_EQ(price_over_run(n, rec, losses, h, 16),
            "--run-length 1,000 samples is 1,000 samples, shorter than the 4,096 samples the noise-scale trial itself trained; "
            "give a longer run (resume with --resume --run-length N)");
  // One pass over 50,000 images by default, said so.
  NoiseScaleSummary d = trial_summary();
  RunHorizon one;
  one.dataset_samples = 50000;
  EXPECT_EQ(price_over_run(d, rec, losses, one, 16), "");
  EXPECT_TRUE(d.over_run);
  EXPECT_DOUBLE_EQ(d.run_samples, 50000);
  EXPECT_NE(d.run_basis.find("one pass over the data, 50,000 samples (the default"), std::string::npos) << d.run_basis;
  // Epochs of a token file: tokens ÷ sequence length per pass.
  NoiseScaleSummary e = trial_summary();
  RunHorizon tok;
  tok.length = "2epochs";
  tok.dataset_samples = 1e6 / 64;
  tok.tokens_per_sample = 64;
  price_over_run(e, rec, losses, tok, 16);
  EXPECT_DOUBLE_EQ(e.run_samples, 2 * 1e6 / 64);
  // From the user's weights their history is unknown: windows are reported, the trial's value prices the run.
  NoiseScaleSummary u = trial_summary();
  u.early = false;
  EXPECT_EQ(price_over_run(u, rec, losses, one, 16), "");
  EXPECT_FALSE(u.over_run);
  EXPECT_EQ(u.windows.size(), 3u);
  EXPECT_DOUBLE_EQ(u.value, 25);
  EXPECT_NE(u.over_run_note.find("measured from your weights"), std::string::npos);
}

}  // namespace
}  // namespace autotune
