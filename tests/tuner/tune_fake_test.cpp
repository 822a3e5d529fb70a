// The tuner end to end against fake-worker: a known separable objective, injected failures, budget,
// and resume. Real processes, no LibTorch.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <thread>
#include <set>
#include <sstream>

#include "tests/support/cli_process.h"
#include "tests/support/journal_poll.h"
#include "tests/support/expect_throw_msg.h"
#include "tests/support/temp_dir.h"
#include "knobs/error.h"
#include "tuner/converge/converge.h"
#include "tuner/pricing/lr_beside.h"
#include "tuner/cli.h"
#include "tuner/measures/journal.h"
#include "tuner/exec/run_lock.h"
#include "tuner/exec/subprocess.h"
#include "reports/reporter.h"
#include "reports/run_facts.h"
#include "tuner/summary/summarize.h"
#include "tuner/tune/tune.h"
#include "knobs/protocol.h"

namespace autotune {
namespace {

namespace fs = std::filesystem;

class FakeEnv {
 public:
  explicit FakeEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const char* v : kVars) unsetenv(v);
    for (const auto& [k, v] : vars) setenv(k, v, 1);
  }
  ~FakeEnv() {
    for (const char* v : kVars) unsetenv(v);
  }
  static constexpr const char* kVars[] = {"FAKE_OOM_ABOVE", "FAKE_NAN",  "FAKE_DIVERGE",    "FAKE_NOISY",
                                          "FAKE_CRASH",     "FAKE_HANG", "FAKE_SLEEP",      "FAKE_DRIFT_AFTER",
                                          "FAKE_COUNTER",   "FAKE_CUDA", "FAKE_IGNORE_TERM", "FAKE_WINDOW_NOISE",
                                          "FAKE_TOKENS",    "FAKE_NOISE_SCALE", "FAKE_NOISY_TRIALS", "FAKE_BUSY_TRIALS",
                                          "FAKE_BUSY_FACTOR", "FAKE_BUSY", "FAKE_SLOW_TRIALS", "FAKE_SLOW_FACTOR",
                                          "FAKE_ZERO_GRAD", "FAKE_INTERACT", "FAKE_GPU_BUSY", "FAKE_NOISE_GROWTH",
                                          "FAKE_NOISE_JITTER", "FAKE_ACCUM_GAIN", "FAKE_INPUT_BOUND"};
};

std::string fake_worker() { return testing::binary_dir() + "/bin/fake-worker"; }

TuneOptions options(const testing::TempDir& dir, const std::string& strategy, std::vector<std::string> knobs) {
  TuneOptions o;
  o.worker = fake_worker();
  o.out_dir = dir / "run";
  o.strategy.name = strategy;
  o.budget_seconds = 300;
  o.objective = ObjectiveKind::throughput;  // the strategies' tests: the fake objective's landscape is samples/s (time: TimeObjective below)
  o.baseline_defaults = "catalog";  // and its baseline the catalog's first values (PyTorch's sourced ones: SourcedBaseline below)
  o.strategy.other_batches = false;
  o.stability.max_quiet_wait = 0;  // the fake worker's busy trials are fiction: the real host is not waited for
  for (const auto& k : knobs) o.space.add_assignment(k);
  return o;
}

const ConfigSummary& winner(const TuneOutcome& r) {
  EXPECT_GE(r.summary.winner, 0);
  return r.summary.configs.at(r.summary.winner);
}

const std::vector<std::string> kSeparable = {"batch_size=64,128,256", "precision=fp32,amp_bf16",
                                             "optimizer_impl=loop,foreach,fused", "zero_grad=zeros,none"};

TEST(TuneFake, CoordinateDescentFindsTheSeparableOptimumWithFewerTrialsThanTheGrid) {
  FakeEnv env({});
  testing::TempDir dir;
  std::ostringstream log;
  const auto r = run_tune(options(dir, "coordinate", kSeparable), log);
  const Config& w = winner(r).config;
  EXPECT_EQ(w.get("batch_size"), "256") << log.str();
  EXPECT_EQ(w.get("precision"), "amp_bf16");
  EXPECT_EQ(w.get("optimizer_impl"), "fused");
  EXPECT_EQ(w.get("zero_grad"), "none");
  EXPECT_LT(r.summary.configs.size(), 3u * 2 * 3 * 2);  // the grid has 36
  EXPECT_GT(r.summary.speedup, 2.0);
  // amp_bf16 won only after its fp32 twin's loss trajectory agreed.
  bool checked = false;
  for (const auto& c : winner(r).checks)
    if (c.name == "loss vs fp32 reference") checked = c.passed;
  EXPECT_TRUE(checked) << log.str();
}

TEST(TuneFake, AProposalThatWouldFallBackRunsOnceAsTheConfigItReallyIs) {
  // cuda_graphs=on needs fused AdamW (knobs/resolve.cpp): the grid's (on, loop) is (off, loop) in truth,
  // so it is folded into that config before anything runs — no trial of it, and the report says why.
  FakeEnv env({{"FAKE_CUDA", "1"}});
  testing::TempDir dir;
  std::ostringstream log;
  const auto r = run_tune(options(dir, "grid", {"cuda_graphs=off,on", "optimizer_impl=loop,fused"}), log);
  const fs::path run = fs::path(dir / "run");
  Journal journal((run / "journal.sqlite").string());
  for (const auto& t : journal.trials())
    EXPECT_FALSE(t.plan.config.get("cuda_graphs") == "on" && t.plan.config.get("optimizer_impl") == "loop")
        << t.plan.config.key();
  ASSERT_EQ(r.summary.folded.size(), 1u) << log.str();
  const FoldedConfig& f = r.summary.folded[0];
  EXPECT_EQ(f.proposed.key(), "cuda_graphs=on optimizer_impl=loop");
  EXPECT_EQ(f.runs_as.key(), "cuda_graphs=off optimizer_impl=loop");
  ASSERT_EQ(f.reasons.size(), 1u);
  EXPECT_EQ(f.reasons[0], "cuda_graphs=on: needs optimizer_impl=fused (its step counters live on the device); ran with off");
  std::set<std::string> measured;
  for (const auto& c : r.summary.configs) measured.insert(c.config.key());
  EXPECT_EQ(measured, (std::set<std::string>{"cuda_graphs=off optimizer_impl=loop", "cuda_graphs=off optimizer_impl=fused",
                                             "cuda_graphs=on optimizer_impl=fused"}));
  const std::string md = read_file((run / "report.md").string());
  // One table: the config it ran as, what did not apply on top of it, and why.
  EXPECT_NE(md.find("| `(baseline)` | `cuda_graphs=on` | cuda_graphs: needs optimizer_impl=fused (its step counters live on "
                    "the device) |"),
            std::string::npos)
      << md;
  // The regenerated report reads the same from the journal.
  EXPECT_EQ(load_run_summary(run.string()).folded.size(), 1u);
}

TEST(TuneFake, HalvingKeepsTheBest) {
  FakeEnv env({});
  testing::TempDir dir;
  std::ostringstream log;
  const auto r = run_tune(options(dir, "halving", {"batch_size=32,64,128,256", "optimizer_impl=loop,fused"}), log);
  EXPECT_EQ(winner(r).config.get("batch_size"), "256") << log.str();
  EXPECT_EQ(winner(r).config.get("optimizer_impl"), "fused");
  // Later rounds measured the survivors with longer windows.
  bool longer = false;
  for (const auto& c : r.summary.configs) longer = longer || c.window_scale > 1;
  EXPECT_TRUE(longer) << log.str();
}

TEST(TuneFake, AutoSearchesBatchSizeUpToOomAndRefines) {
  FakeEnv env({{"FAKE_OOM_ABOVE", "512"}});
  testing::TempDir dir;
  std::ostringstream log;
  auto o = options(dir, "auto", {"batch_size=64", "precision=fp32,amp_bf16", "optimizer_impl=loop,fused"});
  const auto r = run_tune(o, log);
  std::set<std::string> batches;
  bool saw_oom = false;
  for (const auto& c : r.summary.configs) {
    batches.insert(c.config.get("batch_size"));
    saw_oom = saw_oom || c.status == TrialStatus::oom;
  }
  EXPECT_TRUE(batches.count("128") && batches.count("256") && batches.count("512") && batches.count("1024")) << log.str();
  EXPECT_TRUE(saw_oom);
  EXPECT_EQ(winner(r).config.get("batch_size"), "512");  // the largest that runs: throughput still rises there
  EXPECT_EQ(winner(r).config.get("precision"), "amp_bf16");
}

TEST(TuneFake, WithoutAListedSpaceNoConfigOversubscribesTheCoresAndAListedOneRunsAsListed) {
  // The fake host has 2 cores: ranks=2 × threads=2 would run 4 threads on them.
  FakeEnv env({});
  for (const bool listed : {false, true}) {
    testing::TempDir dir;
    std::ostringstream log;
    auto o = options(dir, "grid", {"ranks=1,2", "threads=1,2"});
    o.user_space = listed;  // false: as when the space is the strategy's own (no --knobs/--space)
    const auto r = run_tune(o, log);
    std::set<std::string> measured;
    for (const auto& c : r.summary.configs) measured.insert(c.config.diff_key(r.summary.configs.at(r.summary.baseline).config));
    if (!listed) {
      EXPECT_FALSE(measured.count("ranks=2 threads=2")) << log.str();
      EXPECT_TRUE(measured.count("ranks=2")) << log.str();  // threads=default: the worker gives each rank cores ÷ ranks
      EXPECT_NE(log.str().find("2 ranks × 2 threads would oversubscribe 2 cores"), std::string::npos) << log.str();
    } else {
      EXPECT_TRUE(measured.count("ranks=2 threads=2")) << log.str();
    }
  }
}

TEST(TuneFake, AutoKeepsItsBatchSearchOnTheSizesTheUserListed) {
  // Throughput still rises past 256, but the user listed 64, 96 and 256: auto walks those and nothing else
  // (an open-ended search would have measured 512 and 1024, a refinement 176).
  FakeEnv env({});
  testing::TempDir dir;
  std::ostringstream log;
  auto o = options(dir, "auto", {"batch_size=256,64,96", "precision=fp32,amp_bf16"});
  const auto r = run_tune(o, log);
  std::set<std::string> batches;
  for (const auto& c : r.summary.configs) batches.insert(c.config.get("batch_size"));
  EXPECT_EQ(batches, (std::set<std::string>{"64", "96", "256"})) << log.str();
  EXPECT_EQ(winner(r).config.get("batch_size"), "256");
  // Resumed runs keep the bound: it is stored with the run's options.
  Journal j((fs::path(dir / "run") / "journal.sqlite").string());
  TuneOptions stored;
  options_from_json(nlohmann::json::parse(j.meta("options")), stored);
  EXPECT_EQ(stored.strategy.batch_values, (std::vector<std::int64_t>{64, 96, 256}));
}

