#include "reports/markdown.h"

#include <fmt/format.h>

#include <cctype>

#include <cmath>

#include "knobs/did_you_mean.h"
#include "knobs/knob.h"
#include "knobs/numbers.h"
#include "reports/apply.h"
#include "reports/data_parallel.h"
#include "reports/html.h"
#include "reports/profile_text.h"
#include "reports/memory_facts.h"
#include "reports/run_facts.h"
#include "reports/noise_facts.h"
#include "reports/ramp_facts.h"

namespace autotune {

std::string peak_share(const ConfigSummary& c) {
  if (c.peak_bytes <= 0) return "–";
  if (c.memory_total_bytes <= 0) return mib(c.peak_bytes);
  return fmt::format("{} ({:.1f}%)", mib(c.peak_bytes),
                     100.0 * static_cast<double>(c.peak_bytes) / static_cast<double>(c.memory_total_bytes));
}

namespace {

/// Whether s[from…] is a name and a ';' ("lt;", "amp;"): with a '&' before it, an HTML entity.
bool entity_name_follows(const std::string& s, size_t from) {
  size_t j = from;
  while (j < s.size() && std::isalnum(static_cast<unsigned char>(s[j]))) ++j;
  return j > from && j < s.size() && s[j] == ';';
}

}  // namespace

std::string md_cell(const std::string& s) {
  // Readable as plain text too: only what a renderer would take for markup is escaped, with a backslash — a '<' that
  // would open a tag ("<script", "</", "<!"), a '&' that would start an entity ("&lt;", "&#60;") — never HTML
  // entities a reader of the raw file would have to decode. "IQR 6.2% > 5%" stays as it is.
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const char next = i + 1 < s.size() ? s[i + 1] : '\0';
    const bool alpha = std::isalpha(static_cast<unsigned char>(next)) != 0;  // "<script", not "a < b"
    if (c == '|') o += "\\|";
    else if (c == '\n') o += ' ';
    else if (c == '<' && (alpha || next == '/' || next == '!' || next == '?')) o += "\\<";
    else if (c == '&' && (next == '#' || entity_name_follows(s, i + 1))) o += "\\&";
    else o += c;
  }
  return o;
}

std::string md_code(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '|') o += "\\|";
    else if (c == '\n') o += ' ';
    else if (c == '`') o += '\'';
    else o += c;
  }
  return "`" + o + "`";
}

namespace {

std::string device_line(const EnvFingerprint& e) {
  std::string cuda = e.cuda_compiled.empty() ? "CPU-only build" : "built with CUDA " + e.cuda_compiled;
  std::string dev = e.cuda_available ? fmt::format("{} CUDA device(s)", e.device_count) : "no CUDA device (CPU run)";
  return fmt::format("{}, {} logical CPUs · torch {} ({}) · {} · host {}",
                     md_cell(e.device_name.empty() ? "unknown CPU" : e.device_name), e.cpu_cores, md_cell(e.torch_version),
                     md_cell(cuda), dev, md_code(e.hostname));
}

}  // namespace

