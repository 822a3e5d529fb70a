#pragma once
// The trial protocol: what the tuner hands a worker (plan.json) and what the worker hands back
// (result.json). The JSON forms are the contract between the two processes; docs/protocol.md
// documents every field. Both carry a "schema" string; a reader refuses a schema it does not know.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "knobs/config.h"
#include "knobs/converge.h"
#include "knobs/host_load.h"
#include "knobs/memory.h"
#include "knobs/noise_scale.h"
#include "knobs/profile.h"
#include "knobs/resolve.h"
#include "knobs/setup.h"
#include "knobs/worker_info.h"

namespace autotune {

inline constexpr const char* kPlanSchema = "autotune.plan/1";
inline constexpr const char* kResultSchema = "autotune.result/1";

/// plan.json: one trial = one Config on one workload, run in a fresh process.
struct TrialPlan {
  TrialSetup setup;  ///< workload, device, seed, data, measurement (knobs/setup.h)
  Config config;
  std::string trace;    ///< a traced trial: write a Chrome trace here (no measured windows); ranks > 1: rank_trace_path()
  int trace_steps = 5;  ///< steps traced (after warm-up and as many untraced reference steps)
  NoisePlan noise;        ///< on: a noise-scale trial (the gradient noise scale, no windows)
  ConvergePlan converge;  ///< on: train to a loss and record the curve (no warm-up, no windows)
  MemoryProbePlan memory_probe;  ///< on: a memory probe (a few untimed steps, the peaks of each phase; knobs/memory.h)
};

/// Where rank `rank` of a traced trial with ranks > 1 writes its trace: `trace` without ".json" as a folder
/// holding one rank<R>.json per rank, nothing else — the folder HTA's multi-rank analysis loads
/// (TraceAnalysis(trace_dir=…) reads every .json in it and keys them by their distributedInfo rank).
std::string rank_trace_path(const std::string& trace, int rank);

enum class TrialStatus { ok, oom, non_finite, crash, timeout, error };
std::string to_string(TrialStatus s);
/// Throws std::invalid_argument for an unknown name.
TrialStatus trial_status_from_string(const std::string& s);

/// One measured window: samples/s = samples / seconds, end to end (data included).
struct Window {
  int steps = 0;
  std::int64_t samples = 0;
  double seconds = 0;
  double samples_per_s() const { return seconds > 0 ? samples / seconds : 0; }
};

/// Mean host time per measured step, split by phase (milliseconds).
struct Breakdown {
  double data_ms = 0, h2d_ms = 0, forward_ms = 0, backward_ms = 0, optimizer_ms = 0, other_ms = 0;
};

/// What the input pipeline did during the trial (real data only; `source` empty for synthetic data).
struct DataStats {
  std::string source;             ///< the folder, cache file or token file
  std::string decode;             ///< jpeg_full | jpeg_crop_scale | cache | tokens
  std::int64_t dataset_size = 0;  ///< images in the folder or cache, tokens in the token file
  int num_workers = 0, prefetch = 0;
  std::int64_t batches = 0;
  std::int64_t images_ok = 0, images_bad = 0;
  std::vector<std::pair<std::string, std::int64_t>> bad_by_reason;  ///< empty, not_jpeg, truncated, corrupt, unreadable
  std::string bad_example;                                          ///< "FILE: reason" of the first bad file
  double wait_seconds = 0;         ///< the training thread waiting for batches (warm-up and measured)
  double worker_busy_seconds = 0;  ///< the loader threads filling batches, all threads together
  /// One pass over the data in samples: a token file's tokens ÷ the sequence length, else the samples it holds; 0 when
  /// unknown (nothing read, an iterable dataset, a token file without a length).
  double one_pass_samples(double tokens_per_sample) const {
    if (decode == "tokens") return tokens_per_sample > 0 ? static_cast<double>(dataset_size) / tokens_per_sample : 0;
    return static_cast<double>(dataset_size);
  }
};

/// A knob the worker was asked to apply, and what it observed after applying it ("proof").
struct AppliedKnob {
  std::string knob, requested, observed;
};

/// One rank of a data-parallel trial, as it reported itself to rank 0.
struct RankStats {
  int rank = 0;
  std::string host;
  double step_ms = 0;               ///< mean measured step time on this rank (windows' seconds / steps)
  double comm_ms_per_step = 0;      ///< collectives in flight (their union), per step
  double overlap_ms_per_step = 0;   ///< of which before the last gradient bucket was launched (hidden by backward)
  /// False where the host cannot time the collectives: NCCL's Work completes when the collective is
  /// enqueued on the GPU (workloads/engine/dist/process_group.h); both figures above are then 0 and the
  /// traced profile's NCCL kernels are the measurement.
  bool comm_timed = true;
  double collectives_per_step = 0;  ///< allreduce/broadcast calls per step
  double comm_bytes_per_step = 0;
  std::int64_t peak_rss_bytes = 0;
  std::int64_t peak_device_bytes = -1;
};

/// A data-parallel trial (ranks > 1): how it ran and what each rank saw. Rank 0 writes result.json;
/// its windows then count the samples of all ranks (global samples/s).
struct DistInfo {
  int world = 1;
  std::string backend;          ///< gloo | nccl
  std::string backend_version;  ///< NCCL's version, or where Gloo comes from
  std::string launcher;         ///< autotune | torchrun | slurm | env
  std::string store;            ///< how the ranks met
  std::vector<std::int64_t> bucket_bytes;
  std::vector<RankStats> ranks;
  double comm_ms_per_step() const;  ///< mean over ranks
  double overlap_share() const;     ///< hidden share of the communication, mean over ranks (0..1)
  bool comm_timed() const;          ///< every rank timed its collectives (RankStats::comm_timed)
};

/// result.json.
/// Where a trial ran, written by the tuner's executor (tuner/exec/executor.h), never by the worker: the
/// host, the executor and its slot, the CPUs and devices the slot gave it, and the trials in flight
/// beside it at any moment of its run (their folder numbers). `alone` when none was.
struct Placement {
  std::string host;
  std::string executor;  ///< "local" (one slot) | "local slots"
  int seq = 0;           ///< its own folder, trials/NNNN (the journal's id is the completion order)
  int slot = 0;          ///< 0-based
  int slots = 1;         ///< the executor's slots
  std::string cpus;      ///< "0-3,8" (sched_setaffinity), "" when not pinned
  std::string devices;   ///< CUDA_VISIBLE_DEVICES given to it, "" when none was set
  std::vector<int> neighbours;
  /// Attempts of this trial lost to the infrastructure before the one measured ("node atnode2 lost: Slurm job 12
  /// NODE_FAIL (NodeDown)"; tuner/exec/slurm.h): each was set aside unmeasured and the trial ran again elsewhere.
  std::vector<std::string> lost;
  /// A data-parallel trial's ranks as Slurm placed them, rank order (each task's where.N); empty for one rank.
  std::vector<std::string> rank_hosts;
  bool alone() const { return neighbours.empty(); }
};
void to_json(nlohmann::json& j, const Placement& p);
void from_json(const nlohmann::json& j, Placement& p);

/// What torch.compile cost and did in a trial of the Python worker (result.json `compile`): the seconds the first
/// step took beyond a steady one (the compile a run pays once), the graphs made, the graph breaks (with their
/// reasons), the frames compiled again after the first step, and the inductor cache's hits and misses.
struct CompileRecord {
  std::string mode;
  double seconds = 0;
  double first_step_seconds = 0;
  int graphs = 0;
  int graph_breaks = 0;
  std::vector<std::string> break_reasons;
  int recompiles = 0;
  int cache_hits = 0, cache_misses = 0;
};
void to_json(nlohmann::json& j, const CompileRecord& c);
/// A converge curve as result.json and converge.json hold it: [[samples, seconds, loss or null], …].
nlohmann::json curve_to_json(const std::vector<CurvePoint>& curve);
void from_json(const nlohmann::json& j, CompileRecord& c);

struct TrialResult {
  TrialStatus status = TrialStatus::error;
  std::string message;  ///< one line; why it failed, empty when ok
  std::string workload;
  Config config;
  std::string device;           ///< cpu | cuda:0
  std::int64_t batch_size = 0;  ///< resolved (workload default applied)
  int warmup_steps = 0;
  double warmup_seconds = 0;
  std::vector<Window> windows;
  std::vector<double> losses;         ///< per measured step, in order
  std::vector<double> warmup_losses;  ///< per warm-up step: with `losses`, the whole trajectory from step 1
  int non_finite_steps = 0;
  int scaler_skips = 0;                 ///< fp16: measured steps the GradScaler skipped (inf/NaN grads)
  std::int64_t peak_rss_bytes = 0;      ///< process peak resident set (CPU memory)
  std::int64_t peak_device_bytes = -1;  ///< CUDA allocator peak, -1 when not on a GPU
  std::int64_t device_total_bytes = -1;
  std::int64_t host_total_bytes = 0;
  std::int64_t alloc_retries = 0;     ///< CUDA caching-allocator retries during measured steps
  std::string host_malloc;            ///< the worker's host allocator policy as applied (retain_freed_host_memory)
  double minor_faults_per_step = -1;  ///< process minor page faults per measured step, -1 when not measured
  double flops_per_sample = 0;        ///< training FLOPs per sample as built (for MFU)
  Breakdown breakdown;
  DataStats data;
  std::optional<ProfileSummary> profile;  ///< traced trials only
  std::optional<DistInfo> dist;           ///< data-parallel trials only
  std::optional<NoiseRecord> noise;       ///< noise-scale trials only
  std::optional<ConvergeRecord> converge; ///< converge trials only
  std::optional<MemoryRecord> memory;     ///< the device's memory by phase: under a memory cap (CPU), on CUDA, in probes
  std::optional<Placement> placement;     ///< where it ran (the tuner's executor fills it in)
  std::optional<CompileRecord> compile;   ///< compile ≠ off (the Python worker)
  /// The Python worker's resolution of the plan's config (autotune-resolve's answer: settings, skipped, applicable),
  /// kept as it came (its JSON text) so the journal shows exactly what that worker applied; "" from the C++ worker.
  std::string resolved;
  /// Other processes' CPU time on the trial's CPUs during its measured windows (one-process trials; a
  /// data-parallel trial's ranks would count each other).
  std::optional<HostLoad> host_load;
  /// Other processes on the trial's GPU while it was timed (one-process CUDA trials, where NVML answers).
  std::optional<DeviceHolders> device_holders;
  std::vector<AppliedKnob> applied;
  std::vector<SkippedKnob> skipped;
  EnvFingerprint env;
  double wall_seconds = 0;  ///< process time from start to result
  /// How the Python worker's process began: "fresh" (an interpreter that imported torch itself) or "forked" (from
  /// the warm worker, tuner/exec/warm_worker.h); "" from the C++ worker.
  std::string started;

  std::vector<double> throughputs() const;  ///< samples/s per window
};

void to_json(nlohmann::json& j, const Config& c);
void from_json(const nlohmann::json& j, Config& c);
void to_json(nlohmann::json& j, const TrialPlan& p);
void from_json(const nlohmann::json& j, TrialPlan& p);
void to_json(nlohmann::json& j, const TrialResult& r);
void to_json(nlohmann::json& j, const RankStats& r);
void from_json(const nlohmann::json& j, RankStats& r);
void to_json(nlohmann::json& j, const DistInfo& d);
void from_json(const nlohmann::json& j, DistInfo& d);
void from_json(const nlohmann::json& j, TrialResult& r);

/// Read/write with a one-line error (std::runtime_error) naming the file and the problem.
TrialPlan read_plan(const std::string& path);
void write_plan(const TrialPlan& plan, const std::string& path);
TrialResult read_result(const std::string& path);
/// Writes atomically (temp file + rename): a reader never sees a half-written result.
void write_result(const TrialResult& result, const std::string& path);

/// Writes `text` to `path` via a temporary file in the same folder and rename(2).
void write_file_atomic(const std::string& path, const std::string& text);
std::string read_file(const std::string& path);

}  // namespace autotune
