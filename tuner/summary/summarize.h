#pragma once
// From journal records to the RunSummary the reports render. The live run (`autotune tune`) and
// `autotune report DIR` both build their summary here, from the journal's records alone, so a
// regenerated report is the report the run wrote. The parts, each in its own file of this folder:
// confirmation.h (the interleaved confirmation, the winner and its speedup), knob_effects.h (each knob's share
// of the win) and curves.h (loss curves, the bottleneck verdict, the traced profiles).
#include <string>
#include <vector>

#include "knobs/record.h"
#include "reports/summary.h"
#include "tuner/options/run_context.h"
#include "tuner/options/run_meta.h"

namespace autotune {

/// The whole summary — configs, checks, confirmation, winner, speedup, knob effects, trials, loss
/// curves, verdict — from the journal's records (completion order).
RunSummary summarize_run(const std::vector<TrialRecord>& records, const RunContext& ctx, const RunMeta& meta);

/// Reads DIR/journal.sqlite (options, workload, environment, trials) and rebuilds the summary.
/// Throws UsageError naming the folder when there is no journal, or it lacks what a report needs.
/// `noise_log`: a noise log from the user's own loop (tuner/pricing/noise_log.h) to price the run with — checked against the run's
/// model (UsageError, nothing written, when it does not fit), then kept beside the run, where later reports find it.
RunSummary load_run_summary(const std::string& dir, const std::string& noise_log = "");

}  // namespace autotune
