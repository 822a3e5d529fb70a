#include "tuner/tune.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>

#include "knobs/did_you_mean.h"
#include "knobs/error.h"
#include "knobs/knob.h"
#include "reports/markdown.h"
#include "reports/reporter.h"
#include "tuner/journal.h"
#include "tuner/statistics.h"
#include "tuner/summarize.h"
#include "tuner/trial_runner.h"
#include "tuner/worker_client.h"

namespace autotune {

namespace fs = std::filesystem;

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

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

/// Progress: one plain line per finished trial (the same in a TTY, a log and CI): trial count,
/// what ran, its result, the best so far and the budget left.
class Progress {
 public:
  Progress(std::ostream& out, double budget) : out_(out), budget_(budget), t0_(now_s()) {}
  void trial(const TrialRecord& rec, const ConfigSummary& s, const std::string& best, const std::string& what_ran) {
    ++done_;
    const auto& r = rec.result;
    std::string what = r.status == TrialStatus::ok ? fmt::format("{:>10.0f} samples/s (IQR {:.1f}%)", s.median, 100 * s.rel_iqr)
                                                   : fmt::format("{}: {}", to_string(r.status), r.message);
    out_ << fmt::format("[{:>3}] {:<9} {:<40} {}  | best {} | {} left\n", done_, to_string(rec.kind), what_ran, what,
                        best.empty() ? "-" : best, fmt_duration(budget_ - (now_s() - t0_)))
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
    throw UsageError(
        fmt::format("{} already holds a run (journal.sqlite); pass --resume {} to continue it, or choose "
                    "another --out",
                    opts.out_dir, opts.out_dir));
  }
  if (opts.space.empty())
    opts.space = (opts.strategy.name == "auto" || opts.strategy.name == "coordinate") ? full_space() : default_space();

  // What the worker offers; an unknown workload is a usage error before anything is created.
  const auto workloads = query_workloads(opts.worker);
  if (!opts.resume) find_workload(workloads, opts.setup.workload);
  fs::create_directories(out / "trials");
  Journal journal(journal_path.string());
  if (opts.resume) {
    const std::string stored = journal.meta("options");
    if (stored.empty()) throw UsageError(fmt::format("{}: journal has no stored options; cannot resume", journal_path.string()));
    const double budget = opts.budget_seconds;
    options_from_json(nlohmann::json::parse(stored), opts);
    opts.budget_seconds = budget;  // the budget is per invocation
  }
  const WorkloadInfo workload = find_workload(workloads, opts.setup.workload);
  data_kind_for(workload, opts.setup);  // a bad --data is a usage error before any trial
  const EnvFingerprint env = query_environment(opts.worker);
  const RunContext ctx = make_context(opts, workload, env);
  const Config& baseline = ctx.baseline;
  if (!opts.resume) {
    journal.set_meta("options", options_to_json(opts).dump());
    journal.set_meta("workload", opts.setup.workload);
    journal.set_meta("space", opts.space.describe());
    journal.set_meta("env", nlohmann::json(env).dump());
  }
  journal.set_meta("workload_info", nlohmann::json(workload).dump());  // `autotune report` needs it
  std::map<std::string, std::string> phases;                           // config key → search phase, for the report
  if (const std::string p = journal.meta("phases"); !p.empty())
    phases = nlohmann::json::parse(p).get<std::map<std::string, std::string>>();
  auto strategy = make_strategy(opts.strategy, ctx.space, baseline, ctx.workload_defaults);

