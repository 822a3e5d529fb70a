#pragma once
// The gradient noise scale in the reports' words (docs/time-to-train.md): the sentence every report gives, the
// windows along the trial as table rows, and the fitted growth as points for a chart. Plain text; each report formats it.
#include <string>
#include <utility>
#include <vector>

#include "reports/summary.h"

namespace autotune {

/// The report's noise-scale sentence: the value that prices a changed batch and where it comes from — the trial's
/// estimate, or along the run the windows, the growth fitted through them and the mean over the user's run, and
/// where that is extrapolated beyond what was measured. "" when nothing was measured or given.
std::string noise_scale_text(const NoiseScaleSummary& n);

/// One window as a table row: "samples from–to", steps, "B̂ [lo, hi]", loss.
struct NoiseWindowRow {
  std::string span, steps, value, loss;
};
std::vector<NoiseWindowRow> noise_window_rows(const NoiseScaleSummary& n);

/// The fitted B(samples) from the first window to the run's end (log-spaced, the extrapolation's cap applied) as
/// (samples, B) points; empty without a fit. `loss_fit`: B against the windows' losses instead, over their range.
std::vector<std::pair<double, double>> noise_fit_points(const NoiseScaleSummary& n);
std::vector<std::pair<double, double>> noise_loss_fit_points(const NoiseScaleSummary& n);

}  // namespace autotune
