#pragma once
// A learning-rate sweep (docs/time-to-train.md, "The learning rate, measured"): which rates to train, for how long, and
// how their loss curves are judged. Every arm trains from the same weights on the same data order, for the same number
// of samples; an arm is a multiple of the user's rate. By default the weights are the user's own start, as the user's
// run trains from it; or (from_start false) a checkpoint the user's rate trained for a burn-in, which measures a change
// of rate part-way through a run instead (docs/time-to-train.md, "Where the misses come from"). The rule judges an arm
// by the smoothed loss it reaches at the horizon, never by the steepest slope of a short run: a short horizon favours
// rates that are too small (the loss falls fastest at first for small steps that later stall), so the horizon is a
// stated share of the user's run. A non-finite loss or a loss that climbs well above the start's is recorded as such
// and never picked. This file holds the rule alone: its data are
// reports/lr_sweep_summary.h's, its runs are converge trials (tuner/converge/lr_sweep_run.h).
#include <cstdint>
#include <string>
#include <vector>

#include "knobs/converge.h"
#include "reports/lr_sweep_summary.h"

namespace autotune {

struct LrSweepRule {
  std::vector<double> start_multiples = {1.0 / 3, 1, 3, 10};  ///< × the user's rate; 1 (the user's own) always among them
  double widen_factor = 3;      ///< while the best sits at an end, one more rate this much further out
  int max_widenings = 2;        ///< per end
  /// Every arm from the user's own start (true), to where the checkpoint's arms would end: the burn-in's share and the
  /// horizon's together; or from the burn-in's checkpoint (false).
  bool from_start = true;
  double burn_in_share = 0.05;  ///< of the run: the checkpoint every arm starts from (from_start false)
  double horizon_share = 0.10;  ///< of the run: what each arm trains from the checkpoint
  int min_horizon_windows = 8;  ///< the horizon past the burn-in is at least this many smoothing windows
  double diverged_ratio = 1.5;  ///< a final loss above the start's × this is divergence
};

/// The horizon for a run of `run_samples` (0: unknown — the smoothing windows alone decide, and `why` says so), with
/// a smoothing window of `smooth_samples`; `centre` names the rate the burn-in trains at (×1) in `why`. From the start
/// (rule.from_start) there is no burn-in (burn_in_samples 0) and the horizon is the checkpoint plan's burn-in and
/// horizon together, so that both ways end at the same point of the user's run.
LrHorizon plan_lr_horizon(double run_samples, std::int64_t smooth_samples, const LrSweepRule& rule,
                          const std::string& centre = "your rate");

/// What a sweep of `h` costs in wall time: the burn-in (where it has one) and every start rate on `orders` data orders, each run a start of
/// `start_seconds` (process, model, data, checkpoint) and its samples at `samples_per_s`. Widenings (the best at an
/// end) come on top; `tune --lr-sweep` keeps this much of its budget and says so up front.
double lr_sweep_seconds(const LrHorizon& h, const LrSweepRule& rule, int orders, double samples_per_s, double start_seconds);

/// Each arm's status and loss at `horizon` samples, from the runs of every multiple (any order), with the smoothed loss
/// every arm starts from, `start_loss`, for the divergence test; ordered by multiple.
std::vector<LrArm> judge_lr_arms(const std::vector<LrRun>& runs, double start_loss, std::int64_t horizon, std::int64_t window,
                                 const LrSweepRule& rule);

/// The multiples still to train: the start set when none ran; else one rate further out while the best ok arm sits
/// at the highest (or lowest) rate tried, or — no arm ok — below the lowest while it diverged; none once the rule's
/// widenings at that end are spent or the best sits inside.
std::vector<double> next_lr_multiples(const std::vector<LrArm>& arms, const LrSweepRule& rule);

/// The verdict from the judged arms and their runs (for the time to the loss). The best differs from the user's rate
/// only when its loss is lower by more than the run-to-run spread (the two arms' half-ranges over their data orders
/// added) and it reaches the user's loss on every order both ran.
/// With a gain, `by_depth` times it again to the centre's loss at a third and two thirds of the horizon.
/// `centre` names ×1 in the reason: "your rate", or at a changed batch "the batch rule's rate".
LrVerdict judge_lr_sweep(const std::vector<LrArm>& arms, const std::vector<LrRun>& runs, std::int64_t horizon,
                         std::int64_t window, const std::string& centre = "your rate");

/// The held-out judge: each arm ok by the training loss, by its held-out loss at the horizon (the run's first
/// evaluation at or past `horizon` samples, else its last), mean and range over its data orders; the best is the lowest,
/// and it agrees with the verdict when it is the verdict's best or the verdict's best is within the run-to-run spread of
/// it (the two half-ranges added). `source` and `samples` as the worker reported them; off (source "") when no run has a
/// held-out evaluation.
LrHeldOut judge_lr_held_out(const std::vector<LrArm>& arms, const std::vector<LrRun>& runs, const LrVerdict& verdict,
                            std::int64_t horizon, const std::string& source, std::int64_t samples,
                            const std::string& centre = "your rate");

}  // namespace autotune
