// Answer (c), the batch ramp (tuner/summary/batch_ramp.h), on a summary made by hand: the configs of one micro-batch at
// grad_accum 1, 2, 4 with samples/s that rise with the batch, and a noise scale that grows along the run. Where it grows
// through the batches' crossings over the bulk of the run, the ramp beats every fixed batch by more than 5% and is
// advised; where it is already past them for most samples, the ramp is listed and not advised. And the ramp priced at
// the learning rates lr-sweeps measured at two of its batches (tuner/pricing/lr_beside.h), in the reports' words.
#include "tuner/summary/batch_ramp.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "knobs/batch_ramp.h"
#include "reports/best_json.h"
#include "reports/ramp_facts.h"
#include "reports/run_facts.h"
#include "tuner/pricing/lr_beside.h"

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


LrSwept swept(const std::string& at, std::int64_t batch, double centre, double best, double gain) {
  LrSwept w;
  w.present = true;
  w.at = at;
  w.sweep_dir = "/runs/sweep-" + at;
  w.global_batch = batch;
  w.centre_lr = centre;
  w.best_lr = best;
  w.verdict = best > centre ? "too low" : "too high";
  w.gain = w.gain_lo = w.gain_hi = gain;
  return w;
}

TEST(BatchRampAnswer, PricedAtTheMeasuredRatesPhaseByPhaseInEveryOutput) {
  Case k = make(1.0, 500);
  k.s.workload.optimizer_family = "sgd";
  add_batch_ramp(k.s, k.o, 1e-3);
  const RampAnswer& r = k.s.answer_c;
  ASSERT_TRUE(r.proposed && r.phases.size() == 3u) << r.note;
  const std::vector<RampStep> rule = ramp_steps(k.s);  // before any sweep: SGD's rule, × r
  ASSERT_EQ(rule.size(), 3u);
  EXPECT_DOUBLE_EQ(rule[2].lr, r.phases[2].lr_sgd);
  // sweeps at batch 64 (your batch: ×3 the best, 1.5× sooner) and at 256 ((b): ×1/3, 2× sooner); none at 128
  LrMeasured& m = k.s.lr_measured;
  m.at_user = swept("your-batch", 64, 1e-3, 3e-3, 1.5);
  m.at_b = swept("changed-batch", 256, 4e-3, 4e-3 / 3, 2.0);
  m.b_over_a = 2.0 / 1.5;  // as read_lr_sweeps_beside prices (b) at a rule's 1×
  m.ramp = ramp_at_measured_rates(r, m);
  ASSERT_EQ(m.ramp.measured(), 2);
  EXPECT_DOUBLE_EQ(m.ramp.seconds, r.phases[0].seconds / 1.5 + r.phases[1].seconds + r.phases[2].seconds / 2.0);
  EXPECT_DOUBLE_EQ(m.ramp.vs_a, r.a_seconds / 1.5 / m.ramp.seconds);
  EXPECT_DOUBLE_EQ(m.ramp.vs_b, r.b_seconds / 2.0 / m.ramp.seconds);
  // the loop a user is given trains each swept phase at its sweep's best, the other at the rule's
  const std::vector<RampStep> steps = ramp_steps(k.s);
  EXPECT_DOUBLE_EQ(steps[0].lr, 3e-3);
  EXPECT_DOUBLE_EQ(steps[1].lr, r.phases[1].lr_sgd);
  EXPECT_DOUBLE_EQ(steps[2].lr, 4e-3 / 3);
  const std::vector<RampRow> rows = ramp_rows(k.s);
  EXPECT_NE(rows[0].lr.find("measured 0.003"), std::string::npos) << rows[0].lr;
  EXPECT_EQ(rows[1].lr.find("measured"), std::string::npos) << rows[1].lr;
  const std::string text = time_facts(k.s, [](const std::string& c) { return c; }).lr_measured;
  EXPECT_NE(text.find(fmt::format("(c), the batch ramp, priced at the measured rates — batch 64 at 0.003 (1.50× sooner), batch 128 "
                                  "at the rule's rate (no sweep at that batch), batch 256 at 0.00133 (2.00× sooner) — is predicted "
                                  "{:.2f}× (a)'s speed and {:.2f}× (b)'s",
                                  m.ramp.vs_a, m.ramp.vs_b)),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(fmt::format("(at the rule's rates: {:.2f}× and {:.2f}×, above)", r.vs_a, r.vs_b)), std::string::npos) << text;
  const nlohmann::json j = render_best_json(k.s)["time_to_train"]["learning_rate_measured"]["batch_ramp"];
  ASSERT_EQ(j["phases"].size(), 3u) << j.dump();
  EXPECT_EQ(j["phases"][1]["priced_by"], "rule");
  EXPECT_TRUE(j["phases"][1]["learning_rate"].is_null());
  EXPECT_EQ(j["phases"][2]["priced_by"], "changed-batch");
  EXPECT_DOUBLE_EQ(j["vs_changed_batch"].get<double>(), m.ramp.vs_b);
  // without a sweep at any of its batches the ramp stays at the rule's rates, and says which batches those are
  m.at_user.global_batch = 32;
  m.at_b = LrSwept{};
  m.ramp = ramp_at_measured_rates(r, m);
  EXPECT_TRUE(m.ramp.phases.empty());
  EXPECT_NE(time_facts(k.s, [](const std::string& c) { return c; })
                .lr_measured.find("(c), the batch ramp, stays priced at the rule's rates: no sweep prices a batch it trains at (64, 128, 256)"),
            std::string::npos);
}

// The ramp's loop moves the rate by the optimizer's rule: × r for SGD-like, × √r for Adam-like (the built-ins' AdamW
// too); an optimizer that is neither keeps the user's rate in every phase, as (b)'s hint gives it no rule, and its row
// says so with both rules' rates beside it.
TEST(BatchRampAnswer, EachPhasesRateFollowsTheOptimizersRuleOrKeepsTheUsersRate) {
  Case k = make(1.0, 500);
  add_batch_ramp(k.s, k.o, 1e-3);
  const RampAnswer& r = k.s.answer_c;
  ASSERT_TRUE(r.proposed && r.phases.size() == 3u) << r.note;
  ASSERT_GT(r.phases[2].lr_gain, 1.0);
  for (const auto& [family, want] : std::vector<std::pair<std::string, double>>{
           {"sgd", r.phases[2].lr_sgd}, {"adam", r.phases[2].lr_adam}, {"", r.phases[2].lr_adam}, {"unknown", 1e-3}}) {
    k.s.workload.optimizer_family = family;
    k.s.workload.optimizer = family == "unknown" ? "Adafactor" : "";
    const std::vector<RampStep> steps = ramp_steps(k.s);
    ASSERT_EQ(steps.size(), 3u) << family;
    EXPECT_DOUBLE_EQ(steps[2].lr, want) << family;
    const std::string row = ramp_rows(k.s)[2].lr;
    EXPECT_EQ(row.find("kept: Adafactor has no rule") != std::string::npos, family == "unknown") << family << ": " << row;
  }
  EXPECT_NE(r.phases[2].lr_sgd, r.phases[2].lr_adam);  // the rules differ here, so each case above tells them apart
}

}  // namespace
}  // namespace autotune
