#include "reports/held_out_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "knobs/json_get.h"
#include "knobs/numbers.h"
#include "knobs/protocol.h"
#include "reports/html.h"
#include "reports/markdown.h"

namespace autotune {

using nlohmann::json;

namespace {

std::string loss(double v) { return std::isfinite(v) ? fmt::format("{:.4f}", v) : "–"; }

/// The verdict on the fastest: the same arm to both losses, or not (and whether beyond the runs' spread).
std::string fastest_sentence(const ConvergeSummary& s) {
  const HeldOutSummary& h = s.held_out;
  if (!h.differ)
    return fmt::format("The fastest to the training loss, {} ({:.2f}×), is also the fastest to the held-out loss ({:.2f}×).",
                       h.fastest_train, h.fastest_train_ratio, h.fastest_held_out_ratio);
  const std::string own = h.fastest_train_held_out_ratio > 0
                              ? fmt::format("; {:.2f}× to the held-out loss", h.fastest_train_held_out_ratio)
                              : "; it reached no held-out loss the baseline did";
  // the training winner's own held-out comparison, when it stopped above the baseline's lowest
  std::string stopped;
  for (std::size_t i = 0; i < s.comparisons.size() && i < h.comparisons.size(); ++i)
    if (s.runs[s.comparisons[i].run].label == h.fastest_train && h.comparisons[i].stopped_above)
      stopped = fmt::format(", but its lowest held-out loss ({:.4f}) stayed above the baseline's ({:.4f})",
                            h.comparisons[i].candidate_lowest, h.comparisons[i].baseline_lowest);
  return fmt::format("The fastest to the training loss, {} ({:.2f}×{}{}), is not the fastest to the held-out loss: {} is "
                     "({:.2f}×){}.",
                     h.fastest_train, h.fastest_train_ratio, own, stopped, h.fastest_held_out, h.fastest_held_out_ratio,
                     h.beyond_spread ? ", beyond the runs' spread" : " — within the runs' spread, so not a clear difference");
}

}  // namespace

std::vector<std::string> held_out_sentences(const ConvergeSummary& s) {
  const HeldOutSummary& h = s.held_out;
  std::vector<std::string> out;
  if (!h.on()) return out;
  out.push_back(fmt::format(
      "Held-out loss: {}, {} samples evaluated every {} samples trained, in eval mode without gradients ({:.1f} s of "
      "evaluation over all runs, kept off every run's clock). Each candidate is timed to the lowest held-out loss both it "
      "and the baseline reached (a held-out loss can rise again); between two evaluations the loss is read on a straight "
      "line.",
      h.source, with_commas(static_cast<double>(h.samples)), with_commas(static_cast<double>(h.every)), h.eval_seconds));
  if (h.latest_lowest_share > 0 && h.latest_lowest_share < 0.5)
    out.push_back(fmt::format("Every run reached its lowest held-out loss within the first {:.0f}% of its training and "
                              "got worse on held-out data after: the runs trained well past where held-out data stopped "
                              "improving, so their training-loss comparison is of training this task does not need — a "
                              "shorter --seconds (or run length) compares what matters.",
                              std::ceil(100 * h.latest_lowest_share)));
  if (h.measured > 0) out.push_back(fastest_sentence(s));
  else if (!s.comparisons.empty())
    out.push_back("No candidate has a held-out ratio (below), so no arm is named the fastest to the held-out loss.");
  for (std::size_t i = 0; i < s.comparisons.size() && i < h.comparisons.size(); ++i) {
    const HeldOutComparison& c = h.comparisons[i];
    const std::string& label = s.runs[s.comparisons[i].run].label;
    if (c.measured > 0)
      out.push_back(fmt::format("{}: to held-out loss {:.4f}, {:.1f} s against the baseline's {:.1f} s — {:.2f}× the "
                                "baseline's speed (interval {:.2f}–{:.2f}×); lowest held-out loss {:.4f} against the "
                                "baseline's {:.4f}{}.",
                                label, c.target, c.candidate_time, c.baseline_time, c.measured, c.measured_lo, c.measured_hi,
                                c.candidate_lowest, c.baseline_lowest,
                                c.stopped_above ? " — it stopped improving on held-out data above where the baseline got "
                                                  "(beyond the baseline's spread): sooner to a loss both reached, not as far"
                                                : ""));
    else if (c.never_improved)
      out.push_back(fmt::format("{}: no held-out ratio — the lowest held-out loss both reached ({:.4f}) is not below where "
                                "the runs started ({:.4f}, before any training): one of them never improved on held-out "
                                "data at its evaluations (it fit the training data without generalising, or evaluated too "
                                "rarely: --val-every); lowest held-out loss {} against the baseline's {}.",
                                label, c.target, c.start, loss(c.candidate_lowest), loss(c.baseline_lowest)));
    else
      out.push_back(fmt::format("{}: no held-out ratio (it or the baseline evaluated no finite held-out loss it could be "
                                "timed to); lowest held-out loss {} against the baseline's {}.",
                                label, loss(c.candidate_lowest), loss(c.baseline_lowest)));
  }
  return out;
}

std::string held_out_table_note(const ConvergeSummary& s) {
  const HeldOutSummary& h = s.held_out;
  if (!h.on() || h.target <= 0) return "";
  const bool other = std::any_of(h.comparisons.begin(), h.comparisons.end(), [&](const HeldOutComparison& c) {
    return c.measured > 0 && std::fabs(c.target - h.target) > 1e-12;  // a ratio timed to a loss other than the table's
  });
  return fmt::format("The table times every run to {:.4f}, the highest of the baseline runs' lowest held-out losses (a "
                     "loss each of them reached: the baseline's spread is measured there){}.",
                     h.target,
                     other ? "; a candidate's ratio above is timed to the lowest loss both it and the baseline reached, "
                             "which is another loss where the candidate did not reach this one"
                           : "");
}

std::string held_out_markdown_table(const ConvergeSummary& s) {
  const HeldOutSummary& h = s.held_out;
  if (!h.on()) return "";
  std::string md = fmt::format("| run | lowest held-out loss | at its end | time to {:.4f} |\n|---|---:|---:|---:|\n", h.target);
  for (std::size_t i = 0; i < s.runs.size() && i < h.runs.size(); ++i)
    md += fmt::format("| {} | {} | {} | {} |\n", md_cell(s.runs[i].label), loss(h.runs[i].lowest), loss(h.runs[i].final_loss),
                      h.runs[i].reached ? fmt::format("{:.1f} s", h.runs[i].time_to_target) : "not reached");
  return md;
}

std::string held_out_html_table(const ConvergeSummary& s) {
  const HeldOutSummary& h = s.held_out;
  if (!h.on()) return "";
  std::string t = fmt::format("<table><tr><th>run</th><th>lowest held-out loss</th><th>at its end</th><th>time to {:.4f}</th>"
                              "</tr>\n",
                              h.target);
  for (std::size_t i = 0; i < s.runs.size() && i < h.runs.size(); ++i)
    t += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                     html_escape(s.runs[i].label), loss(h.runs[i].lowest), loss(h.runs[i].final_loss),
                     h.runs[i].reached ? fmt::format("{:.1f} s", h.runs[i].time_to_target) : "not reached");
  return t + "</table>";
}

