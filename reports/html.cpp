#include "reports/html.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "knobs/did_you_mean.h"
#include "knobs/json_get.h"
#include "knobs/knob.h"
#include "knobs/numbers.h"
#include "reports/apply.h"
#include "reports/data_parallel.h"
#include "reports/markdown.h"
#include "reports/html_assets.h"
#include "reports/profile_text.h"
#include "reports/memory_facts.h"
#include "reports/run_facts.h"
#include "reports/noise_facts.h"
#include "reports/ramp_facts.h"

#ifndef AUTOTUNE_CHARTJS_DEFAULT
#define AUTOTUNE_CHARTJS_DEFAULT "/usr/share/javascript/chart.js/chart.min.js"
#endif

namespace autotune {

using nlohmann::json;

std::string chartjs_path() {
  const char* env = std::getenv("AUTOTUNE_CHARTJS");
  return env && *env ? env : AUTOTUNE_CHARTJS_DEFAULT;
}

PhaseTimes per_1k_samples(const ConfigSummary& c) {
  PhaseTimes t;
  double per_step = static_cast<double>(c.batch_size);
  try {
    per_step *= std::stod(c.config.get("grad_accum", "1"));
  } catch (const std::exception&) {
  }
  if (per_step <= 0) return t;
  const double k = 1000.0 / per_step;
  const Breakdown& b = c.breakdown;
  t = {b.data_ms * k, b.h2d_ms * k, b.forward_ms * k, b.backward_ms * k, b.optimizer_ms * k, b.other_ms * k};
  return t;
}

/// JSON inside <script type="application/json">: '<', '>' and '&' as \u escapes, so no string in it
/// can close the element or open a comment ("</script>", "<!--"). JSON only has them inside strings.
std::string script_safe_json(const json& j) {
  const std::string d = j.dump();
  std::string o;
  o.reserve(d.size());
  for (char c : d) {
    if (c == '<') o += "\\u003c";
    else if (c == '>') o += "\\u003e";
    else if (c == '&') o += "\\u0026";
    else o += c;
  }
  return o;
}

/// Escapes `s` and turns the spans marked \x01…\x02 (time_facts' code marks) into <code>.
std::string html_with_code(const std::string& s) {
  std::string out, part;
  for (char c : s) {
    if (c == '\x01' || c == '\x02') {
      out += c == '\x01' ? html_escape(part) : "<code>" + html_escape(part) + "</code>";
      part.clear();
    } else {
      part += c;
    }
  }
  return out + html_escape(part);
}

namespace {

std::string esc(const std::string& s) { return html_escape(s); }
std::string code(const std::string& s) { return "<code>" + esc(s) + "</code>"; }
/// The knobs of `c` that differ from the baseline, "(baseline)" when none: a table cell a reader can scan.
std::string diff_key(const Config& c, const ConfigSummary* base) { return base ? c.diff_key(base->config) : c.key(); }


/// report.html as it is built: the sections append HTML; `data` collects what the charts draw.
struct Page {
  explicit Page(const RunSummary& summary) : s(summary) {}
  const RunSummary& s;
  const ConfigSummary* base = s.baseline >= 0 ? &s.configs[s.baseline] : nullptr;
  const ConfigSummary* win = s.winner >= 0 ? &s.configs[s.winner] : nullptr;
  std::string h;
  json data = json::object();

  void add(const std::string& line) { h += line + "\n"; }

