#pragma once
// The parts of a run summary after the configs are known (tuner/summarize.cpp calls them in order):
// the interleaved confirmation and the winner, the speedup, each knob's effect, the loss curves and
// the bottleneck verdict. Internal to the tuner.
#include "reports/summary.h"
#include "tuner/record_index.h"
#include "tuner/strategy.h"
#include "tuner/summarize.h"

namespace autotune {

/// What the parts read: the run, its records and the configs' verdicts (summary.configs holds them too).
struct SummaryInput {
  const RunContext& ctx;
  const RecordIndex& index;
  const History& history;
};

/// The top candidates and the baseline as re-run in the confirmation, and the winner chosen on those runs.
void add_confirmation_and_winner(RunSummary& summary, const SummaryInput& in);
/// Winner ÷ baseline, from the interleaved confirmation runs when both ran fine, else the search runs.
void add_speedup(RunSummary& summary, const SummaryInput& in);
/// The winner against the winner with one knob at its baseline value, for each knob it changed.
void add_knob_effects(RunSummary& summary, const SummaryInput& in);
/// Loss curves (winner, its fp32 reference, baseline), the bottleneck verdict and the traced profiles.
void add_curves_verdict_and_profiles(RunSummary& summary, const SummaryInput& in);

}  // namespace autotune
