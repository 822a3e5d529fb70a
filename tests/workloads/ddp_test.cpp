// Data-parallel trials on this CPU (Gloo, 2 ranks): gradients and parameters against one process on
// the global batch, each communication hook against the mean it compresses, the layout knobs bitwise,
// and the launcher's handling of a rank that crashes or hangs (the real worker, AUTOTUNE_TEST_FAULT).
#include <dirent.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/support/temp_dir.h"
#include "tuner/exec/subprocess.h"
#include "tuner/exec/trial_runner.h"

namespace autotune {
namespace {

using testing::binary_dir;
using testing::TempDir;

std::string ddp_rank() { return binary_dir() + "/tests/ddp_rank"; }

std::vector<float> read_floats(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  EXPECT_TRUE(f.good()) << path;
  std::vector<float> v(static_cast<size_t>(f.tellg()) / sizeof(float));
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  return v;
}

SpawnOptions rank_process(const std::string& out, std::vector<std::string> args, std::vector<std::string> env) {
  SpawnOptions so;
  so.argv = {ddp_rank(), out};
  so.argv.insert(so.argv.end(), args.begin(), args.end());
  so.env = std::move(env);
  so.stderr_path = out + ".stderr";
  return so;
}

/// Two ranks of ddp_rank; their outputs OUT.rank0 and OUT.rank1.
void two_ranks(const std::string& out, const std::vector<std::string>& args) {
  static int port = 29700;
  ++port;
  std::vector<SpawnOptions> m;
  for (int r = 0; r < 2; ++r)
    m.push_back(rank_process(out, args,
                             {"WORLD_SIZE=2", "RANK=" + std::to_string(r), "LOCAL_RANK=" + std::to_string(r),
                              "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port)}));
  const GroupOutcome g = run_group(m, 120);
  ASSERT_EQ(g.first_failed, -1) << tail_of_file(out + ".stderr");
  ASSERT_FALSE(g.timed_out);
}

void one_process(const std::string& out, const std::vector<std::string>& args, const std::string& shard = "") {
  std::vector<std::string> env = {"WORLD_SIZE="};  // not a rank of anything
  if (!shard.empty()) env.push_back("AUTOTUNE_SHARD=" + shard);
  const GroupOutcome g = run_group({rank_process(out, args, env)}, 120);
  ASSERT_EQ(g.first_failed, -1) << tail_of_file(out + ".stderr");
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::abs(double(a[i]) - b[i]));
  return d;
}

TEST(Ddp, TwoRanksTrainLikeOneProcessOnTheConcatenatedGlobalBatch) {
  TempDir t;
  two_ranks(t / "ddp", {"mlp", "5", "batch_size=16"});
  one_process(t / "one", {"mlp", "5", "batch_size=32"});
  const auto r0 = read_floats(t / "ddp.rank0"), r1 = read_floats(t / "ddp.rank1"), one = read_floats(t / "one");
  ASSERT_GT(r0.size(), 1000u);
  EXPECT_EQ(r0, r1) << "parameters differ between the ranks after 5 steps";
  EXPECT_LT(max_abs_diff(r0, one), 1e-4) << "2 ranks x 16 vs 1 process x 32";
  // A rank that trained on its shard without the others is far off: the tolerance separates the two.
  one_process(t / "alone", {"mlp", "5", "batch_size=16"}, "0/2");
  EXPECT_GT(max_abs_diff(read_floats(t / "alone"), one), 1e-3);
}

TEST(Ddp, GradAccumulationSynchronisesOnlyTheLastMicroStepAndMatchesOneProcess) {
  TempDir t;
  two_ranks(t / "ddp", {"mlp", "4", "batch_size=8", "grad_accum=2"});
  one_process(t / "one", {"mlp", "4", "batch_size=16", "grad_accum=2"});
  const auto r0 = read_floats(t / "ddp.rank0"), r1 = read_floats(t / "ddp.rank1");
  EXPECT_EQ(r0, r1);
  // AdamW divides by the root of tiny second moments, so rounding differences of the summation order
  // (per-rank micro-step sums, then the mean) grow to ~1e-5; an unsynchronised rank is off by > 1e-3.
  EXPECT_LT(max_abs_diff(r0, read_floats(t / "one")), 1e-4);
  one_process(t / "alone", {"mlp", "4", "batch_size=8", "grad_accum=2"}, "0/2");
  EXPECT_GT(max_abs_diff(read_floats(t / "alone"), read_floats(t / "one")), 1e-3);
}

struct HookError {
  double worst_ratio = 0;  ///< max over elements of |got − mean| / the dtype's bound: ≤ 1 passes
  double largest_rel = 0;  ///< max |got − mean| / (|g0| + |g1|): > fp32 noise proves it compressed
};

/// The averaged gradient of one step under `hook`, against the exact mean of the two ranks' local
/// gradients (each rank's shard trained alone). Per element the bound is the dtype's rounding of the
/// halves and of their sum, rel · (|g0| + |g1|), plus its smallest step for values near zero.
HookError hook_error(const std::string& hook, double rel, double abs_step) {
  TempDir t;
  two_ranks(t / "g", {"mlp", "0", "batch_size=16", "comm_hook=" + hook});
  one_process(t / "s0", {"mlp", "0", "batch_size=16"}, "0/2");
  one_process(t / "s1", {"mlp", "0", "batch_size=16"}, "1/2");
  const auto got = read_floats(t / "g.rank0"), g0 = read_floats(t / "s0"), g1 = read_floats(t / "s1");
  EXPECT_EQ(got, read_floats(t / "g.rank1"));
  EXPECT_NE(g0, g1) << "the two shards must differ, or the mean proves nothing";
  HookError e;
  for (size_t i = 0; i < got.size(); ++i) {
    const double mean = 0.5 * (double(g0[i]) + g1[i]), mag = std::abs(double(g0[i])) + std::abs(double(g1[i]));
    const double d = std::abs(got[i] - mean);
    e.worst_ratio = std::max(e.worst_ratio, d / (rel * mag + abs_step + 1e-12));
    if (mag > 1e-6) e.largest_rel = std::max(e.largest_rel, d / mag);
  }
  return e;
}

TEST(Ddp, AllreduceHookGivesTheMeanOfTheRanksGradients) {
  const HookError e = hook_error("allreduce", 1e-6, 1e-12);
  EXPECT_LE(e.worst_ratio, 1.0);
}
TEST(Ddp, Fp16HookGivesTheMeanWithinHalfPrecision) {
  const HookError e = hook_error("fp16", 1.0 / 1024, 1.0 / (1 << 23));  // 2^-11 per rounding; subnormal step 2^-24
  EXPECT_LE(e.worst_ratio, 1.0);
  EXPECT_GT(e.largest_rel, 1e-5) << "no element differs beyond fp32 noise: the gradients were not compressed";
}
TEST(Ddp, Bf16HookGivesTheMeanWithinBfloat16Precision) {
  const HookError e = hook_error("bf16", 1.0 / 128, 1e-30);  // 2^-8 per rounding; bf16 keeps fp32's range
  EXPECT_LE(e.worst_ratio, 1.0);
  EXPECT_GT(e.largest_rel, 1.0 / 2048) << "no element differs beyond fp16's rounding: this was not bf16";
}

TEST(Ddp, StaticGraphAndGradientsAsBucketViewsGiveBitwiseTheSameParameters) {
  TempDir t;
  const std::vector<std::string> base = {"resnet18", "3", "batch_size=4"};
  two_ranks(t / "plain", base);
  auto with = [&](const std::string& kv) {
    auto a = base;
    a.push_back(kv);
    return a;
  };
  two_ranks(t / "static", with("static_graph=true"));
  two_ranks(t / "view", with("grad_as_bucket_view=true"));
  two_ranks(t / "small", with("bucket_mb=1"));
  const auto plain = read_floats(t / "plain.rank0");
  EXPECT_EQ(read_floats(t / "static.rank0"), plain);
  EXPECT_EQ(read_floats(t / "view.rank0"), plain);
  // Other buckets sum in another grouping: equal within fp32 rounding, not necessarily bitwise.
  EXPECT_LT(max_abs_diff(read_floats(t / "small.rank0"), plain), 1e-5);
}

// ---- the launcher, with the real worker ---------------------------------------------------------

TrialPlan worker_plan() {
  TrialPlan p;
  p.setup.workload = "mlp";
  p.setup.device = "cpu";
  p.config.set("batch_size", "16").set("ranks", "2");
  p.setup.measure.warmup_min_steps = 2;
  p.setup.measure.warmup_min_seconds = 0;
  p.setup.measure.window_min_seconds = 0.05;
  p.setup.measure.window_min_steps = 3;
  return p;
}

/// Processes whose command line mentions `needle` (a trial folder): none may outlive a trial.
int processes_mentioning(const std::string& needle) {
  int n = 0;
  DIR* d = opendir("/proc");
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream f(std::string("/proc/") + e->d_name + "/cmdline");
    std::string s((std::istreambuf_iterator<char>(f)), {});
    if (s.find(needle) != std::string::npos) ++n;
  }
  closedir(d);
  return n;
}

TEST(DdpLauncher, BothRanksRunAndRankZeroReportsEveryRank) {
  TempDir t;
  TrialRunner runner(RunnerOptions(binary_dir() + "/bin/autotune-worker", t.str()).timeout_seconds(120));
  const TrialRecord rec = runner.run(worker_plan(), TrialKind::search, 1);
  ASSERT_EQ(rec.result.status, TrialStatus::ok) << rec.result.message;
  ASSERT_TRUE(rec.result.dist.has_value());
  EXPECT_EQ(rec.result.dist->world, 2);
  EXPECT_EQ(rec.result.dist->backend, "gloo");
  EXPECT_EQ(rec.result.dist->launcher, "autotune");
  ASSERT_EQ(rec.result.dist->ranks.size(), 2u);
  for (const auto& r : rec.result.dist->ranks) {
    EXPECT_GT(r.step_ms, 0);
    EXPECT_GE(r.collectives_per_step, 1.0);  // one bucket's allreduce at least
    EXPECT_GT(r.comm_bytes_per_step, 6e6);   // the mlp's 1.6 M fp32 gradients
  }
  // Global samples: both ranks' batches.
  const auto& w = rec.result.windows.front();
  EXPECT_EQ(w.samples, static_cast<std::int64_t>(w.steps) * 16 * 2);

  // grad_accum=2: the first micro-step accumulates locally (no_sync), so a step still makes one
  // allreduce of the same bytes.
  TrialPlan p = worker_plan();
  p.config.set("grad_accum", "2");
  const TrialRecord acc = runner.run(p, TrialKind::search, 2);
  ASSERT_EQ(acc.result.status, TrialStatus::ok) << acc.result.message;
  EXPECT_DOUBLE_EQ(acc.result.dist->ranks[0].collectives_per_step, rec.result.dist->ranks[0].collectives_per_step);
  EXPECT_DOUBLE_EQ(acc.result.dist->ranks[0].comm_bytes_per_step, rec.result.dist->ranks[0].comm_bytes_per_step);
}

TEST(DdpLauncher, ATracedTrialWritesOneTraceFolderRankByRankWithItsCollectives) {
  TempDir t;
  namespace fs = std::filesystem;
  const fs::path dir = t.str();
  TrialRunner runner(RunnerOptions(binary_dir() + "/bin/autotune-worker", t / "runs").timeout_seconds(120));
  TrialPlan p = worker_plan();
  fs::create_directories(dir / "traces");
  p.trace = (dir / "traces" / "winner.json").string();
  p.trace_steps = 3;
  const TrialRecord rec = runner.run(p, TrialKind::trace, 1);
  ASSERT_EQ(rec.result.status, TrialStatus::ok) << rec.result.message;
  ASSERT_TRUE(rec.result.profile.has_value());
  const ProfileSummary& prof = *rec.result.profile;
  EXPECT_EQ(prof.trace, (dir / "traces" / "winner" / "rank0.json").string());
  // The folder holds exactly one file per rank (HTA reads every .json in it), none beside it.
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(dir / "traces" / "winner")) files.insert(e.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"rank0.json", "rank1.json"}));
  EXPECT_FALSE(fs::exists(dir / "traces" / "winner.json"));
  for (int rank = 0; rank < 2; ++rank) {
    std::ifstream f(dir / "traces" / "winner" / fmt::format("rank{}.json", rank));
    const nlohmann::json trace = nlohmann::json::parse(f);
    EXPECT_EQ(trace["distributedInfo"]["rank"], rank);
    EXPECT_EQ(trace["distributedInfo"]["world_size"], 2);
    EXPECT_EQ(trace["distributedInfo"]["backend"], "gloo");
    int allreduces = 0;
    std::int64_t bytes = 0;
    for (const auto& e : trace["traceEvents"])
      if (e["ph"] == "X" && e["name"] == "gloo:allreduce") {
        ++allreduces;
        bytes += e["args"]["bytes"].get<std::int64_t>();
        EXPECT_GT(e["dur"].get<double>(), 0);
      }
    EXPECT_GE(allreduces, 3);                     // one bucket at least, each traced step
    EXPECT_GT(bytes, 3 * std::int64_t{6000000});  // the mlp's 1.6 M fp32 gradients, each step
  }
  // Rank 0's profile found the same collectives: Gloo's time on the host, split hidden / exposed.
  ASSERT_TRUE(prof.comm.has_value());
  EXPECT_EQ(prof.comm->source, "host collectives");
  EXPECT_GE(prof.comm->calls_per_step, 1.0);
  EXPECT_GT(prof.comm->mb_per_step, 6.0);
  EXPECT_GT(prof.comm->ms_per_step, 0);
  EXPECT_GE(prof.comm->hidden_share, 0);
  EXPECT_LE(prof.comm->hidden_share, 1);
  EXPECT_NEAR(prof.comm->exposed_ms_per_step, prof.comm->ms_per_step * (1 - prof.comm->hidden_share), 1e-9);
}

