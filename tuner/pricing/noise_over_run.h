#pragma once
// The noise scale of the user's whole run (docs/time-to-train.md, "B̄ for your run"): a noise-scale trial's windows
// along its training (knobs/noise_trajectory.h), the growth fitted through them, and the mean of the extrapolated
// B(samples) over the run's length, which is what prices a changed batch. Kept apart from the trial's own estimate
// (summarize_noise_trial below), which it starts from.
#include <cstdint>
#include <string>
#include <vector>

#include "knobs/noise_scale.h"
#include "knobs/record.h"
#include "reports/summary.h"
#include "tuner/pricing/calibration.h"
#include "tuner/pricing/noise_log.h"
#include "tuner/pricing/run_length.h"

namespace autotune {

/// B(samples) follows the fit up to this many times the last sample the trial measured, then is held: the noise
/// scale levels off late in training, and a fit over one decade of samples says nothing about five.
inline constexpr double kExtrapolationCap = 32;

/// What the run's horizon is made of.
struct RunHorizon {
  std::string length;            ///< --run-length as given (tuner/pricing/run_length.h; "": one pass over the data)
  double dataset_samples = 0;    ///< one pass over the data, in samples (0: unknown)
  double tokens_per_sample = 0;  ///< token workloads: the sequence length
  /// Without --run-length and the data's size: the run is this many samples, named by `fallback_basis` (a noise log's
  /// own span; 0: none, the measurement's value prices the run).
  double fallback_samples = 0;
  std::string fallback_basis;
};

/// Fills n.windows and n.growth from `rec` (and the trial's per-step `losses`). From random weights, with at least
/// one window estimated, it prices the run: n.value / lo / hi become the run's B̄ and the band the fit cannot rule out
/// (the trial's own estimate moves to trial_value / trial_lo / trial_hi) and n.over_run is set. Otherwise over_run_note
/// says why the trial's value prices the run. Returns "" or, for a --run-length shorter than the trial's own
/// training, one line naming it (the run cannot be priced; `autotune tune` exits 2 with it).
std::string price_over_run(NoiseScaleSummary& n, const NoiseRecord& rec, const std::vector<double>& losses, const RunHorizon& h,
                           std::int64_t user_batch);

/// What prices the run: price_over_run on the trial's record, then a calibration by training
/// beside the run replaces value / lo / hi (the run's own kept in own_*; one of another model, data or batch is named
/// in calibration_refused and left out). Returns price_over_run's error ("" or the --run-length line).
std::string price_noise_scale(NoiseScaleSummary& n, const NoiseRecord& rec, const std::vector<double>& losses, const RunHorizon& h,
                              std::int64_t user_batch, const RunIdentity& id);

/// The windows of doubling length a log is cut into: the last ends at its last sample, the first at first_window_end; as
/// many as the log's span holds (at most kNoiseLogMaxWindows), each needing at least 4 logged steps to count.
inline constexpr int kNoiseLogMaxWindows = 10;
struct LogWindows {
  std::int64_t first_window_end = 0;
  int windows = 0;
};
LogWindows log_windows(const NoiseLog& log);

/// The noise scale of a noise-scale trial in the report's terms: the estimate and its interval
/// (knobs/noise_scale.h, Student's t over its blocks), what it was measured on.
NoiseScaleSummary summarize_noise_trial(const TrialRecord& r);

/// What a noise log from the user's own loop measured as a whole (tuner/pricing/noise_log.h): its ratio of sums and interval.
NoiseScaleSummary summarize_noise_log(const NoiseLog& log);

/// The same pricing from a noise log instead of a trial: its windows (log_windows), the growth, B̄ over the run, and a
/// calibration by training beside the run over it. Returns "" or the --run-length line (a run shorter than the log).
std::string price_from_log(NoiseScaleSummary& n, const NoiseLog& log, const RunHorizon& h, std::int64_t user_batch,
                           const RunIdentity& id);

}  // namespace autotune
