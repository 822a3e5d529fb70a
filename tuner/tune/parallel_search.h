#pragma once
// A tuning run's phase 2 with more than one slot (tuner/tune/tune.cpp runs the phases; tuner/exec/slots.h the slots).
#include "tuner/tune/core.h"

namespace autotune {

/// 2, in parallel slots: the strategy proposes while a slot is free (configs in flight are placeholders
/// in the History; a strategy that needs one of their results waits), each finished trial is judged and
/// journaled by this thread alone, a noisy one re-measured in the next free slot. No barrier per round.
/// First the interference: the baseline in every slot at once against its trial alone.
void search_in_parallel(TuneCore& run);

}  // namespace autotune
