#include "workloads/engine/device_holders.h"

#include <dlfcn.h>
#include <unistd.h>

#include <vector>

namespace autotune {

namespace {

// NVML's C interface as documented (nvml.h of the driver's API 11+), declared here: the header is not part of the
// CUDA toolkit this project builds against, and the library is opened at run time.
using nvmlReturn = int;
constexpr nvmlReturn kSuccess = 0;
constexpr nvmlReturn kInsufficientSize = 7;
struct nvmlDeviceOpaque;
using nvmlDevice = nvmlDeviceOpaque*;
struct ProcessInfo {  // nvmlProcessInfo_v2_t, what the _v3 queries fill
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};

struct Nvml {
  void* lib = nullptr;
  nvmlReturn (*init)() = nullptr;
  nvmlReturn (*shutdown)() = nullptr;
  nvmlReturn (*by_pci)(const char*, nvmlDevice*) = nullptr;
  nvmlReturn (*compute)(nvmlDevice, unsigned int*, ProcessInfo*) = nullptr;
  bool ready = false;  ///< opened, every entry found, initialised
  Nvml() {
    lib = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!lib) return;
    init = reinterpret_cast<nvmlReturn (*)()>(dlsym(lib, "nvmlInit_v2"));
    shutdown = reinterpret_cast<nvmlReturn (*)()>(dlsym(lib, "nvmlShutdown"));
    by_pci = reinterpret_cast<nvmlReturn (*)(const char*, nvmlDevice*)>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    compute = reinterpret_cast<nvmlReturn (*)(nvmlDevice, unsigned int*, ProcessInfo*)>(
        dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3"));
    ready = init && shutdown && by_pci && compute && init() == kSuccess;
  }
  ~Nvml() {
    if (ready) shutdown();
    if (lib) dlclose(lib);
  }
};

/// NVML, opened and initialised once per process (a trial asks twice: before and after its measured windows).
const Nvml& nvml() {
  static const Nvml n;
  return n;
}

}  // namespace

std::optional<DeviceHolders> other_device_holders(const std::string& pci_bus_id) {
  const Nvml& n = nvml();
  if (!n.ready) return std::nullopt;
  std::optional<DeviceHolders> out;
  nvmlDevice dev = nullptr;
  if (n.by_pci(pci_bus_id.c_str(), &dev) == kSuccess) {
    std::vector<ProcessInfo> procs(64);
    auto count = static_cast<unsigned int>(procs.size());
    nvmlReturn r = n.compute(dev, &count, procs.data());
    if (r == kInsufficientSize) {  // `count` now says how many there are
      procs.resize(count + 8);
      count = static_cast<unsigned int>(procs.size());
      r = n.compute(dev, &count, procs.data());
    }
    if (r == kSuccess) {
      procs.resize(count);
      const auto self = static_cast<unsigned int>(getpid());
      const ProcessInfo* me = nullptr;
      for (const auto& p : procs)
        if (p.pid == self) me = &p;
      DeviceHolders h;
      h.listed = static_cast<int>(procs.size());
      for (const auto& p : procs) {
        if (me && (&p == me || p.gpu_instance_id != me->gpu_instance_id || p.compute_instance_id != me->compute_instance_id))
          continue;  // ourselves, or another MIG instance (its own SMs and memory)
        ++h.others;
        h.other_bytes += static_cast<double>(p.used_gpu_memory);
      }
      if (!me && h.others > 0) --h.others;  // not listed under our pid (another pid namespace): one of them is us
      out = h;
    }
  }
  return out;
}

}  // namespace autotune
