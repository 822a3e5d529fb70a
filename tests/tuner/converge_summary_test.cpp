// What `autotune converge` concludes from its runs (tuner/converge/converge.h, summarize_converge), on synthetic loss curves
// that follow the time model: loss = 1 + 4 / (1 + e / 2000) in effective samples e = samples ÷ (1 + B/B̄) × gain
// (gain > 1: a learning rate that makes each sample count more), at a given samples/s. Checks that each arm's measured
// ratio carries an interval from its data orders, what "agrees" means, and that a gain above the samples/s ratio with
// fewer samples is flagged as the learning rate's and implies no noise scale; and that a candidate ending below the
// lowest loss the baseline reached is said beside the common target.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "reports/converge_report.h"
#include "tests/support/trial_helpers.h"
#include "tuner/converge/converge.h"

namespace autotune {
namespace {

TrialRecord run_of(std::int64_t batch, double samples_per_s, double noise_scale, double gain, std::int64_t order, double seconds = 60) {
  TrialRecord r = testing::converge_record(batch, order);
  ConvergeRecord& c = *r.result.converge;
  for (std::int64_t s = batch; static_cast<double>(s) / samples_per_s <= seconds; s += batch) {
    const double e = static_cast<double>(s) / (1 + static_cast<double>(batch) / noise_scale) * gain;
    c.points.push_back({s, static_cast<double>(s) / samples_per_s, 1 + 4 / (1 + e / 2000)});
  }
  return r;
}

/// The baseline at lr 1e-3 and two arms at other rates `a` and `b` ({lr, gain}: the gain scales a run's effective samples),
/// on data orders 0 and then 1: records baseline, a, b, then their reruns in that order.
std::vector<TrialRecord> rate_arms(std::pair<double, double> a, std::pair<double, double> b) {
  std::vector<TrialRecord> runs;
  for (std::int64_t order : {0, 1})
    for (const auto& [lr, gain] : {std::pair<double, double>{1e-3, 1}, a, b}) {
      runs.push_back(run_of(32, 300, 200, gain, order));
      runs.back().plan.setup.lr = lr;
    }
  return runs;
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

// converge --from-sweep (docs/time-to-train.md): arms at the baseline's config and other learning rates. Each pairs with
// its own run on the other data order (by rate, not only by config), its change reads as the rate, and its prediction is
// the samples/s ratio × the sweep's gain: a rate that makes each sample count 1.5× is predicted and measured at 1.5×.
TEST(ConvergeSummary, ArmsAtAnotherRateArePredictedAtTheSweepsGainAndPairedByRate) {
  const std::vector<TrialRecord> runs = rate_arms({3e-3, 1.5}, {2e-3, 1.2});
  ConvergeRunMeta best{"the sweep's best rate", "candidate", 0, false, 1.5}, runner{"the sweep's runner-up", "candidate", 0, false, 1.2};
  const std::vector<ConvergeRunMeta> metas = {kBase, best, runner, kRerun, {"best, data order 1", "candidate-rerun", 0, false, 1.5},
                                              {"runner-up, data order 1", "candidate-rerun", 0, false, 1.2}};
  const ConvergeSummary s = summarize_converge(runs, metas, header(0));
  ASSERT_EQ(s.comparisons.size(), 2u);
  EXPECT_EQ(s.runs[1].change, "lr 0.003");
  EXPECT_EQ(s.runs[2].change, "lr 0.002");
  for (int k = 0; k < 2; ++k) {
    const ConvergeComparison& c = s.comparisons[k];
    const double gain = k == 0 ? 1.5 : 1.2;
    EXPECT_EQ(c.orders, 2);  // its own rerun only: the other arm's (same config, other rate) is not its
    EXPECT_DOUBLE_EQ(c.lr_gain, gain);
    EXPECT_NEAR(c.throughput_ratio, 1, 1e-9);
    EXPECT_DOUBLE_EQ(c.predicted, c.throughput_ratio * c.efficiency * gain);
    EXPECT_NEAR(c.measured, gain, 0.06 * gain) << k;
    EXPECT_TRUE(c.agrees);
    EXPECT_NEAR(c.samples_ratio, 1 / gain, 0.05);
    EXPECT_EQ(c.implied_noise_scale, 0);  // the same batch: no noise scale is implied
  }
}

// A rate too high for the task: the baseline falls fast to 1.8, then climbs back towards 2.2 (it ends above where it
// was); the candidate at a lower rate starts slower and ends at ~0.7. The common target (the baseline's worst final
// loss) sits early, where the baseline is faster: measured < 1. The end is said beside it: every candidate run ended
// below the lowest loss the baseline reached, and to any loss below that the baseline's whole run was not enough.
TEST(ConvergeSummary, ACandidateThatEndsBelowTheBaselinesLowestIsSaidBesideTheCommonTarget) {
  const auto run_with = [](double (*loss)(double), std::int64_t order) {
    TrialRecord r = run_of(32, 300, 200, 1, order);
    for (auto& p : r.result.converge->points) p.loss = loss(p.seconds);
    return r;
  };
  const auto too_high = [](double t) { return 1.8 + 3.2 * std::exp(-t / 3) + 0.4 * std::max(0.0, (t - 10) / 50); };
  const auto lower = [](double t) { return 0.5 + 4.5 * std::exp(-t / 20); };
  const std::vector<TrialRecord> runs = {run_with(too_high, 0), run_with(lower, 0), run_with(too_high, 1), run_with(lower, 1)};
  const ConvergeSummary s = summarize_converge(runs, {kBase, kCand, kRerun, kCandRerun}, header(0));
  const ConvergeComparison& c = s.comparisons.at(0);
  EXPECT_LT(c.measured, 1);  // to the common target the baseline was faster
  EXPECT_NEAR(c.candidate_final, 0.5 + 4.5 * std::exp(-3.0), 0.05);
  EXPECT_GT(c.baseline_final, 2.0);
  EXPECT_NEAR(c.late_target, 1.85, 0.1);  // the lowest the baseline reached (smoothed)
  // the candidate passes ~1.8 at 20·ln(4.5/1.3) ≈ 25 s of the 60: at least ~2.4× below it
  EXPECT_NEAR(c.late_ratio_min, 60 / (20 * std::log(4.5 / (c.late_target - 0.5))), 0.3);
  EXPECT_GT(c.late_ratio_min, 1);
  // a candidate that ends above the baseline's lowest says nothing of the end
  const std::vector<TrialRecord> same = {run_with(too_high, 0), run_with(too_high, 0)};
  EXPECT_EQ(summarize_converge(same, {kBase, kCand}, header(0)).comparisons.at(0).late_target, 0);
}

// converge --from-sweep also times the sweep's own loss from the user's start, against the arm the sweep's gain is
// relative to (the baseline at the user's batch; the rule's arm at (b)'s). Curves whose effective samples run 1.5×
// faster for the sweep's best give 1.5× there, up to the smoothing window's lag; a loss below every curve is said
// unreached; and the sentence names the sweep's checkpoint, its gain and the common target's depth.
TEST(ConvergeSummary, TheSweepsOwnLossIsTimedFromTheStartAgainstItsReferenceArm) {
  const std::vector<TrialRecord> runs = rate_arms({2e-3, 1.2}, {3e-3, 1.8});
  // The second arm against the baseline (the sweep at the user's batch, its gain 3.0× from a checkpoint at 800 samples);
  // the third against the second (a sweep centred on the rule's rate), its gain 1.5×; loss 1.5 is the sweeps' target.
  const ConvergeRunMeta rule{"rule", "candidate", 0, false, 3.0, 1.5, 800, 0},
      best{"best", "candidate", 0, false, 1.5, 1.5, 800, 1};
  const std::vector<ConvergeRunMeta> metas = {kBase, rule, best, kRerun, {"rule, data order 1", "candidate-rerun", 0, false},
                                              {"best, data order 1", "candidate-rerun", 0, false}};
  const ConvergeSummary s = summarize_converge(runs, metas, header(0));
  ASSERT_EQ(s.comparisons.size(), 2u);
  for (int k = 0; k < 2; ++k) {
    const ConvergeComparison& c = s.comparisons[k];
    EXPECT_DOUBLE_EQ(c.sweep_loss, 1.5);
    EXPECT_EQ(c.sweep_start, 800);
    EXPECT_EQ(c.sweep_reference, k == 0 ? "baseline" : "rule");
    EXPECT_EQ(c.sweep_orders, 2);
    EXPECT_NEAR(c.sweep_measured, k == 0 ? 1.2 : 1.5, 0.05 * (k == 0 ? 1.2 : 1.5)) << k;  // 1.8 ÷ 1.2 against the rule's arm
    EXPECT_LE(c.sweep_lo, c.sweep_measured + 1e-12);
    EXPECT_GE(c.sweep_hi, c.sweep_measured - 1e-12);
  }
  const std::string first = comparison_sentence(s, s.comparisons[0], [](const std::string& x) { return x; });
  EXPECT_NE(first.find("from a checkpoint after 800 samples to loss 1.5000"), std::string::npos) << first;
  EXPECT_NE(first.find("against the sweep's 3.00×"), std::string::npos) << first;
  EXPECT_NE(first.find("the sweep measured 2."), std::string::npos) << first;  // 3.0 ÷ ~1.2: the checkpoint's doing
  const std::string second = comparison_sentence(s, s.comparisons[1], [](const std::string& x) { return x; });
  EXPECT_NE(second.find("the checkpoint's start moved the gain by less than 20%"), std::string::npos) << second;
  // The common target's depth is said against the baseline only: the second arm's measured ratio is not against its reference.
  EXPECT_NE(first.find("; to the common target, deeper than the sweep's"), std::string::npos) << first;
  EXPECT_EQ(second.find("to the common target"), std::string::npos) << second;
  // A loss no curve reaches (they level off at 1): measured nothing, and said so.
  std::vector<ConvergeRunMeta> deep = metas;
  deep[1].sweep_loss = 0.5;
  const ConvergeSummary d = summarize_converge(runs, deep, header(0));
  EXPECT_EQ(d.comparisons[0].sweep_measured, 0);
  EXPECT_EQ(d.comparisons[0].sweep_orders, 0);
  EXPECT_NE(comparison_sentence(d, d.comparisons[0], [](const std::string& x) { return x; }).find("not both runs reached it"),
            std::string::npos);
  // Without a sweep nothing is said.
  const ConvergeSummary plain = summarize_converge(runs, {kBase, {"rule", "candidate", 0, false, 3.0}, {"best", "candidate", 0, false, 1.5},
                                                          kRerun, metas[4], metas[5]}, header(0));
  EXPECT_EQ(plain.comparisons[0].sweep_loss, 0);
  EXPECT_EQ(comparison_sentence(plain, plain.comparisons[0], [](const std::string& x) { return x; }).find("lr-sweep timed"),
            std::string::npos);
}

}  // namespace
}  // namespace autotune
