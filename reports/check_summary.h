#pragma once
// The reports' input for `autotune check`: both sides, every repetition, the order they ran in, and the
// gate's decision per metric, as plain data. The tuner measures and decides (tuner/check/check.h,
// tuner/measures/gate.h); reporters only read. check.json is this struct as JSON (schema autotune.check/1): a
// later check can take a stored side from it.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "knobs/config.h"
#include "knobs/worker_info.h"

namespace autotune {

inline constexpr const char* kCheckSchema = "autotune.check/1";

/// One metric's comparison (tuner/measures/gate.cpp fills it).
struct MetricDecision {
  std::string name, unit;  ///< "throughput" (samples/s), "peak_memory" (bytes)
  bool higher_is_better = true;
  int n_a = 0, n_b = 0;
  double median_a = 0, median_b = 0;
  double ratio = 0, ratio_lo = 0, ratio_hi = 0;  ///< median(B) ÷ median(A), 95% bootstrap CI
  double cv_a = 0, cv_b = 0;
  double p = 1, p_holm = 1;  ///< one-sided: B worse than A
  double floor = 0;          ///< the relative change that counts
  std::string verdict;       ///< pass | regression | inconclusive
  std::string reason;        ///< one line: why this verdict, with the numbers
  int reps_needed = 0;       ///< inconclusive: repetitions per side that would do
};

/// One fresh worker process of one side.
struct CheckRep {
  int index = 0;                ///< 1-based within its side
  int order = 0;                ///< 1-based position in the interleaved sequence (0: stored, not run here)
  std::string status;           ///< the trial's status (ok | oom | non_finite | crash | timeout | error)
  std::string message;          ///< why it failed
  double throughput = 0;        ///< samples/s: the median of its windows
  std::vector<double> windows;  ///< samples/s per window
  double peak_bytes = 0;        ///< device peak on a GPU, process RSS on a CPU
  std::string trial_dir;        ///< trials/NNNN (plan.json, result.json, logs)
  double other_cores = -1;      ///< other programs' CPU time over its windows, in cores (-1: not measured)
  bool busy = false;            ///< above the busy-host limit (tuner/search/stability.h)
  int cpus = 0;
};

struct CheckSide {
  std::string name;    ///< "A" (baseline) or "B" (candidate)
  std::string source;  ///< what it is, in words: "config batch_size=64", "winner of runs/x", "stored in FILE"
  std::string workload;
  std::string model;  ///< a user's model: which file and bytes ("TorchScript model m.pt (sha256 …)"); "" = built-in
  int default_batch = 0;  ///< the workload's (or model's) default batch size; 0 in check.json from before it
  Config config;
  std::string worker;   ///< the worker binary
  bool stored = false;  ///< repetitions read from an earlier check, not run here
  EnvFingerprint env;   ///< where its repetitions ran
  std::vector<CheckRep> reps;
};

struct CheckSummary {
  CheckSide a, b;
  int reps = 0;                  ///< asked per side
  std::uint64_t order_seed = 0;  ///< seeds the interleaving (recorded: the order can be replayed)
  std::string order;             ///< the sides in the order they ran, e.g. "ABBAAB…"
  double alpha = 0.01, floor = 0.03, memory_floor = 0.05;
  int min_reps = 5;
  std::vector<MetricDecision> metrics;
  std::string verdict;  ///< pass | regression | inconclusive | failed | interrupted
  std::string reason;   ///< one line for the whole check (the first failing metric, or why it failed)
  std::string started_at, finished_at;
  double elapsed_seconds = 0;
  int interrupted_by = 0;  ///< the signal that stopped the check (SIGINT/SIGTERM), 0 when it ran to the end
  std::string out_dir;  ///< where the check writes (not part of check.json)
};

void to_json(nlohmann::json& j, const MetricDecision& m);
void from_json(const nlohmann::json& j, MetricDecision& m);
void to_json(nlohmann::json& j, const CheckSummary& s);
/// Throws std::runtime_error for another schema.
void from_json(const nlohmann::json& j, CheckSummary& s);

}  // namespace autotune
