// What `autotune converge` concludes from the runs' held-out losses (tuner/converge/held_out.h, add_held_out through
// summarize_converge): synthetic runs whose training curves and held-out curves are set apart, so that the fastest to
// the training loss and the fastest to the held-out loss can differ. Checks each candidate's held-out ratio at the lowest
// loss both sides reached (interpolated between evaluations), an arm that stopped above the baseline's lowest held-out
// loss never being the held-out winner, the verdict and its words, and converge.json's held_out.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "reports/converge_report.h"
#include "reports/held_out_report.h"
#include "tests/support/trial_helpers.h"
#include "tuner/converge/converge.h"

namespace autotune {
namespace {

/// A run at `batch` and `samples_per_s` for 60 s whose training loss is 5 − speed·t/20 (floored at 1) and whose held-out
/// loss, evaluated every 5 s of training, is `held(t)`.
TrialRecord run_of(std::int64_t batch, double samples_per_s, double speed, const std::function<double(double)>& held,
                   std::int64_t order) {
  TrialRecord r = testing::converge_record(batch, order);
  ConvergeRecord& c = *r.result.converge;
  for (std::int64_t s = batch; static_cast<double>(s) / samples_per_s <= 60; s += batch) {
    const double t = static_cast<double>(s) / samples_per_s;
    c.points.push_back({s, t, std::max(1.0, 5 - speed * t / 20)});
  }
  for (double t = 0; t <= 60; t += 5) c.val_points.push_back({static_cast<std::int64_t>(t * samples_per_s), t, held(t)});
  c.val_samples = 256;
  c.val_seconds = 1.5;
  c.val_source = "the task's val_dataset() (TensorDataset, 1,000 samples)";
  return r;
}

ConvergeSummary header() {
  ConvergeSummary h;
  h.user_batch = 32;
  h.smooth_samples = 256;
  h.seconds_per_run = 60;
  h.held_out.every = 512;
  return h;
}

const ConvergeRunMeta kBase{"baseline", "baseline", 0, false}, kRerun{"baseline, data order 1", "rerun", 0, false},
    kFast{"fast", "candidate", 0, false}, kSteady{"steady", "candidate", 0, false};

// The baseline: held-out 2 − t/60 (order 1: 2 − t/58), down to about 1 at its end. "fast" trains 3× the baseline's
// speed but its held-out loss turns at 1.5 (t = 10 s) and rises: it stops above the baseline's lowest. "steady" trains
// 1.5× as fast and its held-out loss falls as 2 − t/40, to 0.5.
std::vector<TrialRecord> runs() {
  return {run_of(32, 300, 1, [](double t) { return 2 - t / 60; }, 0),
          run_of(32, 300, 1, [](double t) { return 2 - t / 58; }, 1),
          run_of(64, 600, 3, [](double t) { return t <= 10 ? 2 - t / 20 : 1.5 + (t - 10) / 100; }, 0),
          run_of(32, 450, 1.5, [](double t) { return 2 - t / 40; }, 0)};
}

TEST(HeldOutSummary, TheFastestToTheTrainingLossIsNotTheFastestToTheHeldOutLossWhenItStopsAbove) {
  const ConvergeSummary s = summarize_converge(runs(), {kBase, kRerun, kFast, kSteady}, header());
  const HeldOutSummary& h = s.held_out;
  ASSERT_TRUE(h.on());
  EXPECT_EQ(h.samples, 256);
  EXPECT_EQ(h.every, 512);
  EXPECT_DOUBLE_EQ(h.eval_seconds, 4 * 1.5);
  ASSERT_EQ(h.runs.size(), 4u);
  EXPECT_NEAR(h.runs[2].lowest, 1.5, 1e-12);
  EXPECT_NEAR(h.runs[2].final_loss, 2.0, 1e-12);  // 1.5 + 50/100: it rose again
  EXPECT_NEAR(h.runs[2].lowest_at, 10, 1e-12);
  EXPECT_NEAR(h.latest_lowest_share, 1, 0.01);  // the baseline was lowest at its end: no "trained past it" sentence
  ASSERT_EQ(s.comparisons.size(), 2u);
  ASSERT_EQ(h.comparisons.size(), 2u);
  // "fast" against the baseline, at the lowest both reached: 1.5, the baseline at 30 s (order 0) and 29 s (order 1),
  // "fast" at 10 s: 2.95× sooner — yet it stopped there, a third above the baseline's lowest
  const HeldOutComparison& fast = h.comparisons[0];
  EXPECT_NEAR(fast.target, 1.5, 1e-12);
  EXPECT_NEAR(fast.baseline_time, 30, 1e-9);  // paired: the baseline's order 0, the order "fast" trained on
  EXPECT_NEAR(fast.candidate_time, 10, 1e-9);
  EXPECT_NEAR(fast.measured, 3, 1e-9);
  EXPECT_TRUE(fast.stopped_above);
  // "steady": the lowest both reached is the baseline's (order 0: 1.0 at 60 s; order 1: 2 − 60/58 = 0.9655); the
  // higher, 1.0, reached by "steady" at 40 s
  const HeldOutComparison& steady = h.comparisons[1];
  EXPECT_NEAR(steady.target, 1.0, 1e-12);
  EXPECT_NEAR(steady.candidate_time, 40, 1e-9);
  EXPECT_NEAR(steady.measured, 60.0 / 40, 1e-9);
  EXPECT_FALSE(steady.stopped_above);
  // the verdict: "fast" wins the training race (3×), "steady" the held-out one (1.5×), beyond the spread
  EXPECT_EQ(h.fastest_train, "fast");
  EXPECT_NEAR(h.fastest_train_ratio, s.comparisons[0].measured, 1e-12);
  EXPECT_GT(h.fastest_train_ratio, 2.5);
  EXPECT_EQ(h.fastest_held_out, "steady");
  EXPECT_TRUE(h.differ);
  EXPECT_TRUE(h.beyond_spread);
  const std::vector<std::string> text = held_out_sentences(s);
  ASSERT_GE(text.size(), 4u);
  EXPECT_NE(text[1].find("is not the fastest to the held-out loss: steady is (1.50×)"), std::string::npos) << text[1];
  EXPECT_NE(text[1].find("stayed above the baseline's"), std::string::npos) << text[1];
  EXPECT_NE(text[2].find("stopped improving on held-out data"), std::string::npos) << text[2];
  const auto j = render_converge_json(s)["held_out"];
  EXPECT_EQ(j["fastest"]["held_out"]["run"], "steady");
  EXPECT_TRUE(j["fastest"]["differ"].get<bool>());
  EXPECT_EQ(j["runs"][2]["points"].size(), 13u);
  EXPECT_NE(render_converge_markdown(s).find("## Held-out loss"), std::string::npos);
  // the table's column times every run to the baseline runs' common 1.0, which "fast" never reached; its ratio above
  // is timed to 1.5: the note says the table's loss and that a ratio may use another
  EXPECT_NEAR(h.target, 1.0, 1e-12);
  const std::string note = held_out_table_note(s);
  EXPECT_NE(note.find("The table times every run to 1.0000"), std::string::npos) << note;
  EXPECT_NE(note.find("which is another loss where the candidate did not reach this one"), std::string::npos) << note;
  const std::string md = render_converge_markdown(s);
  EXPECT_LT(md.find(note), md.find("| run | lowest held-out loss |"));
}

TEST(HeldOutSummary, WhenOneArmLeadsOnBothLossesTheVerdictSaysSoAndRunsWithoutOneHaveNoSection) {
  std::vector<TrialRecord> r = runs();
  r.pop_back();  // without "steady", "fast" is the only candidate — and it stopped above, so the baseline wins held-out
  ConvergeSummary s = summarize_converge(r, {kBase, kRerun, kFast}, header());
  EXPECT_EQ(s.held_out.fastest_held_out, "the baseline");
  EXPECT_TRUE(s.held_out.differ);
  r = runs();
  r.erase(r.begin() + 2);  // without "fast": "steady" leads on both
  s = summarize_converge(r, {kBase, kRerun, kSteady}, header());
  EXPECT_FALSE(s.held_out.differ);
  EXPECT_NE(held_out_sentences(s)[1].find("The fastest to the training loss, steady ("), std::string::npos);
  EXPECT_NE(held_out_sentences(s)[1].find("is also the fastest to the held-out loss (1.50×)"), std::string::npos)
      << held_out_sentences(s)[1];
  // "steady"'s ratio is timed to the table's own loss: the note names that loss and nothing else
  EXPECT_EQ(held_out_table_note(s).find("another loss"), std::string::npos) << held_out_table_note(s);
  EXPECT_NE(held_out_table_note(s).find("The table times every run to 1.0000"), std::string::npos);
  for (auto& x : r) {
    x.result.converge->val_points.clear();
    x.result.converge->val_source.clear();
  }
  s = summarize_converge(r, {kBase, kRerun, kSteady}, header());
  EXPECT_FALSE(s.held_out.on());
  EXPECT_TRUE(held_out_sentences(s).empty());
  EXPECT_TRUE(held_out_table_note(s).empty());
  EXPECT_TRUE(render_converge_json(s)["held_out"].is_null());
  EXPECT_EQ(render_converge_markdown(s).find("## Held-out loss"), std::string::npos);
}

TEST(HeldOutSummary, ALossBothReachedOnlyAtTheStartTimesNothingAndNamesNoFastest) {
  // every run's held-out loss rises from the first evaluation on (it fits the training data without generalising): the
  // lowest both reached after the start is above where they started, so no held-out ratio and no held-out winner
  const auto rising = [](double t) { return 0.7 + t / 100; };
  const std::vector<TrialRecord> r = {run_of(32, 300, 1, rising, 0), run_of(32, 300, 1, rising, 1),
                                      run_of(64, 600, 3, rising, 0)};
  const ConvergeSummary s = summarize_converge(r, {kBase, kRerun, kFast}, header());
  ASSERT_EQ(s.held_out.comparisons.size(), 1u);
  const HeldOutComparison& c = s.held_out.comparisons[0];
  EXPECT_NEAR(c.target, 0.75, 1e-12);  // the first evaluation after the start
  EXPECT_NEAR(c.start, 0.7, 1e-12);
  EXPECT_TRUE(c.never_improved);
  EXPECT_EQ(c.measured, 0);
  EXPECT_EQ(s.held_out.measured, 0);
  EXPECT_FALSE(s.held_out.differ);
  const std::vector<std::string> text = held_out_sentences(s);
  ASSERT_EQ(text.size(), 4u);
  // every run was lowest at its first evaluation after the start, 5 s into 60: trained far past it, and said so
  EXPECT_NEAR(s.held_out.latest_lowest_share, 5.0 / s.runs[0].seconds, 1e-9);
  EXPECT_NE(text[1].find("within the first 9% of its training"), std::string::npos) << text[1];
  EXPECT_NE(text[2].find("no arm is named the fastest"), std::string::npos) << text[2];
  EXPECT_NE(text[3].find("never improved on held-out data"), std::string::npos) << text[3];
}

}  // namespace
}  // namespace autotune