  /// The document head (a Content-Security-Policy that forbids every network fetch), the title, the workload and machine.
  void head() {
    add("<!doctype html>");
    add("<html lang=\"en\"><head><meta charset=\"utf-8\">");
    // Nothing may leave the machine: no fetch, no image, no font from the network.
    add("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; "
        "style-src 'unsafe-inline'; img-src data:\">");
    add("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    add(fmt::format("<title>autotune report — {}</title>", esc(run_title(s))));
    add(fmt::format("<style>{}</style></head><body data-charts=\"pending\">", kReportStyle));
    add(fmt::format("<h1>autotune report — {}</h1>", esc(run_title(s))));
    const EnvFingerprint& e = s.env;
    add(fmt::format("<p class=\"sub\">{} · {}, {} logical CPUs · torch {} ({}) · {} · host {}</p>", esc(s.workload.description),
                    esc(e.device_name.empty() ? "unknown CPU" : e.device_name), e.cpu_cores, esc(e.torch_version),
                    esc(e.cuda_compiled.empty() ? "CPU-only build" : "built with CUDA " + e.cuda_compiled),
                    e.cuda_available ? fmt::format("{} CUDA device(s)", e.device_count) : "no CUDA device (CPU run)",
                    code(e.hostname)));
    if (const std::string m = model_sentence(s.workload); !m.empty()) add("<p class=\"sub\"><b>Model:</b> " + esc(m) + "</p>");
    add("<p class=\"sub\"><b>Data:</b> " + esc(data_line(s)) + "</p>");
    if (const std::string b = busy_host_line(s); !b.empty()) add("<p class=\"warn\"><b>Busy host:</b> " + esc(b) + "</p>");
    if (!s.finished)
      add("<p class=\"warn\">This run was interrupted: the report shows what its journal holds. Continue it with "
          "<code>autotune tune --resume DIR</code>.</p>");
  }

  /// Winner, speedup, confirmation, baseline and search as cards; then tie-break, skipped and folded knobs, unexplored configs.
  void cards() {
    // ---- summary cards
    add("<div class=\"cards\">");
    if (win) {
      const double med = s.confirmation.ran && s.confirmation.median > 0 ? s.confirmation.median : win->median;
      add(fmt::format("<div class=\"card\"><div>Winner</div><div class=\"v\">{} samples/s</div><div>{}</div></div>",
                      with_commas(med), code(changed_knobs(s, win->config))));
      const std::string caveat = speedup_caveat(s);
      add(fmt::format(
          "<div class=\"card\"><div>Speedup over the baseline</div><div class=\"v\">{}</div><div class=\"note\">{}</div></div>",
          s.speedup > 0 ? fmt::format("{:.2f}×", s.speedup) : "–",
          s.speedup > 0 ? fmt::format("95% CI {:.2f}–{:.2f}×, from {}{}", s.speedup_lo, s.speedup_hi, esc(s.speedup_basis),
                                      caveat.empty() ? "" : " — " + esc(caveat))
                        : "the baseline produced no measurement"));
      add(fmt::format("<div class=\"card\"><div>Confirmation</div><div class=\"v {}\">{}</div><div class=\"note\">{}</div></div>",
                      s.confirmation.confirmed ? "pass" : "fail",
                      s.confirmation.confirmed ? "confirmed" : s.confirmation.ran ? "not confirmed" : "not run",
                      esc(s.confirmation.detail)));
    } else {
      add("<div class=\"card\"><div>Winner</div><div class=\"v fail\">" +
          std::string(any_stable(s) ? "none ranked" : "none stable") + "</div><div class=\"note\">" +
          esc(no_stable_config_line(s)) + " (each config's reason: All configs)</div></div>");
    }
    if (base)
      add(fmt::format("<div class=\"card\"><div>Baseline ({})</div><div class=\"v\">{}</div><div>{}</div></div>",
                      baseline_label(s),
                      base->status == TrialStatus::ok ? with_commas(base->median) + " samples/s" : esc(to_string(base->status)),
                      "<span class=\"note\">value by value under The baseline</span>"));
    add(fmt::format(
        "<div class=\"card\"><div>Search</div><div class=\"v\">{} configs · {} processes</div><div class=\"note\">{} over "
        "{}; {:.0f} s of a {:.0f} s budget</div></div>",
        s.configs.size(), s.trials_run, esc(s.strategy), code(s.space), s.elapsed_seconds, s.budget_seconds));
    add("</div>");
    if (win) {
      if (const auto changes = winner_changes(s); !changes.empty()) {
        add("<p>What the winner changes from the baseline, each knob's effect measured against the winner without it:</p>");
        add("<table><tr><th>change</th><th>effect on samples/s</th></tr>");
        for (const auto& ch : changes) add(fmt::format("<tr><td>{}</td><td>{}</td></tr>", code(ch.what), esc(ch.effect)));
        add("</table>");
        if (!s.effects_together.line.empty()) add("<p>" + esc(s.effects_together.line) + ".</p>");
      }
      const TimeFacts t = time_facts(s, [](const std::string& x) { return "\x01" + x + "\x02"; });
      for (const std::string* line : {&t.answer_a, &t.answer_b, &t.answer_c, &t.noise, &t.lr, &t.lr_measured})
        if (!line->empty()) add("<p class=\"answer\">" + html_with_code(*line) + "</p>");
      if (const CompileFacts c = compile_facts(s, s.winner); c.present) add(fmt::format("<p><b>Compile:</b> {}.</p>", esc(c.sentence)));
      if (const std::string m = memory_vs_baseline(s, *win); !m.empty())
        add(fmt::format("<p><b>Memory:</b> {}</p>", esc(m)));
      if (win != base)
        add(fmt::format("<details><summary>Full configs (every knob)</summary><p>winner: {}</p>{}</details>", code(win->config.key()),
                        base ? "<p>baseline: " + code(base->config.key()) + "</p>" : std::string()));
    }
    if (!win)  // the noise scale was measured whatever the verdict
      if (const std::string n = noise_scale_text(s.noise_scale); !n.empty()) add("<p class=\"answer\">" + esc(n) + "</p>");
    if (!s.winner_note.empty()) add(fmt::format("<p><b>Why this pick:</b> {}</p>", esc(s.winner_note)));
    if (!s.skipped_knobs.empty()) {
      add(fmt::format("<p class=\"note\">Not searched on this machine ({} knobs or values):</p>", s.skipped_knobs.size()));
      add("<table><tr><th>knob</th><th>why</th></tr>");
      for (const auto& k : s.skipped_knobs) add(fmt::format("<tr><td>{}</td><td>{}</td></tr>", code(k.knob), esc(k.reason)));
      add("</table>");
    }
    if (!s.folded.empty()) {
      add(fmt::format("<p class=\"note\">Runs as another config ({} proposals measured as the config they amount to here):</p>",
                      s.folded.size()));
      add("<table><tr><th>ran as</th><th>proposed on top, not applicable here</th><th>why</th></tr>");
      for (const FoldRow& r : fold_rows(s)) {
        std::string ignored;
        for (const auto& i : r.ignored) ignored += (ignored.empty() ? "" : ", ") + code(i);
        add(fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>", code(r.runs_as), ignored, esc(join(r.why, "; "))));
      }
      add("</table>");
    }
    if (!s.unexplored.empty()) {
      std::string list;
      for (const auto& c : s.unexplored) list += (list.empty() ? "" : ", ") + code(changed_knobs(s, c));
      add(fmt::format("<p class=\"note\">Not explored (budget): {} configs, each as its change from the baseline — {}</p>",
                      s.unexplored.size(), list));
    }
    add("<noscript><p class=\"warn\">Charts need JavaScript; the tables below hold the same numbers.</p></noscript>");
    add("<p id=\"chart-status\" class=\"note\"></p>");
  }

  /// Each changed knob's effect: a chart and a table.
  void why_it_wins() {
    // ---- why it wins
    json effects = json::array();
    if (win) {
      add("<h2>Why it wins</h2>");
      if (s.knob_effects.empty()) {
        add("<p>The winner is PyTorch's defaults: no knob changed.</p>");
      } else {
        add("<p>" + esc(effects_basis(s)) + ".</p>");
        add("<div class=\"chart\"><canvas id=\"chart-effects\" role=\"img\" aria-label=\"knob effects\"></canvas></div>");
        add("<table><tr><th>knob</th><th>winner</th><th>without</th><th>effect</th><th>95% CI</th><th>tip</th></tr>");
        for (const auto& k : s.knob_effects) {
          add(fmt::format(
              "<tr><td>{}</td><td>{}</td><td>{}{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
              code(k.knob), code(k.winner_value), code(k.without_value),
              k.ratio > 0 && !k.at_default ? " <span class=\"note\">(default not measured)</span>" : "",
              k.ratio > 0 ? fmt::format("{:.2f}×", k.ratio) : esc(k.note),
              k.ratio > 0 ? fmt::format("{:.2f}–{:.2f}×", k.lo, k.hi) : "–", esc(find_knob(k.knob).tip)));
          effects.push_back({{"knob", k.knob},
                             {"winner_value", k.winner_value},
                             {"without_value", k.without_value},
                             {"ratio", k.ratio},
                             {"lo", k.lo},
                             {"hi", k.hi}});
        }
        add("</table>");
        for (const auto& k : s.knob_effects)
          if (k.warns()) add(fmt::format("<p class=\"warn\">{}: {}.</p>", code(k.knob), esc(k.note)));
        if (!s.effects_together.line.empty())
          add(fmt::format("<p{}>{}.</p>", s.effects_together.interact ? " class=\"warn\"" : "", esc(s.effects_together.line)));
      }
      data["effects"] = effects;
    }
  }

  /// Time per 1,000 samples by phase, baseline vs winner: a stacked chart and a table.
  void where_the_time_goes() {
    json breakdown = {{"phases", {"data", "H2D", "forward", "backward", "optimizer", "other"}},
                      {"labels", json::array()},
                      {"values", json::array()}};
    if (base || win) {
      add("<h3>Where the time goes</h3>");
      add("<div class=\"chart\" style=\"height:200px\"><canvas id=\"chart-breakdown\" role=\"img\" aria-label=\"time breakdown\"></canvas></div>");
      add("<table><tr><th>ms per 1,000 samples</th><th>data</th><th>H2D</th><th>forward</th><th>backward</th><th>optimizer</th>"
          "<th>other</th><th>total</th></tr>");
      auto row = [&](const std::string& label, const ConfigSummary& c) {
        const PhaseTimes t = per_1k_samples(c);
        add(fmt::format(
            "<tr><td>{}</td><td class=\"num\">{:.1f}</td><td class=\"num\">{:.1f}</td><td class=\"num\">{:.1f}</td><td "
            "class=\"num\">{:.1f}</td><td class=\"num\">{:.1f}</td><td class=\"num\">{:.1f}</td><td class=\"num\">{:.1f}</td></tr>",
            esc(label), t.data, t.h2d, t.forward, t.backward, t.optimizer, t.other, t.total()));
        breakdown["labels"].push_back(label);
        breakdown["values"].push_back({t.data, t.h2d, t.forward, t.backward, t.optimizer, t.other});
      };
      if (base) row(phase_label("baseline", *base), *base);
      if (win && win != base) row(phase_label("winner", *win), *win);
      add("</table>");
      data["breakdown"] = breakdown;
    }
  }

  /// The bottleneck and the knobs that address it, the traced profiles, the winner's stability checks.
  void verdict_profiles_and_checks() {
    if (win) {
      const Verdict& v = s.verdict;
      if (v.kind.empty()) {
        add(fmt::format("<p><b>Bottleneck:</b> not available — {}.</p>", esc(v.detail)));
      } else {
        add(fmt::format("<p><b>Bottleneck: {}</b> — {}. <span class=\"note\">Basis: {}.</span></p>", esc(v.kind), esc(v.detail),
                        esc(v.basis)));
        if (!v.knobs.empty()) {
          add("<ul>");
          for (const auto& k : v.knobs) add(fmt::format("<li>{}: {}</li>", code(k), esc(find_knob(k).tip)));
          add("</ul>");
        }
      }
      for (const auto& [label, why] : s.unprofiled)
        add(fmt::format("<p class=\"note\"><b>Profile of the {}:</b> {}</p>", esc(label), esc(why)));
      for (const auto& tp : s.profiles) {
        const ProfileText t = profile_text(tp);
        add("<h3>" + esc(t.title) + "</h3>");
        if (!t.reason.empty()) add("<p>" + esc(t.reason) + "</p>");
        for (const auto& l : t.lines) add("<p>" + esc(l) + "</p>");
        if (!t.kernels.empty()) {
          add("<table><tr><th>kernel</th><th>calls</th><th>per call</th><th>time</th><th>share</th><th>launched from</th>"
              "<th>grid × block</th></tr>");
          for (const auto& k : t.kernels)
            add(fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                            "<td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
                            code(k[0]), esc(k[1]), esc(k[2]), esc(k[3]), esc(k[4]), esc(k[5]), esc(k[6])));
          add("</table>");
        }
      }
      add("<h2>Stability checks of the winner</h2>");
      add("<table><tr><th>check</th><th>result</th><th>numbers</th></tr>");
      for (const auto& c : win->checks)
        add(fmt::format("<tr><td>{}</td><td class=\"{}\">{}</td><td>{}</td></tr>", esc(c.name), c.passed ? "pass" : "fail",
                        c.passed ? "pass" : "FAIL", esc(c.detail)));
      add(fmt::format("<tr><td>confirmation</td><td class=\"{}\">{}</td><td>{}</td></tr>",
                      s.confirmation.confirmed ? "pass" : "fail", confirmation_result(s.confirmation),
                      esc(s.confirmation.detail)));
      add("</table>");
    }
  }

  /// Configs with ranks > 1: scaling, communication and its overlap, buckets.
  void data_parallel() {
    const auto rows = data_parallel_rows(s);
    if (rows.empty()) return;
    add("<h2>Data parallel</h2>");
    add("<p>" + esc("Configs that trained on several ranks (processes, gradients averaged by c10d's Reducer). Samples/s count every "
        "rank; scaling efficiency is that ÷ (ranks × the same config in one process); communication is the time a "
        "collective was in flight per step, and hidden is its share that ran while backward was still computing "
        "gradients (before the last bucket was launched).") + "</p>");
    add("<table><tr><th>config</th><th>ranks</th><th>samples/s</th><th>scaling efficiency</th><th>step</th>"
        "<th>communication</th><th>hidden</th><th>collectives/step</th><th>MB/step</th><th>buckets</th></tr>");
    for (const auto& r : rows)
      add(fmt::format("<tr><td>{}</td><td>{} ({})</td><td>{:.1f}</td><td>{}</td><td>{:.1f} ms</td><td>{}</td><td>{}</td>"
                      "<td>{:.1f}</td><td>{:.1f}</td><td>{}</td></tr>",
                      code(r.config), r.ranks, esc(r.backend), r.samples_per_s,
                      r.scaling_efficiency > 0 ? fmt::format("{:.0f}% vs {}", 100 * r.scaling_efficiency, code(r.one_rank_config))
                                               : "– (one-process twin not measured)",
                      r.step_ms, esc(comm_cell(r)), esc(hidden_cell(r)), r.collectives_per_step, r.mb_per_step, esc(r.buckets)));
    add("</table>");
  }

  /// The interleaved re-runs of the leading candidates.
  void confirmation() {
    if (!s.confirmations.empty()) {
      add("<h2>Confirmation</h2>");
      add(std::string("<p>The leading candidates and the baseline re-ran in fresh processes, interleaved (A B base, then base B A) "
                      "so machine drift hits all alike; a candidate confirms when its speedup over the baseline reproduces") +
          (s.confirm_round_lead ? " or it outran every other config in each round" : "") + ".</p>");
      add("<table><tr><th>candidate</th><th>confirmed</th><th>numbers</th></tr>");
      for (const auto& [c, conf] : s.confirmations)
        add(fmt::format("<tr><td>{}</td><td class=\"{}\">{}</td><td>{}</td></tr>", code(diff_key(c, base)),
                        conf.confirmed ? "pass" : "fail", conf.confirmed ? "yes" : "no", esc(conf.detail)));
      add("</table>");
    }
  }

  /// Every worker process in completion order, as a chart.
  void trials_chart() {
    // ---- trials and configs
    json trials = json::array();
    for (const auto& t : s.trials)
      trials.push_back({{"id", t.id},
                        {"kind", t.kind},
                        {"config", t.config},
                        {"status", t.status},
                        {"median", t.median},
                        {"message", t.message}});
    add("<h2>Throughput per trial</h2>");
    add("<p class=\"note\">Every worker process in completion order, coloured by why it ran: baseline (grey), search (blue), "
        "re-measure (light blue), fp32 reference (purple), confirmation (green), ablation (orange), effect rounds (brown); failed runs in red.</p>");
    add("<div class=\"chart\"><canvas id=\"chart-trials\" role=\"img\" aria-label=\"throughput per trial\"></canvas></div>");
    data["trials"] = trials;
  }

  /// Every config measured, and peak memory against batch size.
  void all_configs() {
    json memory = json::array();
    add("<h2>All configs</h2>");
    add(fmt::
            format("<p class=\"note\">End-to-end samples/s (data included), median of the measured windows. Stable = survives, "
                   "finite losses, window IQR/median ≤ {:.3g}%, last window within ±{:.3g}% of the first, peak memory ≤ {:.0f}% of "
                   "the device (CPU: host RAM), fp16 scaler skips ≤ 2%, no allocator retries, loss within 5% of its fp32 "
                   "reference.</p>",
                   100 * s.max_rel_iqr, 100 * s.max_drift, 100 * (1 - s.memory_headroom)));
    if (const std::string n = noise_sentence(s); !n.empty()) add(fmt::format("<p class=\"note\">{}</p>", esc(n)));
    if (base) add("<p class=\"note\">Configs list the knobs that differ from the baseline (PyTorch's defaults).</p>");
    const bool mem = s.memory.on;
    add(std::string("<table><tr><th>#</th><th>config</th><th>phase</th><th>samples/s</th><th>95% CI</th><th>IQR/median</th><th>peak memory (share)</th>") +
        (mem ? "<th>device memory (predicted [interval] → measured)</th>" : "") + "<th>trials</th><th>status</th><th>verdict</th></tr>");
    for (size_t i = 0; i < s.configs.size(); ++i) {
      const ConfigSummary& c = s.configs[i];
      const bool ok = c.status == TrialStatus::ok;
      std::string ids;
      for (auto id : c.trial_ids) ids += (ids.empty() ? "" : ",") + std::to_string(id);
      const std::string verdict = config_verdict(s, i, "<b>winner</b>", esc);
      add(fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
          "<td class=\"num\">{}</td>{}<td>{}</td><td>{}</td><td>{}</td></tr>",
          i + 1, fmt::format("<code title=\"{}\">{}</code>", esc(c.config.key()), esc(diff_key(c.config, base))), esc(c.phase),
          ok ? with_commas(c.median) : "–", ok ? with_commas(c.ci_lo) + "–" + with_commas(c.ci_hi) : "–",
          ok ? fmt::format("{:.1f}%", 100 * c.rel_iqr) : "–", peak_share(c),
          mem ? "<td class=\"num\">" + esc(memory_cell(s, c)) + "</td>" : "", ids, esc(to_string(c.status)), verdict));
      if (ok && c.peak_bytes > 0 && c.batch_size > 0)
        memory.push_back({{"batch", c.batch_size},
                          {"mib", static_cast<double>(c.peak_bytes) / (1 << 20)},
                          {"eligible", c.eligible},
                          {"config", c.config.key()}});
      data["memory"] = memory;
    }
    add("</table>");
    if (mem) {
      add("<h2>Memory model</h2>");
      for (const auto& n : memory_notes(s)) add("<p class=\"note\">" + esc(n) + "</p>");
      add("<table><tr><th>config</th><th>predicted peak [interval]</th><th>measured (error)</th><th>breakdown</th><th>decision</th></tr>");
      for (const auto& r : memory_rows(s))
        add(fmt::format("<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", esc(r.config), esc(r.predicted),
                        esc(r.measured), esc(r.breakdown), esc(r.decision)));
      add("</table>");
    }
    if (const auto facts = scale_out_facts(s); !facts.empty()) {  // docs/scale-out.md
      add("<h2>Where the trials ran</h2>");
      for (const auto& [label, text] : facts) add("<p><b>" + esc(label) + ":</b> " + esc(text) + "</p>");
    }
    add("<h2>Peak memory vs batch size</h2>");
    add(fmt::format("<p class=\"note\">{} per successful config.</p>",
                    s.env.cuda_available ? "CUDA caching-allocator peak" : "Process peak resident memory (CPU run)"));
    add("<div class=\"chart\"><canvas id=\"chart-memory\" role=\"img\" aria-label=\"peak memory vs batch size\"></canvas></div>");
  }

