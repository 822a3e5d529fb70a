#include "tuner/tune/tune.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <ostream>

#include "knobs/error.h"
#include "knobs/model_spec.h"
#include "knobs/numbers.h"
#include "reports/reporter.h"
#include "tuner/measures/budget.h"
#include "tuner/exec/interrupt.h"
#include "tuner/exec/run_lock.h"
#include "tuner/exec/worker_client.h"
#include "tuner/measures/journal.h"
#include "tuner/memory/gate.h"
#include "tuner/pricing/noise_log.h"
#include "tuner/tune/progress.h"
#include "tuner/search/quiet_host.h"
#include "tuner/options/run_context.h"
#include "tuner/tune/run_folder.h"
#include "tuner/options/run_meta.h"
#include "tuner/tune/run_trials.h"
#include "tuner/search/stability.h"
#include "tuner/measures/statistics.h"
#include "tuner/summary/knob_effects.h"
#include "tuner/summary/summarize.h"

namespace autotune {

namespace fs = std::filesystem;

namespace {

/// The seams a caller left empty, filled with the real ones: the worker binary asked, the plan's executor.
TuneSeams with_defaults(TuneSeams s, const std::string& worker_in, bool count_parameters) {
  const std::string worker = worker_in.empty() ? default_worker_path() : worker_in;
  if (!s.describe)
    s.describe = [worker, count_parameters](const TrialSetup& setup) { return describe_workload(worker, setup, count_parameters); };
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

/// A new verdict of a config keeps what the search labelled its old one with.
ConfigSummary relabelled(ConfigSummary s, const ConfigSummary& old) {
  s.is_baseline = old.is_baseline;
  s.window_scale = old.window_scale;
  s.phase = old.phase;
  return s;
}

/// One tuning run, phase by phase: baseline, noise scale, search, verify, confirm, then — with the winner known —
/// the effect rounds (each knob's effect), trace (where the time goes) and report. Every trial is committed to the journal when
/// it finishes (tuner/tune/run_trials.h); a resumed run finds its finished trials there and does not repeat them. Where
/// trials run is the execution plan's (tuner/exec/plan.h), the memory policy the gate's (tuner/memory/gate.h).
class TuneRun {
 public:
  TuneRun(const TuneOptions& in, std::ostream& progress, TuneSeams seams)
      : seams_(with_defaults(std::move(seams), in.worker, !in.noise_log.empty() && !in.resume)),
        budget_(in.budget_seconds),
        opts_(prepared(in, [&] { return slot_gpus(seams_.environment(), in.setup); })),
        out_(opts_.out_dir),
        journal_(open_journal()),
        workload_(new_run_ctx_ ? new_run_ctx_->workload : seams_.describe(opts_.setup)),
        env_(new_run_ctx_ ? new_run_ctx_->env : seams_.environment()),
        ctx_(new_run_ctx_ ? std::move(*new_run_ctx_) : make_context(opts_, workload_, env_)),
        plan_(start_execution(opts_.exec, opts_.out_dir, slot_gpus(env_, opts_.setup))),
        trials_(journal_, seams_.executor(plan_, trial_runner()), opts_.setup.measure, budget_),
        progress_(progress, budget_),
        // Kept for the end: the confirmation runs and an fp32 reference per candidate.
        reserve_(confirmation_reserve(opts_.confirm_top, opts_.confirm_rounds)) {
    try {
      record_run_meta();
    } catch (const DiskFull& e) {
      if (!opts_.resume) forget_new_journal(opts_.out_dir, e);
      throw DiskFull(e.path(),
                     fmt::format("{}; the journal is as it was: make room, then continue with: autotune tune --resume {}",
                                 e.why(), out_.string()));
    }
    trials_.on_commit = [this](const TrialRecord& r, bool loaded) { committed(r, loaded); };
    trials_.load(journal_.trials());
    if (!trials_.all().empty())
      progress << fmt::format("resuming {}: {} trials already in the journal\n", opts_.out_dir, trials_.all().size());
    history_.set_objective(objective_for(ctx_, index()));
    limits_ = opts_.stability;
    if (!opts_.stability.calibrate) limits_settled_ = true;
    update_limits();
  }

  TuneOutcome run() {
    for (const auto& note : plan_.notes) progress_.note(note);
    try {
      baseline();
      say_what_the_budget_fits();
      noise_scale();
      search();
      verify();
      if (search_on_without_a_rival()) verify();
      confirm();
      if (retime_busy()) {
        verify();
        confirm();
      }
      RunSummary summary = summarize();
      if (measure_effects(summary)) summary = summarize();
      if (remeasure_effects(summary)) summary = summarize();
      if (trace(summary)) summary = summarize();
      return report(summary);
    } catch (const Interrupted& e) {
      // What finished is in the journal; the reports show it, marked interrupted, and --resume goes on.
      TuneOutcome r = report(summarize(/*interrupted=*/true));
      r.interrupted_by = e.signal;
      return r;
    } catch (const DiskFull& e) {
      // No reports (there is no room for them); every committed trial is in the journal, whole.
      throw DiskFull(e.path(), fmt::format("{}; {} trials are kept in {}; make room, then continue with: autotune tune "
                                           "--resume {}",
                                           e.why(), journal_.trials().size(), journal_.path(), out_.string()));
    }
  }

 private:
  /// Opens (or, for a new run, creates) the journal. A new run checks everything a usage error can come from before
  /// anything is created — the workload, its --data, the run's context (an --effective-batch no listed batch size
  /// reaches) — so a refused run leaves no folder, journal or lock behind and the same command can be run again.
  Journal open_journal() {
    std::optional<NoiseLog> log;
    if (!opts_.resume) {
      const WorkloadInfo w = seams_.describe(opts_.setup);
      data_kind_for(w, opts_.setup);
      if (!opts_.noise_log.empty()) {  // a log of another model, truncated or of one micro-batch: refused here
        log = read_noise_log(opts_.noise_log);
        check_noise_log_model(*log, w.parameters, w.parameter_tensors,
                              opts_.setup.model.empty()                       ? "workload " + w.name
                              : !task_of(opts_.setup.model).empty() ? "--task " + task_of(opts_.setup.model)
                                                                         : "--model " + opts_.setup.model);
        check_run_covers_log(*log, opts_.run_length, static_cast<double>(w.block_size));
      }
      new_run_ctx_ = make_context(opts_, w, seams_.environment());  // a new run's options are final: ctx_ is this
    }
    Journal j = open_run_journal(opts_, lock_);
    if (log) keep_noise_log(opts_.out_dir, *log);
    return j;
  }

  /// The run's identity into a new journal; what the journal holds of an earlier invocation back into this one
  /// (phases, folded proposals, memory decisions); the memory gate and the strategy.
  void record_run_meta() {
    if (opts_.resume) {
      data_kind_for(workload_, opts_.setup);  // a new run checked its data in open_journal, before its folder existed
      journal_.set_meta("options", options_to_json(opts_).dump());  // a --run-length given to this invocation
    } else {
      journal_.set_meta("options", options_to_json(opts_).dump());
      journal_.set_meta("workload", opts_.setup.workload);
      journal_.set_meta("space", opts_.space.describe());
      journal_.set_meta("env", nlohmann::json(env_).dump());
    }
    journal_.set_meta("workload_info", nlohmann::json(workload_).dump());  // `autotune report` needs it
    meta_ = read_run_meta(journal_, opts_.budget_seconds);
    meta_.unexplored.clear();  // each invocation lists what its own search did not reach
    if (!opts_.setup.memory_cap.empty() && opts_.memory_model == "on") {
      MemoryModelOptions mo;
      mo.capacity_bytes = parse_size(opts_.setup.memory_cap, "--memory-cap");
      memory_.emplace(mo, ctx_.defaults, smallest_batch(ctx_), meta_.memory);
      opts_.strategy.largest_fitting = [this](const Config& c, const std::vector<std::int64_t>& cands) -> std::int64_t {
        probe(c);
        return memory_->largest_fitting(c, cands, opts_.strategy.max_batch);
      };
    }
    opts_.strategy.slots = opts_.exec.parallel;
    strategy_ = make_strategy(opts_.strategy, ctx_.space, ctx_.baseline, ctx_.defaults);
    for (const auto& f : meta_.folded) history_.alias(f.proposed, f.runs_as);
  }

  /// A trial just committed to the journal (or loaded from it): into the memory model, whose misses are said.
  void committed(const TrialRecord& r, bool loaded) {
    if (!memory_) return;
    if (loaded) return memory_->replay(r);
    const std::vector<std::string> misses = memory_->add(r);
    for (const auto& m : misses) progress_.note("memory model miss: " + m + " (the fit now counts it)");
    if (!misses.empty()) store_memory(journal_, memory_->report());
  }

  const RecordIndex& index() const { return trials_.index(); }

  // ---- the phases

  /// 1. The baseline (PyTorch's defaults) always runs: without it there is nothing to compare against. A noisy or
  /// drifting baseline is re-measured whenever one more trial fits, without keeping the confirmation's reserve:
  /// nothing can be confirmed against a baseline that never settled (a short budget once ended a run "no stable
  /// config" after its one baseline trial drifted 7%).
  void baseline() { measure(Proposal{ctx_.baseline, 1.0, "baseline"}, TrialKind::baseline, 0); }

  /// After the baseline, the first timed trial: how many trials the rest of the budget fits at that length, of which
  /// the confirmation keeps `reserve_`; when none is left for the search, the budget that would fit a small one.
  void say_what_the_budget_fits() {
    const double per = budget_.trial_seconds();
    if (per <= 0) return;
    const int fits = static_cast<int>(budget_.left() / per);
    const int search = fits - reserve_;
    if (search >= 1) {
      progress_.note(fmt::format("one trial takes about {:.3g} s: the budget fits about {} more, {} for the search and {} kept "
                                 "for the confirmation and the fp32 references; the effect rounds (each round: the winner, the "
                                 "baseline and one run per knob the winner changes) follow only if the search leaves room — "
                                 "else each knob's effect comes from the search runs, and the report says so",
                                 per, fits, search, reserve_));
      return;
    }
    const double needed = search_budget_minutes(per, reserve_);  // the baseline, a few search trials and the reserve
    progress_.note(fmt::format("the budget fits no search: one trial takes about {:.3g} s and the {:.0f} s left are what the "
                               "confirmation keeps ({} trials); the answer will be PyTorch's defaults unless the budget grows — "
                               "a search of a few configs needs about --budget {:.0f}m",
                               per, std::max(0.0, budget_.left()), reserve_, needed));
  }

  /// 1b. The gradient noise scale at the user's batch (the time objective on real data): one untimed
  /// trial (tuner/options/run_context.h, noise_plan) whose estimate prices every config at another global batch
  /// from here on (tuner/search/ranking.h). About 15% of the budget: from random weights an eighth of it trains first, then
  /// three windows of doubling length record the noise scale along the run (tuner/pricing/noise_over_run.h).
  void noise_scale() {
    if (opts_.objective != ObjectiveKind::time) return;
    if (!ctx_.time_unrankable.empty()) {
      progress_.note(fmt::format("time to train cannot rank a changed batch: {}. Answer (a), the fastest config at your batch "
                                 "of {}, is the pick; other batches are listed by samples/s",
                                 ctx_.time_unrankable, ctx_.user_batch));
      return;
    }
    if (!index().noise_trials().empty()) return;  // resumed: measured already
    if (!kept_noise_log(opts_.out_dir).empty()) return noise_from_log();
    if (opts_.noise_scale > 0) {
      progress_.note(fmt::format("noise scale given: B̄ = {} (--noise-scale); no noise-scale trial", opts_.noise_scale));
      return;
    }
    // No fits() check: the trial's length is its own share of the budget (noise_plan), not a search trial's.
    const TrialRecord& rec = run_alone(noise_plan(ctx_, 0.15 * opts_.budget_seconds), TrialKind::noise);
    history_.set_objective(objective_for(ctx_, index()));
    const NoiseScaleSummary& n = history_.objective().noise();
    if (!n.run_length_error.empty()) throw UsageError(n.run_length_error);
    if (!n.measured) {
      progress_.line(rec.id, fmt::format("noise     {}", rec.result.status == TrialStatus::ok ? n.why_not : rec.result.message));
      return;
    }
    if (n.over_run) {
      std::string walk;
      for (const auto& w : n.windows) walk += (walk.empty() ? "" : " → ") + with_commas(w.value);
      progress_.line(rec.id, fmt::format("noise     B_simple {} over {} windows of {} × {} ({:.0f} s burn-in, {:.0f} s measured): ∝ samples^{:.2f} "
                                 "[{:.2f}, {:.2f}]; over your run ({}) B̄ = {} [{}, {}]",
                                 walk, n.windows.size(), n.step_batch / n.micro_batch, n.micro_batch, n.burn_in_seconds, n.seconds,
                                 n.growth.exponent, n.growth.lo, n.growth.hi, n.run_basis, with_commas(n.value), with_commas(n.lo),
                                 with_commas(n.hi)));
      return;
    }
    progress_.line(rec.id, fmt::format("noise     B_simple {} [{}, {}] (95%) from {} steps of {} × {} ({}; {:.0f} s) — {}", with_commas(n.value),
                               with_commas(n.lo), n.bounded() ? with_commas(n.hi) : "∞", n.steps, n.step_batch / n.micro_batch,
                               n.micro_batch, n.stopped, n.seconds,
                               n.early ? "early training from random weights: it grows as the loss falls" : "from your weights"));
  }

  /// 1b, from the user's own loop: the noise log kept beside the run prices a changed batch (priced again now that the
  /// baseline has read the data's size); no noise-scale trial runs.
  void noise_from_log() {
    history_.set_objective(objective_for(ctx_, index()));
    const NoiseScaleSummary& n = history_.objective().noise();
    if (!n.run_length_error.empty()) throw UsageError(n.run_length_error);
    if (!n.measured) {
      progress_.note(fmt::format("noise scale: {}", n.why_not));
      return;
    }
    progress_.note(fmt::format("noise scale from your loop's log {}: B_simple {} [{}, {}] over the log{}; no noise-scale trial", n.log,
                               with_commas(n.over_run ? n.trial_value : n.value), with_commas(n.over_run ? n.trial_lo : n.lo),
                               with_commas(n.over_run ? n.trial_hi : n.hi),
                               n.over_run ? fmt::format(", {} windows ∝ samples^{:.2f} [{:.2f}, {:.2f}]; over your run ({}) B̄ = {} [{}, {}]",
                                                        n.windows.size(), n.growth.exponent, n.growth.lo, n.growth.hi, n.run_basis,
                                                        with_commas(n.value), with_commas(n.lo), with_commas(n.hi))
                                          : ""));
  }

  /// 2. The strategy, while the budget (minus the confirmation's share) allows; what it did not reach
  /// is recorded as unexplored.
  void search() {
    if (trials_.slots() > 1) return parallel_search();
    while (auto p = strategy_->next(history_)) {
      const Config runs_as = fold(*p);
      if (index().attempts(runs_as, p->window_scale).empty() && !budget_.fits(1 + reserve_)) {
        stop_proposing(p->config);
        break;
      }
      measure(*p, TrialKind::search, reserve_);
    }
    // Too few configs to measure the host: the given limits, and the re-measures they call for.
    if (!limits_settled_) settle_limits(opts_.stability, nullptr);
    remeasure_deferred();
  }

  /// 2b. The search stopped to keep the confirmation's reserve, yet nothing but the baseline is stable: nothing would be
  /// confirmed, and the reserve would go unspent while configs stayed noisy or unexplored (a run once ended with 83 s
  /// of 150 left, a 1.4× config noisy and never timed again, five configs "not explored (budget)"). Keeping back only
  /// what confirming one newcomer needs, it re-times the noisy configs (in retime_busy's order), then measures what the
  /// search left unexplored. True when it ran a trial.
  bool search_on_without_a_rival() {
    if (trials_.slots() > 1 || stop_signal() || has_rival()) return false;
    const int keep = confirmation_reserve(1, opts_.confirm_rounds);
    if (!budget_.fits(1 + keep)) return false;
    bool ran = false;
    std::vector<ConfigSummary> noisy;
    for (const auto& [key, c] : history_.all())
      if (c.config != ctx_.baseline && wants_remeasure(c, index().attempts(c.config, c.window_scale).size(), limits_))
        noisy.push_back(c);
    order_to_retime(noisy);
    for (const ConfigSummary& c : noisy) {
      if (has_rival() || !budget_.fits(1 + keep)) return ran;
      const auto before = index().attempts(c.config, c.window_scale).size();
      history_.add(relabelled(remeasure(c.config, c.window_scale, keep, c), c));
      ran |= index().attempts(c.config, c.window_scale).size() > before;
    }
    std::vector<Config> left = meta_.unexplored;
    for (const Config& c : left) {
      if (has_rival() || stop_signal() || !budget_.fits(1 + keep)) break;
      meta_.unexplored.erase(std::find(meta_.unexplored.begin(), meta_.unexplored.end(), c));
      measure(Proposal{c, 1.0, "after the search: nothing else stable"}, TrialKind::search, keep);
      ran = true;
    }
    return ran;
  }

  /// Configs to time again, most promising first: at the user's batch first where the objective holds it (answer (a) is
  /// about them), then the fastest.
  void order_to_retime(std::vector<ConfigSummary>& configs) const {
    const Objective& o = history_.objective();
    std::stable_sort(configs.begin(), configs.end(), [&](const ConfigSummary& a, const ConfigSummary& b) {
      if (o.holds_user_batch() && o.at_user_batch(a) != o.at_user_batch(b)) return o.at_user_batch(a);
      return a.median > b.median;
    });
  }

  /// A config other than the baseline that the confirmation would run.
  bool has_rival() const {
    for (const ConfigSummary* c : confirmation_candidates(history_, opts_.confirm_top))
      if (c->config != ctx_.baseline) return true;
    return false;
  }

  /// The budget ends the search before `proposed`: it and what the strategy still meant to measure are unexplored.
  void stop_proposing(const Config& proposed) {
    meta_.unexplored.push_back(proposed);
    for (const auto& c : strategy_->pending(history_))
      if (c != proposed) meta_.unexplored.push_back(c);
  }

  /// What the parallel search measures: a config at a window scale.
  struct Flying {
    Config config;
    double scale = 1;
  };

  /// 2, in parallel slots: the strategy proposes while a slot is free (configs in flight are placeholders
  /// in the History; a strategy that needs one of their results waits), each finished trial is judged and
  /// journaled by this thread alone, a noisy one re-measured in the next free slot. No barrier per round.
  void parallel_search() {
    interference();
    parallel_ = true;
    std::map<int, Flying> flying;  // seq → what it measures
    proposing_ = true;
    held_.reset();
    while (true) {
      fill_free_slots(flying);
      if (trials_.in_flight() == 0) {
        if (const int sig = stop_signal()) throw Interrupted(sig);
        if (held_ || !parallel_remeasures_.empty()) continue;  // nothing beside it now: it starts (after its probes)
        break;                                                 // nothing to propose, nothing to re-measure
      }
      int seq = 0;
      const TrialRecord& rec = trials_.wait_any(&seq);
      const Flying fl = flying.at(seq);
      flying.erase(seq);
      if (alone_seq_ == seq) alone_seq_.reset();
      judge_in_flight(rec, fl);
    }
    // Nothing is in flight now: a re-measure the limits still defer runs alone, as the serial search's do.
    parallel_ = false;
    if (!limits_settled_) settle_limits(opts_.stability, nullptr);
    remeasure_deferred();
  }

  /// Starts trials while a slot is free: queued re-measures first, then the strategy's proposals. A proposal that
  /// must run alone (a data-parallel config, or one whose family needs memory probes) is held until nothing is in
  /// flight.
  void fill_free_slots(std::map<int, Flying>& flying) {
    const auto launch = [&](const Flying& f, TrialKind kind) {
      history_.mark_in_flight(f.config, f.scale);  // its verdict is not final: a strategy that reads it waits
      const int seq = start(plan_of(f.config, f.scale), kind);
      flying[seq] = f;
      return seq;
    };
    while (trials_.has_free_slot() && !stop_signal() && !alone_seq_) {
      if (!parallel_remeasures_.empty()) {
        // A config timed beside another program is timed again as the serial search times it: alone, once the others
        // end, after a wait for a quiet host (its neighbours in the slots would otherwise be the load it waits out).
        const Flying f = parallel_remeasures_.front();
        const bool busy = failed_quiet_host(summarize_config(index().attempts(f.config, f.scale), limits_));
        if ((whole_host(f.config) || busy) && trials_.in_flight() > 0) break;  // alone, once the others end
        if (busy) {
          const bool quiet = wait_for_quiet(), fits = budget_.fits(reserve_, 1, trials_.slots());
          note_after_wait(f.config.diff_key(ctx_.baseline), quiet, fits);
          if (!fits) {  // the wait took what the re-measure needed
            parallel_remeasures_.pop_front();
            add_verdict(summarize_config(index().attempts(f.config, f.scale), limits_), f.config, f.scale);
            continue;
          }
        }
        parallel_remeasures_.pop_front();
        const int seq = launch(f, TrialKind::remeasure);
        if (busy) alone_seq_ = seq;  // nothing starts beside it until it ends
        continue;
      }
      if (!proposing_) break;
      std::optional<Proposal> p = held_ ? std::exchange(held_, std::nullopt) : strategy_->next(history_);
      if (!p || p->wait) {
        if (trials_.in_flight() == 0) proposing_ = false;  // else: ask again when a result is in
        break;
      }
      const Config cfg = fold(*p);
      if (const ConfigSummary* known = history_.find(cfg); known && known->in_flight) continue;  // folded into one in flight
      if ((whole_host(cfg) || (memory_ && memory_->needs_probes(cfg))) && trials_.in_flight() > 0) {
        held_ = p;  // the probes measure memory, and a data-parallel trial runs, with nothing beside them
        break;
      }
      record_phase(cfg, p->phase, p->phase);
      if (!index().attempts(cfg, p->window_scale).empty()) {  // resumed: the journal has it
        add_verdict(summarize_config(index().attempts(cfg, p->window_scale), limits_), cfg, p->window_scale);
        continue;
      }
      if (skipped_for_memory(cfg)) continue;
      if (!budget_.fits(reserve_, trials_.in_flight() + 1, trials_.slots())) {
        stop_proposing(p->config);
        proposing_ = false;
        break;
      }
      launch(Flying{cfg, p->window_scale}, TrialKind::search);
    }
  }

  /// A trial of the parallel search has ended: its config is judged (a noisy one queued to be re-measured, staying in
  /// flight so that the strategy waits for its verdict).
  void judge_in_flight(const TrialRecord& rec, const Flying& fl) {
    update_limits();
    remeasure_deferred();  // in slots: queued beside the others (parallel_remeasures_)
    const auto& attempts = index().attempts(fl.config, fl.scale);
    const ConfigSummary s = summarize_config(attempts, limits_);
    progress_.trial(rec, s, best_text_, fl.config.diff_key(ctx_.baseline) + slot_tag(rec));
    if (limits_settled_ && wants_remeasure(s, attempts.size(), limits_) &&
        budget_.fits(reserve_, trials_.in_flight() + 1, trials_.slots())) {
      parallel_remeasures_.push_back(fl);
      return;
    }
    if (!limits_settled_ && wants_remeasure(s, attempts.size(), opts_.stability)) deferred_.push_back({fl.config, fl.scale, reserve_});
    add_verdict(summarize_config(attempts, limits_), fl.config, fl.scale);
  }

  /// A parallel run measures what a slot costs its neighbours: the baseline in every slot at once,
  /// against the baseline's own trial, which ran alone (slot 0). The ratio goes to the report.
  void interference() {
    if (!index().interference().empty() || stop_signal()) return;
    const auto& base = index().attempts(ctx_.baseline, 1.0);
    if (base.empty() || base.front()->result.status != TrialStatus::ok) return;
    for (int i = 0; i < trials_.slots(); ++i) start(plan_of(ctx_.baseline, 1.0), TrialKind::interference);
    std::vector<double> beside;
    std::int64_t first = 0, last = 0;  // the copies' trial ids
    while (trials_.in_flight() > 0) {
      const TrialRecord& rec = trials_.wait_any();
      first = first == 0 ? rec.id : std::min(first, rec.id);
      last = std::max(last, rec.id);
      if (rec.result.status == TrialStatus::ok) beside.push_back(median(rec.result.throughputs()));
    }
    const double alone = median(base.front()->result.throughputs());
    if (beside.empty() || alone <= 0) {
      progress_.line(first, last, "interference: no copy of the baseline finished; not measured");
      return;
    }
    progress_.line(first, last, fmt::format("interference: the baseline alone {} samples/s; in each of {} slots at once {} (median) = {:.2f}× alone",
                               with_commas(alone), trials_.slots(), with_commas(median(beside)), median(beside) / alone));
  }

  /// "  [slot 1, beside 2]" for a progress line of a parallel run.
  std::string slot_tag(const TrialRecord& rec) const {
    if (!rec.result.placement || trials_.slots() <= 1) return "";
    if (rec.result.placement->slot < 0) return "  [whole host, alone]";
    return fmt::format("  [slot {}{}]", rec.result.placement->slot,
                       rec.result.placement->alone() ? ", alone" : fmt::format(", beside {}", rec.result.placement->neighbours.size()));
  }

  /// 3. Loss trajectory vs the fp32 reference (same batch, seed, data) for the leading candidates that
  /// change numerics; a config that drifts — or whose reference the budget cannot fit — is not
  /// eligible. summarize_run() repeats this from the journal with the same function.
  void verify() {
    verify_leaders(
        history_, opts_.confirm_top, opts_.stability.loss_tolerance,
        [&](const Config& twin) -> const TrialRecord* {
          if (const auto& refs = index().references(twin); !refs.empty()) return refs.back();
          // The reference spends its own share of the reserve: only the confirmation's must stay.
          if (!budget_.fits(1 + confirm_reserve())) return nullptr;
          const TrialRecord& rr = run_alone(plan_of(twin, 1.0), TrialKind::reference);
          progress_.line(rr.id, fmt::format("reference {} (fp32 twin) for the loss-trajectory check", twin.diff_key(ctx_.baseline)));
          return &rr;
        },
        [&](const ConfigSummary& s) { return index().by_id(s.measured_trial); });
  }

  /// 3b. A busy spell that ended with budget left: each config still rejected as busy (its re-measures spent while other
  /// programs ran) is timed once more, the most promising first, once the host is quiet — in this invocation and in
  /// each `--resume` of it — so a run does not end with budget left and nothing timed at the user's batch. Returns
  /// whether any ran (the leaders are then verified and confirmed again).
  bool retime_busy() {
    std::vector<ConfigSummary> busy;
    for (const auto& [key, c] : history_.all())
      if (failed_quiet_host(c) && c.phase != "ablation" && !wants_remeasure(c, index().attempts(c.config, c.window_scale).size(), limits_))
        busy.push_back(c);
    order_to_retime(busy);
    bool ran = false;
    for (const ConfigSummary& c : busy) {
      if (stop_signal() || !budget_.fits(1 + confirm_reserve())) break;
      if (!wait_for_quiet()) {  // still busy: the next attempt would be busy too
        progress_.note("not timed again: the host is still busy, and an attempt now would be busy too");
        meta_.busy_at_end = true;  // the reports then name the host, not the budget, as what left them at one trial
        break;
      }
      progress_.note(fmt::format("{}: timed again now that the host is quiet (every earlier attempt was busy)",
                                 c.config.diff_key(ctx_.baseline)));
      const TrialRecord& rec = run_alone(plan_of(c.config, c.window_scale), TrialKind::remeasure);
      const ConfigSummary s = summarize_config(index().attempts(c.config, c.window_scale), limits_);
      progress_.trial(rec, s, best_text_, c.config.diff_key(ctx_.baseline));
      add_verdict(s, c.config, c.window_scale);
      ran = true;
    }
    return ran;
  }

  /// 4. The top candidates and the baseline again in fresh processes, interleaved (A B base, base B A,
  /// …) so drift hits all alike; the winner is chosen on these runs.
  void confirm() {
    // Nothing but the baseline stable: nothing to compare it with, and no budget to spend on it (a short budget whose
    // one trial overran it once ran the baseline again, against itself, for 144 s more).
    if (!has_rival()) return;
    std::vector<Config> runners;
    for (const ConfigSummary* c : confirmation_candidates(history_, opts_.confirm_top)) runners.push_back(c->config);
    if (std::find(runners.begin(), runners.end(), ctx_.baseline) == runners.end()) runners.push_back(ctx_.baseline);
    for (int round = 0; round < opts_.confirm_rounds; ++round) {
      std::vector<Config> seq = runners;
      if (round % 2) std::reverse(seq.begin(), seq.end());
      for (const Config& c : seq) {
        if (static_cast<int>(index().confirms(c).size()) > round) continue;  // resumed
        if (round > 0 && !budget_.fits(1)) break;
        const TrialRecord& rec = run_alone(plan_of(c, 1.0), TrialKind::confirm);
        const TrialResult& r = rec.result;
        progress_.line(rec.id, fmt::format("confirm   {} round {}: {}", c.diff_key(ctx_.baseline), round + 1,
                                   r.status == TrialStatus::ok ? with_commas(median(r.throughputs())) + " samples/s"
                                                               : to_string(r.status) + ": " + r.message));
      }
    }
  }

  /// 5. Why it wins: the effect rounds (tuner/summary/knob_effects.h) — the winner, the winner with each changed knob
  /// put back to its baseline value, and the baseline, one fresh process each per round, the order reversed every
  /// other round, as many rounds as the confirmation; whole rounds only, budget permitting. An effect beyond what
  /// its knob's mechanism allows here is then measured again: two more runs of it and of the winner, interleaved.
  bool measure_effects(const RunSummary& summary) {
    std::vector<Config> round;  // as each runs here
    for (const Config& c : effect_round_configs(ctx_, summary))
      if (const Config cfg = fold(Proposal{c, 1.0, "effect"}); std::find(round.begin(), round.end(), cfg) == round.end())
        round.push_back(cfg);
    if (round.size() < 2) return false;
    bool ran = false;
    for (int r = 0; r < std::max(1, opts_.confirm_rounds); ++r) {
      std::vector<Config> seq = round;
      if (r % 2) std::reverse(seq.begin(), seq.end());
      const auto left = std::count_if(seq.begin(), seq.end(), [&](const Config& c) { return index().effects(c).size() <= size_t(r); });
      if (left == 0) continue;  // resumed
      if (!budget_.fits(static_cast<int>(left))) break;
      for (const Config& c : seq)
        if (index().effects(c).size() <= size_t(r)) effect_run(c, fmt::format("round {}", r + 1));
      ran = true;
    }
    return ran;
  }

  /// Effects beyond their knob's bound (tuner/summary/knob_effects.h, effects_to_remeasure) measured again: the
  /// reverted config and the winner twice each, interleaved (R W W R), budget permitting.
  bool remeasure_effects(const RunSummary& summary) {
    bool ran = false;
    for (const Config& c : effects_to_remeasure(summary)) {
      if (!budget_.fits(4)) break;
      const Config& w = summary.configs[summary.winner].config;
      progress_.note(fmt::format("{}: its effect lies beyond what the knob's mechanism allows here; measuring it again",
                                 c.diff_key(w)));
      for (const Config* x : {&c, &w, &w, &c}) effect_run(*x, "again");
      ran = true;
    }
    return ran;
  }

  /// One effect-round run of `cfg` (as it runs here), with its progress line.
  void effect_run(const Config& cfg, const std::string& label) {
    const TrialRecord& rec = run_alone(plan_of(cfg, 1.0), TrialKind::effect);
    const TrialResult& r = rec.result;
    progress_.line(rec.id, fmt::format("effect    {} {}: {}", cfg.diff_key(ctx_.baseline), label,
                               r.status == TrialStatus::ok ? with_commas(median(r.throughputs())) + " samples/s"
                                                           : to_string(r.status) + ": " + r.message));
  }

  /// 6. Where the time goes: a short traced trial of the winner and of the baseline (CUPTI on a GPU,
  /// host phase ranges otherwise; the Python worker's through torch.profiler), budget permitting;
  /// traces/<label>.json opens in Perfetto / HTA.
  bool trace(const RunSummary& summary) {
    if (summary.winner < 0) return false;
    std::vector<std::pair<std::string, Config>> to_trace = {{"winner", summary.configs[summary.winner].config}};
    if (summary.winner != summary.baseline) to_trace.push_back({"baseline", ctx_.baseline});
    bool traced = false;
    for (const auto& [label, c] : to_trace) {
      const auto& traces = index().traces();
      const Config& cfg = c;  // a structured binding cannot be captured before C++20 (clang refuses it)
      if (std::any_of(traces.begin(), traces.end(), [&](const TrialRecord* r) { return r->plan.config == cfg; }) ||
          !budget_.fits(1))
        continue;
      fs::create_directories(out_ / "traces");
      TrialPlan plan = plan_of(c, 1.0);
      plan.trace = fs::absolute(out_ / "traces" / (label + ".json")).string();
      const TrialRecord& rec = run_alone(plan, TrialKind::trace);
      const TrialResult& r = rec.result;
      const std::string written =  // ranks > 1: a folder with a file per rank (knobs/protocol.h, rank_trace_path)
          r.profile && !r.profile->trace.empty() ? fs::relative(r.profile->trace, fs::absolute(out_)).string() : label + ".json";
      progress_.line(rec.id, fmt::format("trace     {} {}: {}", label, c.diff_key(ctx_.baseline),
                                 r.status == TrialStatus::ok ? written : to_string(r.status) + ": " + r.message));
      traced = true;
    }
    return traced;
  }

  /// 7. Every output, from the journal's records alone (as `autotune report` would write them).
  TuneOutcome report(const RunSummary& summary) {
    TuneOutcome result;
    result.summary = summary;
    result.out_dir = opts_.out_dir;
    result.journal_path = journal_.path();
    result.best_json_path = (out_ / "best.json").string();
    result.report_md_path = (out_ / "report.md").string();
    write_reports(summary, opts_.out_dir);
    return result;
  }

  // ---- configs and their verdicts

  /// The config `p` really runs as (tuner/options/run_context.h, runs_as): a proposal with values that would fall back is
  /// folded into that config — measured once, and explained in the report.
  Config fold(const Proposal& p) {
    RunsAs r = runs_as(ctx_, p.config);
    const bool known =
        std::any_of(meta_.folded.begin(), meta_.folded.end(), [&](const FoldedConfig& f) { return f.proposed == p.config; });
    if (r.config == p.config || known) return r.config;
    meta_.folded.push_back({p.config, r.config, r.reasons});
    history_.alias(p.config, r.config);
    store_folded(journal_, meta_.folded);
    progress_.note(fmt::format("{} runs as {}: {}", p.config.diff_key(ctx_.baseline), r.config.diff_key(ctx_.baseline),
                               r.reasons.empty() ? "" : r.reasons.front()));
    return r.config;
  }

  /// Measures a proposal (re-measuring a noisy one in fresh processes) unless the journal has it.
  void measure(const Proposal& proposal, TrialKind kind, int reserve_trials) {
    const Config cfg = fold(proposal);
    const double scale = proposal.window_scale;
    const std::string what = cfg.diff_key(ctx_.baseline);
    record_phase(cfg, proposal.phase, kind == TrialKind::baseline ? "baseline" : proposal.phase);
    if (index().attempts(cfg, scale).empty() && kind == TrialKind::search && skipped_for_memory(cfg)) return;
    if (index().attempts(cfg, scale).empty()) {
      const TrialRecord& rec = run_alone(plan_of(cfg, scale), kind);
      update_limits();
      progress_.trial(rec, summarize_config(index().attempts(cfg, scale), limits_), best_text_, what);
      remeasure_deferred();  // after this trial's own line: the console prints trials in the order they ran
    }
    ConfigSummary s = summarize_config(index().attempts(cfg, scale), limits_);
    if (limits_settled_) {
      s = remeasure(cfg, scale, reserve_trials, s);
    } else if (wants_remeasure(s, index().attempts(cfg, scale).size(), opts_.stability)) {
      deferred_.push_back({cfg, scale, reserve_trials});  // judged again (and re-measured) once the limits are known
    }
    add_verdict(s, cfg, scale);
  }

  /// The search phase that proposed `cfg`, for the report (journal meta "phases"): `label` when the config is
  /// new or was last proposed by another phase than `proposed_by`.
  void record_phase(const Config& cfg, const std::string& proposed_by, const std::string& label) {
    if (history_.find(cfg) && meta_.phases[cfg.key()] == proposed_by) return;
    meta_.phases[cfg.key()] = label;
    store_phases(journal_, meta_.phases);
  }

  /// `s`, the verdict on `cfg` at window scale `scale`, labelled and entered in the History (replacing its
  /// in-flight placeholder, if any).
  void add_verdict(ConfigSummary s, const Config& cfg, double scale) {
    s.is_baseline = cfg == ctx_.baseline;
    s.window_scale = scale;
    s.phase = meta_.phases[cfg.key()];
    history_.clear_in_flight(cfg);
    history_.add(s);
    update_best_text();
  }

  /// The "best so far" of the progress lines.
  void update_best_text() {
    if (const ConfigSummary* b = history_.best())
      best_text_ = fmt::format("{:.0f} {}", b->median, b->config.diff_key(ctx_.baseline));
  }

  /// A noisy or drifting config again in fresh processes, up to max_remeasure times, budget permitting; one
  /// timed on a busy host after waiting for the host to be quiet.
  ConfigSummary remeasure(const Config& cfg, double scale, int reserve_trials, ConfigSummary s) {
    const std::string what = cfg.diff_key(ctx_.baseline);
    while (wants_remeasure(s, index().attempts(cfg, scale).size(), limits_) && budget_.fits(1 + reserve_trials)) {
      if (failed_quiet_host(s)) {  // timed beside another program: wait for a quiet host first
        const bool quiet = wait_for_quiet(), fits = budget_.fits(1 + reserve_trials);
        note_after_wait(what, quiet, fits);
        if (!fits) break;
      }
      const TrialRecord& rec = run_alone(plan_of(cfg, scale), TrialKind::remeasure);
      s = summarize_config(index().attempts(cfg, scale), limits_);
      progress_.trial(rec, s, best_text_, what);
    }
    return s;
  }

  /// After a wait for a quiet host, what the caller does with `what`, said by it (the wait says only what it saw): not
  /// timed again when the wait left too little budget; timed again anyway when the host stayed busy; nothing to add
  /// when it is quiet.
  void note_after_wait(const std::string& what, bool quiet, bool fits) {
    if (!fits)
      progress_.note(fmt::format("{}: not timed again — the wait left {:.0f} s of the budget, too little for another trial "
                                 "and what is kept back for the confirmation",
                                 what, budget_.left()));
    else if (!quiet)
      progress_.note(fmt::format("{}: timed again anyway, beside the other programs", what));
  }

  /// Before a config timed on a busy host is timed again: wait for the host to be quiet, a bounded share of what is left.
  /// False when it is still busy at the end of the wait; true when quiet, or when no wait is asked ($AUTOTUNE_QUIET_WAIT=0).
  bool wait_for_quiet() {
    if (limits_.max_quiet_wait <= 0) return true;
    return wait_for_quiet_host(limits_, std::min(limits_.max_quiet_wait, 0.25 * budget_.left()),
                               [&](const std::string& line) { progress_.note(line); })
        .quiet;
  }

  /// The noise and drift limits calibrated to this host (tuner/search/stability.h) once the first configs have
  /// measured it; the verdicts given so far are judged again under them. summarize_run() derives the
  /// same limits from the journal, so the reports and a resumed run agree with this run.
  void update_limits() {
    if (limits_settled_) return;
    const HostNoise h = host_noise(index().first_attempts(), opts_.setup.measure, opts_.stability.calibration_trials, opts_.stability);
    if (h.trials < opts_.stability.calibration_trials) {
      // Until the host is measured, verdicts use the most the calibration could allow and nothing is
      // re-measured: a re-measure against a limit about to change is a trial spent for nothing.
      limits_ = opts_.stability;
      limits_.max_rel_iqr *= opts_.stability.max_raise;
      limits_.max_drift *= opts_.stability.max_raise;
      return;
    }
    settle_limits(calibrated(opts_.stability, h, opts_.setup.measure.windows), &h);
  }

  /// The limits are final: every verdict so far is judged again under them; the configs whose re-measures were
  /// deferred get them at the caller's remeasure_deferred(), after the caller has said what it has to say.
  void settle_limits(const StabilityOptions& final_limits, const HostNoise* h) {
    limits_settled_ = true;
    limits_ = final_limits;
    if (h)
      progress_.note(fmt::format(
          "host noise over the first {} configs: median window IQR {:.1f}%, |drift| {:.1f}% → noise limit {:.1f}% (given {:.0f}%), "
          "drift limit {:.1f}% (given {:.0f}%){}",
          h->trials, 100 * h->rel_iqr, 100 * h->drift, 100 * limits_.max_rel_iqr, 100 * opts_.stability.max_rel_iqr,
          100 * limits_.max_drift, 100 * opts_.stability.max_drift,
          at_ceiling(limits_, opts_.stability)
              ? "; raised as far as allowed: this host is too noisy to rank configs a few % apart"
              : ""));
    std::vector<ConfigSummary> again;
    for (const auto& [key, old] : history_.all())
      again.push_back(relabelled(summarize_config(index().attempts(old.config, old.window_scale), limits_), old));
    for (const auto& s : again) history_.add(s);
    update_best_text();
  }

  /// The configs measured before the limits settled that need re-measures under them get them now.
  void remeasure_deferred() {
    if (!limits_settled_ || deferred_.empty()) return;
    const auto deferred = std::move(deferred_);
    deferred_.clear();
    for (const auto& d : deferred) {
      if (parallel_) {  // in slots: the parallel search re-measures them as slots free up, beside the others
        parallel_remeasures_.push_back({d.config, d.scale});
      } else if (const ConfigSummary* old = history_.find(d.config)) {
        history_.add(relabelled(remeasure(d.config, d.scale, d.reserve_trials, *old), *old));
      }
    }
    update_best_text();
  }

  // ---- the memory gate (--memory-cap; tuner/memory/gate.h, docs/memory.md)

  /// The probes of `c`'s family, when the gate wants them (each probe a trial alone, journaled).
  void probe(const Config& c) {
    if (!memory_) return;
    std::int64_t first = 0, last = 0;  // the probes' trial ids
    const std::string line = memory_->probe(c, opts_.setup, [&](const TrialPlan& p) -> const TrialRecord& {
      const TrialRecord& rec = run_alone(p, TrialKind::memory);
      if (first == 0) first = rec.id;
      last = rec.id;
      return rec;
    });
    if (line.empty()) return;
    progress_.line(first, last, line);
    store_memory(journal_, memory_->report());
  }

  /// Whether the gate rules `cfg` out before it runs; a skipped config enters the history as out of memory, not
  /// run (the report's memory column says why).
  bool skipped_for_memory(const Config& cfg) {
    if (!memory_) return false;
    probe(cfg);
    const MemoryGate::Decision d = memory_->decide(cfg);
    store_memory(journal_, memory_->report());
    if (!d.skip) return false;
    progress_.note(fmt::format("{} not run: {}", cfg.diff_key(ctx_.baseline), d.estimate.reason));
    ConfigSummary s;
    s.config = cfg;
    s.status = TrialStatus::oom;
    s.reason = "not run: " + d.estimate.reason;
    s.eligible = false;
    s.batch_size = d.batch;
    s.phase = meta_.phases[cfg.key()];
    history_.add_not_run(s);
    return true;
  }

  // ---- trials

  /// `cfg` as a trial of this run, its windows `scale` times the run's.
  TrialPlan plan_of(const Config& cfg, double scale) const {
    TrialPlan plan;
    plan.setup = opts_.setup;
    plan.config = cfg;
    plan.setup.measure.window_min_seconds *= scale;
    return plan;
  }

  /// Starts a trial in a free slot (a data-parallel one of local slots: on the whole host); its folder number.
  int start(const TrialPlan& plan, TrialKind kind) { return trials_.start(plan, kind, whole_host(plan.config)); }

  /// One trial with nothing else in flight (slot 0 of a parallel run): the serial phases.
  const TrialRecord& run_alone(const TrialPlan& plan, TrialKind kind) {
    return trials_.run_alone(plan, kind, whole_host(plan.config));
  }

  bool whole_host(const Config& c) const { return plan_.whole_host(std::stoi(c.get("ranks", "1"))); }

  /// The confirmation's first round: each candidate and the baseline once (later rounds run only while
  /// the budget allows, see confirm()). A candidate without its fp32 reference cannot win at all, so the
  /// references come before the confirmation's second round.
  int confirm_reserve() const { return opts_.confirm_top + 1; }

  TrialRunner trial_runner() const {
    return TrialRunner(RunnerOptions(opts_.worker, (out_ / "trials").string())
                           .timeout_seconds(opts_.trial_timeout_seconds)
                           .launcher(opts_.launcher));
  }

  RunSummary summarize(bool interrupted = false) {
    RunMeta meta = meta_;
    meta.started_at = journal_.meta("created_at");
    meta.finished_at = interrupted ? "" : utc_now_iso8601();              // "" = not finished: `autotune report` agrees
    meta.elapsed_seconds = std::round(budget_.elapsed() * 1000) / 1000;  // as stored, so `report` agrees
    meta.budget_seconds = opts_.budget_seconds;
    meta.trial_seconds = std::round(budget_.trial_seconds() * 1000) / 1000;  // the figure the run's own lines used
    if (memory_) meta.memory = memory_->report();
    store_run_end(journal_, meta);
    return summarize_run(std::vector<TrialRecord>(trials_.all().begin(), trials_.all().end()), ctx_, meta);
  }

  const TuneSeams seams_;
  Budget budget_;
  TuneOptions opts_;
  const fs::path out_;
  std::optional<RunContext> new_run_ctx_;  ///< a new run's context, made before its folder is (moved into ctx_)
  std::optional<RunLock> lock_;            ///< held for the run's life: one writer per folder
  Journal journal_;
  const WorkloadInfo workload_;
  const EnvFingerprint env_;
  const RunContext ctx_;
  const ExecutionPlan plan_;  ///< where trials run (tuner/exec/plan.h)
  RunTrials trials_;          ///< every trial of the run, journaled by this thread alone
  Progress progress_;
  const int reserve_;
  RunMeta meta_;  ///< phases, folded proposals, unexplored configs (the memory decisions live in memory_)
  std::unique_ptr<Strategy> strategy_;
  History history_;
  StabilityOptions limits_;      ///< opts_.stability, calibrated to the host's noise once measured (update_limits)
  bool limits_settled_ = false;  ///< limits_ are final (calibrated, or calibration off / not possible)
  struct Deferred {
    Config config;
    double scale;
    int reserve_trials;
  };
  std::vector<Deferred> deferred_;  ///< configs measured before the limits settled that may need re-measures
  /// The parallel search's state: re-measures queue here (settle_limits adds the deferred ones while parallel_ is
  /// set) and run as slots free up; a proposal held until nothing is in flight; whether the strategy still proposes.
  bool parallel_ = false;
  std::deque<Flying> parallel_remeasures_;
  std::optional<int> alone_seq_;  ///< a busy config's re-measure in flight: it runs with nothing beside it
  std::optional<Proposal> held_;
  bool proposing_ = true;
  std::optional<MemoryGate> memory_;  ///< --memory-cap: predicts each config's peak before it runs
  std::string best_text_;
};

}  // namespace

TuneOutcome run_tune(const TuneOptions& opts, std::ostream& progress, TuneSeams seams) {
  return TuneRun(opts, progress, std::move(seams)).run();
}

}  // namespace autotune
