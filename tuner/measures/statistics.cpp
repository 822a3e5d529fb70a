#include "tuner/measures/statistics.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace autotune {

double quantile(std::vector<double> xs, double q) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  const double pos = q * static_cast<double>(xs.size() - 1);
  const auto i = static_cast<size_t>(std::floor(pos));
  const double frac = pos - static_cast<double>(i);
  return i + 1 < xs.size() ? xs[i] + frac * (xs[i + 1] - xs[i]) : xs[i];
}

double median(const std::vector<double>& xs) { return quantile(xs, 0.5); }

double mean_value(const std::vector<double>& xs) {
  double m = 0;
  for (double x : xs) m += x / static_cast<double>(xs.size());
  return m;
}

double relative_sd(const std::vector<double>& xs) {
  if (xs.size() < 2) return 0;
  const double m = mean_value(xs);
  double ss = 0;
  for (double x : xs) ss += (x - m) * (x - m);
  return m != 0 ? std::sqrt(ss / static_cast<double>(xs.size() - 1)) / std::abs(m) : 0;
}

double relative_iqr(const std::vector<double>& xs) {
  const double m = median(xs);
  return m == 0 ? 0 : (quantile(xs, 0.75) - quantile(xs, 0.25)) / m;
}

namespace {
std::vector<double> resample(const std::vector<double>& xs, std::mt19937_64& rng) {
  std::uniform_int_distribution<size_t> pick(0, xs.size() - 1);
  std::vector<double> r(xs.size());
  for (auto& v : r) v = xs[pick(rng)];
  return r;
}
Interval percentile_interval(std::vector<double> stats, double confidence) {
  const double alpha = (1 - confidence) / 2;
  return {quantile(stats, alpha), quantile(stats, 1 - alpha)};
}
}  // namespace

Interval bootstrap_median_ci(const std::vector<double>& xs, double confidence, int resamples, std::uint64_t seed) {
  if (xs.empty()) return {};
  std::mt19937_64 rng(seed);
  std::vector<double> meds;
  meds.reserve(resamples);
  for (int i = 0; i < resamples; ++i) meds.push_back(median(resample(xs, rng)));
  return percentile_interval(std::move(meds), confidence);
}

Interval bootstrap_ratio_ci(const std::vector<double>& a, const std::vector<double>& b, double confidence, int resamples,
                            std::uint64_t seed) {
  if (a.empty() || b.empty()) return {};
  std::mt19937_64 rng(seed);
  std::vector<double> ratios;
  ratios.reserve(resamples);
  for (int i = 0; i < resamples; ++i) {
    const double mb = median(resample(b, rng));
    const double ma = median(resample(a, rng));
    if (mb > 0) ratios.push_back(ma / mb);
  }
  return percentile_interval(std::move(ratios), confidence);
}

PairedRatio paired_ratio(const std::vector<RoundPair>& rounds, double confidence, int resamples, std::uint64_t seed) {
  std::vector<const RoundPair*> kept;
  PairedRatio out;
  for (const RoundPair& r : rounds) {
    if (r.num.empty() || r.den.empty()) continue;
    const double n = median(r.num), d = median(r.den);
    if (!(n > 0) || !(d > 0)) continue;
    kept.push_back(&r);
    out.per_round.push_back(n / d);
  }
  if (kept.empty()) return out;
  auto geomean = [](const std::vector<double>& xs) {
    double log_sum = 0;
    for (double x : xs) log_sum += std::log(x);
    return std::exp(log_sum / static_cast<double>(xs.size()));
  };
  out.value = geomean(out.per_round);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick_round(0, kept.size() - 1);
  std::vector<double> stats, ratios(kept.size());
  stats.reserve(resamples);
  for (int i = 0; i < resamples; ++i) {
    for (auto& x : ratios) {
      const std::size_t k = pick_round(rng);
      const double d = median(resample(kept[k]->den, rng)), n = median(resample(kept[k]->num, rng));
      x = d > 0 && n > 0 ? n / d : out.per_round[k];  // a resample of zero windows: the round's own ratio
    }
    stats.push_back(geomean(ratios));
  }
  const Interval ci = percentile_interval(std::move(stats), confidence);
  out.lo = ci.lo;
  out.hi = ci.hi;
  return out;
}

double t_quantile_975(int dof) {
  static const double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086};
  if (dof < 1) return 0;
  if (dof <= 20) return table[dof - 1];
  return dof <= 30 ? 2.042 : dof <= 60 ? 2.000 : 1.960;
}

}  // namespace autotune
