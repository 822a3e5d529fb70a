// `autotune check` end to end against fake-worker: exit codes, regressions in throughput and memory,
// the inconclusive paths, a crashed side, stored baselines and their fingerprint, recorded runs.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <thread>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "knobs/protocol.h"
#include "reports/check_reports.h"
#include "tests/support/cli_process.h"
#include "tests/support/temp_dir.h"
#include "tuner/check/check.h"
#include "tuner/cli.h"

namespace autotune {
namespace {

namespace fs = std::filesystem;

std::string fake_worker() { return testing::binary_dir() + "/bin/fake-worker"; }

/// FAKE_* settings for this test only; every worker the check starts inherits them.
class Env {
 public:
  explicit Env(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const char* v : kVars) unsetenv(v);
    setenv("FAKE_SLEEP", "0", 1);
    for (const auto& [k, v] : vars) setenv(k, v, 1);
  }
  ~Env() {
    for (const char* v : kVars) unsetenv(v);
  }
  static constexpr const char* kVars[] = {"FAKE_SLEEP", "FAKE_CV",    "FAKE_CV_SEED",  "FAKE_SCALE",
                                          "FAKE_MEM_SCALE", "FAKE_CRASH", "GITHUB_ACTIONS", "FAKE_BUSY"};
};

/// A worker that is the fake one with extra settings: a "different build" for side B.
std::string wrapped_worker(const testing::TempDir& dir, const std::string& name, const std::string& env) {
  const std::string path = dir / name;
  std::ofstream(path) << "#!/bin/sh\n" << env << " exec " << fake_worker() << " \"$@\"\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

struct CliRun {
  int status;
  std::string out, err;
};
CliRun check(std::vector<std::string> args) {
  std::vector<std::string> full = {"check", "--worker", fake_worker()};
  full.insert(full.end(), args.begin(), args.end());
  std::ostringstream out, err;
  const int st = run_cli(full, out, err);
  return {st, out.str(), err.str()};
}

CheckSummary summary(const std::string& dir) { return nlohmann::json::parse(read_file(dir + "/check.json")).get<CheckSummary>(); }

TEST(Check, AVersusAPassesAndWritesEveryOutput) {
  Env env({{"FAKE_CV", "0.005"}});
  testing::TempDir dir;
  const CliRun r = check({"--reps", "6", "--out", dir / "c"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const CheckSummary s = summary(dir / "c");
  EXPECT_EQ(s.verdict, "pass");
  EXPECT_EQ(s.a.reps.size(), 6u);
  EXPECT_EQ(s.b.reps.size(), 6u);
  EXPECT_EQ(s.order.size(), 12u);
  for (const char* f : {"check.json", "check.md", "check.html", "junit.xml", "results.json", "gab-throughput.json",
                        "gab-memory.json", "bmf.json"})
    EXPECT_TRUE(fs::exists(dir / ("c/" + std::string(f)))) << f;
  // The order is the seed's: the same seed gives the same interleaving.
  testing::TempDir other;
  ASSERT_EQ(check({"--reps", "6", "--out", other / "c"}).status, 0);
  EXPECT_EQ(summary(other / "c").order, s.order);
  ASSERT_EQ(check({"--reps", "6", "--order-seed", "5", "--out", other / "d"}).status, 0);
  EXPECT_NE(summary(other / "d").order, s.order);
}

TEST(Check, ASlowerCandidateBuildIsARegressionWithExit1) {
  Env env({{"FAKE_CV", "0.005"}});
  testing::TempDir dir;
  const std::string slow = wrapped_worker(dir, "slow-worker", "FAKE_SCALE=0.9");
  const CliRun r = check({"--reps", "8", "--candidate-worker", slow, "--out", dir / "c"});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  const CheckSummary s = summary(dir / "c");
  EXPECT_EQ(s.verdict, "regression");
  ASSERT_FALSE(s.metrics.empty());
  EXPECT_EQ(s.metrics[0].name, "throughput");
  EXPECT_EQ(s.metrics[0].verdict, "regression");
  EXPECT_NEAR(s.metrics[0].ratio, 0.9, 0.02);
  EXPECT_LT(s.metrics[0].ratio_hi, 0.97);
  EXPECT_EQ(s.b.worker, slow);
  EXPECT_NE(read_file(dir / "c/junit.xml").find("<failure message=\"B is"), std::string::npos);
  const auto notes = github_annotations(s);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("::error title=autotune check%3A throughput regression (mlp defaults)::B is ", 0), 0u) << notes[0];
  // Under GitHub Actions the annotation is printed.
  Env gha({{"FAKE_CV", "0.005"}, {"GITHUB_ACTIONS", "true"}});
  EXPECT_NE(check({"--reps", "8", "--candidate-worker", slow, "--out", dir / "d"}).out.find("::error title="), std::string::npos);
}

TEST(Check, SidesThatSawDifferentContentionAreInconclusiveNamingIt) {
  // B's build is 10% slower, and its repetitions ran beside another program: a regression measured on a busy
  // host is not B's to own (the fake worker reports the host load, 1.0 of 2 CPUs, and its rate unchanged).
  Env env({{"FAKE_CV", "0.005"}});
  testing::TempDir dir;
  const std::string busy_slow = wrapped_worker(dir, "busy-worker", "FAKE_SCALE=0.9 FAKE_BUSY=batch_size=64");
  const CliRun r = check({"--reps", "6", "--set", "batch_size=64", "--candidate-worker", busy_slow, "--out", dir / "c"});
  EXPECT_EQ(r.status, 4) << r.out << r.err;
  const CheckSummary s = summary(dir / "c");
  EXPECT_EQ(s.verdict, "inconclusive");
  EXPECT_EQ(s.reason.rfind("the sides saw different contention: other programs used up to 1.00 of 2 CPUs during 0 of A's and "
                           "6 of B's repetitions", 0),
            0u)
      << s.reason;
  ASSERT_FALSE(s.metrics.empty());  // what was measured stays in the report
  EXPECT_NEAR(s.metrics[0].ratio, 0.9, 0.02);
  EXPECT_TRUE(s.b.reps[0].busy);
  EXPECT_FALSE(s.a.reps[0].busy);
  // --max-host-load 100 turns the guard off for this check: the same sides are a regression; a limit that is not a
  // percentage is one line, exit 2, before anything runs.
  const CliRun off = check({"--reps", "6", "--set", "batch_size=64", "--candidate-worker", busy_slow, "--max-host-load", "100",
                            "--out", dir / "off"});
  EXPECT_EQ(off.status, 1) << off.out << off.err;
  EXPECT_FALSE(summary(dir / "off").b.reps[0].busy);
  for (const char* bad : {"nan", "0", "inf"}) {
    const CliRun r2 = check({"--max-host-load", bad, "--out", dir / "never"});
    EXPECT_EQ(r2.status, 2) << bad << ": " << r2.err;
    EXPECT_NE(r2.err.find("--max-host-load"), std::string::npos) << r2.err;
    EXPECT_FALSE(fs::exists(dir / "never"));
  }
}

TEST(Check, MoreMemoryBeyondItsFloorIsARegressionFasterIsAPass) {
  Env env({{"FAKE_CV", "0.005"}});
  testing::TempDir dir;
  CliRun r = check({"--reps", "6", "--candidate-worker", wrapped_worker(dir, "fat", "FAKE_MEM_SCALE=1.2"), "--out", dir / "m"});
  EXPECT_EQ(r.status, 1) << r.out;
  const CheckSummary s = summary(dir / "m");
  ASSERT_EQ(s.metrics.size(), 2u);
  EXPECT_EQ(s.metrics[1].name, "peak_memory");
  EXPECT_EQ(s.metrics[1].verdict, "regression");
  EXPECT_EQ(s.metrics[0].verdict, "pass");
  r = check({"--reps", "6", "--candidate-worker", wrapped_worker(dir, "fast", "FAKE_SCALE=1.2"), "--out", dir / "f"});
  EXPECT_EQ(r.status, 0) << r.out;  // improvements pass
}

TEST(Check, FewRepetitionsOrANoisyBaselineAreInconclusiveExit4UnlessTold) {
  Env env({{"FAKE_CV", "0.005"}});
  testing::TempDir dir;
  CliRun r = check({"--reps", "3", "--out", dir / "few"});
  EXPECT_EQ(r.status, 4) << r.out;
  EXPECT_EQ(summary(dir / "few").verdict, "inconclusive");
  EXPECT_NE(summary(dir / "few").reason.find("3 usable repetitions of A and 3 of B; at least 5 per side are needed"),
            std::string::npos);
  EXPECT_NE(read_file(dir / "few/junit.xml").find("<skipped message="), std::string::npos);
  r = check({"--reps", "3", "--inconclusive", "pass", "--out", dir / "few-pass"});
  EXPECT_EQ(r.status, 0);
  // 8% run-to-run noise, the draws fixed (FAKE_CV_SEED): unseeded, 6 draws sometimes spread little enough
  // by chance (about 1 run in 65: 6 of N(1, 0.08) with a sample CV under 2.9%) to make the baseline look known.
  Env noisy({{"FAKE_CV", "0.08"}, {"FAKE_CV_SEED", "1"}});
  r = check({"--reps", "6", "--out", dir / "noisy"});
  EXPECT_EQ(r.status, 4) << r.out;
  const CheckSummary s = summary(dir / "noisy");
  EXPECT_EQ(s.metrics[0].verdict, "inconclusive");
  EXPECT_GT(s.metrics[0].reps_needed, 6);
}

TEST(Check, ACrashedSideFailsTheCheckWithExit3AndTheReportsAreWritten) {
  Env env({{"FAKE_CRASH", "zero_grad=none"}});
  testing::TempDir dir;
  const CliRun r = check({"--reps", "5", "--candidate-set", "zero_grad=none", "--out", dir / "c"});
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  const CheckSummary s = summary(dir / "c");
  EXPECT_EQ(s.verdict, "failed");
  EXPECT_EQ(s.reason.rfind("side B repetition 1 (trials/", 0), 0u) << s.reason;
  EXPECT_NE(s.reason.find("crash"), std::string::npos) << s.reason;
  EXPECT_NE(read_file(dir / "c/junit.xml").find("<error message="), std::string::npos);
}

// Ctrl-C (or a CI runner's SIGTERM) during a check: the running worker is stopped, the repetitions that
// finished are reported (check.json/md/html, junit.xml with an error, not a pass), the verdict says
// "interrupted", and the exit status is 128 + the signal; no worker is left.
TEST(Check, AnInterruptedCheckReportsWhatFinishedAndIsNeverAPass) {
  Env env({{"FAKE_SLEEP", "0.5"}});
  testing::TempDir dir;
  const pid_t pid = testing::start_process(
      {testing::binary_dir() + "/bin/autotune", "check", "--worker", fake_worker(), "--reps", "20", "--out", dir / "c"},
      dir / "out.txt", dir / "err.txt");
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // a few repetitions done, one running
  kill(pid, SIGTERM);
  EXPECT_EQ(testing::wait_exit(pid, 15), 143) << testing::slurp(dir / "err.txt");
  EXPECT_EQ(testing::processes_mentioning(dir / "c"), 0) << "no worker may outlive an interrupted check";
  const CheckSummary s = summary(dir / "c");
  EXPECT_EQ(s.verdict, "interrupted");
  EXPECT_EQ(s.interrupted_by, SIGTERM);
  const size_t done = s.a.reps.size() + s.b.reps.size();
  EXPECT_GE(done, 1u);
  EXPECT_LT(done, 40u);
  EXPECT_EQ(s.order.size(), done) << "only finished repetitions are in the order";
  for (const CheckSide* side : {&s.a, &s.b})
    for (const auto& r : side->reps) EXPECT_EQ(r.status, "ok") << "the stopped repetition is not kept";
  EXPECT_EQ(s.reason, fmt::format("interrupted by SIGTERM after {} of 40 repetitions; undecided (a check is not resumed: run it "
                                  "again)",
                                  done));
  EXPECT_NE(read_file(dir / "c/junit.xml").find("<error message=\"interrupted by SIGTERM"), std::string::npos);
  EXPECT_NE(read_file(dir / "c/check.md").find("interrupted"), std::string::npos);
  EXPECT_NE(testing::slurp(dir / "out.txt").find("check: interrupted — interrupted by SIGTERM"), std::string::npos)
      << testing::slurp(dir / "out.txt");
}

TEST(Check, AStoredBaselineIsUsedOnlyWhenTheFingerprintMatches) {
  Env env({{"FAKE_CV", "0.005"}});
  testing::TempDir dir;
  ASSERT_EQ(check({"--reps", "6", "--out", dir / "main"}).status, 0);
  CliRun r = check({"--reps", "6", "--baseline-stored", dir / "main/check.json", "--out", dir / "pr"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  CheckSummary s = summary(dir / "pr");
  EXPECT_TRUE(s.a.stored);
  EXPECT_EQ(s.order, "BBBBBB");  // only the candidate ran
  // The same stored side with another torch version: no comparable baseline, never a guess.
  auto j = nlohmann::json::parse(read_file(dir / "main/check.json"));
  j["b"]["env"]["torch_version"] = "2.10.0";
  write_file_atomic(dir / "old.json", j.dump());
  r = check({"--reps", "6", "--baseline-stored", dir / "old.json", "--out", dir / "pr2"});
  EXPECT_EQ(r.status, 4);
  s = summary(dir / "pr2");
  EXPECT_EQ(s.verdict, "inconclusive");
  EXPECT_NE(s.reason.find("no comparable baseline"), std::string::npos) << s.reason;
  EXPECT_NE(s.reason.find("torch '2.10.0' vs '2.11.0' here"), std::string::npos) << s.reason;
  // Another config than the stored one is not comparable either.
  r = check({"--reps", "6", "--set", "batch_size=128", "--baseline-stored", dir / "main/check.json", "--out", dir / "pr3"});
  EXPECT_EQ(r.status, 4);
  EXPECT_NE(summary(dir / "pr3").reason.find("config"), std::string::npos);
}

TEST(Check, UsageErrorsAreOneLineWithExit2) {
  Env env({});
  testing::TempDir dir;
  CliRun r = check({"--floor", "three", "--out", dir / "x"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(
      r.err,
      "autotune check: --floor 'three' is not a share; allowed: a percentage like 3% or a fraction like 0.03 (below 100%)\n");
  r = check({"--baseline-run", dir.str(), "--out", dir / "y"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "autotune check: " + dir.str() + ": no best.json there; give a tune output folder or its best.json\n");
  fs::create_directories(dir / "full");
  std::ofstream(dir / "full/keep.txt") << "mine";
  r = check({"--out", dir / "full"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(read_file(dir / "full/keep.txt"), "mine");
  r = check({"--inconclusive", "maybe"});
  EXPECT_EQ(r.status, 2);
}

TEST(Check, TheWinnerOfARecordedRunIsASide) {
  Env env({{"FAKE_CV", "0.005"}});
  testing::TempDir dir;
  std::ostringstream out, err;
  ASSERT_EQ(run_cli({"tune", "--worker", fake_worker(), "--knobs", "batch_size=64,256", "--objective", "throughput", "--budget",
                     "60s", "--out", dir / "run"},
                    out, err),
            0)
      << err.str();
  const CliRun r = check({"--reps", "5", "--baseline-run", dir / "run", "--candidate-set", "batch_size=64", "--out", dir / "c"});
  const CheckSummary s = summary(dir / "c");
  EXPECT_EQ(s.a.config.get("batch_size"), "256") << s.a.source;
  EXPECT_NE(s.a.source.find("the winner of"), std::string::npos);
  EXPECT_EQ(s.b.config.get("batch_size"), "64");
  EXPECT_EQ(r.status, 1) << r.out;  // the fake objective: batch 64 is much slower than 256
}

TEST(Check, TheOtherSideTrainsTheRecordedRunsModelNeverTheBuiltInMlp) {
  // A user-model run: side B is its winner; side A, given only a knob, must train the same model (it once fell
  // back to the built-in mlp and reported a 94.7% regression). A shared --workload that contradicts the run is
  // one line, exit 2.
  Env env({{"FAKE_CV", "0.005"}});
  testing::TempDir dir;
  std::ofstream(dir / "m.pt") << "a model";
  std::ostringstream out, err;
  ASSERT_EQ(run_cli({"tune", "--worker", fake_worker(), "--model", dir / "m.pt", "--knobs", "batch_size=64,256", "--objective",
                     "throughput", "--budget", "60s", "--out", dir / "run"},
                    out, err),
            0)
      << err.str();
  CliRun r = check({"--reps", "2", "--min-reps", "2", "--candidate-run", dir / "run", "--baseline-set", "batch_size=64", "--out",
                    dir / "c", "--inconclusive", "pass"});
  EXPECT_NE(r.status, 2) << r.err;
  for (const char* side : {"0001", "0002"}) {
    const auto plan = nlohmann::json::parse(read_file(dir / (std::string("c/trials/") + side + "/plan.json")));
    EXPECT_EQ(plan.value("model", ""), dir / "m.pt") << side;
  }
  EXPECT_NE(summary(dir / "c").a.source.find("model " + dir / "m.pt"), std::string::npos) << summary(dir / "c").a.source;
  r = check({"--workload", "gpt-mini", "--candidate-run", dir / "run", "--out", dir / "c2"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  EXPECT_NE(r.err.find("a check compares one model"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace autotune
