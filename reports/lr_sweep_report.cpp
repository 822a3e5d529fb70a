#include "reports/lr_sweep_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "knobs/json_get.h"
#include "knobs/numbers.h"

namespace autotune {

std::string lr_multiple_text(double m) {
  if (m < 1 && m > 0 && std::abs(1 / m - std::round(1 / m)) < 1e-6) return fmt::format("×1/{:.0f}", 1 / m);
  return fmt::format("×{:g}", m);
}

std::string lr_sweep_headline(const LrSweepSummary& s) {
  const LrVerdict& v = s.verdict;
  const std::string best = fmt::format("{} ({:.3g})", lr_multiple_text(v.best_multiple), s.user_lr * v.best_multiple);
  // The rate the verdict is on: the user's, or at a changed batch the rule's rate for it.
  const std::string rate = s.changed_batch() ? fmt::format("At global batch {} the batch rule's rate {:.3g}", s.global_batch, s.user_lr)
                                             : fmt::format("Your learning rate {:.3g}", s.user_lr);
  if (v.verdict == "too low" || v.verdict == "too high") {
    const char* wider = v.best_at_end ? "; the best is the widest rate tried, so a better one may lie further out" : "";
    // A lower loss at the horizon that was no sooner at the centre's loss: the verdict stands on the loss, not on time
    if (v.gain > 0 && v.gain < 1.005)
      return fmt::format("{} is {} by the loss at the horizon: {} ended lower, but reached {}'s loss no sooner ({:.2f}×, "
                         "{:.2f}–{:.2f}× over the data orders){}.",
                         rate, v.verdict, best, s.centre(), v.gain, v.gain_lo, v.gain_hi, wider);
    if (v.gain > 0)
      return fmt::format("{} is {}: {} reached its loss {:.2f}× sooner ({:.2f}–{:.2f}×){}.", rate, v.verdict, best, v.gain,
                         v.gain_lo, v.gain_hi, wider);
    return fmt::format("{} is {}: it diverged, {} trained.", rate, v.verdict, best);
  }
  if (v.verdict == "about right") return fmt::format("{} is about right: {}.", rate, v.reason);
  return fmt::format("No verdict on {}: {}.", s.changed_batch() ? fmt::format("the batch rule's rate {:.3g}", s.user_lr)
                                                               : fmt::format("your learning rate {:.3g}", s.user_lr),
                     v.reason);
}

namespace {

/// "- Depth: ..." — the gain timed to the centre's loss at a third, two thirds and all of the horizon, and which way it
/// moved; "" without a gain at two depths or more.
std::string depth_line(const LrSweepSummary& s) {
  const auto& d = s.verdict.by_depth;
  if (d.size() < 2 || !(d.front().gain > 0)) return "";
  std::string points;
  for (const auto& p : d)
    points += fmt::format("{}{:.2f}× at {} samples{}", points.empty() ? "" : ", ", p.gain, with_commas(static_cast<double>(p.samples)),
                          s.run_samples > 0 ? fmt::format(" ({:.1f}% of your run)", 100 * static_cast<double>(p.samples) / s.run_samples) : "");
  const double moved = d.back().gain / d.front().gain;
  const std::string trend =
      moved > 1.1 ? "the gain grew with depth: to a loss deeper into your run it is likely larger than the headline's"
      : moved < 1 / 1.1 ? "the gain shrank with depth: to a loss deeper into your run it is likely smaller than the headline's"
                        : "the gain held within 10% over the horizon";
  return fmt::format("- Depth: {} to {}'s loss there ({}; `autotune converge --from-sweep` trains both to a loss of its "
                     "own)\n",
                     points, s.centre(), trend);
}

}  // namespace

std::string render_lr_sweep_markdown(const LrSweepSummary& s) {
  std::string md = "# autotune lr-sweep\n\n" + lr_sweep_headline(s) + "\n\n";
  md += fmt::format("- Model: {}; data: {}; config: {} (global batch {}){}\n", s.workload, s.data,
                    s.config.empty() ? std::string("the defaults") : s.config.key(), s.global_batch,
                    s.from_run.empty() ? "" : fmt::format(", from the tune run {} ({})", s.from_run,
                                                          s.changed_batch() ? "its answer (b)" : "its baseline"));
  if (s.changed_batch())
    md += fmt::format("- The rule's prediction beside the measured best: {}; the sweep's best is {} = {:.3g}, {} the rule's rate\n",
                      s.rule, lr_multiple_text(s.verdict.best_multiple), s.user_lr * s.verdict.best_multiple,
                      s.verdict.verdict == "about right" ? "within the spread of" : lr_multiple_text(s.verdict.best_multiple) + " of");
  if (!s.run_basis.empty()) md += fmt::format("- Your run: {}\n", s.run_basis);
  if (s.from_start)
    md += fmt::format("- Horizon: {}, from the same weights on the same data orders (the loss at the start: {:.4g}, the lowest "
                      "over a first run's first window), its loss smoothed over {} samples\n",
                      s.horizon.why, s.start_loss, with_commas(static_cast<double>(s.smooth_samples)));
  else
    md += s.burn_in_diverged
              ? fmt::format("- Horizon: {}; the burn-in at {} diverged (trial {}: smoothed loss {:.4g} at its start, {} "
                            "at its end), so no checkpoint: every rate trained from your run's start, its loss smoothed over {} "
                            "samples\n",
                            s.horizon.why, s.centre(), s.burn_in_trial, s.burn_in_first_loss,
                            std::isfinite(s.burn_in_end_loss) ? fmt::format("{:.4g}", s.burn_in_end_loss) : std::string("non-finite"),
                            with_commas(static_cast<double>(s.smooth_samples)))
              : fmt::format("- Horizon: {}; every rate from the same checkpoint (trial {}, smoothed loss {:.4g}), its loss "
                            "smoothed over {} samples\n",
                            s.horizon.why, s.burn_in_trial, s.start_loss, with_commas(static_cast<double>(s.smooth_samples)));
  md +=
      "- Judged by the smoothed loss at the horizon (never the steepest slope of a short run); a non-finite loss or one "
      "above 1.5× the loss every rate starts from is never picked\n- Why: " +
      s.verdict.reason + "\n" + depth_line(s);
  const LrHeldOut& h = s.held_out;
  if (h.on())
    md += fmt::format("- Held out: {} ({}, {} samples an evaluation; {:.4g} at the {}): {}\n",
                      !h.compared ? "not compared" : h.agrees ? "agrees" : "**differs**", h.source, with_commas(static_cast<double>(h.samples)), h.start_loss,
                      s.from_start ? "start" : "checkpoint", h.reason);
  md += h.on() ? "\n| rate | learning rate | data orders | status | loss at the horizon (range) | held-out loss (range) |\n"
                 "|---|---:|---:|---|---|---|\n"
               : "\n| rate | learning rate | data orders | status | loss at the horizon (range) |\n|---|---:|---:|---|---|\n";
  for (const LrArm& a : s.arms) {
    md += fmt::format("| {}{} | {:.3g} | {} | {} | {} |", lr_multiple_text(a.multiple),
                      same_lr_multiple(a.multiple, s.verdict.best_multiple) && a.ok() ? " (best)" : "", s.user_lr * a.multiple,
                      a.orders, a.status, a.ok() ? fmt::format("{:.4g} ({:.4g}–{:.4g})", a.loss, a.loss_lo, a.loss_hi) : "–");
    if (h.on()) {
      const auto x = std::find_if(h.arms.begin(), h.arms.end(), [&](const LrHeldOutArm& y) { return same_lr_multiple(y.multiple, a.multiple); });
      md += x == h.arms.end() ? " – |"
                              : fmt::format(" {:.4g} ({:.4g}–{:.4g}){} |", x->loss, x->loss_lo, x->loss_hi,
                                            same_lr_multiple(x->multiple, h.best_multiple) ? " (best)" : "");
    }
    md += "\n";
  }
  return md;
}

nlohmann::json render_lr_sweep_json(const LrSweepSummary& s) {
  nlohmann::json arms = nlohmann::json::array(), runs = nlohmann::json::array();
  for (const LrArm& a : s.arms)
    arms.push_back({{"multiple", a.multiple},
                    {"lr", s.user_lr * a.multiple},
                    {"orders", a.orders},
                    {"status", a.status},
                    {"loss", a.ok() ? finite_or_null(a.loss) : nullptr},
                    {"loss_lo", a.ok() ? finite_or_null(a.loss_lo) : nullptr},
                    {"loss_hi", a.ok() ? finite_or_null(a.loss_hi) : nullptr}});
  for (std::size_t i = 0; i < s.runs.size(); ++i) {
    const LrRun& r = s.runs[i];
    runs.push_back({{"multiple", r.multiple},
                    {"data_order", r.data_order},
                    {"trial", i < s.run_trials.size() ? s.run_trials[i] : 0},
                    {"samples", r.curve.empty() ? 0 : r.curve.back().samples},
                    {"seconds", r.curve.empty() ? 0.0 : r.curve.back().seconds}});
  }
  const LrVerdict& v = s.verdict;
  nlohmann::json held = nullptr;
  if (s.held_out.on()) {
    nlohmann::json harms = nlohmann::json::array();
    for (const LrHeldOutArm& a : s.held_out.arms)
      harms.push_back({{"multiple", a.multiple}, {"orders", a.orders}, {"loss", finite_or_null(a.loss)},
                       {"loss_lo", finite_or_null(a.loss_lo)}, {"loss_hi", finite_or_null(a.loss_hi)}});
    held = {{"source", s.held_out.source},         {"samples", s.held_out.samples},
            {"start_loss", finite_or_null(s.held_out.start_loss)}, {"arms", harms},
            {"best_multiple", s.held_out.best_multiple}, {"agrees", s.held_out.compared ? nlohmann::json(s.held_out.agrees) : nlohmann::json()},
            {"reason", s.held_out.reason}};
  }
  return {{"schema", "autotune.lr-sweep/1"},
          {"workload", s.workload},
          {"data", s.data},
          {"config", s.config.key()},
          {"global_batch", s.global_batch},
          {"user_lr", s.user_lr},
          {"from_run", s.from_run},
          {"at", s.at},
          {"user_batch", s.user_batch},
          {"your_lr", s.your_lr},
          {"rule", s.rule},
          {"run_samples", s.run_samples},
          {"run_basis", s.run_basis},
          {"smooth_samples", s.smooth_samples},
          {"horizon",
           {{"burn_in_samples", s.horizon.burn_in_samples},
            {"horizon_samples", s.horizon.horizon_samples},
            {"why", s.horizon.why}}},
          {"arms_from", s.from_start ? "start" : "checkpoint"},
          {"start_loss", finite_or_null(s.start_loss)},
          {"burn_in_trial", s.burn_in_trial},
          {"burn_in", s.from_start ? nlohmann::json(nullptr)
                                   : nlohmann::json{{"first_loss", finite_or_null(s.burn_in_first_loss)},
                                                    {"end_loss", finite_or_null(s.burn_in_end_loss)},
                                                    {"diverged", s.burn_in_diverged},
                                                    {"checkpoint", s.burn_in_diverged ? "" : "checkpoint.pt"}}},
          {"arms", arms},
          {"held_out", held},
          {"runs", runs},
          {"verdict",
           {{"verdict", v.verdict},
            {"best_multiple", v.best_multiple},
            {"best_lr", s.user_lr * v.best_multiple},
            {"best_at_end", v.best_at_end},
            {"gain", v.gain},
            {"gain_lo", v.gain_lo},
            {"gain_hi", v.gain_hi},
            {"reason", v.reason},
            {"by_depth", [&] {
               nlohmann::json d = nlohmann::json::array();
               for (const auto& p : v.by_depth) d.push_back({{"samples", p.samples}, {"gain", p.gain}});
               return d;
             }()},
            {"headline", lr_sweep_headline(s)}}}};
}

}  // namespace autotune
