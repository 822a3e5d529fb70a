#pragma once
// Loading plugins (workloads/plugin.h) into the worker: dlopen, the ABI check, the registration.
#include <string>
#include <vector>

#include "workloads/plugin.h"

namespace autotune {

/// The workloads `path` registers (loaded once per process). Throws UsageError (one line) for a file that
/// cannot be loaded, a library without the plugin symbols, or one built against another ABI.
const PluginRegistry& load_plugin(const std::string& path);

}  // namespace autotune
