#include "reports/noise_facts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "knobs/noise_trajectory.h"
#include "knobs/numbers.h"
#include "reports/markdown.h"

namespace autotune {

namespace {


std::string interval(double lo, double hi) { return fmt::format("{}–{}", samples_text(lo), samples_text(hi)); }

/// "B_simple 31 at 2,048 samples (loss 2.71) → 44 at … → 70 at …".
std::string windows_walk(const NoiseScaleSummary& n) {
  std::string out;
  for (const auto& w : n.windows) {
    if (!out.empty()) out += " → ";
    out += fmt::format("{} at {}–{} samples{}", samples_text(w.value), with_commas(static_cast<double>(w.from_samples)),
                       with_commas(static_cast<double>(w.to_samples)), w.loss > 0 ? fmt::format(" (loss {:.3g})", w.loss) : "");
  }
  return out;
}

std::string growth_words(const NoiseGrowthSummary& g) {
  std::string t = fmt::format("it grows as samples^{:.2f} (95% {:.2f} to {:.2f}", g.exponent, g.lo, g.hi);
  if (g.prior_share > 0.5)
    t += fmt::format(", mostly the prior {:.1f} ± {:.1f}: the windows could not tell the growth", g.prior_mean, g.prior_sd);
  else if (g.prior_share > 0.1)
    t += fmt::format(", the prior {:.1f} ± {:.1f} weighing {:.0f}%", g.prior_mean, g.prior_sd, 100 * g.prior_share);
  t += ")";
  if (g.loss_fitted) t += fmt::format(" and as loss^{:.1f} (95% {:.1f} to {:.1f})", g.loss_exponent, g.loss_lo, g.loss_hi);
  return t;
}

/// " The run reaches 12× the samples … extrapolated …" or " The run lies within …": what of B̄ is extrapolated.
std::string extrapolation_words(const NoiseScaleSummary& n, const char* who) {
  if (!(n.run_samples > n.measured_to * 1.01))
    return fmt::format(" The run lies within the samples {} measured: nothing is extrapolated.", who);
  return fmt::format(" The run reaches {:.0f}× the samples {} measured ({}): beyond them B is extrapolated{}.",
                     n.run_samples / n.measured_to, who, with_commas(n.measured_to),
                     n.run_samples > n.cap_samples
                         ? fmt::format(", up to {} samples ({:.0f}× the measured) and held there — the noise scale levels "
                                       "off late in training, and one decade of samples cannot say when",
                                       with_commas(n.cap_samples), n.cap_samples / n.measured_to)
                         : "");
}

/// The noise scale from the user's own loop (tuner/pricing/noise_log.h).
std::string log_text(const NoiseScaleSummary& n, const std::string& meaning) {
  const std::string whole = fmt::format("{} (95% {}, relative standard error {:.0f}%)", samples_text(n.over_run ? n.trial_value : n.value),
                                        n.over_run ? interval(n.trial_lo, n.trial_hi) : interval(n.lo, n.hi), 100 * n.rel_se);
  const std::string loss =
      n.loss_first > 0 ? fmt::format(", loss {:.3g} → {:.3g}", n.loss_first, n.loss_last) : "";
  if (!n.over_run)
    return fmt::format("Gradient noise scale: B_simple = {}, logged in your own training loop ({}{}{}){}. {}", whole, n.log, loss,
                       n.data.empty() ? "" : ", on " + n.data,
                       n.over_run_note.empty() ? "" : "; " + n.over_run_note, meaning);
  std::string t = fmt::format(
      "Gradient noise scale over your run: B̄ = {} samples (the band the log cannot rule out: {}), the mean of B_simple along a "
      "run of {}, weighted by the optimizer's progress. Logged in your own training loop ({}{}{}), in {} windows: B_simple {}; "
      "{}; the log as a whole measured {}.",
      samples_text(n.value), interval(n.lo, n.hi), n.run_basis, n.log, loss, n.data.empty() ? "" : ", on " + n.data, n.windows.size(),
      windows_walk(n), growth_words(n.growth), whole);
  return t + extrapolation_words(n, "the log") + " " + meaning;
}

}  // namespace

std::string noise_scale_text(const NoiseScaleSummary& n) {
  if (!n.measured) return "";
  if (n.calibrated) {  // the converge runs' value prices; this run's own measurement follows as it was
    NoiseScaleSummary own = n;
    own.calibrated = false;
    own.value = n.own_value;
    own.lo = n.own_lo;
    own.hi = n.own_hi;
    return fmt::format("Gradient noise scale: B̄ = {} samples, calibrated by training ({}); its band is the arms' range, {}. "
                       "This run's own measurement, which it replaces: {}",
                       samples_text(n.value), n.calibration_basis, interval(n.lo, n.hi), noise_scale_text(own));
  }
  if (!n.calibration_refused.empty()) {
    NoiseScaleSummary own = n;
    own.calibration_refused.clear();
    return noise_scale_text(own) + " (" + n.calibration_refused + ".)";
  }
  if (n.stopped == "given")
    return fmt::format("Gradient noise scale: B̄ = {} samples, given (--noise-scale), not measured in this run.", samples_text(n.value));
  const std::string how = fmt::format("{} steps of {} micro-batches of {} on {} ({}; {:.0f} s)", n.steps,
                                      n.micro_batch > 0 ? n.step_batch / n.micro_batch : 0, n.micro_batch,
                                      n.data.empty() ? "synthetic data" : n.data,
                                      n.stopped == "target"    ? "stopped at its target error"
                                      : n.stopped == "windows" ? "its windows complete"
                                                               : "stopped at its " + n.stopped,
                                      n.seconds);
  const std::string meaning =
      "Batches well below it use each sample almost fully; above it, doubling the batch nearly doubles the samples needed "
      "for the same loss (McCandlish et al. 2018).";
  if (!n.log.empty()) return log_text(n, meaning);
  if (n.over_run) {
    std::string t = fmt::format(
        "Gradient noise scale over your run: B̄ = {} samples (the band the measurement cannot rule out: {}), the mean of "
        "B_simple along a run of {}, weighted by the optimizer's progress. Measured from random weights after {:.0f} s ({} "
        "steps) of training, in {} windows of the noise-scale trial ({}): B_simple {}; {}.",
        samples_text(n.value), interval(n.lo, n.hi), n.run_basis, n.burn_in_seconds, n.burn_in_steps, n.windows.size(), how,
        windows_walk(n), growth_words(n.growth));
    t += extrapolation_words(n, "the trial");
    t += fmt::format(" The trial as a whole measured {} ({}). {}", samples_text(n.trial_value), interval(n.trial_lo, n.trial_hi), meaning);
    return t;
  }
  std::string t = fmt::format(
      "Gradient noise scale: B_simple = {} samples, 95% interval {} (relative standard error {:.0f}%), from {}, {}. {}",
      samples_text(n.value), n.bounded() ? interval(n.lo, n.hi) : samples_text(n.lo) + "–∞ (a lower bound only)", 100 * n.rel_se, how,
      n.early ? fmt::format("measured in early training from random weights{}: it grows as the loss falls "
                            "(often 10–100× over a run), which favours small batches; measure it from a checkpoint (--init-from) "
                            "for later training",
                            n.burn_in_steps > 0 ? fmt::format(" after {:.0f} s ({} steps) of training, at loss {:.3g} → {:.3g}",
                                                              n.burn_in_seconds, n.burn_in_steps, n.loss_first, n.loss_last)
                                                : "")
              : "measured from your weights (" + n.weights + ")",
      meaning);
  if (!n.windows.empty())
    t += fmt::format(" Along the trial: B_simple {}{}. {}.", windows_walk(n), n.growth.fitted ? "; " + growth_words(n.growth) : "",
                     n.over_run_note.empty() ? "The trial's value prices the run" : n.over_run_note);
  return t;
}

std::vector<NoiseWindowRow> noise_window_rows(const NoiseScaleSummary& n) {
  std::vector<NoiseWindowRow> rows;
  for (const auto& w : n.windows)
    rows.push_back({fmt::format("{}–{}", with_commas(static_cast<double>(w.from_samples)), with_commas(static_cast<double>(w.to_samples))),
                    std::to_string(w.steps), fmt::format("{} [{}]", samples_text(w.value), interval(w.lo, w.hi)),
                    w.loss > 0 ? fmt::format("{:.4g}", w.loss) : "—"});
  return rows;
}

std::vector<std::pair<double, double>> noise_fit_points(const NoiseScaleSummary& n) {
  std::vector<std::pair<double, double>> out;
  if (!n.growth.fitted || n.windows.empty()) return out;
  NoiseGrowthCurve c;
  c.log_b_at_pivot = n.growth.log_b_at_pivot;
  c.pivot = n.growth.pivot;
  c.exponent = n.growth.exponent;
  if (n.over_run) c.cap_samples = n.cap_samples;
  const double from = std::max(1.0, static_cast<double>(n.windows.front().from_samples));
  const double to = std::max({n.run_samples, n.measured_to, from * 2});
  const int points = 40;
  for (int i = 0; i <= points; ++i) {
    const double e = from * std::pow(to / from, static_cast<double>(i) / points);
    out.emplace_back(e, c.at(e));
  }
  return out;
}

std::vector<std::pair<double, double>> noise_loss_fit_points(const NoiseScaleSummary& n) {
  std::vector<std::pair<double, double>> out;
  if (!n.growth.loss_fitted) return out;
  double lo = INFINITY, hi = 0;
  for (const auto& w : n.windows)
    if (w.loss > 0) {
      lo = std::min(lo, w.loss);
      hi = std::max(hi, w.loss);
    }
  if (!(hi > lo)) return out;
  const NoiseGrowthSummary& g = n.growth;
  for (int i = 0; i <= 10; ++i) {
    const double l = lo * std::pow(hi / lo, i / 10.0);
    out.emplace_back(l, std::exp(g.loss_log_b_at_pivot + g.loss_exponent * (std::log(l) - g.loss_pivot)));
  }
  return out;
}

}  // namespace autotune
