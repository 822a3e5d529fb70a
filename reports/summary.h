#pragma once
// The reports' input: a finished (or interrupted) tuning run as plain data. The tuner builds it from
// the journal; reporters only read it. Nothing here knows about SQLite or processes.
#include <string>
#include <vector>

#include "knobs/record.h"

namespace autotune {

struct Confirmation {
  bool ran = false;
  bool confirmed = false;
  std::int64_t trial_id = 0;
  double median = 0, ci_lo = 0, ci_hi = 0;
  std::string detail;
};

struct RunSummary {
  WorkloadInfo workload;
  EnvFingerprint env;
  std::string strategy;            ///< "grid"
  std::string space;               ///< "batch_size={32,64} threads={1,2}"
  std::vector<SkippedKnob> skipped_knobs;  ///< knobs of the space that do not apply here, with reasons
  std::string started_at, finished_at;
  double budget_seconds = 0, elapsed_seconds = 0;
  int trials_run = 0;              ///< worker processes, re-measures and confirmation included
  std::vector<ConfigSummary> configs;  ///< one per config measured, in the order first run
  int baseline = -1;               ///< index into configs
  int winner = -1;                 ///< index into configs, -1 when nothing was stable
  std::string winner_note;         ///< tie-break explanation, "" when none was needed
  double speedup = 0, speedup_lo = 0, speedup_hi = 0;  ///< winner / baseline median, 95% bootstrap CI
  std::string speedup_basis;       ///< which runs the speedup compares ("interleaved confirmation runs …" or "search runs")
  double baseline_confirmation_median = 0;  ///< the baseline in the confirmation rounds, 0 when not run
  Confirmation confirmation;       ///< the winner's
  std::vector<std::pair<Config, Confirmation>> confirmations;  ///< every candidate re-run at the end
  std::vector<Config> unexplored;  ///< configs the budget did not reach
  double max_rel_iqr = 0.05, memory_headroom = 0.10;  ///< the thresholds the verdict used
};

}  // namespace autotune
