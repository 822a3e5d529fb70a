#include "tuner/summary/summarize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "knobs/error.h"
#include "knobs/knob.h"
#include "tuner/measures/budget.h"
#include "tuner/exec/trial_runner.h"
#include "tuner/exec/worker_client.h"
#include "tuner/pricing/noise_log.h"
#include "tuner/measures/journal.h"
#include "tuner/measures/record_index.h"
#include "tuner/search/stability.h"
#include "tuner/measures/statistics.h"
#include "tuner/pricing/lr_beside.h"
#include "tuner/summary/batch_ramp.h"
#include "tuner/summary/confirmation.h"
#include "tuner/summary/curves.h"
#include "tuner/summary/input.h"
#include "tuner/summary/knob_effects.h"

namespace autotune {

namespace fs = std::filesystem;

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
  summary.by_time = ctx.opts.objective == ObjectiveKind::time;
  if (ctx.opts.baseline_defaults == "pytorch-2.11") summary.frontend = ctx.opts.frontend;
  summary.baseline_sources = ctx.baseline_sources;
  if (ctx.opts.objective == ObjectiveKind::time) {
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
    ConfigSummary s = summarize_config(attempt_chain(index, m.config, m.latest_scale), limits);
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

/// Where the trials ran (docs/scale-out.md): the slots, the trials that ran beside others, the interference.
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

/// What else ran on the host while the trials were timed, from one tally over every trial (the busy-host guard's
/// limits, `limits`); the configs that stayed busy are added from their verdicts.
BusyHost busy_host_of(const std::vector<TrialRecord>& records, const StabilityOptions& limits) {
  BusyHost b;
  b.limit_share = limits.max_host_load;
  b.limit_min_cores = limits.min_busy_cores;
  for (const auto& r : records) {
    if (!r.result.host_load && !r.result.device_holders) continue;
    ++b.measured;
    if (!host_busy(r.result, limits)) continue;
    ++b.busy;
    b.confirmation_busy += r.kind == TrialKind::confirm ? 1 : 0;
    if (device_busy(r.result, limits)) {
      ++b.device_busy;
      b.max_device_others = std::max(b.max_device_others, r.result.device_holders->others);
    }
    if (r.result.host_load && r.result.host_load->other_cores > b.max_other_cores) {
      b.max_other_cores = r.result.host_load->other_cores;
      b.cpus = r.result.host_load->cpus;
    }
  }
  return b;
}

/// The stability limits in force, calibrated to the host's own noise from the first trials exactly as the live run
/// did (tune.cpp), and what the summary says about that calibration.
StabilityOptions limits_in_force(RunSummary& summary, const RecordIndex& index, const RunContext& ctx) {
  const StabilityOptions& given = ctx.opts.stability;
  const HostNoise noise = host_noise(index.first_attempts(), ctx.opts.setup.measure, given.calibration_trials, given);
  const StabilityOptions limits = calibrated(given, noise, ctx.opts.setup.measure.windows);
  summary.max_rel_iqr = limits.max_rel_iqr;
  summary.max_drift = limits.max_drift;
  summary.noise.calibrating = given.calibrate;
  summary.noise.trials_needed = given.calibration_trials;
  summary.noise.trials = noise.trials;
  summary.noise.busy_left_out = noise.busy;
  summary.noise.host_rel_iqr = noise.rel_iqr;
  summary.noise.host_drift = noise.drift;
  summary.noise.given_max_rel_iqr = given.max_rel_iqr;
  summary.noise.given_max_drift = given.max_drift;
  summary.noise.raised = limits.max_rel_iqr > given.max_rel_iqr + 1e-12 || limits.max_drift > given.max_drift + 1e-12;
  summary.noise.at_cap = at_ceiling(limits, given);
  return limits;
}

/// Every measured config as the history judged it, in the order first measured, and which of them is the baseline.
void add_configs(RunSummary& summary, const RecordIndex& index, const History& history) {
  for (const auto& m : index.measured()) {
    summary.configs.push_back(*history.find(m.config));
    if (summary.configs.back().is_baseline) summary.baseline = static_cast<int>(summary.configs.size()) - 1;
  }
  if (summary.baseline < 0 && !summary.configs.empty()) summary.baseline = 0;
}

/// What a trial takes here, and the budget a small search needs at that length: the tuner's own figure when the
/// journal has it (the one its progress lines said up front), else — older journals — the workers' wall times.
void add_trial_length(RunSummary& summary, const std::vector<TrialRecord>& records, const RunContext& ctx, const RunMeta& meta) {
  summary.trial_seconds = meta.trial_seconds;
  if (summary.trial_seconds <= 0) {
    double sum = 0;
    int n = 0;
    for (const auto& r : records)
      if (r.kind != TrialKind::noise && r.result.wall_seconds > 0) {
        sum += r.result.wall_seconds;
        ++n;
      }
    summary.trial_seconds = n ? sum / n : 0;
  }
  summary.search_budget_minutes =
      search_budget_minutes(summary.trial_seconds, confirmation_reserve(ctx.opts.confirm_top, ctx.opts.confirm_rounds));
}

/// The busy-host tally: the journal's trials timed above the guard's limit, and the configs the no-stable-config line
/// counts as "timed while other programs used the host" (one tally for both lines).
void add_busy_host(RunSummary& summary, const std::vector<TrialRecord>& records, const StabilityOptions& limits,
                   const RunMeta& meta) {
  summary.busy_host = busy_host_of(records, limits);
  for (const auto& c : summary.configs)
    if (failed_quiet_host(c)) {
      ++summary.busy_host.rejected;
      if (c.trial_ids.size() == 1) ++summary.busy_host.once;  // the budget, or the host still busy, left no room
    }
  summary.busy_host.ended_busy = meta.busy_at_end;
}

}  // namespace

RunSummary summarize_run(const std::vector<TrialRecord>& records, const RunContext& ctx, const RunMeta& meta) {
  RunSummary summary = run_header(ctx, meta, records.size());
  RecordIndex index(ctx.opts.setup.measure);
  for (const auto& r : records) index.add(r);
  summary.scale_out = scale_out_of(records, index, ctx.baseline);
  // Unexplored: what the search did not reach and nothing measured later (an ablation may have).
  for (const auto& c : meta.unexplored)
    if (!index.was_measured(c)) summary.unexplored.push_back(c);
  const StabilityOptions limits = limits_in_force(summary, index, ctx);
  const History history = measured_history(index, ctx, meta, limits);
  summary.noise_scale = history.objective().noise();
  add_configs(summary, index, history);
  summary.trials = trial_points(records, ctx.baseline);
  summary.compile_horizon_seconds = Objective::kCompileHorizonSeconds;
  add_trial_length(summary, records, ctx, meta);
  add_busy_host(summary, records, limits, meta);
  for (const auto& r : records)  // real data: the first trial that read some; the winner's replaces it below
    if (summary.data.source.empty() && !r.result.data.source.empty()) summary.data = r.result.data;
  if (summary.baseline < 0) return summary;  // nothing measured yet (an interrupted run)
  const SummaryInput in{ctx, index, history};
  add_confirmation_and_winner(summary, in);
  add_batch_ramp(summary, history.objective(), trained_lr(ctx.opts.setup, ctx.workload));
  // lr-sweeps run from this run (tuner/pricing/lr_beside.h): the rates its report prices (a), (b) and (c) at
  summary.lr_measured = read_lr_sweeps_beside(ctx.opts.out_dir, summary.user_batch,
                                              summary.answer_b.config >= 0 ? summary.answer_b.global_batch : 0,
                                              summary.answer_b.time_ratio);
  summary.lr_measured.ramp = ramp_at_measured_rates(summary.answer_c, summary.lr_measured);
  if (summary.winner < 0) return summary;
  add_speedup(summary, in);
  add_knob_effects(summary, in);
  add_curves_verdict_and_profiles(summary, in);
  return summary;
}

RunSummary load_run_summary(const std::string& dir, const std::string& noise_log) {
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
  opts.out_dir = dir;  // where a calibration by training sits (tuner/pricing/calibration.h)
  if (!noise_log.empty()) {
    const NoiseLog log = read_noise_log(noise_log);
    if (w.parameters <= 0) {  // a run tuned without a log: its model is counted now, by the worker that trained it
      try {
        const WorkloadInfo counted = describe_workload(opts.worker.empty() ? default_worker_path(opts.setup) : opts.worker, opts.setup, true);
        w.parameters = counted.parameters;
        w.parameter_tensors = counted.parameter_tensors;
      } catch (const std::exception&) {  // no worker here: check_noise_log_model says it cannot check
      }
    }
    check_noise_log_model(log, w.parameters, w.parameter_tensors,
                          fmt::format("the run in {} ({})", dir, opts.setup.model.empty() ? opts.setup.workload : opts.setup.model));
    if (opts.objective != ObjectiveKind::time)
      throw UsageError(fmt::format("--noise-log prices a changed batch by time to train; the run in {} was tuned for {} "
                                   "(tune again with --objective time)",
                                   dir, to_string(opts.objective)));
    keep_noise_log(dir, log);
    opts.noise_log = noise_log;
  } else if (!kept_noise_log(dir).empty() && opts.noise_log.empty()) {
    opts.noise_log = kept_noise_log(dir);  // given to an earlier `autotune report`
  }
  const RunContext ctx = make_context(opts, w, e);
  const RunMeta meta = read_run_meta(journal, opts.budget_seconds);
  return summarize_run(journal.trials(), ctx, meta);
}

}  // namespace autotune
