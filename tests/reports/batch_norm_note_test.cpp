// reports/batch_norm_note.h: converge's caveat where a model with batch norms is compared across forward batches (the
// summaries come from summarize_converge over synthetic runs, tests/support/trial_helpers.h, as converge builds them), and
// the tune report's on answer (a), the user's batch as micro-batches.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "reports/batch_norm_note.h"
#include "reports/converge_report.h"
#include "tests/support/trial_helpers.h"
#include "tuner/converge/converge.h"

namespace autotune {
namespace {

/// A run at `batch` (and `accum` micro-batches a step) whose loss falls from 5 by `speed` a second for 40 s.
TrialRecord run_of(std::int64_t batch, int accum, double speed, std::int64_t order, bool held_out = false) {
  TrialRecord r = testing::converge_record(batch, order);
  if (accum > 1) r.plan.config.set("grad_accum", std::to_string(accum));
  ConvergeRecord& c = *r.result.converge;
  for (std::int64_t s = batch * accum; static_cast<double>(s) / 400 <= 40; s += batch * accum) {
    const double t = static_cast<double>(s) / 400;
    c.points.push_back({s, t, std::max(1.0, 5 - speed * t / 10)});
  }
  if (held_out) {
    for (double t = 0; t <= 40; t += 5) c.val_points.push_back({static_cast<std::int64_t>(t * 400), t, 3 - speed * t / 40});
    c.val_samples = 256;
    c.val_source = "image folder val/ (the first 256 of 700 images, centre-cropped)";
  }
  return r;
}

ConvergeSummary header(int batch_norms, bool held_out = false) {
  ConvergeSummary h;
  h.workload.name = "resnet18";
  h.workload.default_batch_size = 32;
  h.workload.batch_norms = batch_norms;
  h.user_batch = 32;
  h.smooth_samples = 512;
  h.seconds_per_run = 40;
  if (held_out) h.held_out.every = 2000;
  return h;
}

const ConvergeRunMeta kBase{"baseline", "baseline", 0, false}, kRerun{"baseline, data order 1", "rerun", 0, false},
    kBig{"batch 128", "candidate", 0, false}, kAccum{"accumulated", "candidate", 0, false};

TEST(BatchNormNote, AForwardAtAnotherBatchOnAModelWithBatchNormsIsNamedWithWhatToCompareInstead) {
  const ConvergeSummary s =
      summarize_converge({run_of(32, 1, 1, 0), run_of(32, 1, 1, 1), run_of(128, 1, 2, 0)}, {kBase, kRerun, kBig}, header(20));
  const std::string note = batch_norm_note(s);
  EXPECT_NE(note.find("resnet18 has 20 batch norms"), std::string::npos) << note;
  EXPECT_NE(note.find("than the baseline's 32 (batch 128 at 128)"), std::string::npos) << note;
  EXPECT_NE(note.find("give --val-data"), std::string::npos) << note;  // no held-out loss was measured
  // The note is in converge.md's method paragraphs and converge.json.
  EXPECT_NE(render_converge_markdown(s).find("resnet18 has 20 batch norms"), std::string::npos);
  EXPECT_EQ(render_converge_json(s)["batch_norm_note"], note);
}

TEST(BatchNormNote, WithAHeldOutLossItPointsAtIt) {
  const ConvergeSummary s = summarize_converge({run_of(32, 1, 1, 0, true), run_of(32, 1, 1, 1, true), run_of(128, 1, 2, 0, true)},
                                               {kBase, kRerun, kBig}, header(1, true));
  ASSERT_TRUE(s.held_out.on());
  const std::string note = batch_norm_note(s);
  EXPECT_NE(note.find("resnet18 has 1 batch norm,"), std::string::npos) << note;
  EXPECT_NE(note.find("The held-out loss (below)"), std::string::npos) << note;
  EXPECT_EQ(note.find("--val-data"), std::string::npos) << note;
}

TEST(BatchNormNote, NothingWhereTheForwardSeesTheBaselinesBatchOrTheModelHasNoBatchNorm) {
  // grad_accum 4 at batch 32: the optimizer's batch is 128, each forward's still 32.
  const ConvergeSummary accum =
      summarize_converge({run_of(32, 1, 1, 0), run_of(32, 1, 1, 1), run_of(32, 4, 2, 0)}, {kBase, kRerun, kAccum}, header(20));
  ASSERT_EQ(accum.comparisons.size(), 1u);
  EXPECT_EQ(batch_norm_note(accum), "");
  EXPECT_EQ(render_converge_json(accum)["batch_norm_note"], "");
  const ConvergeSummary none =
      summarize_converge({run_of(32, 1, 1, 0), run_of(32, 1, 1, 1), run_of(128, 1, 2, 0)}, {kBase, kRerun, kBig}, header(0));
  ASSERT_EQ(none.comparisons.size(), 1u);
  EXPECT_EQ(batch_norm_note(none), "");
  EXPECT_EQ(render_converge_markdown(none).find("batch norm"), std::string::npos);
}

WorkloadInfo model(const std::string& name, int batch_norms, bool conv) {
  WorkloadInfo w;
  w.name = name;
  w.batch_norms = batch_norms;
  w.conv_model = conv;
  return w;
}

TEST(MicroBatchNote, AnswerAOnAModelWithBatchNormsNamesTheCountAndTheMicroBatch) {
  const std::string note = micro_batch_note(model("resnet18", 20, true), 32, 8);
  EXPECT_NE(note.find("answer (a) trains your batch of 32 as micro-batches of 8"), std::string::npos) << note;
  EXPECT_NE(note.find("resnet18 has 20 batch norms"), std::string::npos) << note;
  EXPECT_NE(micro_batch_note(model("mlp_bn", 1, false), 64, 16).find("mlp_bn has 1 batch norm)"), std::string::npos)
      << "counted, not guessed from convolutions: an MLP with one BatchNorm1d gets it";
  EXPECT_EQ(micro_batch_note(model("resnet18", 20, true), 32, 32), "") << "the user's own batch: nothing changes";
}

TEST(MicroBatchNote, ACnnCountedWithoutBatchNormGetsNoneAndAnUncountedOneGetsItAsACondition) {
  EXPECT_EQ(micro_batch_note(model("cnn.pt", 0, true), 32, 8), "") << "convolutions are not batch norms";
  EXPECT_EQ(micro_batch_note(model("gpt-mini", 0, false), 32, 8), "");
  const std::string unknown = micro_batch_note(model("tinycnn", -1, true), 32, 8);
  EXPECT_NE(unknown.find("tinycnn's batch norms were not counted (its worker does not say); if it has any"), std::string::npos)
      << unknown;
  EXPECT_EQ(micro_batch_note(model("plugin_mlp", -1, false), 32, 8), "");
}

TEST(MicroBatchNote, TheCountsJsonTellsNoneFromNotCounted) {
  // A describe (or a journal) from before the count has no key: not counted, so the note falls back to convolutions.
  WorkloadInfo old = nlohmann::json{{"name", "resnet18"}, {"conv_model", true}}.get<WorkloadInfo>();
  EXPECT_EQ(old.batch_norms, -1);
  EXPECT_NE(micro_batch_note(old, 32, 8), "");
  // Counted zero is written, and read back as zero.
  const nlohmann::json j = model("cnn.pt", 0, true);
  ASSERT_TRUE(j.contains("batch_norms"));
  EXPECT_EQ(j.get<WorkloadInfo>().batch_norms, 0);
  EXPECT_FALSE(nlohmann::json(model("tinycnn", -1, true)).contains("batch_norms"));
  EXPECT_EQ(nlohmann::json(model("resnet18", 20, true)).get<WorkloadInfo>().batch_norms, 20);
}

}  // namespace
}  // namespace autotune
