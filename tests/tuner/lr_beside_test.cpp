// An lr-sweep's answer beside the tune run it swept (tuner/pricing/lr_beside.h): written and read back, an earlier one kept
// under its date, one of another batch than the run's now names left out in one line, an unreadable one too; answer (c),
// the batch ramp, priced at the rates the sweeps measured, phase by phase.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/temp_dir.h"
#include "tuner/pricing/lr_beside.h"

namespace autotune {
namespace {

namespace fs = std::filesystem;

LrSweepSummary sweep(const std::string& at, std::int64_t batch, const std::string& verdict, double best, double gain) {
  LrSweepSummary s;
  s.at = at;
  s.global_batch = batch;
  s.user_lr = 1e-3;
  s.out_dir = "/runs/sweep-" + at;
  if (at == "changed-batch") s.rule = "r = 2";
  s.verdict.verdict = verdict;
  s.verdict.best_multiple = best;
  s.verdict.gain = s.verdict.gain_lo = s.verdict.gain_hi = gain;
  return s;
}

TEST(LrBeside, BothSweepsReadBackAndPriceTheirBatches) {
  testing::TempDir dir;
  write_lr_sweep_beside(dir.str(), sweep("your-batch", 32, "too low", 3, 1.4), "2026-11-29T10:00:00Z");
  write_lr_sweep_beside(dir.str(), sweep("changed-batch", 128, "about right", 3, 1), "2026-11-29T11:00:00Z");
  const LrMeasured m = read_lr_sweeps_beside(dir.str(), 32, 128, 0.8);
  EXPECT_TRUE(m.refused.empty()) << m.refused;
  EXPECT_DOUBLE_EQ(m.b_over_a, 0.8 * 1 / 1.4);  // the rule's 0.8× × (b)'s gain ÷ (a)'s
  ASSERT_TRUE(m.at_user.present);
  EXPECT_TRUE(m.at_user.prices());
  EXPECT_DOUBLE_EQ(m.at_user.best_lr, 3e-3);
  EXPECT_DOUBLE_EQ(m.at_user.gain, 1.4);
  ASSERT_TRUE(m.at_b.present);
  EXPECT_TRUE(m.at_b.prices());
  EXPECT_DOUBLE_EQ(m.at_b.best_lr, 1e-3);  // about right: the rate swept around, not the arm within the spread
  EXPECT_EQ(m.at_b.sweep_dir, "/runs/sweep-changed-batch");
}

TEST(LrBeside, ADivergedCentreDoesNotPrice) {
  testing::TempDir dir;
  write_lr_sweep_beside(dir.str(), sweep("your-batch", 32, "too high", 1.0 / 3, 0), "2026-11-29T10:00:00Z");
  const LrMeasured m = read_lr_sweeps_beside(dir.str(), 32, 0, 0);
  EXPECT_TRUE(m.at_user.present);
  EXPECT_FALSE(m.at_user.prices());
}

TEST(LrBeside, ASecondSweepKeepsTheFirstUnderItsDate) {
  testing::TempDir dir;
  write_lr_sweep_beside(dir.str(), sweep("your-batch", 32, "too low", 3, 1.4), "2026-11-29T10:00:00Z");
  write_lr_sweep_beside(dir.str(), sweep("your-batch", 32, "too low", 10, 2.0), "2026-11-29T12:00:00Z");
  EXPECT_TRUE(fs::exists(dir / "lr-sweep-your-batch-2026-11-29T10-00-00Z.json"));
  EXPECT_DOUBLE_EQ(read_lr_sweeps_beside(dir.str(), 32, 0, 0).at_user.gain, 2.0);
}

TEST(LrBeside, ASweepOfAnotherBatchOrUnreadableIsLeftOutInOneLine) {
  testing::TempDir dir;
  write_lr_sweep_beside(dir.str(), sweep("changed-batch", 128, "too low", 3, 1.5), "2026-11-29T10:00:00Z");
  LrMeasured m = read_lr_sweeps_beside(dir.str(), 32, 64, 0);  // a resumed tune moved (b) to 64
  EXPECT_FALSE(m.at_b.present);
  EXPECT_NE(m.refused.find("swept global batch 128, not answer (b)'s (64); left out"), std::string::npos) << m.refused;
  EXPECT_EQ(m.refused.find('\n'), std::string::npos);
  std::ofstream(dir / "lr-sweep-your-batch.json") << "{ not json";
  m = read_lr_sweeps_beside(dir.str(), 32, 128, 0);
  EXPECT_FALSE(m.at_user.present);
  EXPECT_TRUE(m.at_b.present);
  EXPECT_NE(m.refused.find("lr-sweep-your-batch.json is unreadable"), std::string::npos) << m.refused;
}


/// A ramp 32 → 64 → 128 priced at the rule's rates: 100 s, 60 s and 40 s a phase; (a) 300 s, (b) 250 s over the run.
RampAnswer ramp_32_64_128() {
  RampAnswer r;
  r.proposed = true;
  for (const auto& [batch, seconds] : {std::pair<std::int64_t, double>{32, 100}, {64, 60}, {128, 40}}) {
    RampPhaseSummary p;
    p.global_batch = batch;
    p.seconds = seconds;
    r.phases.push_back(p);
  }
  r.seconds = 200;
  r.a_seconds = 300;
  r.b_seconds = 250;
  r.vs_a = 1.5;
  r.vs_b = 1.25;
  return r;
}

TEST(LrBeside, TheRampAtTheMeasuredRatesMovesEachSweptPhaseByItsSweepsGain) {
  testing::TempDir dir;
  write_lr_sweep_beside(dir.str(), sweep("your-batch", 32, "too high", 1.0 / 3, 2.0), "2026-11-29T10:00:00Z");
  write_lr_sweep_beside(dir.str(), sweep("changed-batch", 128, "too low", 3, 1.25), "2026-11-29T11:00:00Z");
  const LrMeasured m = read_lr_sweeps_beside(dir.str(), 32, 128, 1.2);
  const RampAtMeasured q = ramp_at_measured_rates(ramp_32_64_128(), m);
  ASSERT_EQ(q.phases.size(), 3u);
  EXPECT_EQ(q.measured(), 2);
  EXPECT_EQ(q.phases[0].priced_by, "your-batch");
  EXPECT_DOUBLE_EQ(q.phases[0].lr, 1e-3 / 3);
  EXPECT_DOUBLE_EQ(q.phases[0].seconds, 50);  // 100 s ÷ 2.0
  EXPECT_EQ(q.phases[1].priced_by, "");       // batch 64: no sweep there, the rule's rate
  EXPECT_DOUBLE_EQ(q.phases[1].lr, 0);
  EXPECT_DOUBLE_EQ(q.phases[1].seconds, 60);
  EXPECT_EQ(q.phases[2].priced_by, "changed-batch");
  EXPECT_DOUBLE_EQ(q.phases[2].lr, 3e-3);
  EXPECT_DOUBLE_EQ(q.phases[2].seconds, 32);  // 40 s ÷ 1.25
  EXPECT_DOUBLE_EQ(q.seconds, 142);
  EXPECT_DOUBLE_EQ(q.vs_a, 300 / 2.0 / 142);   // (a) at its own measured rate too
  EXPECT_DOUBLE_EQ(q.vs_b, 250 / 1.25 / 142);  // and (b) at its
}

TEST(LrBeside, TheRampStaysAtTheRulesRatesWhereNoSweepPricesABatchOfIt) {
  testing::TempDir dir;
  RampAnswer r = ramp_32_64_128();
  EXPECT_TRUE(ramp_at_measured_rates(r, read_lr_sweeps_beside(dir.str(), 32, 128, 1.2)).phases.empty());  // no sweep
  write_lr_sweep_beside(dir.str(), sweep("your-batch", 32, "too high", 1.0 / 3, 0), "2026-11-29T10:00:00Z");  // diverged
  EXPECT_TRUE(ramp_at_measured_rates(r, read_lr_sweeps_beside(dir.str(), 32, 128, 1.2)).phases.empty());
  r.phases.front().global_batch = 16;  // a sweep that prices, but at no batch of the ramp
  write_lr_sweep_beside(dir.str(), sweep("your-batch", 32, "too low", 3, 1.5), "2026-11-29T11:00:00Z");
  EXPECT_TRUE(ramp_at_measured_rates(r, read_lr_sweeps_beside(dir.str(), 32, 128, 1.2)).phases.empty());
  r.proposed = false;
  EXPECT_TRUE(ramp_at_measured_rates(r, read_lr_sweeps_beside(dir.str(), 32, 128, 1.2)).phases.empty());
}

TEST(LrBeside, AnAboutRightSweepPricesItsPhaseAtTheRateItSweptAround) {
  testing::TempDir dir;
  write_lr_sweep_beside(dir.str(), sweep("your-batch", 32, "about right", 3, 1), "2026-11-29T10:00:00Z");
  const RampAtMeasured q = ramp_at_measured_rates(ramp_32_64_128(), read_lr_sweeps_beside(dir.str(), 32, 0, 0));
  ASSERT_EQ(q.measured(), 1);
  EXPECT_DOUBLE_EQ(q.phases[0].lr, 1e-3);
  EXPECT_DOUBLE_EQ(q.seconds, 200);
  EXPECT_DOUBLE_EQ(q.vs_a, 1.5);
  EXPECT_DOUBLE_EQ(q.vs_b, 1.25);  // no sweep at (b): its rule's time
}

}  // namespace
}  // namespace autotune
