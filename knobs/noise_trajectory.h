#pragma once
// The noise scale along a run (docs/time-to-train.md, "The noise scale along the run"). The noise scale
// grows as the loss falls, so one value measured early in training understates the one that governs a
// whole run. A noise-scale trial therefore records its steps at growing sample counts; this file cuts
// them into windows of doubling length ([t, 2t], [2t, 4t], [4t, 8t] samples since the first step of
// training), estimates each window as knobs/noise_scale.h does, fits the growth log B = a + α·log(samples)
// with a prior on α, and averages the extrapolated B(samples) over the user's run the way the
// time-to-train model needs it. Pure functions, shared by the tuner (ranking, reports) and the tests.
#include <cstdint>
#include <limits>
#include <vector>

#include "knobs/noise_scale.h"

namespace autotune {

/// The fewest steps a window is estimated from. A trial with windows burns in for at least this many steps, whatever its
/// burn-in seconds, since its first window has as many steps as its burn-in (a 0.15-s burn-in on a loaded 2-core host
/// gave 3 steps, and the first window was dropped).
constexpr int kMinWindowSteps = 4;

/// One window of a noise-scale trial: its steps' estimate and the loss they trained at.
struct NoiseWindow {
  std::int64_t from_samples = 0, to_samples = 0;  ///< samples since the first step of training (burn-in included)
  NoiseEstimate estimate;                         ///< the window's ratio of sums, its standard error and interval
  double loss = 0;                                ///< mean training loss over the window's steps (0: not recorded)
  /// Where the window sits on the samples axis for the fit: the geometric middle of its span.
  double at_samples() const;
};

/// Cuts `steps` (recorded from training step `first_step` + 1 on, `B` samples each; `losses` per recorded step, may
/// be shorter or empty) into `windows` windows of doubling length: window k (k = 1 … windows) covers the samples
/// (E·2^(k−2), E·2^(k−1)] since the first step of training, E = first_window_end. Steps outside every window are
/// left out; a window with fewer than kMinWindowSteps steps is dropped. Each window's interval uses the quantile
/// `t_of_dof(blocks − 1)` (Student's t; it lives with the tuner's statistics).
std::vector<NoiseWindow> noise_windows(const std::vector<NoiseStep>& steps, const std::vector<double>& losses,
                                       std::int64_t first_step, double b, double B, std::int64_t first_window_end,
                                       int windows, double (*t_of_dof)(int));
/// The same for steps recorded at any sample counts: `ends[i]` is the samples since the first step of training once step i
/// was taken (increasing; a user's noise log that records every n-th step, tuner/pricing/noise_log.h).
std::vector<NoiseWindow> noise_windows_at(const std::vector<NoiseStep>& steps, const std::vector<double>& losses,
                                          const std::vector<std::int64_t>& ends, double b, double B, std::int64_t first_window_end,
                                          int windows, double (*t_of_dof)(int));

/// A weighted straight line through (x, y) points with a Gaussian prior on its slope: y = intercept + slope·(x − pivot).
/// Each point weighs 1/var; the intercept's prior is flat. With fewer points than it needs (or points that cannot
/// tell the slope) the slope stays near the prior.
struct GrowthFit {
  int points = 0;
  double pivot = 0;           ///< x where intercept is read (the points' weighted mean x): intercept and slope nearly independent there
  double intercept = 0, intercept_se = 0;
  double slope = 0, slope_se = 0;
  double lo = 0, hi = 0;      ///< the slope's 95% interval
  double prior_mean = 0, prior_sd = std::numeric_limits<double>::infinity();
  /// The share of the slope's precision that comes from the prior (0: the data alone; 1: the prior alone).
  double prior_share = 1;
  double chi2_per_dof = 0;    ///< misfit of the points; the errors are inflated by it when it is above 1
  bool valid() const { return points > 0; }
  double at(double x) const { return intercept + slope * (x - pivot); }
};

/// `prior_sd` = ∞: no prior (the slope needs two points with different x).
GrowthFit fit_growth(const std::vector<double>& x, const std::vector<double>& y, const std::vector<double>& var,
                     double prior_mean, double prior_sd);

/// The fit of log B̂ against log samples over the windows whose estimate is valid (each weighted by its relative
/// error squared, the variance of log B̂), with the prior `prior_exponent` ± `prior_sd` on the exponent.
GrowthFit fit_noise_growth_in_samples(const std::vector<NoiseWindow>& w, double prior_exponent, double prior_sd);
/// The same against log loss, without a prior (windows with a recorded loss only): how fast B grows as the loss falls.
GrowthFit fit_noise_growth_in_loss(const std::vector<NoiseWindow>& w);

/// The prior on the exponent in samples: B ∝ samples^0.5 (the local critical batch of a language model grows about as
/// the square root of the tokens seen; docs/time-to-train.md), with a standard deviation wide enough that three
/// windows with 25% errors move it.
inline constexpr double kGrowthPriorExponent = 0.5;
inline constexpr double kGrowthPriorSd = 0.3;

/// B(e) from a fit in log samples: exp(intercept + slope·(log e − pivot)), its exponent clamped to [0, 1] and held at
/// its value at `cap_samples` beyond it.
struct NoiseGrowthCurve {
  double log_b_at_pivot = 0, pivot = 0, exponent = 0;
  double cap_samples = std::numeric_limits<double>::infinity();
  double at(double samples) const;
};

/// The noise scale that prices a changed batch over a run of `run_samples` samples at the user's batch B0: the mean of
/// B(e) weighted by the optimizer's progress dS_min/de = 1/(B0 + B(e)) along the run — the B̄ for which the run's
/// samples are S_min·(B0 + B̄) (an empirical model's local form, integrated; docs/time-to-train.md). Numerical, on a
/// log grid from 1 sample.
double run_mean_noise_scale(const NoiseGrowthCurve& c, double B0, double run_samples);

}  // namespace autotune