/// The two-rank worker plan run in `dir` with rank 1 made to misbehave (AUTOTUNE_TEST_FAULT).
TrialRecord run_with_fault(const std::string& fault, const std::string& dir, double timeout) {
  setenv("AUTOTUNE_TEST_FAULT", fault.c_str(), 1);
  TrialRunner runner(RunnerOptions(binary_dir() + "/bin/autotune-worker", dir).timeout_seconds(timeout));
  TrialRecord rec = runner.run(worker_plan(), TrialKind::search, 1);
  unsetenv("AUTOTUNE_TEST_FAULT");
  return rec;
}

TEST(DdpLauncher, ARankThatCrashesFailsTheTrialAtOnceNamesItAndLeavesNothing) {
  TempDir t;
  const TrialRecord rec = run_with_fault("crash@1:3", t.str(), 120);
  EXPECT_EQ(rec.result.status, TrialStatus::crash);
  EXPECT_NE(rec.result.message.find("rank 1 of 2"), std::string::npos) << rec.result.message;
  EXPECT_NE(rec.result.message.find("SIGABRT"), std::string::npos) << rec.result.message;
  EXPECT_LT(rec.result.wall_seconds, 60) << "the other rank must be stopped at once, not at the timeout";
  EXPECT_EQ(processes_mentioning(t.str()), 0);
}

