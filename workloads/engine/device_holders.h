#pragma once
// Whether other processes held the trial's GPU while it was timed: the busy-host guard's device half (knobs/host_load.h
// has the figures). NVML (libnvidia-ml.so.1, the driver's) is opened with dlopen when asked, never linked: the worker
// starts on machines without a driver, and there it reads nothing.
#include <optional>
#include <string>

#include "knobs/host_load.h"

namespace autotune {

/// The compute processes on the GPU at PCI bus id `pci_bus_id` ("0000:3b:00.0") other than this one: every process
/// NVML lists but one (this process holds a context on the device while it trains, and inside a container NVML may
/// list it under the host's pid), within this process's MIG instance when NVML lists it under our pid. Empty when NVML
/// cannot be opened or does not answer.
std::optional<DeviceHolders> other_device_holders(const std::string& pci_bus_id);

}  // namespace autotune
