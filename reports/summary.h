#pragma once
// The reports' input: a finished (or interrupted) tuning run as plain data. The tuner builds it from
// the journal; reporters only read it. Nothing here knows about SQLite or processes.
#include <string>
#include <vector>

#include "knobs/record.h"

namespace autotune {

struct Confirmation {
  bool ran = false;
  bool confirmed = false;
  std::int64_t trial_id = 0;
  double median = 0, ci_lo = 0, ci_hi = 0;
  std::string detail;
};

/// One knob's share of the win: the winner against the winner with that knob put back to its
/// baseline value (all other knobs held at the winner's), from search/ablation runs of both.
struct KnobEffect {
  std::string knob, winner_value, without_value;
  Config without;           ///< the config compared with (an effective batch couples grad_accum to batch_size)
  int without_config = -1;  ///< index into RunSummary::configs; -1 when not measured
  bool at_default = false;  ///< the comparison is the knob at its default (else another value: the default was not measured)
  double ratio = 0, lo = 0, hi = 0;  ///< winner ÷ without, median and 95% bootstrap CI
  std::string note;                  ///< why there is no number ("not measured: budget"), or "" when there is
};

/// One worker process, for the per-trial chart and table.
struct TrialPoint {
  std::int64_t id = 0;
  std::string kind;     ///< baseline | search | remeasure | reference | confirm | ablation
  std::string config;   ///< the knobs that differ from the baseline, "(baseline)" when none
  std::string status;   ///< ok | oom | non_finite | crash | timeout | error
  double median = 0;    ///< samples/s, 0 when it failed
  std::string message;  ///< why it failed
};

/// A loss trajectory (warm-up and measured steps, global step order) for the loss chart.
struct LossCurve {
  std::string label;
  std::vector<double> losses;  ///< NaN for non-finite steps; at most ~1000 points (evenly thinned)
  int stride = 1;              ///< losses[i] is global step i × stride + 1
};

/// Where the winner's time goes and what to do about it.
struct Verdict {
  /// input-bound | transfer-bound | optimizer-bound | compute-bound | mixed | "" (unavailable); a traced
  /// profile's verdict may also be communication-, sync-, launch- or memory-bound
  std::string kind;
  std::string basis;               ///< what it is based on
  std::string detail;              ///< the numbers behind it
  std::vector<std::string> knobs;  ///< knobs that address it
};

/// A traced trial's profile of a config, with where its trace file is.
struct TracedProfile {
  std::string label;  ///< "winner" | "baseline"
  Config config;
  ProfileSummary profile;  ///< as the worker measured it (result.profile)
  std::string trace;       ///< the trace file (traces/<label>.json)
};

/// A proposed config that runs as another: resolve() (knobs/resolve.h) let some of its values fall back
/// before anything ran — a value that does not apply here, or one another knob rules out — so the tuner
/// measured (once) the config it really is.
struct FoldedConfig {
  Config proposed, runs_as;
  std::vector<std::string> reasons;  ///< "cuda_graphs=on: needs optimizer_impl=fused …; ran with off"
};

/// The host's own measurement noise and what it did to the limits (tuner/stability.h: host_noise, calibrated).
struct NoiseCalibration {
  bool calibrating = false;                                 ///< --calibrate-noise on
  int trials = 0, trials_needed = 0;                        ///< first trials of distinct configs read / needed
  double host_rel_iqr = 0, host_drift = 0;                  ///< medians over those trials
  double given_max_rel_iqr = 0.05, given_max_drift = 0.05;  ///< --max-noise / --max-drift as given
  bool at_cap = false;  ///< a limit was raised as far as it may go: this host is too noisy for the given limits
  bool raised = false;  ///< a limit in force is above the given one
};

struct RunSummary {
  WorkloadInfo workload;
  DataStats data;  ///< real data (--data): what the winner's measured trial read; source "" = synthetic
  EnvFingerprint env;
  std::string strategy;                    ///< "grid"
  std::string space;                       ///< "batch_size={32,64} threads={1,2}"
  std::vector<SkippedKnob> skipped_knobs;  ///< knobs of the space that do not apply here, with reasons
  std::vector<FoldedConfig> folded;        ///< proposals that ran as another config, with the reasons
  std::string started_at, finished_at;
  double budget_seconds = 0, elapsed_seconds = 0;
  int trials_run = 0;                                  ///< worker processes, re-measures and confirmation included
  std::vector<ConfigSummary> configs;                  ///< one per config measured, in the order first run
  int baseline = -1;                                   ///< index into configs
  int winner = -1;                                     ///< index into configs, -1 when nothing was stable
  std::string winner_note;                             ///< tie-break explanation, "" when none was needed
  double speedup = 0, speedup_lo = 0, speedup_hi = 0;  ///< winner / baseline median, 95% bootstrap CI
  std::string speedup_basis;  ///< which runs the speedup compares ("interleaved confirmation runs …" or "search runs")
  double baseline_confirmation_median = 0;                     ///< the baseline in the confirmation rounds, 0 when not run
  Confirmation confirmation;                                   ///< the winner's
  std::vector<std::pair<Config, Confirmation>> confirmations;  ///< every candidate re-run at the end
  std::vector<Config> unexplored;                              ///< configs the budget did not reach
  std::vector<KnobEffect> knob_effects;                        ///< the winner's non-default knobs, largest effect first
  std::vector<TrialPoint> trials;                              ///< every worker process, in completion order
  std::vector<LossCurve> loss_curves;                          ///< winner, its fp32 reference (when run), baseline
  Verdict verdict;
  std::vector<TracedProfile> profiles;                ///< traced trials of winner / baseline, when they ran
  bool finished = true;                               ///< false: the run was interrupted; the report shows what the journal holds
  double max_rel_iqr = 0.05, memory_headroom = 0.10;  ///< the thresholds the verdict used
  double max_drift = 0.05;                            ///< |last window ÷ first − 1| allowed
  /// The confirmation also accepted a candidate that outran every other config in each round (run option
  /// confirm_round_lead; journals from before it: false).
  bool confirm_round_lead = false;
  NoiseCalibration noise;
};

}  // namespace autotune
