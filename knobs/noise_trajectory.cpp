#include "knobs/noise_trajectory.h"

#include <algorithm>
#include <cmath>

namespace autotune {

double NoiseWindow::at_samples() const {
  return std::sqrt(static_cast<double>(std::max<std::int64_t>(1, from_samples)) * static_cast<double>(to_samples));
}

std::vector<NoiseWindow> noise_windows(const std::vector<NoiseStep>& steps, const std::vector<double>& losses,
                                       std::int64_t first_step, double b, double B, std::int64_t first_window_end,
                                       int windows, double (*t_of_dof)(int)) {
  const auto step_batch = static_cast<std::int64_t>(std::llround(B));
  std::vector<std::int64_t> ends(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) ends[i] = (first_step + static_cast<std::int64_t>(i) + 1) * step_batch;
  return noise_windows_at(steps, losses, ends, b, B, first_window_end, windows, t_of_dof);
}

std::vector<NoiseWindow> noise_windows_at(const std::vector<NoiseStep>& steps, const std::vector<double>& losses,
                                          const std::vector<std::int64_t>& ends, double b, double B, std::int64_t first_window_end,
                                          int windows, double (*t_of_dof)(int)) {
  std::vector<NoiseWindow> out;
  if (first_window_end <= 0 || windows <= 0 || !(B > b)) return out;
  for (int k = 1; k <= windows; ++k) {
    NoiseWindow w;
    w.from_samples = k == 1 ? first_window_end / 2 : first_window_end << (k - 2);
    w.to_samples = first_window_end << (k - 1);
    std::vector<NoiseStep> in;
    double loss_sum = 0;
    int loss_n = 0;
    std::int64_t last_end = 0;
    for (size_t i = 0; i < steps.size() && i < ends.size(); ++i) {
      const std::int64_t end = ends[i];  // samples after this step
      if (end <= w.from_samples || end > w.to_samples) continue;
      in.push_back(steps[i]);
      last_end = end;
      if (i < losses.size() && std::isfinite(losses[i])) {
        loss_sum += losses[i];
        ++loss_n;
      }
    }
    if (in.size() < static_cast<size_t>(kMinWindowSteps)) continue;
    w.to_samples = last_end;  // a trial stopped by its time ends its last window early: the window spans what it measured
    const NoiseEstimate first = estimate_noise_scale(in, b, B);
    w.estimate = estimate_noise_scale(in, b, B, t_of_dof ? t_of_dof(first.blocks - 1) : 0);
    w.loss = loss_n > 0 ? loss_sum / loss_n : 0;
    out.push_back(w);
  }
  return out;
}

GrowthFit fit_growth(const std::vector<double>& x, const std::vector<double>& y, const std::vector<double>& var,
                     double prior_mean, double prior_sd) {
  GrowthFit f;
  f.prior_mean = prior_mean;
  f.prior_sd = prior_sd;
  // Weighted sums over the usable points.
  double sw = 0, swx = 0, swy = 0;
  std::vector<size_t> use;
  for (size_t i = 0; i < x.size() && i < y.size() && i < var.size(); ++i)
    if (std::isfinite(x[i]) && std::isfinite(y[i]) && var[i] > 0 && std::isfinite(var[i])) {
      use.push_back(i);
      sw += 1 / var[i];
      swx += x[i] / var[i];
      swy += y[i] / var[i];
    }
  f.points = static_cast<int>(use.size());
  const bool has_prior = std::isfinite(prior_sd) && prior_sd > 0;
  if (use.empty()) {
    f.points = 0;
    return f;
  }
  f.pivot = swx / sw;
  const double ybar = swy / sw;
  double sxx = 0, sxy = 0;  // centred at the pivot: the intercept's and slope's equations decouple
  for (size_t i : use) {
    sxx += (x[i] - f.pivot) * (x[i] - f.pivot) / var[i];
    sxy += (x[i] - f.pivot) * (y[i] - ybar) / var[i];
  }
  const double prior_prec = has_prior ? 1 / (prior_sd * prior_sd) : 0;
  const double prec = sxx + prior_prec;
  if (!(prec > 0)) {  // no prior and no spread in x: the slope is unknown
    f.points = 0;
    return f;
  }
  f.slope = (sxy + prior_prec * prior_mean) / prec;
  f.intercept = ybar;
  f.prior_share = prior_prec / prec;
  // Misfit: the points' scatter about the line against their stated errors. Each window's error comes from 16 blocks
  // of its own steps and misses whatever moves between windows beyond a straight line; inflate by it when above 1.
  double chi2 = 0;
  for (size_t i : use) {
    const double r = y[i] - f.at(x[i]);
    chi2 += r * r / var[i];
  }
  const int dof = f.points - 2;
  f.chi2_per_dof = dof > 0 ? chi2 / dof : 0;
  const double inflate = std::max(1.0, f.chi2_per_dof);
  f.slope_se = std::sqrt(inflate / prec);
  f.intercept_se = std::sqrt(inflate / sw);
  f.lo = f.slope - 1.96 * f.slope_se;
  f.hi = f.slope + 1.96 * f.slope_se;
  return f;
}

namespace {

/// The variance of log B̂ of a window: its relative standard error squared (delta method), or none when it has no
/// finite one.
double log_var(const NoiseWindow& w) {
  return w.estimate.valid() && std::isfinite(w.estimate.rel_se) && w.estimate.rel_se > 0 ? w.estimate.rel_se * w.estimate.rel_se : 0;
}

}  // namespace

GrowthFit fit_noise_growth_in_samples(const std::vector<NoiseWindow>& w, double prior_exponent, double prior_sd) {
  std::vector<double> x, y, v;
  for (const auto& win : w)
    if (log_var(win) > 0) {
      x.push_back(std::log(win.at_samples()));
      y.push_back(std::log(win.estimate.b_simple));
      v.push_back(log_var(win));
    }
  return fit_growth(x, y, v, prior_exponent, prior_sd);
}

GrowthFit fit_noise_growth_in_loss(const std::vector<NoiseWindow>& w) {
  std::vector<double> x, y, v;
  for (const auto& win : w)
    if (log_var(win) > 0 && win.loss > 0) {
      x.push_back(std::log(win.loss));
      y.push_back(std::log(win.estimate.b_simple));
      v.push_back(log_var(win));
    }
  return fit_growth(x, y, v, 0, std::numeric_limits<double>::infinity());
}

double NoiseGrowthCurve::at(double samples) const {
  const double e = std::min(std::max(samples, 1.0), cap_samples);
  const double a = std::clamp(exponent, 0.0, 1.0);
  return std::exp(log_b_at_pivot + a * (std::log(e) - pivot));
}

double run_mean_noise_scale(const NoiseGrowthCurve& c, double B0, double run_samples) {
  if (!(run_samples > 1)) return c.at(std::max(1.0, run_samples));
  // ∫ B/(B0+B) de ÷ ∫ 1/(B0+B) de on a log grid (e = exp(u), de = e du): the curve is a power law, smooth in log e.
  const int n = 2000;
  const double u_hi = std::log(run_samples);
  const double du = u_hi / n;
  double num = 0, den = 0;
  for (int i = 0; i <= n; ++i) {
    const double u = i * du, e = std::exp(u), bn = c.at(e);
    const double wgt = (i == 0 || i == n ? 0.5 : 1.0) * e / (B0 + bn);
    num += wgt * bn;
    den += wgt;
  }
  return den > 0 ? num / den : c.at(run_samples);
}

}  // namespace autotune
