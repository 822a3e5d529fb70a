// A plugin built for another ABI (as if against torch 2.10.0): the worker must refuse it.
#include "workloads/plugin.h"

extern "C" __attribute__((visibility("default"))) const char* autotune_plugin_abi() {
  return "autotune-plugin/1 torch-2.10.0 cxx11abi-1";
}
extern "C" __attribute__((visibility("default"))) void autotune_register(autotune::PluginRegistry&) {}
