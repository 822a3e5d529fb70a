#include "knobs/converge.h"

#include <algorithm>
#include <cmath>

namespace autotune {

std::int64_t default_smoothing_window(std::int64_t largest_batch) { return std::max<std::int64_t>(1024, 8 * largest_batch); }

double smoothed_loss(const std::vector<CurvePoint>& c, std::size_t i, std::int64_t window) {
  if (i >= c.size()) return std::nan("");
  const std::int64_t from = c[i].samples - window;  // the window covers samples (from, c[i].samples]
  double sum = 0;
  std::int64_t n = 0;
  for (std::size_t j = i + 1; j-- > 0;) {
    const std::int64_t before = j > 0 ? c[j - 1].samples : 0;
    if (!std::isfinite(c[j].loss)) return std::nan("");
    // Each step's loss stands for the samples it trained on; weighting by samples keeps steps of
    // different batch sizes comparable.
    const std::int64_t w = c[j].samples - before;
    sum += c[j].loss * static_cast<double>(w);
    n += w;
    if (before <= from) break;
  }
  return n > 0 ? sum / static_cast<double>(n) : std::nan("");
}

Reached time_to_target(const std::vector<CurvePoint>& c, double target, std::int64_t window) {
  Reached r;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (c[i].samples < window) continue;
    const double l = smoothed_loss(c, i, window);
    if (std::isfinite(l) && l <= target) {
      r.seconds = c[i].seconds;
      r.samples = c[i].samples;
      return r;
    }
  }
  return r;
}

double loss_at_samples(const std::vector<CurvePoint>& c, std::int64_t samples, std::int64_t window) {
  for (std::size_t i = 0; i < c.size(); ++i)
    if (c[i].samples >= samples) return smoothed_loss(c, i, window);
  return std::nan("");
}

}  // namespace autotune
