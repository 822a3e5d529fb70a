#include "tuner/pricing/lr_sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "knobs/numbers.h"
#include "reports/lr_sweep_report.h"

namespace autotune {

namespace {

/// The mean of `v` (not empty) and its range: an arm's loss over its data orders.
struct MeanRange {
  double mean = 0, lo = 0, hi = 0;
};

MeanRange mean_range(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return {sum / static_cast<double>(v.size()), *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())};
}

/// A run's status and its smoothed loss at the horizon (NaN unless "ok").
std::pair<std::string, double> judge_run(const LrRun& r, double start_loss, std::int64_t horizon, std::int64_t window,
                                         const LrSweepRule& rule) {
  for (const CurvePoint& p : r.curve) {
    if (p.samples > horizon) break;
    if (!std::isfinite(p.loss)) return {"non_finite", std::nan("")};
  }
  if (r.curve.empty() || r.curve.back().samples < horizon) return {"short", std::nan("")};
  const double l = loss_at_samples(r.curve, horizon, window);
  if (!std::isfinite(l)) return {"non_finite", l};
  if (std::isfinite(start_loss) && l > start_loss * rule.diverged_ratio) return {"diverged", l};
  return {"ok", l};
}

/// The worse of two statuses: a non-finite loss over divergence over a run cut short over ok.
std::string worse(const std::string& a, const std::string& b) {
  static const std::map<std::string, int> rank = {{"ok", 0}, {"short", 1}, {"diverged", 2}, {"non_finite", 3}};
  return rank.at(b) > rank.at(a) ? b : a;
}

const LrArm* arm_at(const std::vector<LrArm>& arms, double multiple) {
  for (const LrArm& a : arms)
    if (same_lr_multiple(a.multiple, multiple)) return &a;
  return nullptr;
}

const LrArm* best_ok(const std::vector<LrArm>& arms) {
  const LrArm* best = nullptr;
  for (const LrArm& a : arms)
    if (a.ok() && (!best || a.loss < best->loss)) best = &a;
  return best;
}

const LrRun* run_of(const std::vector<LrRun>& runs, double multiple, std::int64_t order) {
  for (const LrRun& r : runs)
    if (same_lr_multiple(r.multiple, multiple) && r.data_order == order) return &r;
  return nullptr;
}

/// The per-order time ratios to the user's loss, the user's run's over the best's, counted in samples: every arm trains
/// one config, so at one speed, and its samples to the loss are its time without the host's speed changing between runs
/// (a rate that needs half the samples needs half the time). The order where the best did not reach it, when one did not.
struct Gains {
  std::vector<double> ratios;
  std::int64_t unreached_order = -1;
};

Gains gains_to_users_loss(const std::vector<LrRun>& runs, double best, std::int64_t horizon, std::int64_t window) {
  Gains g;
  for (const LrRun& u : runs) {
    if (!same_lr_multiple(u.multiple, 1)) continue;
    const LrRun* b = run_of(runs, best, u.data_order);
    if (!b) continue;
    const double target = loss_at_samples(u.curve, horizon, window);
    const Reached tu = time_to_target(u.curve, target, window), tb = time_to_target(b->curve, target, window);
    if (!tb.reached() || !tu.reached() || tb.samples <= 0) {
      g.unreached_order = u.data_order;
      return g;
    }
    g.ratios.push_back(static_cast<double>(tu.samples) / static_cast<double>(tb.samples));
  }
  return g;
}

}  // namespace

