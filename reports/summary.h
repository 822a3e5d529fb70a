#pragma once
// The reports' input: a finished (or interrupted) tuning run as plain data. The tuner builds it from
// the journal; reporters only read it. Nothing here knows about SQLite or processes.
#include <limits>
#include <string>
#include <vector>

#include "knobs/record.h"
#include "reports/batch_ramp_summary.h"
#include "reports/lr_measured.h"

namespace autotune {

struct Confirmation {
  bool ran = false;
  bool confirmed = false;
  std::int64_t trial_id = 0;
  double median = 0, ci_lo = 0, ci_hi = 0;
  /// ÷ the baseline in the interleaved rounds, paired round by round (tuner/measures/paired_rounds.h); 0 for the baseline
  /// itself or when its rounds did not run.
  double ratio = 0;
  std::string detail;
};

/// One knob's share of the win: the winner against the winner with that knob put back to its
/// baseline value (all other knobs held at the winner's), from the effect rounds (both in the same interleaved
/// rounds as the baseline) or, in journals from before them, from search/ablation runs of both.
struct KnobEffect {
  std::string knob, winner_value, without_value;
  Config without;           ///< the config compared with (an effective batch couples grad_accum to batch_size)
  int without_config = -1;  ///< index into RunSummary::configs; -1 when not measured there (effect rounds only)
  bool at_default = false;  ///< the comparison is the knob at its default (else another value: the default was not measured)
  double ratio = 0, lo = 0, hi = 0;  ///< winner ÷ without, median and 95% bootstrap CI
  int rounds = 0;         ///< effect rounds both ran in; 0: from search/ablation runs (another reference per knob)
  bool beyond_bound = false;  ///< beyond what the knob's mechanism allows on this device (knobs/knob.h, effect_bound)
  bool remeasured = false;    ///< measured again (two more runs a side) for being beyond that bound
  std::string note;         ///< why there is no number ("not measured: budget"), or what to know about it; "" when none
  /// The reports warn with `note`: the winner is faster without this knob, or the effect lies beyond its bound.
  bool warns() const { return ratio > 0 && (hi < 1 || beyond_bound); }
};

/// The knob effects taken together (the effect rounds): their product against the winner ÷ the baseline in the same
/// rounds. Knobs that interact (two that relieve the same bottleneck, one that only pays with another) make the
/// two differ; `measured` false when the effect rounds did not run or an effect has no number.
struct EffectsTogether {
  bool measured = false;
  int rounds = 0;
  double product = 0;                ///< the effects multiplied
  double together = 0, lo = 0, hi = 0;  ///< winner ÷ baseline in the effect rounds, 95% bootstrap CI
  bool interact = false;             ///< the product lies outside the together's interval
  std::string line;                  ///< what to say, one sentence (the same in console and reports)
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

/// The host's own measurement noise and what it did to the limits (tuner/search/stability.h: host_noise, calibrated).
struct NoiseCalibration {
  bool calibrating = false;                                 ///< --calibrate-noise on
  int trials = 0, trials_needed = 0;                        ///< first trials of distinct configs read / needed
  int busy_left_out = 0;  ///< first trials not read: timed beside other programs (the busy-host guard), not the host's own noise
  double host_rel_iqr = 0, host_drift = 0;                  ///< medians over those trials
  double given_max_rel_iqr = 0.05, given_max_drift = 0.05;  ///< --max-noise / --max-drift as given
  bool at_cap = false;  ///< a limit was raised as far as it may go: this host is too noisy for the given limits
  bool raised = false;  ///< a limit in force is above the given one
};

/// What else ran on the host while trials were timed (the busy-host guard: tuner/search/stability.h, host_busy).
struct BusyHost {
  int measured = 0;          ///< trials that recorded their host load
  int busy = 0;              ///< of them, timed beside other programs above the limit
  int cpus = 0;              ///< the CPUs of the busiest one
  double max_other_cores = 0;
  int rejected = 0;          ///< configs still failing the quiet-host check after their re-measures (they cannot win)
  int once = 0;              ///< of them, timed once only: the budget (or a host still busy at the end) left no room
  bool ended_busy = false;   ///< the run stopped re-timing them because the host was still busy after its last wait
  int confirmation_busy = 0;  ///< interleaved confirmation runs among the busy ones
  int device_busy = 0;        ///< of the busy ones, timed while another process held the GPU
  int max_device_others = 0;  ///< the most such processes at once
  double limit_share = 0.10;  ///< --max-host-load in force
  double limit_min_cores = 0.25;  ///< and the least it allows, in cores
};

/// One value of the baseline and where it is PyTorch's default (knobs/knob.h: default_source).
struct BaselineValue {
  std::string knob, value, source;
};

/// One window of the noise-scale trial along the run (knobs/noise_trajectory.h).
struct NoiseWindowSummary {
  std::int64_t from_samples = 0, to_samples = 0;  ///< samples since the first step of training
  int steps = 0;
  double value = 0, lo = 0, hi = std::numeric_limits<double>::infinity(), rel_se = 0;  ///< B̂, its 95% interval
  double loss = 0;  ///< the window's mean training loss (0: not recorded)
};

/// How the noise scale grew over the trial: log B̂ against log samples (with a prior on the exponent) and against
/// log loss (knobs/noise_trajectory.h, fit_growth).
struct NoiseGrowthSummary {
  bool fitted = false;
  int points = 0;
  double exponent = 0, lo = 0, hi = 0;  ///< B ∝ samples^exponent, its 95% interval
  double prior_mean = 0, prior_sd = 0, prior_share = 1;
  double log_b_at_pivot = 0, pivot = 0, log_b_se = 0;  ///< the line: log B = log_b_at_pivot + exponent·(log samples − pivot)
  bool loss_fitted = false;
  double loss_exponent = 0, loss_lo = 0, loss_hi = 0;  ///< B ∝ loss^loss_exponent (negative: B grows as the loss falls)
  double loss_log_b_at_pivot = 0, loss_pivot = 0;      ///< its line: log B = loss_log_b_at_pivot + loss_exponent·(log loss − loss_pivot)
};

/// The gradient noise scale a run measured (knobs/noise_scale.h, docs/time-to-train.md) and whether the
/// time ranking may use it. With windows along the trial, `value` / `lo` / `hi` are the noise scale of the user's whole
/// run (over_run) — the trial's own estimate stays in trial_value / trial_lo / trial_hi.
struct NoiseScaleSummary {
  bool measured = false;  ///< a noise-scale trial ran and gave an estimate
  std::int64_t trial_id = 0;
  double value = 0;                                         ///< B_simple, in samples
  double lo = 0;                                            ///< 95% interval (Fieller over blocks of steps)
  double hi = std::numeric_limits<double>::infinity();      ///< ∞: only a lower bound is known
  double rel_se = std::numeric_limits<double>::infinity();  ///< standard error ÷ value
  int steps = 0, blocks = 0;
  std::string stopped;  ///< target | max_steps | max_seconds
  std::int64_t micro_batch = 0, step_batch = 0;
  double seconds = 0;
  std::string weights;  ///< random init | checkpoint FILE | model file FILE
  double burn_in_seconds = 0;  ///< trained before recording
  int burn_in_steps = 0;
  std::string data;     ///< the data it trained on; "" = synthetic
  /// Logged in the user's own training loop (tuner/pricing/noise_log.h): "FILE (python logger, 400 steps of 4 × 8, from random
  /// init)"; "" for a trial's measurement.
  std::string log;
  double loss_first = 0, loss_last = 0;
  /// Measured from random weights: the value of early training, which grows as the loss falls.
  bool early = true;
  bool usable = false;  ///< the time ranking uses it
  std::string why_not;  ///< why the run cannot rank by time ("" when it can)
  bool bounded() const { return hi < std::numeric_limits<double>::infinity(); }