TEST(TuneFake, KnobEffectsAreMeasuredInTheSameRoundsAsTheHeadlineAndTheReportRegeneratesFromTheJournal) {
  FakeEnv env({});
  testing::TempDir dir;
  std::ostringstream log;
  // After the confirmation, the effect rounds: the winner, the winner with each changed knob reverted and the
  // baseline, one run each per round, interleaved; every effect and the headline come from those rounds.
  const auto r = run_tune(options(dir, "coordinate", kSeparable), log);
  const RunSummary& s = r.summary;
  ASSERT_GE(s.winner, 0);
  ASSERT_EQ(s.knob_effects.size(), 4u) << log.str();  // batch_size, precision, optimizer_impl, zero_grad
  const Config& w = s.configs[s.winner].config;
  for (const auto& e : s.knob_effects) {
    EXPECT_TRUE(e.at_default) << e.knob << ": " << e.note;
    EXPECT_EQ(e.rounds, 2) << e.knob;  // --confirm-rounds 2: one run per round
    EXPECT_FALSE(e.beyond_bound) << e.knob << ": " << e.note;
    EXPECT_GT(e.lo, 1.0) << e.knob;  // the fake objective rewards every winning value
    Config expect = w;
    expect.set(e.knob, s.configs[s.baseline].config.get(e.knob));
    EXPECT_EQ(e.without, expect) << e.knob;
  }
  // The same rounds hold the winner and the baseline twice each (one per round) and the headline pools them.
  const std::string journal = read_file(r.out_dir + "/report.md");
  EXPECT_NE(s.speedup_basis.find("confirmation and effect-round runs"), std::string::npos) << s.speedup_basis;
  // The fake objective multiplies the knobs' factors: their effects add up to the whole.
  ASSERT_TRUE(s.effects_together.measured) << log.str();
  EXPECT_FALSE(s.effects_together.interact) << s.effects_together.line;
  EXPECT_NEAR(s.effects_together.product / s.effects_together.together, 1.0, 0.03) << s.effects_together.line;
  EXPECT_NE(journal.find("they add up"), std::string::npos) << journal;
  EXPECT_NE(log.str().find("effect    "), std::string::npos) << log.str();
  // Effect-round runs make no rows of the configs table (a reverted config is there only when the search measured it).
  for (const auto& e : s.knob_effects) {
    if (e.without_config >= 0) {
      EXPECT_NE(s.configs[e.without_config].phase, "effect");
    }
  }
  // Traced trials of winner and baseline: their profiles reach the summary, the winner's verdict
  // replaces the host-time one, and the trace files are in traces/.
  ASSERT_EQ(s.profiles.size(), 2u);
  EXPECT_EQ(s.profiles[0].label, "winner");
  EXPECT_EQ(s.profiles[1].label, "baseline");
  EXPECT_TRUE(fs::exists(r.out_dir + "/traces/winner.json"));
  EXPECT_TRUE(fs::exists(r.out_dir + "/traces/baseline.json"));
  EXPECT_EQ(s.verdict.kind, "compute-bound");
  EXPECT_NE(s.verdict.basis.find("host phase times of 5 traced steps"), std::string::npos) << s.verdict.basis;
  EXPECT_NE(read_file(r.out_dir + "/report.md").find("### Profile of the winner (host-only, 5 traced steps)"), std::string::npos);
  // `autotune report` rebuilds the same summary from the journal alone: identical files.
  const RunSummary again = load_run_summary(r.out_dir);
  for (const auto& rep : all_reporters())
    EXPECT_EQ(rep->render(again), read_file(r.out_dir + "/" + rep->file_name())) << rep->file_name();
}

