#pragma once
// `autotune converge` as plain data (docs/time-to-train.md, "Proof by training"): the baseline and the
// candidates trained from the same weights on the same data order, to the same loss; the tuner builds it
// from the run's journal, the reporters (reports/converge_report.h) only read it.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "knobs/converge.h"
#include "knobs/record.h"
#include "reports/held_out_summary.h"

namespace autotune {

/// One training run of the comparison.
struct ConvergeRun {
  std::string label;  ///< "baseline", "baseline, data order 1", "the pick", "changed batch", "fastest in samples/s"
  std::string role;   ///< baseline | rerun | candidate
  Config config;
  std::string change;  ///< the knobs that differ from the baseline ("(baseline)" for it)
  std::int64_t global_batch = 0;  ///< a batch ramp: its first phase's
  std::vector<RampStep> ramp;  ///< a batch ramp's phases as it trained them (empty: one batch all along)
  std::int64_t data_order = 0;
  double lr = 0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  ///< AdamW's, as the run trained
  std::int64_t trial_id = 0;
  std::string status, message;
  std::vector<CurvePoint> curve;  ///< every step as the worker recorded it
  double samples_per_s = 0;       ///< samples ÷ seconds over the whole run
  double final_loss = std::numeric_limits<double>::quiet_NaN();  ///< smoothed, at the end
  double seconds = 0;                                             ///< how long it trained
  bool reached = false;                                           ///< it got to the target
  double time_to_target = 0;                                      ///< wall seconds to the smoothed target
  std::int64_t samples_to_target = 0;
  std::vector<CurvePoint> held_out;  ///< its loss on held-out data at each evaluation (empty: none evaluated)
};

/// A candidate against the baseline: the baseline's figures are the means over its data orders (the runs vary
/// from one to the next mostly with the host's speed; the mean is the better estimate of the baseline's).
struct ConvergeComparison {
  int run = -1;                  ///< index into ConvergeSummary::runs
  /// The loss this candidate and the baseline are both timed to: the given target, else the worse of the baseline
  /// runs' worst final loss and this candidate's final loss — a loss both reached. It and the smoothing window (the
  /// given one, else 8 × the larger of the two global batches, at least 1,024 samples) come from the two of them alone,
  /// so another arm changes no verdict.
  double target_loss = 0;
  double target_share = 0;       ///< where that loss sits in the baseline's run: its time to it ÷ its run's length
  double baseline_time = 0;      ///< the baseline's mean time to that loss over its data orders (s)
  double candidate_time = 0;     ///< the candidate's time to it (s)
  double measured = 0;           ///< baseline's time to the target ÷ the candidate's (> 1: the candidate is faster)
  double samples_ratio = 0;      ///< the candidate's samples to the target ÷ the baseline's: the work a sample does
  /// The noise scale the measured samples imply, B̄ = (B − r·B0)/(r − 1) from r = samples_ratio and
  /// E ∝ 1 + B/B̄ (0 when the batch is B0 or r does not allow it): the critical batch of this run, measured.
  double implied_noise_scale = 0;
  double throughput_ratio = 0;   ///< candidate ÷ baseline samples/s in these runs
  double efficiency = 1;         ///< (B0 + B̄) / (B + B̄): the share of a sample's work a step at batch B keeps
  /// A candidate at another learning rate from an lr-sweep (converge --from-sweep): the time to the user's loss the
  /// sweep measured its rate to save, in samples (1: no sweep, or the sweep found no gain; 0: the sweep timed no ratio
  /// for it — the runner-up to a user's rate that was the best — so nothing is predicted).
  double lr_gain = 1;
  /// The sweep's own loss, from the user's start: the loss the sweep timed lr_gain to (its reference rate's at the
  /// horizon; 0: not from a sweep), the samples its arms started from (its burn-in at the reference rate; 0: the user's
  /// start), and here the reference arm's samples to that loss ÷ this arm's, from the start, on each data order both ran
  /// (mean of the samples, and the range of the orders' ratios; 0: not reached by both). It sets the sweep's gain against
  /// the same loss trained from the start, so that a miss of the prediction splits into the start (this against
  /// lr_gain) and the depth of the common target (measured against this).
  double sweep_loss = 0;
  std::int64_t sweep_start = 0;
  std::string sweep_reference;   ///< the reference arm's label
  double sweep_measured = 0, sweep_lo = 0, sweep_hi = 0;
  int sweep_orders = 0;
  double predicted = 0;          ///< throughput_ratio × efficiency × lr_gain: the prediction from these runs
  double predicted_by_tune = 0;  ///< the tune's own prediction (its confirmation numbers), 0 when there was no tune
  double agreement = 0;          ///< measured ÷ predicted − 1
  bool picked = false;           ///< the tune's pick
  int orders = 1;                ///< data orders the candidate trained on (each paired with the baseline's same order)
  std::vector<double> order_ratios;  ///< the measured ratio on each of them
  /// The measured ratio's interval: the range of its orders' ratios, and at least ± 1.96·√2·ε (a ratio of two runs
  /// moves by √2 × the baseline's run-to-run spread of a time to the loss).
  double measured_lo = 0, measured_hi = 0;
  /// The prediction agrees: within 20% of the measured ratio, or inside its interval when that is wider.
  bool agrees = false;
  /// Faster to the loss than its samples/s ratio, with fewer samples than the baseline: no noise scale does that (a
  /// bigger batch never needs fewer samples in the model), so the gain is the learning rate's, not the batch's.
  bool above_throughput = false;
  /// Where they ended, beside the common target (which, a loss both reached, can sit where one of them had only begun):
  /// the mean final smoothed loss of the candidate's runs and of the baseline's (the comparison's window).
  double candidate_final = 0, baseline_final = 0;
  /// When every run of the candidate ended below the lowest smoothed loss any baseline run reached: that loss, and the
  /// baseline's mean run length ÷ the candidate's mean time to it — at any loss below it the baseline took longer than
  /// its whole run, so the ratio there is at least this.
  double late_target = 0, late_ratio_min = 0;
};

struct ConvergeSummary {
  WorkloadInfo workload;
  EnvFingerprint env;
  std::string data;       ///< the data the runs trained on
  std::string from_run;   ///< the tune run whose configs and noise scale were taken, "" when given by hand
  std::string from_sweep;  ///< the lr-sweep whose config and rates were taken (converge --from-sweep), "" otherwise
  std::int64_t user_batch = 0;
  double noise_scale = 0, noise_lo = 0;                        ///< B̄ the prediction used (0: none)
  double noise_hi = std::numeric_limits<double>::infinity();
  std::string noise_basis;  ///< where B̄ comes from
  double seconds_per_run = 0;
  /// The baseline's runs stopped after this many samples (the user's run; ConvergeOptions::baseline_samples); 0: they
  /// trained for the seconds.
  std::int64_t baseline_samples = 0;
  std::string adam_rule = "none";  ///< how a changed batch's β1, β2, ε moved (ConvergeOptions::adam_rule)
  double target_loss = 0;
  std::string target_basis;  ///< "given" or how it was chosen
  std::int64_t smooth_samples = 0;
  bool smooth_given = false;  ///< smooth_samples was given (--smooth-samples, an lr-sweep's): every comparison uses it too
  std::vector<ConvergeRun> runs;
  std::vector<ConvergeComparison> comparisons;
  /// The run-to-run spread of the baseline over its data orders: the relative standard deviation of its
  /// smoothed loss at equal samples (at eps_samples), and of its time to the target.
  double eps_loss = 0, eps_time = 0;
  std::int64_t eps_samples = 0;
  int eps_runs = 0;
  HeldOutSummary held_out;  ///< the loss on held-out data, where the runs evaluated one
  std::string started_at, finished_at;
  std::string out_dir;  ///< the run folder (not rendered)
};

}  // namespace autotune
