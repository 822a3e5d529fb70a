#pragma once
// The profile of a traced trial, as result.json carries it (`profile`): how it was traced, where the
// time went (HTA's temporal breakdown, kernels, synchronisations, copies, phases, MFU) and the
// bottleneck verdict. profiler/analysis.cpp fills the analysis; the worker adds how it traced; the
// reports and `autotune profile` render it with reports/profile_text.h. docs/profiling.md defines
// every number.
#include <nlohmann/json_fwd.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace autotune {

struct KernelStat {
  std::string name;
  std::int64_t count = 0;
  double total_ms = 0, share = 0;  ///< share of all kernel time
  double mean_us = 0;              ///< per call
  /// The launch geometry most of its calls used (0 = not recorded) and how many different ones its calls
  /// had; the mean threads launched per call (blocks × threads per block). An elementwise kernel's
  /// threads times its elements per thread is the size of the tensor it ran on: that tells two kernels
  /// of one name (a residual add, a gradient accumulation) apart.
  std::array<std::int32_t, 3> grid{{0, 0, 0}}, block{{0, 0, 0}};
  int geometries = 0;
  double threads_per_call = 0;
  /// Share of its time launched from each phase ("forward", "backward", …; by external correlation);
  /// empty when the launches carried no phase.
  std::map<std::string, double> phases;
};
/// Kernel time of one kind (matmul / conv, attention, elementwise, …; profiler/analysis.h says how a
/// kernel's name is classified), per traced step.
struct KernelClass {
  std::string name;
  double per_step = 0;     ///< kernels of this kind per step
  double ms_per_step = 0;  ///< their time per step
  double share = 0;        ///< of all kernel time
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
/// Gradient communication of a data-parallel trial during the traced steps. On a GPU its source is the
/// NCCL kernels of the CUPTI timeline; without them (the CPU, Gloo), the collectives the worker's
/// process group recorded on the host (launch to completion of each c10d work).
struct CommProfile {
  std::string source;  ///< "nccl kernels" | "host collectives"
  double calls_per_step = 0;
  double ms_per_step = 0;   ///< the union of the communication intervals
  double hidden_share = 0;  ///< of that, the part overlapped by compute (0..1)
  double exposed_ms_per_step = 0;
  double mb_per_step = 0;  ///< payload (host collectives only; 0 when unknown)
};
/// The data loader during the traced steps (real data only).
struct LoaderProfile {
  int num_workers = 0;
  double utilisation = 0;       ///< loader threads' busy time ÷ (threads × traced wall time)
  double wait_ms_per_step = 0;  ///< the training thread waiting for its batch
};

struct ProfileSummary {
  // ---- how it was traced (the worker)
  std::string mode;             ///< "cupti" | "host-only"
  std::string reason;           ///< why host-only ("" with CUPTI)
  double untraced_step_ms = 0;  ///< the same steps without tracing, just before
  double traced_step_ms = 0;
  double inflation = 0;  ///< traced ÷ untraced
  std::string trace;     ///< the Chrome trace file written
  std::optional<LoaderProfile> loader;
  std::optional<CommProfile> comm;  ///< data-parallel trials (filled by the analysis)
  // ---- the analysis (profiler/analysis.cpp)
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
  std::vector<KernelClass> kernel_classes;  ///< every kernel's time by kind, largest first
  std::vector<SyncStat> syncs;
  double syncs_per_step = 0;
  std::vector<CopyStat> copies;
  std::map<std::string, double> phase_ms;  ///< mean host ms per step of each range ("data", "forward", …)
  /// Mean GPU ms per step launched from each phase, by external correlation id (empty without ids).
  std::map<std::string, double> gpu_phase_ms;
  double mfu = -1;  ///< achieved model FLOP/s ÷ peak; −1 when unknown
  double peak_tflops = 0;
  std::string peak_basis;
  std::string
      verdict;  ///< input-bound | communication-bound | sync-bound | launch-bound | compute-bound | memory-bound | mixed | ""
  std::string verdict_detail;
  std::vector<std::string> verdict_knobs;
};

void to_json(nlohmann::json& j, const ProfileSummary& p);
void from_json(const nlohmann::json& j, ProfileSummary& p);

}  // namespace autotune
