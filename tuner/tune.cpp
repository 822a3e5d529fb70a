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

#include "knobs/error.h"
#include "knobs/knob.h"
#include "reports/best_json.h"
#include "reports/markdown.h"
#include "tuner/journal.h"
#include "tuner/statistics.h"
#include "tuner/trial_runner.h"
#include "tuner/worker_client.h"

namespace autotune {

namespace fs = std::filesystem;

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
          {"device", o.device},     {"measure", o.measure},            {"max_rel_iqr", o.stability.max_rel_iqr},
          {"memory_headroom", o.stability.memory_headroom}, {"max_remeasure", o.stability.max_remeasure}};
}

void options_from_json(const nlohmann::json& j, TuneOptions& o) {
  o.workload = j.at("workload");
  o.space = space_from_json(j.at("space"));
  o.seed = j.at("seed");
  o.image_size = j.value("image_size", std::int64_t{0});
  o.device = j.at("device");
  o.measure = j.at("measure");
  o.stability.max_rel_iqr = j.at("max_rel_iqr");
  o.stability.memory_headroom = j.at("memory_headroom");
  o.stability.max_remeasure = j.at("max_remeasure");
}

/// Progress: one plain line per finished trial (works the same in a TTY, a log and CI).
class Progress {
 public:
  Progress(std::ostream& out, size_t planned, double budget) : out_(out), planned_(planned), budget_(budget), t0_(now_s()) {}
  void trial(const TrialRecord& rec, const ConfigSummary& s, const std::string& best) {
    ++done_;
    const auto& r = rec.result;
    std::string what = r.status == TrialStatus::ok
                           ? fmt::format("{:>10.0f} samples/s (IQR {:.1f}%)", s.median, 100 * s.rel_iqr)
                           : fmt::format("{}: {}", to_string(r.status), r.message);
    out_ << fmt::format("[{}/{}] {:<9} {:<34} {}  | best {} | {} left\n", done_, planned_, to_string(rec.kind),
                        rec.plan.config.key(), what, best.empty() ? "-" : best,
                        fmt_duration(budget_ - (now_s() - t0_)))
         << std::flush;
  }
  void line(const std::string& s) { out_ << s << "\n" << std::flush; }
  void add_planned(size_t n) { planned_ += n; }

