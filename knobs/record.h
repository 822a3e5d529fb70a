#pragma once
// What the tuner knows about finished trials, as plain data: the journal stores it, the reports read it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "knobs/protocol.h"

namespace autotune {

/// Why a trial ran.
/// ablation: after the winner is chosen, the winner with one knob put back to its default, to measure
/// that knob's effect (never a candidate).
/// trace: a traced trial (CUPTI / host ranges) of the winner or the baseline at the end, for the
/// report's "where the time goes"; never timed.
/// noise: the gradient noise scale at the user's batch (knobs/noise_scale.h); never timed.
/// converge: a training run to a loss (`autotune converge`, knobs/converge.h).
/// memory: a memory probe — a few untimed steps whose per-phase peaks fit the memory model (knobs/memory.h).
/// effect: a run of the effect rounds (the winner, the baseline and the winner with one knob reverted, interleaved).
enum class TrialKind { baseline, search, remeasure, reference, confirm, ablation, effect, trace, noise, converge, memory, interference };
std::string to_string(TrialKind k);
TrialKind trial_kind_from_string(const std::string& s);  ///< throws std::invalid_argument

/// One finished trial process, as stored in journal.sqlite.
struct TrialRecord {
  std::int64_t id = 0;  ///< journal row id, in completion order
  TrialKind kind = TrialKind::search;
  TrialPlan plan;
  TrialResult result;
  std::string outcome;                  ///< how the process ended: "exit 0", "killed by signal 9 (SIGKILL)"
  std::string stderr_tail;              ///< last ~2 KiB of the worker's stderr
  std::string started_at, finished_at;  ///< ISO-8601 UTC
};

/// The measured windows' throughputs of every run in `runs`, pooled; empty when none ran or any failed.
std::vector<double> pooled_windows(const std::vector<const TrialRecord*>& runs);


/// One recorded stability check: its name, whether it passed, and the numbers behind it.
struct Check {
  std::string name;  ///< e.g. "measurement noise"
  bool passed = false;
  std::string detail;  ///< e.g. "IQR/median 1.3% ≤ 5%"
};

/// A config's verdict after all its attempts: the numbers the tuner compares.
struct ConfigSummary {
  Config config;
  std::vector<std::int64_t> trial_ids;  ///< every attempt (re-measures included), in order
  std::int64_t measured_trial = 0;      ///< the attempt whose windows are used
  TrialStatus status = TrialStatus::error;
  std::string reason;               ///< why it is not eligible, "" when it is
  std::vector<double> throughputs;  ///< samples/s per window of the measured attempt
  double median = 0, ci_lo = 0, ci_hi = 0, rel_iqr = 0;
  double drift = 0;  ///< last window ÷ first window − 1 of the measured attempt (a trial still settling)
  bool unsettled = false;  ///< every attempt drifted beyond the limit: kept, but marked in the reports
  std::int64_t batch_size = 0;
  std::int64_t global_batch = 0;        ///< samples per optimizer step: batch_size × grad_accum × ranks
  std::int64_t peak_bytes = 0;          ///< device peak on GPU, process RSS on CPU
  std::int64_t memory_total_bytes = 0;  ///< the device's (GPU) or host's (CPU) memory: headroom = 1 − peak / total
  std::int64_t device_memory_peak = -1; ///< the allocator's peak (result.device_memory) of the measured attempt, -1 when not metered
  Breakdown breakdown;                  ///< mean host time per step by phase, of the measured attempt
  std::string host_malloc;              ///< the worker's host-heap policy as applied ("" from older workers)
  double minor_faults_per_step = -1;    ///< of the measured attempt, -1 when not measured
  double compile_seconds = 0;           ///< compile ≠ off: what compiling cost the measured attempt once (result `compile`)
  std::optional<CompileRecord> compile;  ///< compile ≠ off: the measured attempt's whole record (graphs, breaks, recompiles)
  std::vector<Check> checks;
  bool eligible = false;  ///< stable: may win
  bool is_baseline = false;
  double window_scale = 1.0;  ///< windows were this many times the base length (halving)
  bool in_flight = false;     ///< a placeholder: its trial is running in a parallel slot (tuner/search/ranking.h, History)
  std::string phase;          ///< which search phase proposed it
  std::optional<DistInfo> dist;  ///< ranks > 1: every rank's step and communication figures (measured attempt)
};

/// Index of the summary of `c` in `configs`, -1 when absent.
int config_index(const std::vector<ConfigSummary>& configs, const Config& c);

}  // namespace autotune
