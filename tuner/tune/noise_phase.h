#pragma once
// A tuning run's phase 1b (tuner/tune/tune.cpp runs the phases): the gradient noise scale that prices a changed batch.
#include "tuner/tune/core.h"

namespace autotune {

/// 1b. The gradient noise scale at the user's batch (the time objective on real data): one untimed
/// trial (tuner/options/run_context.h, noise_plan) whose estimate prices every config at another global batch
/// from here on (tuner/search/ranking.h). About 15% of the budget: from random weights an eighth of it trains first, then
/// three windows of doubling length record the noise scale along the run (tuner/pricing/noise_over_run.h).
/// Nothing runs where the objective is not time, where a changed batch cannot be ranked (said why), where a resumed
/// run measured it already, where --noise-scale gives it, or where the user's own loop's noise log prices it.
void measure_noise_scale(TuneCore& run);

}  // namespace autotune
