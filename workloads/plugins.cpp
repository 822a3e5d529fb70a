#include "workloads/plugins.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "knobs/error.h"

namespace autotune {

const PluginRegistry& load_plugin(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, PluginRegistry> loaded;  // the libraries stay loaded for the process's life
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = loaded.find(path); it != loaded.end()) return it->second;
  if (std::filesystem::is_directory(path))
    throw UsageError(fmt::format("--plugin {}: is a directory; give a shared library (.so) that registers workloads", path));
  if (!std::filesystem::is_regular_file(path)) throw UsageError(fmt::format("--plugin {}: no such file", path));
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    throw UsageError(fmt::format("--plugin {}: cannot be loaded: {}", path, e ? e : "unknown error"));
  }
  using AbiFn = const char* (*)();
  using RegisterFn = void (*)(PluginRegistry&);
  auto abi = reinterpret_cast<AbiFn>(dlsym(lib, "autotune_plugin_abi"));
  auto reg = reinterpret_cast<RegisterFn>(dlsym(lib, "autotune_register"));
  if (!abi || !reg) {
    dlclose(lib);
    throw UsageError(
        fmt::format("--plugin {}: not an autotune plugin: it does not export autotune_plugin_abi and autotune_register "
                    "(end the plugin with AUTOTUNE_PLUGIN(your_register_function), workloads/plugin.h)",
                    path));
  }
  if (const std::string theirs = abi(); theirs != AUTOTUNE_PLUGIN_ABI) {
    dlclose(lib);
    throw UsageError(
        fmt::format("--plugin {}: built for '{}', this worker is '{}': rebuild the plugin against this autotune and its "
                    "LibTorch (find_package(autotune))",
                    path, theirs, AUTOTUNE_PLUGIN_ABI));
  }
  PluginRegistry r;
  reg(r);
  if (r.entries().empty()) throw UsageError(fmt::format("--plugin {}: registers no workload", path));
  std::set<std::string> names;
  for (const auto& e : r.entries()) {
    if (e.first.name.empty()) throw UsageError(fmt::format("--plugin {}: registers a workload with no name", path));
    if (!names.insert(e.first.name).second)
      throw UsageError(fmt::format("--plugin {}: registers the workload '{}' twice", path, e.first.name));
  }
  return loaded.emplace(path, std::move(r)).first->second;
}

}  // namespace autotune
