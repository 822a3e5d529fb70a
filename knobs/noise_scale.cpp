#include "knobs/noise_scale.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace autotune {

NoiseTerms noise_terms(const NoiseStep& s, double b, double B) {
  if (!(b >= 1) || !(B > b))
    throw std::invalid_argument(fmt::format("noise scale needs 1 ≤ micro-batch < step batch; got b={} B={}", b, B));
  NoiseTerms t;
  t.grad_sq = (B * s.big_sq - b * s.small_sq) / (B - b);
  t.trace_sigma = (s.small_sq - s.big_sq) / (1.0 / b - 1.0 / B);
  return t;
}

namespace {

struct Fieller {
  double lo = 0, hi = std::numeric_limits<double>::infinity();
};

/// The set of θ with (S̄ − θḠ)² ≤ t²·Var(S̄ − θḠ), from the block sums' means and covariances: a bounded
/// interval when Ḡ is clearly above 0 (Ḡ² > t²·var(Ḡ)), else at best a lower bound. The noise scale
/// is ≥ 0, so the interval is clipped there.
Fieller fieller(double sbar, double gbar, double vss, double vgg, double vsg, double t, double estimate) {
  Fieller f;
  const double t2 = t * t;
  const double a = gbar * gbar - t2 * vgg;
  const double bq = sbar * gbar - t2 * vsg;
  const double c = sbar * sbar - t2 * vss;
  const double disc = bq * bq - a * c;
  if (a > 0) {
    const double r = std::sqrt(std::max(0.0, disc));
    f.lo = std::max(0.0, (bq - r) / a);
    f.hi = std::max(f.lo, (bq + r) / a);
    return f;
  }
  // Ḡ is not clearly above 0: the confidence set is unbounded above. With two real roots it is
  // (−∞, r1] ∪ [r2, ∞); a positive estimate beyond r2 gives the lower bound r2.
  if (a < 0 && disc > 0) {
    const double r = std::sqrt(disc);
    const double r1 = std::min((bq - r) / a, (bq + r) / a), r2 = std::max((bq - r) / a, (bq + r) / a);
    if (!(estimate > 0) || estimate >= r2) f.lo = std::max(0.0, r2);
    (void)r1;
  }
  return f;
}

}  // namespace

NoiseEstimate estimate_noise_scale(const std::vector<NoiseStep>& steps, double b, double B, double t, int max_blocks) {
  std::vector<NoiseTerms> terms;
  for (const auto& s : steps)
    if (std::isfinite(s.small_sq) && std::isfinite(s.big_sq)) terms.push_back(noise_terms(s, b, B));
  NoiseEstimate e;
  e.steps = static_cast<int>(terms.size());
  if (terms.empty()) return e;
  double sum_s = 0, sum_g = 0;
  for (const auto& x : terms) {
    sum_s += x.trace_sigma;
    sum_g += x.grad_sq;
  }
  const double n = static_cast<double>(terms.size());
  e.trace_sigma = sum_s / n;
  e.grad_sq = sum_g / n;
  if (sum_g > 0 && sum_s > 0) e.b_simple = sum_s / sum_g;
  // Contiguous blocks of ≥ 2 steps: consecutive steps share weights and so are correlated; blocks of
  // many steps are close to independent.
  const int m = std::min(max_blocks, e.steps / 2);
  e.blocks = m;
  if (m < 2) return e;
  std::vector<double> bs(static_cast<size_t>(m), 0.0), bg(static_cast<size_t>(m), 0.0);
  for (int j = 0; j < m; ++j) {
    const size_t from = static_cast<size_t>(j) * terms.size() / static_cast<size_t>(m);
    const size_t to = static_cast<size_t>(j + 1) * terms.size() / static_cast<size_t>(m);
    for (size_t i = from; i < to; ++i) {
      bs[static_cast<size_t>(j)] += terms[i].trace_sigma;
      bg[static_cast<size_t>(j)] += terms[i].grad_sq;
    }
  }
  const double md = static_cast<double>(m);
  double sbar = 0, gbar = 0;
  for (int j = 0; j < m; ++j) {
    sbar += bs[static_cast<size_t>(j)] / md;
    gbar += bg[static_cast<size_t>(j)] / md;
  }
  double vss = 0, vgg = 0, vsg = 0;  // covariances of the block means (sample covariance / m)
  for (int j = 0; j < m; ++j) {
    const double ds = bs[static_cast<size_t>(j)] - sbar, dg = bg[static_cast<size_t>(j)] - gbar;
    vss += ds * ds;
    vgg += dg * dg;
    vsg += ds * dg;
  }
  vss /= (md - 1) * md;
  vgg /= (md - 1) * md;
  vsg /= (md - 1) * md;
  if (e.valid()) {
    // Var(ΣS/ΣG) ≈ Var(S̄ − B̂ Ḡ) / Ḡ² (delta method for a ratio of means).
    const double r = e.b_simple;
    const double var = std::max(0.0, vss - 2 * r * vsg + r * r * vgg) / (gbar * gbar);
    e.se = std::sqrt(var);
    e.rel_se = e.se / e.b_simple;
  }
  if (t > 0) {
    const Fieller f = fieller(sbar, gbar, vss, vgg, vsg, t, e.b_simple);
    e.lo = f.lo;
    e.hi = f.hi;
  }
  return e;
}

}  // namespace autotune
