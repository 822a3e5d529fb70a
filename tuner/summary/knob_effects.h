#pragma once
// The summary's knob effects: each knob the winner changed, measured as the winner against the winner with that
// knob put back to its baseline value. The tune measures them in effect rounds: the winner, each knob reverted and
// the baseline, one fresh process each per round, interleaved, so that every effect and the winner ÷ baseline share
// one reference and the same drift; the effects' product is then set against that ratio (knobs that interact make
// them differ). Journals from before the effect rounds fall back to the ablation run, or a measured neighbour that
// differs in that knob alone.
#include <vector>

#include "reports/summary.h"
#include "tuner/options/run_context.h"
#include "tuner/summary/input.h"

namespace autotune {

/// `winner` with `knob` back at its baseline value (an effective batch puts grad_accum back with batch_size), as
/// proposed: the tune folds it into what it runs as (tuner/options/run_context.h, runs_as), and the journal keeps the fold.
Config reverted(const RunContext& ctx, const Config& winner, const std::string& knob);

/// What one effect round runs, in order (as proposed): the winner, the winner with each changed knob reverted
/// (distinct, not the baseline), the baseline. Empty when the winner is the baseline.
std::vector<Config> effect_round_configs(const RunContext& ctx, const RunSummary& summary);

/// The reverted configs whose effect lies beyond what its knob's mechanism allows on this device
/// (knobs/knob.h, effect_bound) and has not been measured again yet.
std::vector<Config> effects_to_remeasure(const RunSummary& summary);

/// The winner against the winner with one knob at its baseline value, for each knob it changed, and the effects
/// taken together.
void add_knob_effects(RunSummary& summary, const SummaryInput& in);

}  // namespace autotune
