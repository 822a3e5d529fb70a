#pragma once
// A batch ramp (docs/time-to-train.md, "A batch ramp"): a run that trains at a small global batch while the noise
// scale is small and switches to bigger ones as it grows. The arithmetic is the time-to-train model's local form: at
// progress e (the samples a run at the user's batch B0 would have trained to reach the same loss) with the noise
// scale B(e), a run at global batch B needs (B + B(e)) / (B0 + B(e)) of its own samples per sample of e, and spends
// them at its samples/s X(B). So each moment of the run has a cheapest batch, argmin (B + B(e)) / X(B): the lower
// envelope of one line per batch in B(e). As B(e) grows along the run the envelope moves to batches with more samples/s,
// and the ramp is that envelope, switched where the lines cross. Pure functions over a growth curve
// (knobs/noise_trajectory.h), shared by the tuner (answer (c), converge's ramp arm) and the tests.
#include <cstdint>
#include <vector>

#include "knobs/noise_trajectory.h"

namespace autotune {

/// A batch the ramp may train at: its global batch and the samples/s the tune measured it at.
struct RampOption {
  std::int64_t global_batch = 0;
  double samples_per_s = 0;
};

/// One phase of a ramp.
struct RampPhase {
  int option = -1;                  ///< index into the options it was chosen from
  std::int64_t global_batch = 0;
  double from_progress = 0, to_progress = 0;  ///< e: samples at the user's batch B0 to the same loss
  double from_samples = 0, to_samples = 0;    ///< the ramp run's own samples (where a training loop switches)
  double noise_at_start = 0;                  ///< B(e) where the phase starts
  double seconds = 0;                         ///< the phase's predicted time at its samples/s
};

/// A ramp priced over a run: its phases in order and their sums.
struct RampPrice {
  std::vector<RampPhase> phases;
  double seconds = 0, samples = 0;
};

/// The predicted time of a run at one global batch `B` (samples/s `X`) to the loss a run of `run` samples at B0 reaches:
/// ∫ (B + B(e)) / (B0 + B(e)) de ÷ X over e in [0, run].
double fixed_batch_seconds(const NoiseGrowthCurve& c, double B0, double run, double B, double X);

/// The cheapest ramp through `options` over a run of `run` samples at B0 (the envelope above): the phases in order,
/// each switched where B(e) passes the crossing of two options' lines. One phase when one batch is cheapest all along.
/// Options with samples_per_s ≤ 0 are never chosen.
RampPrice cheapest_ramp(const NoiseGrowthCurve& c, double B0, double run, const std::vector<RampOption>& options);

/// A ramp run as a training loop runs it — each phase switched at its own sample count (`phases`' to_samples; the last
/// one runs to the end) — priced under the curve `c`, which need not be the one it was planned with: the band's ends
/// price the same switches. `options` give each phase's samples/s.
RampPrice price_ramp(const NoiseGrowthCurve& c, double B0, double run, const std::vector<RampPhase>& phases,
                     const std::vector<RampOption>& options);

/// `c` moved up or down (its intercept) until its run mean (run_mean_noise_scale) is `mean`: a curve with the
/// trajectory's shape at another level (a calibration by training, the band's ends).
NoiseGrowthCurve with_run_mean(NoiseGrowthCurve c, double B0, double run, double mean);

/// The learning-rate gain at a switch to global batch `B` (AdaScale's r = (B/B0)(Bn + B0)/(Bn + B) at the local noise
/// scale `Bn`), held at its value at B = max(B̄, B0) for bigger batches: past the noise scale Adam's best learning rate
/// stops rising (it falls), so the ramp never raises it beyond that. Adam-family: × √r; SGD: × r.
double ramp_lr_gain(double B, double B0, double Bn, double run_mean);

}  // namespace autotune
