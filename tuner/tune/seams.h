#pragma once
// What a tuning run talks to besides its folder (tuner/tune/tune.h runs it; tuner/tune/core.h holds it).
#include <functional>
#include <memory>

#include "knobs/protocol.h"
#include "knobs/worker_info.h"
#include "tuner/exec/plan.h"

namespace autotune {

/// What a run talks to besides its folder: the worker (what the setup trains, and on what machine) and the executor
/// its trials run through. Each left empty is the real one — the worker binary asked (tuner/exec/worker_client.h)
/// and the execution plan's executor; the tuner's tests give fakes (tests/support/fake_executor.h).
struct TuneSeams {
  std::function<WorkloadInfo(const TrialSetup&)> describe;
  std::function<EnvFingerprint()> environment;
  std::function<std::unique_ptr<Executor>(const ExecutionPlan&, TrialRunner)> executor;
};

}  // namespace autotune