  /// Answer (c)'s phases (reports/ramp_facts.h): the sentence is among the answers above, the schedule here.
  void batch_ramp() {
    const auto rows = ramp_rows(s);
    if (rows.empty()) return;
    add("<h2>A batch ramp</h2>");
    add("<table><tr><th>phase</th><th>global batch = micro × grad_accum</th><th>its own samples</th><th>B at its start</th>"
        "<th>samples/s</th><th>predicted time</th><th>learning rate (AdamW; SGD)</th></tr>");
    for (const auto& r : rows)
      add(fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", esc(r.phase),
                      esc(r.batch), esc(r.span), esc(r.noise), esc(r.rate), esc(r.time), esc(r.lr)));
    add("</table>");
  }

  /// The noise scale along the noise-scale trial (docs/time-to-train.md): its windows as a table, and two charts —
  /// B_simple against samples with the fitted growth out to the run's length, and against the loss.
  void noise_along_run() {
    const NoiseScaleSummary& n = s.noise_scale;
    const auto rows = noise_window_rows(n);
    if (rows.empty()) return;
    add("<h2>The noise scale along the run</h2>");
    add("<table><tr><th>window (samples since the first step)</th><th>steps</th><th>B_simple [95%]</th><th>loss</th></tr>");
    for (const auto& r : rows)
      add(fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", esc(r.span), esc(r.steps), esc(r.value), esc(r.loss)));
    add("</table>");
    json windows = json::array(), fit = json::array(), loss_fit = json::array();
    for (const auto& w : n.windows)
      windows.push_back({{"x", std::sqrt(static_cast<double>(std::max<std::int64_t>(1, w.from_samples)) * static_cast<double>(w.to_samples))},
                         {"y", w.value}, {"lo", w.lo}, {"hi", finite_or_null(w.hi)}, {"loss", w.loss}});
    for (const auto& [x, y] : noise_fit_points(n)) fit.push_back({{"x", x}, {"y", y}});
    for (const auto& [x, y] : noise_loss_fit_points(n)) loss_fit.push_back({{"x", x}, {"y", y}});
    data["noise"] = {{"windows", windows}, {"fit", fit}, {"loss_fit", loss_fit},
                     {"run_mean", n.over_run ? n.value : 0.0}, {"run_samples", n.run_samples}};
    add(fmt::format("<p class=\"note\">Points: each window's B_simple (tooltip: its 95% interval). Line: the growth fitted "
                    "through them{}.</p>",
                    n.over_run ? fmt::format(", out to the run's {} samples (dashed: B̄ over the run, {})", with_commas(n.run_samples),
                                             with_commas(n.value))
                               : ""));
    add("<div class=\"chart\"><canvas id=\"chart-noise-samples\" role=\"img\" aria-label=\"noise scale against samples\"></canvas></div>");
    if (!loss_fit.empty())
      add("<div class=\"chart\"><canvas id=\"chart-noise-loss\" role=\"img\" aria-label=\"noise scale against loss\"></canvas></div>");
  }

  /// The loss curves of winner, fp32 reference and baseline.
  void loss_curves() {
    json losses = json::array();
    for (const auto& c : s.loss_curves) losses.push_back({{"label", c.label}, {"losses", c.losses}, {"stride", c.stride}});
    if (!s.loss_curves.empty()) {
      add("<h2>Loss curves</h2>");
      add("<p class=\"note\">Per-step training loss, warm-up included: the winner, its fp32 reference run (same batch, seed and "
          "data) when its precision changes numerics, and the baseline. Gaps are non-finite steps.</p>");
      if (synthetic_data(s))
        add("<p class=\"note\"><b>Synthetic data:</b> every step draws from the same small pool of random samples kept on "
            "the device, so the loss falls as the model memorises that pool. A faster fall here is not faster learning: "
            "<code>autotune converge</code> on real data (<code>--data</code>) measures time to a loss.</p>");
      add("<div class=\"chart\"><canvas id=\"chart-loss\" role=\"img\" aria-label=\"loss curves\"></canvas></div>");
      data["losses"] = losses;
    }
  }

  /// The baseline's values, each with where it is PyTorch's default (runs with sourced defaults).
  void baseline_table() {
    if (s.frontend.empty() || s.baseline_sources.empty()) return;
    add("<h2>The baseline</h2>");
    add(fmt::format("<p>What a plain {} training script does when it sets nothing (PyTorch 2.11), value by value:</p>",
                    frontend_words(s)));
    add("<table><tr><th>knob</th><th>baseline</th><th>why it is the default</th></tr>");
    for (const auto& b : s.baseline_sources)
      add(fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>", code(b.knob), code(b.value), esc(b.source)));
    add("</table>");
  }

  /// The winner as C++ and Python, and the worker's heap policy; then the footer.
  void how_to_apply() {
    // ---- how to apply
    if (win) {
      const ApplySnippets snip =
          apply_snippets(win->config, s.env.cuda_available ? "cuda" : "cpu",
                         baseline_defaults(s), apply_subject(s.workload), lr_hint(s));
      add("<h2>How to apply</h2>");
      if (snip.cpp.empty() && snip.python.empty()) add("<p>The winner is PyTorch's defaults: nothing to change.</p>");
      std::string cpp, py;
      for (const auto& l : snip.cpp) cpp += esc(l) + "\n";
      for (const auto& l : snip.python) py += esc(l) + "\n";
      if (!cpp.empty()) add("<p>C++ (LibTorch):</p><pre><code>" + cpp + "</code></pre>");  // (none for a task: it is Python)
      if (!py.empty()) add("<p>Python:</p><pre><code>" + py + "</code></pre>");
      const ApplySnippets heap = heap_snippets(win->host_malloc);
      if (!heap.cpp.empty()) {
        add("<p>" + esc(heap_note(win->host_malloc, win->minor_faults_per_step)) + "</p>");
        add("<pre><code>" + esc(heap.cpp.front()) + "\n</code></pre>");
        add("<pre><code>" + esc(heap.python.front()) + "\n</code></pre>");
      }
    }
    add(fmt::format("<p class=\"note\">autotune {} · started {} · finished {}</p>", esc(s.env.autotune_version),
                    esc(s.started_at), esc(s.finished_at.empty() ? "(interrupted)" : s.finished_at)));
  }

  /// The run's data as a JSON block, Chart.js inlined (or why the charts are missing), and the page's own script.
  void scripts() {
    add("<script type=\"application/json\" id=\"autotune-data\">" + script_safe_json(data) + "</script>");
    std::string why_missing;
    const std::string chartjs = read_chartjs(why_missing);
    if (chartjs.empty()) {
      add(fmt::format("<script>document.getElementById('chart-status').textContent = {};</script>",
                      script_safe_json(json("Charts unavailable: " + why_missing + ". The tables hold the same numbers."))));
    } else {
      add("<script>" + chartjs + "</script>");
    }
    add("<script>" + report_script() + "</script>");
    add("</body></html>");
  }
};

}  // namespace

std::string render_html(const RunSummary& s) {
  Page page(s);
  page.head();
  page.cards();
  page.why_it_wins();
  page.where_the_time_goes();
  page.verdict_profiles_and_checks();
  page.confirmation();
  page.noise_along_run();
  page.batch_ramp();
  page.baseline_table();
  page.data_parallel();
  page.trials_chart();
  page.all_configs();
  page.loss_curves();
  page.how_to_apply();
  page.scripts();
  return page.h;
}

}  // namespace autotune
