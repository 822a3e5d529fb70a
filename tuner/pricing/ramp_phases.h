#pragma once
// A batch ramp given by hand (docs/time-to-train.md, "A batch ramp"): `autotune apply --ramp-phases` prints it as a
// training loop, `autotune converge --ramp-phases` trains it as an arm. The tune's own ramp (answer c) needs none of this.
#include <string>
#include <vector>

#include "knobs/converge.h"

namespace autotune {

/// "0:1:1e-3,20000:2:1.3e-3": each phase's first sample (of the ramp run's own; 2e4 is read too), its grad_accum and its
/// learning rate, the first from 0, the samples rising, at least two phases. Without `lr_required` a phase may leave the
/// learning rate out ("20000:2"): lr 0, for the caller to fill. UsageError naming the phase that is wrong and what is
/// allowed.
std::vector<RampStep> parse_ramp_phases(const std::string& spec, bool lr_required);

}  // namespace autotune