TEST(DdpLauncher, ARankThatHangsFailsTheTrialAtTheTimeoutNamesItAndLeavesNothing) {
  TempDir t;
  const TrialRecord rec = run_with_fault("hang@1:3", t.str(), 25);
  EXPECT_EQ(rec.result.status, TrialStatus::timeout);
  EXPECT_NE(rec.result.message.find("rank 1 is behind"), std::string::npos) << rec.result.message;
  EXPECT_EQ(processes_mentioning(t.str()), 0);
}

TEST(DdpLauncher, OneRankWithAnExplicitWorldOfOneJoinsAGroupButTheTunersOwnEnvironmentDoesNotLeak) {
  TempDir t;
  TrialPlan p = worker_plan();
  p.config.erase("ranks");
  write_plan(p, t / "plan.json");
  // As torchrun --nproc_per_node=1 starts it: a one-rank process group, the Reducer still in the step.
  SpawnOptions so;
  so.argv = {binary_dir() + "/bin/autotune-worker", "run", "--plan", t / "plan.json", "--result", t / "result.json"};
  so.env = {"WORLD_SIZE=1", "RANK=0", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=1", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=29791"};
  so.stderr_path = t / "stderr.log";
  ASSERT_EQ(run_group({so}, 120).first_failed, -1) << tail_of_file(t / "stderr.log");
  const TrialResult one = read_result(t / "result.json");
  ASSERT_EQ(one.status, TrialStatus::ok) << one.message;
  ASSERT_TRUE(one.dist.has_value());
  EXPECT_EQ(one.dist->world, 1);
  EXPECT_EQ(one.dist->backend, "gloo");
  EXPECT_GE(one.dist->ranks.at(0).collectives_per_step, 1.0);

  // The tuner running inside such an environment: its one-process trials stay one process.
  setenv("WORLD_SIZE", "2", 1);
  setenv("MASTER_PORT", "29792", 1);
  TrialRunner runner(RunnerOptions(binary_dir() + "/bin/autotune-worker", t / "runs").timeout_seconds(120));
  const TrialRecord rec = runner.run(p, TrialKind::search, 1);
  unsetenv("WORLD_SIZE");
  unsetenv("MASTER_PORT");
  EXPECT_EQ(rec.result.status, TrialStatus::ok) << rec.result.message;
  EXPECT_FALSE(rec.result.dist.has_value());
}

