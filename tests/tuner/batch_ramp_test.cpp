// Answer (c), the batch ramp (tuner/summary/batch_ramp.h), on a summary made by hand: the configs of one micro-batch at
// grad_accum 1, 2, 4 with samples/s that rise with the batch, and a noise scale that grows along the run. Where it grows
// through the batches' crossings over the bulk of the run, the ramp beats every fixed batch by more than 5% and is
// advised; where it is already past them for most samples, the ramp is listed and not advised.
#include "tuner/summary/batch_ramp.h"

#include <gtest/gtest.h>

#include <cmath>

#include "knobs/batch_ramp.h"

namespace autotune {
namespace {

ConfigSummary at_accum(int accum, double samples_per_s) {
  ConfigSummary c;
  if (accum > 1) c.config.set("grad_accum", std::to_string(accum));
  c.eligible = true;
  c.status = TrialStatus::ok;
  c.median = samples_per_s;
  c.batch_size = 64;
  c.global_batch = 64 * accum;
  return c;
}

/// B(e) = b_end · (e / run)^exponent over a run of 1e6 samples at batch 64, with (b) the 256 config.
struct Case {
  RunSummary s;
  Objective o;
};
Case make(double exponent, double b_end) {
  Case k;
  RunSummary& s = k.s;
  s.by_time = true;
  s.user_batch = 64;
  s.configs = {at_accum(1, 1000), at_accum(2, 1800), at_accum(4, 2600)};
  s.configs[0].is_baseline = true;
  s.baseline = 0;
  s.answer_a = 0;
  s.answer_b.config = 2;
  s.answer_b.global_batch = 256;
  NoiseScaleSummary& n = s.noise_scale;
  n.measured = n.usable = n.over_run = true;
  n.run_samples = 1e6;
  n.growth.fitted = true;
  n.growth.pivot = std::log(1e6);
  n.growth.log_b_at_pivot = std::log(b_end);
  n.growth.exponent = exponent;
  n.growth.lo = exponent - 0.1;
  n.growth.hi = exponent + 0.1;
  NoiseGrowthCurve c;
  c.pivot = n.growth.pivot;
  c.log_b_at_pivot = n.growth.log_b_at_pivot;
  c.exponent = exponent;
  n.value = run_mean_noise_scale(c, 64, 1e6);
  n.lo = 0.8 * n.value;
  n.hi = 1.25 * n.value;
  k.o = Objective(ObjectiveKind::time, 64, n);
  return k;
}

TEST(BatchRampAnswer, GrowthThroughTheCrossingsOverTheRunIsAdvised) {
  Case k = make(1.0, 500);
  add_batch_ramp(k.s, k.o, 1e-3);
  const RampAnswer& r = k.s.answer_c;
  ASSERT_TRUE(r.proposed) << r.note;
  ASSERT_EQ(r.phases.size(), 3u);
  EXPECT_EQ(r.phases[0].global_batch, 64);
  EXPECT_EQ(r.phases[1].grad_accum, 2);
  EXPECT_EQ(r.phases[2].global_batch, 256);
  EXPECT_NEAR(r.a_seconds, 1e3, 1e-6);  // 1e6 samples at 1,000/s
  EXPECT_GT(r.vs_b, kRampMinGain);
  EXPECT_GT(r.vs_a, r.vs_b);  // 256 beats 64 over this run
  EXPECT_TRUE(r.advised);
  // The learning rate rises at each switch and is the user's in the first phase, at the user's batch.
  EXPECT_DOUBLE_EQ(r.phases[0].lr_adam, 1e-3);
  EXPECT_GT(r.phases[1].lr_adam, r.phases[0].lr_adam);
  EXPECT_GT(r.phases[2].lr_adam, r.phases[1].lr_adam);
  EXPECT_NEAR(r.phases[2].lr_sgd, 1e-3 * r.phases[2].lr_gain, 1e-12);
}

TEST(BatchRampAnswer, NoiseAlreadyLargeForMostSamplesGivesARampNotWorthIt) {
  Case k = make(0.5, 2000);  // √growth: past every crossing after the first few percent of the samples
  add_batch_ramp(k.s, k.o, 1e-3);
  const RampAnswer& r = k.s.answer_c;
  ASSERT_TRUE(r.proposed) << r.note;
  EXPECT_LT(r.vs_b, kRampMinGain);
  EXPECT_GE(r.vs_b, 1 - 1e-3);  // never worse than the family's own fixed batch at B̄
  EXPECT_FALSE(r.advised);
}

TEST(BatchRampAnswer, WithoutTwoGradAccumOfOneConfigThereIsNone) {
  Case k = make(1.0, 500);
  k.s.configs[1].config.set("batch_size", "32");  // the three configs are now of two families, one with one batch
  k.s.configs[2].config.set("batch_size", "16");
  add_batch_ramp(k.s, k.o, 1e-3);
  EXPECT_FALSE(k.s.answer_c.proposed);
  EXPECT_NE(k.s.answer_c.note.find("no config was measured at two grad_accum"), std::string::npos) << k.s.answer_c.note;
}

TEST(BatchRampAnswer, ANoiseScaleNotPricedAlongTheRunGivesNone) {
  Case k = make(1.0, 500);
  k.s.noise_scale.over_run = false;
  k.s.noise_scale.over_run_note = "measured from your weights";
  k.o = Objective(ObjectiveKind::time, 64, k.s.noise_scale);
  add_batch_ramp(k.s, k.o, 1e-3);
  EXPECT_FALSE(k.s.answer_c.proposed);
  EXPECT_EQ(k.s.answer_c.note, "the noise scale was not priced along the run (measured from your weights)");
}

}  // namespace
}  // namespace autotune
