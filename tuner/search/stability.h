#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "knobs/record.h"
#include "tuner/measures/record_index.h"
#include "tuner/search/ranking.h"

namespace autotune {

/// The thresholds of "Stable" (docs/design.md; numbers and reasons in docs/search.md).
/// 10%, or $AUTOTUNE_MAX_HOST_LOAD (a %) when set: the test suite sets 100 (off) for the tests it runs side by
/// side by design (tests/CMakeLists.txt), a host that is busy on purpose; `--max-host-load` overrides either.
double default_max_host_load();
/// 30 s, or $AUTOTUNE_QUIET_WAIT (seconds, 0 to 3600) when set: tests whose busy trials are the fake worker's fiction set 0,
/// so the real host (other tests beside them) is not waited for.
double default_max_quiet_wait();

struct StabilityOptions {
  double max_rel_iqr = 0.05;           ///< window-to-window IQR/median above this = noisy
  double max_drift = 0.05;             ///< |last window ÷ first − 1| above this = still drifting (not settled)
  double memory_headroom = 0.10;       ///< peak must stay ≤ (1 − headroom) × device (or host) memory
  int max_remeasure = 2;               ///< a noisy config is re-measured up to this many times, fresh process each
  /// The busy-host guard: other processes may use at most this share of a trial's CPUs during its measured
  /// windows (and never less than min_busy_cores: a tuner and a shell are not a busy host). A trial above it
  /// was timed against another program; its config is re-measured like a noisy one, and cannot win on it.
  double max_host_load = default_max_host_load();
  double min_busy_cores = 0.25;
  /// The longest wait for a quiet host before a busy config is timed again (tuner/search/quiet_host.h; a quarter of the
  /// budget left, if less; 0: no wait). Not stored in journals: it changes when a trial runs, not what it measured.
  double max_quiet_wait = default_max_quiet_wait();
  double max_scaler_skip_rate = 0.02;  ///< fp16: GradScaler skips after warm-up ≤ 2% of measured steps
  double loss_tolerance = 0.05;        ///< loss trajectory vs the fp32 reference: mean of the last 10 common steps within 5%
  /// Raise the noise and drift limits to what this host's own noise produces (host_noise, calibrated);
  /// off keeps max_rel_iqr / max_drift as given (and is what journals from before the calibration resume with).
  bool calibrate = true;
  int calibration_trials = 6;  ///< configs whose first trial measures the host
  double max_raise = 4.0;      ///< a calibrated limit is at most this many times the given one
  /// The confirmation also accepts a speedup within the run-to-run spread of its rounds
  /// (tuner/summary_parts.cpp); journals from before this existed report with the CI test alone.
  bool confirm_run_spread = true;
  /// The confirmation also accepts a candidate that outran every other config in each of its (≥ 2)
  /// interleaved rounds; journals from before this existed report without it.
  bool confirm_round_lead = true;
};

/// The busy-host guard's check, by name (a failed one asks for a re-measure, as noise does).
inline constexpr const char* kQuietHost = "quiet host";

/// The most other programs may use of `cpus` CPUs while a trial is timed, in cores: max(min_busy_cores, max_host_load × cpus).
double busy_limit_cores(int cpus, const StabilityOptions& o);
/// Whether `h` is above that limit.
bool host_busy(const HostLoad& h, const StabilityOptions& o);
/// Whether another process held the trial's GPU while it was timed (device_holders absent: not known, not busy; the
/// guard off, --max-host-load 100: never).
bool device_busy(const TrialResult& r, const StabilityOptions& o);
/// Whether a trial's measured windows shared its CPUs with more than `o` allows, or its GPU with another process
/// (host_load and device_holders absent: not known, not busy).
bool host_busy(const TrialResult& r, const StabilityOptions& o);
/// Whether `s` failed the quiet-host check (its chosen attempt was timed on a busy host).
bool failed_quiet_host(const ConfigSummary& s);

/// The host's own window-to-window noise: medians over the first trial of the run's first
/// `calibration_trials` configs (baseline and search trials that finished, base window length). A
/// median is what a typical config shows on this machine; a config that is noisier than that is noisy
/// itself. `trials` < calibration_trials: not enough yet, nothing is calibrated.
struct HostNoise {
  int trials = 0;
  double rel_iqr = 0;  ///< median window IQR/median
  double drift = 0;    ///< median |last window ÷ first − 1|
  int busy = 0;  ///< first attempts left out: timed beside other programs (host_busy), so not this host's own noise
};
/// `first_attempts`: each measured config's first attempt, in the order the configs were first measured. A trial timed
/// on a busy host (host_busy under `guard`'s limits, which calibration never changes) says nothing of the host's own noise
/// and is left out (counted in `busy`).
HostNoise host_noise(const std::vector<const TrialRecord*>& first_attempts, const MeasureOptions& base, int calibration_trials,
                     const StabilityOptions& guard);

/// The limits in force: `o`'s, raised (never lowered) to the 95th percentile that a config as steady as
/// the host's median one would show with the run's window count (IQR ≈ 2.1× its median for 3 windows,
/// |drift| ≈ 2.9×, docs/search.md), at most max_raise × the given limit. `o` unchanged when not calibrating
/// or too few trials.
StabilityOptions calibrated(const StabilityOptions& o, const HostNoise& h, int windows);

/// Whether a limit in force (`calibrated`'s result) was raised as far as `given` allows: the host is too
/// noisy to rank configs a few % apart.
bool at_ceiling(const StabilityOptions& in_force, const StabilityOptions& given);

/// The loss-trajectory check: `run` against its fp32 `reference` (same batch, seed and data order),
/// aligned by global step (warm-up included); compares the mean of the last 10 common steps.
Check loss_trajectory_check(const TrialResult& run, const TrialResult& reference, double tolerance);

/// A config's attempts at a window scale, after those at the shorter windows they lengthened (attempt_chain).
struct AttemptChain {
  std::vector<const TrialRecord*> attempts;  ///< in completion order: the `shorter` ones first
  std::size_t shorter = 0;                   ///< attempts at shorter windows: they count, their windows are not pooled
  double scale = 1;                          ///< the window of the others, × the run's
};

/// Attempts of `c` at `scale` preceded by those at the shorter windows they lengthened: when the first attempt at a
/// scale is a re-measure, it lengthened the windows of the longest shorter scale (a power of two below) that has
/// attempts (remeasure_scale, below), whose attempts then count as the config's too. A scale first measured by the
/// search (successive halving's rungs) starts its own.
AttemptChain attempt_chain(const RecordIndex& index, const Config& c, double scale);

/// Folds every attempt of one config into its verdict: picks the attempt to use (the first quiet,
/// successful one, else the last), computes median / 95% bootstrap CI / IQR, and records each
/// stability check with its numbers. `attempts` are in completion order and non-empty.
ConfigSummary summarize_config(const std::vector<const TrialRecord*>& attempts, const StabilityOptions& opts);
/// The same for a config whose re-measures lengthened its windows (RecordIndex::chain): the verdict from the attempts
/// at the longest window; the shorter ones count as its attempts (its trials, whether its re-measures are spent).
ConfigSummary summarize_config(const AttemptChain& chain, const StabilityOptions& opts);

/// Last window's throughput ÷ the first's − 1 (0 with fewer than two windows).
double window_drift(const std::vector<double>& throughputs);

/// True when the config ran fine but was too noisy or still drifting and may be measured again.
bool wants_remeasure(const ConfigSummary& s, std::size_t attempts, const StabilityOptions& opts);

/// The share of a step's host time spent waiting for its batch at or above which a config is input-bound: the run's
/// verdict (tuner/summary/curves.cpp) and the window length of its re-measures (below) read it.
inline constexpr double kInputBoundShare = 0.30;
/// The longest window a re-measure lengthens to, as a multiple of the run's window.
inline constexpr double kMaxWindowScale = 8.0;
/// The data wait's share of a step's host time (`b`'s phases; 0 when none were recorded).
double data_share(const Breakdown& b);
/// The window scale a re-measure of `s` (measured at `scale`) runs at. An input-bound config (data_share ≥
/// kInputBoundShare) that failed on its windows' spread or drift, not on a busy host, is timed again with longer
/// windows: its step time follows the batches it reads (photos that decode slower, a loader worker's turn), so a fresh
/// process with windows as short shows the same spread, while a window k× as long averages k× the batches, its spread
/// about 1/sqrt(k) of it. The scale grows by powers of two to the first at which the spread measured (IQR or drift,
/// `r` × its limit) would fall to its limit (r² ×), at least twice `scale`, at most kMaxWindowScale. Any other config,
/// or one already at kMaxWindowScale: `scale` (a fresh process, windows as long).
double remeasure_scale(const ConfigSummary& s, double scale, const StabilityOptions& o);

/// Loss-trajectory verification of the leading `top` candidates that change numerics (precision ≠
/// fp32, or compile ≠ off: the twin is then fp32 and eager). `reference_for(twin)` returns the twin's reference record, or nullptr when there is
/// none (the live run runs it here when the budget allows); `measured(s)` returns the record whose
/// windows `s` uses. A candidate without a reference cannot win: it is marked "unverified". Repeats
/// until the top `top` are all verified, so a rejected leader lets the next one in.
void verify_leaders(History& history, int top, double tolerance,
                    const std::function<const TrialRecord*(const Config& fp32_twin)>& reference_for,
                    const std::function<const TrialRecord*(const ConfigSummary&)>& measured);

}  // namespace autotune
