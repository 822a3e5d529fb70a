#pragma once
// Before a config timed on a busy host is timed again: wait, within a bound, for the host to be quiet
// (the busy-host guard, tuner/search/stability.h). Reads the whole host's CPUs as the worker reads a trial's
// (knobs/host_load.h); the tuner's own CPU time is not another program's.
#include <functional>
#include <string>

#include "tuner/search/stability.h"

namespace autotune {

struct QuietWait {
  bool quiet = false;      ///< the last second's load was within the limit
  double waited = 0;       ///< seconds spent waiting
  double other_cores = 0;  ///< the last second's load, in cores
  int cpus = 0;
};

/// Samples the host's load second by second until it is within `o`'s limit or `max_seconds` have passed.
/// `note` hears one line when it starts waiting and one when it stops. No /proc/stat: quiet at once (nothing known).
QuietWait wait_for_quiet_host(const StabilityOptions& o, double max_seconds, const std::function<void(const std::string&)>& note);

}  // namespace autotune
