#include "tuner/tune.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>

#include "knobs/did_you_mean.h"
#include "knobs/error.h"
#include "knobs/knob.h"
#include "reports/best_json.h"
#include "reports/gbench_json.h"
#include "reports/junit.h"
#include "reports/markdown.h"
#include "tuner/journal.h"
#include "tuner/statistics.h"
#include "tuner/trial_runner.h"
#include "tuner/worker_client.h"

namespace autotune {

namespace fs = std::filesystem;

KnobSpace full_space() {
  KnobSpace s;
  for (const auto& k : knob_catalog()) s.add(k.name, k.values);
  return s;
}

KnobSpace default_space() {
  KnobSpace s;
  s.add("batch_size", {"32", "64", "128", "256"});
  s.add("threads", {"1", "2"});
  return s;
}

double parse_duration(const std::string& text) {
  const std::string err = fmt::format("budget '{}' is not a duration; allowed: seconds or e.g. 90s, 10m, 1h30m", text);
  if (text.empty()) throw UsageError(err);
  double total = 0;
  size_t i = 0;
  bool any_unit = false;
  while (i < text.size()) {
    size_t j = i;
    while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.')) ++j;
    if (j == i) throw UsageError(err);
    double v;
    try {
      v = std::stod(text.substr(i, j - i));
    } catch (const std::exception&) {
      throw UsageError(err);
    }
    if (j == text.size()) {
      if (any_unit) throw UsageError(err);  // "1m30" is ambiguous
      total += v;
      break;
    }
    const char u = text[j];
    total += u == 's' ? v : u == 'm' ? 60 * v : u == 'h' ? 3600 * v : throw UsageError(err);
    any_unit = true;
    i = j + 1;
  }
  if (total <= 0) throw UsageError(fmt::format("budget '{}' must be positive", text));
  return total;
}

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string default_out_dir() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "runs/%Y%m%d-%H%M%S", &tm);
  return buf;
}

std::string fmt_duration(double s) {
  if (s < 0) s = 0;
  const int m = static_cast<int>(s) / 60;
  return m > 0 ? fmt::format("{}m{:02d}s", m, static_cast<int>(s) % 60) : fmt::format("{:.0f}s", s);
}

nlohmann::json space_to_json(const KnobSpace& s) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [k, vs] : s.axes()) j.push_back({{"knob", k}, {"values", vs}});
  return j;
}
KnobSpace space_from_json(const nlohmann::json& j) {
  KnobSpace s;
  for (const auto& a : j) s.add(a.at("knob").get<std::string>(), a.at("values").get<std::vector<std::string>>());
  return s;
}

/// The run's identity, stored in the journal so --resume continues exactly the same search.
nlohmann::json options_to_json(const TuneOptions& o) {
  return {{"workload", o.workload}, {"space", space_to_json(o.space)}, {"seed", o.seed}, {"image_size", o.image_size},
          {"strategy", o.strategy.name}, {"max_trials", o.strategy.max_trials}, {"effective_batch", o.strategy.effective_batch},
          {"confirm_top", o.confirm_top}, {"confirm_rounds", o.confirm_rounds},
          {"device", o.device},     {"measure", o.measure},            {"max_rel_iqr", o.stability.max_rel_iqr},
          {"memory_headroom", o.stability.memory_headroom}, {"max_remeasure", o.stability.max_remeasure}};
}

void options_from_json(const nlohmann::json& j, TuneOptions& o) {
  o.workload = j.at("workload");
  o.space = space_from_json(j.at("space"));
  o.seed = j.at("seed");
  o.image_size = j.value("image_size", std::int64_t{0});
  o.strategy.name = j.value("strategy", std::string("grid"));
  o.strategy.max_trials = j.value("max_trials", 0);
  o.strategy.effective_batch = j.value("effective_batch", std::int64_t{0});
  o.strategy.seed = o.seed;
  o.confirm_top = j.value("confirm_top", 2);
  o.confirm_rounds = j.value("confirm_rounds", 2);
  o.device = j.at("device");
  o.measure = j.at("measure");
  o.stability.max_rel_iqr = j.at("max_rel_iqr");
  o.stability.memory_headroom = j.at("memory_headroom");
  o.stability.max_remeasure = j.at("max_remeasure");
}

/// The knobs of `c` that differ from `baseline`, "(baseline)" when none: short enough for a progress line.
std::string short_key(const Config& c, const Config& baseline) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : c.values())
    if (baseline.get(k) != v) parts.push_back(k + "=" + v);
  return parts.empty() ? "(baseline)" : join(parts, " ");
}