TEST(TuneFake, KnobsThatInteractAreSaidToWithHowMuch) {
  // amp_bf16 and fused pay 1.3× more together than apart: each effect (the other held at the winner's) is 1.3× its
  // own factor, so the effects multiply to 1.3× what the whole gives in the same rounds. Through the CLI: the console
  // and the report say it in the same words.
  FakeEnv env({{"FAKE_INTERACT", "precision=amp_bf16,optimizer_impl=fused,1.3"}});
  testing::TempDir dir;
  std::ostringstream out, err;
  ASSERT_EQ(run_cli({"tune", "--worker", fake_worker(), "--knobs", "precision=fp32,amp_bf16", "optimizer_impl=loop,fused",
                     "--objective", "throughput", "--strategy", "grid", "--budget", "300", "--out", dir / "run"},
                    out, err),
            0)
      << err.str();
  const RunSummary s = load_run_summary(dir / "run");
  ASSERT_GE(s.winner, 0);
  ASSERT_EQ(s.configs[s.winner].config.get("optimizer_impl"), "fused") << out.str();
  ASSERT_EQ(s.knob_effects.size(), 2u) << out.str();
  const EffectsTogether& t = s.effects_together;
  ASSERT_TRUE(t.measured) << out.str();
  EXPECT_TRUE(t.interact) << t.line;
  EXPECT_NEAR(t.product / t.together, 1.3, 0.05) << t.line;
  EXPECT_NE(t.line.find("the knobs interact — together they give 2"), std::string::npos) << t.line;  // 23% ± noise
  EXPECT_NE(t.line.find("% less than their effects multiplied"), std::string::npos) << t.line;
  EXPECT_NE(read_file(dir / "run/report.md").find(t.line), std::string::npos);
  EXPECT_NE(out.str().find(t.line), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("precision: fp32 → amp_bf16: "), std::string::npos) << out.str();
  // The headline figures too: the console's lines are the report's, word for word (only the markdown's code spans differ).
  const Headline h = headline(s, [](const std::string& x) { return x; });
  const std::string md = read_file(dir / "run/report.md");
  EXPECT_NE(out.str().find("\nwinner: " + h.winner + "\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("\nspeedup over the baseline: " + h.speedup + "\n"), std::string::npos) << out.str();
  EXPECT_NE(md.find("**Speedup over the baseline:** " + h.speedup), std::string::npos) << md;
  const Headline hm = headline(s, [](const std::string& x) { return "`" + x + "`"; });
  EXPECT_NE(md.find("**Winner:** " + hm.winner), std::string::npos) << md;
}

TEST(TuneFake, AnEffectBeyondItsKnobsMechanismIsMeasuredAgainBeforeItIsShown) {
  // zero_grad=none at 1.6×: more than skipping one fill of the gradients can give (bound 1.25×).
  FakeEnv env({{"FAKE_ZERO_GRAD", "1.6"}});
  testing::TempDir dir;
  std::ostringstream log;
  const auto r = run_tune(options(dir, "coordinate", kSeparable), log);
  const RunSummary& s = r.summary;
  ASSERT_GE(s.winner, 0);
  const auto e = std::find_if(s.knob_effects.begin(), s.knob_effects.end(), [](const KnobEffect& k) { return k.knob == "zero_grad"; });
  ASSERT_NE(e, s.knob_effects.end()) << log.str();
  EXPECT_TRUE(e->beyond_bound) << e->note;
  EXPECT_TRUE(e->remeasured) << e->note;
  EXPECT_EQ(e->rounds, 4);  // two effect rounds, then two more runs
  EXPECT_NE(log.str().find("zero_grad=zeros: its effect lies beyond what the knob's mechanism allows here; measuring it again"),
            std::string::npos)
      << log.str();
  EXPECT_NE(e->note.find("beyond what the mechanism allows on this device (at most 1.25× either way"), std::string::npos) << e->note;
  EXPECT_NE(e->note.find("measured again with the same result"), std::string::npos) << e->note;
  // The others are within their bounds (none has one here but zero_grad): measured once per round.
  for (const auto& k : s.knob_effects)
    if (k.knob != "zero_grad") {
      EXPECT_FALSE(k.beyond_bound) << k.knob;
    }
  EXPECT_NE(read_file(r.out_dir + "/report.md").find("measured again with the same result"), std::string::npos);
}

TEST(TuneFake, EffectiveBatchHoldsBatchTimesAccumulation) {
  FakeEnv env({});
  testing::TempDir dir;
  std::ostringstream log;
  auto o = options(dir, "auto", {"batch_size=64"});
  o.strategy.effective_batch = 256;
  const auto r = run_tune(o, log);
  for (const auto& c : r.summary.configs)
    EXPECT_EQ(std::stoll(c.config.get("batch_size")) * std::stoll(c.config.get("grad_accum")), 256) << c.config.key();
}

TEST(TuneFake, EachFailureClassIsRecordedAndTheSearchGoesOn) {
  FakeEnv env({{"FAKE_OOM_ABOVE", "256"},
               {"FAKE_NAN", "precision=amp_bf16"},
               {"FAKE_CRASH", "optimizer_impl=foreach"},
               {"FAKE_HANG", "zero_grad=none"}});
  testing::TempDir dir;
  std::ostringstream log;
  auto o = options(dir, "grid",
                   {"batch_size=64,512", "precision=fp32,amp_bf16", "optimizer_impl=loop,foreach", "zero_grad=zeros,none"});
  o.trial_timeout_seconds = 1;
  const auto r = run_tune(o, log);
  std::map<TrialStatus, int> seen;
  for (const auto& t : Journal(r.journal_path).trials()) seen[t.result.status]++;
  EXPECT_GT(seen[TrialStatus::ok], 0) << log.str();
  EXPECT_GT(seen[TrialStatus::oom], 0);
  EXPECT_GT(seen[TrialStatus::non_finite], 0);
  EXPECT_GT(seen[TrialStatus::crash], 0);
  EXPECT_GT(seen[TrialStatus::timeout], 0);
  const Config& w = winner(r).config;  // only the healthy corner can win
  EXPECT_EQ(w.get("batch_size"), "64");
  EXPECT_EQ(w.get("precision"), "fp32");
  EXPECT_EQ(w.get("optimizer_impl"), "loop");
  EXPECT_EQ(w.get("zero_grad"), "zeros");
}

TEST(TuneFake, ANoisyConfigNeverWins) {
  FakeEnv env({{"FAKE_NOISY", "optimizer_impl=fused"}});
  testing::TempDir dir;
  std::ostringstream log;
  const auto r = run_tune(options(dir, "grid", {"optimizer_impl=loop,foreach,fused"}), log);
  EXPECT_EQ(winner(r).config.get("optimizer_impl"), "foreach") << log.str();
  for (const auto& c : r.summary.configs)
    if (c.config.get("optimizer_impl") == "fused") {
      EXPECT_FALSE(c.eligible);
      EXPECT_EQ(c.trial_ids.size(), 3u);  // measured, then re-measured twice (noisy, not busy: not timed again)
      EXPECT_EQ(c.reason.rfind("noisy: ", 0), 0u) << c.reason;
    }
}

/// A grid over optimizer_impl whose fused configs are input-bound (FAKE_INPUT_BOUND: 8% IQR at 1-s windows, 1/sqrt(k)
/// of it at k× as long), at a noise limit of `max_rel_iqr`, uncalibrated; the fused config's measured trials (not its
/// confirmation or trace): their windows and ids, in order.
struct InputBoundRun {
  TuneOutcome r;
  std::string log;
  std::vector<double> windows;
  std::vector<std::int64_t> ids;
};
InputBoundRun tune_input_bound(const testing::TempDir& dir, double max_rel_iqr) {
  FakeEnv env({{"FAKE_INPUT_BOUND", "optimizer_impl=fused"}});
  std::ostringstream log;
  auto o = options(dir, "grid", {"optimizer_impl=loop,foreach,fused"});
  o.stability.calibrate = false;
  o.stability.max_rel_iqr = max_rel_iqr;
  InputBoundRun out{run_tune(o, log), "", {}, {}};
  out.log = log.str();
  for (const auto& t : Journal((fs::path(dir / "run") / "journal.sqlite").string()).trials())
    if (t.plan.config.get("optimizer_impl") == "fused" && (t.kind == TrialKind::search || t.kind == TrialKind::remeasure)) {
      out.windows.push_back(t.plan.setup.measure.window_min_seconds);
      out.ids.push_back(t.id);
    }
  return out;
}

// An input-bound config (a loader that helps) whose windows vary with the batches they read. A fresh process with
// windows as short would show the same spread; the re-measure lengthens them as far as the spread says ((8/5)² = 2.56
// → 4×), where it is stable (4%), and wins. Without the data wait (FAKE_NOISY: not input-bound) a noisy config keeps
// its window (ANoisyConfigNeverWins).
TEST(TuneFake, AnInputBoundConfigWhoseWindowsVaryIsTimedAgainWithLongerWindows) {
  testing::TempDir dir;
  const InputBoundRun run = tune_input_bound(dir, 0.05);
  EXPECT_EQ(winner(run.r).config.get("optimizer_impl"), "fused") << run.log;
  EXPECT_NE(run.log.find("optimizer_impl=fused: input-bound (waits for its batch 60% of the step) and its windows vary by "
                         "8.0% (limit 5.0%) — timed again with windows 4× the run's (4.0 s)"),
            std::string::npos)
      << run.log;
  EXPECT_EQ(run.windows, (std::vector<double>{1.0, 4.0}));
  for (const auto& c : run.r.summary.configs)
    if (c.config.get("optimizer_impl") == "fused") {
      EXPECT_TRUE(c.eligible) << c.reason;
      EXPECT_DOUBLE_EQ(c.window_scale, 4.0);
      EXPECT_EQ(c.trial_ids, run.ids);  // both trials are the config's in the report
    }
}

// Still noisy at the longest window (8×: 2.8% against a 2.5% limit): re-measured there in a fresh process, two
// re-measures in all, as for any noisy config, and it cannot win.
TEST(TuneFake, AnInputBoundConfigStillNoisyAtTheLongestWindowIsRejected) {
  testing::TempDir dir;
  const InputBoundRun run = tune_input_bound(dir, 0.025);
  EXPECT_EQ(winner(run.r).config.get("optimizer_impl"), "foreach") << run.log;
  EXPECT_EQ(run.windows, (std::vector<double>{1.0, 8.0, 8.0})) << run.log;
  for (const auto& c : run.r.summary.configs)
    if (c.config.get("optimizer_impl") == "fused") {
      EXPECT_FALSE(c.eligible);
      EXPECT_EQ(c.reason.rfind("noisy: ", 0), 0u) << c.reason;
      EXPECT_NE(c.reason.find("(attempt 3 of 3; windows 8× the run's)"), std::string::npos) << c.reason;
      EXPECT_EQ(c.trial_ids, run.ids);
    }
}

// A budget that fits no search beyond the baseline, and a baseline whose first trial was noisy: it is re-measured
// (the confirmation's reserve is no reason to keep an unsettled baseline), and the run ends with it as the answer
// instead of "no stable config".
TEST(TuneFake, ANoisyBaselineIsRemeasuredEvenWhenTheBudgetFitsNoSearch) {
  FakeEnv env({{"FAKE_NOISY_TRIALS", "0001"}, {"FAKE_SLEEP", "0.5"}});
  testing::TempDir dir;
  std::ostringstream log;
  auto o = options(dir, "grid", {"batch_size=64,128"});
  o.budget_seconds = 4;
  const auto r = run_tune(o, log);
  ASSERT_GE(r.summary.baseline, 0) << log.str();
  const ConfigSummary& base = r.summary.configs[r.summary.baseline];
  EXPECT_GE(base.trial_ids.size(), 2u) << log.str();  // the noisy first trial, then a re-measure
  EXPECT_TRUE(base.eligible) << base.reason;
  EXPECT_EQ(r.summary.winner, r.summary.baseline) << log.str();
}

/// Configs rejected as noisy among those that are not the noisy one, and the run's best.json.
struct NoisyHostRun {
  int rejected_steady = 0, steady = 0;
  bool fused_rejected_as_noisy = true;
  nlohmann::json best;
  std::string log;
  double limit = 0, regenerated_limit = -1;  ///< noise limit in force: the run's, and `autotune report`'s from the journal
};
NoisyHostRun tune_on_a_noisy_host(bool calibrate) {
  // Every config's windows vary by up to ±12% (a noisy host); fused ones by 30% IQR (noisy themselves).
  FakeEnv env({{"FAKE_WINDOW_NOISE", "0.12"}, {"FAKE_NOISY", "optimizer_impl=fused"}});
  testing::TempDir dir;
  std::ostringstream log;
  auto o = options(dir, "grid", {"batch_size=64,128,256", "precision=fp32,amp_bf16", "optimizer_impl=loop,foreach,fused"});
  o.stability.calibrate = calibrate;
  const auto r = run_tune(o, log);
  NoisyHostRun out;
  out.log = log.str();
  for (const auto& c : r.summary.configs) {
    const bool noisy = c.reason.rfind("noisy: ", 0) == 0;
    if (c.config.get("optimizer_impl") == "fused") {
      out.fused_rejected_as_noisy = out.fused_rejected_as_noisy && noisy && !c.eligible;
    } else {
      ++out.steady;
      out.rejected_steady += noisy ? 1 : 0;
    }
  }
  out.best = nlohmann::json::parse(read_file((fs::path(dir / "run") / "best.json").string()));
  out.limit = r.summary.max_rel_iqr;
  out.regenerated_limit = load_run_summary((fs::path(dir / "run")).string()).max_rel_iqr;
  return out;
}

TEST(TuneFake, OnANoisyHostTheLimitsFollowTheHostAndANoisierConfigIsStillRejected) {
  const NoisyHostRun fixed = tune_on_a_noisy_host(false);
  const NoisyHostRun cal = tune_on_a_noisy_host(true);
  // Fixed 5%: the host's own ±12% gets steady configs rejected as noisy.
  EXPECT_GE(fixed.rejected_steady, 3) << fixed.log;
  EXPECT_DOUBLE_EQ(fixed.best["search"]["thresholds"]["max_rel_iqr"].get<double>(), 0.05);
  EXPECT_FALSE(fixed.best["search"]["host_noise"]["calibrating"].get<bool>());
  // Calibrated: the limit is raised to what the host's noise produces, and (nearly) every steady config passes.
  const auto& hn = cal.best["search"]["host_noise"];
  EXPECT_TRUE(hn["raised"].get<bool>()) << cal.log;
  EXPECT_EQ(hn["trials"].get<int>(), 6);
  EXPECT_GT(hn["median_rel_iqr"].get<double>(), 0.03);
  const double limit = cal.best["search"]["thresholds"]["max_rel_iqr"].get<double>();
  EXPECT_GT(limit, 0.05);
  EXPECT_LE(limit, 0.20);  // at most 4 × the given 5%
  EXPECT_NEAR(limit, 2.08 * hn["median_rel_iqr"].get<double>(), 0.1 * limit);
  EXPECT_LE(cal.rejected_steady, 1) << cal.log;
  EXPECT_LT(cal.rejected_steady, fixed.rejected_steady);
  EXPECT_NE(cal.log.find("host noise over the first 6 configs"), std::string::npos) << cal.log;
  EXPECT_DOUBLE_EQ(cal.regenerated_limit, cal.limit);  // the journal says how the run judged
  EXPECT_DOUBLE_EQ(fixed.regenerated_limit, 0.05);
  // A config noisier than the host (30% IQR) is rejected under either limit.
  EXPECT_TRUE(fixed.fused_rejected_as_noisy) << fixed.log;
  EXPECT_TRUE(cal.fused_rejected_as_noisy) << cal.log;
}

TEST(TuneFake, ADivergingConfigIsRejectedByItsFp32Reference) {
  FakeEnv env({{"FAKE_DIVERGE", "precision=amp_bf16"}});
  testing::TempDir dir;
  std::ostringstream log;
  const auto r = run_tune(options(dir, "grid", {"precision=fp32,amp_bf16"}), log);
  EXPECT_EQ(winner(r).config.get("precision"), "fp32") << log.str();
  for (const auto& c : r.summary.configs)
    if (c.config.get("precision") == "amp_bf16") {
      EXPECT_FALSE(c.eligible);
      EXPECT_EQ(c.reason,
                "diverged: mean loss over steps 61–70: 4.7250 vs fp32 1.4550 (224.7% apart, limit 5%, or within fp32's "
                "curve up to 11 steps earlier: 1.4550–1.5650)");
    }
}

/// The folders ("0007") of a run's trials of `kind` whose config reads `config` ("(baseline)" or the changed knobs).
std::string folders_of(const RunSummary& s, const std::string& kind, const std::string& config) {
  std::string out;
  for (const auto& t : s.trials)
    if (t.kind == kind && t.config == config) out += fmt::format("{}{:04d}", out.empty() ? "" : ",", t.id);
  return out;
}

TEST(TuneFake, ABaselineTimedBesideAnotherProgramIsRemeasuredAndCrownsNoFalseWin) {
  // The baseline's first trial ran beside a program that took a core: 25× slower, its host load 1.0 of 2 CPUs
  // (the 27× "win" of threads=1 on a busy host). The guard re-measures it; the speedup is the quiet one.
  FakeEnv env({{"FAKE_BUSY_TRIALS", "0001"}, {"FAKE_BUSY_FACTOR", "0.04"}});
  testing::TempDir dir;
  std::ostringstream log;
  auto o = options(dir, "grid", {"batch_size=64,128"});
  const auto r = run_tune(o, log);
  ASSERT_GE(r.summary.winner, 0) << log.str();
  const ConfigSummary& base = r.summary.configs[r.summary.baseline];
  EXPECT_GE(base.trial_ids.size(), 2u) << log.str();  // the busy trial, then a quiet re-measure
  EXPECT_TRUE(base.eligible) << base.reason;
  EXPECT_NEAR(r.summary.speedup, (128.0 / 192) / (64.0 / 128), 0.05) << log.str();  // 1.33×, not 33×
  EXPECT_EQ(r.summary.busy_host.busy, 1);
  EXPECT_NEAR(r.summary.busy_host.max_other_cores, 1.0, 1e-9);
  const std::string report = read_file(o.out_dir + "/report.md");
  EXPECT_NE(report.find("> **Busy host:** other programs used up to 1.00 of 2 CPUs while 1 of the"), std::string::npos) << report;
  EXPECT_NE(log.str().find("— host busy: others used 1.00 of 2 CPUs"), std::string::npos) << log.str();
}

TEST(TuneFake, AConfigTimedOnABusyHostEveryTimeCannotWin) {
  // batch 128 always ran beside another program, and (so the contention "helped" it) 3× faster than it is.
  FakeEnv env({{"FAKE_BUSY", "batch_size=128"}, {"FAKE_BUSY_FACTOR", "3"}});
  testing::TempDir dir;
  std::ostringstream log;
  const auto r = run_tune(options(dir, "grid", {"batch_size=64,128"}), log);
  for (const auto& c : r.summary.configs)
    if (c.config.get("batch_size") == "128") {
      EXPECT_FALSE(c.eligible);
      EXPECT_EQ(c.trial_ids.size(), 4u);  // measured, re-measured twice, and timed once more after the search (retime_busy)
      EXPECT_EQ(c.reason.rfind("host busy: other processes used 1.00 of 2 CPUs during the measured windows (limit 0.25)", 0), 0u)
          << c.reason;
    }
  EXPECT_EQ(winner(r).config.get("batch_size"), "64") << log.str();
  EXPECT_EQ(r.summary.busy_host.rejected, 1);
  EXPECT_NE(log.str().find("batch_size=128: timed again now that the host is quiet"), std::string::npos) << log.str();
}

TEST(TuneFake, ABusySpellThatEndsBeforeTheBudgetDoesIsTimedAgainAndCanWin) {
  // batch 128's first three trials ran beside another program (the search's attempt and both re-measures); the spell
  // ended, so after the search it is timed once more, quiet, and wins on that attempt.
  FakeEnv env({{"FAKE_BUSY_TRIALS", "0002,0003,0004"}});
  testing::TempDir dir;
  std::ostringstream log;
  const auto r = run_tune(options(dir, "grid", {"batch_size=64,128"}), log);
  EXPECT_NE(log.str().find("batch_size=128: timed again now that the host is quiet"), std::string::npos) << log.str();
  for (const auto& c : r.summary.configs)
    if (c.config.get("batch_size") == "128") {
      EXPECT_TRUE(c.eligible) << c.reason;
      EXPECT_EQ(c.trial_ids.size(), 4u);
    }
  EXPECT_EQ(winner(r).config.get("batch_size"), "128") << log.str();
  EXPECT_EQ(r.summary.busy_host.rejected, 0);
}

TEST(TuneFake, AConfigTimedWhileAnotherProcessHeldTheGpuCannotWinAndTheFirstScreenSaysSo) {
  // batch 128's trials shared the GPU with another process (the CPUs were quiet) and, so, "ran" 3× faster.
  FakeEnv env({{"FAKE_GPU_BUSY", "batch_size=128"}, {"FAKE_BUSY_FACTOR", "3"}});
  testing::TempDir dir;
  std::ostringstream log;
  const auto r = run_tune(options(dir, "grid", {"batch_size=64,128"}), log);
  for (const auto& c : r.summary.configs)
    if (c.config.get("batch_size") == "128") {
      EXPECT_FALSE(c.eligible);
      EXPECT_NE(c.reason.find("1 other process(es) held the GPU (1024 MiB; allowed: none)"), std::string::npos) << c.reason;
    }
  EXPECT_EQ(winner(r).config.get("batch_size"), "64") << log.str();
  EXPECT_EQ(r.summary.busy_host.device_busy, 4);  // measured, re-measured twice, timed once more after the search
  EXPECT_NE(read_file(r.out_dir + "/report.md").find("another process held the GPU during 4 of them (up to 1 at once)"),
            std::string::npos);
}

TEST(TuneFake, AConfirmationThatCollapsesOrRanOnABusyHostIsNotConfirmed) {
  auto o_of = [](const testing::TempDir& dir) {
    auto o = options(dir, "grid", {"optimizer_impl=loop,fused"});
    o.confirm_top = 1;
    return o;
  };
  std::string base_confirms, fused_confirms;
  {
    FakeEnv env({});
    testing::TempDir dir;
    std::ostringstream log;
    const auto r = run_tune(o_of(dir), log);
    ASSERT_EQ(winner(r).config.get("optimizer_impl"), "fused") << log.str();
    ASSERT_TRUE(r.summary.confirmation.confirmed) << r.summary.confirmation.detail;
    base_confirms = folders_of(r.summary, "confirm", "(baseline)");
    fused_confirms = folders_of(r.summary, "confirm", "optimizer_impl=fused");
    ASSERT_FALSE(base_confirms.empty());
  }
  // The same run with those confirmation trials changed by `var`: its summary.
  const auto run_with = [&](const char* var, const std::string& folders) {
    FakeEnv env({{var, folders.c_str()}});
    testing::TempDir dir;
    std::ostringstream log;
    const auto r = run_tune(o_of(dir), log);
    EXPECT_FALSE(r.summary.confirmations.empty()) << log.str();
    return r.summary;
  };
  {  // The baseline collapses in the confirmation (to 5%): the candidate "measures" 24× against 1.2× in the search.
    const RunSummary s = run_with("FAKE_SLOW_TRIALS", base_confirms);
    ASSERT_FALSE(s.confirmations.empty());
    const Confirmation& c = s.confirmations[0].second;
    EXPECT_FALSE(c.confirmed) << c.detail;
    EXPECT_NE(c.detail.find("not confirmed: it departs from the search far beyond both intervals"), std::string::npos) << c.detail;
    EXPECT_EQ(c.detail.find("reproduced"), std::string::npos) << c.detail;
    EXPECT_EQ(c.detail.find("exceeded"), std::string::npos) << c.detail;
  }
  {  // The candidate's confirmation runs shared the host with another program: not confirmed, and said why.
    const RunSummary s = run_with("FAKE_BUSY_TRIALS", fused_confirms);
    ASSERT_FALSE(s.confirmations.empty());
    const Confirmation& c = s.confirmations[0].second;
    EXPECT_FALSE(c.confirmed) << c.detail;
    EXPECT_NE(c.detail.find("not confirmed: the host was busy during"), std::string::npos) << c.detail;
    EXPECT_GE(s.busy_host.confirmation_busy, 1);
  }
}

TEST(TuneFake, AWinnerWhoseIntervalReachesOneKeepsTheDefaultsAndIsNamedNotDistinguishable) {
  // foreach is 1.10× the loop here, but every window varies by ±25%: two interleaved rounds cannot tell them apart.
  FakeEnv env({{"FAKE_WINDOW_NOISE", "0.25"}});
  testing::TempDir dir;
  std::ostringstream log;
  auto o = options(dir, "grid", {"optimizer_impl=loop,foreach"});
  o.stability.max_rel_iqr = 0.9;  // the noise itself is not what this test is about
  o.stability.max_drift = 0.9;
  o.stability.calibrate = false;
  o.confirm_top = 1;
  const auto r = run_tune(o, log);
  ASSERT_GE(r.summary.indistinct, 0) << log.str();
  EXPECT_EQ(r.summary.configs[r.summary.indistinct].config.get("optimizer_impl"), "foreach");
  EXPECT_EQ(r.summary.winner, r.summary.baseline) << log.str();
  EXPECT_NE(r.summary.winner_note.find("not distinguishable from PyTorch's defaults on this machine"), std::string::npos)
      << r.summary.winner_note;
  const std::string report = read_file(o.out_dir + "/report.md");
  EXPECT_EQ(report.find("not significant"), std::string::npos) << report;
  EXPECT_NE(report.find("not distinguishable from PyTorch's defaults on this machine"), std::string::npos);
}

TEST(TuneFake, MachineWideDriftDoesNotFailTheConfirmation) {
  testing::TempDir dir;
  // Baseline + one search trial at full speed; every later run (the confirmation) 20% slower.
  FakeEnv env({{"FAKE_DRIFT_AFTER", "2"}});  // FAKE_COUNTER is set below (and unset by FakeEnv)
  setenv("FAKE_COUNTER", (dir / "counter").c_str(), 1);
  std::ostringstream log;
  auto o = options(dir, "grid", {"optimizer_impl=loop,fused"});
  o.confirm_top = 1;
  const auto r = run_tune(o, log);
  EXPECT_EQ(winner(r).config.get("optimizer_impl"), "fused") << log.str();
  // The candidate, then the baseline: keeping PyTorch's defaults is always one of the answers.
  ASSERT_EQ(r.summary.confirmations.size(), 2u);
  const Confirmation& c = r.summary.confirmations[0].second;
  EXPECT_TRUE(c.confirmed) << c.detail;  // the absolute numbers moved 20%; the speedup did not
  EXPECT_NE(c.detail.find("reproduced"), std::string::npos);
  // The baseline moved with the machine: said so, and not a reason to drop the reference.
  const Confirmation& b = r.summary.confirmations[1].second;
  EXPECT_TRUE(b.confirmed) << b.detail;
  EXPECT_NE(b.detail.find("moved -20.0% since the search, beyond how much fresh processes of one config differ ("), std::string::npos)
      << b.detail;
  EXPECT_NE(b.detail.find("): the machine drifted; every ratio"), std::string::npos) << b.detail;
  EXPECT_NEAR(c.median, 0.8 * 10000 * 64 / 128 * 1.2, 0.8 * 6000 * 0.02);
  EXPECT_NEAR(r.summary.speedup, 1.2, 0.03);
  EXPECT_EQ(r.summary.speedup_basis.rfind("interleaved confirmation", 0), 0u) << r.summary.speedup_basis;
}

TEST(TuneFake, TheBudgetIsHonouredAndWhatWasLeftIsListed) {
  FakeEnv env({{"FAKE_SLEEP", "0.4"}});
  testing::TempDir dir;
  std::ostringstream log;
  auto o = options(dir, "grid", {"batch_size=32,64,128,256", "optimizer_impl=loop,foreach,fused"});
  o.budget_seconds = 6;
  const auto r = run_tune(o, log);
  EXPECT_LE(r.summary.elapsed_seconds, 6 + 1.5) << log.str();  // at most one trial past the line
  EXPECT_FALSE(r.summary.unexplored.empty());
  EXPECT_EQ(r.summary.configs.size() + r.summary.unexplored.size(), 12u);  // the grid (it contains the baseline)
}

TEST(TuneFake, WithNothingToConfirmTheConfirmationsReserveGoesToTheSearch) {
  // Every trial of the search noisy (trials 2-13, its re-measures included): when the budget's line for the search is reached, nothing but the
  // baseline is stable, so the reserve kept for a confirmation would go unspent. The run re-times the noisy configs
  // (now quiet) and goes on with the unexplored ones, keeping back what confirming one newcomer needs — and then
  // confirms one. Before, it ended with about half its budget unspent and every config noisy or "not explored (budget)".
  // The scenario is counted in trials (2-13 noisy), the budget in wall time: it is sized from a trial's wall time on this
  // machine now (a probe tune's), so that about 20 trials fit however loaded the machine is. With a fixed 9 s a loaded
  // 2-core machine's slower trials (0.57 s against ~0.45 s) moved the search's line before trial 13 and left no time for
  // the quiet re-times (seen once in a CI run beside a build).
  FakeEnv env({{"FAKE_SLEEP", "0.4"}, {"FAKE_NOISY_TRIALS", "0002,0003,0004,0005,0006,0007,0008,0009,0010,0011,0012,0013"}});
  double budget = 9;
  {
    testing::TempDir probe_dir;
    std::ostringstream probe_log;
    auto p = options(probe_dir, "grid", {"batch_size=32,64"});
    p.budget_seconds = 3;
    p.stability.calibrate = false;
    const auto probe = run_tune(p, probe_log);
    ASSERT_GT(probe.summary.trial_seconds, 0) << probe_log.str();
    budget = std::max(budget, 20 * probe.summary.trial_seconds);
  }
  testing::TempDir dir;
  std::ostringstream log;
  auto o = options(dir, "grid", {"batch_size=32,64,128,256", "optimizer_impl=loop,foreach,fused"});
  o.budget_seconds = budget;
  o.stability.calibrate = false;
  const auto r = run_tune(o, log);
  EXPECT_LE(r.summary.elapsed_seconds, budget + 1.5) << log.str();  // at most one trial past the line
  ASSERT_FALSE(r.summary.confirmations.empty()) << "a newcomer stable after the search is confirmed\n" << log.str();
  ASSERT_GE(r.summary.winner, 0);
  EXPECT_NE(winner(r).config, r.summary.configs[r.summary.baseline].config) << log.str();
}

TEST(TuneFake, ABudgetThatEndsTheSearchStillLeavesRoomForTheLeadersFp32Reference) {
  // Seen on an H100: auto's recipe (amp_bf16) led, the search ran until only the confirmation's share
  // was left, and the fp32 reference was then refused for want of that same share — every reduced-
  // precision config was "unverified" and PyTorch's defaults won at 1.00x. The share kept at the end
  // includes one reference per candidate; the verification must be allowed to spend it.
  FakeEnv env({{"FAKE_SLEEP", "0.3"}});
  testing::TempDir dir;
  std::ostringstream log;
  auto o = options(dir, "auto",
                   {"batch_size=32", "precision=fp32,amp_bf16", "optimizer_impl=loop,foreach,fused",  // one size: open-ended
                    "zero_grad=zeros,none", "log_every=1,10,100"});
  o.budget_seconds = 6;
  const auto r = run_tune(o, log);
  ASSERT_FALSE(r.summary.unexplored.empty()) << "the budget must end the search for this test to mean anything\n" << log.str();
  EXPECT_EQ(winner(r).config.get("precision"), "amp_bf16") << log.str();
  bool checked = false;
  for (const auto& c : winner(r).checks)
    if (c.name == "loss vs fp32 reference") checked = c.passed;
  EXPECT_TRUE(checked) << log.str();
}

TEST(TuneFake, SigkillMidRunThenResumeLosesAndRepeatsNothing) {
  FakeEnv env({{"FAKE_SLEEP", "0.3"}});
  testing::TempDir dir;
  const std::string out = dir / "run";
  SpawnOptions so;
  so.argv = {testing::binary_dir() + "/bin/autotune",
             "tune",
             "--worker",
             fake_worker(),
             "--out",
             out,
             "--knobs",
             "batch_size=32,64,128",
             "optimizer_impl=loop,fused"};
  so.stdout_path = dir / "first.out";
  so.stderr_path = dir / "first.err";
  // Run the tuner in the background: a thread-less trick — fork via run_process with a short timeout
  // that SIGTERMs… we need SIGKILL at a chosen moment, so poll the journal from a child instead.
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    run_process(so);
    _exit(0);
  }
  // Wait until 3 trials are committed (up to 60 s; it ends as soon as 3 are in), then SIGKILL the tuner's whole process
  // group (tuner + worker).
  const size_t committed = testing::wait_for_trials(out, 3, 60);
  // The tuner is the run_process child of our child: kill every process in its group (also when the poll gave up, so
  // that no tuner outlives the test's folder).
  std::string pgids = read_file("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  for (std::istringstream in(pgids); in >> pgids;) kill(-std::stoi(pgids), SIGKILL);
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_GE(committed, 3u) << "the tuner's output:\n" << read_file(dir / "first.out") << read_file(dir / "first.err");
  const auto before = Journal(out + "/journal.sqlite").trials();
  ASSERT_LT(before.size(), 8u) << "the run finished before it could be killed";

  so.argv = {testing::binary_dir() + "/bin/autotune", "tune", "--worker", fake_worker(), "--resume", out};
  so.stdout_path = dir / "second.out";
  so.stderr_path = dir / "second.err";
  const auto second = run_process(so);
  ASSERT_EQ(second.exit_code, 0) << read_file(dir / "second.out") << read_file(dir / "second.err");
  EXPECT_NE(read_file(dir / "second.out").find("resuming " + out + ": " + std::to_string(before.size()) + " trials"),
            std::string::npos);
  const auto after = Journal(out + "/journal.sqlite").trials();
  // Nothing lost: the first run's trials are still there, unchanged, in order.
  ASSERT_GE(after.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(after[i].plan.config.key(), before[i].plan.config.key());
  // Nothing repeated: each config measured once (no noise here, so no re-measures), and every config measured.
  std::multiset<std::string> measured;
  for (const auto& t : after)
    if (t.kind == TrialKind::baseline || t.kind == TrialKind::search) measured.insert(t.plan.config.key());
  for (const auto& k : measured) EXPECT_EQ(measured.count(k), 1u) << k;
  EXPECT_EQ(std::set<std::string>(measured.begin(), measured.end()).size(), 6u);  // the grid (it contains the baseline)
}

}  // namespace
}  // namespace autotune

namespace autotune {
namespace {

std::string host_name() {
  char h[256] = {};
  ::gethostname(h, sizeof h - 1);
  return h;
}

// One writer per run folder: while a run holds DIR (here the test holds its lock, as a running tune
// does), a second run on DIR — new or --resume — is refused at once, naming the holder; nothing of
// the folder changes. The lock is released with its holder.
TEST(TuneFake, ASecondRunOnABusyFolderIsRefusedNamingTheHolder) {
  FakeEnv env({});
  testing::TempDir dir;
  std::ostringstream log;
  TuneOptions o = options(dir, "grid", {"batch_size=64,128"});
  o.confirm_top = 1;
  run_tune(o, log);  // a finished run to resume
  {
    const RunLock held(o.out_dir, "test");
    TuneOptions again = o;
    again.resume = true;
    try {
      run_tune(again, log);
      ADD_FAILURE() << "a resume of a busy folder must be refused";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()),
                fmt::format("{} is in use by another autotune run (autotune test, pid {} on {}); wait for it to finish or "
                            "choose another --out",
                            o.out_dir, ::getpid(), host_name()));
    }
    Journal j((fs::path(o.out_dir) / "journal.sqlite").string());
    const auto before = j.trials().size();
    EXPECT_GT(before, 0u);
    // A second lock in this very process is refused too (flock is per open file, not per process).
    EXPECT_THROW(RunLock(o.out_dir, "another"), UsageError);
  }
  TuneOptions resumed = o;
  resumed.resume = true;
  EXPECT_NO_THROW(run_tune(resumed, log)) << "released with its holder";
  // --out naming a file is refused before anything runs.
  std::ofstream(dir / "file") << "x";
  TuneOptions bad = options(dir, "grid", {"batch_size=64"});
  bad.out_dir = dir / "file";
  try {
    run_tune(bad, log);
    ADD_FAILURE();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--out " + (dir / "file") + ": is a file; a run folder is a directory (new, or one to --resume)");
  }
}

}  // namespace
}  // namespace autotune