LrHorizon plan_lr_horizon(double run_samples, std::int64_t smooth_samples, const LrSweepRule& rule, const std::string& centre) {
  LrHorizon h;
  const std::int64_t window = std::max<std::int64_t>(smooth_samples, 1), floor_samples = rule.min_horizon_windows * window;
  if (!(run_samples > 0)) {
    h.burn_in_samples = 2 * window;
    h.horizon_samples = floor_samples;
    if (rule.from_start) {
      h.horizon_samples += h.burn_in_samples;
      h.burn_in_samples = 0;
      h.why = fmt::format("no run length given: every rate from your run's start for {} smoothing windows ({} samples); its "
                          "share of your run is unknown (--run-length says it)",
                          rule.min_horizon_windows + 2, with_commas(static_cast<double>(h.horizon_samples)));
      return h;
    }
    h.why = fmt::format(
        "no run length given: burn-in 2 smoothing windows ({} samples) at {}, then {} windows ({} samples) at each "
        "rate; its share of your run is unknown (--run-length says it)",
        with_commas(static_cast<double>(h.burn_in_samples)), centre, rule.min_horizon_windows,
        with_commas(static_cast<double>(h.horizon_samples)));
    return h;
  }
  h.burn_in_samples = std::llround(rule.burn_in_share * run_samples);
  const std::int64_t share = std::llround(rule.horizon_share * run_samples);
  h.horizon_samples = std::max(share, floor_samples);
  if (rule.from_start) {
    const std::int64_t both = h.burn_in_samples + share;
    h.horizon_samples += h.burn_in_samples;
    h.burn_in_samples = 0;
    h.why = fmt::format("every rate from your run's start for {:g}% of the run ({} samples)",
                        100 * (rule.burn_in_share + rule.horizon_share), with_commas(static_cast<double>(both)));
    if (h.horizon_samples > both)
      h.why += fmt::format(", raised to {} samples: the first {:g}%, then {} smoothing windows", with_commas(static_cast<double>(h.horizon_samples)),
                           100 * rule.burn_in_share, rule.min_horizon_windows);
    return h;
  }
  h.why = fmt::format("burn-in {:g}% of the run ({} samples) at {}, then {:g}% of it ({} samples) at each rate",
                      100 * rule.burn_in_share, with_commas(static_cast<double>(h.burn_in_samples)), centre, 100 * rule.horizon_share,
                      with_commas(static_cast<double>(share)));
  if (h.horizon_samples > share)
    h.why += fmt::format(", raised to {} smoothing windows ({} samples)", rule.min_horizon_windows,
                         with_commas(static_cast<double>(h.horizon_samples)));
  return h;
}

double lr_sweep_seconds(const LrHorizon& h, const LrSweepRule& rule, int orders, double samples_per_s, double start_seconds) {
  const double arms = static_cast<double>(rule.start_multiples.size()) * std::max(orders, 1);
  const double samples = static_cast<double>(h.burn_in_samples) + arms * static_cast<double>(h.horizon_samples);
  const double runs = arms + (h.burn_in_samples > 0 ? 1 : 0);
  return runs * std::max(start_seconds, 0.0) + (samples_per_s > 0 ? samples / samples_per_s : 0.0);
}

std::vector<LrArm> judge_lr_arms(const std::vector<LrRun>& runs, double start_loss, std::int64_t horizon, std::int64_t window,
                                 const LrSweepRule& rule) {
  std::vector<LrArm> arms;
  std::vector<std::vector<double>> losses;
  for (const LrRun& r : runs) {
    auto it = std::find_if(arms.begin(), arms.end(), [&](const LrArm& a) { return same_lr_multiple(a.multiple, r.multiple); });
    if (it == arms.end()) {
      arms.push_back({r.multiple, 0, "ok"});
      losses.emplace_back();
      it = arms.end() - 1;
    }
    const auto [status, loss] = judge_run(r, start_loss, horizon, window, rule);
    it->orders += 1;
    it->status = worse(it->status, status);
    if (status == "ok") losses[static_cast<std::size_t>(it - arms.begin())].push_back(loss);
  }
  for (std::size_t i = 0; i < arms.size(); ++i) {
    if (!arms[i].ok() || losses[i].empty()) continue;
    const MeanRange m = mean_range(losses[i]);
    arms[i].loss = m.mean;
    arms[i].loss_lo = m.lo;
    arms[i].loss_hi = m.hi;
  }
  std::sort(arms.begin(), arms.end(), [](const LrArm& a, const LrArm& b) { return a.multiple < b.multiple; });
  return arms;
}

