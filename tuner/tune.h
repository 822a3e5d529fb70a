#pragma once
#include <iosfwd>
#include <string>

#include "knobs/config.h"
#include "knobs/protocol.h"
#include "reports/summary.h"
#include "tuner/stability.h"
#include "tuner/strategy.h"

namespace autotune {

/// Everything `autotune tune` needs; defaults are the embedded default run (DESIGN.md §6 grid slice).
struct TuneOptions {
  std::string workload = "mlp";
  KnobSpace space;              ///< empty → the embedded default: batch_size {32,64,128,256} × threads {1,2}
  double budget_seconds = 600;  ///< the search stops proposing trials that would not fit
  std::string out_dir;          ///< "" → runs/<UTC timestamp>
  bool resume = false;          ///< continue the run in out_dir (its journal decides workload and space)
  std::uint64_t seed = 0;
  std::string device = "auto";
  std::int64_t image_size = 0;  ///< image workloads: input side (0 = the workload's default, 224)
  std::string data;             ///< "" = synthetic; an image folder or a uint16 token .bin (absolute path)
  std::string data_cache;       ///< a pre-decoded cache of `data` (autotune prepare-data), for decode=cache
  double max_bad_share = 0.01;  ///< a trial fails when more of the images it meets are bad
  MeasureOptions measure;
  double trial_timeout_seconds = 600;
  std::string worker;  ///< "" → default_worker_path()
  StabilityOptions stability;
  StrategyOptions strategy;  ///< grid by default
  int confirm_top = 2;       ///< candidates re-run at the end, interleaved (A B A B …)
  int confirm_rounds = 2;    ///< fresh runs per candidate in the confirmation
};

/// Checks --data / --cache against the workload and returns the data kind ("", "images", "tokens").
/// Throws UsageError (one line) for a missing path, a folder given to a token workload, etc.
std::string data_kind_for(const WorkloadInfo& w, const std::string& data, const std::string& data_cache);

/// The embedded default search space (grid): batch_size {32,64,128,256} × threads {1,2}.
KnobSpace default_space();
/// Every knob with its full domain: the default space of `--strategy auto` and `coordinate`.
KnobSpace full_space();

struct TuneOutcome {
  RunSummary summary;
  std::string out_dir, journal_path, best_json_path, report_md_path;
};

/// Runs the search: baseline (PyTorch defaults) first, then every config of the grid in its own worker
/// process, re-measuring noisy ones, committing each trial to journal.sqlite as it finishes; then
/// confirms the winner in a fresh process and writes best.json and report.md. Progress lines go to
/// `progress`. Throws UsageError for bad options (unknown workload, existing run without --resume).
TuneOutcome run_tune(const TuneOptions& opts, std::ostream& progress);

/// Parses "90s", "10m", "1h30m", "2h" or plain seconds; throws UsageError naming the allowed forms.
double parse_duration(const std::string& text);

}  // namespace autotune
