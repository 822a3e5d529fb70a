#include "tuner/summarize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "knobs/did_you_mean.h"
#include "knobs/error.h"
#include "knobs/knob.h"
#include "tuner/journal.h"
#include "tuner/record_index.h"
#include "tuner/stability.h"
#include "tuner/statistics.h"
#include "tuner/summary_parts.h"

namespace autotune {

namespace fs = std::filesystem;

namespace {

/// The baseline's micro-batch under --effective-batch N: the workload's default when it divides N, else
/// the largest listed batch size that does (grad_accum makes up the rest, up to the knob's 1024). A UsageError
/// naming the reachable values nearest N when none does.
std::int64_t baseline_micro_batch(std::int64_t eb, const KnobSpace& space, const WorkloadInfo& w) {
  std::vector<std::int64_t> listed, ranks = {1};
  for (const auto& [k, vs] : space.axes()) {
    if (k == "batch_size")
      for (const auto& v : vs) listed.push_back(std::stoll(v));
    if (k == "ranks") {
      ranks.clear();
      for (const auto& v : vs) ranks.push_back(std::stoll(v));
    }
  }
  if (listed.empty()) listed = {w.default_batch_size};
  const std::int64_t max_accum = find_knob("grad_accum").max;
  if (eb % w.default_batch_size == 0 && eb / w.default_batch_size <= max_accum) return w.default_batch_size;
  std::int64_t best = 0;
  for (std::int64_t b : listed)
    if (eb % b == 0 && eb / b <= max_accum) best = std::max(best, b);
  if (best > 0) return best;
  // Nothing divides N: the nearest values that listed batch sizes × ranks × grad_accum do reach.
  std::int64_t below = 0, above = 0;
  for (std::int64_t b : listed)
    for (std::int64_t r : ranks) {
      const std::int64_t step = b * r;
      if (eb / step >= 1) below = std::max(below, std::min(eb / step, max_accum) * step);
      const std::int64_t up = ((eb + step - 1) / step) * step;
      if (up / step <= max_accum && (above == 0 || up < above)) above = up;
    }
  std::vector<std::string> names;
  for (std::int64_t b : listed) names.push_back(std::to_string(b));
  std::vector<std::string> near;
  if (below > 0) near.push_back(std::to_string(below));
  if (above > 0) near.push_back(std::to_string(above));
  throw UsageError(fmt::format("--effective-batch {} cannot be reached: no listed batch_size ({}) divides it with grad_accum ≤ "
                               "{}{}; reachable nearby: {}",
                               eb, join(names), max_accum, ranks.size() > 1 || ranks.front() != 1 ? " and ranks" : "",
                               near.empty() ? "none" : join(near)));
}

/// Why a noise scale measured here would say nothing about the user's training, or "".
std::string time_unrankable(const TrialSetup& setup, const WorkloadInfo& w) {
  if (!setup.data.empty()) return "";
  if (!setup.model.empty())
    return "your model trains on random inputs drawn from its batch spec here (no --data): a noise scale of random data says "
           "nothing about your training's";
  if (!setup.plugin.empty())
    return fmt::format("autotune cannot tell what data the plugin's workload {} trains on without --data; pass --data to rank "
                       "a changed batch by time",
                       w.name);
  return fmt::format("{} trains on synthetic data here{}: a model memorises such a pool, so its noise scale says nothing "
                     "about real training",
                     w.name, w.data.empty() ? "" : " (" + w.data + ")");
}

}  // namespace

RunContext make_context(const TuneOptions& opts, const WorkloadInfo& workload, const EnvFingerprint& env) {
  RunContext ctx;
  ctx.opts = opts;
  ctx.workload = workload;
  ctx.env = env;
  ctx.target = make_target(workload, env, opts.setup);
  ctx.target.launcher_ranks = opts.launcher != "local";  // torchrun or a template places the ranks (knobs/target.h)
  // Slurm places a trial's ranks as the tasks of its step or job (tuner/exec/slurm.h): a launcher, like srun in a
  // template. Local slots need no change: a data-parallel trial runs on the whole host, alone (tune.cpp, whole_host).
  if (opts.executor != "local") {
    ctx.target.launcher_ranks = true;
    if (opts.slot_cpus > 0) ctx.target.cpu_cores = opts.slot_cpus;
  }
  // Knobs (or single values) that cannot apply here are dropped from the search and reported.
  ctx.space = applicable_space(opts.space, ctx.target, ctx.skipped);
  // Baseline = PyTorch's defaults (batch size: the workload's default). With an effective batch,
  // grad_accum holds micro-batch × accumulation at that value. Runs since the sourced defaults take PyTorch
  // 2.11's own for the user's frontend (knobs/knob.h, pytorch_default) for every knob that applies — also one
  // the space does not search, when it differs from the worker's own default, so every trial starts from
  // what a plain script does; older runs (baseline_defaults "catalog") keep the catalog's first values.
  const std::string b0 = std::to_string(workload.default_batch_size);
  const bool pytorch = opts.baseline_defaults == "pytorch-2.11";
  for (const Knob& k : knob_catalog()) {
    const bool searched =
        std::any_of(ctx.space.axes().begin(), ctx.space.axes().end(), [&](const auto& a) { return a.first == k.name; });
    const std::string wd = k.name == "batch_size" ? b0 : "";
    const auto [value, source] = pytorch ? k.pytorch_default(opts.frontend, ctx.target.cuda, wd)
                                         : std::make_pair(k.baseline(wd), k.default_source);
    const bool differs = value != k.baseline(wd);
    if (searched || (pytorch && differs && !k.not_applicable(ctx.target))) ctx.baseline.set(k.name, value);
    if (searched || differs) ctx.baseline_sources.push_back({k.name, value, source});
  }
  const auto eb = opts.strategy.effective_batch;
  ctx.user_batch = eb > 0 ? eb : workload.default_batch_size;
  ctx.user_batch_source = eb > 0 ? "--effective-batch" : fmt::format("{}'s default batch size", workload.name);
  if (eb > 0) {
    const std::int64_t b = baseline_micro_batch(eb, ctx.space, workload);
    ctx.baseline.set("batch_size", std::to_string(b)).set("grad_accum", std::to_string(eb / b));
  }
  ctx.time_unrankable = time_unrankable(opts.setup, workload);
  ctx.defaults = ctx.baseline.values();
  if (!ctx.defaults.count("batch_size")) ctx.defaults["batch_size"] = b0;
  for (auto& b : ctx.baseline_sources)  // the effective batch moved these from the workload's default
    if (ctx.baseline.has(b.knob)) b.value = ctx.baseline.get(b.knob);
  return ctx;
}

Objective objective_for(const RunContext& ctx, const RecordIndex& index) {
  if (ctx.opts.objective != "time") return Objective();
  NoiseScaleSummary n;
  if (ctx.opts.noise_scale > 0) {  // given by the user: no trial, no interval of ours
    n.measured = true;
    n.value = n.lo = n.hi = ctx.opts.noise_scale;
    n.early = false;
    n.weights = "given (--noise-scale)";
    n.stopped = "given";
    n.data = ctx.opts.setup.data;
    n.usable = ctx.time_unrankable.empty();
    if (!n.usable) n.why_not = ctx.time_unrankable;
    return Objective(Objective::Kind::time, ctx.user_batch, n);
  }
  const auto& trials = index.noise_trials();
  for (auto it = trials.rbegin(); it != trials.rend(); ++it)  // the latest that gave an estimate, else the latest
    if (it == trials.rbegin() || summarize_noise_trial(**it).measured) {
      n = summarize_noise_trial(**it);
      if (n.measured) break;
    }
  n.usable = n.measured && ctx.time_unrankable.empty();
  if (!ctx.time_unrankable.empty()) n.why_not = ctx.time_unrankable;
  else if (trials.empty()) n.why_not = "no noise-scale trial ran (the budget ended first)";
  return Objective(Objective::Kind::time, ctx.user_batch, n);
}

TrialPlan noise_plan(const RunContext& ctx, double max_seconds) {
  TrialPlan p;
  p.setup = ctx.opts.setup;
  p.config = ctx.baseline;
  // K micro-batches of b = B0 / K: the optimizer sees the user's own batch (its trajectory is theirs), and
  // K ≥ 2 gives the second batch size the estimator needs. 4 when it divides (more micro-batches, less
  // variance per step), else 2, else any small divisor; a prime B0 runs 2 micro-batches of B0.
  const std::int64_t B0 = ctx.user_batch;
  std::int64_t K = 0;
  for (std::int64_t k : {4, 2, 8, 3, 5, 6, 7})
    if (B0 % k == 0 && B0 / k >= 1) {
      K = k;
      break;
    }
  const std::int64_t b = K > 0 ? B0 / K : B0;
  if (K == 0) K = 2;
  p.config.set("batch_size", std::to_string(b)).set("grad_accum", std::to_string(K));
  if (p.config.has("ranks")) p.config.set("ranks", "1");
  p.noise = ctx.opts.noise;
  p.noise.on = true;
  p.noise.max_seconds = std::max(1.0, std::min(ctx.opts.noise.max_seconds, max_seconds));
  const bool users_weights = !ctx.opts.setup.init_from.empty() || !ctx.opts.setup.model.empty();
  p.noise.burn_in_seconds = ctx.opts.noise_burn_in >= 0 ? ctx.opts.noise_burn_in
                            : users_weights            ? 0.0
                                                       : 0.05 * ctx.opts.budget_seconds;
  return p;
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

namespace {

/// The run's facts that are not trials.
RunSummary run_header(const RunContext& ctx, const RunMeta& meta, std::size_t trials) {
  RunSummary summary;
  summary.workload = ctx.workload;
  summary.env = ctx.env;
  summary.strategy = ctx.opts.strategy.name;
  summary.space = ctx.space.describe();
  summary.skipped_knobs = ctx.skipped;
  summary.folded = meta.folded;
  summary.memory = meta.memory;
  summary.budget_seconds = meta.budget_seconds;
  summary.elapsed_seconds = meta.elapsed_seconds;
  summary.started_at = meta.started_at;
  summary.finished_at = meta.finished_at;
  summary.finished = !meta.finished_at.empty();
  summary.max_rel_iqr = ctx.opts.stability.max_rel_iqr;
  summary.max_drift = ctx.opts.stability.max_drift;
  summary.memory_headroom = ctx.opts.stability.memory_headroom;
  summary.confirm_round_lead = ctx.opts.stability.confirm_round_lead;
  summary.trials_run = static_cast<int>(trials);
  summary.objective = ctx.opts.objective;
  if (ctx.opts.baseline_defaults == "pytorch-2.11") summary.frontend = ctx.opts.frontend;
  summary.baseline_sources = ctx.baseline_sources;
  if (ctx.opts.objective == "time") {
    summary.user_batch = ctx.user_batch;
    summary.user_batch_source = ctx.user_batch_source;
  }
  return summary;
}

/// Each measured config's verdict from its latest attempts (as the live run saw it), with the phase
/// that proposed it, then the loss-trajectory check of the leaders.
History measured_history(const RecordIndex& index, const RunContext& ctx, const RunMeta& meta, const StabilityOptions& limits) {
  History history;
  history.set_objective(objective_for(ctx, index));
  for (const auto& m : index.measured()) {
    ConfigSummary s = summarize_config(index.attempts(m.config, m.latest_scale), limits);
    s.is_baseline = s.config == ctx.baseline;
    s.window_scale = m.latest_scale;
    const auto phase = meta.phases.find(m.config.key());
    s.phase = m.first_kind == TrialKind::baseline   ? "baseline"
              : m.first_kind == TrialKind::ablation ? "ablation"
              : phase != meta.phases.end()          ? phase->second
                                                    : "search";
    history.add(s);
  }
  verify_leaders(
      history, ctx.opts.confirm_top, ctx.opts.stability.loss_tolerance,
      [&](const Config& twin) { return index.references(twin).empty() ? nullptr : index.references(twin).back(); },
      [&](const ConfigSummary& s) { return index.by_id(s.measured_trial); });
  return history;
}

/// Every worker process, for the per-trial chart and table.
std::vector<TrialPoint> trial_points(const std::vector<TrialRecord>& records, const Config& baseline) {
  std::vector<TrialPoint> points;
  for (const auto& r : records)
    points.push_back({r.id, to_string(r.kind), r.plan.config.diff_key(baseline), to_string(r.result.status),
                      r.result.status == TrialStatus::ok ? median(r.result.throughputs()) : 0, r.result.message});
  return points;
}

}  // namespace

ScaleOut scale_out_of(const std::vector<TrialRecord>& records, const RecordIndex& index, const Config& baseline) {
  ScaleOut so;
  std::map<int, std::string> places;
  for (const auto& r : records) {
    so.device_seconds += r.result.wall_seconds;
    if (!r.result.placement) continue;
    const Placement& p = *r.result.placement;
    so.executor = p.executor;
    so.slots = std::max(so.slots, p.slots);
    std::string place = fmt::format("slot {}: {}", p.slot, p.cpus.empty() ? "all CPUs" : "CPUs " + p.cpus);
    if (!p.devices.empty()) place += ", GPU " + p.devices;
    if (p.slot >= 0) places[p.slot] = place;  // −1: a data-parallel trial on the whole host, not a slot
    if (!p.alone()) {
      ++so.trials_beside;
      if (r.kind == TrialKind::confirm || r.kind == TrialKind::reference) ++so.finalists_beside;
    }
  }
  for (const auto& [slot, place] : places) so.places.push_back(place);
  std::vector<double> copies;
  for (const TrialRecord* r : index.interference())
    if (r->result.status == TrialStatus::ok) copies.push_back(median(r->result.throughputs()));
  const auto& base = index.attempts(baseline, 1.0);
  if (!copies.empty() && !base.empty() && base.front()->result.status == TrialStatus::ok) {
    so.copies = static_cast<int>(copies.size());
    so.alone = median(base.front()->result.throughputs());
    so.beside = median(copies);
  }
  return so;
}

RunSummary summarize_run(const std::vector<TrialRecord>& records, const RunContext& ctx, const RunMeta& meta) {
  RunSummary summary = run_header(ctx, meta, records.size());
  RecordIndex index(ctx.opts.setup.measure);
  for (const auto& r : records) index.add(r);
  summary.scale_out = scale_out_of(records, index, ctx.baseline);
  // Unexplored: what the search did not reach and nothing measured later (an ablation may have).
  for (const auto& c : meta.unexplored)
    if (!index.was_measured(c)) summary.unexplored.push_back(c);
  // The limits in force, calibrated to the host's own noise exactly as the live run did (tune.cpp).
  const StabilityOptions& given = ctx.opts.stability;
  const HostNoise noise = host_noise(index.first_attempts(), ctx.opts.setup.measure, given.calibration_trials);
  const StabilityOptions limits = calibrated(given, noise, ctx.opts.setup.measure.windows);
  summary.max_rel_iqr = limits.max_rel_iqr;
  summary.max_drift = limits.max_drift;
  summary.noise.calibrating = given.calibrate;
  summary.noise.trials_needed = given.calibration_trials;
  summary.noise.trials = noise.trials;
  summary.noise.host_rel_iqr = noise.rel_iqr;
  summary.noise.host_drift = noise.drift;
  summary.noise.given_max_rel_iqr = given.max_rel_iqr;
  summary.noise.given_max_drift = given.max_drift;
  summary.noise.raised = limits.max_rel_iqr > given.max_rel_iqr + 1e-12 || limits.max_drift > given.max_drift + 1e-12;
  summary.noise.at_cap = at_ceiling(limits, given);
  const History history = measured_history(index, ctx, meta, limits);
  summary.noise_scale = history.objective().noise();
  for (const auto& m : index.measured()) {
    summary.configs.push_back(*history.find(m.config));
    if (summary.configs.back().is_baseline) summary.baseline = static_cast<int>(summary.configs.size()) - 1;
  }
  if (summary.baseline < 0 && !summary.configs.empty()) summary.baseline = 0;
  summary.trials = trial_points(records, ctx.baseline);
  for (const auto& r : records)  // real data: the first trial that read some; the winner's replaces it below
    if (summary.data.source.empty() && !r.result.data.source.empty()) summary.data = r.result.data;
  if (summary.baseline < 0) return summary;  // nothing measured yet (an interrupted run)
  const SummaryInput in{ctx, index, history};
  add_confirmation_and_winner(summary, in);
  if (summary.winner < 0) return summary;
  add_speedup(summary, in);
  add_knob_effects(summary, in);
  add_curves_verdict_and_profiles(summary, in);
  return summary;
}

nlohmann::json folded_to_json(const std::vector<FoldedConfig>& f) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& x : f) j.push_back({{"proposed", x.proposed}, {"runs_as", x.runs_as}, {"reasons", x.reasons}});
  return j;
}

std::vector<FoldedConfig> folded_from_json(const nlohmann::json& j) {
  std::vector<FoldedConfig> f;
  for (const auto& x : j)
    f.push_back({x.at("proposed").get<Config>(), x.at("runs_as").get<Config>(), x.at("reasons").get<std::vector<std::string>>()});
  return f;
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
  } catch (const std::exception& ex) {  // malformed JSON, or a stored setting out of range
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
  if (const std::string f = journal.meta("folded"); !f.empty()) meta.folded = folded_from_json(nlohmann::json::parse(f));
  if (const std::string m = journal.meta("memory"); !m.empty()) meta.memory = nlohmann::json::parse(m).get<MemoryReport>();
  return summarize_run(journal.trials(), ctx, meta);
}

}  // namespace autotune
