#pragma once
// `autotune lr-sweep`: the learning-rate sweep trained (docs/time-to-train.md, "The learning rate, measured"). Every
// rate of the rule (tuner/pricing/lr_sweep.h) trains from the user's own start — or, from a checkpoint, from the weights
// a burn-in at the user's rate wrote — on the same data orders for the same samples, each a converge trial of the worker
// in its own process, widened while the best sits at an end. The folder holds a journal of the trials, lr-sweep.md and lr-sweep.json.
#include <iosfwd>
#include <string>

#include "knobs/config.h"
#include "knobs/setup.h"
#include "reports/lr_sweep_summary.h"
#include "tuner/pricing/lr_sweep.h"
#include "tuner/pricing/run_length.h"

namespace autotune {

struct LrSweepOptions {
  TrialSetup setup;                 ///< setup.lr is the user's rate (0: the workload's own)
  std::string worker;               ///< "": the model's own worker
  Config config;                    ///< the config every arm trains
  /// A tune run (its folder): its trial setup (workload, data, seed, rate; setup.lr given overrides) and the config `at`
  /// names: "your-batch", its baseline at your rate; "changed-batch", its answer (b) at the batch rule's rate for that
  /// batch, so the sweep checks the rule.
  std::string from_run;
  std::string at = "your-batch";
  /// The user's run (not given: the horizon is the windows'). Samples as given; epochs over one pass of the data, which a
  /// one-step probe of the config reads first; tokens over the model's sequence length.
  RunLength run_length;
  int orders = 2;                   ///< each rate on data orders 0..orders−1
  /// The rule: where every arm starts (rule.from_start: the user's own start, or a checkpoint after a burn-in) and the
  /// share of the run each trains past the first 5% (rule.horizon_share); the CLI sets both, `tune --lr-sweep` keeps
  /// the defaults it budgets with.
  LrSweepRule rule;
  double max_seconds = 600;         ///< a run's wall-time cap (a rate that is too slow to reach the horizon is "short")
  std::int64_t smooth_samples = 0;  ///< 0: 8 × the global batch, at least 1,024
  std::string out_dir;              ///< "" → runs/lr-sweep-<UTC timestamp>; must not hold anything
  /// Judged on held-out data as well where there is some (held_out on): the task's val_dataset() (a LightningModule's
  /// val_dataloader()) or `val_data` (a file or folder in --data's form; the Python worker). Each arm evaluates the
  /// first `val_samples` of it where the arms start and at the horizon, off its training clock.
  bool held_out = true;
  std::string val_data;
  std::int64_t val_samples = 1024;
};

/// Trains the sweep and writes its outputs; one progress line per run. Throws UsageError for bad options (no data,
/// an --out that holds something) and when the burn-in (from a checkpoint) itself does not train.
LrSweepSummary run_lr_sweep(const LrSweepOptions& opts, std::ostream& progress);

}  // namespace autotune
