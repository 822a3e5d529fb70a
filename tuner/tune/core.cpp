#include "tuner/tune/core.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>
#include <utility>

#include "knobs/error.h"
#include "knobs/model_spec.h"
#include "knobs/numbers.h"
#include "tuner/exec/worker_client.h"
#include "tuner/pricing/noise_log.h"
#include "tuner/search/stability.h"
#include "tuner/summary/summarize.h"
#include "tuner/tune/run_folder.h"

namespace autotune {

namespace {

/// The seams a caller left empty, filled with the real ones: the worker binary asked, the plan's executor.
TuneSeams with_defaults(TuneSeams s, const std::string& worker_in, bool count_parameters) {
  const std::string worker = worker_in.empty() ? default_worker_path() : worker_in;
  if (!s.describe)
    s.describe = [worker, count_parameters](const TrialSetup& setup) {
      return describe_workload(worker, setup, count_parameters);
    };
  if (!s.environment) s.environment = [worker] { return query_environment(worker); };
  if (!s.executor) s.executor = [](const ExecutionPlan& p, TrialRunner r) { return p.executor(std::move(r)); };
  return s;
}

/// The GPUs local slots hand out, one each: the machine's, when its trials run on CUDA.
std::vector<std::string> slot_gpus(const EnvFingerprint& env, const TrialSetup& setup) {
  const bool cuda = env.cuda_available && env.device_count > 0 && setup.device != "cpu";
  return cuda ? visible_gpus(env.device_count) : std::vector<std::string>{};
}

/// The smallest batch size the space lists, else the baseline's: memory probes run at a quarter, half and all of it,
/// small enough to be cheap, close enough to the batches they predict.
std::int64_t smallest_batch(const RunContext& ctx) {
  std::int64_t smallest = std::stoll(ctx.defaults.count("batch_size") ? ctx.defaults.at("batch_size") : "32");
  for (const auto& [k, vs] : ctx.space.axes())
    if (k == "batch_size") {
      smallest = std::stoll(vs.front());
      for (const auto& v : vs) smallest = std::min<std::int64_t>(smallest, std::stoll(v));
    }
  return smallest;
}

}  // namespace

ConfigSummary relabelled(ConfigSummary s, const ConfigSummary& old) {
  s.is_baseline = old.is_baseline;
  s.phase = old.phase;
  return s;
}

TuneCore::TuneCore(const TuneOptions& in, std::ostream& console, TuneSeams seams)
    : seams_(with_defaults(std::move(seams), in.worker, !in.noise_log.empty() && !in.resume)),
      budget(in.budget_seconds),
      opts(prepared(in, [&] { return slot_gpus(seams_.environment(), in.setup); })),
      out(opts.out_dir),
      journal(open_journal()),
      workload(new_run_ctx_ ? new_run_ctx_->workload : seams_.describe(opts.setup)),
      env(new_run_ctx_ ? new_run_ctx_->env : seams_.environment()),
      ctx(new_run_ctx_ ? std::move(*new_run_ctx_) : make_context(opts, workload, env)),
      execution(start_execution(opts.exec, opts.out_dir, slot_gpus(env, opts.setup))),
      trials(journal, seams_.executor(execution, trial_runner()), opts.setup.measure, budget),
      progress(console, budget),
      reserve(confirmation_reserve(opts.confirm_top, opts.confirm_rounds)) {
  try {
    record_run_meta();
  } catch (const DiskFull& e) {
    if (!opts.resume) forget_new_journal(opts.out_dir, e);
    throw DiskFull(e.path(), fmt::format("{}; the journal is as it was: make room, then continue with: autotune tune --resume {}",
                                         e.why(), out.string()));
  }
  trials.on_commit = [this](const TrialRecord& r, bool loaded) { committed(r, loaded); };
  trials.load(journal.trials());
  if (!trials.all().empty())
    console << fmt::format("resuming {}: {} trials already in the journal\n", opts.out_dir, trials.all().size());
  history.set_objective(objective_for(ctx, index()));
  limits = opts.stability;
  if (!opts.stability.calibrate) limits_settled = true;
  update_limits();
}

Journal TuneCore::open_journal() {
  std::optional<NoiseLog> log;
  if (!opts.resume) {
    const WorkloadInfo w = seams_.describe(opts.setup);
    data_kind_for(w, opts.setup);
    if (!opts.noise_log.empty()) {  // a log of another model, truncated or of one micro-batch: refused here
      log = read_noise_log(opts.noise_log);
      check_noise_log_model(*log, w.parameters, w.parameter_tensors,
                            opts.setup.model.empty()             ? "workload " + w.name
                            : !task_of(opts.setup.model).empty() ? "--task " + task_of(opts.setup.model)
                                                                 : "--model " + opts.setup.model);
      check_run_covers_log(*log, opts.run_length, static_cast<double>(w.block_size));
    }
    new_run_ctx_ = make_context(opts, w, seams_.environment());  // a new run's options are final: ctx is this
  }
  Journal j = open_run_journal(opts, lock_);
  if (log) keep_noise_log(opts.out_dir, *log);
  return j;
}

void TuneCore::record_run_meta() {
  if (opts.resume) {
    data_kind_for(workload, opts.setup);  // a new run checked its data in open_journal, before its folder existed
    journal.set_meta("options", options_to_json(opts).dump());  // a --run-length given to this invocation
  } else {
    journal.set_meta("options", options_to_json(opts).dump());
    journal.set_meta("workload", opts.setup.workload);
    journal.set_meta("space", opts.space.describe());
    journal.set_meta("env", nlohmann::json(env).dump());
  }
  journal.set_meta("workload_info", nlohmann::json(workload).dump());  // `autotune report` needs it
  meta = read_run_meta(journal, opts.budget_seconds);
  meta.unexplored.clear();  // each invocation lists what its own search did not reach
  if (!opts.setup.memory_cap.empty() && opts.memory_model == "on") {
    MemoryModelOptions mo;
    mo.capacity_bytes = parse_size(opts.setup.memory_cap, "--memory-cap");
    memory.emplace(mo, ctx.defaults, smallest_batch(ctx), meta.memory);
    opts.strategy.largest_fitting = [this](const Config& c, const std::vector<std::int64_t>& cands) -> std::int64_t {
      probe(c);
      return memory->largest_fitting(c, cands, opts.strategy.max_batch);
    };
  }
  opts.strategy.slots = opts.exec.parallel;
  strategy = make_strategy(opts.strategy, ctx.space, ctx.baseline, ctx.defaults);
  for (const auto& f : meta.folded) history.alias(f.proposed, f.runs_as);
}

void TuneCore::committed(const TrialRecord& r, bool loaded) {
  if (!memory) return;
  if (loaded) return memory->replay(r);
  const std::vector<std::string> misses = memory->add(r);
  for (const auto& m : misses) progress.note("memory model miss: " + m + " (the fit now counts it)");
  if (!misses.empty()) store_memory(journal, memory->report());
}

Config TuneCore::fold(const Proposal& p) {
  RunsAs r = runs_as(ctx, p.config);
  const bool known =
      std::any_of(meta.folded.begin(), meta.folded.end(), [&](const FoldedConfig& f) { return f.proposed == p.config; });
  if (r.config == p.config || known) return r.config;
  meta.folded.push_back({p.config, r.config, r.reasons});
  history.alias(p.config, r.config);
  store_folded(journal, meta.folded);
  progress.note(fmt::format("{} runs as {}: {}", p.config.diff_key(ctx.baseline), r.config.diff_key(ctx.baseline),
                            r.reasons.empty() ? "" : r.reasons.front()));
  return r.config;
}

void TuneCore::measure(const Proposal& proposal, TrialKind kind, int reserve_trials) {
  const Config cfg = fold(proposal);
  const double scale = proposal.window_scale;
  const std::string what = cfg.diff_key(ctx.baseline);
  record_phase(cfg, proposal.phase, kind == TrialKind::baseline ? "baseline" : proposal.phase);
  if (index().attempts(cfg, scale).empty() && kind == TrialKind::search && skipped_for_memory(cfg)) return;
  if (index().attempts(cfg, scale).empty()) {
    const TrialRecord& rec = run_alone(plan_of(cfg, scale), kind);
    update_limits();
    progress.trial(rec, summarize_config(index().attempts(cfg, scale), limits), best_text, what);
    remeasure_deferred();  // after this trial's own line: the console prints trials in the order they ran
  }
  ConfigSummary s = summarize_config(attempt_chain(index(), cfg, scale), limits);
  s.window_scale = scale;
  if (limits_settled) {
    s = remeasure(cfg, scale, reserve_trials, s);
  } else if (wants_remeasure(s, index().attempts(cfg, scale).size(), opts.stability)) {
    defer_remeasure({cfg, scale, reserve_trials});  // judged again (and re-measured) once the limits are known
  }
  add_verdict(s, cfg, s.window_scale);
}

void TuneCore::record_phase(const Config& cfg, const std::string& proposed_by, const std::string& label) {
  if (history.find(cfg) && meta.phases[cfg.key()] == proposed_by) return;
  meta.phases[cfg.key()] = label;
  store_phases(journal, meta.phases);
}

void TuneCore::add_verdict(ConfigSummary s, const Config& cfg, double scale) {
  s.is_baseline = cfg == ctx.baseline;
  s.window_scale = scale;
  s.phase = meta.phases[cfg.key()];
  history.clear_in_flight(cfg);
  history.add(s);
  update_best_text();
}

void TuneCore::update_best_text() {
  if (const ConfigSummary* b = history.best()) best_text = fmt::format("{:.0f} {}", b->median, b->config.diff_key(ctx.baseline));
}

ConfigSummary TuneCore::remeasure(const Config& cfg, double scale, int reserve_trials, ConfigSummary s) {
  const std::string what = cfg.diff_key(ctx.baseline);
  while (wants_remeasure(s, attempt_chain(index(), cfg, scale).attempts.size(), limits) && budget.fits(1 + reserve_trials)) {
    if (const double longer = remeasure_scale(s, scale, limits); longer != scale) {
      note_longer_windows(what, s, scale, longer);
      scale = longer;
      if (!index().attempts(cfg, scale).empty()) {  // resumed: the journal has it
        s = summarize_config(attempt_chain(index(), cfg, scale), limits);
        continue;
      }
    } else if (failed_quiet_host(s)) {  // timed beside another program: wait for a quiet host first
      const bool quiet = wait_for_quiet(), fits = budget.fits(1 + reserve_trials);
      note_after_wait(what, quiet, fits);
      if (!fits) break;
    }
    const TrialRecord& rec = run_alone(plan_of(cfg, scale), TrialKind::remeasure);
    s = summarize_config(attempt_chain(index(), cfg, scale), limits);
    progress.trial(rec, s, best_text, what);
  }
  s.window_scale = scale;
  return s;
}

void TuneCore::note_longer_windows(const std::string& what, const ConfigSummary& s, double scale, double longer) {
  const bool spread = s.rel_iqr > limits.max_rel_iqr;
  progress.note(fmt::format(
      "{}: input-bound (waits for its batch {:.0f}% of the step) and its {}windows {} — timed again with windows "
      "{:g}× the run's ({:.1f} s), so each averages more batches",
      what, 100 * data_share(s.breakdown), scale > 1 ? fmt::format("{:g}× ", scale) : "",
      spread ? fmt::format("vary by {:.1f}% (limit {:.1f}%)", 100 * s.rel_iqr, 100 * limits.max_rel_iqr)
             : fmt::format("drift {:+.1f}% (limit {:.1f}%)", 100 * s.drift, 100 * limits.max_drift),
      longer, longer * opts.setup.measure.window_min_seconds));
}

void TuneCore::note_after_wait(const std::string& what, bool quiet, bool fits) {
  if (!fits)
    progress.note(
        fmt::format("{}: not timed again — the wait left {:.0f} s of the budget, too little for another trial "
                    "and what is kept back for the confirmation",
                    what, budget.left()));
  else if (!quiet) progress.note(fmt::format("{}: timed again anyway, beside the other programs", what));
}

bool TuneCore::wait_for_quiet() {
  if (limits.max_quiet_wait <= 0) return true;
  return wait_for_quiet_host(limits, std::min(limits.max_quiet_wait, 0.25 * budget.left()),
                             [&](const std::string& line) { progress.note(line); })
      .quiet;
}

void TuneCore::update_limits() {
  if (limits_settled) return;
  const HostNoise h = host_noise(index().first_attempts(), opts.setup.measure, opts.stability.calibration_trials, opts.stability);
  if (h.trials < opts.stability.calibration_trials) {
    // Until the host is measured, verdicts use the most the calibration could allow and nothing is
    // re-measured: a re-measure against a limit about to change is a trial spent for nothing.
    limits = opts.stability;
    limits.max_rel_iqr *= opts.stability.max_raise;
    limits.max_drift *= opts.stability.max_raise;
    return;
  }
  settle_limits(calibrated(opts.stability, h, opts.setup.measure.windows), &h);
}

void TuneCore::settle_limits(const StabilityOptions& final_limits, const HostNoise* h) {
  limits_settled = true;
  limits = final_limits;
  if (h)
    progress.note(fmt::format(
        "host noise over the first {} configs: median window IQR {:.1f}%, |drift| {:.1f}% → noise limit {:.1f}% (given {:.0f}%), "
        "drift limit {:.1f}% (given {:.0f}%){}",
        h->trials, 100 * h->rel_iqr, 100 * h->drift, 100 * limits.max_rel_iqr, 100 * opts.stability.max_rel_iqr,
        100 * limits.max_drift, 100 * opts.stability.max_drift,
        at_ceiling(limits, opts.stability) ? "; raised as far as allowed: this host is too noisy to rank configs a few % apart"
                                           : ""));
  std::vector<ConfigSummary> again;
  for (const auto& [key, old] : history.all()) {
    ConfigSummary s = relabelled(summarize_config(attempt_chain(index(), old.config, old.window_scale), limits), old);
    s.window_scale = old.window_scale;
    again.push_back(s);
  }
  for (const auto& s : again) history.add(s);
  update_best_text();
}

void TuneCore::remeasure_deferred() {
  for (const DeferredRemeasure& d : take_deferred())
    if (const ConfigSummary* old = history.find(d.config))
      history.add(relabelled(remeasure(d.config, d.scale, d.reserve_trials, *old), *old));
  update_best_text();
}

void TuneCore::end_search() {
  if (!limits_settled) settle_limits(opts.stability, nullptr);
  remeasure_deferred();
}

std::vector<DeferredRemeasure> TuneCore::take_deferred() {
  if (!limits_settled) return {};
  std::vector<DeferredRemeasure> out = std::exchange(deferred_, {});
  // The baseline first (every speedup is against it), then the most promising: the budget may not fit them all.
  std::vector<ConfigSummary> order;
  for (const DeferredRemeasure& d : out)
    if (const ConfigSummary* s = history.find(d.config)) order.push_back(*s);
  order_to_retime(order);
  std::stable_partition(order.begin(), order.end(), [&](const ConfigSummary& s) { return s.config == ctx.baseline; });
  const auto rank = [&](const DeferredRemeasure& d) {
    return std::find_if(order.begin(), order.end(), [&](const ConfigSummary& s) { return s.config == d.config; }) - order.begin();
  };
  std::stable_sort(out.begin(), out.end(), [&](const DeferredRemeasure& a, const DeferredRemeasure& b) { return rank(a) < rank(b); });
  return out;
}

void TuneCore::probe(const Config& c) {
  if (!memory) return;
  std::int64_t first = 0, last = 0;  // the probes' trial ids
  const std::string line = memory->probe(c, opts.setup, [&](const TrialPlan& p) -> const TrialRecord& {
    const TrialRecord& rec = run_alone(p, TrialKind::memory);
    if (first == 0) first = rec.id;
    last = rec.id;
    return rec;
  });
  if (line.empty()) return;
  progress.line(first, last, line);
  store_memory(journal, memory->report());
}

bool TuneCore::skipped_for_memory(const Config& cfg) {
  if (!memory) return false;
  probe(cfg);
  const MemoryGate::Decision d = memory->decide(cfg);
  store_memory(journal, memory->report());
  if (!d.skip) return false;
  progress.note(fmt::format("{} not run: {}", cfg.diff_key(ctx.baseline), d.estimate.reason));
  ConfigSummary s;
  s.config = cfg;
  s.status = TrialStatus::oom;
  s.reason = "not run: " + d.estimate.reason;
  s.eligible = false;
  s.batch_size = d.batch;
  s.phase = meta.phases[cfg.key()];
  history.add_not_run(s);
  return true;
}

TrialPlan TuneCore::plan_of(const Config& cfg, double scale) const {
  TrialPlan plan;
  plan.setup = opts.setup;
  plan.config = cfg;
  plan.setup.measure.window_min_seconds *= scale;
  return plan;
}

TrialRunner TuneCore::trial_runner() const {
  return TrialRunner(
      RunnerOptions(opts.worker, (out / "trials").string()).timeout_seconds(opts.trial_timeout_seconds).launcher(opts.launcher));
}

RunSummary TuneCore::summarize(bool interrupted) {
  RunMeta m = meta;
  m.started_at = journal.meta("created_at");
  m.finished_at = interrupted ? "" : utc_now_iso8601();            // "" = not finished: `autotune report` agrees
  m.elapsed_seconds = std::round(budget.elapsed() * 1000) / 1000;  // as stored, so `report` agrees
  m.budget_seconds = opts.budget_seconds;
  m.trial_seconds = std::round(budget.trial_seconds() * 1000) / 1000;  // the figure the run's own lines used
  if (memory) m.memory = memory->report();
  store_run_end(journal, m);
  return summarize_run(std::vector<TrialRecord>(trials.all().begin(), trials.all().end()), ctx, m);
}

bool TuneCore::has_rival() const {
  for (const ConfigSummary* c : confirmation_candidates(history, opts.confirm_top))
    if (c->config != ctx.baseline) return true;
  return false;
}

void TuneCore::order_to_retime(std::vector<ConfigSummary>& configs) const {
  const Objective& o = history.objective();
  std::stable_sort(configs.begin(), configs.end(), [&](const ConfigSummary& a, const ConfigSummary& b) {
    if (o.holds_user_batch() && o.at_user_batch(a) != o.at_user_batch(b)) return o.at_user_batch(a);
    return a.median > b.median;
  });
}

void TuneCore::stop_proposing(const Config& proposed) {
  meta.unexplored.push_back(proposed);
  for (const auto& c : strategy->pending(history))
    if (c != proposed) meta.unexplored.push_back(c);
}

}  // namespace autotune
