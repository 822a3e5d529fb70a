#pragma once
// How numbers read on every screen and in every report: throughput with thousands separators, sample counts that may
// be unbounded, memory in MiB, a clock's time left and a duration in words. One home, used by the tuner (its console)
// and the reports alike, so a number reads the same wherever it is printed.
#include <cstdint>
#include <string>

namespace autotune {

/// "12,345": rounded to a whole number, thousands separated (throughput, samples).
std::string with_commas(double v);
/// with_commas, or "∞" for an unbounded count (a noise scale's open interval, a run that never reaches its loss).
std::string samples_text(double v);
/// "425 MiB" (rounded); "–" for 0 or less (nothing measured): memory columns and checks.
std::string mib(std::int64_t bytes);
/// "2m27s", "51s": time left on a budget, as the console's progress lines print it.
std::string clock_text(double seconds);
/// "45 s", "12 min", "3.5 h": a predicted duration in words; "—" when not known.
std::string duration_text(double seconds);

}  // namespace autotune
