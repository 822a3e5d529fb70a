#include "tuner/pricing/noise_over_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "knobs/noise_trajectory.h"
#include "knobs/numbers.h"
#include "tuner/pricing/calibration.h"
#include "tuner/measures/statistics.h"

namespace autotune {

namespace {

/// The windows and the growth fitted through them, into n.windows / n.growth.
void fill_trajectory(NoiseScaleSummary& n, const std::vector<NoiseWindow>& windows) {
  for (const auto& w : windows) {
    NoiseWindowSummary s;
    s.from_samples = w.from_samples;
    s.to_samples = w.to_samples;
    s.steps = w.estimate.steps;
    s.value = w.estimate.b_simple > 0 ? w.estimate.b_simple : w.estimate.lo;
    s.lo = w.estimate.lo;
    s.hi = w.estimate.hi;
    s.rel_se = w.estimate.rel_se;
    s.loss = w.loss;
    n.windows.push_back(s);
  }
  const GrowthFit f = fit_noise_growth_in_samples(windows, kGrowthPriorExponent, kGrowthPriorSd);
  if (!f.valid()) return;
  NoiseGrowthSummary& g = n.growth;
  g.fitted = true;
  g.points = f.points;
  g.exponent = f.slope;
  g.lo = f.lo;
  g.hi = f.hi;
  g.prior_mean = f.prior_mean;
  g.prior_sd = f.prior_sd;
  g.prior_share = f.prior_share;
  g.log_b_at_pivot = f.intercept;
  g.pivot = f.pivot;
  g.log_b_se = f.intercept_se;
  const GrowthFit fl = fit_noise_growth_in_loss(windows);
  if (fl.valid() && fl.points >= 2) {
    g.loss_fitted = true;
    g.loss_exponent = fl.slope;
    g.loss_lo = fl.lo;
    g.loss_hi = fl.hi;
    g.loss_log_b_at_pivot = fl.intercept;
    g.loss_pivot = fl.pivot;
  }
}

/// The run's length in samples and how the report names it (n.run_basis), or 0 with n.over_run_note; `error` is set
/// for a given length shorter than the trial's own `trained` samples.
double horizon_samples(NoiseScaleSummary& n, const RunHorizon& h, double trained, const char* who, std::string& error) {
  const RunLength len = parse_run_length(h.length);
  if (len.given()) {
    const double run = run_samples(len, h.dataset_samples, h.tokens_per_sample);
    if (!(run > 0)) {
      n.over_run_note = fmt::format("--run-length {} needs the data's size, which {} did not report", describe(len), who);
      return 0;
    }
    if (run < trained) {
      error = fmt::format("--run-length {} is {} samples, shorter than the {} samples {} itself trained; "
                          "give a longer run (resume with --resume --run-length N)",
                          describe(len), with_commas(std::round(run)), with_commas(trained), who);
      return 0;
    }
    n.run_basis = len.unit == RunLength::Unit::samples
                      ? fmt::format("--run-length {}", describe(len))
                      : fmt::format("--run-length {} = {} samples", describe(len), with_commas(std::round(run)));
    return run;
  }
  if (!(h.dataset_samples > 0) && h.fallback_samples > 0) {
    n.run_basis = h.fallback_basis;
    return std::max(h.fallback_samples, trained);
  }
  if (!(h.dataset_samples > 0)) {
    n.over_run_note = "the data's size is unknown, so the run's length is (give --run-length)";
    return 0;
  }
  n.run_basis = h.dataset_samples >= trained
                    ? fmt::format("one pass over the data, {} samples (the default; --run-length sets yours)",
                                  with_commas(std::round(h.dataset_samples)))
                    : fmt::format("the {} samples {} covered: one pass over the data ({} samples, the default) is shorter "
                                  "(--run-length sets yours)",
                                  with_commas(trained), who, with_commas(std::round(h.dataset_samples)));
  return std::max(h.dataset_samples, trained);
}

/// The windows into n, then B̄ over the run from the growth fitted through them (n.value / lo / hi; the whole
/// measurement's estimate moves to trial_*). `trained`: samples the measurement itself covered; `who` names it.
std::string price_windows(NoiseScaleSummary& n, const std::vector<NoiseWindow>& windows, double trained, const RunHorizon& h,
                          std::int64_t user_batch, const char* who) {
  fill_trajectory(n, windows);
  n.measured_to = windows.empty() ? trained : static_cast<double>(windows.back().to_samples);
  std::string error;
  const double run = horizon_samples(n, h, trained, who, error);
  if (!error.empty() || !(run > 0)) return error;
  n.run_samples = run;
  if (!n.early) {
    n.over_run_note = "measured from your weights, whose training so far is unknown: the trial's value prices the run";
    return "";
  }
  if (!n.growth.fitted) {
    n.over_run_note = fmt::format("no window of {} gave an estimate: its whole value prices the run", who);
    return "";
  }
  const NoiseGrowthSummary& g = n.growth;
  n.cap_samples = kExtrapolationCap * n.measured_to;
  auto mean_over = [&](double log_b, double exponent) {
    NoiseGrowthCurve c;
    c.log_b_at_pivot = log_b;
    c.pivot = g.pivot;
    c.exponent = exponent;
    c.cap_samples = n.cap_samples;
    return run_mean_noise_scale(c, static_cast<double>(user_batch), run);
  };
  n.trial_value = n.value;
  n.trial_lo = n.lo;
  n.trial_hi = n.hi;
  const double center = mean_over(g.log_b_at_pivot, g.exponent);
  const double a = mean_over(g.log_b_at_pivot - 1.96 * g.log_b_se, g.lo);
  const double z = mean_over(g.log_b_at_pivot + 1.96 * g.log_b_se, g.hi);
  n.value = center;
  n.lo = std::min(a, z);
  n.hi = std::max(a, z);
  n.over_run = true;
  return "";
}

}  // namespace

std::string price_over_run(NoiseScaleSummary& n, const NoiseRecord& rec, const std::vector<double>& losses, const RunHorizon& h,
                           std::int64_t user_batch) {
  const double b = static_cast<double>(rec.micro_batch), B = b * rec.micro_batches;
  if (rec.windows <= 0 || rec.first_window_end <= 0 || !(B > b)) return "";  // a trial from before windows
  const auto windows =
      noise_windows(rec.steps, losses, rec.burn_in_steps, b, B, rec.first_window_end, rec.windows, t_quantile_975);
  const double trained = static_cast<double>(rec.burn_in_steps + static_cast<std::int64_t>(rec.steps.size())) * B;
  return price_windows(n, windows, trained, h, user_batch, "the noise-scale trial");
}

std::string price_noise_scale(NoiseScaleSummary& n, const NoiseRecord& rec, const std::vector<double>& losses, const RunHorizon& h,
                              std::int64_t user_batch, const RunIdentity& id) {
  const std::string error = price_over_run(n, rec, losses, h, user_batch);
  if (error.empty()) apply_calibration(n, user_batch, id);
  return error;
}

LogWindows log_windows(const NoiseLog& log) {
  LogWindows w;
  if (log.samples.empty()) return w;
  const double B = static_cast<double>(log.step_batch());
  const double last = static_cast<double>(log.samples.back());
  const double start = std::max(B, static_cast<double>(log.samples.front()) - B);  // samples before the first logged step
  // Window 1 is (E/2, E] with E/2 ≥ start: every window lies inside what the log covers.
  int n = 1 + static_cast<int>(std::floor(std::log2(std::max(1.0, last / (2 * start)))));
  n = std::max(1, std::min(kNoiseLogMaxWindows, n));
  w.windows = n;
  w.first_window_end = static_cast<std::int64_t>(std::ceil(last / std::ldexp(1.0, n - 1)));
  return w;
}
namespace {

/// The whole measurement's estimate into n (n.micro_batch and n.step_batch set): the ratio of sums, its interval
/// (Student's t over its blocks); a lower bound alone stands for the value when |G|² is lost in the noise.
void fill_estimate(NoiseScaleSummary& n, const std::vector<NoiseStep>& steps, const char* who) {
  const double b = static_cast<double>(n.micro_batch), B = static_cast<double>(n.step_batch);
  const NoiseEstimate first = estimate_noise_scale(steps, b, B);
  const NoiseEstimate e = estimate_noise_scale(steps, b, B, t_quantile_975(first.blocks - 1));
  n.steps = e.steps;
  n.blocks = e.blocks;
  n.value = e.valid() ? e.b_simple : e.lo;
  n.lo = e.lo;
  n.hi = e.hi;
  n.rel_se = e.rel_se;
  n.measured = e.valid() || e.lo > 0;
  if (!n.measured) n.why_not = fmt::format("{}'s {} steps gave no estimate (the gradient was lost in the noise)", who, e.steps);
}

}  // namespace

NoiseScaleSummary summarize_noise_trial(const TrialRecord& r) {
  NoiseScaleSummary n;
  n.trial_id = r.id;
  n.data = r.result.data.source;
  if (!r.result.noise || r.result.status != TrialStatus::ok) {
    n.why_not = r.result.status == TrialStatus::ok ? "the noise-scale trial recorded no steps"
                                                   : fmt::format("the noise-scale trial failed ({}: {})", to_string(r.result.status),
                                                                 r.result.message);
    return n;
  }
  const NoiseRecord& rec = *r.result.noise;
  n.micro_batch = rec.micro_batch;
  n.step_batch = rec.micro_batch * rec.micro_batches;
  n.stopped = rec.stopped;
  n.seconds = rec.seconds;
  n.weights = rec.weights;
  n.burn_in_seconds = rec.burn_in_seconds;
  n.burn_in_steps = rec.burn_in_steps;
  n.early = rec.weights == "random init";
  n.loss_first = rec.loss_first;
  n.loss_last = rec.loss_last;
  const double b = static_cast<double>(n.micro_batch), B = static_cast<double>(n.step_batch);
  if (!(B > b) || b < 1) {
    n.why_not = "the noise-scale trial had one micro-batch per step";
    return n;
  }
  fill_estimate(n, rec.steps, "the noise-scale trial");
  return n;
}

NoiseScaleSummary summarize_noise_log(const NoiseLog& log) {
  NoiseScaleSummary n;
  n.log = log.describe();
  n.data = log.data;
  n.micro_batch = log.micro_batch;
  n.step_batch = log.step_batch();
  n.stopped = "log";
  n.weights = "your training loop";
  n.early = true;  // its samples count from the first step of training, whatever the weights then were
  fill_estimate(n, log.steps, "the noise log");
  double first_loss = 0, last_loss = 0;
  for (double l : log.losses)
    if (std::isfinite(l)) {
      if (first_loss == 0) first_loss = l;
      last_loss = l;
    }
  n.loss_first = first_loss;
  n.loss_last = last_loss;
  return n;
}

std::string price_from_log(NoiseScaleSummary& n, const NoiseLog& log, const RunHorizon& h, std::int64_t user_batch,
                           const RunIdentity& id) {
  n = summarize_noise_log(log);
  if (!n.measured) return "";
  const LogWindows lw = log_windows(log);
  const double b = static_cast<double>(n.micro_batch), B = static_cast<double>(n.step_batch);
  const auto windows = noise_windows_at(log.steps, log.losses, log.samples, b, B, lw.first_window_end, lw.windows, t_quantile_975);
  RunHorizon span = h;  // without the data's size, the log's own span is the run
  span.fallback_samples = static_cast<double>(log.samples.back());
  span.fallback_basis = fmt::format("your noise log's span, {} samples (the default when the data's size is unknown; "
                                    "--run-length sets yours)",
                                    with_commas(span.fallback_samples));
  const std::string error = price_windows(n, windows, span.fallback_samples, span, user_batch, "the noise log");
  if (error.empty()) apply_calibration(n, user_batch, id);
  return error;
}

}  // namespace autotune
