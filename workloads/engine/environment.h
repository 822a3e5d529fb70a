#pragma once
#include <string>

#include "knobs/protocol.h"

namespace autotune {

/// Torch version it was built against, CUDA it was built with, devices visible now, host facts.
/// Never throws: a machine without a driver reports cuda_available=false and device_count=0.
EnvFingerprint environment_fingerprint();

/// Multi-line human-readable form of `environment_fingerprint()` for `autotune-worker info`.
std::string describe_environment(const EnvFingerprint& env);

}  // namespace autotune