  // Along the run (a trial with windows; docs/time-to-train.md, "The noise scale along the run").
  std::vector<NoiseWindowSummary> windows;
  NoiseGrowthSummary growth;
  bool over_run = false;  ///< value / lo / hi are the mean of the extrapolated B(samples) over the user's run
  double trial_value = 0, trial_lo = 0, trial_hi = std::numeric_limits<double>::infinity();  ///< the whole trial's estimate
  double run_samples = 0;      ///< the run it is priced over, in samples at the user's batch
  std::string run_basis;       ///< "--run-length 3 epochs = 5,391 samples" | "one pass over the data (default): …"
  double measured_to = 0;      ///< the last sample the trial measured (since the first step of training)
  double cap_samples = 0;      ///< B(samples) follows the fit up to here and is held beyond
  std::string over_run_note;   ///< why the trial's value prices the run instead ("" when over_run, or no windows)
  std::string run_length_error;  ///< a --run-length shorter than the trial's own training (`autotune tune` exits 2)

  // Calibrated by training (tuner/pricing/calibration.h): `autotune converge` measured the noise scale its changed batches imply
  // and wrote it beside this run; value / lo / hi are then that (the arms' geometric mean and range) and own_* what this
  // run's measurement gave.
  bool calibrated = false;
  std::string calibration_basis;    ///< "converge run DIR, finished DATE: batch 64 implied 1,141; …"
  std::string calibration_refused;  ///< a calibration.json of another model, data or batch: why it was not used
  double own_value = 0, own_lo = 0, own_hi = std::numeric_limits<double>::infinity();
};

/// The learning rate to start from at another global batch (AdaScale's gain; docs/time-to-train.md).
struct LrAdvice {
  bool given = false;
  double gain = 1;     ///< r = (B/B0)(B̄ + B0)/(B̄ + B)
  double lr_from = 0;  ///< the user's learning rate at B0
  double lr_adam = 0;  ///< Adam-family: lr × √r (what the built-in workloads' AdamW needs)
  double lr_sgd = 0;   ///< SGD: lr × r
};

/// Answer (b): a config at another global batch than the user's, priced by predicted time to the same
/// loss against answer (a), across the band of noise scales the run cannot rule out.
struct TimeAnswer {
  int config = -1;  ///< index into RunSummary::configs, -1 when there is none
  std::int64_t global_batch = 0;
  double throughput_ratio = 0;  ///< samples/s of (b) ÷ (a)
  double time_ratio = 0;        ///< time to the loss of (a) ÷ (b) at the estimated B̄ (> 1: (b) is faster)
  double time_ratio_min = 0, time_ratio_max = 0;  ///< the same at the band's two ends
  double band_lo = 0, band_hi = 0;                ///< the band of B̄ (band_hi = ∞: unbounded above)
  bool beats_a = false;                           ///< faster than (a) across the whole band
  LrAdvice lr;
  std::string basis;  ///< which runs the throughput ratio comes from
};

/// Where the trials ran (docs/scale-out.md): the executor and its slots, and what running side by side cost.
/// Derived from the trials' placements (knobs/protocol.h, Placement); a run from before placements has slots 1.
struct ScaleOut {
  std::string executor = "local";
  int slots = 1;
  std::vector<std::string> places;  ///< per slot: "slot 0: CPU 0" / "slot 1: CPUs 2-3, GPU 1"
  double device_seconds = 0;        ///< Σ trial wall time: each trial holds one slot (one device) while it runs
  int trials_beside = 0;            ///< trials that had another in flight beside them at some moment
  int finalists_beside = 0;         ///< confirmation / reference trials that did (0: they all ran alone)
  /// The baseline's copies in every slot at once against its own trial alone (TrialKind::interference).
  double alone = 0, beside = 0;  ///< samples/s: the baseline alone, and the median of its copies
  int copies = 0;
  double interference() const { return alone > 0 ? beside / alone : 0; }  ///< beside ÷ alone
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
  /// How a compile's one-off seconds are priced against a config's samples/s (tuner/search/ranking.h, compile_factor): over the
  /// user's run (noise_scale.run_samples, when known), else over this many seconds of training.
  double compile_horizon_seconds = 0;
  int trials_run = 0;                                  ///< worker processes, re-measures and confirmation included
  double trial_seconds = 0;          ///< a trial's mean wall time (the noise-scale trial aside)
  double search_budget_minutes = 0;  ///< the budget that fits a small search at that length (tuner/measures/budget.h)
  std::vector<ConfigSummary> configs;                  ///< one per config measured, in the order first run
  int baseline = -1;                                   ///< index into configs
  int winner = -1;                                     ///< index into configs, -1 when nothing was stable
  /// The candidate that led but was not distinguishable from the baseline in the interleaved rounds (its interval
  /// reached 1×): the defaults kept their place against it (winner_note says so); -1 when none.
  int indistinct = -1;
  std::string winner_note;                             ///< tie-break explanation, "" when none was needed
  double speedup = 0, speedup_lo = 0, speedup_hi = 0;  ///< winner / baseline median, 95% bootstrap CI
  std::string speedup_basis;  ///< which runs the speedup compares ("interleaved confirmation runs …" or "search runs")
  Confirmation confirmation;                                   ///< the winner's
  std::vector<std::pair<Config, Confirmation>> confirmations;  ///< every candidate re-run at the end
  std::vector<Config> unexplored;                              ///< configs the budget did not reach
  std::vector<KnobEffect> knob_effects;                        ///< the winner's non-default knobs, largest effect first
  EffectsTogether effects_together;                            ///< their product against the whole
  std::vector<TrialPoint> trials;                              ///< every worker process, in completion order
  std::vector<LossCurve> loss_curves;                          ///< winner, its fp32 reference (when run), baseline
  Verdict verdict;
  std::vector<TracedProfile> profiles;                ///< traced trials of winner / baseline, when they ran
  /// Winner / baseline without a traced profile, each with why ("the budget ended before the traced trials").
  std::vector<std::pair<std::string, std::string>> unprofiled;
  bool finished = true;                               ///< false: the run was interrupted; the report shows what the journal holds
  double max_rel_iqr = 0.05, memory_headroom = 0.10;  ///< the thresholds the verdict used
  double max_drift = 0.05;                            ///< |last window ÷ first − 1| allowed
  /// The confirmation also accepted a candidate that outran every other config in each round (run option
  /// confirm_round_lead; journals from before it: false).
  bool confirm_round_lead = false;
  NoiseCalibration noise;
  BusyHost busy_host;
  // Time to train (docs/time-to-train.md). Runs before it existed: objective throughput, user_batch 0.
  /// What "fastest" meant in this run: predicted time to the same loss (--objective time), else samples/s.
  bool by_time = false;
  std::int64_t user_batch = 0;           ///< B0: the global batch the user trains with
  std::string user_batch_source;         ///< "the workload's default batch size" | "--effective-batch"
  NoiseScaleSummary noise_scale;
  int answer_a = -1;  ///< (a) the fastest confirmed config at the user's batch (index into configs), -1 when none
  double answer_a_speedup = 0, answer_a_lo = 0, answer_a_hi = 0;  ///< its throughput over the baseline, 95% CI
  TimeAnswer answer_b;                                            ///< (b) the best config at another batch
  RampAnswer answer_c;                                            ///< (c) a batch ramp (tuner/summary/batch_ramp.h)
  /// The learning rates lr-sweeps measured from this run (`autotune lr-sweep --from-run`; read by `autotune report`).
  LrMeasured lr_measured;
  double time_speedup = 0;     ///< the winner's predicted time to the same loss vs the baseline's (= speedup at B0)
  std::string time_note;       ///< why this run cannot rank a changed batch by time ("" when it can)
  std::string batchnorm_note;  ///< answer (a) changes the micro-batch of a model with BatchNorm
  /// The baseline: which frontend's defaults ("python" | "libtorch"; "" = the catalog's, runs from before),
  /// and each value with its source.
  std::string frontend;
  std::vector<BaselineValue> baseline_sources;
  /// The memory model (runs with --memory-cap; docs/memory.md): predictions, configs skipped without
  /// running, misses. `on` false otherwise.
  MemoryReport memory;
  ScaleOut scale_out;
};

}  // namespace autotune
