#pragma once
#include <iosfwd>
#include <string>

#include "reports/summary.h"
#include "tuner/options/tune_options.h"
#include "tuner/tune/seams.h"

namespace autotune {

struct TuneOutcome {
  RunSummary summary;
  std::string out_dir, journal_path, best_json_path, report_md_path;
  int interrupted_by = 0;  ///< the signal that stopped the run (tuner/exec/interrupt.h), 0 when it ran to the end
};

/// Runs the search: baseline (PyTorch defaults) first, then every config of the grid in its own worker
/// process, re-measuring noisy ones, committing each trial to journal.sqlite as it finishes; then
/// confirms the winner in a fresh process and writes best.json and report.md. Progress lines go to
/// `progress`. Throws UsageError for bad options (unknown workload, existing run without --resume).
TuneOutcome run_tune(const TuneOptions& opts, std::ostream& progress, TuneSeams seams = {});

}  // namespace autotune
