#pragma once
// The Slurm executors (docs/scale-out.md): Slurm places the trials, the tuner decides what runs, keeps the
// timeouts (Slurm's limits are whole minutes) and is the journal's only writer.
//  - slurm-steps: inside an allocation (salloc / sbatch holding the resources), each trial one
//    `srun --exact` step with its CPUs, memory and GPU; `--parallel N` steps at once.
//  - slurm-jobs: from a login node, each trial one `sbatch --parsable --wait` job.
// Every trial's step or job is named autotune-<run>-<trial folder>: a trial stopped by its timeout or Ctrl-C is
// scancel'ed by that name, and a resumed run first cancels whatever a killed tuner left in the queue.
#include <cstdint>
#include <string>
#include <vector>

#include "tuner/exec/slots.h"

namespace autotune {

struct SlurmOptions {
  bool steps = true;        ///< slurm-steps (srun steps of this allocation), else slurm-jobs (sbatch jobs)
  int slots = 1;            ///< trials in flight at once
  int cpus_per_trial = 0;   ///< 0: steps — the allocation's CPUs ÷ slots; jobs — 1
  int gpus_per_trial = -1;  ///< -1: steps — 1 when the allocation holds at least one GPU per slot, else 0; jobs — 0
  std::int64_t mem_mb = 0;  ///< 0: steps — the allocation's memory ÷ slots; jobs — 1024
  std::vector<std::string> extra;  ///< more srun / sbatch arguments (--slurm-arg, e.g. --partition=gpu)
  std::string run_name;     ///< names the run's steps and jobs: autotune-<run_name>-NNNN
};

/// What the allocation this process runs in holds, from Slurm's environment (SLURM_JOB_ID, SLURM_CPUS_ON_NODE,
/// SLURM_MEM_PER_NODE, SLURM_GPUS_ON_NODE / SLURM_JOB_GPUS). `job_id` "" outside an allocation.
struct Allocation {
  std::string job_id;
  int cpus = 0, gpus = 0;   ///< over all its nodes (SLURM_JOB_CPUS_PER_NODE summed; GPUs: this node's)
  int nodes = 1;
  int node_cpus = 0;        ///< the most CPUs on one of its nodes: what one trial's step can hold
  std::int64_t mem_mb = 0;  ///< over all its nodes
  std::int64_t node_mem_mb = 0;
};
Allocation current_allocation();

/// The slots of a Slurm executor. One-line UsageErrors (what is wrong, what is allowed) for: srun or sbatch
/// missing; slurm-steps outside an allocation; an allocation smaller than the slots ask for.
std::vector<Slot> plan_slurm_slots(const SlurmOptions& o);

/// The run's name for its steps and jobs: a digest of the run folder's absolute path.
std::string slurm_run_name(const std::string& out_dir);

/// Cancels every step (`steps`) or job named autotune-<run_name>-… still in Slurm's queue; how many.
int cancel_leftovers(bool steps, const std::string& run_name);

/// Seconds until this process's Slurm job reaches its time limit (`squeue -o %L` of SLURM_JOB_ID); −1 outside a job,
/// for an unlimited one, or when squeue cannot say.
double slurm_seconds_left();

/// Inside an allocation, why a launcher template's srun cannot start `ranks` tasks in it (its --nodes/-N above the
/// allocation's nodes, or more tasks than it holds without --overcommit): one line naming what the allocation holds
/// and what is allowed; "" when it fits, outside an allocation, or for a template without srun.
std::string launcher_overflows_allocation(const std::string& launcher, int ranks);

/// Cancels every job and step named `name` in Slurm's queue; how many.
int cancel_named(const std::string& name);

/// Whether `program` is on PATH; its path ("" when it is not).
bool on_path(const std::string& program);
std::string find_on_path(const std::string& program);

}  // namespace autotune