json held_out_json(const ConvergeSummary& s) {
  const HeldOutSummary& h = s.held_out;
  if (!h.on()) return nullptr;
  json runs = json::array();
  for (std::size_t i = 0; i < s.runs.size() && i < h.runs.size(); ++i) {
    runs.push_back({{"label", s.runs[i].label},
                    {"lowest", finite_or_null(h.runs[i].lowest)},
                    {"lowest_at_seconds", h.runs[i].lowest_at},
                    {"final", finite_or_null(h.runs[i].final_loss)},
                    {"reached", h.runs[i].reached},
                    {"time_to_target", h.runs[i].time_to_target},
                    {"points", curve_to_json(s.runs[i].held_out)}});
  }
  json cmps = json::array();
  for (std::size_t i = 0; i < s.comparisons.size() && i < h.comparisons.size(); ++i) {
    const HeldOutComparison& c = h.comparisons[i];
    cmps.push_back({{"run", s.runs[s.comparisons[i].run].label},
                    {"target_loss", c.target},
                    {"baseline_time", c.baseline_time},
                    {"candidate_time", c.candidate_time},
                    {"measured", c.measured},
                    {"measured_interval", {c.measured_lo, c.measured_hi}},
                    {"order_ratios", c.order_ratios},
                    {"lowest", {{"candidate", finite_or_null(c.candidate_lowest)}, {"baseline", finite_or_null(c.baseline_lowest)}}},
                    {"stopped_above", c.stopped_above},
                    {"never_improved", c.never_improved},
                    {"start", finite_or_null(c.start)}});
  }
  return {{"source", h.source},
          {"samples", h.samples},
          {"every", h.every},
          {"eval_seconds", h.eval_seconds},
          {"target_loss", h.target},
          {"eps_time", h.eps_time},
          {"eps_lowest", h.eps_lowest},
          {"latest_lowest_share", h.latest_lowest_share},
          {"fastest", {{"training", {{"run", h.fastest_train}, {"ratio", h.fastest_train_ratio},
                                     {"held_out_ratio", h.fastest_train_held_out_ratio}}},
                       {"held_out", {{"run", h.fastest_held_out}, {"ratio", h.fastest_held_out_ratio}}},
                       {"differ", h.differ},
                       {"beyond_spread", h.beyond_spread}}},
          {"comparisons", cmps},
          {"runs", runs}};
}

}  // namespace autotune
