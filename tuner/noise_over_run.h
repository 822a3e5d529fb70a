#pragma once
// The noise scale of the user's whole run (docs/time-to-train.md, "B̄ for your run"): a noise-scale trial's windows
// along its training (knobs/noise_trajectory.h), the growth fitted through them, and the mean of the extrapolated
// B(samples) over the run's length, which is what prices a changed batch. Kept apart from the trial's own estimate
// (tuner/ranking.h, summarize_noise_trial), which it starts from.
#include <cstdint>
#include <string>
#include <vector>

#include "knobs/noise_scale.h"
#include "reports/summary.h"
#include "tuner/noise_log.h"
#include "tuner/run_length.h"

namespace autotune {

/// B(samples) follows the fit up to this many times the last sample the trial measured, then is held: the noise
/// scale levels off late in training, and a fit over one decade of samples says nothing about five.
inline constexpr double kExtrapolationCap = 32;

/// What the run's horizon is made of.
struct RunHorizon {
  std::string length;            ///< --run-length as given (tuner/run_length.h; "": one pass over the data)
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

/// Whose run this is: where a calibration by training would sit beside it (tuner/calibration.h) and what it must match.
struct RunIdentity {
  std::string dir, workload, model, data;
};

/// What prices the run: price_over_run on the trial's record, then a calibration by training
/// beside the run replaces value / lo / hi (the run's own kept in own_*; one of another model, data or batch is named
/// in calibration_refused and left out). Returns price_over_run's error ("" or the --run-length line).
std::string price_noise_scale(NoiseScaleSummary& n, const NoiseRecord& rec, const std::vector<double>& losses, const RunHorizon& h,
                              std::int64_t user_batch, const RunIdentity& id);

/// What a noise log from the user's own loop measured as a whole (tuner/noise_log.h): its ratio of sums and interval.
NoiseScaleSummary summarize_noise_log(const NoiseLog& log);

/// The same pricing from a noise log instead of a trial: its windows (log_windows), the growth, B̄ over the run, and a
/// calibration by training beside the run over it. Returns "" or the --run-length line (a run shorter than the log).
std::string price_from_log(NoiseScaleSummary& n, const NoiseLog& log, const RunHorizon& h, std::int64_t user_batch,
                           const RunIdentity& id);

}  // namespace autotune
