#pragma once
// The loss on held-out data along a converge run (docs/time-to-train.md, "A held-out target"): evaluated every so
// many samples on the same fixed samples in every run, so each point is already a mean over many samples and needs no
// smoothing; between two evaluations the loss is read as a straight line in time. Unlike the training loss it can rise
// again (over-fitting), so a run's lowest held-out loss, not its last, says how far it got.
#include <vector>

#include "knobs/converge.h"

namespace autotune {

/// The first time the held-out loss is at or below `target`, interpolated linearly between the evaluation before it
/// (above the target) and the one at or below it; {∞, -1} when no evaluation gets there.
Reached time_to_held_out(const std::vector<CurvePoint>& v, double target);

/// The lowest finite held-out loss of a run after it began training (its evaluations past sample 0; NaN when it has
/// none): where training took it, not where it started.
double lowest_held_out(const std::vector<CurvePoint>& v);

}  // namespace autotune