namespace autotune {
namespace {

/// `autotune tune` as a user runs it, in its own process (its signal handlers are main()'s), with the
/// fake worker; returns its pid. Output goes to dir/out.txt and dir/err.txt.
pid_t start_tune(const testing::TempDir& dir, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {testing::binary_dir() + "/bin/autotune",
                                   "tune",
                                   "--worker",
                                   fake_worker(),
                                   "--knobs",
                                   "batch_size=64,128,256",
                                   "--out",
                                   dir / "run",
                                   "--budget",
                                   "600s"};
  args.insert(args.end(), extra.begin(), extra.end());
  return testing::start_process(args, dir / "out.txt", dir / "err.txt");
}

using testing::processes_mentioning;
using testing::slurp;
using testing::wait_exit;

// ---- the baseline is PyTorch 2.11's defaults, value by value, for the user's frontend (knobs/knob.cpp, cite_defaults)

TEST(SourcedBaseline, APythonScriptOnCudaHasForeachAdamWAndSetToNoneEvenWhereTheSpaceDoesNotSearchThem) {
  FakeEnv env({{"FAKE_CUDA", "1"}});
  for (const std::string frontend : {"python", "libtorch"}) {
    testing::TempDir dir;
    TuneOptions o = options(dir, "grid", {"batch_size=64,256"});
    o.baseline_defaults = "pytorch-2.11";
    o.frontend = frontend;
    std::ostringstream log;
    const TuneOutcome r = run_tune(o, log);
    const Config& base = r.summary.configs.at(r.summary.baseline).config;
    EXPECT_EQ(base.get("zero_grad"), "none") << frontend;  // set_to_none=True since 2.0, both frontends
    EXPECT_EQ(base.get("optimizer_impl", "loop"), frontend == "python" ? "foreach" : "loop") << frontend;
    for (const auto& c : r.summary.configs) EXPECT_EQ(c.config.get("zero_grad"), "none") << c.config.key();  // every trial
    const std::string md = read_file(dir / "run/report.md");
    EXPECT_NE(md.find("## The baseline"), std::string::npos) << md;
    EXPECT_NE(md.find("torch/optim/optimizer.py"), std::string::npos) << md;
    EXPECT_EQ(md.find("zero_grad(set_to_none=True);"), std::string::npos) << md;  // no snippet for the default
    const auto best = nlohmann::json::parse(read_file(dir / "run/best.json"));
    EXPECT_EQ(best["baseline_defaults"]["frontend"], frontend);
    EXPECT_GE(best["baseline_defaults"]["values"].size(), 2u);
  }
}

// ---- the time objective (tuner/search/ranking.h, docs/time-to-train.md). The fake objective runs batch 256 at
// about 1.6× batch 64's samples/s; the user's batch is the fake workload's default, 64.

TuneOptions time_options(const testing::TempDir& dir) {
  TuneOptions o = options(dir, "grid", {"batch_size=64,256", "optimizer_impl=loop,fused"});
  o.objective = ObjectiveKind::time;
  o.strategy.other_batches = true;
  return o;
}

/// A token file for --data (the fake worker does not read it; the tuner checks that it exists).
std::string token_file(const testing::TempDir& dir) {
  std::ofstream(dir / "tokens.bin", std::ios::binary) << std::string(4096, '\1');
  return dir / "tokens.bin";
}

TEST(TimeObjective, OnSyntheticDataOnlyTheUserBatchIsRankedAndTheReportSaysWhy) {
  FakeEnv env({});
  testing::TempDir dir;
  std::ostringstream log;
  const TuneOutcome r = run_tune(time_options(dir), log);
  const RunSummary& s = r.summary;
  EXPECT_EQ(winner(r).config.get("batch_size"), "64") << log.str();  // 256 is faster, but not at the user's batch
  EXPECT_EQ(winner(r).config.get("optimizer_impl"), "fused");
  EXPECT_EQ(s.answer_a, s.winner);
  EXPECT_FALSE(s.noise_scale.measured);  // no noise-scale trial on synthetic data
  EXPECT_NE(s.time_note.find("synthetic data"), std::string::npos) << s.time_note;
  ASSERT_GE(s.answer_b.config, 0);
  EXPECT_EQ(s.configs[s.answer_b.config].config.get("batch_size"), "256");
  EXPECT_GT(s.answer_b.throughput_ratio, 1.3);
  EXPECT_EQ(s.answer_b.time_ratio, 0);  // unpriced
  for (const auto& t : Journal(dir / "run/journal.sqlite").trials()) EXPECT_NE(t.kind, TrialKind::noise);
  EXPECT_NE(log.str().find("time to train cannot rank a changed batch"), std::string::npos) << log.str();
  const std::string md = read_file(dir / "run/report.md");
  EXPECT_NE(md.find("(a) At your batch — global batch 64"), std::string::npos) << md;
  EXPECT_NE(md.find("(b) If you change the batch — global batch 256"), std::string::npos) << md;
  EXPECT_NE(md.find("its time to train is not predicted"), std::string::npos) << md;
  const auto best = nlohmann::json::parse(read_file(dir / "run/best.json"));
  EXPECT_EQ(best["time_to_train"]["answer"], "at_your_batch");
  EXPECT_EQ(best["time_to_train"]["noise_scale"]["usable"], false);
}

TEST(TimeObjective, ABiggerBatchThatLosesOnTimeIsNotPickedThoughItIsFaster) {
  FakeEnv env({{"FAKE_TOKENS", "1"}, {"FAKE_NOISE_SCALE", "20"}});
  testing::TempDir dir;
  TuneOptions o = time_options(dir);
  o.setup.data = token_file(dir);
  std::ostringstream log;
  const TuneOutcome r = run_tune(o, log);
  const RunSummary& s = r.summary;
  ASSERT_TRUE(s.noise_scale.measured) << log.str();
  EXPECT_TRUE(s.noise_scale.usable);
  EXPECT_NEAR(s.noise_scale.value, 20, 8);  // measured in the noise-scale trial, not told
  EXPECT_LE(s.noise_scale.lo, 20);
  EXPECT_TRUE(s.noise_scale.early);
  EXPECT_EQ(winner(r).config.get("batch_size"), "64");
  ASSERT_GE(s.answer_b.config, 0);
  EXPECT_GT(s.answer_b.throughput_ratio, 1.3);   // faster in samples/s …
  EXPECT_LT(s.answer_b.time_ratio, 0.7);         // … but (64+20)/(256+20) of the work per sample
  EXPECT_FALSE(s.answer_b.beats_a);
  EXPECT_DOUBLE_EQ(s.time_speedup, s.speedup);   // the pick holds the batch: time ∝ samples/s
  EXPECT_NE(log.str().find("noise     B_simple"), std::string::npos) << log.str();
  const std::string md = read_file(dir / "run/report.md");
  EXPECT_NE(md.find("does not win across that band"), std::string::npos) << md;
  EXPECT_NE(md.find("Gradient noise scale over your run: B̄ ="), std::string::npos) << md;  // windows along the trial
  EXPECT_NE(md.find("Measured from random weights"), std::string::npos) << md;
  // `autotune report` rebuilds the same answers from the journal alone.
  const RunSummary again = load_run_summary(dir / "run");
  EXPECT_EQ(again.winner, s.winner);
  EXPECT_DOUBLE_EQ(again.noise_scale.value, s.noise_scale.value);
  EXPECT_DOUBLE_EQ(again.answer_b.time_ratio, s.answer_b.time_ratio);
}

// The noise scale along the run (docs/time-to-train.md): the fake worker's B_simple grows as √samples along its trial;
// priced over a run 120× the trial, the run's B̄ is several times the trial's value, the report shows the windows, the
// fitted growth and where it is extrapolated, and a run shorter than the trial is refused in one line.
TEST(TimeObjective, TheNoiseScaleAlongTheRunPricesTheUsersRun) {
  FakeEnv env({{"FAKE_TOKENS", "1"}, {"FAKE_NOISE_SCALE", "20"}, {"FAKE_NOISE_GROWTH", "0.5"}});
  testing::TempDir dir;
  TuneOptions o = time_options(dir);
  o.setup.data = token_file(dir);
  o.run_length = "2e6";
  std::ostringstream log;
  const TuneOutcome r = run_tune(o, log);
  const NoiseScaleSummary& n = r.summary.noise_scale;
  ASSERT_TRUE(n.usable) << log.str();
  ASSERT_TRUE(n.over_run) << n.over_run_note;
  ASSERT_EQ(n.windows.size(), 3u);
  EXPECT_LT(n.windows[0].value, n.windows[2].value);
  EXPECT_LE(n.growth.lo, 0.5);
  EXPECT_GE(n.growth.hi, 0.5);
  EXPECT_DOUBLE_EQ(n.run_samples, 2e6);
  EXPECT_GT(n.value, 3 * n.trial_value);  // 2e6 samples: B held at √32 × the last window's
  EXPECT_NE(log.str().find("over your run (--run-length 2,000,000 samples) B̄ ="), std::string::npos) << log.str();
  const std::string md = read_file(dir / "run/report.md");
  EXPECT_NE(md.find("| window (samples since the first step) | steps | B_simple [95%] | loss |"), std::string::npos) << md;
  EXPECT_NE(md.find("beyond them B is extrapolated, up to"), std::string::npos) << md;
  const std::string html = read_file(dir / "run/report.html");
  EXPECT_NE(html.find("chart-noise-samples"), std::string::npos);
  EXPECT_NE(html.find("chart-noise-loss"), std::string::npos);
  const auto best = nlohmann::json::parse(read_file(dir / "run/best.json"));
  const auto& along = best["time_to_train"]["noise_scale"]["along_run"];
  EXPECT_EQ(along["windows"].size(), 3u);
  EXPECT_TRUE(along["over_run"].get<bool>());
  EXPECT_DOUBLE_EQ(along["run_samples"].get<double>(), 2e6);
  // `autotune report` prices from the journal alone, with the run's length it was given.
  EXPECT_DOUBLE_EQ(load_run_summary(dir / "run").noise_scale.value, n.value);

  // A run shorter than what the trial itself trained cannot be priced: one line, before the search.
  testing::TempDir dir2;
  TuneOptions shorter = time_options(dir2);
  shorter.setup.data = token_file(dir2);
  shorter.run_length = "1000";
  std::ostringstream log2;
  EXPECT_THROW_MSG(run_tune(shorter, log2), UsageError,
                   "--run-length 1,000 samples is 1,000 samples, shorter than the 16,384 samples the noise-scale trial itself "
                   "trained; give a longer run (resume with --resume --run-length N)");
}

/// The batch-ramp tunes' fake (grad_accum shares the optimizer step; B grows as √samples from 100 at the trial's second
/// window) and space: one micro-batch of 64 at grad_accum 1, 2, 4, priced over a run of 4e6 samples.
FakeEnv ramp_env() {
  return FakeEnv({{"FAKE_TOKENS", "1"}, {"FAKE_NOISE_SCALE", "100"}, {"FAKE_NOISE_GROWTH", "0.5"}, {"FAKE_NOISE_JITTER", "0.02"},
                  {"FAKE_ACCUM_GAIN", "1"}});
}
TuneOptions ramp_options(const testing::TempDir& dir) {
  TuneOptions o = options(dir, "grid", {"batch_size=64", "grad_accum=1,2,4"});
  o.objective = ObjectiveKind::time;
  o.strategy.other_batches = true;
  o.setup.data = token_file(dir);
  o.run_length = "4e6";
  return o;
}

// Answer (c), a batch ramp (docs/time-to-train.md, "A batch ramp"): grad_accum shares the optimizer step (the fake's
// FAKE_ACCUM_GAIN), so a bigger batch of the same micro-batch has more samples/s; the noise scale grows as √samples, so
// the ramp starts at the user's batch and switches up as it grows — early, so it gains little over (b). The switches sit where the lines of the measured
// samples/s cross on the fitted curve, every phase keeps the micro-batch, the learning rate rises at each switch (held
// past B̄), and the report, best.json and `autotune report` give it with (a) and (b)'s predicted times.
TEST(TimeObjective, ABatchRampIsPricedAlongTheNoiseScalesGrowth) {
  const FakeEnv env = ramp_env();
  testing::TempDir dir;
  const TuneOptions o = ramp_options(dir);
  std::ostringstream log;
  const TuneOutcome r = run_tune(o, log);
  const RunSummary& s = r.summary;
  ASSERT_TRUE(s.noise_scale.over_run) << log.str();
  const RampAnswer& c = s.answer_c;
  ASSERT_TRUE(c.proposed) << c.note << "\n" << log.str();
  ASSERT_GE(c.phases.size(), 2u);
  EXPECT_EQ(c.phases.front().global_batch, 64);
  for (std::size_t k = 0; k < c.phases.size(); ++k) {
    const RampPhaseSummary& p = c.phases[k];
    EXPECT_EQ(p.micro_batch, 64);
    EXPECT_EQ(p.global_batch, 64 * p.grad_accum);
    if (k == 0) continue;
    const RampPhaseSummary& q = c.phases[k - 1];
    EXPECT_GT(p.global_batch, q.global_batch);
    EXPECT_DOUBLE_EQ(p.from_samples, q.to_samples);
    EXPECT_GE(p.lr_gain, q.lr_gain);
    // The switch is where the two batches' lines cross: (B_q + Bn)/X_q = (B_p + Bn)/X_p.
    const double crossing = (p.global_batch * q.samples_per_s - q.global_batch * p.samples_per_s) / (p.samples_per_s - q.samples_per_s);
    EXPECT_NEAR(p.noise_at_start, crossing, 0.01 * crossing);
  }
  EXPECT_NEAR(c.phases.back().to_samples, [&] {
    double own = 0;  // the ramp run's own samples exceed the run at B0 (bigger batches need more samples)
    for (const auto& p : c.phases) own += p.to_samples - p.from_samples;
    return own;
  }(), 1);
  EXPECT_GT(c.phases.back().to_samples, c.run_samples);
  EXPECT_GT(c.vs_a, 1.3);  // faster than staying at 64 …
  EXPECT_GE(c.vs_b, 1 - 1e-3);  // … and never slower than (b), a member of its family, at B̄ …
  // … but not by 5%: B passes the first crossing within the first 0.1% of the run's samples and the second within 4%.
  EXPECT_LT(c.vs_b, kRampMinGain);
  EXPECT_FALSE(c.advised);
  EXPECT_LE(c.vs_a_min, c.vs_a);
  EXPECT_GE(c.vs_a_max, c.vs_a);
  EXPECT_NEAR(c.a_seconds, c.run_samples / s.configs[s.answer_a].median, 1e-6 * c.a_seconds);
  const std::string md = read_file(dir / "run/report.md");
  EXPECT_NE(md.find("(c) A batch ramp — global batch 64 → 128 → 256 (grad_accum 1 → 2 → 4 at micro-batch 64)"),
            std::string::npos) << md;
  EXPECT_NE(md.find("within 5% of the better fixed batch ((b)"), std::string::npos) << md;
  EXPECT_NE(md.find("| ramp phase | global batch = micro × grad_accum |"), std::string::npos) << md;
  EXPECT_NE(read_file(dir / "run/report.html").find("<h2>A batch ramp</h2>"), std::string::npos);
  const auto best = nlohmann::json::parse(read_file(dir / "run/best.json"));
  const auto& ramp = best["time_to_train"]["batch_ramp"];
  EXPECT_EQ(ramp["phases"].size(), c.phases.size());
  EXPECT_DOUBLE_EQ(ramp["predicted_seconds"]["ramp"].get<double>(), c.seconds);
  const RunSummary again = load_run_summary(dir / "run");  // `autotune report` prices it again from the journal
  ASSERT_TRUE(again.answer_c.proposed);
  EXPECT_DOUBLE_EQ(again.answer_c.seconds, c.seconds);
  // An lr-sweep beside the run at the user's batch (its first phase) prices that phase at its measured rate when the run is
  // summarised again; the other phases stay at the rule's (tuner/pricing/lr_beside.h).
  LrSweepSummary swept;
  swept.at = "your-batch";
  swept.global_batch = 64;
  swept.user_lr = 1e-3;
  swept.out_dir = dir / "sweep";
  swept.verdict.verdict = "too low";
  swept.verdict.best_multiple = 3;
  swept.verdict.gain = swept.verdict.gain_lo = swept.verdict.gain_hi = 1.6;
  write_lr_sweep_beside(dir / "run", swept, "2026-11-30T10:00:00Z");
  const RunSummary priced = load_run_summary(dir / "run");
  const RampAtMeasured& q = priced.lr_measured.ramp;
  ASSERT_EQ(q.phases.size(), c.phases.size());
  EXPECT_EQ(q.measured(), 1);
  EXPECT_EQ(q.phases[0].priced_by, "your-batch");
  EXPECT_DOUBLE_EQ(q.phases[0].lr, 3e-3);
  EXPECT_DOUBLE_EQ(q.seconds, c.seconds - c.phases[0].seconds + c.phases[0].seconds / 1.6);
  EXPECT_DOUBLE_EQ(q.vs_a, c.a_seconds / 1.6 / q.seconds);
  EXPECT_NE(time_facts(priced, [](const std::string& x) { return x; }).lr_measured.find("(c), the batch ramp, priced at the measured "
                                                                                        "rates — batch 64 at 0.003 (1.60× sooner), batch 128 at the rule's rate"),
            std::string::npos);

  // Without growth the noise scale stays where it is: one batch is cheapest all along, and the report says so.
  FakeEnv flat({{"FAKE_TOKENS", "1"}, {"FAKE_NOISE_SCALE", "40"}, {"FAKE_NOISE_JITTER", "0.02"}, {"FAKE_ACCUM_GAIN", "1"}});
  testing::TempDir dir2;
  TuneOptions o2 = o;
  o2.out_dir = dir2 / "run";
  o2.setup.data = token_file(dir2);
  std::ostringstream log2;
  const TuneOutcome r2 = run_tune(o2, log2);
  EXPECT_FALSE(r2.summary.answer_c.proposed) << log2.str();
  EXPECT_NE(r2.summary.answer_c.note.find("stays the cheapest"), std::string::npos) << r2.summary.answer_c.note;
}

// Under the time objective "slower than the defaults" means slower to the same loss. With B̄ ≈ 4, batch 16 needs a
// third of batch 64's samples to a loss, so at 0.4× its samples/s it is predicted ~1.36× faster to train, across the
// band: it is the pick, although its samples/s are below the baseline's in the interleaved rounds. (A gpt-mini tune on
// this CPU kept the defaults against such a batch, predicted 1.11–1.61× across its band, for its 0.87× samples/s.)
TEST(TimeObjective, ASmallerBatchFasterToTheLossIsPickedThoughItsSamplesPerSecondAreFewer) {
  FakeEnv env({{"FAKE_TOKENS", "1"}, {"FAKE_NOISE_SCALE", "4"}, {"FAKE_NOISE_JITTER", "0.02"}});
  testing::TempDir dir;
  TuneOptions o = options(dir, "grid", {"batch_size=16,64"});
  o.objective = ObjectiveKind::time;
  o.strategy.other_batches = true;
  o.setup.data = token_file(dir);
  std::ostringstream log;
  const TuneOutcome r = run_tune(o, log);
  const RunSummary& s = r.summary;
  ASSERT_TRUE(s.noise_scale.usable) << log.str();
  ASSERT_GE(s.answer_b.config, 0);
  EXPECT_LT(s.answer_b.throughput_ratio, 0.5);
  EXPECT_TRUE(s.answer_b.beats_a) << s.answer_b.time_ratio_min;
  EXPECT_EQ(winner(r).config.get("batch_size"), "16") << s.winner_note << "\n" << log.str();
  EXPECT_NE(read_file(dir / "run/report.md").find("It wins across that band: it is the pick."), std::string::npos);
}

TEST(TimeObjective, ABiggerBatchThatWinsAcrossTheBandIsPickedWithItsLearningRate) {
  // A noise scale far above both batches, measured precisely (±1% per norm): each window of the trial determines it,
  // so the band the growth fit leaves is narrow enough for batch 256 to win across it.
  FakeEnv env({{"FAKE_TOKENS", "1"}, {"FAKE_NOISE_SCALE", "5000"}, {"FAKE_NOISE_JITTER", "0.01"}});
  testing::TempDir dir;
  TuneOptions o = time_options(dir);
  o.setup.data = token_file(dir);
  o.setup.lr = 3e-4;
  std::ostringstream log;
  const TuneOutcome r = run_tune(o, log);
  const RunSummary& s = r.summary;
  ASSERT_TRUE(s.noise_scale.usable) << log.str();
  EXPECT_EQ(winner(r).config.get("batch_size"), "256") << log.str();
  EXPECT_EQ(s.answer_b.config, s.winner);
  EXPECT_TRUE(s.answer_b.beats_a);
  EXPECT_GT(s.answer_b.time_ratio_min, 1.0);
  EXPECT_GT(s.time_speedup, 1.3);
  // The headline's prediction is (b)'s, carried through (a): one number on the first screen, not two.
  EXPECT_DOUBLE_EQ(s.time_speedup,
                   s.answer_b.time_ratio * (s.answer_a == s.baseline ? 1.0 : s.answer_a_speedup));
  ASSERT_TRUE(s.answer_b.lr.given);
  // r = (256/64)(B̄+64)/(B̄+256) at the measured B̄; Adam × √r, SGD × r.
  const double v = s.noise_scale.value, gain = 4.0 * (v + 64) / (v + 256);
  EXPECT_GT(v, 1000);
  EXPECT_NEAR(s.answer_b.lr.gain, gain, 1e-9);
  EXPECT_NEAR(s.answer_b.lr.lr_adam, 3e-4 * std::sqrt(gain), 1e-12);
  EXPECT_NEAR(s.answer_b.lr.lr_sgd, 3e-4 * gain, 1e-12);
  const std::string md = read_file(dir / "run/report.md");
  EXPECT_NE(md.find("It wins across that band: it is the pick."), std::string::npos) << md;
  const std::string lr = fmt::format("{:.3g}", 3e-4 * std::sqrt(gain));
  EXPECT_NE(md.find("\nlr = " + lr + "  # a starting point for the new batch"), std::string::npos) << md;  // Python
  EXPECT_NE(md.find("const double lr = " + lr + ";"), std::string::npos) << md;                         // C++
  const auto best = nlohmann::json::parse(read_file(dir / "run/best.json"));
  EXPECT_EQ(best["time_to_train"]["answer"], "changed_batch");
  EXPECT_NEAR(best["time_to_train"]["changed_batch"]["learning_rate"]["adam"].get<double>(), 3e-4 * std::sqrt(gain), 1e-12);
}

TEST(TimeObjective, EffectiveBatchIsTheUserBatchAndLargerMicroBatchesAreAnswerB) {
  FakeEnv env({});
  testing::TempDir dir;
  TuneOptions o = options(dir, "grid", {"batch_size=32,64,256"});
  o.objective = ObjectiveKind::time;
  o.strategy.other_batches = true;
  o.strategy.effective_batch = 128;
  std::ostringstream log;
  const TuneOutcome r = run_tune(o, log);
  const RunSummary& s = r.summary;
  EXPECT_EQ(s.user_batch, 128);
  EXPECT_EQ(s.user_batch_source, "--effective-batch");
  for (const auto& c : s.configs) {
    const auto b = std::stoll(c.config.get("batch_size"));
    if (b <= 128) EXPECT_EQ(c.global_batch, 128) << c.config.key();  // held: grad_accum = 128 / b
    else EXPECT_EQ(c.global_batch, 256) << c.config.key();          // cannot hold it: another batch
  }
  EXPECT_EQ(winner(r).global_batch, 128);
}

// ---- autotune converge (tuner/converge/converge.h) on the fake worker: its converge trials follow the time model exactly
// (loss a function of samples ÷ (1 + B/B̄), simulated time = samples ÷ the objective's rate), so the measured ratio
// must come out as predicted; the real worker's agreement is what docs/time-to-train.md measures.

// Each candidate is compared with the baseline at a loss chosen from the two of them alone: a third arm that ends at a
// worse loss (a batch far past the noise scale) leaves the first arm's target, times and verdict as they were.
// --adam-rule sde (docs/time-to-train.md, "Adam at another batch"): a candidate at κ× the baseline's batch trains with
// 1 − β1 and 1 − β2 × κ and ε ÷ √κ; the baseline keeps PyTorch's; a rule it does not know is refused in one line.
TEST(Converge, TheAdamRuleMovesBetasAndEpsWithTheBatch) {
  FakeEnv env({{"FAKE_TOKENS", "1"}, {"FAKE_NOISE_SCALE", "20"}});
  testing::TempDir dir;
  ConvergeOptions c;
  c.worker = fake_worker();
  c.setup.data = token_file(dir);
  c.baseline = Config().set("batch_size", "32");
  c.candidates = {Config().set("batch_size", "128")};
  c.seconds = 10;
  c.reruns = 1;
  c.arm_orders = 1;
  c.adam_rule = "sde";
  c.out_dir = dir / "cv";
  std::ostringstream progress;
  const ConvergeSummary s = run_converge(c, progress);
  ASSERT_EQ(s.runs.size(), 3u);
  EXPECT_DOUBLE_EQ(s.runs[0].beta2, 0.999);
  EXPECT_DOUBLE_EQ(s.runs[0].eps, 1e-8);
  EXPECT_NEAR(s.runs[1].beta1, 1 - 4 * 0.1, 1e-12);  // κ = 4
  EXPECT_NEAR(s.runs[1].beta2, 1 - 4 * 0.001, 1e-12);
  EXPECT_NEAR(s.runs[1].eps, 1e-8 / 2, 1e-20);
  EXPECT_EQ(load_converge_summary(dir / "cv").adam_rule, "sde");
  EXPECT_NE(read_file(dir / "cv/converge.md").find("Adam's square-root scaling rule"), std::string::npos);
  c.adam_rule = "linear";
  c.out_dir = dir / "cv2";
  EXPECT_THROW_MSG(run_converge(c, progress), UsageError, "--adam-rule 'linear' is not allowed; allowed: none, sde");
}

// converge --compare ramp (docs/time-to-train.md, "A batch ramp"): answer (c) trains as an arm — its first phase's
// config, grad_accum switched after the step that reaches each phase's samples, each phase at the run's lr × √(its gain)
// — on two data orders like every arm; its prediction is the tune's phase-by-phase one, and it implies no noise scale.
TEST(Converge, TheBatchRampTrainsAsAnArm) {
  const FakeEnv env = ramp_env();
  testing::TempDir dir;
  const TuneOptions o = ramp_options(dir);
  std::ostringstream log;
  const TuneOutcome t = run_tune(o, log);
  const RampAnswer& ramp = t.summary.answer_c;
  ASSERT_TRUE(ramp.proposed) << ramp.note;
  ConvergeOptions c;
  c.worker = fake_worker();
  c.from_run = t.out_dir;
  c.compare = {"changed-batch", "ramp"};
  c.seconds = 60;  // simulated: past the ramp's second switch
  c.reruns = 1;
  c.out_dir = dir / "cv";
  std::ostringstream progress;
  const ConvergeSummary s = run_converge(c, progress);
  const ConvergeRun* arm = nullptr;
  int arms = 0;
  for (const auto& r : s.runs)
    if (!r.ramp.empty()) {
      ++arms;
      if (r.role == "candidate") arm = &r;
    }
  ASSERT_NE(arm, nullptr) << progress.str();
  EXPECT_EQ(arms, 2);  // on two data orders
  EXPECT_EQ(arm->label, "batch ramp 64 → 128 → 256");
  ASSERT_EQ(arm->ramp.size(), ramp.phases.size());
  for (std::size_t k = 0; k < arm->ramp.size(); ++k) {
    EXPECT_EQ(arm->ramp[k].grad_accum, ramp.phases[k].grad_accum);
    EXPECT_NEAR(arm->ramp[k].lr, 1e-3 * std::sqrt(ramp.phases[k].lr_gain), 1e-12);
    if (k) {
      EXPECT_EQ(arm->ramp[k].from_samples, std::llround(ramp.phases[k].from_samples));
    }
  }
  // The steps grow at each switch: 64 samples, then 128, then 256.
  std::set<std::int64_t> steps;
  for (std::size_t i = 1; i < arm->curve.size(); ++i) steps.insert(arm->curve[i].samples - arm->curve[i - 1].samples);
  EXPECT_EQ(steps, (std::set<std::int64_t>{64, 128, 256}));
  const ConvergeComparison* cmp = nullptr;
  for (const auto& x : s.comparisons)
    if (&s.runs[static_cast<std::size_t>(x.run)] == arm) cmp = &x;
  ASSERT_NE(cmp, nullptr);
  EXPECT_NEAR(cmp->predicted, ramp.baseline_seconds / ramp.seconds, 1e-9);
  EXPECT_EQ(cmp->predicted, cmp->predicted_by_tune);
  EXPECT_GT(cmp->measured, 1);  // faster than the baseline: more samples/s
  EXPECT_EQ(cmp->implied_noise_scale, 0);
  const auto j = nlohmann::json::parse(read_file(dir / "cv/converge.json"));
  bool has_ramp = false;
  for (const auto& r : j["runs"]) has_ramp |= r["ramp"].size() == ramp.phases.size();
  EXPECT_TRUE(has_ramp);
  // `autotune report` rebuilds it from the journal.
  EXPECT_EQ(load_converge_summary(dir / "cv").runs.size(), s.runs.size());
}

TEST(Converge, AddingAnArmChangesNoOtherArmsVerdict) {
  FakeEnv env({{"FAKE_TOKENS", "1"}, {"FAKE_NOISE_SCALE", "20"}});
  testing::TempDir dir;
  const auto converge = [&](const std::string& name, std::vector<Config> candidates) {
    ConvergeOptions c;
    c.worker = fake_worker();
    c.setup.data = token_file(dir);
    c.baseline = Config().set("batch_size", "32");
    c.candidates = std::move(candidates);
    c.seconds = 20;
    c.reruns = 1;
    c.out_dir = dir / name;
    std::ostringstream progress;
    return run_converge(c, progress);
  };
  const ConvergeSummary one = converge("one", {Config().set("batch_size", "64")});
  const ConvergeSummary two = converge("two", {Config().set("batch_size", "64"), Config().set("batch_size", "1024")});
  ASSERT_EQ(one.comparisons.size(), 1u);
  ASSERT_EQ(two.comparisons.size(), 2u);
  const ConvergeComparison &a = one.comparisons[0], &b = two.comparisons[0];
  EXPECT_GT(a.measured, 0);
  EXPECT_DOUBLE_EQ(a.target_loss, b.target_loss);
  EXPECT_DOUBLE_EQ(a.measured, b.measured);
  EXPECT_DOUBLE_EQ(a.samples_ratio, b.samples_ratio);
  // The big batch ends worse than the baseline: its own comparison is at its own final loss, where the baseline was
  // earlier in its run.
  const ConvergeComparison& big = two.comparisons[1];
  EXPECT_GT(big.target_loss, a.target_loss);
  EXPECT_LT(big.target_share, a.target_share);
}

// Calibration by training (tuner/pricing/calibration.h): converge --from-run writes the noise scale its changed batches imply
// beside the tune run; the run's report then prices with it, labelled with the converge run and its date; a second
// converge keeps the first calibration; one of other data is refused in one line.
/// A time-objective tune on a token file into DIR/run (the fake's environment set by the caller).
RunSummary tune_on_tokens(const testing::TempDir& dir, std::ostringstream& log) {
  TuneOptions o = time_options(dir);
  o.setup.data = token_file(dir);
  return run_tune(o, log).summary;
}

/// converge --from-run DIR/run --compare changed-batch on the fake, 30 s a run, into DIR/cv.
ConvergeOptions converge_changed_batch(const testing::TempDir& dir, int reruns) {
  ConvergeOptions c;
  c.worker = fake_worker();
  c.from_run = dir / "run";
  c.compare = {"changed-batch"};
  c.seconds = 30;
  c.reruns = reruns;
  c.out_dir = dir / "cv";
  return c;
}

TEST(Converge, ItsNoiseScaleCalibratesTheTuneRun) {
  FakeEnv env({{"FAKE_TOKENS", "1"}, {"FAKE_NOISE_SCALE", "20"}});
  testing::TempDir dir;
  std::ostringstream log;
  ASSERT_GE(tune_on_tokens(dir, log).winner, 0) << log.str();
  const TuneOptions o = time_options(dir);  // the run's workload; its data: token_file's
  const double measured = load_run_summary(dir / "run").noise_scale.value;
  ConvergeOptions c = converge_changed_batch(dir, 1);
  std::ostringstream progress;
  const ConvergeSummary cv = run_converge(c, progress);
  EXPECT_NE(progress.str().find("calibration: the changed batches imply B̄ ="), std::string::npos) << progress.str();
  ASSERT_TRUE(fs::exists(dir / "run/calibration.json"));
  const RunSummary s = load_run_summary(dir / "run");
  ASSERT_TRUE(s.noise_scale.calibrated) << s.noise_scale.calibration_refused;
  EXPECT_NEAR(s.noise_scale.value, 20, 6);  // the fake's converge trials follow B̄ = 20
  EXPECT_DOUBLE_EQ(s.noise_scale.own_value, measured);
  EXPECT_NE(s.noise_scale.calibration_basis.find(cv.finished_at), std::string::npos) << s.noise_scale.calibration_basis;
  std::ostringstream out, err;
  ASSERT_EQ(run_cli({"report", dir / "run", "--out", dir / "rep"}, out, err), 0) << err.str();
  EXPECT_NE(read_file(dir / "rep/report.md").find("calibrated by training (converge run"), std::string::npos);
  // A second converge keeps the first calibration beside the new one.
  c.out_dir = dir / "cv2";
  run_converge(c, progress);
  int kept = 0;
  for (const auto& e : fs::directory_iterator(dir / "run")) kept += e.path().filename().string().rfind("calibration-", 0) == 0;
  EXPECT_EQ(kept, 1);
  // A calibration of other data is refused, in one line, and the run's own noise scale prices.
  auto j = nlohmann::json::parse(read_file(dir / "run/calibration.json"));
  j["data"] = "/elsewhere/tokens.bin";
  std::ofstream(dir / "run/calibration.json") << j.dump();
  const RunSummary refused = load_run_summary(dir / "run");
  EXPECT_FALSE(refused.noise_scale.calibrated);
  EXPECT_DOUBLE_EQ(refused.noise_scale.value, measured);
  EXPECT_EQ(refused.noise_scale.calibration_refused,
            fmt::format("calibration.json refused: it is from a converge run of data /elsewhere/tokens.bin (this run: {}, data {}, "
                        "batch 64); the run's own noise scale prices it",
                        o.setup.workload, std::string(dir / "tokens.bin")));
}

// A run whose user batch never measured stably has no winner, yet it can have an answer (b) (resnet18 on photo crops,
// docs/lr-runs/2026-12-01-cpu-from-start): converge --compare changed-batch trains it; only the pick needs a winner.
TEST(Converge, ARunWithoutAWinnerStillTrainsItsChangedBatch) {
  FakeEnv env({{"FAKE_TOKENS", "1"}, {"FAKE_NOISE_SCALE", "20"}, {"FAKE_NOISY", "batch_size=64"}});
  testing::TempDir dir;
  std::ostringstream log;
  const RunSummary tuned = tune_on_tokens(dir, log);
  ASSERT_LT(tuned.winner, 0) << log.str();
  ASSERT_GE(tuned.answer_b.config, 0) << log.str();
  ConvergeOptions c = converge_changed_batch(dir, 0);
  std::ostringstream progress;
  const ConvergeSummary s = run_converge(c, progress);
  ASSERT_EQ(s.comparisons.size(), 1u) << progress.str();
  EXPECT_EQ(s.runs[s.comparisons[0].run].config, tuned.configs[tuned.answer_b.config].config);
  EXPECT_GT(s.comparisons[0].measured, 0);
  c.compare = {"pick"};
  c.out_dir = dir / "cv-pick";
  EXPECT_THROW_MSG(run_converge(c, progress), UsageError,
                   fmt::format("--from-run {}: the run has no winner; nothing to compare (--compare changed-batch trains its "
                               "answer (b), where it has one)",
                               std::string(dir / "run")));
}

TEST(Converge, FromATuneRunTheMeasuredTimeRatioIsThePredictedOne) {
  FakeEnv env({{"FAKE_TOKENS", "1"}, {"FAKE_NOISE_SCALE", "20"}});
  testing::TempDir dir;
  std::ostringstream log;
  const RunSummary tuned = tune_on_tokens(dir, log);
  ASSERT_GE(tuned.winner, 0) << log.str();
  ConvergeOptions c;
  c.worker = fake_worker();
  c.from_run = dir / "run";
  c.seconds = 30;
  c.out_dir = dir / "cv";
  c.save = dir / "w.pt";  // the fake writes no weights: the path is only checked
  std::ostringstream progress;
  const ConvergeSummary s = run_converge(c, progress);
  // baseline, the pick, the changed batch (= the fastest), the baseline on 2 other orders, each candidate on order 1
  ASSERT_EQ(s.runs.size(), 7u) << progress.str();
  EXPECT_EQ(s.runs[0].role, "baseline");
  EXPECT_EQ(s.runs[3].data_order, 1);
  EXPECT_EQ(s.runs[4].role, "rerun");
  EXPECT_EQ(s.runs[5].role, "candidate-rerun");
  EXPECT_EQ(s.runs[5].data_order, 1);
  EXPECT_EQ(s.runs[5].config, s.runs[1].config);
  ASSERT_EQ(s.comparisons.size(), 2u);
  const ConvergeComparison& pick = s.comparisons[0];
  EXPECT_TRUE(pick.picked);
  EXPECT_NEAR(pick.measured, pick.predicted, 0.05 * pick.predicted);
  EXPECT_EQ(pick.orders, 2);  // its own two data orders give the measured ratio an interval
  EXPECT_EQ(pick.order_ratios.size(), 2u);
  EXPECT_LE(pick.measured_lo, pick.measured);
  EXPECT_GE(pick.measured_hi, pick.measured);
  EXPECT_TRUE(pick.agrees);
  EXPECT_FALSE(pick.above_throughput);
  const ConvergeComparison& bigger = s.comparisons[1];
  EXPECT_EQ(s.runs[bigger.run].global_batch, 256);
  EXPECT_GT(bigger.throughput_ratio, 1.5);  // faster in samples/s …
  EXPECT_LT(bigger.measured, 0.8);          // … slower to the loss, as predicted
  EXPECT_NEAR(bigger.measured, bigger.predicted, 0.05 * bigger.predicted);
  EXPECT_GT(bigger.predicted_by_tune, 0);
  // The changed batch's prediction is the one the tune's first screen printed for (b), not a second computation.
  ASSERT_GE(tuned.answer_b.config, 0);
  EXPECT_EQ(tuned.configs[tuned.answer_b.config].config, s.runs[bigger.run].config);
  EXPECT_DOUBLE_EQ(bigger.predicted_by_tune,
                   tuned.answer_b.time_ratio * (tuned.answer_a == tuned.baseline ? 1.0 : tuned.answer_a_speedup));
  EXPECT_GT(s.runs[bigger.run].lr, s.runs[0].lr);  // a changed batch starts from the scaled LR
  EXPECT_EQ(s.eps_runs, 3);
  EXPECT_LT(s.eps_time, 0.05);
  for (const auto& r : s.runs) {  // the common target is a loss each of the baseline's data orders reached …
    if (r.role == "baseline" || r.role == "rerun") {
      EXPECT_TRUE(r.reached) << r.label;
    }
  }
  for (const auto& cmp : s.comparisons)  // … and each comparison's, one the candidate and the baseline both reached
    EXPECT_TRUE(cmp.candidate_time > 0 && cmp.baseline_time > 0 && cmp.target_loss > 0) << s.runs[cmp.run].label;
  const std::string md = read_file(dir / "cv/converge.md");
  EXPECT_NE(md.find("measured 0."), std::string::npos) << md;
  EXPECT_NE(md.find("Run-to-run spread (ε)"), std::string::npos) << md;
  EXPECT_NE(read_file(dir / "cv/converge.html").find("chart-loss-samples"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(read_file(dir / "cv/converge.json"))["schema"], "autotune.converge/1");
  // `autotune report` rebuilds every output from the journal alone.
  std::ostringstream out, err;
  ASSERT_EQ(run_cli({"report", dir / "cv", "--out", dir / "cv2"}, out, err), 0) << err.str();
  EXPECT_EQ(read_file(dir / "cv2/converge.md"), md);
  // Nothing the user had is overwritten; a synthetic run has nothing to converge on.
  EXPECT_THROW(run_converge(c, progress), UsageError);
  ConvergeOptions synthetic;
  synthetic.worker = fake_worker();
  synthetic.candidates = {Config().set("batch_size", "256")};
  synthetic.out_dir = dir / "cv3";
  EXPECT_THROW(run_converge(synthetic, progress), UsageError);
}

TEST(TuneInterrupt, CtrlCStopsTheWorkerKeepsFinishedTrialsReportsThemAndResumeGoesOn) {
  FakeEnv env({{"FAKE_SLEEP", "0.6"}});
  testing::TempDir dir;
  const pid_t pid = start_tune(dir, {});
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));  // a few trials finished, one running
  kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid, 15), 130) << slurp(dir / "err.txt");
  const std::string out = slurp(dir / "out.txt");
  EXPECT_NE(out.find("interrupted by SIGINT: "), std::string::npos) << out;
  EXPECT_NE(out.find("continue with: autotune tune --resume " + (dir / "run")), std::string::npos) << out;
  EXPECT_EQ(processes_mentioning(dir / "run"), 0) << "no worker may outlive an interrupted run";
  EXPECT_NE(slurp(dir / "run/report.md").find("interrupted"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir / "run/junit.xml"));
  size_t kept = 0;
  {
    Journal j(dir / "run/journal.sqlite");
    const auto trials = j.trials();
    kept = trials.size();
    EXPECT_GE(kept, 1u);
    for (const auto& t : trials) EXPECT_NE(t.result.status, TrialStatus::crash) << "the stopped trial is not recorded";
  }
  // --resume runs what is left, repeating nothing that finished.
  setenv("FAKE_SLEEP", "0.02", 1);
  std::ostringstream log;
  TuneOptions o;
  o.worker = fake_worker();
  o.out_dir = dir / "run";
  o.resume = true;
  o.budget_seconds = 300;
  const TuneOutcome r = run_tune(o, log);
  EXPECT_GE(r.summary.winner, 0);
  EXPECT_NE(log.str().find(fmt::format("{} trials already in the journal", kept)), std::string::npos) << log.str();
  Journal j(dir / "run/journal.sqlite");
  std::set<std::string> searched;
  for (const auto& t : j.trials()) {
    if (t.kind == TrialKind::search) {
      EXPECT_TRUE(searched.insert(t.plan.config.key()).second) << t.plan.config.key();
    }
  }
}

TEST(TuneInterrupt, ASecondSignalStopsAtOnceEvenWhenTheWorkerIgnoresSigterm) {
  FakeEnv env({{"FAKE_SLEEP", "30"}});
  setenv("FAKE_IGNORE_TERM", "1", 1);
  testing::TempDir dir;
  const pid_t pid = start_tune(dir, {});
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // the baseline worker is running
  EXPECT_GE(processes_mentioning(dir / "run"), 1);
  kill(pid, SIGTERM);  // the worker ignores the SIGTERM passed on; the grace is 5 s
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto t = std::chrono::steady_clock::now();
  kill(pid, SIGTERM);
  EXPECT_EQ(wait_exit(pid, 3), 143);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(), 2.0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // SIGKILL is delivered, the kernel reaps
  EXPECT_EQ(processes_mentioning(dir / "run"), 0);
  EXPECT_NE(slurp(dir / "err.txt").find("stopped at once (second signal)"), std::string::npos);
  unsetenv("FAKE_IGNORE_TERM");
}

}  // namespace
}  // namespace autotune
