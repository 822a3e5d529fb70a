#pragma once
// What else ran on the host's CPUs and its GPU: the busy-host guard's measurement. The worker records it over a trial's
// measured windows (TrialResult::host_load); the tuner reads it to wait for a quiet host before a re-measure.
#include <optional>

namespace autotune {

/// Other processes' CPU time on the trial's CPUs during its measured windows.
struct HostLoad {
  double other_cores = 0;  ///< mean cores' worth of CPU time that was not the trial's, on this host
  int cpus = 0;            ///< the CPUs the trial could run on
  double seconds = 0;      ///< the wall time it covers
  /// Of other_cores, in a VM, the time the hypervisor ran other guests on these CPUs (/proc/stat's steal): named apart,
  /// counted by the busy-host guard like another program (docs/search.md, "A busy host").
  double steal_cores = 0;
};

/// Other processes that held the trial's GPU while it was timed (the worker asks NVML before and after its measured
/// windows and keeps the larger answer; workloads/engine/device_holders.h).
struct DeviceHolders {
  int others = 0;          ///< compute processes on the device besides the trial's own
  double other_bytes = 0;  ///< the device memory they held (as NVML counts it; 0 where it cannot see it)
  int listed = 0;          ///< every process NVML listed, the trial's own included
};

/// One reading: the busy time of the CPUs this process may run on (/proc/stat, user + nice + system + irq +
/// softirq + steal), their steal time also apart, this process's own CPU time (getrusage RUSAGE_SELF: every thread),
/// and the wall clock.
struct CpuReading {
  double busy_seconds = 0;   ///< summed over the usable CPUs
  double steal_seconds = 0;  ///< of it, the hypervisor's for other guests
  double own_seconds = 0;
  double wall_seconds = 0;  ///< steady clock
  int cpus = 0;             ///< usable CPUs found in /proc/stat (0: not readable, nothing measured)
};

CpuReading read_cpus();

/// Other processes' CPU time between two readings, in cores: (Δbusy − Δown) ÷ Δwall, never below 0; its steal named.
/// Empty when /proc/stat was not readable or no time passed.
std::optional<HostLoad> host_load_between(const CpuReading& before, const CpuReading& after);

}  // namespace autotune
