// The check's human-readable outputs: check.md and check.html.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "knobs/numbers.h"
#include "reports/check_reports.h"
#include "reports/html.h"
#include "reports/markdown.h"

namespace autotune {

namespace {

const char* badge(const std::string& verdict) {
  return verdict == "pass" ? "✅" : verdict == "regression" ? "❌" : verdict == "failed"      ? "💥"
                                                                : verdict == "interrupted" ? "⏹️"
                                                                                           : "⚠️";
}

/// A metric's value in its unit: samples/s with separators, memory in MiB.
std::string value(const MetricDecision& m, double v) {
  return m.unit == "bytes" ? fmt::format("{:.0f} MiB", v / (1 << 20)) : with_commas(v) + " " + m.unit;
}

std::string machine(const EnvFingerprint& e) {
  return fmt::format("{} · torch {}{}{}", e.device_name.empty() ? "unknown device" : e.device_name, e.torch_version,
                     e.cuda_compiled.empty() ? "" : " · CUDA " + e.cuda_compiled,
                     e.driver.empty() ? "" : " · driver " + e.driver);
}

int ok_reps(const CheckSide& s) {
  return static_cast<int>(std::count_if(s.reps.begin(), s.reps.end(), [](const CheckRep& r) { return r.status == "ok"; }));
}

/// What the gate used, and how to run the same check again.
std::string method_line(const CheckSummary& s) {
  return fmt::format(
      "Each repetition is a fresh worker process after its warm-up; A and B ran interleaved (order `{}`, seed {}). One-sided "
      "Mann-Whitney U per metric at α {} (Holm across {} metric(s)); a regression also needs B at least {:.0f}% slower ({:.0f}% more "
      "memory); inconclusive below {} usable repetitions per side or when the baseline's median is known less precisely than half "
      "the floor.",
      s.order, s.order_seed, s.alpha, s.metrics.size(), 100 * s.floor, 100 * s.memory_floor, s.min_reps);
}

std::string markdown(const CheckSummary& s, bool with_reps) {
  std::string md;
  auto add = [&](const std::string& l) { md += l + "\n"; };
  add(fmt::format("# autotune check — {}: {} {}", md_cell(s.b.workload), badge(s.verdict), s.verdict));
  add("");
  add(md_cell(s.reason));
  add("");
  if (!s.metrics.empty()) {
    add("| metric | A (baseline) | B (candidate) | B/A (95% CI) | p (Holm) | floor | verdict |");
    add("|---|---:|---:|---|---:|---:|---|");
    for (const auto& m : s.metrics)
      add(fmt::format("| {} | {} | {} | {:.3f} ({:.3f}–{:.3f}) | {:.2g} ({:.2g}) | {}{:.0f}% | {} {} |", m.name,
                      value(m, m.median_a), value(m, m.median_b), m.ratio, m.ratio_lo, m.ratio_hi, m.p, m.p_holm,
                      m.higher_is_better ? "−" : "+", 100 * m.floor, badge(m.verdict), m.verdict));
    add("");
    for (const auto& m : s.metrics) add(fmt::format("- **{}**: {}", m.name, md_cell(m.reason)));
    add("");
  }
  add("## Sides");
  add("");
  add("| side | what | config | worker | repetitions ok | ran on |");
  add("|---|---|---|---|---:|---|");
  for (const CheckSide* side : {&s.a, &s.b})
    add(fmt::format("| {} ({}) | {} | {} | {} | {}/{} | {} |", side->name, side->name == "A" ? "baseline" : "candidate",
                    md_cell(side->source) + (side->stored ? " (not re-run)" : ""), md_code(side->config.key()),
                    md_code(side->worker), ok_reps(*side), side->reps.size(), md_cell(machine(side->env))));
  add("");
  add(md_cell(method_line(s)));
  add("");
  if (with_reps) {
    add("## Repetitions");
    add("");
    add("| side | # | order | samples/s | peak memory | status |");
    add("|---|---:|---:|---:|---:|---|");
    for (const CheckSide* side : {&s.a, &s.b})
      for (const auto& r : side->reps)
        add(fmt::format("| {} | {} | {} | {} | {:.0f} MiB | {} |", side->name, r.index,
                        r.order ? std::to_string(r.order) : "stored", r.status == "ok" ? with_commas(r.throughput) : "–",
                        r.peak_bytes / (1 << 20), md_cell(r.status == "ok" ? r.status : r.status + ": " + r.message)));
    add("");
  }
  add(fmt::format("<sub>autotune check · started {} · finished {} · {:.0f} s</sub>", s.started_at, s.finished_at,
                  s.elapsed_seconds));
  return md;
}

/// One metric's repetitions as dots on a shared axis, a row per side, each side's median as a bar.
std::string strip_plot(const CheckSummary& s, const MetricDecision& m) {
  std::vector<double> a, b;
  for (const auto& r : s.a.reps)
    if (r.status == "ok") a.push_back(m.name == "throughput" ? r.throughput : r.peak_bytes);
  for (const auto& r : s.b.reps)
    if (r.status == "ok") b.push_back(m.name == "throughput" ? r.throughput : r.peak_bytes);
  std::vector<double> all = a;
  all.insert(all.end(), b.begin(), b.end());
  if (all.empty()) return "";
  double lo = *std::min_element(all.begin(), all.end()), hi = *std::max_element(all.begin(), all.end());
  const double pad = std::max((hi - lo) * 0.1, std::abs(hi) * 0.005 + 1e-9);
  lo -= pad;
  hi += pad;
  const int w = 640, left = 120, right = 20;
  auto x = [&](double v) { return left + (v - lo) / (hi - lo) * (w - left - right); };
  std::string svg =
      fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"110\" role=\"img\" aria-label=\"{}\">", w,
                  html_escape(m.name + " per repetition"));
  int row = 0;
  for (const auto& [label, vs, med, color] : {std::tuple{std::string("A baseline"), a, m.median_a, "#8c959f"},
                                              std::tuple{std::string("B candidate"), b, m.median_b, "#0969da"}}) {
    const int y = 30 + row++ * 40;
    svg += fmt::format("<text x=\"4\" y=\"{}\" font-size=\"12\">{}</text>", y + 4, label);
    for (double v : vs)
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{}\" r=\"4\" fill=\"{}\" fill-opacity=\"0.7\"/>", x(v), y, color);
    svg += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#1f2328\" stroke-width=\"2\"/>",
                       x(med), y - 12, y + 12);
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"105\" font-size=\"11\">{}</text><text x=\"{}\" y=\"105\" font-size=\"11\" text-anchor=\"end\">{}</text>",
      left, html_escape(value(m, lo)), w - right, html_escape(value(m, hi)));
  return svg + "</svg>";
}

}  // namespace

