#pragma once
// What a trial's measured windows shared the host with (the worker measures it: profiler/host_load.h).
#include <optional>

namespace autotune {

/// Other processes' CPU time on the trial's CPUs during its measured windows.
struct HostLoad {
  double other_cores = 0;  ///< mean cores' worth of CPU time that was not the trial's
  int cpus = 0;            ///< the CPUs the trial could run on
  double seconds = 0;      ///< the wall time it covers
  /// other_cores as a share of the trial's CPUs.
  double share() const { return cpus > 0 ? other_cores / cpus : 0; }
};

}  // namespace autotune
