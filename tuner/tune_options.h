#pragma once
// What `autotune tune` is asked to do: the trial setup every trial shares (knobs/setup.h), the space,
// the strategy, the budget and the thresholds. Stored in the journal (meta.options) so `--resume` and
// `autotune report` see the same run.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>

#include "knobs/config.h"
#include "knobs/setup.h"
#include "knobs/worker_info.h"
#include "tuner/stability.h"
#include "tuner/strategy.h"

namespace autotune {

/// Everything `autotune tune` needs; defaults are the embedded default run (grid over batch × threads).
struct TuneOptions {
  TrialSetup setup;             ///< shared by every trial of the run: workload, device, seed, data, measurement
  KnobSpace space;              ///< empty → the embedded default: batch_size {32,64,128,256} × threads {1,2}
  double budget_seconds = 600;  ///< the search stops proposing trials that would not fit
  std::string out_dir;          ///< "" → runs/<UTC timestamp>
  bool resume = false;          ///< continue the run in out_dir (its journal decides workload and space)
  double trial_timeout_seconds = 600;
  std::string launcher = "local";  ///< trials with ranks > 1 (RunnerOptions::launcher)
  /// Search trials in flight at once (--parallel N; tuner/exec/slots.h): N disjoint CPU sets, one GPU each
  /// on a GPU host. Every trial then runs in one slot's share — a data-parallel one (ranks > 1) on the whole
  /// host, alone — and the serial phases (baseline, verification, confirmation, ablation, trace) with nothing
  /// beside them.
  int parallel = 1;
  bool pin = true;    ///< local slots: disjoint CPU sets (false: --pin off, the slots share the CPUs)
  int slot_cpus = 0;  ///< parallel > 1 or Slurm: the CPUs of one slot, fixed when the run started (the trials' target)
  /// Where trials run (tuner/exec/): "local" (this host), "slurm-steps" (srun steps of the allocation this
  /// tuner runs in), "slurm-jobs" (one sbatch job each). The Slurm ones take per-trial resources (0/-1: the
  /// defaults of tuner/exec/slurm.h) and extra srun/sbatch arguments.
  std::string executor = "local";
  int slurm_cpus = 0, slurm_gpus = -1;
  std::int64_t slurm_mem_mb = 0;
  std::vector<std::string> slurm_args;
  std::string worker;  ///< "" → default_worker_path()
  StabilityOptions stability;
  StrategyOptions strategy;  ///< grid by default
  int confirm_top = 2;       ///< candidates re-run at the end, interleaved (A B A B …)
  int confirm_rounds = 2;    ///< fresh runs per candidate in the confirmation
  /// What "fastest" means (tuner/ranking.h): "time" — predicted time to the same loss, holding the
  /// user's batch and pricing a changed one by the measured noise scale — or "throughput" (samples/s).
  /// Journals from before the time objective existed resume and report as "throughput".
  std::string objective = "time";
  /// The baseline is "what a plain training script does": PyTorch 2.11's defaults of the user's frontend
  /// ("python": torch.optim picks foreach AdamW on CUDA; "libtorch": the per-parameter loop), each sourced
  /// (`baseline_defaults` "pytorch-2.11"). Journals from before read "catalog": the catalog's first values,
  /// zero_grad=zeros and the loop everywhere, as they ran.
  std::string frontend = "python";
  /// With --memory-cap: "on" predicts each config's peak before it runs and skips what cannot fit
  /// (tuner/memory/model.h); "off" runs everything under the cap (an OOM is found by running it).
  std::string memory_model = "on";
  std::string baseline_defaults = "pytorch-2.11";
  /// Whether the user listed the space (--knobs/--space). Without a list, a CPU config whose ranks × threads
  /// would oversubscribe the cores runs with threads=default (cores ÷ ranks per rank) instead; a listed
  /// combination is measured as listed. Journals from before read true (nothing folded).
  bool user_space = true;
  NoisePlan noise;  ///< the noise-scale trial's stopping rule (its max_seconds is capped by the budget)
  /// Seconds the noise-scale trial trains before it records (NoisePlan::burn_in_seconds); < 0: automatic —
  /// 5% of the budget from random weights, none from the user's (--init-from, --model).
  double noise_burn_in = -1;
  /// > 0: the noise scale is given, not measured (`--noise-scale`: e.g. the value `autotune converge` implied over a
  /// whole training run); no noise-scale trial runs.
  double noise_scale = 0;
};

/// The run's identity as stored in meta.options: the setup's members at the top level (as in
/// plan.json), then the search's own. Reading fills what is absent with defaults.
nlohmann::json options_to_json(const TuneOptions& o);
void options_from_json(const nlohmann::json& j, TuneOptions& o);

/// Checks the setup's --data / --cache against the workload and returns the data kind ("", "images",
/// "tokens"). Throws UsageError (one line) for a missing path, a folder given to a token workload, etc.
std::string data_kind_for(const WorkloadInfo& w, const TrialSetup& setup);

/// The embedded default search space (grid): batch_size {32,64,128,256} × threads {1,2}.
KnobSpace default_space();
/// Every knob with its full domain: the default space of `--strategy auto` and `coordinate`;
/// num_workers also at the powers of two above 4 up to half the host's logical CPUs (`host_cpus`;
/// 0 = this machine's), so a 16-core GPU host finds out whether 8 loader threads beat 4.
KnobSpace full_space(unsigned host_cpus = 0);

/// Parses "90s", "10m", "1h30m", "2h" or plain seconds; throws UsageError naming the allowed forms.
double parse_duration(const std::string& text);

}  // namespace autotune