std::string render_check_markdown(const CheckSummary& s, std::size_t max_bytes) {
  std::string md = markdown(s, true);
  if (max_bytes > 0 && md.size() > max_bytes) md = markdown(s, false);
  if (max_bytes > 0 && md.size() > max_bytes) md = md.substr(0, max_bytes);
  return md;
}

std::string render_check_html(const CheckSummary& s) {
  std::string h;
  auto add = [&](const std::string& l) { h += l + "\n"; };
  add("<!doctype html>");
  add("<html lang=\"en\"><head><meta charset=\"utf-8\">");
  add("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">");
  add(fmt::format("<title>autotune check — {}</title>", html_escape(s.b.workload)));
  add("<style>body{font:15px/1.5 system-ui,sans-serif;max-width:1000px;margin:24px auto;padding:0 16px;color:#1f2328}"
      "table{border-collapse:collapse;width:100%;margin:8px 0 16px;font-size:.9em}th,td{border:1px solid #d0d7de;padding:4px 8px;"
      "text-align:left}td.num{text-align:right}code{background:#f6f8fa;padding:1px 4px;border-radius:4px}.note{color:#656d76}</style>"
      "</head><body>");
  add(fmt::format("<h1>autotune check — {}: {} {}</h1>", html_escape(s.b.workload), badge(s.verdict), html_escape(s.verdict)));
  add(fmt::format("<p>{}</p>", html_escape(s.reason)));
  for (const auto& m : s.metrics) {
    add(fmt::format("<h2>{} {} {}</h2>", html_escape(m.name), badge(m.verdict), html_escape(m.verdict)));
    add(fmt::format("<p>A {} · B {} · B/A {:.3f} ({:.3f}–{:.3f}) · p {:.2g} (Holm {:.2g})</p>", html_escape(value(m, m.median_a)),
                    html_escape(value(m, m.median_b)), m.ratio, m.ratio_lo, m.ratio_hi, m.p, m.p_holm));
    add(strip_plot(s, m));
    add(fmt::format("<p class=\"note\">{}</p>", html_escape(m.reason)));
  }
  add("<h2>Sides</h2><table><tr><th>side</th><th>what</th><th>config</th><th>worker</th><th>ok</th><th>ran on</th></tr>");
  for (const CheckSide* side : {&s.a, &s.b})
    add(fmt::format(
        "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td><td class=\"num\">{}/{}</td><td>{}</td></tr>",
        side->name, html_escape(side->source + (side->stored ? " (not re-run)" : "")), html_escape(side->config.key()),
        html_escape(side->worker), ok_reps(*side), side->reps.size(), html_escape(machine(side->env))));
  add("</table>");
  add(fmt::format("<p class=\"note\">{}</p>", html_escape(method_line(s))));
  add("<h2>Repetitions</h2><table><tr><th>side</th><th>#</th><th>order</th><th>samples/s</th><th>peak memory</th><th>status</th></tr>");
  for (const CheckSide* side : {&s.a, &s.b})
    for (const auto& r : side->reps)
      add(fmt::format(
          "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.0f} "
          "MiB</td><td>{}</td></tr>",
          side->name, r.index, r.order ? std::to_string(r.order) : "stored", r.status == "ok" ? with_commas(r.throughput) : "–",
          r.peak_bytes / (1 << 20), html_escape(r.status == "ok" ? r.status : r.status + ": " + r.message)));
  add("</table>");
  add(fmt::format("<p class=\"note\">autotune check · started {} · finished {}</p></body></html>", html_escape(s.started_at),
                  html_escape(s.finished_at)));
  return h;
}

}  // namespace autotune
