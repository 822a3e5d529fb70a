#pragma once
// Calibration by training (docs/time-to-train.md, "Calibrated by training"): the noise scale that `autotune converge`
// measured — solved from the samples each changed batch needed to the same loss — written beside the tune run it came
// from, so that `autotune report TUNE_DIR` and a resumed tune price a changed batch with it. A calibration belongs to
// one model, one data and one user batch; one from another is refused in one line.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reports/converge_summary.h"
#include "reports/summary.h"

namespace autotune {

struct CalibrationArm {
  std::int64_t global_batch = 0;
  double implied = 0;  ///< the noise scale this arm's samples to the target imply
};

struct Calibration {
  double noise_scale = 0;  ///< the geometric mean of the arms' implied values
  double lo = 0, hi = 0;   ///< the smallest and largest of them
  std::vector<CalibrationArm> arms;
  std::string converge_run, date;  ///< the converge folder and when it finished
  std::string workload, model, data;
  std::int64_t user_batch = 0;
};

/// The calibration a converge run gives: its comparisons whose samples ratio r implies a noise scale, 1 < r < B/B0 (one
/// that needed fewer samples than the baseline implies none — its gain is the learning rate's, not the batch's; one that
/// needed more than B/B0 times as many, neither: even B̄ → 0 costs only that). nullopt when no arm implies one.
std::optional<Calibration> calibration_from(const ConvergeSummary& s, const std::string& model);

/// TUNE_DIR/calibration.json. An earlier calibration there is kept, renamed calibration-<its date>.json; returns the path.
std::string write_calibration(const std::string& tune_dir, const Calibration& c);

/// Whose run this is: where a calibration by training would sit beside it and what it must match.
struct RunIdentity {
  std::string dir, workload, model, data;
};

/// A calibration beside the run `id` replaces what priced n (value / lo / hi; the run's own kept in own_*); one of another
/// model, data or batch is named in n.calibration_refused and left out.
void apply_calibration(NoiseScaleSummary& n, std::int64_t user_batch, const RunIdentity& id);

/// The calibration beside a tune run, if any. One of another workload, model, data or user batch than the run's is not
/// used: `refused` then says so in one line.
std::optional<Calibration> read_calibration(const std::string& tune_dir, const std::string& workload, const std::string& model,
                                            const std::string& data, std::int64_t user_batch, std::string& refused);

}  // namespace autotune
