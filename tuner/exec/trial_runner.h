#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "knobs/record.h"
#include "tuner/exec/slots.h"

namespace autotune {

/// Options for launching workers. Required: the worker binary and a folder for trial files.
class RunnerOptions {
 public:
  RunnerOptions(std::string worker, std::string trials_dir) : worker_(std::move(worker)), trials_dir_(std::move(trials_dir)) {}
  /// Seconds before a trial is stopped (SIGTERM, then SIGKILL after 5 s). Default 600.
  RunnerOptions& timeout_seconds(double s) {
    timeout_ = s;
    return *this;
  }
  /// How a trial with ranks > 1 starts its processes: "local" (autotune starts one worker per rank on
  /// this host, the torchrun environment contract, a store socket bound here), "torchrun" (torchrun
  /// --standalone --nproc_per_node=N from PATH), or a command template run by /bin/sh with {ranks}
  /// and {cmd} replaced ("srun --ntasks={ranks} {cmd}"). Throws UsageError for a template without {cmd}.
  RunnerOptions& launcher(const std::string& l);
  const std::string& launcher() const { return launcher_; }
  const std::string& worker() const { return worker_; }
  const std::string& trials_dir() const { return trials_dir_; }
  double timeout_seconds() const { return timeout_; }

 private:
  std::string worker_, trials_dir_;
  double timeout_ = 600;
  std::string launcher_ = "local";
};

/// A trial lost to the infrastructure twice (Slot::lost: a node failed under it, then under its retry): no
/// measurement of it exists, and the run stops rather than blame the config; --resume runs it again.
struct InfrastructureLost : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Runs each trial in a fresh `autotune-worker run` process and classifies how it ended. Never throws
/// for a failing trial: a crash, hang, bad exit or unreadable result becomes a TrialRecord with status
/// crash / timeout / error and a one-line message, and the search goes on.
class TrialRunner {
 public:
  explicit TrialRunner(RunnerOptions opts) : opts_(std::move(opts)) {}
  /// `seq` names the trial's folder (trials/0007/: plan.json, result.json, stderr.log). `slot`: the CPUs
  /// (affinity, thread caps) and GPU it runs on (tuner/exec/slots.h); the default is the whole host.
  /// A wrapped trial lost to the infrastructure (Slot::lost) is set aside unmeasured (its files in
  /// trials/NNNN/lost-1/) and run once more, its node excluded; the record's placement lists the loss.
  TrialRecord run(const TrialPlan& plan, TrialKind kind, int seq, const Slot& slot = {}) const;
  const RunnerOptions& options() const { return opts_; }

 private:
  TrialRecord attempt(const TrialPlan& plan, TrialKind kind, int seq, const Slot& slot, std::vector<std::string> lost) const;
  /// ranks > 1: every rank's process, the first failure named, all stopped together.
  void run_ranks(TrialRecord& rec, int ranks, const std::string& dir, const Slot& slot) const;
  RunnerOptions opts_;
};

/// This executable's path (/proc/self/exe); "" when it cannot be read.
std::string self_path();
/// The worker next to this executable (`<dir of /proc/self/exe>/autotune-worker`), or $AUTOTUNE_WORKER.
std::string default_worker_path();
/// The worker that trains `setup` (knobs/model_spec.h, trainer_of): the C++ one above, or for the Python trainer
/// `autotune-worker-py` next to this executable ($AUTOTUNE_PYTHON_WORKER overrides it).
std::string default_worker_path(const TrialSetup& setup);
/// The Python worker's launcher next to this executable, or $AUTOTUNE_PYTHON_WORKER.
std::string python_worker_path();
/// Whether the C++ worker is there (a `pip install` builds it only when asked: docs/install.md).
bool cpp_worker_installed();

}  // namespace autotune
