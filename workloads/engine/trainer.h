#pragma once
#include "knobs/protocol.h"

namespace autotune {

/// Runs one trial in this process: applies the plan's knobs, builds the workload, warms up until the
/// step time settles, measures `plan.measure.windows` windows end to end (data included) and returns
/// the result. Never throws for a trial failure: OOM, non-finite loss and errors become a status and a
/// message. Throws UsageError for a plan that names an unknown workload or an unavailable device.
/// A data-parallel rank (WORLD_SIZE > 1 in the environment) joins the others first and, when
/// `progress_path` is given, keeps "step N phase" there for the launcher to read if the trial hangs.
TrialResult run_trial(const TrialPlan& plan, const std::string& progress_path = "");

}  // namespace autotune