/// Progress: one plain line per finished trial (the same in a TTY, a log and CI): trial count,
/// what ran, its result, the best so far and the budget left.
class Progress {
 public:
  Progress(std::ostream& out, double budget) : out_(out), budget_(budget), t0_(now_s()) {}
  void trial(const TrialRecord& rec, const ConfigSummary& s, const std::string& best, const std::string& what_ran) {
    ++done_;
    const auto& r = rec.result;
    std::string what = r.status == TrialStatus::ok
                           ? fmt::format("{:>10.0f} samples/s (IQR {:.1f}%)", s.median, 100 * s.rel_iqr)
                           : fmt::format("{}: {}", to_string(r.status), r.message);
    out_ << fmt::format("[{:>3}] {:<9} {:<40} {}  | best {} | {} left\n", done_, to_string(rec.kind), what_ran,
                        what, best.empty() ? "-" : best, fmt_duration(budget_ - (now_s() - t0_)))
         << std::flush;
  }
  void line(const std::string& s) {
    ++done_;
    out_ << fmt::format("[{:>3}] ", done_) << s << "\n" << std::flush;
  }

 private:
  std::ostream& out_;
  int done_ = 0;
  double budget_, t0_;
};

}  // namespace

namespace {

/// Journal attempts of a config at a window scale; confirm and reference runs are kept apart.
std::string attempt_key(const Config& c, double scale) { return fmt::format("{}@{:g}", c.key(), scale); }

}  // namespace

