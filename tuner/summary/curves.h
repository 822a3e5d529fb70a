#pragma once
// The summary's curves and verdicts: the loss curves of the winner, its fp32 reference and the baseline; where
// the winner's time goes (the traced profile's verdict, else its host phase times); the traced profiles, and why
// one is missing.
#include "reports/summary.h"
#include "tuner/summary/input.h"

namespace autotune {

/// Loss curves (winner, its fp32 reference, baseline), the bottleneck verdict and the traced profiles.
void add_curves_verdict_and_profiles(RunSummary& summary, const SummaryInput& in);

}  // namespace autotune
