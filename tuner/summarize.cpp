#include "tuner/summarize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "knobs/error.h"
#include "knobs/did_you_mean.h"
#include "knobs/knob.h"
#include "reports/markdown.h"
#include "tuner/journal.h"
#include "tuner/statistics.h"

namespace autotune {

namespace fs = std::filesystem;

namespace {

/// At most ~1000 points, evenly thinned, so a long run's curve stays a small chart.
LossCurve make_curve(const std::string& label, const TrialResult& r) {
  LossCurve c;
  c.label = label;
  std::vector<double> all = r.warmup_losses;
  all.insert(all.end(), r.losses.begin(), r.losses.end());
  c.stride = std::max<int>(1, static_cast<int>((all.size() + 999) / 1000));
  for (size_t i = 0; i < all.size(); i += static_cast<size_t>(c.stride)) c.losses.push_back(all[i]);
  return c;
}

Verdict host_verdict(const ConfigSummary& w, bool on_gpu, const TargetInfo& target) {
  // The knobs among `names` that exist in this build and apply here: a verdict never names a knob
  // we lack or one that cannot apply (memory_format for an MLP).
  auto existing = [&](const std::vector<std::string>& names) {
    std::vector<std::string> out;
    const auto all = knob_names();
    for (const auto& n : names)
      if (std::find(all.begin(), all.end(), n) != all.end() && !find_knob(n).not_applicable(target)) out.push_back(n);
    return out;
  };
  Verdict v;
  const Breakdown& b = w.breakdown;
  const double total = b.data_ms + b.h2d_ms + b.forward_ms + b.backward_ms + b.optimizer_ms + b.other_ms;
  if (total <= 0) {
    v.detail = "no per-phase times were recorded for the winner";
    return v;
  }
  auto pct = [&](double x) { return 100 * x / total; };
  v.detail = fmt::
      format("per step {:.2f} ms: data {:.0f}%, H2D {:.0f}%, forward {:.0f}%, backward {:.0f}%, optimizer {:.0f}%, other {:.0f}%",
             total, pct(b.data_ms), pct(b.h2d_ms), pct(b.forward_ms), pct(b.backward_ms), pct(b.optimizer_ms), pct(b.other_ms));
  v.basis = on_gpu ? "host time per phase (no GPU timeline in this run: asynchronous kernels are counted in the phase "
                     "that waits for them, so treat the split as indicative)"
                   : "host wall-clock time per phase (CPU run: the phases are the work itself)";
  if (pct(b.data_ms) >= 30) {
    v.kind = "input-bound";
    v.knobs = existing({"num_workers", "prefetch", "decode", "pin_memory"});
  } else if (pct(b.h2d_ms) >= 20) {
    v.kind = "transfer-bound";
    v.knobs = existing({"pin_memory", "precision"});
  } else if (pct(b.optimizer_ms) >= 25) {
    v.kind = "optimizer-bound";
    v.knobs = existing({"optimizer_impl", "grad_accum", "zero_grad"});
  } else if (pct(b.other_ms) >= 30) {
    v.kind = "host-bound";
    v.knobs = existing({"log_every", "cuda_graphs"});
  } else if (pct(b.forward_ms + b.backward_ms) >= 60) {
    v.kind = "compute-bound";
    v.knobs = existing(on_gpu ? std::vector<std::string>{"precision", "memory_format", "batch_size", "cudnn_benchmark"}
                              : std::vector<std::string>{"precision", "memory_format", "batch_size", "threads"});
  } else {
    v.kind = "mixed";
  }
  return v;
}

}  // namespace

std::string attempt_key(const Config& c, double scale) { return fmt::format("{}@{:g}", c.key(), scale); }

double window_scale(const TrialRecord& r, const MeasureOptions& base) {
  return base.window_min_seconds > 0 ? r.plan.setup.measure.window_min_seconds / base.window_min_seconds : 1.0;
}

RunContext make_context(const TuneOptions& opts, const WorkloadInfo& workload, const EnvFingerprint& env) {
  RunContext ctx;
  ctx.opts = opts;
  ctx.workload = workload;
  ctx.env = env;
  ctx.target = make_target(workload, env, opts.setup);
  // Knobs (or single values) that cannot apply here are dropped from the search and reported.
  ctx.space = applicable_space(opts.space, ctx.target, ctx.skipped);
  // Baseline = PyTorch's defaults for every searched knob (batch size: the workload's default). With
  // an effective batch, grad_accum holds micro-batch × accumulation at that value.
  const std::string b0 = std::to_string(workload.default_batch_size);
  ctx.workload_defaults = {{"batch_size", b0}};
  for (const auto& [k, vs] : ctx.space.axes()) ctx.baseline.set(k, find_knob(k).baseline(k == "batch_size" ? b0 : ""));
  if (opts.strategy.effective_batch > 0) {
    const auto eb = opts.strategy.effective_batch;
    if (eb % workload.default_batch_size != 0)
      throw UsageError(fmt::format("--effective-batch {} must be a multiple of {}'s default batch size {}", eb, workload.name,
                                   workload.default_batch_size));
    ctx.baseline.set("batch_size", b0).set("grad_accum", std::to_string(eb / workload.default_batch_size));
  }
  return ctx;
}

std::vector<const ConfigSummary*> ranked_candidates(const History& h) {
  std::vector<const ConfigSummary*> v;
  for (const auto& [k, s] : h.all())
    if (s.eligible && s.phase != "ablation") v.push_back(&s);
  std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->median > b->median; });
  return v;
}

