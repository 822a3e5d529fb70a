#include "reports/run_facts.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "knobs/numbers.h"
#include "reports/markdown.h"
#include "reports/noise_facts.h"
#include "reports/ramp_facts.h"

namespace autotune {

std::string model_sentence(const WorkloadInfo& w) {
  if (w.source.empty()) return "";
  std::string s = w.source;
  if (!w.batch_spec.empty()) s += "; batch: " + w.batch_spec;
  if (!w.train_mode.empty()) s += "; " + w.train_mode;
  if (w.random_weights)  // a Python worker's model was never exported: its weights are the model's own initialisation
    s += w.model_file.empty() && w.trainer == "python" ? "; random weights (the model's own initialisation)"
                                                       : "; weights drawn at export (random)";
  if (w.flops_per_sample > 0)
    s += fmt::format("; {:.3g} FLOP/sample ({})", w.flops_per_sample, w.flops_basis.empty() ? "declared" : w.flops_basis);
  return s;
}

CompileFacts compile_facts(const RunSummary& s, std::size_t i) {
  CompileFacts f;
  const ConfigSummary& c = s.configs[i];
  if (!c.compile) return f;
  const CompileRecord& r = *c.compile;
  f.present = true;
  const double run_samples = s.noise_scale.run_samples;
  const double x = c.median;
  if (r.seconds > 0 && x > 0) {
    f.factor = run_samples > 0 ? 1 / (1 + r.seconds * x / run_samples)
               : s.compile_horizon_seconds > 0 ? s.compile_horizon_seconds / (s.compile_horizon_seconds + r.seconds)
                                               : 1;
  }
  f.priced_over = run_samples > 0 ? fmt::format("your run ({})", s.noise_scale.run_basis)
                                  : fmt::format("{} s of training{}", with_commas(s.compile_horizon_seconds),
                                                s.by_time
                                                    ? " (your run's length is unknown: --run-length prices it over yours)"
                                                    : " (the horizon a compile is priced over under --objective throughput)");
  const double base = s.baseline >= 0 ? s.configs[s.baseline].median : 0;
  const bool has_base = base > 0 && static_cast<int>(i) != s.baseline && c.global_batch > 0;
  if (has_base && x > base) f.break_even_steps = r.seconds / (1 / base - 1 / x) / static_cast<double>(c.global_batch);
  else if (has_base) f.break_even_steps = -1;
  // The breaks' reasons, each once with its count, in the order first met.
  std::vector<std::pair<std::string, int>> reasons;
  for (const auto& b : r.break_reasons) {
    auto it = std::find_if(reasons.begin(), reasons.end(), [&](const auto& p) { return p.first == b; });
    if (it == reasons.end()) reasons.push_back({b, 1});
    else ++it->second;
  }
  std::string why;
  for (const auto& [b, n] : reasons) why += fmt::format("{}{}{}", why.empty() ? "" : "; ", b, n > 1 ? fmt::format(" ×{}", n) : "");
  f.sentence = fmt::format("torch.compile ({}) took {:.1f} s once (its first step beyond a steady one), {} graph{}, {}{}{}", r.mode.empty() ? "default" : r.mode,
                           r.seconds, r.graphs, r.graphs == 1 ? "" : "s",
                           r.graph_breaks == 0 ? "no graph breaks" : fmt::format("{} graph break{}{}", r.graph_breaks, r.graph_breaks == 1 ? "" : "s", why.empty() ? "" : " (" + why + ")"),
                           r.recompiles > 0 ? fmt::format(", {} recompile{} after the first step", r.recompiles, r.recompiles == 1 ? "" : "s") : ", no recompiles",
                           r.cache_hits + r.cache_misses > 0 ? fmt::format(", inductor cache {} hit{} and {} miss{}", r.cache_hits, r.cache_hits == 1 ? "" : "s", r.cache_misses, r.cache_misses == 1 ? "" : "es") : "");
  f.sentence += fmt::format(". Priced over {}: its samples/s × {:.3f}", f.priced_over, f.factor);
  if (f.break_even_steps > 0)
    f.sentence += fmt::format("; it pays its compile back after about {} steps against the baseline's speed", with_commas(std::ceil(f.break_even_steps)));
  else if (f.break_even_steps < 0)
    f.sentence += "; it is no faster than the baseline, so its compile never pays back";
  return f;
}

std::string run_title(const RunSummary& s) {
  const std::string& f = s.workload.python_factory;
  if (f.empty()) return s.workload.name;
  const auto colon = f.rfind(':');
  const std::string where = f.substr(0, colon);
  const bool file = where.size() > 3 && where.compare(where.size() - 3, 3, ".py") == 0;
  return (file ? std::filesystem::path(where).filename().string() : where) + f.substr(colon);
}

std::string data_sentence(const DataStats& d) {
  if (d.source.empty()) return "";
  if (d.decode == "tokens")
    return fmt::format("{} (token file): {} tokens", d.source, with_commas(static_cast<double>(d.dataset_size)));
  if (d.decode == "task")  // a task's own dataset through torch's DataLoader (pyworker/autotune_pyworker/task.py)
    return fmt::format("{} ({}), through torch's DataLoader: the winner's measured trial read {} batches, waiting {:.2f} s "
                       "for them",
                       d.source, d.dataset_size > 0 ? with_commas(static_cast<double>(d.dataset_size)) + " samples" : "iterable",
                       with_commas(static_cast<double>(d.batches)), d.wait_seconds);
  std::string s =
      fmt::format("{} ({}, decode {}): {} images; the winner's measured trial read {}, skipped {}", d.source,
                  d.decode == "cache" ? "pre-decoded cache" : "image folder", d.decode,
                  with_commas(static_cast<double>(d.dataset_size)), with_commas(static_cast<double>(d.images_ok)), d.images_bad);
  if (d.images_bad > 0) {
    std::string reasons;
    for (const auto& [k, v] : d.bad_by_reason) reasons += fmt::format("{}{} {}", reasons.empty() ? "" : ", ", k, v);
    s += " (" + reasons + (d.bad_example.empty() ? "" : "; e.g. " + d.bad_example) + ")";
  }
  return s;
}

bool speedup_not_significant(const RunSummary& s) { return s.speedup > 0 && s.speedup_lo <= 1.0 && s.winner != s.baseline; }

Headline headline(const RunSummary& s, const std::function<std::string(const std::string&)>& code) {
  Headline h;
  if (s.winner < 0) return h;
  const ConfigSummary& w = s.configs[s.winner];
  const Confirmation& c = s.confirmation;
  const std::string what = code(changed_knobs(s, w.config));
  h.winner = c.ran && c.median > 0
                 ? fmt::format("{} — {} samples/s in the interleaved confirmation (95% CI {}–{}); {} in the search", what,
                               with_commas(c.median), with_commas(c.ci_lo), with_commas(c.ci_hi), with_commas(w.median))
                 : fmt::format("{} — {} samples/s (95% CI {}–{})", what, with_commas(w.median), with_commas(w.ci_lo),
                               with_commas(w.ci_hi));
  const std::string caveat = speedup_caveat(s);
  h.speedup = s.speedup > 0 ? fmt::format("{:.2f}× (95% CI {:.2f}–{:.2f}×){}{}", s.speedup, s.speedup_lo, s.speedup_hi,
                                          s.speedup_basis.empty() ? "" : ", from " + s.speedup_basis,
                                          caveat.empty() ? "" : " — ⚠️ " + caveat)
                            : "not available — the baseline did not produce a measurement.";
  return h;
}

std::string speedup_caveat(const RunSummary& s) {
  if (!speedup_not_significant(s)) return "";
  const bool by_time_at_other_batch = s.by_time && s.noise_scale.usable && s.winner >= 0 &&
                                      s.baseline >= 0 &&
                                      s.configs[s.winner].global_batch != s.configs[s.baseline].global_batch;
  if (s.speedup_hi < 1.0)
    return by_time_at_other_batch  // answer (b): fewer samples/s, less time to the same loss
               ? fmt::format("fewer samples/s than the baseline (the whole interval is below 1×, up to {:.2f}×): the winner "
                             "changes the global batch and wins on the predicted time to the same loss (below), not on "
                             "samples/s",
                             s.speedup_hi)
               : fmt::format("slower than the baseline at 95% (the whole interval is below 1×, up to {:.2f}×): the baseline "
                             "was ruled out (see its row in All trials), so this is the fastest stable config measured, not "
                             "a speedup",
                             s.speedup_hi);
  return fmt::format(
      "not significant at 95%: the interval reaches {:.2f}×, so these runs cannot tell the winner from the baseline on this "
      "machine; more windows (--windows) or a quieter machine narrow it",
      s.speedup_lo);
}

std::vector<FoldRow> fold_rows(const RunSummary& s) {
  std::vector<FoldRow> rows;
  std::vector<std::vector<std::pair<std::string, std::vector<std::string>>>> reasons;  // per row: reason → knobs
  for (const auto& f : s.folded) {
    const std::string as = changed_knobs(s, f.runs_as);
    auto it = std::find_if(rows.begin(), rows.end(), [&](const FoldRow& r) { return r.runs_as == as; });
    if (it == rows.end()) {
      it = rows.insert(rows.end(), FoldRow{as, {}, {}});
      reasons.emplace_back();
    }
    auto& row_reasons = reasons[static_cast<size_t>(it - rows.begin())];
    const std::string ignored = f.proposed.diff_key(f.runs_as);
    if (std::find(it->ignored.begin(), it->ignored.end(), ignored) == it->ignored.end()) it->ignored.push_back(ignored);
    for (std::string r : f.reasons) {
      // "bucket_mb=1: only with ranks > 1 (…); ran with 25" → knob "bucket_mb", reason "only with ranks > 1 (…)"
      std::string knob;
      if (const auto eq = r.find('='), colon = r.find(": "); eq != std::string::npos && colon != std::string::npos && eq < colon) {
        knob = r.substr(0, eq);
        r = r.substr(colon + 2);
      }
      if (const auto ran = r.rfind("; ran with "); ran != std::string::npos) r.resize(ran);
      auto w = std::find_if(row_reasons.begin(), row_reasons.end(), [&](const auto& p) { return p.first == r; });
      if (w == row_reasons.end()) w = row_reasons.insert(row_reasons.end(), {r, {}});
      if (!knob.empty() && std::find(w->second.begin(), w->second.end(), knob) == w->second.end()) w->second.push_back(knob);
    }
  }
  for (size_t i = 0; i < rows.size(); ++i)
    for (const auto& [text, knobs] : reasons[i])
      rows[i].why.push_back(knobs.empty() ? text : fmt::format("{}: {}", fmt::join(knobs, ", "), text));
  return rows;
}

std::string phase_label(const std::string& who, const ConfigSummary& c) {
  const int ranks = c.dist ? static_cast<int>(c.dist->ranks.size()) : 1;
  if (ranks > 1) return fmt::format("{} (rank 0 of {}, batch {} per rank)", who, ranks, c.batch_size);
  return fmt::format("{} (batch {})", who, c.batch_size);
}

std::string memory_vs_baseline(const RunSummary& s, const ConfigSummary& c) {
  if (s.baseline < 0 || c.peak_bytes <= 0) return "";
  const ConfigSummary& b = s.configs[s.baseline];
  const std::string what = s.env.cuda_available ? "device peak" : "peak RSS";
  const auto mib = [](std::int64_t v) { return with_commas(static_cast<double>(v) / (1 << 20)) + " MiB"; };
  if (&c == &b || b.peak_bytes <= 0) return fmt::format("{} {}", what, mib(c.peak_bytes));
  return fmt::format("{} {}, {:.2f}× the baseline's {}", what, mib(c.peak_bytes),
                     static_cast<double>(c.peak_bytes) / static_cast<double>(b.peak_bytes), mib(b.peak_bytes));
}

bool synthetic_data(const RunSummary& s) { return s.data.source.empty(); }

std::string data_line(const RunSummary& s) {
  if (const std::string d = data_sentence(s.data); !d.empty()) return d;
  if (!s.workload.data.empty() && s.workload.data != "none")
    return s.workload.data + " — throughput without a real input pipeline; give --data to measure yours";
  return "synthetic batches generated in the worker";
}

std::string baseline_label(const RunSummary& s) {
  if (s.frontend.empty()) return "PyTorch defaults";
  return fmt::format("PyTorch 2.11's defaults for a {} script", s.frontend == "python" ? "Python" : "LibTorch");
}

std::string frontend_words(const RunSummary& s) { return s.frontend == "python" ? "Python (torch)" : "C++ (LibTorch)"; }

std::string trainer_words(const RunSummary& s) {
  if (s.workload.trainer == "python")
    return "Every trial ran in Python: the Python worker trained the model as it is, through torch's Python API.";
  if (s.frontend == "python")
    return "The C++ worker (LibTorch) ran the trials with these values: ratios between configs carry over to a Python "
           "script, its absolute samples/s may differ (`--trainer python` measures them in Python; docs/models.md).";
  return "";
}

std::map<std::string, std::string> baseline_defaults(const RunSummary& s) {
  std::map<std::string, std::string> d = {{"batch_size", std::to_string(s.workload.default_batch_size)}};
  if (s.baseline >= 0)
    for (const auto& [k, v] : s.configs[s.baseline].config.values()) d[k] = v;
  return d;
}

FamilyLr family_lr(const RunSummary& s, const LrAdvice& a) {
  const std::string& family = s.workload.optimizer_family;
  const std::string opt = s.workload.optimizer.empty() ? "AdamW" : s.workload.optimizer;
  if (!lr_rule_known(family)) return {0, opt + ": neither SGD-like (× r) nor Adam-like (× √r), so no rule is given"};
  return {lr_at_gain(a.lr_from, a.gain, family), opt + (family == "sgd" ? ", SGD-like: × r" : ", Adam-like: × √r")};
}

LrHint lr_hint(const RunSummary& s) {
  LrHint h;
  const TimeAnswer& b = s.answer_b;
  if (s.winner < 0 || b.config != s.winner) return h;
  if (const LrSwept& w = s.lr_measured.at_b; w.prices()) {  // measured at (b)'s batch: its best, not the rule's start
    h.lr = w.best_lr;
    h.why = fmt::format("measured by the lr-sweep {} at batch {} ({} the rule's {:.3g}; warm it up)", w.sweep_dir, w.global_batch,
                        w.verdict == "about right" ? "about right:" : w.verdict + ":", w.centre_lr);
    return h;
  }
  if (!b.lr.given) return h;
  const FamilyLr f = family_lr(s, b.lr);
  if (f.lr <= 0) return h;
  h.lr = f.lr;
  h.why = fmt::format("{:.3g} at batch {}, r = {:.3g} (AdaScale gain at B̄ = {}; {}; warm it up)", b.lr.lr_from, s.user_batch,
                      b.lr.gain, with_commas(s.noise_scale.value), f.rule);
  return h;
}

std::string changed_knobs(const RunSummary& s, const Config& c) {
  return s.baseline >= 0 ? c.diff_key(s.configs[s.baseline].config) : c.key();
}

std::vector<Change> winner_changes(const RunSummary& s) {
  std::vector<Change> out;
  if (s.winner < 0 || s.baseline < 0) return out;
  for (const auto& e : s.knob_effects) {
    Change c;
    c.what = fmt::format("{}: {} → {}", e.knob, e.without_value, e.winner_value);
    c.effect = e.ratio > 0 ? fmt::format("{:.2f}× (95% CI {:.2f}–{:.2f}×){}{}", e.ratio, e.lo, e.hi,
                                         e.at_default ? "" : fmt::format(", against {}={}", e.knob, e.without_value),
                                         e.rounds > 0 ? "" : "; from search runs, not the headline's rounds")
                           : e.note;
    out.push_back(c);
  }
  return out;
}

std::string effects_basis(const RunSummary& s) {
  int rounds = 0;
  for (const auto& e : s.knob_effects) rounds = std::max(rounds, e.rounds);
  if (rounds == 0)
    return "Each changed knob against the winner with that knob at its default, every other knob held at the winner's "
           "(search and ablation runs: no effect rounds ran, so each effect has its own reference, measured at another time "
           "than the headline's, and the effects need not multiply to the headline; ratio of medians, 95% bootstrap CI)";
  return "Each changed knob against the winner with that knob put back to its default, every other knob held at the "
         "winner's, all measured in the same interleaved effect rounds as the winner and the baseline (one fresh process "
         "each per round; ratio of medians, 95% bootstrap CI)";
}

namespace {


/// Answer (a) when it is the baseline: what else ran at the user's batch — nothing (the search's batches left it out),
/// nothing stable, or configs the defaults beat.
std::string defaults_at_user_batch(const RunSummary& s) {
  int others = 0, stable = 0;
  for (std::size_t i = 0; i < s.configs.size(); ++i)
    if (static_cast<int>(i) != s.baseline && !s.configs[i].in_flight && s.configs[i].global_batch == s.user_batch) {
      ++others;
      stable += s.configs[i].eligible ? 1 : 0;
    }
  if (others == 0)
    return "PyTorch's defaults — nothing else ran at your batch (the search's batch sizes left it out, so no other knob was "
           "tried there; list your batch among --knobs batch_size=… to try them)";
  if (stable == 0) return fmt::format("PyTorch's defaults — none of the {} other configs at your batch was stable", others);
  return fmt::format("PyTorch's defaults (nothing beat them: {} other config{} at your batch measured)", others, others == 1 ? "" : "s");
}

}  // namespace

namespace {

/// "the lr-sweep at global batch 64 (DIR) found the batch rule's rate 0.00132 too low: 0.00397 reached its loss 1.53×
/// sooner (1.50–1.55×)", or "… about right".
std::string swept_text(const LrSwept& w, const std::string& centre, const std::function<std::string(const std::string&)>& code) {
  std::string t = fmt::format("the lr-sweep at global batch {} ({}) found {} {:.3g} {}", w.global_batch, code(w.sweep_dir), centre,
                              w.centre_lr, w.verdict);
  if (w.verdict == "about right") return t;
  return t + fmt::format(": {:.3g} reached its loss {:.2f}× sooner ({:.2f}–{:.2f}×)", w.best_lr, w.gain, w.gain_lo, w.gain_hi);
}

/// "; (c), the batch ramp, priced at the measured rates — …": each phase's rate (a sweep's best where one ran at its batch,
/// else the rule's) and the ramp against (a) and (b) at theirs; or that it stays at the rule's rates, and why. "" without
/// a ramp.
std::string ramp_measured_text(const RunSummary& s) {
  const RampAnswer& r = s.answer_c;
  const RampAtMeasured& q = s.lr_measured.ramp;
  if (!r.proposed) return "";
  if (q.phases.empty()) {
    std::string batches;
    for (const RampPhaseSummary& p : r.phases) batches += (batches.empty() ? "" : ", ") + std::to_string(p.global_batch);
    return fmt::format("; (c), the batch ramp, stays priced at the rule's rates: no sweep prices a batch it trains at ({})",
                       batches);
  }
  std::string phases;
  for (const RampPhaseAtMeasured& p : q.phases) {
    phases += phases.empty() ? "" : ", ";
    if (p.priced_by.empty())
      phases += fmt::format("batch {} at the rule's rate (no sweep at that batch)", p.global_batch);
    else
      phases += fmt::format("batch {} at {:.3g} ({})", p.global_batch, p.lr,
                            p.gain == 1 ? std::string("about right") : fmt::format("{:.2f}× sooner", p.gain));
  }
  std::string t = fmt::format("; (c), the batch ramp, priced at the measured rates — {} — is predicted {:.2f}× (a)'s speed", phases,
                              q.vs_a);
  if (q.vs_b > 0) t += fmt::format(" and {:.2f}× (b)'s", q.vs_b);
  return t + fmt::format(", each at its measured rate where a sweep ran at its batch (at the rule's rates: {:.2f}×{}, above)",
                         r.vs_a, r.b_seconds > 0 ? fmt::format(" and {:.2f}×", r.vs_b) : std::string());
}

/// Answers (a) and (b) priced at the learning rates the lr-sweeps from this run measured, and what stays at the batch
/// rule's rate (said so). The sweep's gain is measured over a share of the run; converge --from-sweep trains it
/// further.
std::string lr_measured_text(const RunSummary& s, const std::function<std::string(const std::string&)>& code) {
  const LrMeasured& m = s.lr_measured;
  const LrSwept &a = m.at_user, &b = m.at_b;
  std::string t;
  if (!a.present && !b.present) return m.refused.empty() ? "" : "Learning rate measured: none used — " + m.refused + ".";
  t = "Learning rate measured: ";
  if (a.present) {
    t += swept_text(a, "your rate", code) + (a.prices() ? "" : " (it does not price your batch: " + a.headline + ")");
    t += b.present ? "; " : ". ";
  }
  if (b.present) t += swept_text(b, "the batch rule's rate", code) + (b.prices() ? ". " : " (it does not price (b)). ");
  const double ga = a.priced_gain();
  const TimeAnswer& ab = s.answer_b;
  if (m.b_over_a > 0) {
    t += fmt::format("Priced at the measured rates — (b) at {:.3g}, (a) at {} — (b) is predicted {:.2f}× (a)'s speed to the same "
                     "loss (at the rule's rate: {:.2f}×, above)",
                     b.best_lr, a.prices() ? fmt::format("{:.3g}", a.best_lr) : "your rate (no sweep at your batch)", m.b_over_a,
                     ab.time_ratio);
    if (a.prices()) t += fmt::format("; (a) at {:.3g} is itself {:.2f}× your rate's speed", a.best_lr, ga);
  } else if (a.prices() && ab.config >= 0)
    t += fmt::format("(b) stays priced at the batch rule's rate{}: no lr-sweep ran at its batch ({} measures it)",
                     ab.time_ratio > 0 ? fmt::format(" ({:.2f}× (a)'s speed, above; with (a) at {:.3g} it would be {:.2f}×)",
                                                     ab.time_ratio, a.best_lr, ab.time_ratio / ga)
                                       : "",
                     code("autotune lr-sweep --from-run RUN --at changed-batch"));
  else if (a.prices())
    t += fmt::format("At your rate's best, {:.3g}, training to the same loss takes {:.2f}× less time", a.best_lr, ga);
  t += ramp_measured_text(s);
  t += ". The gains are the sweeps', measured over a share of the run (" + code("autotune converge --from-sweep") +
       " trains them further)";
  if (!m.refused.empty()) t += "; " + m.refused;
  return t + ".";
}

}  // namespace

TimeFacts time_facts(const RunSummary& s, const std::function<std::string(const std::string&)>& code) {
  TimeFacts t;
  if (!s.by_time) return t;
  if (s.answer_a >= 0) {
    const ConfigSummary& a = s.configs[s.answer_a];
    const std::string what = changed_knobs(s, a.config);
    t.answer_a = fmt::format(
        "(a) At your batch — global batch {} ({}): {}, {:.2f}× the baseline's samples/s (95% CI {:.2f}–{:.2f}×). Micro-batch, "
        "grad_accum and ranks move together here, so the training maths is yours and the time to train shrinks by the same "
        "factor{}.",
        s.user_batch, s.user_batch_source, what == "(baseline)" ? defaults_at_user_batch(s) : code(what),
        s.answer_a_speedup, s.answer_a_lo, s.answer_a_hi, s.batchnorm_note.empty() ? "" : " — except: " + s.batchnorm_note);
  }
  const TimeAnswer& b = s.answer_b;
  if (b.config >= 0) {
    const std::string what = code(changed_knobs(s, s.configs[b.config].config));
    if (b.time_ratio > 0) {
      const std::string worse_end = b.global_batch > s.user_batch ? samples_text(b.band_lo) : samples_text(b.band_hi);
      t.answer_b = fmt::format(
          "(b) If you change the batch — global batch {}: {}, {:.2f}× (a)'s samples/s ({}), but past the noise scale each "
          "sample does less: predicted {:.2f}× (a)'s speed to the same loss at B̄ = {}, {:.2f}–{:.2f}× for B̄ from {} to {} (its 95% interval, widened to at least half to twice it). {}",
          b.global_batch, what, b.throughput_ratio, b.basis, b.time_ratio, samples_text(s.noise_scale.value), b.time_ratio_min,
          b.time_ratio_max, samples_text(b.band_lo), samples_text(b.band_hi),
          b.beats_a ? (s.winner == b.config ? "It wins across that band: it is the pick."
                                            : "It wins across that band, but it is not the pick (\"Why this pick\" says why).")
                    : fmt::format("It does not win across that band (at B̄ = {} it is {:.2f}×): the pick stays at your batch.",
                                  worse_end, b.time_ratio_min));
    } else {
      t.answer_b = fmt::format(
          "(b) If you change the batch — global batch {}: {} runs {:.2f}× (a)'s samples/s, but its time to train is not "
          "predicted: {}. Past the gradient noise scale a bigger batch needs more samples to reach the same loss, so samples/s "
          "alone overstates it; this run's pick is (a).",
          b.global_batch, what, b.throughput_ratio, s.time_note.empty() ? "no usable noise scale" : s.time_note);
    }
  } else if (!s.time_note.empty()) {
    t.answer_b = "(b) A changed batch is not ranked: " + s.time_note + ".";
  }
  t.answer_c = ramp_text(s, code);
  t.noise = noise_scale_text(s.noise_scale);
  if (b.config >= 0 && b.lr.given) {
    const FamilyLr f = family_lr(s, b.lr);
    if (f.lr <= 0)
      t.lr = fmt::format("Learning rate for global batch {} (from {:.3g} at {}): {}; AdaScale's gain r = {:.3g} — tune the "
                         "learning rate at the new batch.",
                         b.global_batch, b.lr.lr_from, s.user_batch, f.rule, b.lr.gain);
    else
      t.lr = fmt::format(
          "Learning rate for global batch {} (from {:.3g} at {}): start from {:.3g} ({}, r = {:.3g}, AdaScale's gain "
          "(B/B0)(B̄+B0)/(B̄+B)). Warm it up linearly over the first few hundred steps. A starting point to tune from, not a "
          "tuned value{}.",
          b.global_batch, b.lr.lr_from, s.user_batch, f.lr, f.rule, b.lr.gain,
          s.workload.optimizer_family == "sgd" ? "" : ": the Adam rule is the least certain part of this prediction");
  }
  t.lr_measured = lr_measured_text(s, code);
  return t;
}

std::string noise_sentence(const RunSummary& s) {
  const NoiseCalibration& n = s.noise;
  const std::string busy = n.busy_left_out > 0 ? fmt::format(" ({} timed beside other programs left out)", n.busy_left_out) : "";
  if (n.calibrating && n.trials < n.trials_needed && n.busy_left_out > 0)
    return fmt::format("The limits were not calibrated to this host's own noise: {} of the first trials were timed beside other "
                       "programs, which leaves {} of the {} quiet first trials it needs; the given limits ({:.3g}% noise, {:.3g}% "
                       "drift) stay.",
                       n.busy_left_out, n.trials, n.trials_needed, 100 * n.given_max_rel_iqr, 100 * n.given_max_drift);
  if (!n.calibrating || n.trials < n.trials_needed) return "";
  std::string t = fmt::format(
      "This host's own noise, over the first trial of the first {} configs{}: windows varied by a median {:.1f}% "
      "(IQR/median) and the last window was a median {:.1f}% off the first",
      n.trials, busy, 100 * n.host_rel_iqr, 100 * n.host_drift);
  if (!n.raised)
    return t + fmt::format("; the given limits ({:.3g}% noise, {:.3g}% drift) are above what that noise produces and stay.",
                           100 * n.given_max_rel_iqr, 100 * n.given_max_drift);
  t += fmt::format(
      ". A config as steady as the host exceeds the given limits often, so they were raised to what such a config stays "
      "under in 19 trials of 20: noise {:.3g}% (given {:.3g}%), drift {:.3g}% (given {:.3g}%); a config noisier than that is "
      "noisy itself. Throughput differences of a few % are not resolved on this host (--calibrate-noise off keeps the given limits).",
      100 * s.max_rel_iqr, 100 * n.given_max_rel_iqr, 100 * s.max_drift, 100 * n.given_max_drift);
  if (n.at_cap) t += " A limit reached its ceiling (4× the given one): this host is too noisy to rank configs reliably; run on a quieter machine.";
  return t;
}

std::vector<std::pair<std::string, std::string>> scale_out_facts(const RunSummary& s) {
  const ScaleOut& so = s.scale_out;
  std::vector<std::pair<std::string, std::string>> out;
  if (so.slots <= 1) return out;
  std::string places;
  for (const auto& p : so.places) places += (places.empty() ? "" : "; ") + p;
  out.emplace_back(fmt::format("{} slots", so.slots),
                   fmt::format("({}): {}. Search trials ran side by side; the baseline, verification and confirmation ran alone "
                               "in slot 0.",
                               so.executor, places));
  out.emplace_back("Time", fmt::format("{:.0f} s wall, {:.0f} device-seconds in trials ({:.2f}× the wall time); {} of {} trials had "
                                       "another beside them.",
                                       s.elapsed_seconds, so.device_seconds,
                                       s.elapsed_seconds > 0 ? so.device_seconds / s.elapsed_seconds : 0.0, so.trials_beside,
                                       s.trials_run));
  out.emplace_back("Interference",
                   so.copies > 0 ? fmt::format("the baseline alone {} samples/s; {} copies at once, one per slot, {} (median): "
                                               "{:.2f}× alone. Search numbers measured beside others carry this; the winner is "
                                               "chosen on the confirmation, which ran alone.",
                                               with_commas(so.alone), so.copies, with_commas(so.beside), so.interference())
                                 : "not measured (the baseline did not run, or the run stopped first).");
  if (so.finalists_beside > 0)
    out.emplace_back("Warning", fmt::format("{} verification or confirmation trials ran beside others.", so.finalists_beside));
  return out;
}

std::string config_verdict(const RunSummary& s, std::size_t i, const std::string& winner,
                           const std::function<std::string(const std::string&)>& cell) {
  const ConfigSummary& c = s.configs[i];
  const bool is_winner = static_cast<int>(i) == s.winner;
  const std::string unranked = unranked_reason(s, i);
  std::string verdict = is_winner    ? winner
                        : c.eligible ? (unranked.empty() ? "stable" : "stable, not ranked: " + cell(unranked))
                                     : "rejected: " + cell(c.reason);
  if (!is_winner)
    for (const auto& [cc, conf] : s.confirmations)
      if (cc == c.config && conf.ran) verdict += conf.confirmed ? "; confirmed, not the fastest" : "; not confirmed in the re-runs";
  if (c.unsettled) verdict += "; marked unsettled (drifted in every attempt)";
  if (c.is_baseline) verdict += " (baseline)";
  return verdict;
}

std::string busy_host_line(const RunSummary& s) {
  const BusyHost& b = s.busy_host;
  if (b.busy == 0) return "";
  std::string line = fmt::format(
      "other programs used up to {:.2f} of {} CPUs while {} of the {} trials that measured it were timed (limit: "
      "--max-host-load {:g}% of a trial's CPUs, at least {:g}){}",
      b.max_other_cores, b.cpus, b.busy, b.measured, 100 * b.limit_share, b.limit_min_cores,
      b.device_busy > 0 ? fmt::format("; another process held the GPU during {} of them (up to {} at once)", b.device_busy,
                                      b.max_device_others)
                        : "");
  // What kept a config at one trial: the interrupt in a run that was stopped, the host still busy at the run's last
  // wait (budget left), else the budget.
  const std::string stopper = !s.finished   ? "the run interrupted before it could"
                              : b.ended_busy ? "the host still busy after the run's last wait, too busy to"
                                             : "the budget leaving no room to";
  const char* they = b.once == 1 ? "it" : "they";
  const char* whose = b.once == 1 ? "its config" : "their configs";
  if (b.once > 0 && b.once == b.busy)  // none of them could be timed again
    line += !s.finished   ? fmt::format(". The run was interrupted before {} could be timed again: {} cannot win yet", they, whose)
            : b.ended_busy ? fmt::format(". The host was still busy after the run's last wait, so {} could not be timed again: {} "
                                         "cannot win",
                                         they, whose)
                           : fmt::format(". The budget left no room to time {} again: {} cannot win", b.once == 1 ? "it" : "them",
                                         whose);
  else
    line += ". Their configs were re-measured" +
            (b.rejected > 0 ? fmt::format("; {} stayed busy and cannot win{} (autotune tune --resume with this run's folder times "
                                             "them again once the host is quiet)",
                                             b.rejected,
                                             b.once > 0 ? fmt::format(" — {} of them timed once only, {} time {} again", b.once,
                                                                      stopper, b.once == 1 ? "it" : "them")
                                                        : "")
                            : std::string(", quiet again"));
  if (b.confirmation_busy > 0)
    line += fmt::format("; {} of the interleaved confirmation's runs {} busy, so nothing it compared is confirmed", b.confirmation_busy,
                        b.confirmation_busy == 1 ? "was" : "were");
  return line + ". Speeds measured beside another program are that program's effect, not a knob's: tune on a quiet host.";
}

std::string confirmation_result(const Confirmation& c) { return c.confirmed ? "pass" : c.ran ? "FAIL" : "not run"; }

bool any_stable(const RunSummary& s) {
  return std::any_of(s.configs.begin(), s.configs.end(), [](const ConfigSummary& c) { return c.eligible && !c.in_flight; });
}

std::string no_winner_label(const RunSummary& s) { return any_stable(s) ? "No winner" : "No stable config"; }

std::string unranked_reason(const RunSummary& s, std::size_t i) {
  const ConfigSummary& c = s.configs[i];
  if (s.winner >= 0 || !c.eligible || c.in_flight) return "";
  const std::int64_t user = s.baseline >= 0 ? s.configs[s.baseline].global_batch : 0;
  if (c.global_batch == user) return s.winner_note.empty() ? "nothing was picked" : s.winner_note;
  const bool stable_at_user = std::any_of(s.configs.begin(), s.configs.end(), [&](const ConfigSummary& x) {
    return x.eligible && !x.in_flight && x.global_batch == user;
  });
  const std::string why = !s.time_note.empty() ? s.time_note : s.noise_scale.why_not;
  const std::string noise = "a changed batch is ranked by time to the same loss, which needs a usable noise scale" +
                            (why.empty() ? std::string() : ": " + why);
  if (!stable_at_user)
    return fmt::format("nothing at your batch of {} is stable to compare it with{}", user,
                       s.noise_scale.usable ? "" : "; and " + noise);
  return noise;
}

std::string no_stable_config_line(const RunSummary& s) {
  if (s.winner >= 0) return "";
  std::vector<std::pair<std::string, int>> why;  // in the order first met
  int measured = 0, once = 0, fastest_unranked = -1;
  std::vector<int> unranked;  // stable at another batch, not ranked against the user's
  for (std::size_t i = 0; i < s.configs.size(); ++i) {
    const ConfigSummary& c = s.configs[i];
    if (c.in_flight) continue;
    ++measured;
    if (c.eligible) {  // stable: it failed no check; what is missing is a way to rank it (unranked_reason)
      unranked.push_back(static_cast<int>(i));
      if (fastest_unranked < 0 || c.median > s.configs[fastest_unranked].median) fastest_unranked = static_cast<int>(i);
      continue;
    }
    std::string w = c.status != TrialStatus::ok ? to_string(c.status) : "failed a check";
    if (c.status == TrialStatus::ok) {
      // A config timed beside another program is counted as that, whatever else it failed (its noise is the other
      // program's): the same tally as the busy-host line's "stayed busy" (busy_host_line).
      const bool busy = std::any_of(c.checks.begin(), c.checks.end(), [](const Check& ch) { return !ch.passed && ch.name == "quiet host"; });
      for (const auto& ch : c.checks)
        if (!ch.passed) {
          w = busy                             ? "timed while other programs used the host"
              : ch.name == "measurement noise" ? "noisy"
              : ch.name == "settled"           ? "still settling (drifting)"
                                               : "failed the " + ch.name + " check";
          break;
        }
      if (c.trial_ids.size() == 1) ++once;
    }
    auto it = std::find_if(why.begin(), why.end(), [&](const auto& p) { return p.first == w; });
    if (it == why.end()) why.push_back({w, 1});
    else ++it->second;
  }
  if (measured == 0) return "nothing was measured: the budget ended before the baseline's trial did";
  const int rejected = measured - static_cast<int>(unranked.size());
  std::string parts;
  for (const auto& [w, n] : why) parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", n == rejected && rejected == 1 ? "it was" : std::to_string(n), w);
  const auto configs = [](int n) { return n == 1 ? std::string("1 config") : std::to_string(n) + " configs"; };
  std::string line;
  if (unranked.empty()) {
    line = fmt::format("{} measured, none stable: {}", configs(measured), parts);
  } else {
    const ConfigSummary& f = s.configs[fastest_unranked];
    const std::string reason = unranked_reason(s, fastest_unranked);
    line = fmt::format("{} measured, {} stable but none ranked{}. {} — the fastest, {}{} (global batch {}), at {} samples/s — "
                       "cannot be ranked: {}",
                       configs(measured), unranked.size(), rejected > 0 ? fmt::format("; {} rejected: {}", rejected, parts) : "",
                       unranked.size() == 1 ? "The stable one" : fmt::format("The {} stable ones", unranked.size()),
                       changed_knobs(s, f.config), f.is_baseline ? " (baseline)" : "", f.global_batch, with_commas(f.median), reason);
    if (!s.noise_scale.usable)
      line += ". --data (your training data), --noise-log (a noise log from your own loop) or --noise-scale would rank it";
  }
  const bool out_of_budget = s.elapsed_seconds >= 0.9 * s.budget_seconds || !s.unexplored.empty();
  if (once > 0 && out_of_budget && s.trial_seconds > 0) {
    line += fmt::format(". The budget left no room to measure {} again: one trial takes about {:.3g} s here, and a search of a few "
                        "configs (with its confirmation) needs about --budget {:.0f}m",
                        once == rejected ? (rejected == 1 ? "it" : "them") : fmt::format("{} of them", once), s.trial_seconds,
                        s.search_budget_minutes);
  }
  if (s.busy_host.rejected > 0)
    line += ". A config timed beside another program cannot win: continue this run with --resume once the host is quiet, tune on "
            "a quiet host, or allow that much with --max-host-load";
  return line;
}

}  // namespace autotune
