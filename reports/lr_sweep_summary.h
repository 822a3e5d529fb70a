#pragma once
// A learning-rate sweep as plain data (docs/time-to-train.md, "The learning rate, measured"): the arms trained from one
// checkpoint, each judged by the loss it reached, and the verdict on the user's rate. tuner/pricing/lr_sweep.h judges,
// tuner/converge/lr_sweep_run.h trains, reports/lr_sweep_report.h only reads it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "knobs/converge.h"
#include "knobs/record.h"

namespace autotune {

/// Whether two multiples of the user's rate are the same rate (×3 widened twice from ×1/3 is ×1 up to rounding).
inline bool same_lr_multiple(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }

/// Where the arms start (samples the checkpoint trained at the user's rate; 0: from the user's own start) and how long
/// they train.
struct LrHorizon {
  std::int64_t burn_in_samples = 0;
  std::int64_t horizon_samples = 0;
  std::string why;  ///< the rule as applied: "burn-in 5% of the run (25,000 samples), then 10% (50,000) per rate"
};

/// One arm on one data order: its multiple of the user's rate and the curve it trained from where the arms start.
struct LrRun {
  double multiple = 1;
  std::int64_t data_order = 0;
  std::vector<CurvePoint> curve;
  std::vector<CurvePoint> held_out;  ///< its held-out loss where it started and at the horizon (empty: not evaluated)
};

/// An arm over its data orders.
struct LrArm {
  double multiple = 1;
  int orders = 0;
  std::string status;               ///< "ok" | "non_finite" | "diverged" | "short" (one of its runs ended before the horizon)
  double loss = 0;                  ///< the mean over orders of the smoothed loss at the horizon (ok arms)
  double loss_lo = 0, loss_hi = 0;  ///< its range over the orders
  bool ok() const { return status == "ok"; }
};

/// What the sweep says about the user's rate.
struct LrVerdict {
  std::string
      verdict;  ///< "too low" | "about right" | "too high" | "no rate trained" (no arm ok) | "not judged" (×1 short or absent)
  double best_multiple = 1;
  bool best_at_end = false;  ///< the best is the highest or lowest rate tried: a better one may lie further out
  /// The time to the user's rate's loss at the horizon, the user's over the best's, per data order both ran (mean and
  /// range; counted in samples — one config trains at one speed, so this is the time ratio without the host's drift);
  /// 1 when the verdict is "about right", 0 when the user's rate never reached a finite loss to time.
  double gain = 1, gain_lo = 1, gain_hi = 1;
  std::string reason;  ///< one sentence: the losses, the spread they were compared with
  /// With a gain: the same ratio timed to the centre's loss at a third and at two thirds of the horizon, then at the
  /// horizon (the gain above): how the gain moves with depth into the run. A point is left out where an order's best
  /// did not reach the centre's loss there.
  struct AtDepth {
    std::int64_t samples = 0;  ///< the centre's loss at this many samples is the loss timed
    double gain = 0;           ///< the mean over data orders
  };
  std::vector<AtDepth> by_depth;
};

/// One rate's held-out loss at the horizon over its data orders.
struct LrHeldOutArm {
  double multiple = 1;
  int orders = 0;
  double loss = 0, loss_lo = 0, loss_hi = 0;  ///< the mean over orders, and its range
};

/// The sweep judged on held-out data as well (a task's val_dataset(), a LightningModule's val_dataloader(), or
/// --val-data): each rate that trained (ok by the training loss) by its held-out loss at the horizon, and whether the
/// best there is the training loss's best.
struct LrHeldOut {
  std::string source;         ///< what the held-out set was, as the worker said; "" = not judged on held-out data
  std::int64_t samples = 0;   ///< held-out samples each evaluation averaged
  double start_loss = 0;      ///< the held-out loss where the arms start (every arm's first evaluation)
  std::vector<LrHeldOutArm> arms;
  double best_multiple = 0;   ///< the lowest held-out loss at the horizon (0: none evaluated)
  /// The training loss's best is the held-out best too, or within the run-to-run spread of it (false: they differ).
  bool agrees = true;
  /// Whether the training loss's best has a held-out loss to compare (false: `agrees` says nothing; the reason says why).
  bool compared = true;
  std::string reason;  ///< one sentence: the held-out losses compared, and what follows
  bool on() const { return !source.empty(); }
};

/// A whole sweep: what it trained, how it judged, what it says.
struct LrSweepSummary {
  std::string workload;  ///< the model's name as the worker describes it
  std::string data;      ///< what it trained on
  Config config;         ///< the config every arm trains (the user's batch and knobs)
  std::int64_t global_batch = 0;
  /// The rate every multiple is of: the user's; at a changed batch, the batch rule's rate for it (your_lr × the rule).
  double user_lr = 0;
  std::string from_run;        ///< the tune run the config came from ("" when given by hand)
  std::string at;              ///< with from_run: "your-batch" | "changed-batch"
  std::int64_t user_batch = 0;  ///< B0, the user's global batch (global_batch unless at a changed batch)
  double your_lr = 0;           ///< the user's own rate at B0 (user_lr unless at a changed batch)
  std::string rule;  ///< at a changed batch, the rule that set user_lr, in words; "" otherwise
  bool changed_batch() const { return !rule.empty(); }
  /// ×1 in words: "your rate", or at a changed batch "the batch rule's rate".
  std::string centre() const { return changed_batch() ? "the batch rule's rate" : "your rate"; }
  double run_samples = 0;  ///< --run-length in samples (0: not given)
  /// --run-length as given and how it became samples ("3 epochs × 50,000 samples (one pass over the data, as a one-step
  /// probe read it) = 150,000 samples"); "" when not given.
  std::string run_basis;
  std::int64_t smooth_samples = 0;
  LrHorizon horizon;
  /// Every arm trained from the user's own start (no burn-in: burn_in_trial 0); false: from the burn-in's checkpoint.
  bool from_start = false;
  /// The loss every arm starts from: from the start, the lowest smoothed loss over a first run's first window; else the
  /// checkpoint's smoothed loss after the burn-in.
  double start_loss = 0;
  std::int64_t burn_in_trial = 0;
  /// The burn-in's smoothed loss over its first window and at its end (NaN: non-finite).
  double burn_in_first_loss = 0, burn_in_end_loss = 0;
  /// The burn-in diverged (tuner/converge/lr_sweep_run.cpp): no checkpoint; every arm trained from the user's own start,
  /// and start_loss is burn_in_first_loss.
  bool burn_in_diverged = false;
  std::vector<LrRun> runs;               ///< every arm on every data order, in the order trained
  std::vector<std::int64_t> run_trials;  ///< each run's trial id, alongside `runs`
  std::vector<LrArm> arms;
  LrVerdict verdict;
  LrHeldOut held_out;
  std::string out_dir;
};

}  // namespace autotune
