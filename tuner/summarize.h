#pragma once
// From journal records to the RunSummary the reports render. The live run (`autotune tune`) and
// `autotune report DIR` both build their summary here, from the journal's records alone, so a
// regenerated report is the report the run wrote.
#include <nlohmann/json_fwd.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "knobs/knob.h"
#include "reports/summary.h"
#include "tuner/ranking.h"
#include "tuner/record_index.h"
#include "tuner/tune_options.h"

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

/// The run's objective (tuner/ranking.h) from its options and the latest successful noise-scale trial
/// of `index`. The live run and `autotune report` call it alike.
Objective objective_for(const RunContext& ctx, const RecordIndex& index);

/// The noise-scale trial's plan for this run: the baseline's knobs at the user's global batch, split
/// into K ≥ 2 micro-batches (grad_accum = K), stopping as ctx.opts.noise says within `max_seconds` of
/// recording, after its burn-in (ctx.opts.noise_burn_in).
TrialPlan noise_plan(const RunContext& ctx, double max_seconds);

/// Run facts that are not trials; stored in the journal's meta table.
struct RunMeta {
  std::string started_at, finished_at;  ///< finished_at "" = interrupted
  double elapsed_seconds = 0, budget_seconds = 0;
  std::vector<Config> unexplored;
  std::map<std::string, std::string> phases;  ///< config key → the search phase that proposed it
  std::vector<FoldedConfig> folded;           ///< proposals that ran as another config (meta.folded)
  MemoryReport memory;                        ///< the memory model's decisions (meta.memory; docs/memory.md)
};

/// meta.folded: [{"proposed": {knob: value}, "runs_as": {…}, "reasons": ["…"]}, …].
nlohmann::json folded_to_json(const std::vector<FoldedConfig>& f);
std::vector<FoldedConfig> folded_from_json(const nlohmann::json& j);

/// Loss-trajectory verification of the leading `top` candidates that change numerics (precision ≠
/// fp32). `reference_for(fp32 twin)` returns the twin's reference record, or nullptr when there is
/// none (the live run runs it here when the budget allows); `measured(s)` returns the record whose
/// windows `s` uses. A candidate without a reference cannot win: it is marked "unverified". Repeats
/// until the top `top` are all verified, so a rejected leader lets the next one in.
void verify_leaders(History& history, int top, double tolerance,
                    const std::function<const TrialRecord*(const Config& fp32_twin)>& reference_for,
                    const std::function<const TrialRecord*(const ConfigSummary&)>& measured);

/// The whole summary — configs, checks, confirmation, winner, speedup, knob effects, trials, loss
/// curves, verdict — from the journal's records (completion order).
RunSummary summarize_run(const std::vector<TrialRecord>& records, const RunContext& ctx, const RunMeta& meta);

/// Reads DIR/journal.sqlite (options, workload, environment, trials) and rebuilds the summary.
/// Throws UsageError naming the folder when there is no journal, or it lacks what a report needs.
RunSummary load_run_summary(const std::string& dir);

}  // namespace autotune
