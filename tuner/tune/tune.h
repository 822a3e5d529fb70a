#pragma once
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

#include "knobs/protocol.h"
#include "knobs/worker_info.h"
#include "reports/summary.h"
#include "tuner/exec/plan.h"
#include "tuner/options/tune_options.h"

namespace autotune {

struct TuneOutcome {
  RunSummary summary;
  std::string out_dir, journal_path, best_json_path, report_md_path;
  int interrupted_by = 0;  ///< the signal that stopped the run (tuner/exec/interrupt.h), 0 when it ran to the end
};

/// What a run talks to besides its folder: the worker (what the setup trains, and on what machine) and the executor
/// its trials run through. Each left empty is the real one — the worker binary asked (tuner/exec/worker_client.h)
/// and the execution plan's executor; the tuner's tests give fakes (tests/support/fake_executor.h).
struct TuneSeams {
  std::function<WorkloadInfo(const TrialSetup&)> describe;
  std::function<EnvFingerprint()> environment;
  std::function<std::unique_ptr<Executor>(const ExecutionPlan&, TrialRunner)> executor;
};

/// Runs the search: baseline (PyTorch defaults) first, then every config of the grid in its own worker
/// process, re-measuring noisy ones, committing each trial to journal.sqlite as it finishes; then
/// confirms the winner in a fresh process and writes best.json and report.md. Progress lines go to
/// `progress`. Throws UsageError for bad options (unknown workload, existing run without --resume).
TuneOutcome run_tune(const TuneOptions& opts, std::ostream& progress, TuneSeams seams = {});

}  // namespace autotune
