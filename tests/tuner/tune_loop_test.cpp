// The tune loop on the fake executor (tests/support/fake_executor.h): no worker process, no waiting. What the loop
// itself decides — the order of phases, what runs alone, how a parallel search hands out slots and reads results
// that come back out of order, what the journal keeps — checked in milliseconds.
#include <gtest/gtest.h>

#include <sstream>

#include "tests/support/fake_executor.h"
#include "tests/support/temp_dir.h"
#include "tuner/measures/journal.h"
#include "tuner/tune/tune.h"

namespace autotune {
namespace {

WorkloadInfo workload() {
  WorkloadInfo w;
  w.name = "mlp";
  w.default_batch_size = 64;
  w.flops_per_sample = 1e6;
  w.loss = "cross_entropy";
  w.data = "none";
  return w;
}

EnvFingerprint cpu_host() {
  EnvFingerprint e;
  e.hostname = "fake";
  e.cpu_cores = 2;
  e.torch_version = "2.11.0";
  return e;
}

/// A separable landscape: fused AdamW is 1.3×, a batch of 256 1.5× (samples/s), nothing else matters.
TrialResult landscape(const TrialPlan& p, TrialKind) {
  const std::int64_t batch = std::stoll(p.config.get("batch_size", "64"));
  double rate = 1000;
  if (p.config.get("optimizer_impl", "loop") == "fused") rate *= 1.3;
  if (batch == 256) rate *= 1.5;
  return testing::steady_result(p, rate, batch);
}

TuneOptions options(const testing::TempDir& dir, int slots) {
  TuneOptions o;
  o.worker = "/nonexistent/autotune-worker";  // never started: the seams answer for it
  o.out_dir = dir / "run";
  o.objective = ObjectiveKind::throughput;
  o.baseline_defaults = "catalog";
  o.space.add_assignment("batch_size=64,256");
  o.space.add_assignment("optimizer_impl=loop,fused");
  o.exec.parallel = slots;
  o.exec.pin = false;
  o.strategy.other_batches = false;
  return o;
}

/// A tune of the 2 × 2 grid in `slots` slots on the fake executor; its winner's batch size and AdamW implementation.
struct FakeRun {
  TuneOutcome outcome;
  std::shared_ptr<testing::FakeExecutor::Stats> executor = std::make_shared<testing::FakeExecutor::Stats>();
  std::string log;
  std::string winner(const std::string& knob) const {
    return outcome.summary.winner < 0 ? "(none)" : outcome.summary.configs[outcome.summary.winner].config.get(knob);
  }
};
FakeRun run_fake(const testing::TempDir& dir, int slots, testing::FakeExecutor::Measure measure, bool lifo = false) {
  FakeRun f;
  std::ostringstream log;
  f.outcome = run_tune(options(dir, slots), log, testing::fake_seams(workload(), cpu_host(), slots, measure, lifo, f.executor));
  f.log = log.str();
  return f;
}

TEST(TuneLoop, ASerialGridOnTheFakeExecutorFindsTheOptimumAndJournalsEveryTrial) {
  testing::TempDir dir;
  const FakeRun f = run_fake(dir, 1, landscape);
  const TuneOutcome& r = f.outcome;
  EXPECT_EQ(f.winner("batch_size"), "256") << f.log;
  EXPECT_EQ(f.winner("optimizer_impl"), "fused");
  const testing::FakeExecutor::Stats& ex = *f.executor;
  EXPECT_EQ(ex.most_in_flight, 1);  // serial: one trial at a time
  const auto trials = Journal(dir / "run/journal.sqlite").trials();
  EXPECT_EQ(static_cast<int>(trials.size()), ex.started);
  EXPECT_EQ(trials.front().kind, TrialKind::baseline);
  EXPECT_NEAR(r.summary.speedup, 1.95, 0.01);  // 1.3 × 1.5, from the interleaved confirmation's windows
}

TEST(TuneLoop, TwoSlotsWithResultsComingBackOutOfOrderGiveTheSerialVerdicts) {
  testing::TempDir dir;
  const FakeRun f = run_fake(dir, 2, landscape, /*lifo=*/true);
  EXPECT_EQ(f.winner("batch_size"), "256") << f.log;
  EXPECT_EQ(f.winner("optimizer_impl"), "fused");
  EXPECT_EQ(f.executor->most_in_flight, 2);  // the search ran two at once
  int beside = 0, finalists_beside = 0;
  for (const auto& t : Journal(dir / "run/journal.sqlite").trials()) {
    ASSERT_TRUE(t.result.placement);
    EXPECT_EQ(t.result.placement->slots, 2);
    if (!t.result.placement->alone()) {
      ++beside;
      if (t.kind == TrialKind::confirm || t.kind == TrialKind::reference || t.kind == TrialKind::baseline) ++finalists_beside;
    }
  }
  EXPECT_GT(beside, 0);
  EXPECT_EQ(finalists_beside, 0);  // the baseline and the confirmation ran alone
  EXPECT_EQ(f.outcome.summary.configs.size(), 4u);  // each config measured once
}

TEST(TuneLoop, AFailedTrialIsARecordedVerdictAndTheSearchGoesOn) {
  testing::TempDir dir;
  const auto failing = [](const TrialPlan& p, TrialKind k) {
    TrialResult r = landscape(p, k);
    if (p.config.get("batch_size") == "256" && p.config.get("optimizer_impl") == "fused") {
      r = TrialResult{};
      r.status = TrialStatus::oom;
      r.message = "out of memory (fake)";
    }
    return r;
  };
  const FakeRun f = run_fake(dir, 1, failing);
  EXPECT_EQ(f.winner("batch_size"), "256") << f.log;  // 1.5× without fused: the best config that ran
  EXPECT_EQ(f.winner("optimizer_impl"), "loop");
  bool oom_listed = false;
  for (const auto& c : f.outcome.summary.configs)
    if (c.status == TrialStatus::oom) oom_listed = !c.eligible;
  EXPECT_TRUE(oom_listed);
}

}  // namespace
}  // namespace autotune
