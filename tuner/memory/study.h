#pragma once
// The memory study behind `autotune memory` (docs/memory.md): every family of the listed knobs probed, its peaks
// fitted (tuner/memory/model.h) and each listed batch predicted — and with `check`, measured under the cap (the same
// short probe, never fed to the fit) — without running a search. Its words are the reports' (reports/memory_study.h).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "knobs/protocol.h"
#include "knobs/record.h"
#include "knobs/target.h"
#include "reports/memory_study.h"

namespace autotune {

struct MemoryStudyOptions {
  TrialSetup setup;                   ///< the trials' setup; its memory_cap is the capacity (CUDA without one: the device's)
  WorkloadInfo workload;
  TargetInfo target;
  std::vector<std::string> knobs;     ///< --knobs assignments, batch_size not among them: one family per effective config
  std::vector<std::int64_t> batches;  ///< empty: powers of two up to 4 × the workload's batch (at least 64)
  std::int64_t probe_smallest = 0;    ///< probes at a quarter, half and all of it (0: a quarter of the workload's batch, ≥ 4)
  double margin = 0.05;               ///< a batch fits when its upper prediction stays this share below the capacity
  bool check = false;
};

/// Runs the study: each trial through `run` (a fresh worker), each family handed to `on_family` as it is done.
MemoryStudy run_memory_study(const MemoryStudyOptions& o, const std::function<const TrialRecord&(const TrialPlan&)>& run,
                             const std::function<void(const MemoryStudyFamily&)>& on_family);

}  // namespace autotune
