#include "tuner/search/objective_kind.h"

#include <fmt/format.h>

#include "knobs/error.h"

namespace autotune {

std::string to_string(ObjectiveKind k) { return k == ObjectiveKind::time ? "time" : "throughput"; }

void from_string(const std::string& name, ObjectiveKind& k) {
  if (name == "time") k = ObjectiveKind::time;
  else if (name == "throughput") k = ObjectiveKind::throughput;
  else throw UsageError(fmt::format("objective '{}' is not allowed; allowed: time, throughput", name));
}

}  // namespace autotune
