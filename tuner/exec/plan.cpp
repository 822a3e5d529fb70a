#include "tuner/exec/plan.h"

#include <fmt/format.h>

#include "knobs/error.h"

namespace autotune {

std::string to_string(ExecutorKind k) {
  return k == ExecutorKind::slurm_steps ? "slurm-steps" : k == ExecutorKind::slurm_jobs ? "slurm-jobs" : "local";
}

void from_string(const std::string& name, ExecutorKind& k) {
  for (ExecutorKind e : {ExecutorKind::local, ExecutorKind::slurm_steps, ExecutorKind::slurm_jobs})
    if (to_string(e) == name) {
      k = e;
      return;
    }
  throw UsageError(fmt::format("--executor {}: not an executor; allowed: local, slurm-steps, slurm-jobs", name));
}

bool executor_places_ranks(ExecutorKind k) { return k != ExecutorKind::local; }

SlurmOptions slurm_options(const ExecOptions& o, const std::string& out_dir) {
  SlurmOptions s;
  s.steps = o.executor == ExecutorKind::slurm_steps;
  s.slots = o.parallel;
  s.cpus_per_trial = o.slurm_cpus;
  s.gpus_per_trial = o.slurm_gpus;
  s.mem_mb = o.slurm_mem_mb;
  s.extra = o.slurm_args;
  s.run_name = slurm_run_name(out_dir.empty() ? "." : out_dir);
  return s;
}

int ExecutionPlan::slot_cpus() const {
  if (slots.empty()) return 0;
  return kind == ExecutorKind::local ? static_cast<int>(slots.front().cpus.size()) : slots.front().threads;
}

bool ExecutionPlan::whole_host(int ranks) const { return kind == ExecutorKind::local && slots.size() > 1 && ranks > 1; }

std::unique_ptr<Executor> ExecutionPlan::executor(TrialRunner runner) const {
  if (kind == ExecutorKind::local) return make_local_executor(std::move(runner), slots);
  return make_executor(to_string(kind), std::move(runner), slots);
}

namespace {

ExecutionPlan plan(const ExecOptions& o, const std::string& out_dir, const std::vector<std::string>& gpus, bool cancel) {
  ExecutionPlan p;
  p.kind = o.executor;
  if (o.executor == ExecutorKind::local) {
    p.slots = plan_local_slots(o.parallel, allowed_cpus(), gpus, o.pin);
    if (p.slots.size() > 1) {
      std::string where;
      for (const Slot& s : p.slots) where += (where.empty() ? "" : "; ") + s.describe();
      p.notes.push_back(fmt::format("{} slots ({}): search trials run side by side; the baseline, verification and "
                                    "confirmation run alone in slot 0",
                                    p.slots.size(), where));
    }
    return p;
  }
  const SlurmOptions so = slurm_options(o, out_dir);
  const bool steps = o.executor == ExecutorKind::slurm_steps;
  // A tuner killed with trials in Slurm (kill -9 of an sbatch --wait leaves its job running) left them in the
  // queue: cancelled before anything runs again.
  if (const int left = cancel ? cancel_leftovers(so.steps, so.run_name) : 0; left > 0)
    p.notes.push_back(fmt::format("cancelled {} Slurm {} this run had left in the queue (its tuner was killed)", left,
                                  steps ? "steps" : "jobs"));
  p.slots = plan_slurm_slots(so);
  const int n = static_cast<int>(p.slots.size());
  p.notes.push_back(fmt::format("{}: {} trial{} at a time, each {}", to_string(o.executor), n, n > 1 ? "s" : "",
                                steps ? "an srun --exact step of this allocation" : "an sbatch job"));
  return p;
}

}  // namespace

ExecutionPlan check_execution(const ExecOptions& o, const std::string& out_dir, const std::vector<std::string>& gpus) {
  return plan(o, out_dir, gpus, false);
}

ExecutionPlan start_execution(const ExecOptions& o, const std::string& out_dir, const std::vector<std::string>& gpus) {
  return plan(o, out_dir, gpus, true);
}

}  // namespace autotune
