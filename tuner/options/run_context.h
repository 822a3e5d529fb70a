#pragma once
// The run's context: what a tuning run searches and against what, derived from its options, its workload and
// the machine (all three stored in the journal, so the live run, `autotune report` and `autotune converge` derive
// the same context). The objective, the user's batch, the baseline and the noise plan are read from here by the
// run, the summary and converge; this file reaches up to none of them.
#include <map>
#include <string>
#include <vector>

#include "knobs/knob.h"
#include "reports/summary.h"
#include "tuner/search/ranking.h"
#include "tuner/measures/record_index.h"
#include "tuner/options/tune_options.h"

namespace autotune {

/// What a run searched, derived from its options, workload and environment (all stored in the journal).
struct RunContext {
  TuneOptions opts;
  WorkloadInfo workload;
  EnvFingerprint env;
  TargetInfo target;                                     ///< what decides which knobs apply
  KnobSpace space;                                       ///< the searched space: knobs and values that apply here
  std::vector<SkippedKnob> skipped;                      ///< knobs / values of the requested space that do not apply here
  Config baseline;                                       ///< PyTorch's defaults for every searched knob
  /// Every knob's value in the baseline (batch_size: the workload's default, or the --effective-batch
  /// micro-batch): what "default" means in this run (non-default counts, snippets).
  std::map<std::string, std::string> defaults;
  std::vector<BaselineValue> baseline_sources;  ///< the baseline's values with where each is PyTorch's default
  std::int64_t user_batch = 0;                           ///< B0, the user's global batch (the baseline's)
  std::string user_batch_source;                         ///< where B0 comes from, in words
  /// Why a noise scale measured in this run would say nothing about the user's training ("" when it
  /// would): synthetic data a model memorises.
  std::string time_unrankable;
};

/// Filters the requested space to what applies on this target and builds the baseline. Throws
/// UsageError, naming the reachable values, when no listed batch_size × ranks divides --effective-batch.
RunContext make_context(const TuneOptions& opts, const WorkloadInfo& workload, const EnvFingerprint& env);

/// The run's objective (tuner/search/ranking.h) from its options and the latest successful noise-scale trial
/// of `index`. The live run and `autotune report` call it alike.
Objective objective_for(const RunContext& ctx, const RecordIndex& index);

/// The noise-scale trial's plan for this run: the baseline's knobs at the user's global batch, split
/// into K ≥ 2 micro-batches (grad_accum = K), stopping as ctx.opts.noise says within `max_seconds` of
/// recording, after its burn-in (ctx.opts.noise_burn_in).
TrialPlan noise_plan(const RunContext& ctx, double max_seconds);

/// What a proposal really runs as in this run (knobs/resolve.h), and why when that differs: --effective-batch
/// holds ranks × batch_size × grad_accum, an unlisted space never oversubscribes a CPU host's cores, and a value
/// that does not apply here falls back to its baseline.
struct RunsAs {
  Config config;
  std::vector<std::string> reasons;  ///< empty when `config` is what was proposed
};
RunsAs runs_as(const RunContext& ctx, const Config& proposed);

}  // namespace autotune
