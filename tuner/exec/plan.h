#pragma once
// The execution plan: where a run's trials run (docs/scale-out.md), decided once from the run's options and
// nothing else. The executor (local, local slots, Slurm steps, Slurm jobs), its slots, the notes the run prints
// before its first trial, and what runs alone. The tune loop asks the plan; it never tests which executor it has.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tuner/exec/executor.h"
#include "tuner/exec/slots.h"
#include "tuner/exec/slurm.h"
#include "tuner/exec/trial_runner.h"

namespace autotune {

/// Where trials run: this host (one slot, or --parallel N slots), srun steps of the allocation the tuner runs in,
/// or one sbatch job each.
enum class ExecutorKind { local, slurm_steps, slurm_jobs };
/// "local" | "slurm-steps" | "slurm-jobs".
std::string to_string(ExecutorKind k);
/// The executor called `name`; UsageError "--executor cloud: not an executor; allowed: local, slurm-steps, slurm-jobs".
void from_string(const std::string& name, ExecutorKind& k);

/// Whether an executor places a trial's ranks itself (Slurm: as the tasks of the trial's step or job) rather than the
/// tuner starting them on this host.
bool executor_places_ranks(ExecutorKind k);

/// The run options that decide where trials run (the tune options' table names each: tuner/options/tune_options.h).
struct ExecOptions {
  ExecutorKind executor = ExecutorKind::local;
  /// Search trials in flight at once: N disjoint CPU sets, one GPU each on a GPU host (local), or N steps or jobs.
  int parallel = 1;
  bool pin = true;    ///< local slots: disjoint CPU sets (false: --pin off, the slots share the CPUs)
  int slot_cpus = 0;  ///< parallel > 1 or Slurm: the CPUs of one slot, fixed when the run started (the trials' target)
  int slurm_cpus = 0, slurm_gpus = -1;  ///< Slurm: per-trial resources (0 / -1: the defaults of tuner/exec/slurm.h)
  std::int64_t slurm_mem_mb = 0;
  std::vector<std::string> slurm_args;  ///< more srun / sbatch arguments
};

/// The Slurm executor's options of a run: its slots, per-trial resources, extra arguments, and the name its steps
/// and jobs carry (from the run folder).
SlurmOptions slurm_options(const ExecOptions& o, const std::string& out_dir);

struct ExecutionPlan {
  ExecutorKind kind = ExecutorKind::local;
  std::vector<Slot> slots;         ///< one unpinned slot for a serial local run
  std::vector<std::string> notes;  ///< what the run says before its first trial (cancelled leftovers, the slots)

  /// The CPUs one trial may use, as its target sees them (0: the host's, a serial local run).
  int slot_cpus() const;
  /// Whether a trial of `ranks` processes takes the whole host, alone: a data-parallel trial in local slots, whose
  /// ranks need the host's CPUs and GPUs rather than one slot's.
  bool whole_host(int ranks) const;
  /// Whether a trial's ranks are placed by the executor (Slurm places them as the tasks of a step or job) rather
  /// than started by the tuner on this host.
  bool places_ranks() const { return executor_places_ranks(kind); }
  /// The executor that runs trials in these slots.
  std::unique_ptr<Executor> executor(TrialRunner runner) const;
};

/// The plan for `o`, checked: one-line UsageErrors (a bad slot count, more slots than CPUs or GPUs, srun missing,
/// an allocation too small) before anything exists. `gpus`: the GPUs local slots hand out, one each ({} for CPU
/// trials). Changes nothing outside this process.
ExecutionPlan check_execution(const ExecOptions& o, const std::string& out_dir, const std::vector<std::string>& gpus);

/// The plan as a run starts it: as check_execution, after cancelling the Slurm steps or jobs of this run that a
/// killed tuner left in the queue (its notes say how many).
ExecutionPlan start_execution(const ExecOptions& o, const std::string& out_dir, const std::vector<std::string>& gpus);

}  // namespace autotune
