#pragma once
// The held-out side of `autotune converge` as plain data (docs/time-to-train.md, "A held-out target"): each run's loss
// on held-out data along the run, each candidate's time to a held-out loss against the baseline's, and whether the
// fastest to the training loss is also the fastest to the held-out one. The tuner builds it
// (tuner/converge/held_out.h); the reporters only read it.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace autotune {

/// One run's held-out figures, aligned with ConvergeSummary::runs.
struct HeldOutRun {
  double lowest = std::numeric_limits<double>::quiet_NaN();      ///< its lowest held-out loss
  double lowest_at = 0;                                          ///< training seconds at that evaluation
  double final_loss = std::numeric_limits<double>::quiet_NaN();  ///< at its last evaluation
  double time_to_target = 0;  ///< training seconds to the summary's common held-out target (0: not reached)
  bool reached = false;
};

/// A candidate against the baseline on held-out data, aligned with ConvergeSummary::comparisons.
struct HeldOutComparison {
  /// The lowest held-out loss every run of the two reached (the highest of their runs' lowest): from the two alone, as
  /// the training comparison's target is.
  double target = 0;
  double baseline_time = 0, candidate_time = 0;  ///< means over the paired data orders (s of training)
  double measured = 0;                           ///< baseline's time ÷ the candidate's (0: not measured)
  double measured_lo = 0, measured_hi = 0;       ///< the range of its orders' ratios, at least ± the spread
  std::vector<double> order_ratios;
  double candidate_lowest = 0, baseline_lowest = 0;  ///< means of their runs' lowest held-out loss
  /// Its lowest held-out loss stayed above the baseline's by more than the baseline's own spread of it (at least 1%):
  /// however soon it reached the loss both reached, on held-out data it got less far. Such an arm is never the fastest
  /// to the held-out loss.
  bool stopped_above = false;
  /// The loss both reached is at or above where the runs started (their first evaluation, before any training): one of
  /// them never got below its starting held-out loss, so no time to it says anything.
  bool never_improved = false;
  double start = 0;  ///< the baseline's held-out loss before training (the same weights start every run)
};

struct HeldOutSummary {
  std::string source;           ///< what the held-out set was; "" when no run evaluated one
  std::int64_t samples = 0;     ///< held-out samples per evaluation
  std::int64_t every = 0;       ///< samples trained between evaluations
  double eval_seconds = 0;      ///< evaluation time over all runs (never counted as training time)
  double target = 0;            ///< the runs' table's: the highest lowest held-out loss of the baseline's runs
  double eps_time = 0;          ///< the baseline's run-to-run spread of the time to `target` (relative sd)
  double eps_lowest = 0;        ///< ... and of its lowest held-out loss
  std::vector<HeldOutRun> runs;
  std::vector<HeldOutComparison> comparisons;
  /// The fastest to each loss among the baseline (1×) and the candidates (their measured ratios), by label.
  std::string fastest_train, fastest_held_out;
  double fastest_train_ratio = 0, fastest_held_out_ratio = 0;
  /// The fastest-to-train arm's own held-out ratio (1 for the baseline; 0: it has none).
  double fastest_train_held_out_ratio = 0;
  bool differ = false;  ///< the fastest to the held-out loss is not the fastest to the training loss
  /// ... and beyond the runs' spread: the training winner stopped above the baseline's lowest held-out loss, or the
  /// held-out winner's interval lies wholly above the training winner's held-out interval (the baseline's: exactly 1).
  bool beyond_spread = false;
  int measured = 0;  ///< comparisons with a held-out ratio: without one the verdict on the fastest is not given
  /// The latest point, as a share of its run's training time, at which any run reached its lowest held-out loss: below
  /// a half, every run trained on well past where held-out data stopped improving (0: not known).
  double latest_lowest_share = 0;
  bool on() const { return !source.empty(); }
};

}  // namespace autotune