std::vector<double> next_lr_multiples(const std::vector<LrArm>& arms, const LrSweepRule& rule) {
  if (arms.empty()) return rule.start_multiples;
  const double start_hi = *std::max_element(rule.start_multiples.begin(), rule.start_multiples.end());
  const double start_lo = *std::min_element(rule.start_multiples.begin(), rule.start_multiples.end());
  const double lo = arms.front().multiple, hi = arms.back().multiple;  // judge_lr_arms orders them
  int up = 0, down = 0;
  for (const LrArm& a : arms) {
    up += a.multiple > start_hi && !same_lr_multiple(a.multiple, start_hi);
    down += a.multiple < start_lo && !same_lr_multiple(a.multiple, start_lo);
  }
  const LrArm* best = best_ok(arms);
  if (!best) {  // every rate failed: lower while the lowest diverged (a run cut short says nothing of its rate)
    const bool lowest_blew_up = arms.front().status == "diverged" || arms.front().status == "non_finite";
    return lowest_blew_up && down < rule.max_widenings ? std::vector<double>{lo / rule.widen_factor} : std::vector<double>{};
  }
  if (same_lr_multiple(best->multiple, hi) && up < rule.max_widenings) return {hi * rule.widen_factor};
  if (same_lr_multiple(best->multiple, lo) && down < rule.max_widenings) return {lo / rule.widen_factor};
  return {};
}

LrVerdict judge_lr_sweep(const std::vector<LrArm>& arms, const std::vector<LrRun>& runs, std::int64_t horizon,
                         std::int64_t window,
                         const std::string& centre) {
  LrVerdict v;
  const LrArm* best = best_ok(arms);
  if (!best) {
    std::string what;
    for (const LrArm& a : arms) what += (what.empty() ? "" : ", ") + lr_multiple_text(a.multiple) + " " + a.status;
    v.verdict = "no rate trained";
    v.reason = "no rate reached the horizon with a finite loss below the divergence limit (" + what + ")";
    return v;
  }
  v.best_multiple = best->multiple;
  v.best_at_end = !arms.empty() &&
                  (same_lr_multiple(best->multiple, arms.front().multiple) || same_lr_multiple(best->multiple, arms.back().multiple));
  const LrArm* user = arm_at(arms, 1);
  if (!user || user->status == "short") {
    v.verdict = "not judged";
    v.reason = user ? centre + "'s run ended before the horizon" : centre + " (×1) was not trained";
    return v;
  }
  if (!user->ok()) {  // the user's rate blew up and a lower one trained
    v.verdict = best->multiple < 1 ? "too high" : "too low";
    v.gain = v.gain_lo = v.gain_hi = 0;
    v.reason = fmt::format("{}'s loss was {} by the horizon; {} reached {:.4g} (no time ratio: it never got there)", centre,
                           user->status == "diverged" ? "diverging" : "not finite", lr_multiple_text(best->multiple), best->loss);
    return v;
  }
  const double spread = (user->loss_hi - user->loss_lo) / 2 + (best->loss_hi - best->loss_lo) / 2;
  if (best == user || user->loss - best->loss <= spread) {
    v.verdict = "about right";
    v.reason = best == user ? fmt::format("{} reached the lowest loss at the horizon ({:.4g})", centre, user->loss)
                            : fmt::format("{} reached {:.4g} against {}'s {:.4g}, within the run-to-run spread (±{:.2g})",
                                          lr_multiple_text(best->multiple), best->loss, centre, user->loss, spread);
    return v;
  }
  const Gains g = gains_to_users_loss(runs, best->multiple, horizon, window);
  if (g.unreached_order >= 0 || g.ratios.empty()) {
    v.verdict = "about right";
    v.reason = g.ratios.empty() && g.unreached_order < 0
                   ? fmt::format("{} and {} never trained on the same data order", lr_multiple_text(best->multiple), centre)
                   : fmt::format("{} reached a lower mean loss ({:.4g} vs {:.4g}) but not {}'s loss on data order {}",
                                 lr_multiple_text(best->multiple), best->loss, user->loss, centre, g.unreached_order);
    return v;
  }
  v.verdict = best->multiple > 1 ? "too low" : "too high";
  double sum = 0;
  for (double r : g.ratios) sum += r;
  v.gain = sum / static_cast<double>(g.ratios.size());
  v.gain_lo = *std::min_element(g.ratios.begin(), g.ratios.end());
  v.gain_hi = *std::max_element(g.ratios.begin(), g.ratios.end());
  v.reason = fmt::format(
      "{} reached {:.4g} at the horizon against {}'s {:.4g} (run-to-run spread ±{:.2g}), and reached "
      "that loss {:.2f}× sooner ({} data order{})",
      lr_multiple_text(best->multiple), best->loss, centre, user->loss, spread, v.gain, g.ratios.size(), g.ratios.size() == 1 ? "" : "s");
  for (const std::int64_t at : {horizon / 3, 2 * horizon / 3}) {
    const Gains d = gains_to_users_loss(runs, best->multiple, at, window);
    if (d.unreached_order < 0 && !d.ratios.empty())
      v.by_depth.push_back({at, std::accumulate(d.ratios.begin(), d.ratios.end(), 0.0) / static_cast<double>(d.ratios.size())});
  }
  v.by_depth.push_back({horizon, v.gain});
  return v;
}