TuneOutcome run_tune(const TuneOptions& in, std::ostream& progress) {
  const double t0 = now_s();
  TuneOptions opts = in;
  if (opts.worker.empty()) opts.worker = default_worker_path();
  if (opts.out_dir.empty()) {
    if (opts.resume) throw UsageError("--resume needs the run folder: --resume DIR");
    opts.out_dir = default_out_dir();
  }
  const fs::path out(opts.out_dir);
  const fs::path journal_path = out / "journal.sqlite";
  if (opts.resume) {
    if (!fs::exists(journal_path))
      throw UsageError(fmt::format("--resume {}: no journal.sqlite there; nothing to resume", opts.out_dir));
  } else if (fs::exists(journal_path)) {
    throw UsageError(fmt::format("{} already holds a run (journal.sqlite); pass --resume {} to continue it, or choose "
                                 "another --out",
                                 opts.out_dir, opts.out_dir));
  }
  if (opts.space.empty())
    opts.space = (opts.strategy.name == "auto" || opts.strategy.name == "coordinate") ? full_space() : default_space();

  // What the worker offers; an unknown workload is a usage error before anything is created.
  const auto workloads = query_workloads(opts.worker);
  if (!opts.resume) find_workload(workloads, opts.workload);
  fs::create_directories(out / "trials");
  Journal journal(journal_path.string());
  if (opts.resume) {
    const std::string stored = journal.meta("options");
    if (stored.empty()) throw UsageError(fmt::format("{}: journal has no stored options; cannot resume", journal_path.string()));
    const double budget = opts.budget_seconds;
    options_from_json(nlohmann::json::parse(stored), opts);
    opts.budget_seconds = budget;  // the budget is per invocation
  }
  const WorkloadInfo workload = find_workload(workloads, opts.workload);
  const EnvFingerprint env = query_environment(opts.worker);
  TargetInfo target;
  target.cuda = env.cuda_available && opts.device != "cpu";
  target.gpu_count = target.cuda ? env.device_count : 0;
  target.cpu_cores = env.cpu_cores;
  target.conv_model = workload.conv_model;
  target.image_data = workload.image_data;
  target.block_model = workload.block_model;

  RunSummary summary;
  summary.workload = workload;
  summary.env = env;
  summary.strategy = opts.strategy.name;
  summary.budget_seconds = opts.budget_seconds;
  summary.max_rel_iqr = opts.stability.max_rel_iqr;
  summary.memory_headroom = opts.stability.memory_headroom;
  // Knobs (or single values) that cannot apply here are dropped from the search and reported.
  KnobSpace space;
  for (const auto& [k, vs] : opts.space.axes()) {
    const Knob& knob = find_knob(k);
    if (auto why = knob.not_applicable(target)) {
      summary.skipped_knobs.push_back({k, *why});
      continue;
    }
    std::vector<std::string> usable;
    for (const auto& v : vs) {
      if (auto why = knob.value_not_applicable(v, target))
        summary.skipped_knobs.push_back({k + "=" + v, *why});
      else
        usable.push_back(v);
    }
    if (!usable.empty()) space.add(k, usable);
  }
  summary.space = space.describe();
  if (!opts.resume) {
    journal.set_meta("options", options_to_json(opts).dump());
    journal.set_meta("workload", opts.workload);
    journal.set_meta("space", opts.space.describe());
    journal.set_meta("env", nlohmann::json(env).dump());
  }
  summary.started_at = journal.meta("created_at");

  // Baseline = PyTorch's defaults for every searched knob (batch size: the workload's default). With
  // an effective batch, grad_accum holds micro-batch × accumulation at that value.
  const std::string b0 = std::to_string(workload.default_batch_size);
  const std::map<std::string, std::string> workload_defaults = {{"batch_size", b0}};
  Config baseline;
  for (const auto& [k, vs] : space.axes()) baseline.set(k, find_knob(k).baseline(k == "batch_size" ? b0 : ""));
  if (opts.strategy.effective_batch > 0) {
    const auto eb = opts.strategy.effective_batch;
    if (eb % workload.default_batch_size != 0)
      throw UsageError(fmt::format("--effective-batch {} must be a multiple of {}'s default batch size {}", eb, workload.name,
                                   workload.default_batch_size));
    baseline.set("batch_size", b0).set("grad_accum", std::to_string(eb / workload.default_batch_size));
  }
  auto strategy = make_strategy(opts.strategy, space, baseline, workload_defaults);

  // Attempts already in the journal (resume). A deque: records never move, so pointers stay valid.
  std::deque<TrialRecord> done;
  for (auto& r : journal.trials()) done.push_back(std::move(r));
  std::map<std::string, std::vector<const TrialRecord*>> attempts;  // search/baseline/remeasure
  std::map<std::string, std::vector<const TrialRecord*>> confirms, references;
  auto index_record = [&](const TrialRecord& r) {
    const double scale = opts.measure.window_min_seconds > 0 ? r.plan.measure.window_min_seconds / opts.measure.window_min_seconds : 1.0;
    if (r.kind == TrialKind::confirm) confirms[r.plan.config.key()].push_back(&r);
    else if (r.kind == TrialKind::reference) references[r.plan.config.key()].push_back(&r);
    else attempts[attempt_key(r.plan.config, scale)].push_back(&r);
  };
  for (const auto& r : done) index_record(r);
  if (!done.empty()) progress << fmt::format("resuming {}: {} trials already in the journal\n", opts.out_dir, done.size());

  TrialRunner runner(RunnerOptions(opts.worker, (out / "trials").string()).timeout_seconds(opts.trial_timeout_seconds));
  Progress prog(progress, opts.budget_seconds);
  double trial_seconds_sum = 0;
  int trials_timed = 0;
  for (const auto& r : done) {  // resumed trials inform the per-trial estimate
    trial_seconds_sum += r.result.wall_seconds;
    ++trials_timed;
  }
  auto estimate = [&] { return trials_timed ? trial_seconds_sum / trials_timed : 0.0; };
  auto fits = [&](int trials_needed) { return now_s() - t0 + estimate() * trials_needed <= opts.budget_seconds; };
  // Kept for the end: the confirmation runs and an fp32 reference per candidate.
  const int reserve = std::max(1, opts.confirm_top * (opts.confirm_rounds + 1) + opts.confirm_rounds);

  auto run_one = [&](const Config& cfg, TrialKind kind, double scale) -> const TrialRecord& {
    TrialPlan plan;
    plan.workload = opts.workload;
    plan.config = cfg;
    plan.seed = opts.seed;
    plan.device = opts.device;
    plan.image_size = opts.image_size;
    plan.measure = opts.measure;
    plan.measure.window_min_seconds *= scale;
    const double s0 = now_s();
    TrialRecord rec = runner.run(plan, kind, static_cast<int>(done.size()) + 1);
    trial_seconds_sum += now_s() - s0;
    ++trials_timed;
    rec.id = journal.append(rec);  // committed now: a kill after this loses nothing
    done.push_back(std::move(rec));
    index_record(done.back());
    return done.back();
  };

  History history;
  std::vector<std::string> order;  // config keys in first-measured order, for the report
  std::string best_text;
  // Measures a proposal (re-measuring a noisy one in fresh processes) unless the journal has it.
  auto measure = [&](const Proposal& p, TrialKind kind) {
    const std::string key = attempt_key(p.config, p.window_scale);
    if (attempts[key].empty()) {
      const TrialRecord& rec = run_one(p.config, kind, p.window_scale);
      prog.trial(rec, summarize_config(attempts[key], opts.stability), best_text, short_key(p.config, baseline));
    }
    ConfigSummary s = summarize_config(attempts[key], opts.stability);
    while (wants_remeasure(s, attempts[key].size(), opts.stability) && fits(1 + reserve)) {
      const TrialRecord& rec = run_one(p.config, TrialKind::remeasure, p.window_scale);
      s = summarize_config(attempts[key], opts.stability);
      prog.trial(rec, s, best_text, short_key(p.config, baseline));
    }
    s.is_baseline = kind == TrialKind::baseline;
    s.window_scale = p.window_scale;
    s.phase = kind == TrialKind::baseline ? "baseline" : p.phase;
    if (!history.find(p.config)) order.push_back(p.config.key());
    history.add(s);
    if (const ConfigSummary* b = history.best()) best_text = fmt::format("{:.0f} {}", b->median, short_key(b->config, baseline));
  };

  // 1. The baseline always runs: without it there is nothing to compare against.
  measure(Proposal{baseline, 1.0, "baseline"}, TrialKind::baseline);
  // 2. The strategy, while the budget (minus the confirmation's share) allows.
  while (auto p = strategy->next(history)) {
    const bool cached = !attempts[attempt_key(p->config, p->window_scale)].empty();
    if (!cached && !fits(1 + reserve)) {
      summary.unexplored.push_back(p->config);
      for (const auto& c : strategy->pending(history))
        if (c != p->config) summary.unexplored.push_back(c);
      break;
    }
    measure(*p, TrialKind::search);
  }

  // 3. Loss trajectory vs the fp32 reference (same batch, seed, data) for the leading candidates
  //    that change numerics; a config that drifts is not eligible.
  auto ranked = [&] {
    std::vector<const ConfigSummary*> v;
    for (const auto& [k, s] : history.all())
      if (s.eligible) v.push_back(&s);
    std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->median > b->median; });
    return v;
  };
  for (int round = 0; round < 3; ++round) {  // a rejected leader lets the next one in
    bool changed = false;
    auto lead = ranked();
    for (size_t i = 0; i < lead.size() && i < static_cast<size_t>(opts.confirm_top); ++i) {
      ConfigSummary s = *lead[i];
      const std::string prec = s.config.get("precision", "fp32");
      if (prec == "fp32") continue;
      if (std::any_of(s.checks.begin(), s.checks.end(), [](const Check& c) { return c.name == "loss vs fp32 reference"; })) continue;
      Config ref = s.config;
      ref.set("precision", "fp32");
      const TrialRecord* rr = references[ref.key()].empty() ? nullptr : references[ref.key()].back();
      if (!rr) {
        if (!fits(1 + reserve)) break;
          rr = &run_one(ref, TrialKind::reference, 1.0);
        prog.line(fmt::format("reference {} (fp32 twin of {}) for the loss-trajectory check", short_key(ref, baseline),
                              short_key(s.config, baseline)));
      }
      const TrialRecord* measured = nullptr;
      for (const auto* a : attempts[attempt_key(s.config, s.window_scale)])
        if (a->id == s.measured_trial) measured = a;
      Check c = rr->result.status == TrialStatus::ok
                    ? loss_trajectory_check(measured->result, rr->result, opts.stability.loss_tolerance)
                    : Check{"loss vs fp32 reference", false, "the fp32 reference failed: " + rr->result.message};
      s.checks.push_back(c);
      if (!c.passed) {
        s.eligible = false;
        s.reason = "diverged: " + c.detail;
        changed = true;
      }
      history.add(s);
    }
    if (!changed) break;
  }

  // 4. Confirmation: the top candidates and the baseline again in fresh processes, interleaved
  //    (A B C, C B A, …) so drift hits all alike; the winner is chosen on these runs.
  std::vector<ConfigSummary> configs;
  for (const auto& k : order) configs.push_back(history.all().at(k));
  std::vector<int> top;
  {
    auto lead = ranked();
    for (size_t i = 0; i < lead.size() && static_cast<int>(top.size()) < opts.confirm_top; ++i)
      for (int j = 0; j < static_cast<int>(configs.size()); ++j)
        if (configs[j].config == lead[i]->config) top.push_back(j);
  }
  std::vector<ConfigSummary> confirmed_view;  // candidates as measured in the confirmation
  // The baseline runs in the same interleaved rounds, so the speedup compares like with like.
  std::vector<int> runners = top;
  if (!top.empty() && std::find(top.begin(), top.end(), 0) == top.end()) runners.push_back(0);
  for (int round = 0; round < opts.confirm_rounds && !top.empty(); ++round) {
    std::vector<int> seq = runners;
    if (round % 2) std::reverse(seq.begin(), seq.end());
    for (int j : seq) {
      const Config& c = configs[j].config;
      if (static_cast<int>(confirms[c.key()].size()) > round) continue;  // resumed
      if (round > 0 && !fits(1)) break;
      const TrialRecord& rec = run_one(c, TrialKind::confirm, 1.0);
      prog.line(fmt::format("confirm   {} round {}: {}", short_key(c, baseline), round + 1,
                            rec.result.status == TrialStatus::ok ? with_commas(median(rec.result.throughputs())) + " samples/s"
                                                                 : to_string(rec.result.status) + ": " + rec.result.message));
    }
  }
  // A candidate confirms when its speedup over the baseline reproduces: the 95% CI of (candidate ÷
  // baseline) in the interleaved rounds overlaps the same ratio's CI in the search. Ratios cancel
  // drift that slows the whole machine between search and confirmation; absolute numbers do not.
  // The windows of every confirmation run of `c`, pooled; empty when none ran or any run failed.
  auto confirmation_windows = [&](const Config& c) {
    std::vector<double> t;
    for (const auto* r : confirms[c.key()]) {
      if (r->result.status != TrialStatus::ok) return std::vector<double>{};
      for (double x : r->result.throughputs()) t.push_back(x);
    }
    return t;
  };
  const std::vector<double> base_confirm = confirmation_windows(configs[0].config);
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
      const std::string absolute = fmt::format("{} samples/s [{}, {}] in {} fresh interleaved run(s) vs {} [{}, {}] in the search",
                                               with_commas(conf.median), with_commas(conf.ci_lo), with_commas(conf.ci_hi),
                                               ids.size(), with_commas(v.median), with_commas(v.ci_lo), with_commas(v.ci_hi));
      if (j != 0 && !base_confirm.empty() && configs[0].status == TrialStatus::ok) {
        const Interval now = bootstrap_ratio_ci(pooled, base_confirm);
        const Interval then = bootstrap_ratio_ci(v.throughputs, configs[0].throughputs);
        conf.confirmed = now.overlaps(then);
        conf.detail = fmt::format("{:.2f}× the baseline [{:.2f}, {:.2f}] interleaved vs {:.2f}× [{:.2f}, {:.2f}] in the search — {}; {}",
                                  median(pooled) / median(base_confirm), now.lo, now.hi,
                                  v.median / configs[0].median, then.lo, then.hi,
                                  conf.confirmed ? "reproduced" : "not reproduced", absolute);
      } else {  // the baseline itself, or no baseline runs to compare with: absolute CIs
        conf.confirmed = ci.overlaps({v.ci_lo, v.ci_hi});
        conf.detail = fmt::format("{} — {}", absolute, conf.confirmed ? "95% CIs overlap" : "95% CIs do not overlap: not reproduced");
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
  summary.configs = configs;
  summary.baseline = 0;
  // The winner: among confirmed candidates (all candidates if none confirmed), on confirmation numbers.
  {
    std::vector<ConfigSummary> pool;
    for (size_t i = 0; i < confirmed_view.size(); ++i)
      if (summary.confirmations[i].second.confirmed) pool.push_back(confirmed_view[i]);
    if (pool.empty()) pool = confirmed_view;
    std::string note;
    const int w = choose_winner(pool, workload_defaults, note);
    summary.winner_note = note;
    if (w >= 0) {
      for (size_t j = 0; j < configs.size(); ++j)
        if (configs[j].config == pool[w].config) summary.winner = static_cast<int>(j);
      for (const auto& [c, conf] : summary.confirmations)
        if (c == pool[w].config) summary.confirmation = conf;
    }
  }
  // Speedup: from the interleaved confirmation runs of winner and baseline when both ran fine (same
  // conditions, same time); otherwise from the search runs, and the report says which.
  const ConfigSummary& base = configs[0];
  if (summary.winner >= 0) {
    const ConfigSummary& w = configs[summary.winner];
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
  summary.trials_run = static_cast<int>(done.size());
  summary.elapsed_seconds = now_s() - t0;
  summary.finished_at = utc_now_iso8601();

  TuneOutcome result;
  result.summary = summary;
  result.out_dir = opts.out_dir;
  result.journal_path = journal_path.string();
  result.best_json_path = (out / "best.json").string();
  result.report_md_path = (out / "report.md").string();
  write_file_atomic(result.best_json_path, render_best_json(summary).dump(2) + "\n");
  write_file_atomic(result.report_md_path, render_markdown(summary));
  write_file_atomic((out / "results.json").string(), render_gbench_json(summary).dump(2) + "\n");
  write_file_atomic((out / "junit.xml").string(), render_junit(summary));
  return result;
}

}  // namespace autotune
