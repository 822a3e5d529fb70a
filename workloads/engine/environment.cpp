#include "workloads/engine/environment.h"

#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/version.h>
#include <unistd.h>

#include "profiler/host_memory.h"

#ifndef AUTOTUNE_VERSION
#define AUTOTUNE_VERSION "unknown"
#endif

namespace autotune {

namespace {

/// The CUDA driver's version ("13.0") from the driver library LibTorch already loaded — looked up at
/// run time (never linked: the worker must start on machines without a driver); "" when unavailable.
std::string driver_version() {
  void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!lib) return "";
  using Fn = int (*)(int*);
  std::string v;
  int version = 0;
  if (auto fn = reinterpret_cast<Fn>(dlsym(lib, "cuDriverGetVersion")); fn && fn(&version) == 0)
    v = fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
  dlclose(lib);
  return v;
}

}  // namespace

EnvFingerprint environment_fingerprint() {
  EnvFingerprint e;
  e.torch_version = TORCH_VERSION;
  e.autotune_version = AUTOTUNE_VERSION;
  try {
    if (at::Context::hasCUDART()) {
      const long v = at::detail::getCUDAHooks().versionCUDART();  // e.g. 13000
      e.cuda_compiled = fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
    }
  } catch (const std::exception&) {
    // CPU-only LibTorch: no CUDA hooks registered.
  }
  try {
    e.device_count = static_cast<int>(torch::cuda::device_count());
    e.cuda_available = torch::cuda::is_available();
  } catch (const std::exception&) {
    e.device_count = 0;
    e.cuda_available = false;
  }
  e.cpu_cores = usable_cpus();
  e.cpu_model = cpu_model();
  e.device_name = e.cpu_model;
  if (e.cuda_available) {
    try {
      e.device_name = at::cuda::getDeviceProperties(0)->name;  // what reports, MFU peaks and fingerprints name
    } catch (const std::exception&) {
    }
    e.driver = driver_version();
  }
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) == 0) e.hostname = host;
  return e;
}

std::string describe_environment(const EnvFingerprint& e) {
  std::string s;
  s += fmt::format("autotune-worker {}\n", e.autotune_version);
  s += fmt::format("built against torch {}{}\n", e.torch_version,
                   e.cuda_compiled.empty() ? " (CPU-only build)" : " with CUDA " + e.cuda_compiled);
  if (e.cuda_available) s += fmt::format("CUDA devices available: {}\n", e.device_count);
  else s += "no CUDA device is available (no GPU or no driver): CPU paths only\n";
  if (e.cuda_available) s += fmt::format("GPU 0: {}; driver {}\n", e.device_name, e.driver.empty() ? "unknown" : e.driver);
  s += fmt::format("CPU: {} ({} usable logical CPUs)\n", e.cpu_model.empty() ? "unknown" : e.cpu_model, e.cpu_cores);
  s += fmt::format("host: {}\n", e.hostname);
  return s;
}

}  // namespace autotune
