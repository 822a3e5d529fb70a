#pragma once
// `autotune converge`: the proof of a time-to-train prediction by training (docs/time-to-train.md). The
// baseline and each candidate train from the same initial weights on the same data order — to a target
// loss, or for the same wall time, when the target becomes the worst final loss of them all — and the
// baseline trains again on other data orders to measure the run-to-run spread ε. Each run is a converge
// trial of the worker (knobs/converge.h) in its own process; the run folder holds a journal of its own,
// from which `autotune report DIR` rebuilds converge.md / converge.html / converge.json.
#include <iosfwd>
#include <string>
#include <vector>

#include "knobs/config.h"
#include "knobs/setup.h"
#include "knobs/record.h"
#include "reports/converge_summary.h"

namespace autotune {

struct ConvergeOptions {
  TrialSetup setup;  ///< the trial setup (from the tune run with --from-run); setup.lr is the user's learning rate
  std::string worker;
  double trial_timeout_seconds = 0;  ///< 0: the run's seconds × 3 + 120
  std::string from_run;              ///< a tune run: baseline, candidates and noise scale from its journal
  /// An lr-sweep folder: its config and setup, the user's rate as the baseline against the sweep's best rate (its
  /// runner-up when the user's was about right), predicted at the gain the sweep measured.
  std::string from_sweep;
  /// Which of the tune run's configs to train besides the baseline: pick (the winner), changed-batch (answer
  /// b), at-your-batch (answer a), fastest (the most samples/s), ramp (answer c, the batch ramp: its first phase's
  /// config with grad_accum and the learning rate switched as the tune planned). Duplicates train once.
  std::vector<std::string> compare = {"pick", "changed-batch", "fastest"};
  Config baseline;                   ///< without --from-run (default: the workload's defaults)
  std::vector<Config> candidates;    ///< without --from-run
  double noise_scale = 0;            ///< B̄ for the prediction (0: the tune run's)
  double seconds = 120;              ///< each run's wall-time cap
  double target_loss = 0;            ///< 0: equal wall time; the target is then the worst final smoothed loss
  /// The baseline's runs stop after this many samples, the user's run: the common target (without target_loss) is then
  /// the loss the user's run ends at, not wherever equal wall time left the baseline. −1: with from_sweep, the sweep's
  /// run length (none given there: 0); 0: equal wall time only.
  std::int64_t baseline_samples = -1;
  int reruns = 2;                    ///< the baseline again on data orders 1..reruns (ε)
  /// Each candidate on data orders 0..arm_orders−1 (at least 2: every measured ratio then carries an interval from its
  /// own orders, not only from the baseline's spread). Orders a baseline rerun lacks pair with the baseline's mean.
  int arm_orders = 2;
  /// How a candidate at another global batch sets AdamW's other hyperparameters, κ = B/B0: "none" keeps β1, β2 and ε
  /// (only the learning rate moves, × √r); "sde" moves them as the square-root scaling rule of Adam's SDE (Malladi et
  /// al. 2022): 1 − β → κ(1 − β), ε → ε/√κ (docs/time-to-train.md, "Adam at another batch").
  std::string adam_rule = "none";
  /// A batch ramp of one's own as one more arm (--ramp-phases): the baseline's config, each phase's grad_accum and
  /// learning rate (0: the run's lr × √r at the phase's batch, r at the noise scale the prediction uses).
  std::vector<RampStep> hand_ramp;
  std::int64_t smooth_samples = 0;   ///< 0: 8 × the largest global batch, at least 1,024 samples
  /// The held-out loss (docs/time-to-train.md, "A held-out target"): held-out data in --data's form (the Python worker;
  /// a task's own comes from its val_dataset()), samples trained between evaluations (−1: default_held_out_every when
  /// there is held-out data; 0: never) and held-out samples per evaluation.
  std::string val_data;
  std::int64_t val_every = -1;
  std::int64_t val_samples = 1024;
  std::string save;                  ///< the baseline's trained weights (never over an existing file)
  std::string out_dir;               ///< "" → runs/converge-<UTC timestamp>
};

/// Runs the comparison and writes its outputs; progress lines go to `progress`. Throws UsageError for bad
/// options (no --data, an existing --out, a run folder without a winner).
ConvergeSummary run_converge(const ConvergeOptions& opts, std::ostream& progress);

/// The summary from a converge folder's journal (what `autotune report DIR` renders).
ConvergeSummary load_converge_summary(const std::string& dir);

/// Whether DIR holds a converge run (its journal says so).
bool is_converge_run(const std::string& dir);

/// What a run is besides its trial record (kept in the journal's meta beside it).
struct ConvergeRunMeta {
  std::string label, role;       ///< role: baseline | rerun | candidate | candidate-rerun (a candidate on another data order)
  double predicted_by_tune = 0;  ///< candidates: the tune's predicted time ratio (0: none)
  bool picked = false;           ///< candidates: the tune's pick
  double lr_gain = 1;            ///< candidates at another rate: the sweep's measured gain in samples, 0 none (ConvergeComparison)
  /// Candidates from an lr-sweep: the loss its gain was timed to (its reference rate's mean smoothed loss at the horizon;
  /// 0: none), the samples its arms started from (its burn-in; 0: the user's start), and the run its gain is relative to
  /// (0: the baseline; at (b)'s batch, the arm at the batch rule's rate) — ConvergeComparison::sweep_loss.
  double sweep_loss = 0;
  std::int64_t sweep_start = 0;
  int sweep_reference = 0;
};

/// The summary from the runs' records (in the order they ran, `metas` alongside) and `header` (the run's
/// facts: workload, B0, B̄, the target if one was given, the smoothing window): the target, each run's
/// time to it, the comparisons with the baseline (its first record) and ε.
ConvergeSummary summarize_converge(const std::vector<TrialRecord>& records, const std::vector<ConvergeRunMeta>& metas,
                                   ConvergeSummary header);

/// Writes converge.json, converge.md and converge.html into `dir`; returns their paths.
std::vector<std::string> write_converge_reports(const ConvergeSummary& s, const std::string& dir);

}  // namespace autotune
