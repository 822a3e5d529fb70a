#pragma once
#include <memory>
#include <string>
#include <vector>

#include "knobs/protocol.h"

namespace autotune {

class Workload;

/// Every built-in workload, in display order.
std::vector<WorkloadInfo> workload_infos();
/// The workloads `plugin` registers (the built-ins when "").
std::vector<WorkloadInfo> workload_infos(const std::string& plugin);
/// A fresh, unbuilt workload; throws UsageError "unknown workload 'X'; known workloads: … (did you mean …)".
std::unique_ptr<Workload> make_workload(const std::string& name);
/// The workload a trial setup names: its --model (a TorchScript file, loaded and probed), a --plugin's
/// --workload, or the built-in --workload. Throws UsageError (one line) for a bad model or spec.
std::unique_ptr<Workload> make_workload(const TrialSetup& setup);

}  // namespace autotune
