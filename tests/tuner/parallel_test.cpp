// Trials in parallel slots (tuner/exec/): the slot plan and its bad inputs, the local executor against
// fake-worker (disjoint CPU sets, thread caps, side by side, placements, Ctrl-C), and tune --parallel end to
// end (the serial winner, nothing repeated, the finalists alone, interference measured, kill -9 and --resume).
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <sstream>
#include <thread>

#include "knobs/error.h"
#include "knobs/protocol.h"
#include "tests/support/cli_process.h"
#include "tests/support/journal_poll.h"
#include "tests/support/temp_dir.h"
#include "tuner/exec/executor.h"
#include "tuner/exec/interrupt.h"
#include "tuner/exec/slots.h"
#include "tuner/measures/journal.h"
#include "tuner/tune/tune.h"

namespace autotune {
namespace {

namespace fs = std::filesystem;

std::string fake_worker() { return testing::binary_dir() + "/bin/fake-worker"; }

struct Env {
  explicit Env(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const auto& [k, v] : vars) {
      names.push_back(k);
      setenv(k, v, 1);
    }
  }
  ~Env() {
    for (const auto& n : names) unsetenv(n.c_str());
  }
  std::vector<std::string> names;
};

std::string usage_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

TEST(Slots, CpusAreSplitIntoDisjointContiguousSharesAndGpusOneEach) {
  const auto two = plan_local_slots(2, {0, 1, 2, 3}, {});
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].cpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(two[1].cpus, (std::vector<int>{2, 3}));
  EXPECT_EQ(two[1].gpu, "");
  const auto three = plan_local_slots(3, {4, 5, 6, 7, 9}, {});
  std::vector<int> all;
  for (const auto& s : three) {
    EXPECT_FALSE(s.cpus.empty());
    all.insert(all.end(), s.cpus.begin(), s.cpus.end());
  }
  EXPECT_EQ(all, (std::vector<int>{4, 5, 6, 7, 9}));  // every CPU once, none shared
  const auto gpus = plan_local_slots(2, {0, 1, 2, 3, 4, 5, 6, 7}, {"3", "5"});
  EXPECT_EQ(gpus[0].gpu, "3");
  EXPECT_EQ(gpus[1].gpu, "5");
  EXPECT_EQ(gpus[1].cpus, (std::vector<int>{4, 5, 6, 7}));
  // The serial run: one slot, not pinned, no environment of its own.
  const auto one = plan_local_slots(1, {0, 1}, {"0"});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(one[0].cpus.empty());
  EXPECT_TRUE(one[0].env().empty());
  // A slot's environment caps PyTorch's threads to its cores and names its GPU.
  const auto e = gpus[1].env();
  EXPECT_NE(std::find(e.begin(), e.end(), "OMP_NUM_THREADS=4"), e.end());
  EXPECT_NE(std::find(e.begin(), e.end(), "CUDA_VISIBLE_DEVICES=5"), e.end());
  EXPECT_EQ(gpus[1].describe(), "slot 1: CPUs 4-7, GPU 5");
}