void verify_leaders(History& history, int top, double tolerance,
                    const std::function<const TrialRecord*(const Config&)>& reference_for,
                    const std::function<const TrialRecord*(const ConfigSummary&)>& measured) {
  static const std::string kName = "loss vs fp32 reference";
  for (bool changed = true; changed;) {  // each pass verifies or rejects at least one leader, or stops
    changed = false;
    auto lead = ranked_candidates(history);
    for (size_t i = 0; i < lead.size() && i < static_cast<size_t>(std::max(top, 0)); ++i) {
      ConfigSummary s = *lead[i];
      if (s.config.get("precision", "fp32") == "fp32") continue;
      if (std::any_of(s.checks.begin(), s.checks.end(), [](const Check& c) { return c.name == kName; })) continue;
      Config twin = s.config;
      twin.set("precision", "fp32");
      const TrialRecord* ref = reference_for(twin);
      const TrialRecord* run = measured(s);
      Check c;
      if (!ref) c = {kName, false, "unverified: no fp32 reference run (the budget ended first), so it cannot win"};
      else if (ref->result.status != TrialStatus::ok) c = {kName, false, "the fp32 reference failed: " + ref->result.message};
      else if (!run) c = {kName, false, "unverified: the measured trial is missing from the journal"};
      else c = loss_trajectory_check(run->result, ref->result, tolerance);
      s.checks.push_back(c);
      if (!c.passed) {
        s.eligible = false;
        s.reason = (ref && ref->result.status == TrialStatus::ok && run ? "diverged: " : "") + c.detail;
        changed = true;
      }
      history.add(s);
      if (changed) break;  // re-rank: the next candidate moves up
    }
  }
}

