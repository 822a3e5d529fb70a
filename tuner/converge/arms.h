#pragma once
// A converge run's arms (tuner/converge/converge.h): the baseline's runs on its data orders, and each candidate's runs
// on its own — what the training comparison and the held-out one (tuner/converge/held_out.h) both pair.
#include <string>
#include <vector>

#include "reports/converge_summary.h"

namespace autotune {

/// Whether a run of this role trains the baseline: its first run ("baseline") or one on another data order ("rerun").
bool baseline_role(const std::string& role);

/// The baseline's runs (every data order) that finished with a curve.
std::vector<const ConvergeRun*> baseline_runs(const ConvergeSummary& s);

/// Candidate `k` of `s.runs` and its runs on the other data orders (the same config, ramp and rate), `k`'s first.
std::vector<const ConvergeRun*> arm_runs(const ConvergeSummary& s, int k);

}  // namespace autotune
