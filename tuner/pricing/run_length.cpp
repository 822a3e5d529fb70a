#include "tuner/pricing/run_length.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "knobs/error.h"
#include "knobs/numbers.h"

namespace autotune {

RunLength parse_run_length(const std::string& text) {
  RunLength r;
  if (text.empty()) return r;
  const char* s = text.c_str();
  char* end = nullptr;
  const double n = std::strtod(s, &end);
  std::string unit(end);
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.front()))) unit.erase(unit.begin());
  const std::string allowed = "allowed: a count of samples, epochs or tokens above 0, e.g. 500000, 3epochs, 2.5e9tokens";
  if (end == s || !std::isfinite(n) || !(n > 0))
    throw UsageError(fmt::format("run-length '{}' is not a count above 0; {}", text, allowed));
  if (unit.empty() || unit == "samples" || unit == "sample") r.unit = RunLength::Unit::samples;
  else if (unit == "epochs" || unit == "epoch") r.unit = RunLength::Unit::epochs;
  else if (unit == "tokens" || unit == "token") r.unit = RunLength::Unit::tokens;
  else throw UsageError(fmt::format("run-length '{}' has an unknown unit '{}'; {}", text, unit, allowed));
  r.count = n;
  return r;
}

double run_samples(const RunLength& r, double dataset_samples, double tokens_per_sample) {
  switch (r.unit) {
    case RunLength::Unit::samples: return r.count;
    case RunLength::Unit::epochs: return dataset_samples > 0 ? r.count * dataset_samples : 0;
    case RunLength::Unit::tokens: return tokens_per_sample > 0 ? r.count / tokens_per_sample : 0;
  }
  return 0;
}

std::string describe(const RunLength& r) {
  const char* unit = r.unit == RunLength::Unit::epochs ? "epoch" : r.unit == RunLength::Unit::tokens ? "token" : "sample";
  const std::string n = r.count >= 1e7 ? fmt::format("{:.3g}", r.count)
                        : r.count == std::floor(r.count) ? with_commas(r.count)
                                                         : fmt::format("{:g}", r.count);
  return fmt::format("{} {}{}", n, unit, r.count == 1 ? "" : "s");
}

}  // namespace autotune