RunSummary summarize_run(const std::vector<TrialRecord>& records, const RunContext& ctx, const RunMeta& meta) {
  const TuneOptions& opts = ctx.opts;
  RunSummary summary;
  summary.workload = ctx.workload;
  summary.env = ctx.env;
  summary.strategy = opts.strategy.name;
  summary.space = ctx.space.describe();
  summary.skipped_knobs = ctx.skipped;
  summary.budget_seconds = meta.budget_seconds;
  summary.elapsed_seconds = meta.elapsed_seconds;
  summary.started_at = meta.started_at;
  summary.finished_at = meta.finished_at;
  summary.finished = !meta.finished_at.empty();
  summary.max_rel_iqr = opts.stability.max_rel_iqr;
  summary.memory_headroom = opts.stability.memory_headroom;
  summary.trials_run = static_cast<int>(records.size());

  // Group the records as the live run did.
  std::map<std::string, std::vector<const TrialRecord*>> attempts, confirms, references;
  std::map<std::string, std::string> last_attempt;  // config key → attempt key of its latest attempt
  std::map<std::string, double> scale_of;           // attempt key → window scale
  std::map<std::string, TrialKind> first_kind;
  std::map<std::int64_t, const TrialRecord*> by_id;
  std::vector<std::string> order;  // config keys in first-measured order
  for (const auto& r : records) {
    by_id[r.id] = &r;
    const std::string key = r.plan.config.key();
    if (r.kind == TrialKind::trace) {
      continue;  // traced trials are read below, never measured
    } else if (r.kind == TrialKind::confirm) {
      confirms[key].push_back(&r);
    } else if (r.kind == TrialKind::reference) {
      references[key].push_back(&r);
    } else {
      const double scale = window_scale(r, opts.setup.measure);
      const std::string ak = attempt_key(r.plan.config, scale);
      attempts[ak].push_back(&r);
      scale_of[ak] = scale;
      last_attempt[key] = ak;
      if (!first_kind.count(key)) {
        first_kind[key] = r.kind;
        order.push_back(key);
      }
    }
  }
  // Unexplored: what the search did not reach and nothing measured later (an ablation may have).
  for (const auto& c : meta.unexplored)
    if (!first_kind.count(c.key())) summary.unexplored.push_back(c);
  History history;
  for (const auto& key : order) {
    const std::string& ak = last_attempt[key];
    ConfigSummary s = summarize_config(attempts[ak], opts.stability);
    s.is_baseline = s.config == ctx.baseline;
    s.window_scale = scale_of[ak];
    const TrialKind k = first_kind[key];
    s.phase = k == TrialKind::baseline   ? "baseline"
              : k == TrialKind::ablation ? "ablation"
              : meta.phases.count(key)   ? meta.phases.at(key)
                                         : "search";
    history.add(s);
  }
  // The attempt whose windows a config's summary uses.
  const auto measured_of = [&](const ConfigSummary& s) -> const TrialRecord* {
    auto it = by_id.find(s.measured_trial);
    return it == by_id.end() ? nullptr : it->second;
  };
  verify_leaders(
      history, opts.confirm_top, opts.stability.loss_tolerance,
      [&](const Config& twin) { return references[twin.key()].empty() ? nullptr : references[twin.key()].back(); }, measured_of);

  std::vector<ConfigSummary> configs;
  for (const auto& k : order) configs.push_back(history.all().at(k));
  summary.configs = configs;
  summary.baseline = configs.empty() ? -1 : 0;
  for (size_t j = 0; j < configs.size(); ++j)
    if (configs[j].is_baseline) summary.baseline = static_cast<int>(j);
  for (const auto& r : records) {
    TrialPoint p;
    p.id = r.id;
    p.kind = to_string(r.kind);
    p.config = r.plan.config.diff_key(ctx.baseline);
    p.status = to_string(r.result.status);
    p.median = r.result.status == TrialStatus::ok ? median(r.result.throughputs()) : 0;
    p.message = r.result.message;
    summary.trials.push_back(p);
  }
  if (summary.baseline < 0) return summary;  // nothing measured yet (an interrupted run)

  // The confirmation: the top candidates and the baseline re-ran in fresh processes, interleaved.
  std::vector<int> top;
  for (const ConfigSummary* c : ranked_candidates(history)) {
    if (static_cast<int>(top.size()) >= opts.confirm_top) break;
    for (int j = 0; j < static_cast<int>(configs.size()); ++j)
      if (configs[j].config == c->config) top.push_back(j);
  }
  const ConfigSummary& base = configs[summary.baseline];
  // The windows of every confirmation run of `c`, pooled; empty when none ran or any run failed.
  auto confirmation_windows = [&](const Config& c) {
    std::vector<double> t;
    for (const auto* r : confirms[c.key()]) {
      if (r->result.status != TrialStatus::ok) return std::vector<double>{};
      for (double x : r->result.throughputs()) t.push_back(x);
    }
    return t;
  };
  // A candidate confirms when its speedup over the baseline reproduces: the 95% CI of (candidate ÷
  // baseline) in the interleaved rounds overlaps the same ratio's CI in the search. Ratios cancel
  // drift that slows the whole machine between search and confirmation; absolute numbers do not.
  const std::vector<double> base_confirm = confirmation_windows(base.config);
  std::vector<ConfigSummary> confirmed_view;  // candidates as measured in the confirmation
  for (int j : top) {
    ConfigSummary v = configs[j];
    const std::vector<double> pooled = confirmation_windows(v.config);
    std::vector<std::int64_t> ids;
    for (const auto* r : confirms[v.config.key()]) ids.push_back(r->id);
    Confirmation conf;
    conf.ran = !ids.empty();
    if (!pooled.empty()) {
      conf.median = median(pooled);
      const Interval ci = bootstrap_median_ci(pooled);
      conf.ci_lo = ci.lo;
      conf.ci_hi = ci.hi;
      const std::string absolute =
          fmt::format("{} samples/s [{}, {}] in {} fresh interleaved run(s) vs {} [{}, {}] in the search",
                      with_commas(conf.median), with_commas(conf.ci_lo), with_commas(conf.ci_hi), ids.size(),
                      with_commas(v.median), with_commas(v.ci_lo), with_commas(v.ci_hi));
      if (j != summary.baseline && !base_confirm.empty() && base.status == TrialStatus::ok) {
        const Interval now = bootstrap_ratio_ci(pooled, base_confirm);
        const Interval then = bootstrap_ratio_ci(v.throughputs, base.throughputs);
        // Faster than the search claimed (the whole CI above) confirms too: the claim was conservative.
        const bool exceeded = now.lo > then.hi;
        conf.confirmed = now.overlaps(then) || exceeded;
        conf.detail =
            fmt::format("{:.2f}× the baseline [{:.2f}, {:.2f}] interleaved vs {:.2f}× [{:.2f}, {:.2f}] in the search — {}; {}",
                        median(pooled) / median(base_confirm), now.lo, now.hi, v.median / base.median, then.lo, then.hi,
                        exceeded         ? "exceeded"
                        : conf.confirmed ? "reproduced"
                                         : "not reproduced",
                        absolute);
      } else {  // the baseline itself, or no baseline runs to compare with: absolute CIs
        conf.confirmed = ci.overlaps({v.ci_lo, v.ci_hi});
        conf.detail =
            fmt::format("{} — {}", absolute, conf.confirmed ? "95% CIs overlap" : "95% CIs do not overlap: not reproduced");
      }
      v.median = conf.median;
      v.ci_lo = conf.ci_lo;
      v.ci_hi = conf.ci_hi;
      v.throughputs = pooled;
    } else {
      conf.detail = conf.ran ? "a confirmation run failed" : "not run (budget)";
      v.eligible = !conf.ran;  // a failed re-run disqualifies; an un-run one keeps its search numbers
    }
    conf.trial_id = ids.empty() ? 0 : ids.back();
    summary.confirmations.push_back({v.config, conf});
    confirmed_view.push_back(v);
  }
  // The winner: among confirmed candidates (all candidates if none confirmed), on confirmation numbers.
  {
    std::vector<ConfigSummary> pool;
    for (size_t i = 0; i < confirmed_view.size(); ++i)
      if (summary.confirmations[i].second.confirmed) pool.push_back(confirmed_view[i]);
    if (pool.empty()) pool = confirmed_view;
    std::string note;
    const int w = choose_winner(pool, ctx.workload_defaults, note);
    summary.winner_note = note;
    if (w >= 0) {
      for (size_t j = 0; j < configs.size(); ++j)
        if (configs[j].config == pool[w].config) summary.winner = static_cast<int>(j);
      for (const auto& [c, conf] : summary.confirmations)
        if (c == pool[w].config) summary.confirmation = conf;
    }
  }
  if (summary.winner < 0) return summary;

  // Speedup: from the interleaved confirmation runs of winner and baseline when both ran fine (same
  // conditions, same time); otherwise from the search runs, and the report says which.
  const ConfigSummary& w = configs[summary.winner];
  {
    const auto wc = confirmation_windows(w.config), bc = confirmation_windows(base.config);
    summary.baseline_confirmation_median = bc.empty() ? 0 : median(bc);
    std::vector<double> num = w.throughputs, den = base.throughputs;
    summary.speedup_basis = "search runs";
    if (!wc.empty() && !bc.empty()) {
      num = wc;
      den = bc;
      summary.speedup_basis = fmt::format("interleaved confirmation runs (winner {} vs baseline {} samples/s, same rounds)",
                                          with_commas(median(wc)), with_commas(median(bc)));
    }
    if (base.status == TrialStatus::ok && median(den) > 0) {
      summary.speedup = median(num) / median(den);
      const Interval r = bootstrap_ratio_ci(num, den);
      summary.speedup_lo = r.lo;
      summary.speedup_hi = r.hi;
    }
  }

  // Knob effects: the winner against the winner with one knob at its baseline value (or, failing a
  // measurement of that, any other value), every other knob held at the winner's.
  const bool coupled_batch = opts.strategy.effective_batch > 0;  // batch_size × grad_accum held fixed
  for (const auto& [k, v] : w.config.values()) {
    if (coupled_batch && k == "grad_accum") continue;  // moves with batch_size: one effect, not two
    const std::string dflt =
        ctx.baseline.get(k, find_knob(k).baseline(ctx.workload_defaults.count(k) ? ctx.workload_defaults.at(k) : ""));
    if (v == dflt) continue;
    KnobEffect e;
    e.knob = k;
    e.winner_value = v;
    e.without_value = dflt;
    e.without = w.config;
    e.without.set(k, dflt);
    if (coupled_batch && k == "batch_size") e.without.set("grad_accum", ctx.baseline.get("grad_accum"));
    // The exact ablation config when measured; else (uncoupled knobs) any config differing only in k.
    int best = -1;
    for (int j = 0; j < static_cast<int>(configs.size()); ++j) {
      if (j == summary.winner) continue;
      const Config& c = configs[j].config;
      bool match = c == e.without;
      if (!match && !(coupled_batch && k == "batch_size")) {
        match = c.get(k) != v && c.values().size() == w.config.values().size();
        for (const auto& [k2, v2] : w.config.values())
          if (k2 != k && c.get(k2) != v2) match = false;
      }
      if (!match) continue;
      auto score = [&](int i) {  // prefer the baseline value, then a successful run
        return (configs[i].config == e.without ? 2 : 0) + (configs[i].status == TrialStatus::ok ? 1 : 0);
      };
      if (best < 0 || score(j) > score(best)) best = j;
    }
    if (best < 0) {
      e.note = summary.finished ? "not measured: the budget ended before the ablation run" : "not measured (run interrupted)";
    } else {
      const ConfigSummary& o = configs[best];
      e.without_config = best;
      e.at_default = o.config == e.without;
      e.without_value = o.config.get(k);
      e.without = o.config;
      if (!e.at_default) e.note = fmt::format("the default ({}) was not measured; compared with {}={}", dflt, k, e.without_value);
      if (o.status == TrialStatus::ok && o.median > 0 && !w.throughputs.empty()) {
        e.ratio = w.median / o.median;
        const Interval r = bootstrap_ratio_ci(w.throughputs, o.throughputs);
        e.lo = r.lo;
        e.hi = r.hi;
        if (e.hi < 1)  // the whole CI below 1: this knob makes the winner slower
          e.note = fmt::
              format("{}the winner is faster without it ({:.2f}× [{:.2f}, {:.2f}]): {}; search again with {}={} in the space",
                     e.note.empty() ? "" : e.note + "; ", e.ratio, e.lo, e.hi,
                     o.phase == "ablation" ? "that config was measured only as an ablation, after the search and confirmation"
                                           : "the confirmation did not include that config",
                     k, e.without_value);
      } else {
        e.note = fmt::format("{}without it the run failed: {}{}", e.note.empty() ? "" : e.note + "; ", to_string(o.status),
                             o.reason.empty() ? "" : " — " + o.reason);
      }
    }
    summary.knob_effects.push_back(e);
  }
  std::stable_sort(summary.knob_effects.begin(), summary.knob_effects.end(),
                   [](const KnobEffect& a, const KnobEffect& b) { return a.ratio > b.ratio; });

  // Loss curves: the winner, its fp32 reference when one ran, and the baseline.
  if (const TrialRecord* r = measured_of(w)) summary.loss_curves.push_back(make_curve("winner", r->result));
  if (w.config.get("precision", "fp32") != "fp32") {
    Config twin = w.config;
    twin.set("precision", "fp32");
    if (!references[twin.key()].empty())
      summary.loss_curves.push_back(make_curve("fp32 reference of the winner", references[twin.key()].back()->result));
  }
  if (summary.winner != summary.baseline)
    if (const TrialRecord* r = measured_of(base))
      summary.loss_curves.push_back(make_curve(fmt::format("baseline (batch {})", base.batch_size), r->result));

  const TrialRecord* wr = measured_of(w);
  summary.verdict = host_verdict(w, wr && wr->result.device.rfind("cuda", 0) == 0, ctx.target);
  // Traced trials: the profile of the winner and the baseline; the winner's verdict, when its
  // profile is valid, replaces the host-time one.
  for (const auto& r : records) {
    if (r.kind != TrialKind::trace || r.result.status != TrialStatus::ok || !r.result.profile) continue;
    const std::string label = r.plan.config == w.config ? "winner" : r.plan.config == base.config ? "baseline" : "";
    if (label.empty()) continue;
    const ProfileSummary& p = *r.result.profile;
    summary.profiles.push_back({label, r.plan.config, p, r.plan.trace});
    if (label != "winner" || !p.valid || p.verdict.empty()) continue;
    Verdict v;
    v.kind = p.verdict;
    v.detail = p.verdict_detail;
    v.basis = p.mode == "cupti"
                  ? fmt::format("CUPTI GPU timeline of {} traced steps (tracing inflation {:.2f}×)", p.steps, p.inflation)
                  : fmt::format("host phase times of {} traced steps ({})", p.steps, p.reason);
    v.knobs = p.verdict_knobs;
    summary.verdict = v;
  }
  return summary;
}