namespace {

/// A config's predicted speed to the same loss over the baseline's, from the search numbers: its samples/s ratio
/// × (B0 + B̄)/(B + B̄) (docs/time-to-train.md); at the user's batch the samples/s ratio; "not ranked" at another
/// batch without a usable noise scale.
std::string predicted_time_cell(const RunSummary& s, const ConfigSummary& c) {
  if (s.baseline < 0 || s.configs[s.baseline].median <= 0) return "–";
  const double x = c.median / s.configs[s.baseline].median;
  if (c.global_batch == s.user_batch) return fmt::format("{:.2f}×", x);
  if (!s.noise_scale.usable) return "not ranked";
  const double bn = s.noise_scale.value, b0 = static_cast<double>(s.user_batch), b = static_cast<double>(c.global_batch);
  return fmt::format("{:.2f}×", x * (std::isfinite(bn) ? (b0 + bn) / (b + bn) : 1.0));
}

/// After the speedup: what it means for the time to train under the time objective.
std::string time_clause(const RunSummary& s) {
  if (!s.by_time || s.winner < 0) return "";
  if (s.configs[s.winner].global_batch == s.user_batch)
    return fmt::format(". The winner trains your global batch of {}: its time to train shrinks by the same factor", s.user_batch);
  return fmt::format(". The winner changes the global batch to {}: predicted **{:.2f}×** the baseline's speed to the same loss",
                     s.configs[s.winner].global_batch, s.time_speedup);
}

/// report.md as it is built: one line at a time.
struct Text {
  std::string md;
  void add(const std::string& line) { md += line + "\n"; }
};

/// The title, the workload and the machine; a warning when the run was interrupted.
void header(const RunSummary& s, Text& out) {
  out.add(fmt::format("# autotune report — {}", md_cell(run_title(s))));
  out.add("");
  out.add(fmt::format("{} · {}", md_cell(s.workload.description), device_line(s.env)));
  out.add("");
  if (const std::string m = model_sentence(s.workload); !m.empty()) {
    out.add("**Model:** " + md_cell(m));
    out.add("");
  }
  out.add("**Data:** " + md_cell(data_line(s)));
  out.add("");
  if (const std::string b = busy_host_line(s); !b.empty()) {
    out.add("> **Busy host:** " + md_cell(b));
    out.add("");
  }
  if (!s.finished) {
    out.add("> **Interrupted run:** this report shows what the journal holds; continue with `autotune tune --resume DIR`.");
    out.add("");
  }
}

/// The winner's compile (what it cost and how it was priced) and its memory against the baseline's, on the first screen.
void compile_and_memory(const RunSummary& s, const ConfigSummary& w, Text& out) {
  if (const CompileFacts c = compile_facts(s, s.winner); c.present) {
    out.add("**Compile:** " + md_cell(c.sentence) + ".");
    out.add("");
  }
  if (const std::string m = memory_vs_baseline(s, w); !m.empty()) {
    out.add(fmt::format("**Memory:** {}", md_cell(m)));
    out.add("");
  }
}

/// No config won: why, and the noise scale, which was measured whatever the verdict.
void no_winner(const RunSummary& s, Text& out) {
  out.add("**" + no_winner_label(s) + ":** " + md_cell(no_stable_config_line(s)) + " (each config's reason: the table below).");
  if (const std::string n = noise_scale_text(s.noise_scale); !n.empty()) {
    out.add("");
    out.add(md_cell(n));
  }
}

/// Winner, speedup, confirmation, baseline, what was searched and what was not.
void summary(const RunSummary& s, Text& out) {
  const ConfigSummary* base = s.baseline >= 0 ? &s.configs[s.baseline] : nullptr;
  if (s.winner >= 0) {
    const ConfigSummary& w = s.configs[s.winner];
    const Headline h = headline(s, [](const std::string& x) { return md_code(x); });
    out.add("**Winner:** " + md_cell(h.winner));
    out.add("");
    if (const auto changes = winner_changes(s); !changes.empty()) {
      out.add("What it changes from the baseline, each knob's effect measured against the winner without it:");
      out.add("");
      out.add("| change | effect on samples/s |");
      out.add("|---|---|");
      for (const auto& ch : changes) out.add(fmt::format("| {} | {} |", md_code(ch.what), md_cell(ch.effect)));
      out.add("");
      if (!s.effects_together.line.empty()) {
        out.add(md_cell(s.effects_together.line) + ".");
        out.add("");
      }
    }
    out.add("**Speedup over the baseline:** " + md_cell(h.speedup) + (s.speedup > 0 ? time_clause(s) : ""));
    out.add("");
    compile_and_memory(s, w, out);
    out.add(fmt::format("**Confirmation:** {} {}", s.confirmation.confirmed ? "✅" : "⚠️", md_cell(s.confirmation.detail)));
    if (!s.winner_note.empty()) {
      out.add("");
      out.add(fmt::format("**Why this pick:** {}", md_cell(s.winner_note)));
    }
    const TimeFacts t = time_facts(s, [](const std::string& x) { return md_code(x); });
    for (const std::string* line : {&t.answer_a, &t.answer_b, &t.answer_c, &t.noise, &t.lr, &t.lr_measured})
      if (!line->empty()) {
        out.add("");
        out.add(md_cell(*line));
      }
    if (const auto rows = ramp_rows(s); !rows.empty()) {  // answer (c)'s phases
      out.add("");
      out.add("| ramp phase | global batch = micro × grad_accum | its own samples | B at its start | samples/s | predicted time | learning rate (AdamW; SGD) |");
      out.add("|---|---|---:|---:|---:|---:|---|");
      for (const auto& r : rows)
        out.add(fmt::format("| {} | {} | {} | {} | {} | {} | {} |", r.phase, r.batch, r.span, r.noise, r.rate, r.time, r.lr));
    }
    if (const auto rows = noise_window_rows(s.noise_scale); !rows.empty()) {  // the noise scale along the trial
      out.add("");
      out.add("| window (samples since the first step) | steps | B_simple [95%] | loss |");
      out.add("|---|---:|---:|---:|");
      for (const auto& r : rows) out.add(fmt::format("| {} | {} | {} | {} |", r.span, r.steps, r.value, r.loss));
    }
  } else {
    no_winner(s, out);
  }
  out.add("");
  if (base)
    out.add(fmt::format("**Baseline:** {} (value by value in \"The baseline\" below) — {}", baseline_label(s),
                        base->status == TrialStatus::ok ? with_commas(base->median) + " samples/s" : to_string(base->status)));
  out.add("");
  out.add(fmt::format("**Search:** {} over {}; {} measured in {} worker process{}, {:.0f} s of a {:.0f} s budget.", s.strategy,
                      md_code(s.space), s.configs.size() == 1 ? std::string("1 config") : fmt::format("{} configs", s.configs.size()),
                      s.trials_run, s.trials_run == 1 ? "" : "es", s.elapsed_seconds, s.budget_seconds));
  if (!s.unexplored.empty()) {
    std::string list;
    for (const auto& c : s.unexplored) list += (list.empty() ? "" : ", ") + md_code(changed_knobs(s, c));
    out.add("");
    out.add(fmt::format("**Not explored (budget):** {} configs, each as its change from the baseline — {}", s.unexplored.size(),
                        list));
  }
  if (!s.skipped_knobs.empty()) {  // one table, not a paragraph per knob
    out.add("");
    out.add(fmt::format("**Not searched on this machine** ({} knobs or values):", s.skipped_knobs.size()));
    out.add("");
    out.add("| knob | why |");
    out.add("|---|---|");
    for (const auto& k : s.skipped_knobs) out.add(fmt::format("| {} | {} |", md_code(k.knob), md_cell(k.reason)));
  }
  if (!s.folded.empty()) {
    // One table, each proposal as its change from the baseline: an auto search on a CPU folds many.
    out.add("");
    out.add(fmt::format("**Runs as another config** ({} proposals measured as the config they amount to here):",
                        s.folded.size()));
    out.add("");
    out.add("| ran as | proposed on top, not applicable here | why |");
    out.add("|---|---|---|");
    for (const FoldRow& r : fold_rows(s)) {
      std::string ignored;
      for (const auto& i : r.ignored) ignored += (ignored.empty() ? "" : ", ") + md_code(i);
      out.add(fmt::format("| {} | {} | {} |", md_code(r.runs_as), ignored, md_cell(join(r.why, "; "))));
    }
  }
  if (s.winner >= 0 && s.winner != s.baseline) {
    out.add("");
    out.add("<details><summary>Full configs (every knob), winner and baseline</summary>");
    out.add("");
    out.add(fmt::format("- winner: {}", md_code(s.configs[s.winner].config.key())));
    if (base) out.add(fmt::format("- baseline: {}", md_code(base->config.key())));
    out.add("");
    out.add("</details>");
  }
  out.add("");
}

/// Each stability check of the winner, with its numbers.
void stability(const RunSummary& s, Text& out) {
  if (s.winner >= 0) {
    out.add("## Stability checks of the winner");
    out.add("");
    out.add("| check | result | numbers |");
    out.add("|---|---|---|");
    for (const auto& c : s.configs[s.winner].checks)
      out.add(fmt::format("| {} | {} | {} |", md_cell(c.name), c.passed ? "pass" : "FAIL", md_cell(c.detail)));
    out.add(
        fmt::format("| confirmation | {} | {} |", confirmation_result(s.confirmation), md_cell(s.confirmation.detail)));
    out.add("");
  }
}

/// Each changed knob's effect, where the time goes, and the bottleneck with the knobs that address it.
void why_it_wins(const RunSummary& s, Text& out) {
  const ConfigSummary* base = s.baseline >= 0 ? &s.configs[s.baseline] : nullptr;
  if (s.winner >= 0) {
    const ConfigSummary& w = s.configs[s.winner];
    out.add("## Why it wins");
    out.add("");
    if (s.knob_effects.empty()) {
      out.add("The winner is PyTorch's defaults: no knob changed.");
    } else {
      out.add(effects_basis(s) + ", largest first:");
      out.add("");
      out.add("| knob | winner | without | effect | 95% CI | tip |");
      out.add("|---|---|---|---:|---|---|");
      for (const auto& k : s.knob_effects)
        out.add(fmt::format("| {} | {} | {}{} | {} | {} | {} |", md_code(k.knob), md_code(k.winner_value),
                            md_code(k.without_value), k.ratio > 0 && !k.at_default ? " (default not measured)" : "",
                            k.ratio > 0 ? fmt::format("{:.2f}×", k.ratio) : md_cell(k.note),
                            k.ratio > 0 ? fmt::format("{:.2f}–{:.2f}×", k.lo, k.hi) : "–", md_cell(find_knob(k.knob).tip)));
      for (const auto& k : s.knob_effects)
        if (k.warns()) {
          out.add("");
          out.add(fmt::format("⚠️ {}: {}.", md_code(k.knob), md_cell(k.note)));
        }
      if (!s.effects_together.line.empty()) {
        out.add("");
        out.add(fmt::format("{}{}.", s.effects_together.interact ? "⚠️ " : "", md_cell(s.effects_together.line)));
      }
    }
    out.add("");
    out.add("Where the time goes (host time per phase, ms per 1,000 samples):");
    out.add("");
    out.add("| | data | H2D | forward | backward | optimizer | other | total |");
    out.add("|---|---:|---:|---:|---:|---:|---:|---:|");
    auto row = [&](const std::string& label, const ConfigSummary& c) {
      const PhaseTimes t = per_1k_samples(c);
      out.add(fmt::format("| {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} |", label, t.data, t.h2d,
                          t.forward, t.backward, t.optimizer, t.other, t.total()));
    };
    if (base) row(phase_label("baseline", *base), *base);
    if (s.winner != s.baseline) row(phase_label("winner", w), w);
    out.add("");
    const Verdict& v = s.verdict;
    if (v.kind.empty()) {
      out.add(fmt::format("**Bottleneck:** not available — {}.", md_cell(v.detail)));
    } else {
      out.add(fmt::format("**Bottleneck: {}** — {}. Basis: {}.", v.kind, md_cell(v.detail), md_cell(v.basis)));
      for (const auto& k : v.knobs) {
        if (&k == &v.knobs.front()) out.add("");
        out.add(fmt::format("- {}: {}", md_code(k), md_cell(find_knob(k).tip)));
      }
    }
    out.add("");
  }
}

/// The traced profiles of winner and baseline.
void profiles(const RunSummary& s, Text& out) {
  for (const auto& [label, why] : s.unprofiled) {
    out.add(fmt::format("**Profile of the {}:** {}", label, md_cell(why)));
    out.add("");
  }
  for (const auto& tp : s.profiles) {
    const ProfileText t = profile_text(tp);
    out.add("### " + md_cell(t.title));
    out.add("");
    if (!t.reason.empty()) {
      out.add(md_cell(t.reason));
      out.add("");
    }
    for (const auto& l : t.lines) {
      out.add(md_cell(l));
      out.add("");
    }
    if (!t.kernels.empty()) {
      out.add("| kernel | calls | per call | time | share | launched from | grid × block |");
      out.add("|---|---:|---:|---:|---:|---|---|");
      for (const auto& k : t.kernels)
        out.add(fmt::format("| {} | {} | {} | {} | {} | {} | {} |", md_code(k[0]), k[1], k[2], k[3], k[4], k[5], k[6]));
      out.add("");
    }
  }
}

/// Configs with ranks > 1: scaling, communication and its overlap, buckets.
void data_parallel(const RunSummary& s, Text& out) {
  const auto rows = data_parallel_rows(s);
  if (rows.empty()) return;
  out.add("## Data parallel");
  out.add("");
  out.add("Configs that trained on several ranks (processes, gradients averaged by c10d's Reducer). Samples/s count every "
        "rank; scaling efficiency is that ÷ (ranks × the same config in one process); communication is the time a "
        "collective was in flight per step, and hidden is its share that ran while backward was still computing "
        "gradients (before the last bucket was launched).");
  out.add("");
  out.add("| config | ranks | samples/s | scaling efficiency | step | communication | hidden | collectives/step | MB/step | buckets |");
  out.add("|---|---:|---:|---|---:|---:|---:|---:|---:|---|");
  for (const auto& r : rows)
    out.add(fmt::format("| {} | {} ({}) | {} | {} | {:.1f} ms | {} | {} | {:.1f} | {:.1f} | {} |", md_code(r.config), r.ranks,
                        r.backend, with_commas(r.samples_per_s),
                        r.scaling_efficiency > 0
                            ? fmt::format("{:.0f}% vs {}", 100 * r.scaling_efficiency, md_code(r.one_rank_config))
                            : "– (one-process twin not measured)",
                        r.step_ms, comm_cell(r), hidden_cell(r), r.collectives_per_step, r.mb_per_step, md_cell(r.buckets)));
  out.add("");
}

/// The interleaved re-runs of the leading candidates.
void confirmation(const RunSummary& s, Text& out) {
  if (!s.confirmations.empty()) {
    out.add("## Confirmation");
    out.add("");
    out.add(
        std::string("The leading candidates and the baseline re-run in fresh processes, interleaved (A B base, then base B A) "
                    "so machine drift hits all alike; a candidate confirms when its speedup over the baseline reproduces") +
        (s.confirm_round_lead ? " or it outran every other config in each round" : "") +
        ", and the winner and the speedup come from these runs.");
    out.add("");
    out.add("| candidate | confirmed | numbers |");
    out.add("|---|---|---|");
    for (const auto& [c, conf] : s.confirmations)
      out.add(fmt::format("| {} | {} | {} |", md_code(changed_knobs(s, c)), conf.confirmed ? "yes" : "no", md_cell(conf.detail)));
    out.add("");
  }
}

/// The baseline's values, each with where it is PyTorch's default (runs with sourced defaults).
void baseline_table(const RunSummary& s, Text& out) {
  if (s.frontend.empty() || s.baseline_sources.empty()) return;
  out.add("## The baseline");
  out.add("");
  const std::string measured_by = trainer_words(s);
  out.add(fmt::format("What a plain {} training script does when it sets nothing (PyTorch 2.11; `--frontend` picks the "
                      "frontend), value by value.{}",
                      frontend_words(s), measured_by.empty() ? "" : " " + measured_by));
  out.add("");
  out.add("| knob | baseline | why it is the default |");
  out.add("|---|---|---|");
  for (const auto& b : s.baseline_sources) out.add(fmt::format("| {} | {} | {} |", md_code(b.knob), md_code(b.value), md_cell(b.source)));
  out.add("");
}

/// Every config measured; over `max_rows`, only the winner and baseline rows and a count of the rest.
void all_configs(const RunSummary& s, Text& out, std::size_t max_rows, std::size_t& rows_left_out) {
  out.add("## All trials");
  out.add("");
  out.add(
      fmt::format("Throughput is end to end (data included), median of the measured windows; a config is stable when "
                  "it survives, has finite losses, window IQR/median ≤ {:.3g}%, a last window within ±{:.3g}% of the first "
                  "(settled) and peak memory ≤ {:.0f}% of the "
                  "device (CPU: host RAM), and — where they apply — fp16 scaler skips ≤ 2%, no allocator retries, "
                  "and a loss trajectory within 5% of its fp32 reference run (see docs/search.md).",
                  100 * s.max_rel_iqr, 100 * s.max_drift, 100 * (1 - s.memory_headroom)));
  if (const std::string n = noise_sentence(s); !n.empty()) {
    out.add("");
    out.add(n);
  }
  out.add("");
  out.add("Each config is listed as its change from the baseline (`(baseline)`: PyTorch's defaults).");
  out.add("");
  const bool timed = s.by_time;  // the time objective: each config's global batch and predicted speed to the loss
  const bool mem = s.memory.on;              // the memory model: predicted [interval] → measured
  const std::string mem_head = mem ? " device memory (predicted [interval] → measured) |" : "";
  const std::string mem_rule = mem ? "---:|" : "";
  if (timed) {
    out.add("| # | config | samples/s | 95% CI | IQR/median | global batch | to the loss (predicted, × baseline) | peak memory (share) "
            "|" + mem_head + " trials | status | verdict |");
    out.add("|---|---|---:|---|---:|---:|---:|---:|" + mem_rule + "---|---|---|");
  } else {
    out.add("| # | config | samples/s | 95% CI | IQR/median | peak memory (share) |" + mem_head + " trials | status | verdict |");
    out.add("|---|---|---:|---|---:|---:|" + mem_rule + "---|---|---|");
  }
  for (size_t i = 0; i < s.configs.size(); ++i) {
    const ConfigSummary& c = s.configs[i];
    // Over the size limit: the winner and baseline rows always, the rest until the row budget ends.
    if (i >= max_rows && static_cast<int>(i) != s.winner && static_cast<int>(i) != s.baseline) {
      ++rows_left_out;
      continue;
    }
    std::string ids;
    for (auto id : c.trial_ids) ids += (ids.empty() ? "" : ",") + std::to_string(id);
    const std::string verdict = config_verdict(s, i, "**winner**", md_cell);
    const bool ok = c.status == TrialStatus::ok;
    const std::string time_cells = timed ? fmt::format(" {} | {} |", c.global_batch, ok ? predicted_time_cell(s, c) : "–") : "";
    out.add(fmt::format("| {} | {} | {} | {} | {} |{} {} |{} {} | {} | {} |", i + 1, md_code(changed_knobs(s, c.config)),
                        ok ? with_commas(c.median) : "–", ok ? with_commas(c.ci_lo) + "–" + with_commas(c.ci_hi) : "–",
                        ok ? fmt::format("{:.1f}%", 100 * c.rel_iqr) : "–", time_cells, peak_share(c),
                        mem ? " " + md_cell(memory_cell(s, c)) + " |" : "", ids, to_string(c.status), verdict));
  }
  if (rows_left_out)
    out.add(fmt::format(
        "\n{} more configs are left out to keep this file under its size limit; report.html and results.json list them all.",
        rows_left_out));
  bool compiled = false;  // each compiled config's compile, as its row's samples/s were priced
  for (size_t i = 0; i < s.configs.size(); ++i)
    if (const CompileFacts f = compile_facts(s, i); f.present) {
      if (!compiled) out.add("\ntorch.compile in this run, per config (by its row's #):\n");
      compiled = true;
      out.add(fmt::format("- #{} {}: {}.", i + 1, md_code(changed_knobs(s, s.configs[i].config)), md_cell(f.sentence)));
    }
  out.add("");
}

/// A parallel run: its slots, what running side by side cost, wall time against device time (run_facts.h).
void scale_out(const RunSummary& s, Text& out) {
  const auto facts = scale_out_facts(s);
  if (facts.empty()) return;
  out.add("## Where the trials ran");
  out.add("");
  for (const auto& [label, text] : facts) {
    out.add(fmt::format("**{}:** {}", label, text));
    out.add("");
  }
}

/// The memory model's predictions against what ran, and what it skipped (runs with --memory-cap).
void memory_model(const RunSummary& s, Text& out) {
  if (!s.memory.on) return;
  out.add("## Memory");
  out.add("");
  for (const auto& n : memory_notes(s)) {
    out.add(md_cell(n));
    out.add("");
  }
  const auto rows = memory_rows(s);
  if (rows.empty()) return;
  out.add("| config | predicted peak [interval] | measured (error) | breakdown | decision |");
  out.add("|---|---|---|---|---|");
  for (const auto& r : rows)
    out.add(fmt::format("| {} | {} | {} | {} | {} |", md_code(r.config), md_cell(r.predicted), md_cell(r.measured),
                        md_cell(r.breakdown), md_cell(r.decision)));
  out.add("");
}

/// The winner as C++ and Python, the worker's heap policy, and why each knob matters; then the footer.
void how_to_apply(const RunSummary& s, Text& out) {
  if (s.winner >= 0) {
    const Config& cfg = s.configs[s.winner].config;
    const ApplySnippets snip =
        apply_snippets(cfg, s.env.cuda_available ? "cuda" : "cpu",
                       baseline_defaults(s), apply_subject(s.workload), lr_hint(s));
    out.add("## How to apply");
    out.add("");
    if (snip.cpp.empty() && snip.python.empty()) {
      out.add("The winner is PyTorch's defaults: nothing to change.");
      out.add("");
    }
    if (!snip.cpp.empty()) {  // (none for a task: its training is Python)
      out.add("C++ (LibTorch):");
      out.add("");
      out.add("```cpp");
      for (const auto& l : snip.cpp) out.add(l);
      out.add("```");
      out.add("");
    }
    if (!snip.python.empty()) {
      out.add("Python:");
      out.add("");
      out.add("```python");
      for (const auto& l : snip.python) out.add(l);
      out.add("```");
      out.add("");
    }
    const ConfigSummary& w = s.configs[s.winner];
    const ApplySnippets heap = heap_snippets(w.host_malloc);
    if (!heap.cpp.empty()) {
      out.add(heap_note(w.host_malloc, w.minor_faults_per_step));
      out.add("");
      out.add("```cpp");
      for (const auto& l : heap.cpp) out.add(l);
      out.add("```");
      out.add("");
      out.add("```sh");
      for (const auto& l : heap.python) out.add(l);
      out.add("```");
      out.add("");
    }
    out.add("Why these knobs matter:");
    out.add("");
    for (const auto& [k, v] : cfg.values()) out.add(fmt::format("- {}: {}", md_code(k), md_cell(find_knob(k).tip)));
    out.add("");
  }
  if (s.answer_c.advised) {  // answer (c) in the user's loop: the micro-batch kept, grad_accum and lr per phase
    const ApplySnippets ramp = apply_snippets(s.configs[s.answer_c.phases.front().config].config,
                                              s.env.cuda_available ? "cuda" : "cpu", baseline_defaults(s),
                                              apply_subject(s.workload), {}, ramp_steps(s));
    out.add("### The batch ramp (answer c) in your loop");
    out.add("");
    out.add("The micro-batch stays; each phase accumulates more micro-batches per optimizer step and raises the learning rate "
            "(`autotune apply --from-run DIR --ramp` prints these):");
    out.add("");
    for (const auto& [lang, lines] : {std::pair{"cpp", &ramp.cpp}, std::pair{"python", &ramp.python}}) {
      out.add(fmt::format("```{}", lang));
      for (const auto& l : *lines) out.add(l);
      out.add("```");
      out.add("");
    }
  }
  out.add(fmt::format("<sub>autotune {} · started {} · finished {}</sub>", s.env.autotune_version, s.started_at,
                      s.finished_at.empty() ? "(interrupted)" : s.finished_at));
}

std::string render(const RunSummary& s, std::size_t max_rows, std::size_t& rows_left_out) {
  rows_left_out = 0;
  Text out;
  header(s, out);
  summary(s, out);
  stability(s, out);
  why_it_wins(s, out);
  profiles(s, out);
  confirmation(s, out);
  baseline_table(s, out);
  data_parallel(s, out);
  memory_model(s, out);
  scale_out(s, out);
  all_configs(s, out, max_rows, rows_left_out);
  how_to_apply(s, out);
  return out.md;
}

}  // namespace

std::string render_markdown(const RunSummary& s, std::size_t max_bytes) {
  std::size_t left_out = 0;
  std::size_t rows = s.configs.size();
  std::string md = render(s, rows, left_out);
  while (max_bytes > 0 && md.size() > max_bytes && rows > 0) {
    rows /= 2;
    md = render(s, rows, left_out);
  }
  return md;
}

}  // namespace autotune
