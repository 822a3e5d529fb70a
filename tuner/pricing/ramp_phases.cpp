#include "tuner/pricing/ramp_phases.h"

#include <fmt/format.h>

#include <cmath>
#include <sstream>

#include "knobs/error.h"

namespace autotune {

std::vector<RampStep> parse_ramp_phases(const std::string& spec, bool lr_required) {
  std::vector<RampStep> out;
  std::stringstream in(spec);
  std::string item;
  const auto bad = [&](const std::string& why) {
    return UsageError(fmt::format("--ramp-phases '{}': {}; allowed: SAMPLES:GRAD_ACCUM{}[,…], the first from 0, samples rising, "
                                  "grad_accum ≥ 1{} (e.g. 0:1{},50000:2{})",
                                  spec, why, lr_required ? ":LR" : "[:LR]", ", lr > 0", lr_required ? ":1e-3" : "",
                                  lr_required ? ":1.4e-3" : ""));
  };
  while (std::getline(in, item, ',')) {
    double from = -1, lr = 0;
    int accum = 0;
    char c1 = 0, c2 = 0;
    std::istringstream f(item);
    const bool head = static_cast<bool>(f >> from >> c1 >> accum) && c1 == ':';
    const bool has_lr = head && static_cast<bool>(f >> c2) && c2 == ':' && static_cast<bool>(f >> lr);
    if (!head || (lr_required && !has_lr) || !(f >> std::ws).eof())
      throw bad(fmt::format("phase '{}' is not SAMPLES:GRAD_ACCUM{}", item, lr_required ? ":LR" : "[:LR]"));
    if (!(from >= 0) || !std::isfinite(from) || accum < 1 || (has_lr && (!(lr > 0) || !std::isfinite(lr))))
      throw bad(fmt::format("phase '{}' is out of range", item));
    RampStep r{static_cast<std::int64_t>(std::llround(from)), accum, has_lr ? lr : 0};
    if (out.empty() ? r.from_samples != 0 : r.from_samples <= out.back().from_samples)
      throw bad(out.empty() ? "the first phase must start at sample 0" : fmt::format("phase '{}' does not start after the one before", item));
    out.push_back(r);
  }
  if (out.size() < 2) throw bad("a ramp needs at least two phases");
  return out;
}

}  // namespace autotune
