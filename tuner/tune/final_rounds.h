#pragma once
// A tuning run's last phases (tuner/tune/tune.cpp runs the phases): the leaders and the baseline confirmed in
// interleaved rounds, each knob's effect measured in rounds of its own, and the winner and the baseline traced. Each
// runs its trials alone, whole rounds only where the budget allows, and none that a resumed run already has.
#include "reports/summary.h"
#include "tuner/tune/core.h"

namespace autotune {

/// 4. The top candidates and the baseline again in fresh processes, interleaved (A B base, base B A,
/// …) so drift hits all alike; the winner is chosen on these runs.
void confirm(TuneCore& run);

/// 5. Why it wins: the effect rounds (tuner/summary/knob_effects.h) — the winner, the winner with each changed knob
/// put back to its baseline value, and the baseline, one fresh process each per round, the order reversed every
/// other round, as many rounds as the confirmation; whole rounds only, budget permitting. An effect beyond what
/// its knob's mechanism allows here is then measured again: two more runs of it and of the winner, interleaved.
bool measure_effects(TuneCore& run, const RunSummary& summary);

/// Effects beyond their knob's bound (tuner/summary/knob_effects.h, effects_to_remeasure) measured again: the
/// reverted config and the winner twice each, interleaved (R W W R), budget permitting.
bool remeasure_effects(TuneCore& run, const RunSummary& summary);

/// 6. Where the time goes: a short traced trial of the winner and of the baseline (CUPTI on a GPU,
/// host phase ranges otherwise; the Python worker's through torch.profiler), budget permitting;
/// traces/<label>.json opens in Perfetto / HTA.
bool trace_winner(TuneCore& run, const RunSummary& summary);

}  // namespace autotune
