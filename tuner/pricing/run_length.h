#pragma once
// How long the user's training runs (`--run-length`), the horizon a changed batch is priced over
// (docs/time-to-train.md, "B̄ for your run"). Given in samples, epochs or tokens; converted to samples at the
// user's batch once the data's size is known (the noise-scale trial reports it). Without one, one pass over the data.
#include <cstdint>
#include <string>

namespace autotune {

struct RunLength {
  enum class Unit { samples, epochs, tokens };
  double count = 0;
  Unit unit = Unit::samples;
  bool given() const { return count > 0; }
};

/// "500000", "500000samples", "3epochs", "2.5e9tokens" (a space before the unit is allowed; "" = not given).
/// Throws UsageError, one line naming what is wrong and what is allowed, for anything else: a count that is zero,
/// negative, not a number, or an unknown unit.
RunLength parse_run_length(const std::string& text);

/// The run in samples: epochs × `dataset_samples`, tokens ÷ `tokens_per_sample`. 0 when the conversion needs a size
/// that is unknown (0).
double run_samples(const RunLength& r, double dataset_samples, double tokens_per_sample);

/// "3 epochs", "500,000 samples", "2.5e9 tokens".
std::string describe(const RunLength& r);

}  // namespace autotune