 private:
  std::ostream& out_;
  size_t planned_, done_ = 0;
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
    throw UsageError(fmt::format("{} already holds a run (journal.sqlite); pass --resume {} to continue it, or choose "
                                 "another --out",
                                 opts.out_dir, opts.out_dir));
  }
  if (opts.space.empty()) opts.space = default_space();

  fs::create_directories(out / "trials");
  Journal journal(journal_path.string());
  if (opts.resume) {
    const std::string stored = journal.meta("options");
    if (stored.empty()) throw UsageError(fmt::format("{}: journal has no stored options; cannot resume", journal_path.string()));
    const double budget = opts.budget_seconds;
    options_from_json(nlohmann::json::parse(stored), opts);
    opts.budget_seconds = budget;  // the budget is per invocation
  }

  // What the worker offers; decides applicability before anything runs.
  const auto workloads = query_workloads(opts.worker);
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
  summary.strategy = "grid";
  summary.budget_seconds = opts.budget_seconds;
  summary.max_rel_iqr = opts.stability.max_rel_iqr;
  summary.memory_headroom = opts.stability.memory_headroom;
  KnobSpace space;
  // Knobs (or single values) that cannot apply here are dropped from the search and reported.
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

  // Baseline = PyTorch's defaults for every searched knob (batch size: the workload's default).
  const std::map<std::string, std::string> workload_defaults = {
      {"batch_size", std::to_string(workload.default_batch_size)}};
  Config baseline;
  for (const auto& [k, vs] : space.axes()) {
    const Knob& knob = find_knob(k);
    baseline.set(k, knob.default_value == "workload" ? workload_defaults.at(k) : knob.default_value);
  }
  std::vector<Config> order = {baseline};
  for (const auto& c : space.grid())
    if (c != baseline) order.push_back(c);

  // Attempts already in the journal (resume), keyed by config. A deque: records never move, so the
  // pointers in `attempts` stay valid as trials are appended.
  std::deque<TrialRecord> done;
  for (auto& r : journal.trials()) done.push_back(std::move(r));
  std::map<std::string, std::vector<const TrialRecord*>> attempts;
  const TrialRecord* confirm_rec = nullptr;
  auto index_record = [&](const TrialRecord& r) {
    if (r.kind == TrialKind::confirm)
      confirm_rec = &r;
    else
      attempts[r.plan.config.key()].push_back(&r);
  };
  for (const auto& r : done) index_record(r);
  if (!done.empty()) progress << fmt::format("resuming {}: {} trials already in the journal\n", opts.out_dir, done.size());

  TrialRunner runner(RunnerOptions(opts.worker, (out / "trials").string()).timeout_seconds(opts.trial_timeout_seconds));
  Progress prog(progress, order.size() + 1, opts.budget_seconds);
  double trial_seconds_sum = 0;
  int trials_here = 0;
  auto estimate = [&] { return trials_here ? trial_seconds_sum / trials_here : 0.0; };
  auto fits = [&](int trials_needed) { return now_s() - t0 + estimate() * trials_needed <= opts.budget_seconds; };

  auto run_one = [&](const Config& cfg, TrialKind kind) -> const TrialRecord& {
    TrialPlan plan;
    plan.workload = opts.workload;
    plan.config = cfg;
    plan.seed = opts.seed;
    plan.device = opts.device;
    plan.image_size = opts.image_size;
    plan.measure = opts.measure;
    const double s0 = now_s();
    TrialRecord rec = runner.run(plan, kind, static_cast<int>(done.size()) + 1);
    trial_seconds_sum += now_s() - s0;
    ++trials_here;
    rec.id = journal.append(rec);  // committed now: a kill after this loses nothing
    done.push_back(std::move(rec));
    index_record(done.back());
    return done.back();
  };

  std::string best_text;
  double best_median = 0;
  std::vector<ConfigSummary> configs;
  for (size_t i = 0; i < order.size(); ++i) {
    const Config& cfg = order[i];
    const TrialKind kind = i == 0 ? TrialKind::baseline : TrialKind::search;
    const auto& att = attempts[cfg.key()];
    // The baseline always runs: without it there is nothing to compare against. Others must fit
    // the budget together with the final confirmation trial.
    if (att.empty() && i > 0 && !fits(2)) {
      for (size_t j = i; j < order.size(); ++j)
        if (attempts[order[j].key()].empty()) summary.unexplored.push_back(order[j]);
      break;
    }
    if (att.empty()) {
      const TrialRecord& rec = run_one(cfg, kind);
      ConfigSummary s = summarize_config(attempts[cfg.key()], opts.stability);
      if (s.eligible && s.median > best_median) {
        best_median = s.median;
        best_text = fmt::format("{:.0f} ({})", s.median, cfg.key());
      }
      prog.trial(rec, s, best_text);
    }
    ConfigSummary s = summarize_config(attempts[cfg.key()], opts.stability);
    while (wants_remeasure(s, attempts[cfg.key()].size(), opts.stability) && fits(2)) {
      prog.add_planned(1);
      const TrialRecord& rec = run_one(cfg, TrialKind::remeasure);
      s = summarize_config(attempts[cfg.key()], opts.stability);
      if (s.eligible && s.median > best_median) {
        best_median = s.median;
        best_text = fmt::format("{:.0f} ({})", s.median, cfg.key());
      }
      prog.trial(rec, s, best_text);
    }
    s.is_baseline = i == 0;
    if (s.eligible && s.median > best_median) {
      best_median = s.median;
      best_text = fmt::format("{:.0f} ({})", s.median, cfg.key());
    }
    configs.push_back(std::move(s));
  }
  summary.configs = configs;
  summary.baseline = 0;
  summary.winner = choose_winner(configs, workload_defaults, summary.winner_note);

  // Confirmation: the winner again in a fresh process; it confirms when the two CIs overlap.
  if (summary.winner >= 0) {
    const ConfigSummary& w = configs[summary.winner];
    const TrialRecord* c = (confirm_rec && confirm_rec->plan.config == w.config) ? confirm_rec : nullptr;
    if (!c) c = &run_one(w.config, TrialKind::confirm);
    Confirmation& conf = summary.confirmation;
    conf.ran = true;
    conf.trial_id = c->id;
    if (c->result.status == TrialStatus::ok) {
      const auto t = c->result.throughputs();
      conf.median = median(t);
      const Interval ci = bootstrap_median_ci(t);
      conf.ci_lo = ci.lo;
      conf.ci_hi = ci.hi;
      conf.confirmed = ci.overlaps({w.ci_lo, w.ci_hi});
      conf.detail = fmt::format("fresh process: {:.0f} samples/s [{:.0f}, {:.0f}] vs search {:.0f} [{:.0f}, {:.0f}] — {}",
                                conf.median, conf.ci_lo, conf.ci_hi, w.median, w.ci_lo, w.ci_hi,
                                conf.confirmed ? "95% CIs overlap" : "95% CIs do not overlap: the win is not reproducible");
    } else {
      conf.detail = fmt::format("confirmation trial failed: {}: {}", to_string(c->result.status), c->result.message);
    }
    prog.line(fmt::format("confirm   {:<34} {}", w.config.key(), conf.detail));
  }
  const ConfigSummary& base = configs[0];
  if (summary.winner >= 0 && base.status == TrialStatus::ok && base.median > 0) {
    const ConfigSummary& w = configs[summary.winner];
    summary.speedup = w.median / base.median;
    const Interval r = bootstrap_ratio_ci(w.throughputs, base.throughputs);
    summary.speedup_lo = r.lo;
    summary.speedup_hi = r.hi;
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
  return result;
}

}  // namespace autotune
