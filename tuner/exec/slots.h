#pragma once
// Where parallel trials run on this host (docs/scale-out.md): a slot is a disjoint share of the tuner's
// own CPUs (sched_setaffinity) and, on a GPU host, one GPU (CUDA_VISIBLE_DEVICES). Two trials never share a
// core or a device; the worker's threads are capped to its slot's cores (OMP_NUM_THREADS / MKL_NUM_THREADS,
// and the affinity mask holds every thread it starts, loader threads included).
#include <functional>
#include <string>
#include <vector>

namespace autotune {

struct Slot {
  int index = 0;
  std::vector<int> cpus;  ///< empty: not pinned (the serial executor: the whole host)
  std::string gpu;        ///< the CUDA_VISIBLE_DEVICES value for this slot, "" when none is set
  int threads = 0;        ///< a thread cap without a CPU list (Slurm binds the CPUs itself); 0: cpus.size()
  /// Slurm executors (tuner/exec/slurm.h): the command that runs `worker_cmd` as `ranks` tasks with this slot's
  /// resources (srun … / sbatch …), given the trial's folder. Empty: the worker runs here.
  std::function<std::vector<std::string>(const std::vector<std::string>& worker_cmd, const std::string& dir, int ranks)> wrap;
  /// Called after a wrapped trial was stopped (timeout, interrupt) or its launcher died: removes what Slurm
  /// may still run for it (scancel).
  std::function<void(const std::string& dir)> cancel;
  /// Slurm executors: after a wrapped trial ended without a result, the infrastructure failure that ended it
  /// ("node atnode2 lost: Slurm job 12 NODE_FAIL (NodeDown)"), "" when there was none (the trial's own failure).
  /// A node it names is excluded from every later trial of the run.
  std::function<std::string(const std::string& dir)> lost;
  /// Slurm jobs: the file in the trial's folder that the job's script writes the worker's exit status to
  /// (SpawnOptions::exit_file): the trial ends when the worker does, not at sbatch --wait's next poll. "": none.
  std::string exit_file;
  /// The environment a trial in this slot gets ("NAME=value").
  std::vector<std::string> env() const;
  std::string describe() const;  ///< "slot 1: CPUs 2-3, GPU 1"
};

/// The CPUs this process may run on (sched_getaffinity), ascending.
std::vector<int> allowed_cpus();
/// "0-3,8,10-11".
std::string cpu_list(const std::vector<int>& cpus);
/// "0-3,8" → {0,1,2,3,8}; throws std::invalid_argument on anything else.
std::vector<int> parse_cpu_list(const std::string& s);

/// `parallel` slots over `cpus` (split into contiguous, disjoint, near-equal shares) and, when `gpus` is not
/// empty, one GPU each. Throws UsageError with the allowed range for 0 or less, more slots than CPUs, or
/// more slots than GPUs on a GPU host. `parallel` == 1 gives one unpinned slot (today's serial run).
/// `pin` false (--pin off): the slots share every CPU, unpinned and uncapped, and may outnumber the CPUs —
/// for trials that wait rather than compute (a GPU's, a fake worker's); GPUs stay one per slot.
std::vector<Slot> plan_local_slots(int parallel, const std::vector<int>& cpus, const std::vector<std::string>& gpus,
                                   bool pin = true);

/// The GPUs a parallel run may hand out: CUDA_VISIBLE_DEVICES's entries when it is set, else 0..count-1.
std::vector<std::string> visible_gpus(int device_count);

}  // namespace autotune
