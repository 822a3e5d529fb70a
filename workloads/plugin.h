#pragma once
// The plugin interface: a shared library that adds workloads to autotune-worker (`--plugin LIB.so
// --workload NAME`). Implement autotune::Workload (or ModuleWorkload for a torch::nn::Module model) and
// register it:
//
//   #include <autotune/workloads/plugin.h>
//   void register_mine(autotune::PluginRegistry& r) {
//     r.add(MyWorkload::info_of(), [] { return std::make_unique<MyWorkload>(); });
//   }
//   AUTOTUNE_PLUGIN(register_mine)
//
// Build it against the same LibTorch as the worker (find_package(autotune) brings it; examples/plugin).
// The worker refuses a plugin whose AUTOTUNE_PLUGIN_ABI differs from its own: another autotune plugin
// interface, another torch version, another C++ string ABI.
#include <torch/version.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "workloads/workload.h"

#define AUTOTUNE_PLUGIN_STRINGIFY2(x) #x
#define AUTOTUNE_PLUGIN_STRINGIFY(x) AUTOTUNE_PLUGIN_STRINGIFY2(x)
/// What must match between a plugin and the worker that loads it.
#define AUTOTUNE_PLUGIN_ABI \
  "autotune-plugin/1 torch-" TORCH_VERSION " cxx11abi-" AUTOTUNE_PLUGIN_STRINGIFY(_GLIBCXX_USE_CXX11_ABI)

namespace autotune {

/// The workloads a plugin adds, by name (unique within the plugin). With --plugin, --workload names one of
/// these, never a built-in.
class PluginRegistry {
 public:
  using Factory = std::function<std::unique_ptr<Workload>()>;
  void add(WorkloadInfo info, Factory make) { entries_.push_back({std::move(info), std::move(make)}); }
  const std::vector<std::pair<WorkloadInfo, Factory>>& entries() const { return entries_; }

 private:
  std::vector<std::pair<WorkloadInfo, Factory>> entries_;
};

}  // namespace autotune

/// Exports the two symbols the worker looks for: the ABI the plugin was built with, and its registration.
#define AUTOTUNE_PLUGIN(register_fn)                                                                                  \
  extern "C" __attribute__((visibility("default"))) const char* autotune_plugin_abi() { return AUTOTUNE_PLUGIN_ABI; } \
  extern "C" __attribute__((visibility("default"))) void autotune_register(autotune::PluginRegistry& r) { register_fn(r); }
