#include "knobs/held_out.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace autotune {

Reached time_to_held_out(const std::vector<CurvePoint>& v, double target) {
  Reached r;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i].loss) || v[i].loss > target) continue;
    r.seconds = v[i].seconds;
    r.samples = v[i].samples;
    if (i > 0 && std::isfinite(v[i - 1].loss) && v[i - 1].loss > v[i].loss) {
      // the crossing between the two evaluations, on the straight line between them
      const double f = (v[i - 1].loss - target) / (v[i - 1].loss - v[i].loss);
      r.seconds = v[i - 1].seconds + f * (v[i].seconds - v[i - 1].seconds);
      r.samples = v[i - 1].samples + static_cast<std::int64_t>(std::llround(f * static_cast<double>(v[i].samples - v[i - 1].samples)));
    }
    return r;
  }
  return r;
}

double lowest_held_out(const std::vector<CurvePoint>& v) {
  double lo = std::numeric_limits<double>::infinity();
  for (const auto& p : v)
    if (p.samples > 0 && std::isfinite(p.loss)) lo = std::min(lo, p.loss);
  return std::isfinite(lo) ? lo : std::nan("");
}

}  // namespace autotune