LrHeldOut judge_lr_held_out(const std::vector<LrArm>& arms, const std::vector<LrRun>& runs, const LrVerdict& verdict,
                            std::int64_t horizon, const std::string& source, std::int64_t samples, const std::string& centre) {
  LrHeldOut h;
  for (const LrArm& a : arms) {
    if (!a.ok()) continue;
    std::vector<double> at;
    for (const LrRun& r : runs) {
      if (!same_lr_multiple(r.multiple, a.multiple) || r.held_out.empty()) continue;
      const auto it = std::find_if(r.held_out.begin(), r.held_out.end(), [&](const CurvePoint& p) { return p.samples >= horizon; });
      const double loss = (it == r.held_out.end() ? r.held_out.back() : *it).loss;
      if (std::isfinite(loss)) at.push_back(loss);
      if (h.start_loss == 0 && r.held_out.front().samples == 0) h.start_loss = r.held_out.front().loss;
    }
    if (at.empty()) continue;
    const MeanRange m = mean_range(at);
    h.arms.push_back({a.multiple, static_cast<int>(at.size()), m.mean, m.lo, m.hi});
  }
  if (h.arms.empty()) return h;
  h.source = source;
  h.samples = samples;
  const auto best = std::min_element(h.arms.begin(), h.arms.end(), [](const auto& a, const auto& b) { return a.loss < b.loss; });
  h.best_multiple = best->multiple;
  const auto picked = std::find_if(h.arms.begin(), h.arms.end(),
                                   [&](const auto& a) { return same_lr_multiple(a.multiple, verdict.best_multiple); });
  if (picked == h.arms.end()) {
    h.reason = fmt::format("on held-out data {} is the best at the horizon ({:.4g}); the training loss's best, {}, has no "
                           "held-out loss to compare",
                           lr_multiple_text(best->multiple), best->loss, lr_multiple_text(verdict.best_multiple));
    h.compared = false;
    return h;
  }
  const double spread = (picked->loss_hi - picked->loss_lo) / 2 + (best->loss_hi - best->loss_lo) / 2;
  h.agrees = &*picked == &*best || picked->loss - best->loss <= spread;
  const std::string who = same_lr_multiple(verdict.best_multiple, 1) ? centre : lr_multiple_text(verdict.best_multiple);
  h.reason = h.agrees
                 ? fmt::format("on held-out data too the training loss's best ({}) is the best at the horizon: {:.4g}{}", who,
                               picked->loss,
                               &*picked == &*best ? std::string()
                                                  : fmt::format(" against {}'s {:.4g}, within the run-to-run spread (±{:.2g})",
                                                                lr_multiple_text(best->multiple), best->loss, spread))
                 : fmt::format("on held-out data the best at the horizon is {} ({:.4g}), not the training loss's best ({}: "
                               "{:.4g}; {}): the rate that trains fastest does not generalise best at this horizon",
                               lr_multiple_text(best->multiple), best->loss, who, picked->loss,
                               picked->orders < 2 || best->orders < 2 ? std::string("one data order: no run-to-run spread")
                                                                      : fmt::format("run-to-run spread ±{:.2g}", spread));
  return h;
}

}  // namespace autotune
