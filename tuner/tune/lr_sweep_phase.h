#pragma once
// A tuning run's learning-rate phase (tune --lr-sweep; tuner/tune/tune.cpp runs the phases): the sweep of
// tuner/converge/lr_sweep_run.h inside the run, at the user's batch and/or at answer (b)'s, its time kept from the budget
// before the search and said up front as a search trial's is, its answer left beside the run where the reports price
// (a) and (b) with it (tuner/pricing/lr_beside.h).
#include "reports/summary.h"
#include "tuner/tune/core.h"

namespace autotune {

/// After the baseline (and the noise scale, whose run length sets the horizon): what each sweep the run asks for costs
/// — its burn-in and start rates on 2 data orders, at the baseline's samples/s and start-up — set aside from the budget
/// and said. A sweep that does not fit what is left is dropped up front with the budget it would need. Nothing where the
/// option is off, the objective is not time, or the folder holds the sweep's answer already (a resumed run).
void keep_for_lr_sweeps(TuneCore& run);

/// After the reports are written: each sweep kept for, trained from the run's folder (its outputs in
/// <run>/lr-sweep-<at>/, its answer beside the run); the changed-batch one only where the run has an answer (b). Returns
/// whether one ran (the caller summarizes and writes the reports again). An interrupted sweep is said, its folder kept;
/// the Interrupted is rethrown for the caller.
bool run_lr_sweeps(TuneCore& run, const RunSummary& summary);

}  // namespace autotune
