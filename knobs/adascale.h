#pragma once
// AdaScale's gain: how much further one step at a bigger batch goes than one at the user's, at a gradient noise scale.
// The one formula behind (b)'s learning-rate advice (tuner/search/ranking.h, lr_advice), converge's rate for a changed
// batch (tuner/converge/converge.cpp), lr-sweep's centre at (b)'s batch (tuner/converge/lr_sweep_run.cpp) and the
// batch ramp's gain at a switch (knobs/batch_ramp.h, ramp_lr_gain); the optimizer family's rule turns it into a rate
// (knobs/worker_info.h, lr_at_gain).
#include <cmath>

namespace autotune {

/// r = (B/B0)(Bn + B0)/(Bn + B) at the noise scale `Bn`: 1 at B = B0, B/B0 far below the noise scale, → (Bn + B0)/B0
/// far above it. Without a usable noise scale (not positive, not finite) r = B/B0, the linear rule.
inline double adascale_gain(double B, double B0, double Bn) {
  if (!(B0 > 0)) return 1;
  if (!(Bn > 0) || !std::isfinite(Bn)) return B / B0;
  return (B / B0) * (Bn + B0) / (Bn + B);
}

}  // namespace autotune
