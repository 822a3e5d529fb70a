#pragma once
// GPU timeline records as plain data: what a CUPTI activity collector produces and what the analysis
// and the trace exporter read. Nothing here depends on CUDA or CUPTI, so the analysis is tested on
// hand-built streams (and on replays) on machines without a GPU.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace autotune::prof {

enum class ActKind {
  kernel,   ///< CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
  memcpy,   ///< CUPTI_ACTIVITY_KIND_MEMCPY
  memset,   ///< CUPTI_ACTIVITY_KIND_MEMSET
  runtime,  ///< CUPTI_ACTIVITY_KIND_RUNTIME: a CUDA runtime API call on a host thread
  sync,     ///< CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: stream / context / event synchronisation
  range,    ///< one of our host ranges (external correlation): "step" or a phase name
  comm,     ///< a collective of the process group, launch to completion ("gloo:allreduce"; bytes = payload)
};
std::string to_string(ActKind k);

/// Work that ran on the GPU (kernels, copies, memsets), as opposed to host calls, ranges and collectives.
inline bool is_gpu_op(ActKind k) { return k == ActKind::kernel || k == ActKind::memcpy || k == ActKind::memset; }

/// One record. Times in nanoseconds on CUPTI's clock (host ranges converted to it by the collector).
struct Activity {
  ActKind kind = ActKind::kernel;
  std::string name;  ///< kernel name, runtime API name ("cudaLaunchKernel"), range name ("forward")
  std::int64_t start_ns = 0, end_ns = 0;
  int device = 0;
  std::int64_t stream = -1;       ///< GPU records: the stream; host records: −1
  std::int64_t tid = 0;           ///< host records: the OS thread id
  std::uint32_t correlation = 0;  ///< runtime call ↔ the GPU work it launched
  // memcpy
  std::int64_t bytes = 0;
  std::string copy_kind;     ///< "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"
  bool host_pinned = false;  ///< the host side of an HtoD/DtoH copy is page-locked
  // kernel: the launch geometry, blocks and threads per block (0 = not recorded)
  std::array<std::int32_t, 3> grid{{0, 0, 0}}, block{{0, 0, 0}};
  // range
  int step = -1;  ///< range records: the training step they belong to
  /// External correlation (CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0): ranges carry the id pushed while
  /// they ran; runtime and GPU records the id that was pushed when their launch call ran. 0 = none.
  std::uint64_t external_id = 0;
  std::int64_t duration_ns() const { return end_ns - start_ns; }
};

/// What a traced window produced. `dropped` > 0 or `zero_timestamps` > 0 mean records were lost:
/// the window is then invalid and the analysis says so instead of analysing a partial timeline.
struct ActivityStream {
  std::vector<Activity> records;
  std::int64_t dropped = 0;          ///< cuptiActivityGetNumDroppedRecords over the window
  std::int64_t zero_timestamps = 0;  ///< GPU records with a zero start or end (lost data)
  std::string device_name;           ///< e.g. "NVIDIA H100 80GB HBM3"
  int pid = 0;
};

}  // namespace autotune::prof
