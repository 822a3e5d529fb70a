#pragma once
#include <string>
#include <vector>

#include "knobs/protocol.h"

namespace autotune {

/// Asks the worker binary what it offers. The tuner never links LibTorch, so the workload registry
/// and the device facts come from `autotune-worker workloads --json` / `info --json`.
/// Throws std::runtime_error naming the worker and its error when the call fails.
std::vector<WorkloadInfo> query_workloads(const std::string& worker, const std::string& plugin = "");
EnvFingerprint query_environment(const std::string& worker);

/// The workload called `name` from `all`; throws UsageError with the known names and a did-you-mean.
const WorkloadInfo& find_workload(const std::vector<WorkloadInfo>& all, const std::string& name);

/// The workload a trial setup names: a built-in one from the worker's list, or the setup's --model as the
/// worker loads and probes it (`autotune-worker describe`). A model or spec the worker refuses is a
/// UsageError with its one-line reason. `parameters`: the worker also builds the model and counts its trainable
/// parameters (WorkloadInfo::parameters; what a noise log's model must match).
WorkloadInfo describe_workload(const std::string& worker, const TrialSetup& setup, bool parameters = false);

/// A worker that exited 2 refused its input (a bad model or spec): its one-line reason, the last line of its stderr
/// ("autotune-worker: error: REASON") without the prefix; "" when that line is no refusal.
std::string worker_refusal(const std::string& stderr_text);

}  // namespace autotune
