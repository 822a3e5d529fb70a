// What `autotune converge` concludes from its runs (tuner/converge/converge.h, summarize_converge), on synthetic loss curves
// that follow the time model: loss = 1 + 4 / (1 + e / 2000) in effective samples e = samples ÷ (1 + B/B̄) × gain
// (gain > 1: a learning rate that makes each sample count more), at a given samples/s. Checks that each arm's measured
// ratio carries an interval from its data orders, what "agrees" means, and that a gain above the samples/s ratio with
// fewer samples is flagged as the learning rate's and implies no noise scale.
#include <gtest/gtest.h>

#include <cmath>

#include "tuner/converge/converge.h"

namespace autotune {
namespace {

TrialRecord run_of(std::int64_t batch, double samples_per_s, double noise_scale, double gain, std::int64_t order, double seconds = 60) {
  TrialRecord r;
  r.id = 1;
  r.kind = TrialKind::converge;
  r.plan.config.set("batch_size", std::to_string(batch));
  r.plan.setup.data_order = order;
  r.result.status = TrialStatus::ok;
  r.result.batch_size = batch;
  ConvergeRecord c;
  for (std::int64_t s = batch; static_cast<double>(s) / samples_per_s <= seconds; s += batch) {
    const double e = static_cast<double>(s) / (1 + static_cast<double>(batch) / noise_scale) * gain;
    c.points.push_back({s, static_cast<double>(s) / samples_per_s, 1 + 4 / (1 + e / 2000)});
  }
  r.result.converge = c;
  return r;
}

ConvergeSummary header(double noise_scale) {
  ConvergeSummary h;
  h.user_batch = 32;
  h.noise_scale = noise_scale;
  h.smooth_samples = 1024;
  h.seconds_per_run = 60;
  return h;
}

const ConvergeRunMeta kBase{"baseline", "baseline", 0, false}, kRerun{"baseline, data order 1", "rerun", 0, false},
    kCand{"changed batch", "candidate", 0, false}, kCandRerun{"changed batch, data order 1", "candidate-rerun", 0, false};

TEST(ConvergeSummary, TheHeadlineComparesTheBaselineOnTheArmsOwnOrdersOnly) {
  // The baseline trained on three data orders, the third on a host half as fast; the arm on the first two only. Its
  // headline is the baseline's mean over those two against the arm's: between its two orders' ratios (with the slow order
  // it never ran in the baseline's mean, the headline was 1.55× beside orders of 1.13× and 1.17×).
  const ConvergeRunMeta kRerun2{"baseline, data order 2", "rerun", 0, false};
  const std::vector<TrialRecord> runs = {run_of(32, 300, 200, 1, 0), run_of(64, 390, 200, 1, 0), run_of(32, 300, 200, 1, 1),
                                         run_of(64, 400, 200, 1, 1), run_of(32, 150, 200, 1, 2, 120)};
  const ConvergeSummary s = summarize_converge(runs, {kBase, kCand, kRerun, kCandRerun, kRerun2}, header(200));
  ASSERT_EQ(s.comparisons.size(), 1u);
  const ConvergeComparison& c = s.comparisons[0];
  ASSERT_EQ(c.order_ratios.size(), 2u);
  EXPECT_GE(c.measured, std::min(c.order_ratios[0], c.order_ratios[1]) - 1e-9);
  EXPECT_LE(c.measured, std::max(c.order_ratios[0], c.order_ratios[1]) + 1e-9);
}

TEST(ConvergeSummary, EachArmOnTwoOrdersCarriesAnIntervalAndAgreesWithinIt) {
  // B̄ = 200 in the runs; the prediction uses the same: measured and predicted agree within 20%.
  const std::vector<TrialRecord> runs = {run_of(32, 300, 200, 1, 0), run_of(64, 390, 200, 1, 0), run_of(32, 300, 200, 1, 1),
                                         run_of(64, 400, 200, 1, 1)};
  const ConvergeSummary s = summarize_converge(runs, {kBase, kCand, kRerun, kCandRerun}, header(200));
  ASSERT_EQ(s.comparisons.size(), 1u);
  const ConvergeComparison& c = s.comparisons[0];
  EXPECT_EQ(c.orders, 2);
  ASSERT_EQ(c.order_ratios.size(), 2u);
  EXPECT_LT(c.order_ratios[0], c.order_ratios[1]);  // order 1 ran faster
  EXPECT_LE(c.measured_lo, c.order_ratios[0]);
  EXPECT_GE(c.measured_hi, c.order_ratios[1]);
  EXPECT_NEAR(c.measured, c.predicted, 0.05 * c.predicted);
  EXPECT_TRUE(c.agrees);
  EXPECT_FALSE(c.above_throughput);
  EXPECT_NEAR(c.implied_noise_scale, 200, 40);
}

TEST(ConvergeSummary, APredictionOutside20PercentAgreesOnlyInsideTheMeasuredInterval) {
  // The runs follow B̄ = 100, the prediction uses 1,000: predicted far above measured.
  const std::vector<TrialRecord> steady = {run_of(32, 300, 100, 1, 0), run_of(128, 500, 100, 1, 0), run_of(32, 300, 100, 1, 1),
                                           run_of(128, 500, 100, 1, 1)};
  const ConvergeComparison c = summarize_converge(steady, {kBase, kCand, kRerun, kCandRerun}, header(1000)).comparisons.at(0);
  EXPECT_GT(std::abs(c.agreement), 0.2);
  EXPECT_FALSE(c.agrees);  // two steady orders: a narrow interval, and the prediction outside it
  // The same, but the candidate's two orders ran at very different speeds: the interval is wide and holds it.
  const std::vector<TrialRecord> spread = {run_of(32, 300, 100, 1, 0), run_of(128, 330, 100, 1, 0), run_of(32, 300, 100, 1, 1),
                                           run_of(128, 1500, 100, 1, 1)};
  const ConvergeComparison w = summarize_converge(spread, {kBase, kCand, kRerun, kCandRerun}, header(1000)).comparisons.at(0);
  EXPECT_LE(w.measured_lo, w.predicted);
  EXPECT_GE(w.measured_hi, w.predicted);
  EXPECT_TRUE(w.agrees);
}

TEST(ConvergeSummary, AGainAboveTheSamplesPerSecondRatioIsTheLearningRates) {
  // Batch 256 at 1.9× the samples/s whose samples each count 2.5× (a learning-rate gain): fewer samples than the
  // baseline to the same loss, faster than 1.9×. No noise scale implies that.
  const std::vector<TrialRecord> runs = {run_of(32, 300, 1e9, 1, 0), run_of(256, 570, 1000, 2.5, 0), run_of(32, 300, 1e9, 1, 1)};
  const ConvergeComparison c = summarize_converge(runs, {kBase, kCand, kRerun}, header(200)).comparisons.at(0);
  EXPECT_LT(c.samples_ratio, 1);
  EXPECT_GT(c.measured, c.throughput_ratio);
  EXPECT_TRUE(c.above_throughput);
  EXPECT_EQ(c.implied_noise_scale, 0);
  EXPECT_EQ(c.orders, 1);  // only order 0: the interval is the baseline's spread alone
}

}  // namespace
}  // namespace autotune
