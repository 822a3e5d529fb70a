#include "knobs/numbers.h"

#include <fmt/format.h>

#include <cmath>

namespace autotune {

std::string with_commas(double v) {
  const long long n = std::llround(v);
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string samples_text(double v) { return std::isfinite(v) ? with_commas(v) : "∞"; }

std::string mib(std::int64_t b) { return b > 0 ? fmt::format("{:.0f} MiB", static_cast<double>(b) / (1 << 20)) : "–"; }

std::string clock_text(double s) {
  if (!(s > 0)) s = 0;
  const int m = static_cast<int>(s) / 60;
  return m > 0 ? fmt::format("{}m{:02d}s", m, static_cast<int>(s) % 60) : fmt::format("{:.0f}s", s);
}

std::string duration_text(double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds)) return "—";
  if (seconds < 120) return fmt::format("{:.0f} s", seconds);
  if (seconds < 2 * 3600) return fmt::format("{:.0f} min", seconds / 60);
  return fmt::format("{:.1f} h", seconds / 3600);
}

}  // namespace autotune
