#include "tuner/exec/trial_runner.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <tuple>

#include "tests/support/temp_dir.h"
#include "tuner/exec/subprocess.h"

namespace autotune {
namespace {

TrialRecord run_fake(const testing::TempDir& dir, const char* mode, double timeout = 30) {
  setenv("FAKE_WORKER_MODE", mode, 1);
  TrialPlan plan;
  plan.setup.workload = "mlp";
  plan.config.set("batch_size", "64");
  TrialRunner runner(RunnerOptions(testing::source_dir() + "/tests/support/fake_worker.sh", dir.str()).timeout_seconds(timeout));
  return runner.run(plan, TrialKind::search, 1);
}

TEST(TrialRunner, OkResultIsReadBack) {
  testing::TempDir dir;
  const auto rec = run_fake(dir, "ok");
  EXPECT_EQ(rec.result.status, TrialStatus::ok) << rec.result.message;
  EXPECT_EQ(rec.outcome, "exit 0");
  EXPECT_EQ(rec.result.windows.size(), 3u);
  EXPECT_TRUE(std::filesystem::exists(dir / "0001/plan.json"));
  EXPECT_EQ(read_plan(dir / "0001/plan.json").config.key(), "batch_size=64");
}

TEST(TrialRunner, NonZeroExitIsACrashWithTheLastStderrLine) {
  testing::TempDir dir;
  const auto rec = run_fake(dir, "crash");
  EXPECT_EQ(rec.result.status, TrialStatus::crash);
  EXPECT_EQ(rec.result.message, "worker exit 3: fatal: something went badly wrong");
  EXPECT_EQ(rec.stderr_tail, "fatal: something went badly wrong\n");
}

TEST(TrialRunner, SignalIsACrash) {
  testing::TempDir dir;
  const auto rec = run_fake(dir, "segv");
  EXPECT_EQ(rec.result.status, TrialStatus::crash);
  EXPECT_EQ(rec.result.message, "worker killed by signal 11 (SIGSEGV): about to crash");
}

TEST(TrialRunner, HangIsStoppedAndRecordedAsTimeout) {
  testing::TempDir dir;
  const auto rec = run_fake(dir, "hang", 0.5);
  EXPECT_EQ(rec.result.status, TrialStatus::timeout);
  EXPECT_EQ(rec.result.message, "no result within 0.5 s; stopped (SIGTERM, then SIGKILL)");
  EXPECT_LT(rec.result.wall_seconds, 20);  // 0.5 s + 5 s grace, not the 60 s sleep
}

// Two ranks under srun, neither with a result: the one that died of SIGPIPE wrote into its dead peer's connection, so the
// other is named, whichever srun reported first (a launcher template stands in for srun and prints its lines).
TEST(TrialRunner, ARankKilledBySigpipeIsNotBlamedForItsPeersDeath) {
  testing::TempDir dir;
  TrialPlan plan;
  plan.setup.workload = "mlp";
  plan.config.set("ranks", "2");
  const std::string srun =
      "sh -c 'echo \"srun: error: atnode1: task 0: Broken pipe\" >&2; echo \"srun: error: atnode2: task 1: Aborted\" >&2; "
      "exit 134' {ranks} {cmd}";
  TrialRunner runner(RunnerOptions(testing::source_dir() + "/tests/support/fake_worker.sh", dir.str()).launcher(srun));
  const auto rec = runner.run(plan, TrialKind::search, 1);
  EXPECT_EQ(rec.result.status, TrialStatus::crash);
  EXPECT_EQ(rec.result.message.rfind("rank 1 of 2 on atnode2: Aborted (srun)", 0), 0u) << rec.result.message;
}

TEST(TrialRunner, UsageExitIsAnError) {
  testing::TempDir dir;
  const auto rec = run_fake(dir, "usage");
  EXPECT_EQ(rec.result.status, TrialStatus::error);
  EXPECT_EQ(rec.result.message, "worker exit 2: autotune-worker: error: unknown workload 'nope'");
}

TEST(TrialRunner, UnusableResultsAreErrors) {
  testing::TempDir dir;
  auto rec = run_fake(dir, "garbage");
  EXPECT_EQ(rec.result.status, TrialStatus::error);
  EXPECT_EQ(rec.result.message.rfind("worker exited 0 but its result is unusable: ", 0), 0u) << rec.result.message;
  testing::TempDir dir2;
  rec = run_fake(dir2, "silent");
  EXPECT_EQ(rec.result.status, TrialStatus::error);
  EXPECT_EQ(rec.result.message,
            "worker exited 0 but its result is unusable: " + (dir2 / "0001/result.json") + ": cannot open for reading");
}

TEST(TrialRunner, MissingWorkerIsAnErrorNotAThrow) {
  testing::TempDir dir;
  TrialRunner runner(RunnerOptions(dir / "no-such-worker", dir.str()));
  TrialPlan plan;
  plan.setup.workload = "mlp";
  const auto rec = runner.run(plan, TrialKind::search, 1);
  EXPECT_EQ(rec.result.status, TrialStatus::error);
  EXPECT_EQ(rec.result.message, "cannot run " + (dir / "no-such-worker") + ": No such file or directory");
}

TEST(Subprocess, ExitCodesSignalsAndTails) {
  testing::TempDir dir;
  SpawnOptions so;
  so.argv = {"/bin/sh", "-c", "echo one >&2; echo two >&2; exit 7"};
  so.stderr_path = dir / "err";
  auto out = run_process(so);
  EXPECT_EQ(out.exit_code, 7);
  EXPECT_EQ(out.describe(), "exit 7");
  EXPECT_EQ(last_line(tail_of_file(dir / "err")), "two");
  so.argv = {"/bin/sh", "-c", "kill -KILL $$"};
  out = run_process(so);
  EXPECT_TRUE(out.signaled);
  EXPECT_EQ(out.describe(), "killed by signal 9 (SIGKILL)");
}

// A waiter (sbatch --wait) that would poll on for a minute: the work's exit file ends the wait at once, and its status is
// the outcome — an exit code, or a shell's 128+N for signal N.
TEST(Subprocess, AnExitFileEndsTheWaitWithItsStatus) {
  testing::TempDir dir;
  SpawnOptions so;
  so.exit_file = dir / "job.exit";
  for (const auto& [written, code, signal] : {std::tuple{"3", 3, 0}, std::tuple{"0", 0, 0}, std::tuple{"143", -1, 15}}) {
    std::filesystem::remove(so.exit_file);
    so.argv = {"/bin/sh", "-c", fmt::format("sleep 0.2; echo {} > {}.part && mv {}.part {}; exec sleep 60", written, so.exit_file,
                                            so.exit_file, so.exit_file)};
    const auto out = run_process(so);
    EXPECT_LT(out.seconds, 10) << written;
    EXPECT_FALSE(out.timed_out || out.interrupted) << written;
    EXPECT_EQ(out.exit_code, code) << written;
    EXPECT_EQ(out.signaled, signal != 0) << written;
    EXPECT_EQ(out.signal, signal) << written;
  }
  // No file: the waiter's own exit stands, as before.
  std::filesystem::remove(so.exit_file);
  so.argv = {"/bin/sh", "-c", "exit 5"};
  EXPECT_EQ(run_process(so).exit_code, 5);
}

TEST(Subprocess, ANameAloneRemovesTheVariableAndNameEqualsSetsIt) {
  // A one-process trial must not see a launcher's RANK, LOCAL_RANK, …: removed, not set empty (an empty LOCAL_RANK
  // broke Lightning's import in the Python worker: int('')).
  testing::TempDir dir;
  setenv("AUTOTUNE_TEST_GONE", "7", 1);
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "echo \"${AUTOTUNE_TEST_GONE-unset} ${AUTOTUNE_TEST_SET-unset}\""};
  o.stdout_path = dir.str() + "/out.txt";
  o.env = {"AUTOTUNE_TEST_GONE", "AUTOTUNE_TEST_SET=5"};
  EXPECT_EQ(run_process(o).exit_code, 0);
  EXPECT_EQ(tail_of_file(o.stdout_path), "unset 5\n");
  unsetenv("AUTOTUNE_TEST_GONE");
}

}  // namespace
}  // namespace autotune