RunSummary load_run_summary(const std::string& dir) {
  const fs::path jp = fs::path(dir) / "journal.sqlite";
  if (!fs::exists(jp)) throw UsageError(fmt::format("{}: no journal.sqlite there; pass the folder of a tuning run", dir));
  Journal journal(jp.string());
  const std::string options = journal.meta("options"), workload = journal.meta("workload_info"), env = journal.meta("env");
  if (options.empty() || workload.empty() || env.empty())
    throw UsageError(fmt::format("{}: the journal lacks {} (written by an older autotune?); re-run the tuning", jp.string(),
                                 options.empty()    ? "the run options"
                                 : workload.empty() ? "the workload description"
                                                    : "the environment"));
  TuneOptions opts;
  WorkloadInfo w;
  EnvFingerprint e;
  try {
    options_from_json(nlohmann::json::parse(options), opts);
    w = nlohmann::json::parse(workload).get<WorkloadInfo>();
    e = nlohmann::json::parse(env).get<EnvFingerprint>();
  } catch (const nlohmann::json::exception& ex) {
    throw UsageError(fmt::format("{}: unreadable run metadata: {}", jp.string(), ex.what()));
  }
  const RunContext ctx = make_context(opts, w, e);
  RunMeta meta;
  meta.started_at = journal.meta("created_at");
  meta.finished_at = journal.meta("finished_at");
  const std::string elapsed = journal.meta("elapsed_seconds"), budget = journal.meta("budget_seconds");
  meta.elapsed_seconds = elapsed.empty() ? 0 : std::stod(elapsed);
  meta.budget_seconds = budget.empty() ? opts.budget_seconds : std::stod(budget);
  if (const std::string u = journal.meta("unexplored"); !u.empty())
    for (const auto& c : nlohmann::json::parse(u)) meta.unexplored.push_back(c.get<Config>());
  if (const std::string p = journal.meta("phases"); !p.empty())
    meta.phases = nlohmann::json::parse(p).get<std::map<std::string, std::string>>();
  return summarize_run(journal.trials(), ctx, meta);
}

}  // namespace autotune
