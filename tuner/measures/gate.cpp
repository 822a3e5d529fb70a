#include "tuner/measures/gate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tuner/measures/statistics.h"

namespace autotune {

namespace {

/// Average ranks (1-based) of `v`, ties sharing their mean rank; `tie_term` gets Σ(t³ − t) over tie groups.
std::vector<double> ranks(const std::vector<double>& v, double& tie_term) {
  std::vector<std::size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  tie_term = 0;
  for (std::size_t i = 0; i < idx.size();) {
    std::size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    const double t = static_cast<double>(j - i + 1);
    for (std::size_t k = i; k <= j; ++k) r[idx[k]] = (static_cast<double>(i + j) / 2) + 1;
    tie_term += t * t * t - t;
    i = j + 1;
  }
  return r;
}

/// P(U ≤ u) for U of an n1-sample against an n2-sample with no ties, under H0. The count of orderings
/// with U = k satisfies f(i, j, k) = f(i−1, j, k−j) + f(i, j−1, k): the largest value is either an x
/// (it beats all j values of y) or a y. One row of i at a time.
double exact_cdf(int n1, int n2, double u) {
  const int max_u = n1 * n2;
  std::vector<std::vector<double>> prev(n2 + 1, std::vector<double>(max_u + 1, 0)), cur = prev;
  for (int j = 0; j <= n2; ++j) prev[j][0] = 1;  // i = 0: one ordering, U = 0
  for (int i = 1; i <= n1; ++i) {
    for (int j = 0; j <= n2; ++j)
      for (int k = 0; k <= max_u; ++k) cur[j][k] = (k >= j ? prev[j][k - j] : 0) + (j > 0 ? cur[j - 1][k] : 0);
    std::swap(prev, cur);
  }
  const std::vector<double>& f = prev[n2];
  const double total = std::accumulate(f.begin(), f.end(), 0.0);
  double below = 0;
  for (int k = 0; k <= max_u && k <= u + 1e-9; ++k) below += f[k];
  return std::min(1.0, below / total);
}

double normal_sf(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

}  // namespace

double mann_whitney_less(const std::vector<double>& x, const std::vector<double>& y, double* u_out) {
  const int n1 = static_cast<int>(x.size()), n2 = static_cast<int>(y.size());
  std::vector<double> all = x;
  all.insert(all.end(), y.begin(), y.end());
  double tie_term = 0;
  const std::vector<double> r = ranks(all, tie_term);
  const double r1 = std::accumulate(r.begin(), r.begin() + n1, 0.0);
  const double u1 = r1 - n1 * (n1 + 1) / 2.0;
  if (u_out) *u_out = u1;
  if (tie_term == 0 && n1 <= 50 && n2 <= 50) return exact_cdf(n1, n2, u1);
  // Normal approximation of U2 = n1·n2 − U1 for "x smaller" (SciPy's form), continuity-corrected.
  const double n = n1 + n2, mu = n1 * n2 / 2.0;
  const double s = std::sqrt(n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1))));
  if (s == 0) return 1.0;  // every value equal: no evidence either way
  const double u2 = n1 * n2 - u1;
  return normal_sf((u2 - mu - 0.5) / s);
}

std::vector<double> holm(const std::vector<double>& p) {
  std::vector<std::size_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return p[a] < p[b]; });
  std::vector<double> out(p.size());
  double running = 0;
  for (std::size_t rank = 0; rank < order.size(); ++rank) {
    running = std::max(running, std::min(1.0, static_cast<double>(p.size() - rank) * p[order[rank]]));
    out[order[rank]] = running;
  }
  return out;
}

double coefficient_of_variation(const std::vector<double>& xs) {
  if (xs.size() < 2) return 0;
  const double mean = std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
  if (mean == 0) return 0;
  double ss = 0;
  for (double x : xs) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(xs.size() - 1)) / std::abs(mean);
}

double normal_quantile(double p) {
  // A rational first guess in the centre and the tails, then Newton steps on the exact CDF (erfc).
  double x;
  if (p < 0.02425 || p > 1 - 0.02425) {
    const double q = std::sqrt(-2 * std::log(p < 0.5 ? p : 1 - p));
    x = (((((-7.784894002430293e-03 * q - 3.223964580411365e-01) * q - 2.400758277161838e+00) * q - 2.549732539343734e+00) * q +
          4.374664141464968e+00) *
             q +
         2.938163982698783e+00) /
        ((((7.784695709041462e-03 * q + 3.224671290700398e-01) * q + 2.445134137142996e+00) * q + 3.754408661907416e+00) * q + 1);
    if (p > 0.5) x = -x;
  } else {
    const double q = p - 0.5, r = q * q;
    x = (((((-3.969683028665376e+01 * r + 2.209460984245205e+02) * r - 2.759285104469687e+02) * r + 1.383577518672690e+02) * r -
          3.066479806614716e+01) *
             r +
         2.506628277459239e+00) *
        q /
        (((((-5.447609879822406e+01 * r + 1.615858368580409e+02) * r - 1.556989798598866e+02) * r + 6.680131188771972e+01) * r -
          1.328068155288572e+01) *
             r +
         1);
  }
  for (int i = 0; i < 2; ++i) {  // Newton on Φ(x) − p
    const double err = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
    x -= err * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  }
  return x;
}

