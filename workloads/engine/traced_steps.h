#pragma once
// A traced trial's steps — never the timed ones: after warm-up, `steps` untraced reference steps,
// then as many traced (CUPTI GPU activity when a device and CUPTI are usable, host phase ranges
// always), the Chrome trace written, and the profile analysed.
#include <torch/torch.h>

#include <string>

#include "knobs/profile.h"
#include "knobs/target.h"
#include "profiler/step_timer.h"
#include "workloads/engine/stepper.h"
#include "workloads/workload.h"

namespace autotune {

struct TraceRequest {
  std::string path;  ///< the Chrome trace file to write
  int steps = 5;     ///< traced steps (and as many untraced reference steps before them)
  torch::Device device = torch::kCPU;
  std::string device_name;  ///< for the MFU peak table
  std::int64_t samples_per_step = 0;
  std::string precision;
  TargetInfo target;  ///< the verdict names only knobs that apply here
  /// A data-parallel rank: the trace's distributedInfo (HTA's multi-rank analysis reads it).
  int rank = 0, world = 1;
  std::string backend = "nccl";
};

ProfileSummary run_traced_steps(Stepper& stepper, StepTimer& timer, const Clock& clock, Workload& workload,
                                const TraceRequest& req);

/// Waits for the device's queued work (no-op on the CPU).
void sync(const torch::Device& d);

}  // namespace autotune
