#pragma once
#include <string>

#include "knobs/protocol.h"

namespace autotune::testing {

/// What the worker observed after applying `knob` (result.applied), or "(not recorded)".
inline std::string observed(const TrialResult& r, const std::string& knob) {
  for (const auto& a : r.applied)
    if (a.knob == knob) return a.observed;
  return "(not recorded)";
}

}  // namespace autotune::testing
