#pragma once
#include <memory>
#include <string>
#include <vector>

#include "knobs/protocol.h"

namespace autotune {

class Workload;

/// Every built-in workload, in display order.
std::vector<WorkloadInfo> workload_infos();
/// A fresh, unbuilt workload; throws UsageError "unknown workload 'X'; known workloads: … (did you mean …)".
std::unique_ptr<Workload> make_workload(const std::string& name);

}  // namespace autotune
