#pragma once
// Two configs' runs paired round by round: the interleaved rounds (the confirmation's, the effect rounds') run each
// config once per round, side by side, so the r-th run of one and the r-th run of the other met the same machine.
// Every ratio the first screen prints between two configs measured in such rounds is taken from these pairs
// (tuner/measures/statistics.h, paired_ratio), never from windows pooled across rounds.
#include <vector>

#include "knobs/record.h"
#include "tuner/measures/statistics.h"

namespace autotune {

/// The r-th run of `num` with the r-th of `den`, for every r both reached; a round where either run failed or
/// measured no window is left out.
std::vector<RoundPair> paired_rounds(const std::vector<const TrialRecord*>& num, const std::vector<const TrialRecord*>& den);

/// Rounds of two kinds (the confirmation's, then the effect rounds') paired kind by kind, in one list.
std::vector<RoundPair> paired_rounds(const std::vector<const TrialRecord*>& num, const std::vector<const TrialRecord*>& den,
                                     const std::vector<const TrialRecord*>& num_more,
                                     const std::vector<const TrialRecord*>& den_more);

}  // namespace autotune
