#pragma once
// The regression gate's decision (`autotune check`): from repeated, interleaved fresh-process
// measurements of a baseline side A and a candidate side B, per metric, a one-sided Mann-Whitney U test
// (Holm-corrected across metrics), a floor the effect must also exceed, and the reasons to say
// "inconclusive" instead of guessing. Pure functions: tested on fixed samples and simulated noise.
#include <string>
#include <vector>

#include "reports/check_summary.h"

namespace autotune {

/// One-sided Mann-Whitney U: the p-value of "values in `x` tend to be smaller than those in `y`" (as
/// SciPy's mannwhitneyu(x, y, alternative="less")). Exact distribution when there are no ties and both
/// samples hold ≤ 50 values; otherwise the normal approximation with tie and continuity correction.
/// `u` receives U of x (pairs with x > y, ties counting ½). Both samples must be non-empty.
double mann_whitney_less(const std::vector<double>& x, const std::vector<double>& y, double* u = nullptr);

/// Holm–Bonferroni adjusted p-values, in the input order (monotone in the sorted order, capped at 1).
std::vector<double> holm(const std::vector<double>& p);

/// Sample standard deviation ÷ mean; 0 for fewer than 2 values or a zero mean.
double coefficient_of_variation(const std::vector<double>& xs);

/// The standard normal quantile (inverse CDF) of p in (0, 1).
double normal_quantile(double p);

/// Repetitions per side a one-sided test at `alpha` needs to detect a relative change of `floor` with
/// 80% power when one repetition varies by `cv` (normal approximation, Mann-Whitney's efficiency 3/π).
int reps_needed(double cv, double floor, double alpha);

struct GateOptions {
  double alpha = 0.01;         ///< per test, after Holm's correction across metrics
  double floor = 0.03;         ///< throughput: a regression only when B is also ≥ 3% slower (ratio of medians)
  double memory_floor = 0.05;  ///< peak memory: only when B uses ≥ 5% more
  int min_reps = 5;            ///< fewer usable repetitions on a side: inconclusive
};

/// One metric's repetitions on both sides (one value per fresh process).
struct MetricSample {
  std::string name;  ///< "throughput", "peak_memory"
  std::string unit;  ///< "samples/s", "bytes"
  bool higher_is_better = true;
  std::vector<double> a, b;
};

struct GateDecision {
  std::vector<MetricDecision> metrics;
  std::string verdict;  ///< regression (any metric), else inconclusive (any), else pass
};

GateDecision decide(const std::vector<MetricSample>& samples, const GateOptions& o);

}  // namespace autotune