int reps_needed(double cv, double floor, double alpha) {
  const double z = normal_quantile(1 - alpha) + normal_quantile(0.8);
  const double n = 2 * z * z * cv * cv / (floor * floor) / (3 / M_PI);
  return std::max(1, static_cast<int>(std::ceil(n)));
}

namespace {

/// The metric's numbers before any verdict: medians, ratio and its CI, spreads, the one-sided p.
MetricDecision measure(const MetricSample& s, const GateOptions& o) {
  MetricDecision d;
  d.name = s.name;
  d.unit = s.unit;
  d.higher_is_better = s.higher_is_better;
  d.n_a = static_cast<int>(s.a.size());
  d.n_b = static_cast<int>(s.b.size());
  d.floor = s.higher_is_better ? o.floor : o.memory_floor;
  d.cv_a = coefficient_of_variation(s.a);
  d.cv_b = coefficient_of_variation(s.b);
  if (s.a.empty() || s.b.empty()) return d;
  d.median_a = median(s.a);
  d.median_b = median(s.b);
  d.ratio = d.median_a != 0 ? d.median_b / d.median_a : 0;
  const Interval ci = bootstrap_ratio_ci(s.b, s.a);
  d.ratio_lo = ci.lo;
  d.ratio_hi = ci.hi;
  // H1 "B is worse": slower (smaller throughput) or bigger (more memory).
  d.p = s.higher_is_better ? mann_whitney_less(s.b, s.a) : mann_whitney_less(s.a, s.b);
  return d;
}

std::string pct(double x) { return fmt::format("{:.1f}%", 100 * x); }

/// The relative standard error of a median of `n` values that vary by `cv` (asymptotically
/// √(π/2)·σ/√n ≈ 1.253·σ/√n for normal noise): how well the baseline is known.
double median_rel_se(double cv, int n) { return n > 0 ? std::sqrt(M_PI / 2) * cv / std::sqrt(static_cast<double>(n)) : 0; }

/// Repetitions that bring median_rel_se(cv, n) down to `se`.
int reps_for_se(double cv, double se) { return static_cast<int>(std::ceil(M_PI / 2 * cv * cv / (se * se))); }

}  // namespace

GateDecision decide(const std::vector<MetricSample>& samples, const GateOptions& o) {
  GateDecision g;
  std::vector<double> ps;
  for (const auto& s : samples) {
    g.metrics.push_back(measure(s, o));
    ps.push_back(g.metrics.back().p);
  }
  const std::vector<double> adjusted = holm(ps);
  for (std::size_t i = 0; i < g.metrics.size(); ++i) {
    MetricDecision& d = g.metrics[i];
    d.p_holm = adjusted[i];
    const double change = d.higher_is_better ? 1 - d.ratio : d.ratio - 1;  // > 0: B is worse
    // A regression the test finds beyond the floor stands even on a noisy machine (the test used both
    // sides' spread); a noisy baseline only makes a pass untrustworthy: it could hide a regression.
    const std::string effect =
        fmt::format("B/A {:.3f} [{:.3f}, {:.3f}], p {:.2g} (Holm {:.2g})", d.ratio, d.ratio_lo, d.ratio_hi, d.p, d.p_holm);
    if (d.n_a < o.min_reps || d.n_b < o.min_reps) {
      d.verdict = "inconclusive";
      d.reps_needed = o.min_reps;
      d.reason = fmt::format("{} usable repetitions of A and {} of B; at least {} per side are needed", d.n_a, d.n_b, o.min_reps);
    } else if (d.p_holm < o.alpha && change >= d.floor) {
      d.verdict = "regression";
      d.reason = fmt::format("B is {} {} ({} ≥ the {} floor); {}", pct(change), d.higher_is_better ? "slower" : "larger",
                             pct(change), pct(d.floor), effect);
    } else if (const double se = median_rel_se(d.cv_a, d.n_a); se > d.floor / 2) {
      d.verdict = "inconclusive";
      d.reps_needed = std::max({o.min_reps, reps_needed(d.cv_a, d.floor, o.alpha), reps_for_se(d.cv_a, d.floor / 2)});
      d.reason = fmt::format(
          "the baseline's median is too uncertain to judge a {} change: ±{} (CV {} over {} repetitions) > {} (half "
          "the floor); about {} repetitions per side would do, or a quieter machine; {}",
          pct(d.floor), pct(se), pct(d.cv_a), d.n_a, pct(d.floor / 2), d.reps_needed, effect);
    } else {
      d.verdict = "pass";
      d.reason = d.p_holm < o.alpha ? fmt::format("significant but within the {} floor ({} {}); {}", pct(d.floor),
                                                  pct(std::abs(change)), change > 0 ? "worse" : "better", effect)
                 : change < 0 ? fmt::format("B is {} {}; {}", pct(-change), d.higher_is_better ? "faster" : "smaller", effect)
                              : fmt::format("no significant change (α {}); {}", o.alpha, effect);
    }
  }
  g.verdict = "pass";
  for (const auto& d : g.metrics)
    if (d.verdict == "regression") g.verdict = "regression";
    else if (d.verdict == "inconclusive" && g.verdict == "pass") g.verdict = "inconclusive";
  return g;
}

}  // namespace autotune
