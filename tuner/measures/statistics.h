#pragma once
#include <cstdint>
#include <vector>

namespace autotune {

/// Linear-interpolated quantile (q in [0, 1]) of unsorted `xs`; 0 for an empty input.
double quantile(std::vector<double> xs, double q);
double median(const std::vector<double>& xs);
/// The arithmetic mean; 0 for an empty input.
double mean_value(const std::vector<double>& xs);
/// Sample standard deviation ÷ |mean|; 0 with fewer than two values or a zero mean.
double relative_sd(const std::vector<double>& xs);
/// IQR / median (0 when the median is 0). The noise measure of "Stable" in docs/design.md.
double relative_iqr(const std::vector<double>& xs);

struct Interval {
  double lo = 0, hi = 0;
  bool overlaps(const Interval& o) const { return lo <= o.hi && o.lo <= hi; }
  bool contains(double x) const { return lo <= x && x <= hi; }
};

/// Percentile-bootstrap confidence interval of the median (`resamples` draws, deterministic `seed`).
/// With few windows it is wide — honestly so: 3 windows give roughly [min, max].
Interval bootstrap_median_ci(const std::vector<double>& xs, double confidence = 0.95, int resamples = 2000,
                             std::uint64_t seed = 1);
/// Bootstrap CI of median(a) / median(b), resampling both independently.
Interval bootstrap_ratio_ci(const std::vector<double>& a, const std::vector<double>& b, double confidence = 0.95,
                            int resamples = 2000, std::uint64_t seed = 1);

/// One interleaved round of two configs run side by side: the numerator's windows and the denominator's.
struct RoundPair {
  std::vector<double> num, den;
};
/// num ÷ den paired round by round: each round's median(num) ÷ median(den) (`per_round`, in round order), so a
/// machine that drifts between rounds cancels in every ratio; `value` is their geometric mean (the mean of ratios
/// that treats 2× and ½× alike), which lies among the rounds' own ratios. [lo, hi] is a two-level percentile
/// bootstrap (the rounds resampled, then each chosen round's windows), so the interval holds how far whole rounds
/// differ as well as the windows within one (one round: its windows alone). Rounds with an empty side or a zero median
/// are left out; all zero when none is left.
struct PairedRatio {
  double value = 0, lo = 0, hi = 0;
  std::vector<double> per_round;
};
PairedRatio paired_ratio(const std::vector<RoundPair>& rounds, double confidence = 0.95, int resamples = 2000,
                         std::uint64_t seed = 1);

/// The two-sided 97.5% quantile of Student's t with `dof` degrees of freedom (a prediction interval from
/// a spread estimated on few runs: 12.71 at 1, 3.18 at 3, 1.96 in the limit); 0 for dof < 1.
double t_quantile_975(int dof);

}  // namespace autotune