TEST(Slots, BadCountsAreOneLineNamingWhatIsAllowed) {
  const std::string zero = usage_error([] { plan_local_slots(0, {0, 1}, {}); });
  EXPECT_NE(zero.find("--parallel 0"), std::string::npos) << zero;
  EXPECT_NE(zero.find("allowed: 1 to 2"), std::string::npos) << zero;
  const std::string cpus = usage_error([] { plan_local_slots(3, {0, 1}, {}); });
  EXPECT_NE(cpus.find("more slots than CPUs"), std::string::npos) << cpus;
  const std::string gpus = usage_error([] { plan_local_slots(3, {0, 1, 2, 3, 4, 5}, {"0", "1"}); });
  EXPECT_NE(gpus.find("more slots than devices"), std::string::npos) << gpus;
  EXPECT_NE(gpus.find("allowed: 1 to 2"), std::string::npos) << gpus;
  for (const auto& m : {zero, cpus, gpus}) EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(Slots, CpuListsAndVisibleDevices) {
  EXPECT_EQ(cpu_list({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_THROW(parse_cpu_list("3-1"), std::invalid_argument);
  EXPECT_THROW(parse_cpu_list("1x"), std::invalid_argument);
  {
    Env e({{"CUDA_VISIBLE_DEVICES", "2,5,7"}});
    EXPECT_EQ(visible_gpus(3), (std::vector<std::string>{"2", "5", "7"}));
  }
  unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(visible_gpus(2), (std::vector<std::string>{"0", "1"}));
  EXPECT_FALSE(allowed_cpus().empty());
}

TrialPlan plan_for(const std::string& batch) {
  TrialPlan p;
  p.setup.workload = "mlp";
  p.config.set("batch_size", batch);
  return p;
}

// Two slots on this host's first two CPUs: each trial runs on its slot's CPU only, with PyTorch's threads capped
// to it, the two slots' trials overlap in time, and each record says where it ran and beside which trials.
TEST(LocalExecutor, TwoSlotsRunSideBySideOnDisjointCpusAndSayWhere) {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "this host lets the test run on 1 CPU; two slots need 2";
  Env e({{"FAKE_SLEEP", "0.5"}, {"FAKE_RECORD_SLOT", "1"}});
  testing::TempDir dir;
  const auto slots = plan_local_slots(2, {cpus[0], cpus[1]}, {});
  auto ex = make_local_executor(TrialRunner(RunnerOptions(fake_worker(), dir / "trials")), slots);
  EXPECT_EQ(ex->name(), "local slots");
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Finished> done;
  int seq = 0;
  for (const char* b : {"32", "64", "128", "256"}) {
    if (!ex->has_free_slot()) done.push_back(ex->wait_any());
    ex->start(TrialJob{plan_for(b), TrialKind::search, ++seq});
  }
  while (ex->in_flight() > 0) done.push_back(ex->wait_any());
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(done.size(), 4u);
  EXPECT_LT(wall, 4 * 0.5) << "four 0.5-s trials in two slots took as long as one after another";
  std::map<int, std::pair<double, double>> when;  // seq → [start, end] as the worker saw it
  for (const auto& f : done) {
    ASSERT_FALSE(f.error);
    EXPECT_EQ(f.record.result.status, TrialStatus::ok) << f.record.result.message;
    ASSERT_TRUE(f.record.result.placement);
    const Placement& p = *f.record.result.placement;
    EXPECT_EQ(p.seq, f.seq);
    EXPECT_EQ(p.slots, 2);
    EXPECT_EQ(p.executor, "local slots");
    const auto& slot = slots.at(static_cast<std::size_t>(p.slot));
    EXPECT_EQ(p.cpus, cpu_list(slot.cpus));
    const auto seen = nlohmann::json::parse(testing::slurp((fs::path(dir / "trials") / fmt::format("{:04d}", f.seq) / "result.json.slot").string()));
    EXPECT_EQ(seen["cpus"].get<std::vector<int>>(), slot.cpus) << "the worker ran outside its slot's CPUs";
    EXPECT_EQ(seen["omp"], "1");
    when[f.seq] = {seen["start"].get<double>(), seen["end"].get<double>()};
    EXPECT_FALSE(p.alone()) << "trial " << f.seq << " had another in flight beside it";
    // Every neighbour it names really overlapped it in time.
    for (int n : p.neighbours) EXPECT_NE(n, f.seq);
  }
  // No neighbour is missed: two trials whose workers overlapped in time name each other. (A neighbour may
  // also be one whose process was still ending, after its worker's last timestamp.)
  for (const auto& a : done)
    for (const auto& b : done) {
      if (a.seq == b.seq || !(when[a.seq].first < when[b.seq].second && when[b.seq].first < when[a.seq].second)) continue;
      const auto& n = a.record.result.placement->neighbours;
      EXPECT_NE(std::find(n.begin(), n.end(), b.seq), n.end()) << a.seq << " overlapped " << b.seq << " but does not name it";
    }
}

// Ctrl-C with trials in flight: every slot's worker is stopped, the executor hands the interruption back,
// and no worker is left.
TEST(LocalExecutor, AnInterruptStopsEveryTrialInFlight) {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "this host lets the test run on 1 CPU; two slots need 2";
  Env e({{"FAKE_HANG", "batch_size=32"}});
  testing::TempDir dir;
  auto ex = make_local_executor(TrialRunner(RunnerOptions(fake_worker(), dir / "trials")),
                                plan_local_slots(2, {cpus[0], cpus[1]}, {}));
  install_interrupt_handlers();
  ex->start(TrialJob{plan_for("32"), TrialKind::search, 1});
  ex->start(TrialJob{plan_for("32"), TrialKind::search, 2});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(testing::processes_mentioning(dir / "trials"), 2);
  kill(getpid(), SIGINT);
  const Finished f = ex->wait_any();
  EXPECT_TRUE(f.error);
  ex->drain();
  clear_interrupt();
  EXPECT_EQ(ex->in_flight(), 0);
  EXPECT_EQ(testing::processes_mentioning(dir / "trials"), 0) << "a worker outlived the interrupt";
}

TuneOptions options(const testing::TempDir& dir, const std::string& name, const std::string& strategy, int parallel) {
  TuneOptions o;
  o.worker = fake_worker();
  o.out_dir = dir / name;
  o.strategy.name = strategy;
  o.budget_seconds = 300;
  o.objective = ObjectiveKind::throughput;
  o.baseline_defaults = "catalog";
  o.strategy.other_batches = false;
  o.exec.parallel = parallel;
  for (const auto& k : {"batch_size=64,128,256", "precision=fp32,amp_bf16", "optimizer_impl=loop,fused"}) o.space.add_assignment(k);
  return o;
}

// The same search in two slots and in one: the same winner, every config measured once, the confirmation and
// the fp32 references alone, the interference measured and reported.
TEST(TuneParallel, TwoSlotsFindTheSerialWinnerRepeatNothingAndConfirmAlone) {
  if (allowed_cpus().size() < 2) GTEST_SKIP() << "two slots need 2 CPUs";
  Env e({{"FAKE_SLEEP", "0.05"}});
  for (const std::string strategy : {"grid", "auto", "halving", "coordinate"}) {
    SCOPED_TRACE(strategy);
    testing::TempDir dir;
    std::ostringstream slog, plog;
    const TuneOutcome serial = run_tune(options(dir, "serial", strategy, 1), slog);
    const TuneOutcome par = run_tune(options(dir, "parallel", strategy, 2), plog);
    ASSERT_GE(serial.summary.winner, 0) << slog.str();
    ASSERT_GE(par.summary.winner, 0) << plog.str();
    EXPECT_EQ(par.summary.configs[par.summary.winner].config, serial.summary.configs[serial.summary.winner].config) << plog.str();
    const auto trials = Journal(dir / "parallel/journal.sqlite").trials();
    std::multiset<std::string> searched;
    int interference = 0, beside = 0;
    for (const auto& t : trials) {
      ASSERT_TRUE(t.result.placement) << "trial " << t.id << " has no placement";
      const Placement& p = *t.result.placement;
      if (t.kind == TrialKind::search) searched.insert(t.plan.config.key() + fmt::format("@{}", t.plan.setup.measure.window_min_seconds));
      if (t.kind == TrialKind::interference) ++interference;
      if (!p.alone()) ++beside;
      if (t.kind == TrialKind::confirm || t.kind == TrialKind::reference || t.kind == TrialKind::baseline) {
        EXPECT_TRUE(p.alone()) << to_string(t.kind) << " trial " << t.id << " ran beside " << p.neighbours.size();
      }
    }
    for (const auto& k : searched) EXPECT_EQ(searched.count(k), 1u) << k;
    EXPECT_EQ(interference, 2);
    EXPECT_GT(beside, 2) << "no search trial ran beside another";
    const ScaleOut& so = par.summary.scale_out;
    EXPECT_EQ(so.slots, 2);
    EXPECT_EQ(so.copies, 2);
    EXPECT_GT(so.interference(), 0.5);
    EXPECT_EQ(so.finalists_beside, 0);
    const std::string md = testing::slurp(dir / "parallel/report.md");
    EXPECT_NE(md.find("## Where the trials ran"), std::string::npos);
    EXPECT_NE(md.find("**Interference:**"), std::string::npos) << md;
    EXPECT_EQ(testing::slurp(dir / "serial/report.md").find("## Where the trials ran"), std::string::npos);
    EXPECT_NE(testing::slurp(dir / "parallel/report.html").find("<h2>Where the trials ran</h2>"), std::string::npos);
    const auto best = nlohmann::json::parse(testing::slurp(dir / "parallel/best.json"));
    EXPECT_EQ(best["scale_out"]["slots"], 2);
    EXPECT_EQ(best["scale_out"]["finalists_beside"], 0);
    EXPECT_FALSE(nlohmann::json::parse(testing::slurp(dir / "serial/best.json")).contains("scale_out"));
  }
}

// A noisy config in slots: re-measured in fresh processes as slots free up (before and after the host's noise
// is calibrated), never the winner, and no trial is started beside another from the serial path.
TEST(TuneParallel, NoisyConfigsAreRemeasuredBesideTheOthersAndNeverWin) {
  if (allowed_cpus().size() < 2) GTEST_SKIP() << "two slots need 2 CPUs";
  Env e({{"FAKE_SLEEP", "0.05"}, {"FAKE_NOISY", "optimizer_impl=fused"}});
  testing::TempDir dir;
  std::ostringstream log;
  const TuneOutcome r = run_tune(options(dir, "run", "grid", 2), log);
  ASSERT_GE(r.summary.winner, 0) << log.str();
  EXPECT_NE(r.summary.configs[r.summary.winner].config.get("optimizer_impl"), "fused");
  int remeasures = 0;
  for (const auto& t : Journal(dir / "run/journal.sqlite").trials()) {
    if (t.kind != TrialKind::remeasure) continue;
    ++remeasures;
    EXPECT_EQ(t.plan.config.get("optimizer_impl"), "fused") << "only the noisy configs are re-measured";
  }
  EXPECT_GE(remeasures, 4) << log.str();  // 6 noisy configs, each measured again before it is rejected
}

// An input-bound config whose windows vary with their batches is timed again in a slot with windows as long as its
// spread says (8% against 5%: 4×; tuner/search/stability.h, remeasure_scale), as the serial search does, and wins.
TEST(TuneParallel, AnInputBoundConfigIsRemeasuredWithLongerWindowsInASlot) {
  if (allowed_cpus().size() < 2) GTEST_SKIP() << "two slots need 2 CPUs";
  Env e({{"FAKE_SLEEP", "0.05"}, {"FAKE_INPUT_BOUND", "optimizer_impl=fused"}});
  testing::TempDir dir;
  TuneOptions o = options(dir, "run", "grid", 2);
  o.stability.calibrate = false;
  std::ostringstream log;
  const TuneOutcome r = run_tune(o, log);
  ASSERT_GE(r.summary.winner, 0) << log.str();
  EXPECT_EQ(r.summary.configs[r.summary.winner].config.get("optimizer_impl"), "fused") << log.str();
  std::map<std::string, std::vector<double>> windows;  // each fused config's measured trials: their windows, in order
  for (const auto& t : Journal(dir / "run/journal.sqlite").trials())
    if (t.kind == TrialKind::search || t.kind == TrialKind::remeasure) {
      if (t.plan.config.get("optimizer_impl") != "fused") {
        EXPECT_EQ(t.kind, TrialKind::search) << t.plan.config.key() << ": only the input-bound configs are re-measured";
        continue;
      }
      windows[t.plan.config.key()].push_back(t.plan.setup.measure.window_min_seconds);
    }
  EXPECT_EQ(windows.size(), 6u) << log.str();
  for (const auto& [key, w] : windows) EXPECT_EQ(w, (std::vector<double>{1.0, 4.0})) << key;
  EXPECT_NE(log.str().find("timed again with windows 4× the run's (4.0 s)"), std::string::npos) << log.str();
}

// A config timed on a busy host in a slot is timed again as the serial search would: alone, once the other slots are
// empty (its neighbours would be the very load it waits out), after a wait for a quiet host; it never wins.
TEST(TuneParallel, AConfigTimedOnABusyHostIsRemeasuredAloneAfterAWait) {
  if (allowed_cpus().size() < 2) GTEST_SKIP() << "two slots need 2 CPUs";
  Env e({{"FAKE_SLEEP", "0.05"}, {"FAKE_BUSY", "optimizer_impl=fused"}, {"FAKE_BUSY_FACTOR", "3"}});
  testing::TempDir dir;
  TuneOptions o = options(dir, "run", "grid", 2);
  o.stability.max_quiet_wait = 1;  // the real host is read (other tests may run beside this one): a second at most
  std::ostringstream log;
  const TuneOutcome r = run_tune(o, log);
  ASSERT_GE(r.summary.winner, 0) << log.str();
  EXPECT_NE(r.summary.configs[r.summary.winner].config.get("optimizer_impl"), "fused") << log.str();
  int remeasures = 0, beside = 0;
  for (const auto& t : Journal(dir / "run/journal.sqlite").trials()) {
    ASSERT_TRUE(t.result.placement);
    if (t.kind == TrialKind::search && !t.result.placement->alone()) ++beside;
    if (t.kind != TrialKind::remeasure) continue;
    ++remeasures;
    EXPECT_EQ(t.plan.config.get("optimizer_impl"), "fused") << "only the busy configs are re-measured";
    EXPECT_TRUE(t.result.placement->alone()) << "re-measure " << t.id << " ran beside " << t.result.placement->neighbours.size();
  }
  EXPECT_GE(remeasures, 4) << log.str();  // 6 busy configs, each measured again before it is rejected
  EXPECT_GT(beside, 0) << "the quiet configs still ran side by side";
  EXPECT_GE(r.summary.busy_host.rejected, 1);
}

// A data-parallel config in a local parallel run is not folded to one rank for want of a slot's cores: it runs
// on the whole host with nothing beside it (placement slot −1), search and confirmation alike.
TEST(TuneParallel, DataParallelTrialsRunAloneOnTheWholeHost) {
  if (allowed_cpus().size() < 2) GTEST_SKIP() << "two slots need 2 CPUs";
  Env e({{"FAKE_SLEEP", "0.05"}});
  testing::TempDir dir;
  TuneOptions o = options(dir, "run", "grid", 2);
  o.space = KnobSpace();
  for (const auto& k : {"batch_size=64,128,256", "ranks=1,2"}) o.space.add_assignment(k);
  std::ostringstream log;
  const TuneOutcome r = run_tune(o, log);
  ASSERT_GE(r.summary.winner, 0) << log.str();
  int whole = 0, beside = 0;
  for (const auto& t : Journal(dir / "run/journal.sqlite").trials()) {
    ASSERT_TRUE(t.result.placement);
    const Placement& p = *t.result.placement;
    if (t.plan.config.get("ranks", "1") == "2") {
      ++whole;
      EXPECT_EQ(p.slot, -1) << to_string(t.kind) << " " << t.plan.config.key();
      EXPECT_TRUE(p.alone()) << to_string(t.kind) << " " << t.plan.config.key() << " ran beside " << p.neighbours.size();
      EXPECT_EQ(p.cpus, "");
    } else if (!p.alone()) {
      ++beside;
    }
  }
  EXPECT_GE(whole, 3) << "every ranks=2 config ran as ranks=2\n" << log.str();
  EXPECT_GT(beside, 0) << "the one-rank configs still ran side by side";
  EXPECT_TRUE(r.summary.folded.empty()) << "a ranks=2 config was folded: " << r.summary.folded.front().reasons.front();
}

// kill -9 of the tuner with two trials in flight: no worker survives it, and --resume runs what was in flight
// again, repeats nothing that was journaled and ends with every config measured once.
TEST(TuneParallel, Kill9WithTrialsInFlightThenResumeRepeatsNothing) {
  if (allowed_cpus().size() < 2) GTEST_SKIP() << "two slots need 2 CPUs";
  Env e({{"FAKE_SLEEP", "0.4"}});
  testing::TempDir dir;
  const std::string out = dir / "run";
  const pid_t pid = testing::start_process({testing::binary_dir() + "/bin/autotune", "tune", "--worker", fake_worker(), "--out", out,
                                           "--knobs", "batch_size=32,64,128", "optimizer_impl=loop,fused", "--parallel", "2",
                                           "--objective", "throughput"},
                                          dir / "out.txt", dir / "err.txt");
  const std::size_t committed = testing::wait_for_trials(out, 5, 60);  // ends as soon as 5 are in
  kill(pid, SIGKILL);  // also when the wait gave up, so that no tuner outlives the test's folder
  EXPECT_EQ(testing::wait_exit(pid, 10), 128 + SIGKILL);
  ASSERT_GE(committed, 5u) << testing::slurp(dir / "out.txt") << testing::slurp(dir / "err.txt");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // PR_SET_PDEATHSIG delivered, the workers reaped by init
  EXPECT_EQ(testing::processes_mentioning(out + "/trials"), 0) << "a worker outlived kill -9 of its tuner";
  const auto before = Journal(out + "/journal.sqlite").trials();
  ASSERT_LT(before.size(), 12u) << "the run ended before it could be killed";

  std::ostringstream log;
  TuneOptions o;
  o.worker = fake_worker();
  o.out_dir = out;
  o.resume = true;
  o.budget_seconds = 300;
  setenv("FAKE_SLEEP", "0.05", 1);
  const TuneOutcome r = run_tune(o, log);
  EXPECT_GE(r.summary.winner, 0) << log.str();
  EXPECT_EQ(r.summary.scale_out.slots, 2) << "a resumed run keeps its journal's slots";
  const auto after = Journal(out + "/journal.sqlite").trials();
  for (std::size_t i = 0; i < before.size(); ++i) EXPECT_EQ(after[i].plan.config.key(), before[i].plan.config.key());
  std::multiset<std::string> measured;
  int interference = 0;
  for (const auto& t : after) {
    if (t.kind == TrialKind::baseline || t.kind == TrialKind::search) measured.insert(t.plan.config.key());
    interference += t.kind == TrialKind::interference;
  }
  for (const auto& k : measured) EXPECT_EQ(measured.count(k), 1u) << k;
  EXPECT_EQ(std::set<std::string>(measured.begin(), measured.end()).size(), 6u);  // the grid (it contains the baseline)
  EXPECT_EQ(interference, 2);
}

// Bad input through the command line: one line, exit 2, nothing created.
TEST(TuneParallel, BadSlotCountsAreRefusedBeforeAnythingIsCreated) {
  testing::TempDir dir;
  for (const std::string& n : std::vector<std::string>{"0", "-1", std::to_string(allowed_cpus().size() + 1)}) {
    const pid_t pid = testing::start_process({testing::binary_dir() + "/bin/autotune", "tune", "--worker", fake_worker(), "--out",
                                             dir / "run", "--parallel", n},
                                            dir / "out.txt", dir / "err.txt");
    EXPECT_EQ(testing::wait_exit(pid, 30), 2) << n;
    const std::string err = testing::slurp(dir / "err.txt");
    EXPECT_NE(err.find("--parallel " + n), std::string::npos) << err;
    EXPECT_NE(err.find("allowed: 1 to"), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(dir / "run")) << "a refused run left a folder";
  }
  // A GPU host with one device: two slots would put two trials on one GPU.
  Env e({{"FAKE_CUDA", "1"}, {"FAKE_GPUS", "1"}});
  if (allowed_cpus().size() >= 2) {
    const pid_t pid = testing::start_process({testing::binary_dir() + "/bin/autotune", "tune", "--worker", fake_worker(), "--out",
                                             dir / "run", "--parallel", "2"},
                                            dir / "out.txt", dir / "err.txt");
    EXPECT_EQ(testing::wait_exit(pid, 30), 2);
    EXPECT_NE(testing::slurp(dir / "err.txt").find("more slots than devices"), std::string::npos) << testing::slurp(dir / "err.txt");
  }
}

}  // namespace
}  // namespace autotune
