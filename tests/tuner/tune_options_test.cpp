// The tune options' one table (tuner/options/tune_options.h, TuneOptions::visit): every row round-trips through the
// journal, an older journal reads what its run did, a bad stored word is one line, and the command line's flags,
// units and resume rule all come from the same rows.
#include "tuner/options/tune_options.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "knobs/error.h"
#include "tests/support/expect_throw_msg.h"
#include "tuner/cli.h"

namespace autotune {
namespace {

TuneOptions unusual() {
  TuneOptions o;
  o.space.add_assignment("batch_size=32,64");
  o.strategy.name = "auto";
  o.strategy.max_trials = 7;
  o.strategy.effective_batch = 256;
  o.strategy.batch_values = {32, 64};
  o.confirm_top = 3;
  o.confirm_rounds = 4;
  o.stability.max_rel_iqr = 0.07;
  o.stability.max_drift = 0.09;
  o.stability.max_host_load = 0.3;
  o.stability.calibrate = false;
  o.stability.loss_tolerance = 0.12;
  o.stability.memory_headroom = 0.2;
  o.stability.max_remeasure = 5;
  o.stability.confirm_run_spread = false;
  o.stability.confirm_round_lead = false;
  o.objective = ObjectiveKind::throughput;
  o.noise_burn_in = 12;
  o.noise_scale = 900;
  o.memory_model = "off";
  o.frontend = "libtorch";
  o.exec.parallel = 3;
  o.exec.executor = ExecutorKind::slurm_jobs;
  o.exec.pin = false;
  o.exec.slot_cpus = 2;
  o.exec.slurm_cpus = 4;
  o.exec.slurm_gpus = 1;
  o.exec.slurm_mem_mb = 2048;
  o.exec.slurm_args = {"--partition=gpu"};
  o.launcher = "torchrun";
  o.baseline_defaults = "catalog";
  o.user_space = false;
  o.run_length = "3epochs";
  o.noise_log = "noise.jsonl";
  o.lr_sweep = "both";
  return o;
}

TEST(TuneOptionsTable, EveryRowRoundTripsThroughTheJournal) {
  const TuneOptions o = unusual();
  const nlohmann::json j = options_to_json(o);
  TuneOptions back;
  options_from_json(j, back);
  EXPECT_EQ(options_to_json(back), j);
  // Each row differs from its default in `unusual`, so a row the JSON pair forgot would show.
  const TuneOptions defaults;
  std::set<std::string> same_as_default;
  TuneOptions::visit(
      [&](const OptionSpec& spec, const auto& a, const auto& b) {
        if (a == b) same_as_default.insert(spec.key);
      },
      o, defaults);
  EXPECT_TRUE(same_as_default.empty()) << *same_as_default.begin();
  EXPECT_EQ(back.strategy.seed, back.setup.seed);  // derived, not stored
  EXPECT_FALSE(back.strategy.other_batches);       // the throughput objective
}

TEST(TuneOptionsTable, AJournalFromBeforeAnOptionReadsWhatItsRunDid) {
  TuneOptions o;
  options_from_json(nlohmann::json::parse(R"({"workload": "mlp", "space": [], "max_rel_iqr": 0.05,
                                              "memory_headroom": 0.1, "max_remeasure": 2})"),
                    o);
  EXPECT_EQ(o.objective, ObjectiveKind::throughput);  // before the time objective
  EXPECT_FALSE(o.stability.calibrate);                 // before the calibration
  EXPECT_EQ(o.baseline_defaults, "catalog");           // before PyTorch's sourced defaults
  EXPECT_DOUBLE_EQ(o.stability.loss_tolerance, 0.05);  // before --loss-tolerance: what verification used
  EXPECT_EQ(o.exec.executor, ExecutorKind::local);
  EXPECT_EQ(o.exec.parallel, 1);
  EXPECT_EQ(o.lr_sweep, "off");                        // before tune --lr-sweep
  EXPECT_THROW(options_from_json(nlohmann::json::parse(R"({"workload": "mlp", "space": []})"), o), std::exception);
}

TEST(TuneOptionsTable, AStoredWordOutsideItsChoicesIsOneLineNamingThem) {
  nlohmann::json j = options_to_json(TuneOptions{});
  TuneOptions o;
  j["memory_model"] = "maybe";
  EXPECT_THROW_MSG(options_from_json(j, o), UsageError, "memory-model 'maybe' is not allowed; allowed: on, off");
  j = options_to_json(TuneOptions{});
  j["objective"] = "speed";
  EXPECT_THROW_MSG(options_from_json(j, o), UsageError, "objective 'speed' is not allowed; allowed: time, throughput");
  j = options_to_json(TuneOptions{});
  j["executor"] = "cloud";
  EXPECT_THROW_MSG(options_from_json(j, o), UsageError, "--executor cloud: not an executor; allowed: local, slurm-steps, slurm-jobs");
}

struct CliRun {
  int status;
  std::string out, err;
};
CliRun cli(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int st = run_cli(args, out, err);
  return {st, out.str(), err.str()};
}

TEST(TuneOptionsTable, AResumedRunRefusesEveryFlagItsJournalFixesNamingWhy) {
  for (const auto& [flag, value, why] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--parallel", "2", "its trials ran in the journal's slots"},
           {"--executor", "local", "its journal names where its trials ran"},
           {"--loss-tolerance", "10", "its journal fixes the run it continues"},
           {"--objective", "time", "its journal fixes the run it continues"}}) {
    const CliRun r = cli({"tune", "--resume", "/nonexistent/run", flag, value});
    EXPECT_EQ(r.status, 2) << flag;
    EXPECT_EQ(r.err, "autotune tune: " + flag + " cannot change a resumed run: " + why + "\n");
  }
}

TEST(TuneOptionsTable, UnpinnedLocalSlotsShareTheCpusSoTheBusyHostGuardIsOff) {
  TuneOptions o;
  o.stability.max_host_load = 0.10;
  o.exec.parallel = 2;
  o.derive();
  EXPECT_DOUBLE_EQ(o.stability.max_host_load, 0.10);  // pinned slots: disjoint CPUs, each trial measures its own
  o.exec.pin = false;
  o.derive();
  EXPECT_DOUBLE_EQ(o.stability.max_host_load, 1.0);
}

TEST(TuneOptionsTable, APercentFlagIsCheckedInPercentAndStoredAsAFraction) {
  CliRun r = cli({"tune", "--loss-tolerance", "0"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--loss-tolerance"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("0.1"), std::string::npos) << r.err;  // the range, in percent
  r = cli({"tune", "--help"});
  EXPECT_NE(r.out.find("--loss-tolerance"), std::string::npos);
  EXPECT_NE(r.out.find("--loss-tolerance FLOAT:in [0.1, 100]=5"), std::string::npos) << r.out;  // in percent
}

}  // namespace
}  // namespace autotune
