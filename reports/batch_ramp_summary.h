#pragma once
// Answer (c) of the time objective (docs/time-to-train.md, "A batch ramp"): a schedule of global batches over the
// user's run, each phase one measured config of the same micro-batch and knobs at another grad_accum, switched where
// the noise scale along the run makes the next batch cheaper; priced phase by phase against answers (a) and (b).
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace autotune {

/// A ramp is advised only when it beats the best fixed batch by this much at B̄ (Pollux grows a batch only for a predicted
/// gain above 5%): a schedule costs a training loop more than a constant, and smaller gains are within the model's error.
inline constexpr double kRampMinGain = 1.05;

/// One phase of the ramp.
struct RampPhaseSummary {
  int config = -1;  ///< index into RunSummary::configs
  std::int64_t global_batch = 0, micro_batch = 0;
  int grad_accum = 1;
  double from_samples = 0, to_samples = 0;    ///< the ramp run's own samples: where the training loop switches
  double from_progress = 0, to_progress = 0;  ///< samples at the user's batch to the same loss
  double noise_at_start = 0;                  ///< B(samples) where it starts (the fitted growth)
  double samples_per_s = 0;                   ///< its config's, from the search
  double seconds = 0;                         ///< predicted time of the phase
  double lr_gain = 1;                         ///< AdaScale's r at the switch, held past max(B̄, B0)
  double lr_adam = 0, lr_sgd = 0;             ///< the user's lr × √r (Adam-family) and × r (SGD)
};

/// The ramp, with the predicted time of each answer over the same run (samples/s from the search for all).
struct RampAnswer {
  bool proposed = false;  ///< a ramp of at least two phases was found
  std::string note;       ///< why there is none ("" when proposed, or when the run has no time objective)
  std::vector<RampPhaseSummary> phases;
  double run_samples = 0;  ///< the run at the user's batch it is priced over
  double lr_from = 0;      ///< the user's learning rate
  /// Predicted wall time of the run to its target loss: the ramp (c), answer (a), answer (b) (0: none), the baseline.
  double seconds = 0, a_seconds = 0, b_seconds = 0, baseline_seconds = 0;
  /// Time of (a) ÷ time of the ramp, at B̄ and at the band's two ends (> 1: the ramp is faster); the same against (b).
  double vs_a = 0, vs_a_min = 0, vs_a_max = 0;
  double vs_b = 0, vs_b_min = 0, vs_b_max = 0;
  /// Worth switching for: at B̄ at least kRampMinGain × the faster of (a) and (b), and faster than both across the band.
  bool advised = false;
  double band_lo = 0, band_hi = std::numeric_limits<double>::infinity();  ///< B̄ at the band's ends
};

}  // namespace autotune