TEST(DdpLauncher, TorchrunStartsTheSameWorkerAndItWritesTheSameFields) {
  const std::string torchrun = AUTOTUNE_TORCHRUN;
  if (torchrun.empty() || access(torchrun.c_str(), X_OK) != 0) GTEST_SKIP() << "torchrun not found next to LibTorch's Python";
  const std::string dir = torchrun.substr(0, torchrun.rfind('/'));
  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  setenv("PATH", (dir + ":" + old_path).c_str(), 1);
  TempDir t;
  TrialRunner runner(RunnerOptions(binary_dir() + "/bin/autotune-worker", t.str()).timeout_seconds(180).launcher("torchrun"));
  const TrialRecord rec = runner.run(worker_plan(), TrialKind::search, 1);
  setenv("PATH", old_path.c_str(), 1);
  ASSERT_EQ(rec.result.status, TrialStatus::ok) << rec.result.message << "\n" << rec.stderr_tail;
  ASSERT_TRUE(rec.result.dist.has_value());
  EXPECT_EQ(rec.result.dist->launcher, "torchrun");
  EXPECT_EQ(rec.result.dist->world, 2);
  ASSERT_EQ(rec.result.dist->ranks.size(), 2u);
  EXPECT_NE(rec.result.dist->store.find("client"), std::string::npos) << "torchrun's agent serves the store";
  EXPECT_GT(rec.result.dist->ranks[1].comm_bytes_per_step, 6e6);
}

}  // namespace
}  // namespace autotune
