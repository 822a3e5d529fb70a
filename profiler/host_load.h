#pragma once
// How busy the host's CPUs were with work other than this process: the busy-host guard's measurement.
#include <optional>

#include "knobs/host_load.h"

namespace autotune {

/// One reading: the busy time of the CPUs this process may run on (/proc/stat, user + nice + system + irq +
/// softirq + steal), this process's own CPU time (getrusage RUSAGE_SELF: every thread), and the wall clock.
struct CpuReading {
  double busy_seconds = 0;  ///< summed over the usable CPUs
  double own_seconds = 0;
  double wall_seconds = 0;  ///< steady clock
  int cpus = 0;             ///< usable CPUs found in /proc/stat (0: not readable, nothing measured)
};

CpuReading read_cpus();

/// Other processes' CPU time between two readings, in cores: (Δbusy − Δown) ÷ Δwall, never below 0.
/// Empty when /proc/stat was not readable or no time passed.
std::optional<HostLoad> host_load_between(const CpuReading& before, const CpuReading& after);

}  // namespace autotune
