#pragma once
// Where the time goes, from an ActivityStream: HTA's temporal breakdown (GPU busy; idle split into
// host-wait / kernel-wait / other), launch statistics, top kernels, synchronisations per step with
// the API that caused them, copies by direction and host memory kind, MFU against a peak table, and
// a bottleneck verdict naming the knobs that address it.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "profiler/activity.h"

namespace autotune::prof {

struct AnalysisOptions {
  double flops_per_sample = 0;        ///< the workload's training FLOPs per sample (0: no MFU)
  std::int64_t samples_per_step = 0;  ///< batch × grad_accum
  std::string precision = "fp32";     ///< fp32 | tf32 | amp_bf16 | amp_fp16: which peak applies
  double kernel_wait_ns = 30;         ///< HTA: a gap shorter than this between GPU ops is kernel-wait
};

struct KernelStat {
  std::string name;
  std::int64_t count = 0;
  double total_ms = 0, share = 0;  ///< share of all kernel time
};
struct SyncStat {
  std::string what;  ///< "cudaStreamSynchronize", "D2H copy to pageable memory + cudaStreamSynchronize (.item())", …
  std::int64_t count = 0;
  double per_step = 0;
};
struct CopyStat {
  std::string kind;  ///< "HtoD pinned", "HtoD pageable", "DtoH pageable", "DtoD", …
  std::int64_t count = 0, bytes = 0;
  double ms = 0, gb_per_s = 0;
};

/// Peak dense FLOP/s for a device and precision, or 0 with `basis` saying why there is none.
double peak_flops(const std::string& device_name, const std::string& precision, std::string& basis);

struct ProfileSummary {
  bool valid = false;
  bool gpu = false;            ///< GPU records were present; false = a host-only profile (phases only)
  std::string invalid_reason;  ///< "3 activity records were dropped …"
  int steps = 0;
  double step_ms = 0;     ///< mean wall time of a traced step
  double busy_share = 0;  ///< GPU busy (union of kernels, copies, memsets) / window
  double host_wait_share = 0, kernel_wait_share = 0, other_idle_share = 0;  ///< of the window; with busy sum to 1
  double kernels_per_step = 0;
  double launch_delay_us = 0;           ///< median kernel start − end of its launch call
  double short_kernel_share = 0;        ///< kernels that ran shorter than their launch call took
  std::vector<KernelStat> top_kernels;  ///< by total time, at most 10
  std::vector<SyncStat> syncs;
  double syncs_per_step = 0;
  std::vector<CopyStat> copies;
  std::map<std::string, double> phase_ms;  ///< mean host ms per step of each range ("data", "forward", …)
  /// Mean GPU ms per step launched from each phase, by external correlation id (empty without ids).
  std::map<std::string, double> gpu_phase_ms;
  double mfu = -1;  ///< achieved model FLOP/s ÷ peak; −1 when unknown
  double peak_tflops = 0;
  std::string peak_basis;
  std::string verdict;  ///< input-bound | sync-bound | launch-bound | compute-bound | memory-bound | mixed | ""
  std::string verdict_detail;
  std::vector<std::string> verdict_knobs;
};

ProfileSummary analyze(const ActivityStream& s, const AnalysisOptions& o);

/// The summary as JSON (result.json → profile; the reports read it).
nlohmann::json to_json(const ProfileSummary& p);

}  // namespace autotune::prof
