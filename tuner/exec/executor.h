#pragma once
// Executors: where and how the tune loop's trials run (docs/scale-out.md). The tune loop decides what runs
// and is the journal's only writer; an executor only starts trials and hands back their records, each with
// its placement (knobs/protocol.h, Placement). One implementation over slots: local (one slot, today's serial
// run), local slots (--parallel N: disjoint CPU sets, one GPU each on a GPU host; tuner/exec/slots.h), and the
// Slurm steps and jobs, whose slots wrap each trial in srun / sbatch (tuner/exec/slurm.h).
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "knobs/record.h"
#include "tuner/exec/slots.h"
#include "tuner/exec/trial_runner.h"

namespace autotune {

struct TrialJob {
  TrialPlan plan;
  TrialKind kind = TrialKind::search;
  int seq = 0;  ///< its folder, trials/NNNN
  /// Every slot at once, unpinned: a data-parallel trial of a local parallel run, whose ranks need the host's
  /// CPUs and GPUs (placement slot −1). Starts only with nothing in flight; nothing starts beside it.
  bool whole_host = false;
};

struct Finished {
  int seq = 0;
  TrialRecord record;        ///< with record.result.placement set
  std::exception_ptr error;  ///< the trial could not be measured at all (Interrupted, DiskFull): rethrown by the tune loop
  double seconds = 0;        ///< wall time from start() to the end of the trial
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string name() const = 0;
  virtual int slots() const = 0;
  virtual int in_flight() const = 0;
  virtual bool has_free_slot() const = 0;  ///< false too while a whole-host trial runs
  /// Starts `job` on a free slot, or on all of them (`job.whole_host`); throws std::logic_error when they are
  /// not free.
  virtual void start(TrialJob job) = 0;
  /// Blocks until one in-flight trial ends and returns it (throws std::logic_error when none is in flight).
  virtual Finished wait_any() = 0;
  /// Waits for every trial in flight and discards them: after the tuner was asked to stop, each stops its
  /// own process group (tuner/exec/subprocess.h), so this returns within the kill grace.
  virtual void drain() = 0;
};

/// An executor over `slots`: local ones from plan_local_slots (one unpinned slot = serial), Slurm ones from
/// plan_slurm_slots (tuner/exec/slurm.h). Each trial runs on a thread of the tuner that waits for its process
/// (the worker, or srun / sbatch; TrialRunner::run). `name` goes into every placement: "local", "local slots",
/// "slurm-steps", "slurm-jobs". A wrapped trial's own report of where it ran (trials/NNNN/where.0: host, CPU
/// list, GPUs) fills its placement; a local one's is its slot.
std::unique_ptr<Executor> make_executor(std::string name, TrialRunner runner, std::vector<Slot> slots);
std::unique_ptr<Executor> make_local_executor(TrialRunner runner, std::vector<Slot> slots);

}  // namespace autotune
