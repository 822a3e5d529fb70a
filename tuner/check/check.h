#pragma once
// `autotune check`: the CI performance-regression gate. A baseline side A and a candidate side B are
// measured in the same job, interleaved (the order drawn from a recorded seed), each repetition a fresh
// worker process after its warm-up; tuner/measures/gate.h decides. A side that crashed or produced no usable
// measurement fails the check (never a pass); a stored side is used only when its machine and config
// fingerprint match.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "knobs/setup.h"
#include "reports/check_summary.h"
#include "tuner/measures/gate.h"

namespace autotune {

/// What one side is. Without `run`, `set` or `worker` it is the shared config with the shared worker.
struct CheckSideSpec {
  std::string run;               ///< a tune output folder or its best.json: the winner's config, workload and setup
  std::vector<std::string> set;  ///< knob=value on top (of the shared --set, and of the run's winner)
  std::string worker;            ///< another worker binary (e.g. a build of the pull request); "" = the shared one
  std::string model;             ///< another TorchScript model file (this side trains it instead of --model/--workload)
  std::string trainer;           ///< cpp | python: this side's worker (the C++ one or the Python one); "" = the shared setup's
  std::string stored;            ///< baseline only: an earlier check.json whose candidate side is reused, not re-run
};

struct CheckOptions {
  TrialSetup setup;              ///< shared: workload, device, seed, data, measurement
  std::vector<std::string> set;  ///< shared knob=value
  std::string worker;            ///< "" → default_worker_path()
  double trial_timeout_seconds = 600;
  std::string launcher = "local";  ///< trials with ranks > 1 (RunnerOptions::launcher)
  CheckSideSpec a, b;
  int reps = 10;                 ///< fresh processes per side
  std::uint64_t order_seed = 0;  ///< seeds the interleaving
  GateOptions gate;
  /// A repetition was timed on a busy host when other programs used more than this share of its CPUs (tuner/search/stability.h,
  /// host_busy); < 0: the default (--max-host-load's of tune, or $AUTOTUNE_MAX_HOST_LOAD). 1: off.
  double max_host_load = -1;
  std::string out_dir;  ///< "" → checks/<UTC timestamp>
};

/// Measures both sides and decides. Writes every trial under out_dir/trials/ as it runs; the caller
/// writes the reports into the summary's out_dir (reports/check_reports.h). Throws UsageError for a bad side (unknown workload, a
/// run without a winner, different workloads, an existing output folder).
CheckSummary run_check(const CheckOptions& opts, std::ostream& progress);

/// Where the two machines/configs differ, for a stored side ("" when they match): CPU model, GPU name
/// and count, driver, CUDA, torch version, and the knob config.
std::string fingerprint_mismatch(const CheckSide& stored, const EnvFingerprint& here, const Config& config);

/// Exit status: 0 pass, 1 regression, 3 a side failed, 4 inconclusive (0 when `inconclusive_passes`).
int check_exit_status(const CheckSummary& s, bool inconclusive_passes);

}  // namespace autotune
