// The learning-rate sweep's rule (tuner/pricing/lr_sweep.h): the horizon, each arm's status and loss, when it widens,
// and the verdict with its time ratio — on curves whose shape the test sets.
#include "tuner/pricing/lr_sweep.h"

#include <gtest/gtest.h>

#include "reports/lr_sweep_report.h"

#include <cmath>
#include <functional>
#include <limits>

namespace autotune {
namespace {

constexpr std::int64_t kBatch = 32, kHorizon = 32 * 100;

/// A curve of 100 steps of 32 samples, one second a step, the loss at each step's end given by `loss(samples)`.
std::vector<CurvePoint> curve(const std::function<double(double)>& loss, int steps = 100) {
  std::vector<CurvePoint> c;
  for (int i = 1; i <= steps; ++i) c.push_back({i * kBatch, static_cast<double>(i), loss(static_cast<double>(i * kBatch))});
  return c;
}

/// Plain descent whose pace grows with the rate up to a point: the loss falls from 2 linearly at `pace` per horizon
/// (never below a floor of 0.2); `offset` is a data order's own noise.
LrRun descent(double multiple, double pace, std::int64_t order = 0, double offset = 0) {
  return {multiple, order, curve([=](double s) { return std::max(0.2, 2 - pace * 1.5 * s / kHorizon) + offset; }), {}};
}

TEST(LrSweep, FromACheckpointTheHorizonIsAShareOfTheRunPastTheBurnIn) {
  LrSweepRule rule;
  rule.from_start = false;
  const LrHorizon h = plan_lr_horizon(1'000'000, 1024, rule);
  EXPECT_EQ(h.burn_in_samples, 50'000);
  EXPECT_EQ(h.horizon_samples, 100'000);
  EXPECT_EQ(h.why, "burn-in 5% of the run (50,000 samples) at your rate, then 10% of it (100,000 samples) at each rate");
  // A short run: the horizon never falls below 8 smoothing windows, and says so.
  const LrHorizon s = plan_lr_horizon(40'000, 1024, rule);
  EXPECT_EQ(s.horizon_samples, 8 * 1024);
  EXPECT_NE(s.why.find("raised to 8 smoothing windows (8,192 samples)"), std::string::npos) << s.why;
  // No run length: the windows alone, and the missing share is named.
  const LrHorizon u = plan_lr_horizon(0, 1024, rule);
  EXPECT_EQ(u.burn_in_samples, 2048);
  EXPECT_EQ(u.horizon_samples, 8192);
  EXPECT_NE(u.why.find("--run-length"), std::string::npos) << u.why;
  // The cost: the burn-in's run and its samples, then 4 rates × 2 orders of the horizon's.
  EXPECT_DOUBLE_EQ(lr_sweep_seconds(h, rule, 2, 1000, 3), 9 * 3 + (50'000 + 8 * 100'000) / 1000.0);
}

TEST(LrSweep, FromTheStartEveryRateEndsWhereTheCheckpointsArmsWouldEnd) {
  const LrSweepRule rule;  // the default: every arm from the user's own start
  ASSERT_TRUE(rule.from_start);
  const LrHorizon h = plan_lr_horizon(1'000'000, 1024, rule);
  EXPECT_EQ(h.burn_in_samples, 0);
  EXPECT_EQ(h.horizon_samples, 150'000);
  EXPECT_EQ(h.why, "every rate from your run's start for 15% of the run (150,000 samples)");
  // A short run: 5% and then 8 smoothing windows, as the checkpoint's arms would have trained.
  const LrHorizon s = plan_lr_horizon(40'000, 1024, rule);
  EXPECT_EQ(s.burn_in_samples, 0);
  EXPECT_EQ(s.horizon_samples, 2'000 + 8 * 1024);
  EXPECT_NE(s.why.find("raised to 10,192 samples: the first 5%, then 8 smoothing windows"), std::string::npos) << s.why;
  const LrHorizon u = plan_lr_horizon(0, 1024, rule);
  EXPECT_EQ(u.burn_in_samples, 0);
  EXPECT_EQ(u.horizon_samples, 10 * 1024);
  EXPECT_NE(u.why.find("for 10 smoothing windows (10,240 samples)"), std::string::npos) << u.why;
  // No burn-in run: 8 runs of the horizon's samples.
  EXPECT_DOUBLE_EQ(lr_sweep_seconds(h, rule, 2, 1000, 3), 8 * 3 + 8 * 150'000 / 1000.0);
}

TEST(LrSweep, ArmsAreJudgedAtTheHorizonAndFailuresAreNamed) {
  std::vector<LrRun> runs = {descent(1, 1, 0), descent(1, 1, 1, 0.02), descent(3, 2, 0), descent(3, 2, 1, 0.01)};
  runs.push_back({10, 0, curve([](double s) { return s > 1000 ? std::numeric_limits<double>::quiet_NaN() : 2.0; }), {}});
  runs.push_back({30, 0, curve([](double s) { return 2 + s / 100; }), {}});  // climbs far above the checkpoint's 2
  runs.push_back({0.1, 0, curve([](double) { return 1.9; }, 50), {}});       // ended at half the horizon
  const auto arms = judge_lr_arms(runs, 2.0, kHorizon, kBatch, LrSweepRule{});
  ASSERT_EQ(arms.size(), 5u);
  EXPECT_DOUBLE_EQ(arms[0].multiple, 0.1);
  EXPECT_EQ(arms[0].status, "short");
  EXPECT_EQ(arms[1].status, "ok");
  EXPECT_EQ(arms[1].orders, 2);
  EXPECT_NEAR(arms[1].loss, 0.5 + 0.01, 1e-9);  // 2 − 1.5 at the horizon, the two orders' mean
  EXPECT_NEAR(arms[1].loss_lo, 0.5, 1e-9);
  EXPECT_NEAR(arms[1].loss_hi, 0.52, 1e-9);
  EXPECT_EQ(arms[2].status, "ok");
  EXPECT_NEAR(arms[2].loss, 0.2 + 0.005, 1e-9);  // at the floor
  EXPECT_EQ(arms[3].status, "non_finite");
  EXPECT_EQ(arms[4].status, "diverged");
}

TEST(LrSweep, ItWidensWhileTheBestSitsAtAnEnd) {
  const LrSweepRule rule;
  EXPECT_EQ(next_lr_multiples({}, rule), rule.start_multiples);
  auto judged = [&](std::vector<double> paces) {  // one arm per multiple, a faster pace = a lower loss
    std::vector<LrRun> runs;
    const std::vector<double> ms = {1.0 / 27, 1.0 / 9, 1.0 / 3, 1, 3, 10, 30, 90};
    for (std::size_t i = 0; i < ms.size(); ++i)
      if (paces[i] >= 0) runs.push_back(descent(ms[i], paces[i]));
    return judge_lr_arms(runs, 2.0, kHorizon, kBatch, rule);
  };
  // The best is ×10, the highest tried: try ×30.
  auto next = next_lr_multiples(judged({-1, -1, 0.2, 0.4, 0.6, 0.8, -1, -1}), rule);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_NEAR(next[0], 30, 1e-9);
  // ×30 was better still: ×90, the second and last widening up.
  next = next_lr_multiples(judged({-1, -1, 0.2, 0.4, 0.6, 0.8, 0.9, -1}), rule);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_NEAR(next[0], 90, 1e-9);
  EXPECT_TRUE(next_lr_multiples(judged({-1, -1, 0.2, 0.4, 0.6, 0.8, 0.9, 0.95}), rule).empty());
  // The best inside the range: done.
  EXPECT_TRUE(next_lr_multiples(judged({-1, -1, 0.2, 0.9, 0.6, 0.3, -1, -1}), rule).empty());
  // The best is the lowest: lower.
  next = next_lr_multiples(judged({-1, -1, 0.9, 0.6, 0.4, 0.2, -1, -1}), rule);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_NEAR(next[0], 1.0 / 9, 1e-9);
  // Every rate diverged: lower, twice at most; a run cut short is no reason to.
  std::vector<LrRun> blown;
  for (double m : {1.0 / 3, 1.0, 3.0, 10.0}) blown.push_back({m, 0, curve([](double s) { return 2 + s; }), {}});
  next = next_lr_multiples(judge_lr_arms(blown, 2.0, kHorizon, kBatch, rule), rule);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_NEAR(next[0], 1.0 / 9, 1e-9);
  std::vector<LrRun> cut = {{1, 0, curve([](double) { return 1.0; }, 10), {}}};
  EXPECT_TRUE(next_lr_multiples(judge_lr_arms(cut, 2.0, kHorizon, kBatch, rule), rule).empty());
}

TEST(LrSweep, TheGainIsTimedAtThreeDepthsAndWhichWayItMovedIsSaid) {
  // ×1 falls on a line, 2 − s/H; ×3 as 2 − 1.2·√(s/H), so it reaches ×1's loss at depth D after H·(D/1.2H)² samples:
  // a gain of 1.44·H/D — 4.32× at a third of the horizon, 2.16× at two thirds, 1.44× at the horizon.
  const double h = static_cast<double>(kHorizon);
  std::vector<LrRun> runs = {{1, 0, curve([=](double s) { return 2 - s / h; }), {}},
                             {3, 0, curve([=](double s) { return 2 - 1.2 * std::sqrt(s / h); }), {}}};
  const LrVerdict v = judge_lr_sweep(judge_lr_arms(runs, 2.0, kHorizon, kBatch, LrSweepRule{}), runs, kHorizon, kBatch);
  ASSERT_EQ(v.verdict, "too low");
  ASSERT_EQ(v.by_depth.size(), 3u);
  EXPECT_EQ(v.by_depth[0].samples, kHorizon / 3);
  EXPECT_EQ(v.by_depth[1].samples, 2 * kHorizon / 3);
  EXPECT_EQ(v.by_depth[2].samples, kHorizon);
  EXPECT_NEAR(v.by_depth[0].gain, 4.32, 0.65);  // the curves are read at 32-sample steps
  EXPECT_NEAR(v.by_depth[1].gain, 2.16, 0.2);
  EXPECT_DOUBLE_EQ(v.by_depth[2].gain, v.gain);
  EXPECT_NEAR(v.gain, 1.44, 0.1);
  LrSweepSummary s;
  s.verdict = v;
  s.run_samples = 10 * h;
  const std::string md = render_lr_sweep_markdown(s);
  EXPECT_NE(md.find("(3.3% of your run)"), std::string::npos) << md;
  EXPECT_NE(md.find("the gain shrank with depth: to a loss deeper into your run it is likely smaller"), std::string::npos) << md;
  // ×1 on a root that stalls (2 − 0.8·√(s/H)) and ×3 on the line: a gain of √(D/H)/0.8 that grows, from 0.72× at a
  // third of the horizon (×3 behind there) to 1.25×; equal paces hold.
  std::vector<LrRun> grows = {{1, 0, curve([=](double s) { return 2 - 0.8 * std::sqrt(s / h); }), {}},
                              {3, 0, curve([=](double s) { return 2 - s / h; }), {}}};
  s.verdict = judge_lr_sweep(judge_lr_arms(grows, 2.0, kHorizon, kBatch, LrSweepRule{}), grows, kHorizon, kBatch);
  ASSERT_EQ(s.verdict.by_depth.size(), 3u);
  EXPECT_NEAR(s.verdict.by_depth[0].gain, 0.72, 0.1);
  EXPECT_NEAR(s.verdict.by_depth[2].gain, 1.25, 0.1);
  EXPECT_NE(render_lr_sweep_markdown(s).find("the gain grew with depth"), std::string::npos);
  std::vector<LrRun> holds = {descent(1, 1), descent(3, 2)};
  s.verdict = judge_lr_sweep(judge_lr_arms(holds, 2.0, kHorizon, kBatch, LrSweepRule{}), holds, kHorizon, kBatch);
  EXPECT_NE(render_lr_sweep_markdown(s).find("the gain held within 10% over the horizon"), std::string::npos);
}

TEST(LrSweep, ARateTooLowIsSaidWithTheTimeToTheUsersLoss) {
  // ×3 descends twice as fast as ×1 and reaches ×1's final loss (0.5) in half the time on both orders; ×10 diverges.
  std::vector<LrRun> runs = {descent(1, 1, 0),       descent(1, 1, 1, 0.01),   descent(3, 2, 0),
                             descent(3, 2, 1, 0.01), descent(1.0 / 3, 0.5, 0), descent(1.0 / 3, 0.5, 1, 0.01)};
  runs.push_back({10, 0, curve([](double s) { return 2 + s / 100; }), {}});
  const auto arms = judge_lr_arms(runs, 2.0, kHorizon, kBatch, LrSweepRule{});
  const LrVerdict v = judge_lr_sweep(arms, runs, kHorizon, kBatch);
  EXPECT_EQ(v.verdict, "too low");
  EXPECT_DOUBLE_EQ(v.best_multiple, 3);
  EXPECT_FALSE(v.best_at_end);     // ×10 above it was tried (and diverged)
  EXPECT_NEAR(v.gain, 2.0, 0.03);  // 100 steps against 50 (one step's granularity)
  EXPECT_LE(v.gain_lo, v.gain);
  EXPECT_GE(v.gain_hi, v.gain);
  EXPECT_NE(v.reason.find("×3 reached 0.205"), std::string::npos) << v.reason;
  EXPECT_NE(v.reason.find("(2 data orders)"), std::string::npos) << v.reason;
}

TEST(LrSweep, TheTimeRatioIsCountedInSamplesNotInTheHostsSpeed) {
  // The same curves as above, but ×3's runs met a host three times slower: its seconds triple, its samples do not.
  std::vector<LrRun> runs = {descent(1, 1, 0), descent(1, 1, 1, 0.01), descent(3, 2, 0), descent(3, 2, 1, 0.01)};
  for (LrRun& r : runs)
    if (r.multiple == 3)
      for (CurvePoint& p : r.curve) p.seconds *= 3;
  const LrVerdict v = judge_lr_sweep(judge_lr_arms(runs, 2.0, kHorizon, kBatch, LrSweepRule{}), runs, kHorizon, kBatch);
  EXPECT_EQ(v.verdict, "too low");
  EXPECT_NEAR(v.gain, 2.0, 0.03);
}

TEST(LrSweep, ADifferenceWithinTheSpreadIsAboutRight) {
  // ×3 ends 0.02 lower on average, but the orders of each arm differ by 0.1: within the run-to-run spread.
  std::vector<LrRun> runs = {descent(1, 1, 0), descent(1, 1, 1, 0.1), descent(3, 1.0 + 0.04 / 1.5, 0),
                             descent(3, 1.0 + 0.04 / 1.5, 1, 0.1)};
  const auto arms = judge_lr_arms(runs, 2.0, kHorizon, kBatch, LrSweepRule{});
  const LrVerdict v = judge_lr_sweep(arms, runs, kHorizon, kBatch);
  EXPECT_EQ(v.verdict, "about right");
  EXPECT_DOUBLE_EQ(v.gain, 1);
  EXPECT_NE(v.reason.find("within the run-to-run spread"), std::string::npos) << v.reason;
  // The user's own rate best: about right, said so.
  std::vector<LrRun> own = {descent(1, 1, 0), descent(3, 0.5, 0)};
  EXPECT_EQ(judge_lr_sweep(judge_lr_arms(own, 2.0, kHorizon, kBatch, LrSweepRule{}), own, kHorizon, kBatch).reason,
            "your rate reached the lowest loss at the horizon (0.5)");
}

TEST(LrSweep, AUsersRateThatDivergesIsTooHighWithNoTimeRatio) {
  std::vector<LrRun> runs = {{1, 0, curve([](double s) { return 2 + s / 100; }), {}}, descent(1.0 / 3, 1, 0)};
  const auto arms = judge_lr_arms(runs, 2.0, kHorizon, kBatch, LrSweepRule{});
  const LrVerdict v = judge_lr_sweep(arms, runs, kHorizon, kBatch);
  EXPECT_EQ(v.verdict, "too high");
  EXPECT_NEAR(v.best_multiple, 1.0 / 3, 1e-12);
  EXPECT_TRUE(v.best_at_end);
  EXPECT_EQ(v.gain, 0);
  EXPECT_NE(v.reason.find("×1/3 reached 0.5"), std::string::npos) << v.reason;
  // Nothing trained: said, with each rate's status; the user's rate never trained: not judged.
  std::vector<LrRun> none = {{1, 0, curve([](double s) { return 2 + s; }), {}}};
  EXPECT_EQ(judge_lr_sweep(judge_lr_arms(none, 2.0, kHorizon, kBatch, LrSweepRule{}), none, kHorizon, kBatch).verdict,
            "no rate trained");
  std::vector<LrRun> other = {descent(3, 1, 0)};
  EXPECT_EQ(judge_lr_sweep(judge_lr_arms(other, 2.0, kHorizon, kBatch, LrSweepRule{}), other, kHorizon, kBatch).verdict,
            "not judged");
}

TEST(LrSweep, ALowerMeanThatMissesTheUsersLossOnOneOrderIsNotAWin) {
  // Three orders: ×3 ends lower on average by more than the spread, but on order 2 it stalls above ×1's loss there.
  std::vector<LrRun> runs = {descent(1, 1, 0, 0.5), descent(1, 1, 1, 0.5), descent(1, 1, 2), descent(3, 2, 0), descent(3, 2, 1)};
  runs.push_back({3, 2, curve([](double) { return 0.6; }), {}});
  const auto arms = judge_lr_arms(runs, 2.0, kHorizon, kBatch, LrSweepRule{});
  const LrVerdict v = judge_lr_sweep(arms, runs, kHorizon, kBatch);
  EXPECT_EQ(v.verdict, "about right");
  EXPECT_DOUBLE_EQ(v.gain, 1);
  EXPECT_NE(v.reason.find("not your rate's loss on data order 2"), std::string::npos) << v.reason;
}

TEST(LrSweep, HeldOutLossesAgreeOrDifferWithTheTrainingLossesBest) {
  // ×3 trains fastest (too low, ×3 best); each run's held-out loss at the checkpoint (1.0) and at the horizon.
  std::vector<LrRun> runs = {descent(1, 1, 0), descent(1, 1, 1, 0.01), descent(3, 2, 0), descent(3, 2, 1, 0.01)};
  runs.push_back({10, 0, curve([](double s) { return 2 + s / 100; }), {}});  // diverged: never ranked held out
  const auto held = [&](double at1, double at3) {
    for (LrRun& r : runs)
      r.held_out = {{0, 0, 1.0}, {kHorizon, 1, r.multiple == 1 ? at1 : r.multiple == 3 ? at3 : 0.1}};
    const auto arms = judge_lr_arms(runs, 2.0, kHorizon, kBatch, LrSweepRule{});
    return judge_lr_held_out(arms, runs, judge_lr_sweep(arms, runs, kHorizon, kBatch), kHorizon, "the task's val_dataset()", 512);
  };
  const LrHeldOut agrees = held(0.9, 0.7);
  EXPECT_TRUE(agrees.on());
  EXPECT_EQ(agrees.arms.size(), 2u);  // ×10 diverged on the training loss: not ranked, whatever its held-out loss
  EXPECT_DOUBLE_EQ(agrees.best_multiple, 3);
  EXPECT_TRUE(agrees.agrees);
  EXPECT_DOUBLE_EQ(agrees.start_loss, 1.0);
  EXPECT_NE(agrees.reason.find("on held-out data too the training loss's best (×3)"), std::string::npos) << agrees.reason;
  const LrHeldOut differs = held(0.7, 0.9);
  EXPECT_DOUBLE_EQ(differs.best_multiple, 1);
  EXPECT_FALSE(differs.agrees);
  EXPECT_NE(differs.reason.find("the best at the horizon is ×1 (0.7), not the training loss's best (×3: 0.9"), std::string::npos)
      << differs.reason;
  // Within the spread: ×1 lower by 0.01 on average, its orders 0.1 apart — the training loss's best still agrees.
  for (LrRun& r : runs) r.held_out = {{0, 0, 1.0}, {kHorizon, 1, r.multiple == 1 ? (r.data_order ? 0.75 : 0.65) : 0.71}};
  const auto arms = judge_lr_arms(runs, 2.0, kHorizon, kBatch, LrSweepRule{});
  const LrHeldOut close = judge_lr_held_out(arms, runs, judge_lr_sweep(arms, runs, kHorizon, kBatch), kHorizon, "v", 512);
  EXPECT_DOUBLE_EQ(close.best_multiple, 1);
  EXPECT_TRUE(close.agrees) << close.reason;
  // The training loss's best (×3) without a held-out evaluation: nothing to compare, and it does not say "agrees".
  for (LrRun& r : runs) r.held_out = r.multiple == 3 ? std::vector<CurvePoint>{} : std::vector<CurvePoint>{{0, 0, 1.0}, {kHorizon, 1, 0.8}};
  const LrHeldOut none = judge_lr_held_out(arms, runs, judge_lr_sweep(arms, runs, kHorizon, kBatch), kHorizon, "v", 512);
  EXPECT_TRUE(none.on());
  EXPECT_FALSE(none.compared);
  EXPECT_NE(none.reason.find("the training loss's best, ×3, has no held-out loss to compare"), std::string::npos) << none.reason;
  EXPECT_TRUE(close.compared);
  // No held-out evaluation in any run: not judged on held-out data.
  for (LrRun& r : runs) r.held_out.clear();
  EXPECT_FALSE(judge_lr_held_out(arms, runs, LrVerdict{}, kHorizon, "", 0).on());
}


TEST(LrSweep, TheHeadlineOfALowerLossThatWasNoSoonerSaysSo) {
  LrSweepSummary s;
  s.user_lr = 0.05;
  s.verdict.verdict = "too high";
  s.verdict.best_multiple = 1.0 / 27;
  s.verdict.best_at_end = true;
  s.verdict.gain = 1.001;
  s.verdict.gain_lo = 0.98;
  s.verdict.gain_hi = 1.02;
  EXPECT_EQ(lr_sweep_headline(s),
            "Your learning rate 0.05 is too high by the loss at the horizon: ×1/27 (0.00185) ended lower, but reached your "
            "rate's loss no sooner (1.00×, 0.98–1.02× over the data orders); the best is the widest rate tried, so a better "
            "one may lie further out.");
  s.verdict.gain = s.verdict.gain_lo = s.verdict.gain_hi = 1.5;  // sooner: the time ratio is the headline
  s.verdict.best_at_end = false;
  EXPECT_EQ(lr_sweep_headline(s), "Your learning rate 0.05 is too high: ×1/27 (0.00185) reached its loss 1.50× sooner (1.50–1.50×).");
}

}  // namespace
}  // namespace autotune
