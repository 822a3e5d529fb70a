#pragma once
// The summary's knob effects: each knob the winner changed, measured as the winner against the winner with that
// knob at its baseline value (the ablation run, or a measured neighbour that differs in that knob alone).
#include "reports/summary.h"
#include "tuner/summary/input.h"

namespace autotune {

/// The winner against the winner with one knob at its baseline value, for each knob it changed.
void add_knob_effects(RunSummary& summary, const SummaryInput& in);

}  // namespace autotune