  // Attempts already in the journal (resume). A deque: records never move, so pointers stay valid.
  std::deque<TrialRecord> done;
  for (auto& r : journal.trials()) done.push_back(std::move(r));
  std::map<std::string, std::vector<const TrialRecord*>> attempts;  // search/baseline/remeasure/ablation
  std::map<std::string, std::vector<const TrialRecord*>> confirms, references;
  std::map<std::int64_t, const TrialRecord*> by_id;
  auto index_record = [&](const TrialRecord& r) {
    by_id[r.id] = &r;
    if (r.kind == TrialKind::confirm) confirms[r.plan.config.key()].push_back(&r);
    else if (r.kind == TrialKind::reference) references[r.plan.config.key()].push_back(&r);
    else attempts[attempt_key(r.plan.config, window_scale(r, opts.setup.measure))].push_back(&r);
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

  auto run_one = [&](const Config& cfg, TrialKind kind, double scale, const std::string& trace = "") -> const TrialRecord& {
    TrialPlan plan;
    plan.setup = opts.setup;
    plan.config = cfg;
    plan.setup.measure.window_min_seconds *= scale;
    plan.trace = trace;
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
  std::vector<std::string> order;  // config keys in first-measured order
  std::string best_text;
  // Measures a proposal (re-measuring a noisy one in fresh processes) unless the journal has it.
  auto measure = [&](const Proposal& p, TrialKind kind, int reserve_trials) {
    const std::string key = attempt_key(p.config, p.window_scale);
    if (!history.find(p.config) || phases[p.config.key()] != p.phase) {
      phases[p.config.key()] = kind == TrialKind::baseline ? "baseline" : p.phase;
      journal.set_meta("phases", nlohmann::json(phases).dump());
    }
    if (attempts[key].empty()) {
      const TrialRecord& rec = run_one(p.config, kind, p.window_scale);
      prog.trial(rec, summarize_config(attempts[key], opts.stability), best_text, p.config.diff_key(baseline));
    }
    ConfigSummary s = summarize_config(attempts[key], opts.stability);
    while (wants_remeasure(s, attempts[key].size(), opts.stability) && fits(1 + reserve_trials)) {
      const TrialRecord& rec = run_one(p.config, TrialKind::remeasure, p.window_scale);
      s = summarize_config(attempts[key], opts.stability);
      prog.trial(rec, s, best_text, p.config.diff_key(baseline));
    }
    s.is_baseline = p.config == baseline;
    s.window_scale = p.window_scale;
    s.phase = phases[p.config.key()];
    if (!history.find(p.config)) order.push_back(p.config.key());
    history.add(s);
    if (const ConfigSummary* b = history.best()) best_text = fmt::format("{:.0f} {}", b->median, b->config.diff_key(baseline));
  };

  // 1. The baseline always runs: without it there is nothing to compare against.
  measure(Proposal{baseline, 1.0, "baseline"}, TrialKind::baseline, reserve);
  // 2. The strategy, while the budget (minus the confirmation's share) allows.
  std::vector<Config> unexplored;
  while (auto p = strategy->next(history)) {
    const bool cached = !attempts[attempt_key(p->config, p->window_scale)].empty();
    if (!cached && !fits(1 + reserve)) {
      unexplored.push_back(p->config);
      for (const auto& c : strategy->pending(history))
        if (c != p->config) unexplored.push_back(c);
      break;
    }
    measure(*p, TrialKind::search, reserve);
  }

  // 3. Loss trajectory vs the fp32 reference (same batch, seed, data) for the leading candidates
  //    that change numerics; a config that drifts — or whose reference the budget cannot fit — is
  //    not eligible. summarize_run() repeats this from the journal with the same function.
  verify_leaders(
      history, opts.confirm_top, opts.stability.loss_tolerance,
      [&](const Config& twin) -> const TrialRecord* {
        if (!references[twin.key()].empty()) return references[twin.key()].back();
        if (!fits(1 + reserve)) return nullptr;
        const TrialRecord& rr = run_one(twin, TrialKind::reference, 1.0);
        prog.line(fmt::format("reference {} (fp32 twin) for the loss-trajectory check", twin.diff_key(baseline)));
        return &rr;
      },
      [&](const ConfigSummary& s) -> const TrialRecord* {
        auto it = by_id.find(s.measured_trial);
        return it == by_id.end() ? nullptr : it->second;
      });

  // 4. Confirmation: the top candidates and the baseline again in fresh processes, interleaved
  //    (A B base, base B A, …) so drift hits all alike; the winner is chosen on these runs.
  std::vector<Config> runners;
  for (const ConfigSummary* c : ranked_candidates(history)) {
    if (static_cast<int>(runners.size()) >= opts.confirm_top) break;
    runners.push_back(c->config);
  }
  if (!runners.empty() && std::find(runners.begin(), runners.end(), baseline) == runners.end()) runners.push_back(baseline);
  for (int round = 0; round < opts.confirm_rounds && !runners.empty(); ++round) {
    std::vector<Config> seq = runners;
    if (round % 2) std::reverse(seq.begin(), seq.end());
    for (const Config& c : seq) {
      if (static_cast<int>(confirms[c.key()].size()) > round) continue;  // resumed
      if (round > 0 && !fits(1)) break;
      const TrialRecord& rec = run_one(c, TrialKind::confirm, 1.0);
      prog.line(fmt::format("confirm   {} round {}: {}", c.diff_key(baseline), round + 1,
                            rec.result.status == TrialStatus::ok ? with_commas(median(rec.result.throughputs())) + " samples/s"
                                                                 : to_string(rec.result.status) + ": " + rec.result.message));
    }
  }

  auto summarize = [&] {
    RunMeta meta;
    meta.started_at = journal.meta("created_at");
    meta.finished_at = utc_now_iso8601();
    meta.elapsed_seconds = std::round((now_s() - t0) * 1000) / 1000;  // as stored, so `report` agrees
    meta.budget_seconds = opts.budget_seconds;
    meta.unexplored = unexplored;
    meta.phases = phases;
    journal.set_meta("finished_at", meta.finished_at);
    journal.set_meta("elapsed_seconds", fmt::format("{:.3f}", meta.elapsed_seconds));
    journal.set_meta("budget_seconds", fmt::format("{:.3f}", meta.budget_seconds));
    journal.set_meta("unexplored", nlohmann::json(unexplored).dump());
    return summarize_run(std::vector<TrialRecord>(done.begin(), done.end()), ctx, meta);
  };
  RunSummary summary = summarize();

  // 5. Why it wins: each non-default knob of the winner that no measured config isolates is put back
  //    to its default in one more run (an ablation; never a candidate), budget permitting.
  bool ablated = false;
  for (const KnobEffect& e : summary.knob_effects) {
    if (e.at_default) continue;
    if (!fits(1)) break;
    Config c = summary.configs[summary.winner].config;  // e.without may be a neighbour at another value
    c.set(e.knob, baseline.get(e.knob));
    if (opts.strategy.effective_batch > 0 && e.knob == "batch_size") c.set("grad_accum", baseline.get("grad_accum"));
    measure(Proposal{c, 1.0, "ablation"}, TrialKind::ablation, 0);
    ablated = true;
  }
  if (ablated) summary = summarize();

  // 6. Where the time goes: a short traced trial of the winner and of the baseline (CUPTI on a GPU,
  //    host phase ranges otherwise), budget permitting; traces/<label>.json opens in Perfetto / HTA.
  if (summary.winner >= 0) {
    std::vector<std::pair<std::string, Config>> to_trace = {{"winner", summary.configs[summary.winner].config}};
    if (summary.winner != summary.baseline) to_trace.push_back({"baseline", baseline});
    bool traced = false;
    for (const auto& [label, c] : to_trace) {
      bool have = false;
      for (const auto& r : done) have |= r.kind == TrialKind::trace && r.plan.config == c;
      if (have || !fits(1)) continue;
      fs::create_directories(out / "traces");
      const TrialRecord& rec = run_one(c, TrialKind::trace, 1.0, fs::absolute(out / "traces" / (label + ".json")).string());
      prog.line(fmt::format("trace     {} {}: {}", label, c.diff_key(baseline),
                            rec.result.status == TrialStatus::ok ? "traces/" + label + ".json"
                                                                 : to_string(rec.result.status) + ": " + rec.result.message));
      traced = true;
    }
    if (traced) summary = summarize();
  }

  TuneOutcome result;
  result.summary = summary;
  result.out_dir = opts.out_dir;
  result.journal_path = journal_path.string();
  result.best_json_path = (out / "best.json").string();
  result.report_md_path = (out / "report.md").string();
  write_reports(summary, opts.out_dir);
  return result;
}

}  // namespace autotune
