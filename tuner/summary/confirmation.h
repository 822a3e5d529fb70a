#pragma once
// The summary's confirmation and winner: the top candidates and the baseline as re-run in the interleaved
// confirmation, whether each reproduced its search number, the winner chosen on those runs (tuner/search/ranking.h),
// the time objective's two answers, and the winner's speedup over the baseline.
#include "reports/summary.h"
#include "tuner/summary/input.h"

namespace autotune {

/// The top candidates and the baseline as re-run in the confirmation, and the winner chosen on those runs.
void add_confirmation_and_winner(RunSummary& summary, const SummaryInput& in);
/// Winner ÷ baseline, from the interleaved confirmation runs when both ran fine, else the search runs.
void add_speedup(RunSummary& summary, const SummaryInput& in);
/// Answer (b)'s predicted time to the same loss over the baseline's, as its first screen prints it: (b)'s ratio over
/// (a) (the paired rounds) carried to the baseline through (a)'s own speedup (after add_speedup); 0 when (b) was not
/// priced against (a). The report's headline and converge's "the tune predicted" both take it.
double answer_b_over_baseline(const RunSummary& summary);

}  // namespace autotune
