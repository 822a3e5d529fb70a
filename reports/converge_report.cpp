#include "reports/converge_report.h"

#include <fmt/format.h>

#include <algorithm>

#include <cmath>

#include "knobs/json_get.h"
#include "knobs/numbers.h"
#include "knobs/protocol.h"
#include "knobs/worker_info.h"
#include "reports/batch_norm_note.h"
#include "reports/html.h"
#include "reports/held_out_report.h"
#include "reports/html_assets.h"
#include "reports/markdown.h"

namespace autotune {

using nlohmann::json;

namespace {

std::string num(double v, const char* f = "{:.2f}") { return std::isfinite(v) ? fmt::format(fmt::runtime(f), v) : "–"; }

/// What the comparison rests on, in one paragraph: the target, ε and the noise scale.
std::vector<std::string> method_sentences(const ConvergeSummary& s) {
  std::vector<std::string> out;
  out.push_back(fmt::format(
      "The runs' common target loss {:.4f} (the Runs table times every run to it): {}. A run's loss is its training loss smoothed over the last {} samples; its time to the target is "
      "the first moment the smoothed loss is at or below it, counted from its first step (start-up, warm-up and every "
      "step's data included).",
      s.target_loss, s.target_basis, with_commas(static_cast<double>(s.smooth_samples))));
  if (std::string note = batch_norm_note(s); !note.empty()) out.push_back(std::move(note));
  if (s.adam_rule == "sde")
    out.push_back("A changed batch's AdamW moved with it by Adam's square-root scaling rule (Malladi et al. 2022): for κ = its "
                  "global batch ÷ the baseline's, lr × √r, 1 − β1 and 1 − β2 × κ, ε ÷ √κ (--adam-rule sde; the runs table "
                  "gives each run's β2 and ε).");
  if (s.eps_runs >= 2)
    out.push_back(fmt::format(
        "Run-to-run spread (ε), from the baseline on {} data orders: its loss at {} samples varies by {:.1f}% (relative "
        "standard deviation), its time to the target by {:.1f}%; a ratio of two runs is uncertain by about ±{:.0f}% (√2 × the "
        "latter).",
        s.eps_runs, with_commas(static_cast<double>(s.eps_samples)), 100 * s.eps_loss, 100 * s.eps_time,
        100 * std::sqrt(2.0) * s.eps_time));
  if (!s.from_sweep.empty()) {
    const bool from_checkpoint =
        std::any_of(s.comparisons.begin(), s.comparisons.end(), [](const ConvergeComparison& c) { return c.sweep_start > 0; });
    out.push_back(fmt::format(
        "Rates from the lr-sweep {}: the baseline trains at your rate, the candidate the same config at the rate the sweep "
        "named; its prediction is the samples/s ratio × the sweep's gain in samples to your loss. The sweep measured that "
        "gain {}; converge trains both from the start to a common loss, so it checks whether the sweep's horizon holds {}.",
        s.from_sweep,
        from_checkpoint ? "from a checkpoint past its burn-in over a share of the run" : "from your start over a share of the run",
        from_checkpoint ? "over the run" : "deeper into the run"));
  }
  if (s.noise_scale > 0)
    out.push_back(fmt::format("Noise scale for the prediction: B̄ = {} (95% interval {}–{}), {}. Prediction: time ratio = "
                              "samples/s ratio × (B0 + B̄)/(B + B̄), B0 = {}.",
                              samples_text(s.noise_scale), samples_text(s.noise_lo), samples_text(s.noise_hi), s.noise_basis, s.user_batch));
  else
    out.push_back(fmt::format("No noise scale was given, so only runs at the user's batch ({}) get a prediction.", s.user_batch));
  return out;
}

/// At most ~400 points of a run's smoothed curve, for the charts: [samples, seconds, smoothed loss].
json chart_points(const ConvergeRun& r, std::int64_t window) {
  json pts = json::array();
  const size_t n = r.curve.size(), stride = std::max<size_t>(1, (n + 399) / 400);
  for (size_t i = 0; i < n; i += stride) {
    const double l = smoothed_loss(r.curve, i, window);
    pts.push_back(json::array({r.curve[i].samples, r.curve[i].seconds, finite_or_null(l)}));
  }
  return pts;
}

}  // namespace

namespace {

/// The Runs table's "β2, ε" cell: the Adam settings the run trained with, or — a task that builds its own optimizer —
/// that optimizer's own, which the flags' β2 and ε do not touch (its class and settings are in the trial's proof).
std::string betas_cell(const ConvergeSummary& s, const ConvergeRun& r) {
  if (own_optimizer(s.workload)) return s.workload.optimizer.empty() ? "the task's own" : "its " + s.workload.optimizer + "'s own";
  return fmt::format("{:.4g}, {:.2g}", r.beta2, r.eps);
}

/// A ramp's switches in words: ", grad_accum 2 after 19,635 samples, 4 after 40,000 (lr 0.00108, 0.0012)".
std::string ramp_switches(const ConvergeRun& r) {
  std::string at, lrs;
  for (std::size_t k = 1; k < r.ramp.size(); ++k) {
    at += fmt::format("{}{} after {} samples", k > 1 ? ", " : "", r.ramp[k].grad_accum,
                      with_commas(static_cast<double>(r.ramp[k].from_samples)));
    lrs += fmt::format("{}{:.3g}", k > 1 ? ", " : "", r.ramp[k].lr);
  }
  return ", grad_accum " + at + " (lr " + lrs + ")";
}

/// Where the candidate and the baseline ended, when the candidate ended below every baseline run: the common target is
/// a loss both reached, which can sit early in the candidate's run; the end says what the rest of the run did.
std::string ended_text(const ConvergeComparison& c) {
  if (!(c.late_target > 0)) return "";
  return fmt::format("; it ended below the lowest loss the baseline reached: its runs ended at {:.4f} against the baseline's "
                     "{:.4f} (means), the baseline's lowest {:.4f}, which it passed at {:.0f}% of its run — to any loss below "
                     "that, at least {:.2f}× the baseline's speed (the baseline's whole run, never getting there, against its time)",
                     c.candidate_final, c.baseline_final, c.late_target, 100 / c.late_ratio_min, c.late_ratio_min);
}

/// The sweep's own loss timed from the user's start (ConvergeComparison::sweep_loss): what the sweep's gain becomes
/// when its start is the user's, before the common target's depth moves it again.
std::string sweep_loss_text(const ConvergeSummary& s, const ConvergeComparison& c) {
  if (!(c.sweep_loss > 0)) return "";
  std::string t = fmt::format("; the lr-sweep timed its rates {} to loss {:.4f} (the loss of the {} at the sweep's horizon): ",
                              c.sweep_start > 0 ? fmt::format("from a checkpoint after {} samples", with_commas(static_cast<double>(c.sweep_start)))
                                                : "from your start",
                              c.sweep_loss, c.sweep_reference);
  const std::string here = c.sweep_start > 0 ? "from your start to that loss, " : "here, ";
  if (c.sweep_measured <= 0) return t + here + "not both runs reached it";
  t += fmt::format("{}the {} took {:.2f}× this arm's samples ({}){}", here, c.sweep_reference, c.sweep_measured,
                   c.sweep_orders > 1 ? fmt::format("{:.2f}–{:.2f}× over {} data orders", c.sweep_lo, c.sweep_hi, c.sweep_orders)
                                      : "one data order",
                   c.lr_gain > 0 ? fmt::format(" against the sweep's {:.2f}×", c.lr_gain) : "");
  if (c.lr_gain > 0 && c.sweep_start > 0)
    t += std::abs(c.lr_gain / c.sweep_measured - 1) <= 0.2
             ? " (the checkpoint's start moved the gain by less than 20%)"
             : fmt::format(" (started at the checkpoint, not at yours, the sweep measured {:.2f}× this gain)", c.lr_gain / c.sweep_measured);
  if (c.measured > 0 && c.sweep_reference == s.runs.front().label && std::abs(c.target_loss - c.sweep_loss) > 5e-5)  // against the baseline
    t += fmt::format("; to the common target, {} than the sweep's ({:.4f} against {:.4f}), it measured {:.2f}× (above)",
                     c.target_loss < c.sweep_loss ? "deeper" : "shallower", c.target_loss, c.sweep_loss, c.measured);
  return t;
}

}  // namespace

std::string comparison_sentence(const ConvergeSummary& s, const ConvergeComparison& c,
                                const std::function<std::string(const std::string&)>& code) {
  const ConvergeRun& r = s.runs[c.run];
  const bool say_picked = c.picked && r.label.find("pick") == std::string::npos;
  std::string t = r.ramp.empty()
                      ? fmt::format("{} ({}{}, global batch {}, lr {:.3g}): ", code(r.change), r.label,
                                    say_picked ? ", the tune's pick" : "", r.global_batch, r.lr)
                      : fmt::format("{} ({}, from global batch {} at lr {:.3g}{}): ", r.label, code(r.change), r.global_batch, r.lr,
                                    ramp_switches(r));
  if (c.measured > 0)
    t += fmt::format("to loss {:.4f} (this comparison's own target, a loss both reached{}; the baseline was {:.0f}% into its run "
                     "there), it took {:.1f} s{}, the baseline {:.1f} s (mean of its runs on the same data orders) — measured {:.2f}× the baseline's speed to the loss (interval {:.2f}–{:.2f}×{}), with "
                     "{:.2f}× its samples",
                     c.target_loss, std::abs(c.target_loss - s.target_loss) > 5e-5 ? fmt::format(", not the Runs table's {:.4f}", s.target_loss) : "",
                     100 * c.target_share, c.candidate_time, c.orders > 1 ? fmt::format(" (mean of {} data orders)", c.orders) : "",
                     c.baseline_time, c.measured, c.measured_lo, c.measured_hi,
                     c.orders > 1 ? fmt::format(": its {} orders and the baseline's spread", c.orders) : ": the baseline's spread",
                     c.samples_ratio);
  else
    t += fmt::format("{} did not reach loss {:.4f} in its {:.0f} s", c.baseline_time > 0 || c.target_share > 0 ? "it" : "the baseline",
                     c.target_loss, s.seconds_per_run);
  if (c.predicted > 0) {
    t += !r.ramp.empty() ? fmt::format("; predicted {:.2f}× (the tune's phase-by-phase price; its samples/s here {:.2f}×)",
                                       c.predicted, c.throughput_ratio)
         : c.lr_gain != 1 ? fmt::format("; predicted {:.2f}× (its samples/s {:.2f}× × efficiency {:.2f} × the lr-sweep's {:.2f}× "
                                        "fewer samples to your loss at this rate)",
                                        c.predicted, c.throughput_ratio, c.efficiency, c.lr_gain)
                          : fmt::format("; predicted {:.2f}× (its samples/s {:.2f}× × efficiency {:.2f})", c.predicted,
                                        c.throughput_ratio, c.efficiency);
    if (c.measured > 0)
      t += fmt::format(": measured {} the prediction by {:.0f}% ({})", c.agreement >= 0 ? "above" : "below", 100 * std::abs(c.agreement),
                       std::abs(c.agreement) <= 0.2 ? "agrees: within the 20% goal"
                       : c.agrees               ? "agrees: outside 20% but inside the measured interval"
                                                : "does not agree: outside 20% and the measured interval");
  }
  if (c.lr_gain == 0)
    t += "; not predicted: the lr-sweep found your rate the best and this one slower, but timed no ratio (it never reached "
         "your rate's loss at the horizon)";
  t += sweep_loss_text(s, c);
  if (c.above_throughput)
    t += fmt::format("; it was faster to the loss than its samples/s ratio ({:.2f}×) with fewer samples than the baseline, which "
                     "no noise scale explains (a bigger batch never needs fewer samples in the model): the gain points at the "
                     "learning rate ({:.3g} against the baseline's {:.3g}), not at the batch",
                     c.throughput_ratio, r.lr, s.runs.front().lr);
  if (c.predicted_by_tune > 0) t += fmt::format("; the tune predicted {:.2f}× from its own runs", c.predicted_by_tune);
  t += ended_text(c);
  if (c.implied_noise_scale > 0)
    t += fmt::format("; the samples it needed imply a noise scale of {} over this run (the prediction used {})",
                     samples_text(c.implied_noise_scale), samples_text(s.noise_scale));
  return t + ".";
}

std::string render_converge_markdown(const ConvergeSummary& s) {
  std::string md;
  auto add = [&](const std::string& l) { md += l + "\n"; };
  add(fmt::format("# autotune converge — {}", md_cell(s.workload.name)));
  add("");
  add(fmt::format("{} · data {} · {}{}{}", md_cell(s.workload.description), md_code(s.data), md_cell(s.env.device_name),
                  s.from_run.empty() ? "" : " · configs from the tune run " + md_code(s.from_run),
                  s.from_sweep.empty() ? "" : " · rates from the lr-sweep " + md_code(s.from_sweep)));
  add("");
  add("Every run trains from the same initial weights on the same data order (the baseline again on other orders for the "
      "spread), for at most the same wall time; the time each needs to reach the same training loss is the measurement.");
  add("");
  for (const auto& c : s.comparisons) {
    add("- " + md_cell(comparison_sentence(s, c, [](const std::string& x) { return md_code(x); })));
  }
  if (s.comparisons.empty()) add("No candidate finished.");
  add("");
  for (const auto& l : method_sentences(s)) {
    add(md_cell(l));
    add("");
  }
  if (s.held_out.on()) {
    add("## Held-out loss");
    add("");
    for (const auto& l : held_out_sentences(s)) add("- " + md_cell(l));
    add("");
    if (const std::string note = held_out_table_note(s); !note.empty()) {
      add(md_cell(note));
      add("");
    }
    md += held_out_markdown_table(s);
    add("");
  }
  add("## Runs");
  add("");
  add(fmt::format("| run | change | global batch | lr | β2, ε | samples/s | trained | final loss | time to {:.4f} | samples to {:.4f} | "
                  "status |",
                  s.target_loss, s.target_loss));
  add("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
  for (const auto& r : s.runs)
    add(fmt::format("| {} | {} | {} | {:.3g} | {} | {} | {:.1f} s | {} | {} | {} | {} |", md_cell(r.label), md_code(r.change),
                    r.global_batch, r.lr, md_cell(betas_cell(s, r)), with_commas(r.samples_per_s), r.seconds, num(r.final_loss, "{:.4f}"),
                    r.reached ? fmt::format("{:.1f} s", r.time_to_target) : "not reached",
                    r.reached ? with_commas(static_cast<double>(r.samples_to_target)) : "–",
                    r.status == "ok" ? "ok" : md_cell(r.status + ": " + r.message)));
  add("");
  const std::string& family = s.workload.optimizer_family;
  const std::string opt = s.workload.optimizer.empty() ? "AdamW" : s.workload.optimizer;
  add(fmt::format("Limits: training loss is a proxy (a run can reach a training loss sooner and still generalise worse: {}); the "
                  "noise scale measured from early training underestimates the one late in training, where bigger batches do "
                  "better; the learning rate of a changed batch is {}. See docs/time-to-train.md.",
                  s.held_out.on() ? "the held-out loss above measures that"
                                  : "give a task's val_dataset() or --val-data and converge measures that too",
                  family == "sgd"                      ? "a starting point (" + opt + ", SGD-like: × r), not tuned"
                  : family.empty() || family == "adam" ? "a starting point (" + opt + ", Adam-like: × √r), not tuned"
                                                       : "the user's own, unscaled: " + opt + " is neither SGD-like nor Adam-like, "
                                                         "so no rule is invented"));
  add("");
  add(fmt::format("<sub>autotune {} · started {} · finished {}</sub>", md_cell(s.env.autotune_version), s.started_at,
                  s.finished_at.empty() ? "(interrupted)" : s.finished_at));
  return md;
}

std::string render_converge_html(const ConvergeSummary& s) {
  auto esc = [](const std::string& x) { return html_escape(x); };
  auto code = [&](const std::string& x) { return "<code>" + esc(x) + "</code>"; };
  std::string h;
  auto add = [&](const std::string& l) { h += l + "\n"; };
  add("<!doctype html>");
  add("<html lang=\"en\"><head><meta charset=\"utf-8\">");
  add("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; "
      "style-src 'unsafe-inline'; img-src data:\">");
  add(fmt::format("<title>autotune converge — {}</title>", esc(s.workload.name)));
  add(fmt::format("<style>{}</style></head><body data-charts=\"pending\">", kReportStyle));
  add(fmt::format("<h1>autotune converge — {}</h1>", esc(s.workload.name)));
  add(fmt::format("<p class=\"sub\">{} · data {} · {}</p>", esc(s.workload.description), code(s.data), esc(s.env.device_name)));
  add("<ul>");
  for (const auto& c : s.comparisons) {
    add("<li>" + html_with_code(comparison_sentence(s, c, [](const std::string& x) { return "\x01" + x + "\x02"; })) + "</li>");
  }
  add("</ul>");
  for (const auto& l : method_sentences(s)) add("<p>" + esc(l) + "</p>");
  add("<noscript><p class=\"warn\">Charts need JavaScript; the table below holds the numbers.</p></noscript>");
  add("<p id=\"chart-status\" class=\"note\"></p>");
  add("<h2>Loss against wall time</h2>");
  add("<div class=\"chart\"><canvas id=\"chart-loss-time\" role=\"img\" aria-label=\"loss against wall time\"></canvas></div>");
  add("<h2>Loss against samples</h2>");
  add("<p class=\"note\">At equal samples a bigger batch past the noise scale lags: it took fewer, larger steps. Dashed: the "
      "baseline on other data orders (the spread).</p>");
  add("<div class=\"chart\"><canvas id=\"chart-loss-samples\" role=\"img\" aria-label=\"loss against samples\"></canvas></div>");
  add("<h2>Runs</h2>");
  add("<table><tr><th>run</th><th>change</th><th>global batch</th><th>lr</th><th>β2, ε</th><th>samples/s</th><th>trained</th>"
      "<th>final loss</th><th>time to target</th><th>status</th></tr>");
  json runs = json::array();
  for (const auto& r : s.runs) {
    add(fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{:.3g}</td><td class=\"num\">{}"
                    "</td><td class=\"num\">{}</td><td class=\"num\">{:.1f} s</td><td class=\"num\">{}</td><td "
                    "class=\"num\">{}</td><td>{}</td></tr>",
                    esc(r.label), code(r.change), r.global_batch, r.lr, esc(betas_cell(s, r)), with_commas(r.samples_per_s), r.seconds,
                    num(r.final_loss, "{:.4f}"), r.reached ? fmt::format("{:.1f} s", r.time_to_target) : "not reached",
                    esc(r.status == "ok" ? "ok" : r.status + ": " + r.message)));
    runs.push_back({{"label", r.label}, {"role", r.role}, {"points", chart_points(r, s.smooth_samples)}});
  }
  add("</table>");
  if (s.held_out.on()) {
    add("<h2>Held-out loss</h2>");
    add("<ul>");
    for (const auto& l : held_out_sentences(s)) add("<li>" + esc(l) + "</li>");
    add("</ul>");
    if (const std::string note = held_out_table_note(s); !note.empty()) add("<p>" + esc(note) + "</p>");
    add(held_out_html_table(s));
  }
  add(fmt::format("<p class=\"note\">autotune {} · started {} · finished {}</p>", esc(s.env.autotune_version), esc(s.started_at),
                  esc(s.finished_at.empty() ? "(interrupted)" : s.finished_at)));
  add("<script type=\"application/json\" id=\"autotune-data\">" + script_safe_json(json{{"runs", runs}}) + "</script>");
  std::string why_missing;
  const std::string chartjs = read_chartjs(why_missing);
  if (chartjs.empty())
    add(fmt::format("<script>document.getElementById('chart-status').textContent = {};</script>",
                    script_safe_json(json("Charts unavailable: " + why_missing + ". The table holds the numbers."))));
  else add("<script>" + chartjs + "</script>");
  add("<script>" + converge_script() + "</script>");
  add("</body></html>");
  return h;
}

namespace {

/// One run of converge.json's "runs": its setup, its figures and its whole curve.
json run_json(const ConvergeRun& r) {
  return {{"label", r.label},
          {"role", r.role},
          {"config", r.config},
          {"change", r.change},
          {"global_batch", r.global_batch},
          {"data_order", r.data_order},
          {"lr", r.lr},
          {"adam", {{"beta1", r.beta1}, {"beta2", r.beta2}, {"eps", r.eps}}},
          {"trial_id", r.trial_id},
          {"status", r.status},
          {"message", r.message},
          {"samples_per_s", r.samples_per_s},
          {"seconds", r.seconds},
          {"final_loss", finite_or_null(r.final_loss)},
          {"reached", r.reached},
          {"time_to_target", r.time_to_target},
          {"samples_to_target", r.samples_to_target},
          {"ramp", [&] {  // a batch ramp's phases: [from_samples, grad_accum, lr]
             json ph = json::array();
             for (const auto& x : r.ramp) ph.push_back({x.from_samples, x.grad_accum, x.lr});
             return ph;
           }()},
          {"points", curve_to_json(r.curve)}};
}

}  // namespace

json render_converge_json(const ConvergeSummary& s) {
  json runs = json::array();
  for (const auto& r : s.runs) runs.push_back(run_json(r));
  json cmps = json::array();
  for (const auto& c : s.comparisons)
    cmps.push_back({{"run", s.runs[c.run].label},
                    {"config", s.runs[c.run].config},
                    {"picked", c.picked},
                    {"target_loss", c.target_loss},
                    {"target_share", c.target_share},
                    {"baseline_time", c.baseline_time},
                    {"candidate_time", c.candidate_time},
                    {"measured", c.measured},
                    {"measured_interval", {c.measured_lo, c.measured_hi}},
                    {"orders", c.orders},
                    {"order_ratios", c.order_ratios},
                    {"agrees", c.agrees},
                    {"above_throughput", c.above_throughput},
                    {"samples_ratio", c.samples_ratio},
                    {"implied_noise_scale", c.implied_noise_scale},
                    {"throughput_ratio", c.throughput_ratio},
                    {"efficiency", finite_or_null(c.efficiency)},
                    {"predicted", c.predicted},
                    {"lr_gain", c.lr_gain},
                    {"sweep_loss", c.sweep_loss > 0 ? json{{"loss", c.sweep_loss},
                                                           {"sweep_start", c.sweep_start},
                                                           {"reference", c.sweep_reference},
                                                           {"measured", c.sweep_measured > 0 ? json(c.sweep_measured) : json(nullptr)},
                                                           {"interval", c.sweep_measured > 0 ? json{c.sweep_lo, c.sweep_hi} : json(nullptr)},
                                                           {"orders", c.sweep_orders}}
                                                    : json(nullptr)},
                    {"predicted_by_tune", c.predicted_by_tune},
                    {"agreement", c.agreement},
                    {"final_loss", {{"candidate", c.candidate_final}, {"baseline", c.baseline_final}}},
                    {"ended_below", c.late_target > 0 ? json{{"loss", c.late_target}, {"ratio_at_least", c.late_ratio_min}}
                                                      : json(nullptr)}});
  return {{"schema", "autotune.converge/1"},
          {"workload", s.workload},
          {"environment", s.env},
          {"data", s.data},
          {"from_run", s.from_run},
          {"from_sweep", s.from_sweep},
          {"user_batch", s.user_batch},
          {"noise_scale", {{"value", s.noise_scale}, {"lo", s.noise_lo}, {"hi", finite_or_null(s.noise_hi)}, {"basis", s.noise_basis}}},
          {"seconds_per_run", s.seconds_per_run},
          {"baseline_samples", s.baseline_samples},
          {"target_loss", s.target_loss},
          {"target_basis", s.target_basis},
          {"batch_norm_note", batch_norm_note(s)},
          {"smooth_samples", s.smooth_samples},
          {"eps", {{"loss", s.eps_loss}, {"time", s.eps_time}, {"at_samples", s.eps_samples}, {"runs", s.eps_runs}}},
          {"comparisons", cmps},
          {"runs", runs},
          {"held_out", held_out_json(s)},
          {"started_at", s.started_at},
          {"finished_at", s.finished_at}};
}

}  // namespace autotune
