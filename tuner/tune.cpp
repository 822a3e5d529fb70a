#include "tuner/tune.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <ostream>

#include "knobs/error.h"
#include "knobs/resolve.h"
#include "reports/markdown.h"
#include "reports/reporter.h"
#include "tuner/exec/interrupt.h"
#include "tuner/memory/model.h"
#include "tuner/memory/probes.h"
#include "tuner/journal.h"
#include "tuner/record_index.h"
#include "tuner/run_lock.h"
#include "tuner/stability.h"
#include "tuner/statistics.h"
#include "tuner/summarize.h"
#include "tuner/exec/executor.h"
#include "tuner/exec/slots.h"
#include "tuner/exec/trial_runner.h"
#include "tuner/worker_client.h"

namespace autotune {

namespace fs = std::filesystem;

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string default_out_dir() { return utc_now_formatted("runs/%Y%m%d-%H%M%S"); }

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
  /// A line for a finished trial that is not a measurement (reference, confirmation, trace).
  void line(const std::string& s) {
    ++done_;
    out_ << fmt::format("[{:>3}] ", done_) << s << "\n" << std::flush;
  }
  /// A line that is not a trial.
  void note(const std::string& s) { out_ << "      " << s << "\n" << std::flush; }

 private:
  std::ostream& out_;
  int done_ = 0;
  double budget_, t0_;
};

/// The local executor's slots for `o` on this host: --parallel shares of this process's CPUs, and one of the
/// machine's GPUs each when the trials run on CUDA (tuner/exec/slots.h).
std::vector<Slot> local_slots(const TuneOptions& o, const EnvFingerprint& env, bool cuda) {
  return plan_local_slots(o.parallel, allowed_cpus(), cuda ? visible_gpus(env.device_count) : std::vector<std::string>{}, o.pin);
}

/// The options with their defaults filled in (worker, output folder, space), and the run folder
/// checked: a new run never reuses a folder that holds one; a resumed one must hold one.
TuneOptions prepared(const TuneOptions& in) {
  TuneOptions opts = in;
  if (opts.worker.empty()) opts.worker = default_worker_path();
  if (opts.out_dir.empty()) {
    if (opts.resume) throw UsageError("--resume needs the run folder: --resume DIR");
    opts.out_dir = default_out_dir();
  }
  if (fs::exists(opts.out_dir) && !fs::is_directory(opts.out_dir))
    throw UsageError(fmt::format("--out {}: is a file; a run folder is a directory (new, or one to --resume)", opts.out_dir));
  const bool exists = fs::exists(fs::path(opts.out_dir) / "journal.sqlite");
  if (opts.resume && !exists)
    throw UsageError(fmt::format("--resume {}: no journal.sqlite there; nothing to resume", opts.out_dir));
  if (!opts.resume && exists)
    throw UsageError(
        fmt::format("{} already holds a run (journal.sqlite); pass --resume {} to continue it, or choose another --out",
                    opts.out_dir, opts.out_dir));
  if (!opts.resume && opts.executor != "local") {
    // Slurm: srun/sbatch on PATH, the allocation large enough; one line before the run folder exists.
    opts.slot_cpus = plan_slurm_slots(slurm_options(opts)).front().threads;
  } else if (!opts.resume && opts.parallel != 1) {
    // The slots, checked before the run folder exists: 0, more slots than devices (or CPUs) is one line.
    const EnvFingerprint env = query_environment(opts.worker);
    const bool cuda = env.cuda_available && env.device_count > 0 && opts.setup.device != "cpu";
    opts.slot_cpus = static_cast<int>(local_slots(opts, env, cuda).front().cpus.size());  // 0 unpinned: the host's
  }
  if (opts.space.empty()) {
    if (!opts.resume) opts.user_space = false;
    opts.space = (opts.strategy.name == "auto" || opts.strategy.name == "coordinate") ? full_space() : default_space();
  } else if (!opts.resume) {
    // Two or more batch sizes the user listed bound auto's batch search to them; one listed size is
    // where an open-ended search starts, as are the embedded spaces' sizes (docs/search.md).
    for (const auto& [k, vs] : opts.space.axes())
      if (k == "batch_size" && vs.size() >= 2) {
        opts.strategy.batch_values.clear();
        for (const auto& v : vs) opts.strategy.batch_values.push_back(std::stoll(v));
        std::sort(opts.strategy.batch_values.begin(), opts.strategy.batch_values.end());
      }
  }
  return opts;
}

/// One tuning run, phase by phase: baseline, search, verify, confirm, then — with the winner known —
/// ablate (each knob's effect), trace (where the time goes) and report. Every trial is committed to
/// the journal when it finishes; a resumed run finds its finished trials there and does not repeat them.
class TuneRun {
 public:
  TuneRun(const TuneOptions& in, std::ostream& progress)
      : t0_(now_s()),
        opts_(prepared(in)),
        out_(opts_.out_dir),
        journal_(open_journal()),
        workload_(new_run_workload_ ? *new_run_workload_ : describe_workload(opts_.worker, opts_.setup)),
        env_(query_environment(opts_.worker)),
        ctx_(make_context(opts_, workload_, env_)),
        index_(opts_.setup.measure),
        executor_(opts_.executor == "local" ? make_local_executor(trial_runner(), plan_slots())
                                             : make_executor(opts_.executor, trial_runner(), plan_slots())),
        progress_(progress, opts_.budget_seconds),
        // Kept for the end: the confirmation runs and an fp32 reference per candidate.
        reserve_(std::max(1, opts_.confirm_top * (opts_.confirm_rounds + 1) + opts_.confirm_rounds)) {
    try {
      record_run_meta();
    } catch (const DiskFull& e) {
      if (!opts_.resume) forget_new_journal(e);
      throw DiskFull(e.path(),
                     fmt::format("{}; the journal is as it was: make room, then continue with: autotune tune --resume {}",
                                 e.why(), out_.string()));
    }
    load_finished_trials(progress);
    history_.set_objective(objective_for(ctx_, index_));
    limits_ = opts_.stability;
    if (!opts_.stability.calibrate) limits_settled_ = true;
    update_limits();
  }

  TuneOutcome run() {
    if (cancelled_leftovers_ > 0)
      progress_.note(fmt::format("cancelled {} Slurm {} this run had left in the queue (its tuner was killed)", cancelled_leftovers_,
                                 opts_.executor == "slurm-steps" ? "steps" : "jobs"));
    if (opts_.executor != "local")
      progress_.note(fmt::format("{}: {} trial{} at a time, each {}", opts_.executor, executor_->slots(), executor_->slots() > 1 ? "s" : "",
                                 opts_.executor == "slurm-steps" ? "an srun --exact step of this allocation" : "an sbatch job"));
    if (executor_->slots() > 1 && opts_.executor == "local") {
      std::string where;
      for (int i = 0; i < executor_->slots(); ++i) where += (i ? "; " : "") + slots_[static_cast<std::size_t>(i)].describe();
      progress_.note(fmt::format("{} slots ({}): search trials run side by side; the baseline, verification and "
                                 "confirmation run alone in slot 0",
                                 executor_->slots(), where));
    }
    try {
      baseline();
      noise_scale();
      search();
      verify();
      confirm();
      RunSummary summary = summarize();
      if (ablate(summary)) summary = summarize();
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
  /// Opens (or, for a new run, creates) the journal; a resumed run takes its stored options, keeping
  /// this invocation's budget. An unknown workload or bad --data is a usage error before any trial.
  Journal open_journal() {
    if (!opts_.resume) new_run_workload_ = describe_workload(opts_.worker, opts_.setup);  // before anything is created
    std::error_code ec;
    fs::create_directories(out_ / "trials", ec);
    if (ec && is_no_room(ec.value())) throw DiskFull((out_ / "trials").string(), ec.message());
    if (ec)
      throw std::runtime_error(fmt::format("{}: cannot create the run folder: {}", (out_ / "trials").string(), ec.message()));
    lock_.emplace(out_.string(), "tune");
    // Checked again under the lock: another run may have created the journal since prepared() looked.
    if (!opts_.resume && fs::exists(out_ / "journal.sqlite"))
      throw UsageError(
          fmt::format("{} already holds a run (journal.sqlite); pass --resume {} to continue it", opts_.out_dir, opts_.out_dir));
    std::optional<Journal> made;
    try {
      made.emplace((out_ / "journal.sqlite").string());
    } catch (const DiskFull& e) {
      if (!opts_.resume) forget_new_journal(e);
      throw;
    }
    Journal journal = std::move(*made);
    if (opts_.resume) {
      const std::string stored = journal.meta("options");
      if (stored.empty()) throw UsageError(fmt::format("{}: journal has no stored options; cannot resume", journal.path()));
      const double budget = opts_.budget_seconds;
      options_from_json(nlohmann::json::parse(stored), opts_);
      opts_.budget_seconds = budget;  // the budget is per invocation
    }
    return journal;
  }

  /// A new run that ran out of room before its options were stored has nothing to resume: its journal
  /// (created by this very run, the folder held none) is removed so that the same command can be run
  /// again once there is room.
  [[noreturn]] void forget_new_journal(const DiskFull& e) {
    for (const char* f : {"journal.sqlite", "journal.sqlite-wal", "journal.sqlite-shm"}) fs::remove(out_ / f);
    throw DiskFull(e.path(), e.why() + "; nothing was kept: make room, then run the same command again");
  }

  void record_run_meta() {
    data_kind_for(workload_, opts_.setup);
    if (!opts_.resume) {
      journal_.set_meta("options", options_to_json(opts_).dump());
      journal_.set_meta("workload", opts_.setup.workload);
      journal_.set_meta("space", opts_.space.describe());
      journal_.set_meta("env", nlohmann::json(env_).dump());
    }
    journal_.set_meta("workload_info", nlohmann::json(workload_).dump());  // `autotune report` needs it
    if (const std::string p = journal_.meta("phases"); !p.empty())
      phases_ = nlohmann::json::parse(p).get<std::map<std::string, std::string>>();
    if (const std::string f = journal_.meta("folded"); !f.empty()) folded_ = folded_from_json(nlohmann::json::parse(f));
    if (const std::string m = journal_.meta("memory"); !m.empty()) memory_report_ = nlohmann::json::parse(m).get<MemoryReport>();
    if (!opts_.setup.memory_cap.empty() && opts_.memory_model == "on") {
      MemoryModelOptions mo;
      mo.capacity_bytes = parse_size(opts_.setup.memory_cap, "--memory-cap");
      memory_.emplace(mo, ctx_.defaults);
      memory_report_.on = true;
      memory_report_.capacity = mo.capacity_bytes;
      memory_report_.margin = mo.margin;
      opts_.strategy.largest_fitting = [this](const Config& c, const std::vector<std::int64_t>& cands) -> std::int64_t {
        probe(c);
        return memory_->largest_fitting(c, cands, opts_.strategy.max_batch);
      };
    }
    opts_.strategy.slots = opts_.parallel;
    strategy_ = make_strategy(opts_.strategy, ctx_.space, ctx_.baseline, ctx_.defaults);
    for (const auto& f : folded_) history_.alias(f.proposed, f.runs_as);
  }

  /// Trials already in the journal (resume): indexed, and informing the per-trial time estimate.
  void load_finished_trials(std::ostream& progress) {
    for (auto& r : journal_.trials()) {
      trial_seconds_sum_ += r.result.wall_seconds;
      ++trials_timed_;
      done_.push_back(std::move(r));
      index_.add(done_.back());
      if (memory_) memory_->add(done_.back());
    }
    // Trial folders go on from the highest the journal holds (a folder whose trial was in flight when the run
    // stopped holds no journaled trial: it is run again, from scratch, in a new folder or its own).
    next_seq_ = static_cast<int>(done_.size());
    for (const auto& r : done_)
      if (r.result.placement) next_seq_ = std::max(next_seq_, r.result.placement->seq);
    if (!done_.empty()) progress << fmt::format("resuming {}: {} trials already in the journal\n", opts_.out_dir, done_.size());
  }

  // ---- the phases

  /// 1. The baseline (PyTorch's defaults) always runs: without it there is nothing to compare against.
  void baseline() { measure(Proposal{ctx_.baseline, 1.0, "baseline"}, TrialKind::baseline, reserve_); }

  /// 1b. The gradient noise scale at the user's batch (the time objective on real data): one untimed
  /// trial (tuner/summarize.h, noise_plan) whose estimate prices every config at another global batch
  /// from here on (tuner/ranking.h). About 15% of the budget: 5% of training first (from random weights), then at
  /// most 10% recording.
  void noise_scale() {
    if (opts_.objective != "time") return;
    if (!ctx_.time_unrankable.empty()) {
      progress_.note(fmt::format("time to train cannot rank a changed batch: {}. Answer (a), the fastest config at your batch "
                                 "of {}, is the pick; other batches are listed by samples/s",
                                 ctx_.time_unrankable, ctx_.user_batch));
      return;
    }
    if (!index_.noise_trials().empty()) return;  // resumed: measured already
    if (opts_.noise_scale > 0) {
      progress_.note(fmt::format("noise scale given: B̄ = {} (--noise-scale); no noise-scale trial", opts_.noise_scale));
      return;
    }
    // No fits() check: the trial's length is its own share of the budget (noise_plan), not a search trial's.
    const TrialPlan plan = noise_plan(ctx_, 0.10 * opts_.budget_seconds);
    const TrialRecord& rec = run_plan(plan, TrialKind::noise);
    history_.set_objective(objective_for(ctx_, index_));
    const NoiseScaleSummary& n = history_.objective().noise();
    if (!n.measured) {
      progress_.line(fmt::format("noise     {}", rec.result.status == TrialStatus::ok ? n.why_not : rec.result.message));
      return;
    }
    progress_.line(fmt::format("noise     B_simple {} [{}, {}] (95%) from {} steps of {} × {} ({}; {:.0f} s) — {}", with_commas(n.value),
                               with_commas(n.lo), n.bounded() ? with_commas(n.hi) : "∞", n.steps, n.step_batch / n.micro_batch,
                               n.micro_batch, n.stopped, n.seconds,
                               n.early ? "early training (random init): it grows as the loss falls" : "from your weights"));
  }

  /// 2. The strategy, while the budget (minus the confirmation's share) allows; what it did not reach
  /// is recorded as unexplored.
  void search() {
    if (executor_->slots() > 1) return parallel_search();
    while (auto p = strategy_->next(history_)) {
      const Config runs_as = fold(*p);
      if (index_.attempts(runs_as, p->window_scale).empty() && !fits(1 + reserve_)) {
        unexplored_.push_back(p->config);
        for (const auto& c : strategy_->pending(history_))
          if (c != p->config) unexplored_.push_back(c);
        break;
      }
      measure(*p, TrialKind::search, reserve_);
    }
    // Too few configs to measure the host: the given limits, and the re-measures they call for.
    if (!limits_settled_) settle_limits(opts_.stability, nullptr);
  }

  /// 2, in parallel slots: the strategy proposes while a slot is free (configs in flight are placeholders
  /// in the History; a strategy that needs one of their results waits), each finished trial is judged and
  /// journaled by this thread alone, a noisy one re-measured in the next free slot. No barrier per round.
  void parallel_search() {
    interference();
    parallel_ = true;
    std::map<int, Flying> flying;  // seq → what it measures
    std::deque<Flying>& remeasures = parallel_remeasures_;  // settle_limits() adds the ones it deferred
    bool proposing = true;
    std::optional<Proposal> held;  // proposed, but its family's memory probes must run alone first
    const auto launch = [&](const Flying& f, TrialKind kind) {
      TrialPlan plan;
      plan.setup = opts_.setup;
      plan.config = f.config;
      plan.setup.measure.window_min_seconds *= f.scale;
      flying[start(plan, kind)] = f;
    };
    const auto settled = [&](const Config& cfg, double scale) {
      add_verdict(summarize_config(index_.attempts(cfg, scale), limits_), cfg, scale);
    };
    while (true) {
      while (executor_->has_free_slot() && !interrupt_signal()) {
        if (!remeasures.empty()) {
          if (whole_host(remeasures.front().config) && executor_->in_flight() > 0) break;  // alone, once the others end
          const Flying f = remeasures.front();
          remeasures.pop_front();
          history_.mark_in_flight(f.config, f.scale);  // its verdict is not final: a strategy that reads it waits
          launch(f, TrialKind::remeasure);
          continue;
        }
        if (!proposing) break;
        std::optional<Proposal> p = held ? std::exchange(held, std::nullopt) : strategy_->next(history_);
        if (!p || p->wait) {
          if (executor_->in_flight() == 0) proposing = false;  // else: ask again when a result is in
          break;
        }
        const Config cfg = fold(*p);
        if (const ConfigSummary* known = history_.find(cfg); known && known->in_flight) continue;  // folded into one in flight
        if ((whole_host(cfg) || (memory_ && memory_->needs_probes(cfg))) && executor_->in_flight() > 0) {
          held = p;  // the probes measure memory, and a data-parallel trial runs, with nothing beside them
          break;
        }
        record_phase(cfg, p->phase, p->phase);
        if (!index_.attempts(cfg, p->window_scale).empty()) {  // resumed: the journal has it
          settled(cfg, p->window_scale);
          continue;
        }
        if (skipped_for_memory(cfg)) continue;
        if (!fits(reserve_, executor_->in_flight() + 1)) {
          unexplored_.push_back(p->config);
          for (const auto& c : strategy_->pending(history_))
            if (c != p->config) unexplored_.push_back(c);
          proposing = false;
          break;
        }
        history_.mark_in_flight(cfg, p->window_scale);
        launch(Flying{cfg, p->window_scale}, TrialKind::search);
      }
      if (executor_->in_flight() == 0) {
        if (const int sig = interrupt_signal()) throw Interrupted(sig);
        if (held || !remeasures.empty()) continue;  // nothing beside it now: it starts (after its probes)
        break;                                      // nothing to propose, nothing to re-measure
      }
      Finished f = executor_->wait_any();
      const Flying fl = flying.at(f.seq);
      flying.erase(f.seq);
      const TrialRecord& rec = collect(std::move(f));
      update_limits();
      const auto& attempts = index_.attempts(fl.config, fl.scale);
      const ConfigSummary s = summarize_config(attempts, limits_);
      progress_.trial(rec, s, best_text_, fl.config.diff_key(ctx_.baseline) + slot_tag(rec));
      if (limits_settled_ && wants_remeasure(s, attempts.size(), limits_) && fits(reserve_, executor_->in_flight() + 1)) {
        remeasures.push_back(fl);  // stays in flight: the strategy waits for its verdict
        continue;
      }
      if (!limits_settled_ && wants_remeasure(s, attempts.size(), opts_.stability))
        deferred_.push_back({fl.config, fl.scale, reserve_});
      settled(fl.config, fl.scale);
    }
    // Nothing is in flight now: a re-measure the limits still defer runs alone, as the serial search's do.
    parallel_ = false;
    if (!limits_settled_) settle_limits(opts_.stability, nullptr);
  }

  /// A parallel run measures what a slot costs its neighbours: the baseline in every slot at once,
  /// against the baseline's own trial, which ran alone (slot 0). The ratio goes to the report.
  void interference() {
    if (!index_.interference().empty() || interrupt_signal()) return;
    const auto& base = index_.attempts(ctx_.baseline, 1.0);
    if (base.empty() || base.front()->result.status != TrialStatus::ok) return;
    TrialPlan plan;
    plan.setup = opts_.setup;
    plan.config = ctx_.baseline;
    for (int i = 0; i < executor_->slots(); ++i) start(plan, TrialKind::interference);
    std::vector<double> beside;
    while (executor_->in_flight() > 0) {
      const TrialRecord& rec = collect(executor_->wait_any());
      if (rec.result.status == TrialStatus::ok) beside.push_back(median(rec.result.throughputs()));
    }
    const double alone = median(base.front()->result.throughputs());
    if (beside.empty() || alone <= 0) {
      progress_.line("interference: no copy of the baseline finished; not measured");
      return;
    }
    progress_.line(fmt::format("interference: the baseline alone {} samples/s; in each of {} slots at once {} (median) = {:.2f}× alone",
                               with_commas(alone), executor_->slots(), with_commas(median(beside)), median(beside) / alone));
  }

  /// "  [slot 1, beside 2]" for a progress line of a parallel run.
  std::string slot_tag(const TrialRecord& rec) const {
    if (!rec.result.placement || executor_->slots() <= 1) return "";
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
          if (const auto& refs = index_.references(twin); !refs.empty()) return refs.back();
          // The reference spends its own share of the reserve: only the confirmation's must stay.
          if (!fits(1 + confirm_reserve())) return nullptr;
          const TrialRecord& rr = run_one(twin, TrialKind::reference, 1.0);
          progress_.line(fmt::format("reference {} (fp32 twin) for the loss-trajectory check", twin.diff_key(ctx_.baseline)));
          return &rr;
        },
        [&](const ConfigSummary& s) { return index_.by_id(s.measured_trial); });
  }

  /// 4. The top candidates and the baseline again in fresh processes, interleaved (A B base, base B A,
  /// …) so drift hits all alike; the winner is chosen on these runs.
  void confirm() {
    std::vector<Config> runners;
    for (const ConfigSummary* c : confirmation_candidates(history_, opts_.confirm_top)) runners.push_back(c->config);
    if (runners.empty()) return;
    if (std::find(runners.begin(), runners.end(), ctx_.baseline) == runners.end()) runners.push_back(ctx_.baseline);
    for (int round = 0; round < opts_.confirm_rounds; ++round) {
      std::vector<Config> seq = runners;
      if (round % 2) std::reverse(seq.begin(), seq.end());
      for (const Config& c : seq) {
        if (static_cast<int>(index_.confirms(c).size()) > round) continue;  // resumed
        if (round > 0 && !fits(1)) break;
        const TrialResult& r = run_one(c, TrialKind::confirm, 1.0).result;
        progress_.line(fmt::format("confirm   {} round {}: {}", c.diff_key(ctx_.baseline), round + 1,
                                   r.status == TrialStatus::ok ? with_commas(median(r.throughputs())) + " samples/s"
                                                               : to_string(r.status) + ": " + r.message));
      }
    }
  }

  /// 5. Why it wins: each non-default knob of the winner that no measured config isolates is put back
  /// to its default in one more run (an ablation; never a candidate), budget permitting.
  bool ablate(const RunSummary& summary) {
    bool ran = false;
    for (const KnobEffect& e : summary.knob_effects) {
      if (e.at_default) continue;
      if (!fits(1)) break;
      Config c = summary.configs[summary.winner].config;  // e.without may be a neighbour at another value
      c.set(e.knob, ctx_.baseline.get(e.knob));
      if (opts_.strategy.effective_batch > 0 && e.knob == "batch_size") c.set("grad_accum", ctx_.baseline.get("grad_accum"));
      measure(Proposal{c, 1.0, "ablation"}, TrialKind::ablation, 0);
      ran = true;
    }
    return ran;
  }

  /// 6. Where the time goes: a short traced trial of the winner and of the baseline (CUPTI on a GPU,
  /// host phase ranges otherwise), budget permitting; traces/<label>.json opens in Perfetto / HTA.
  bool trace(const RunSummary& summary) {
    if (summary.winner < 0) return false;
    std::vector<std::pair<std::string, Config>> to_trace = {{"winner", summary.configs[summary.winner].config}};
    if (summary.winner != summary.baseline) to_trace.push_back({"baseline", ctx_.baseline});
    bool traced = false;
    for (const auto& [label, c] : to_trace) {
      const auto& traces = index_.traces();
      const Config& cfg = c;  // a structured binding cannot be captured before C++20 (clang refuses it)
      if (std::any_of(traces.begin(), traces.end(), [&](const TrialRecord* r) { return r->plan.config == cfg; }) || !fits(1))
        continue;
      fs::create_directories(out_ / "traces");
      const TrialResult& r = run_one(c, TrialKind::trace, 1.0, fs::absolute(out_ / "traces" / (label + ".json")).string()).result;
      const std::string written =  // ranks > 1: a folder with a file per rank (knobs/protocol.h, rank_trace_path)
          r.profile && !r.profile->trace.empty() ? fs::relative(r.profile->trace, fs::absolute(out_)).string() : label + ".json";
      progress_.line(fmt::format("trace     {} {}: {}", label, c.diff_key(ctx_.baseline),
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

  // ---- trials

  /// The config `p` really runs as (knobs/resolve.h): a proposal with values that would fall back is
  /// folded into that config — measured once, and explained in the report.
  Config fold(const Proposal& p) {
    // --effective-batch holds ranks × batch_size × grad_accum whatever the strategy proposed.
    Config c = p.config;
    std::string held;
    if (const auto eb = opts_.strategy.effective_batch; eb > 0) {
      const std::int64_t b = std::stoll(c.get("batch_size", std::to_string(workload_.default_batch_size)));
      const std::int64_t r = std::stoll(c.get("ranks", "1"));
      const std::string accum = std::to_string(eb / (b * r));
      if (eb % (b * r) == 0 && c.get("grad_accum", "1") != accum) {
        c.set("grad_accum", accum);
        held = fmt::format("grad_accum={} holds --effective-batch {} = {} ranks × batch {} × {}", accum, eb, r, b, accum);
      } else if (eb % (b * r) != 0 && opts_.strategy.other_batches && c.get("grad_accum", "1") != "1") {
        // The time objective: a micro-batch that cannot hold the user's batch is a changed batch (answer b), at
        // the smallest global batch it reaches.
        c.set("grad_accum", "1");
        held = fmt::format("grad_accum=1: {} ranks × batch {} cannot hold --effective-batch {}; it trains another global batch, {}",
                           r, b, eb, r * b);
      }
    }
    // Without a listed space, no proposal oversubscribes a CPU host's cores: ranks × threads > cores runs
    // with threads=default, which the worker divides among the ranks (workloads/engine/trainer.cpp).
    if (!opts_.user_space && !ctx_.target.cuda && c.get("threads", "default") != "default") {
      const std::int64_t r = std::stoll(c.get("ranks", "1")), t = std::stoll(c.get("threads"));
      if (r > 1 && r * t > ctx_.target.cpu_cores) {
        c.set("threads", "default");
        held += fmt::format("{}threads=default: {} ranks × {} threads would oversubscribe {} cores (list the knobs with "
                            "--knobs to measure it anyway)",
                            held.empty() ? "" : "; ", r, t, ctx_.target.cpu_cores);
      }
    }
    const Resolution res = resolve(c, workload_, ctx_.target);
    const bool known = std::any_of(folded_.begin(), folded_.end(), [&](const FoldedConfig& f) { return f.proposed == p.config; });
    if (res.effective == p.config || known) return res.effective;
    std::vector<std::string> reasons;
    if (!held.empty()) reasons.push_back(held);
    for (const auto& s : res.skipped) reasons.push_back(s.reason);
    folded_.push_back({p.config, res.effective, reasons});
    history_.alias(p.config, res.effective);
    journal_.set_meta("folded", folded_to_json(folded_).dump());
    progress_.note(fmt::format("{} runs as {}: {}", p.config.diff_key(ctx_.baseline), res.effective.diff_key(ctx_.baseline),
                               reasons.front()));
    return res.effective;
  }

  /// Measures a proposal (re-measuring a noisy one in fresh processes) unless the journal has it.
  void measure(const Proposal& proposal, TrialKind kind, int reserve_trials) {
    const Config cfg = fold(proposal);
    const double scale = proposal.window_scale;
    const std::string what = cfg.diff_key(ctx_.baseline);
    record_phase(cfg, proposal.phase, kind == TrialKind::baseline ? "baseline" : proposal.phase);
    if (index_.attempts(cfg, scale).empty() && kind == TrialKind::search && skipped_for_memory(cfg)) return;
    if (index_.attempts(cfg, scale).empty()) {
      const TrialRecord& rec = run_one(cfg, kind, scale);
      update_limits();
      progress_.trial(rec, summarize_config(index_.attempts(cfg, scale), limits_), best_text_, what);
    }
    ConfigSummary s = summarize_config(index_.attempts(cfg, scale), limits_);
    if (limits_settled_) {
      s = remeasure(cfg, scale, reserve_trials, s);
    } else if (wants_remeasure(s, index_.attempts(cfg, scale).size(), opts_.stability)) {
      deferred_.push_back({cfg, scale, reserve_trials});  // judged again (and re-measured) once the limits are known
    }
    add_verdict(s, cfg, scale);
  }

  /// The search phase that proposed `cfg`, for the report (journal meta "phases"): `label` when the config is
  /// new or was last proposed by another phase than `proposed_by`.
  void record_phase(const Config& cfg, const std::string& proposed_by, const std::string& label) {
    if (history_.find(cfg) && phases_[cfg.key()] == proposed_by) return;
    phases_[cfg.key()] = label;
    journal_.set_meta("phases", nlohmann::json(phases_).dump());
  }

  /// `s`, the verdict on `cfg` at window scale `scale`, labelled and entered in the History (replacing its
  /// in-flight placeholder, if any).
  void add_verdict(ConfigSummary s, const Config& cfg, double scale) {
    s.is_baseline = cfg == ctx_.baseline;
    s.window_scale = scale;
    s.phase = phases_[cfg.key()];
    history_.clear_in_flight(cfg);
    history_.add(s);
    update_best_text();
  }

  /// The "best so far" of the progress lines.
  void update_best_text() {
    if (const ConfigSummary* b = history_.best())
      best_text_ = fmt::format("{:.0f} {}", b->median, b->config.diff_key(ctx_.baseline));
  }

  /// A noisy or drifting config again in fresh processes, up to max_remeasure times, budget permitting.
  ConfigSummary remeasure(const Config& cfg, double scale, int reserve_trials, ConfigSummary s) {
    const std::string what = cfg.diff_key(ctx_.baseline);
    while (wants_remeasure(s, index_.attempts(cfg, scale).size(), limits_) && fits(1 + reserve_trials)) {
      const TrialRecord& rec = run_one(cfg, TrialKind::remeasure, scale);
      s = summarize_config(index_.attempts(cfg, scale), limits_);
      progress_.trial(rec, s, best_text_, what);
    }
    return s;
  }

  /// The noise and drift limits calibrated to this host (tuner/stability.h) once the first configs have
  /// measured it; the verdicts given so far are judged again under them. summarize_run() derives the
  /// same limits from the journal, so the reports and a resumed run agree with this run.
  void update_limits() {
    if (limits_settled_) return;
    const HostNoise h = host_noise(index_.first_attempts(), opts_.setup.measure, opts_.stability.calibration_trials);
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

  /// The limits are final: every verdict so far is judged again under them, and the configs whose
  /// re-measures were deferred get them now.
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
    // A new verdict keeps what the search labelled the old one with.
    const auto relabelled = [](ConfigSummary s, const ConfigSummary& old) {
      s.is_baseline = old.is_baseline;
      s.window_scale = old.window_scale;
      s.phase = old.phase;
      return s;
    };
    std::vector<ConfigSummary> again;
    for (const auto& [key, old] : history_.all())
      again.push_back(relabelled(summarize_config(index_.attempts(old.config, old.window_scale), limits_), old));
    for (const auto& s : again) history_.add(s);
    const auto deferred = std::move(deferred_);
    deferred_.clear();
    if (parallel_) {  // in slots: the parallel search re-measures them as slots free up, beside the others
      for (const auto& d : deferred) parallel_remeasures_.push_back({d.config, d.scale});
      update_best_text();
      return;
    }
    for (const auto& d : deferred) {
      const ConfigSummary* old = history_.find(d.config);
      if (old) history_.add(relabelled(remeasure(d.config, d.scale, d.reserve_trials, *old), *old));
    }
    update_best_text();
  }

  // ---- the memory model (--memory-cap; tuner/memory/model.h, docs/memory.md)

  /// The probes of `c`'s family, unless it has two batch sizes observed (the journal's count, on resume).
  void probe(const Config& c) {
    if (!memory_ || !memory_->needs_probes(c)) return;
    // Probes at a quarter, half and all of the smallest batch the space lists (else the workload's):
    // small enough to be cheap, close enough to the batches they predict.
    std::int64_t smallest = std::stoll(ctx_.defaults.count("batch_size") ? ctx_.defaults.at("batch_size") : "32");
    for (const auto& [k, vs] : ctx_.space.axes())
      if (k == "batch_size") {
        smallest = std::stoll(vs.front());
        for (const auto& v : vs) smallest = std::min<std::int64_t>(smallest, std::stoll(v));
      }
    const double t0 = now_s();
    const int n = probe_family(*memory_, c, opts_.setup, smallest,
                               [&](const TrialPlan& p) -> const TrialRecord& { return run_plan(p, TrialKind::memory); });
    memory_report_.probes += n;
    memory_report_.probe_seconds += now_s() - t0;
    const MemoryPrediction pr = memory_->predict(c);
    progress_.line(fmt::format("memory    {} probes of {} ({:.1f} s): {}", n, memory_family(c, ctx_.defaults), now_s() - t0,
                               pr.known ? fmt::format("{} + {} per sample above the model states of {}", format_bytes(pr.activations - pr.per_sample * pr.batch),
                                                      format_bytes(pr.per_sample), format_bytes(pr.states.total()))
                                        : "not predicted: " + pr.why_unknown));
    for (const auto& sc : memory_->states_checks())
      if (sc.family == memory_family(c, ctx_.defaults))
        memory_report_.states_checks.push_back(fmt::format("{}: computed {} {} counted {}", sc.family, format_bytes(sc.analytic),
                                                           sc.analytic == sc.counted ? "=" : "≠", format_bytes(sc.counted)));
    if (memory_report_.advice.empty()) memory_report_.advice = memory_->cannot_fit_advice(c);
    save_memory_report();
  }

  /// Whether the memory model rules `cfg` out before it runs: its upper prediction above the capacity
  /// less the margin, or a batch at or above one that ran out of memory. Recorded either way (the
  /// report's memory column); a skipped config enters the history as out of memory, not run.
  bool skipped_for_memory(const Config& cfg) {
    if (!memory_) return false;
    probe(cfg);
    const MemoryPrediction p = memory_->predict(cfg);
    MemoryEstimate e = p.estimate(cfg);
    const bool skip = !p.fits && (p.known || !p.oom_seen.empty());
    if (skip)
      e.reason = !p.oom_seen.empty()
                     ? fmt::format("{}: a larger batch of the same family will not fit either", p.oom_seen)
                     : fmt::format("predicted peak {} [{}, {}] ({}) > {} usable ({} less the {:.0f}% margin)", format_bytes(p.peak),
                                   format_bytes(p.lo), format_bytes(p.hi), p.phase,
                                   format_bytes(static_cast<std::int64_t>(p.capacity * (1 - memory_->options().margin))),
                                   format_bytes(p.capacity), 100 * memory_->options().margin);
    auto& pred = memory_report_.predicted;  // one decision per config (a resumed run decides again)
    pred.erase(std::remove_if(pred.begin(), pred.end(), [&](const MemoryEstimate& x) { return x.config == cfg; }), pred.end());
    pred.push_back(e);
    save_memory_report();
    if (!skip) return false;
    progress_.note(fmt::format("{} not run: {}", cfg.diff_key(ctx_.baseline), e.reason));
    ConfigSummary s;
    s.config = cfg;
    s.status = TrialStatus::oom;
    s.reason = "not run: " + e.reason;
    s.eligible = false;
    s.batch_size = p.batch;
    s.phase = phases_[cfg.key()];
    history_.add_not_run(s);
    return true;
  }

  void save_memory_report() { journal_.set_meta("memory", nlohmann::json(memory_report_).dump()); }

  /// One worker process; its record is committed to the journal at once (a kill after this loses nothing).
  const TrialRecord& run_one(const Config& cfg, TrialKind kind, double scale, const std::string& trace = "") {
    TrialPlan plan;
    plan.setup = opts_.setup;
    plan.config = cfg;
    plan.setup.measure.window_min_seconds *= scale;
    plan.trace = trace;
    return run_plan(plan, kind);
  }
  /// One trial with nothing else in flight (slot 0 of a parallel run): the serial phases.
  const TrialRecord& run_plan(const TrialPlan& plan, TrialKind kind) {
    if (const int sig = interrupt_signal()) throw Interrupted(sig);  // no new trial once asked to stop
    if (executor_->in_flight() != 0) throw std::logic_error("a trial that runs alone was started beside others");
    start(plan, kind);
    return collect(executor_->wait_any());
  }

  /// Starts a trial in a free slot; its folder number.
  int start(const TrialPlan& plan, TrialKind kind) {
    if (const int sig = interrupt_signal()) throw Interrupted(sig);
    executor_->start(TrialJob{plan, kind, ++next_seq_, whole_host(plan.config)});
    return next_seq_;
  }

  /// A data-parallel config in a local parallel run: its ranks need the host's CPUs and GPUs, not one slot's,
  /// so it runs with nothing beside it on the whole host (search and finalists alike).
  bool whole_host(const Config& c) const {
    return opts_.executor == "local" && executor_->slots() > 1 && std::stoi(c.get("ranks", "1")) > 1;
  }

  /// A finished trial, committed to the journal at once (a kill after this loses nothing). A trial that
  /// could not be measured (interrupted, no room on the disk) stops the run: the others in flight are
  /// waited for (they stop too) and left out of the journal, so --resume runs them again.
  const TrialRecord& collect(Finished f) {
    if (f.error) {
      executor_->drain();
      std::rethrow_exception(f.error);
    }
    TrialRecord rec = std::move(f.record);
    if (rec.kind != TrialKind::noise) {  // the noise trial's length is its own (a share of the budget), not a trial's
      trial_seconds_sum_ += f.seconds;
      ++trials_timed_;
    }
    rec.id = journal_.append(rec);
    done_.push_back(std::move(rec));
    index_.add(done_.back());
    if (memory_) {
      const std::size_t misses = memory_->misses().size();
      memory_->add(done_.back());
      for (std::size_t i = misses; i < memory_->misses().size(); ++i) {
        memory_report_.misses.push_back(memory_->misses()[i].what);
        progress_.note("memory model miss: " + memory_->misses()[i].what + " (the fit now counts it)");
        save_memory_report();
      }
    }
    return done_.back();
  }

  /// The confirmation's first round: each candidate and the baseline once (later rounds run only while
  /// the budget allows, see confirm()). A candidate without its fp32 reference cannot win at all, so the
  /// references come before the confirmation's second round.
  int confirm_reserve() const { return opts_.confirm_top + 1; }

  /// Whether `trials` more trials of the average length, run one after another, and `side_by_side` more
  /// in the executor's slots fit in what is left of the budget.
  bool fits(int trials, int side_by_side = 0) const {
    const double estimate = trials_timed_ ? trial_seconds_sum_ / trials_timed_ : 0.0;
    const double slots = executor_->slots();
    return now_s() - t0_ + estimate * (trials + std::ceil(side_by_side / slots)) <= opts_.budget_seconds;
  }

  TrialRunner trial_runner() const {
    return TrialRunner(RunnerOptions(opts_.worker, (out_ / "trials").string())
                           .timeout_seconds(opts_.trial_timeout_seconds)
                           .launcher(opts_.launcher));
  }

  /// The executor's slots: one unpinned slot (serial), or --parallel N shares of this host
  /// (tuner/exec/slots.h). A resumed run plans them again from its journal's --parallel.
  std::vector<Slot> plan_slots() {
    if (opts_.executor != "local") {
      // A tuner killed with trials in Slurm (kill -9 of an sbatch --wait leaves its job running) left them
      // in the queue: cancelled before anything runs again.
      const SlurmOptions so = slurm_options(opts_);
      cancelled_leftovers_ = cancel_leftovers(opts_.executor, so.run_name);
      slots_ = plan_slurm_slots(so);
      return slots_;
    }
    slots_ = local_slots(opts_, env_, ctx_.target.cuda);
    return slots_;
  }

  RunSummary summarize(bool interrupted = false) {
    RunMeta meta;
    meta.started_at = journal_.meta("created_at");
    meta.finished_at = interrupted ? "" : utc_now_iso8601();           // "" = not finished: `autotune report` agrees
    meta.elapsed_seconds = std::round((now_s() - t0_) * 1000) / 1000;  // as stored, so `report` agrees
    meta.budget_seconds = opts_.budget_seconds;
    meta.unexplored = unexplored_;
    meta.phases = phases_;
    meta.folded = folded_;
    meta.memory = memory_report_;
    journal_.set_meta("finished_at", meta.finished_at);
    journal_.set_meta("elapsed_seconds", fmt::format("{:.3f}", meta.elapsed_seconds));
    journal_.set_meta("budget_seconds", fmt::format("{:.3f}", meta.budget_seconds));
    journal_.set_meta("unexplored", nlohmann::json(unexplored_).dump());
    return summarize_run(std::vector<TrialRecord>(done_.begin(), done_.end()), ctx_, meta);
  }

  const double t0_;
  TuneOptions opts_;
  const fs::path out_;
  std::optional<WorkloadInfo> new_run_workload_;  ///< a new run's workload, checked before its folder is made
  std::optional<RunLock> lock_;                   ///< held for the run's life: one writer per folder
  Journal journal_;
  const WorkloadInfo workload_;
  const EnvFingerprint env_;
  const RunContext ctx_;
  std::deque<TrialRecord> done_;  ///< every trial of the run; a deque, so indexed records never move
  RecordIndex index_;
  std::vector<Slot> slots_;             ///< set by plan_slots() (before executor_ is made)
  int cancelled_leftovers_ = 0;         ///< Slurm steps/jobs of this run a killed tuner left, cancelled by plan_slots()
  /// What the parallel search measures; re-measures queue here (settle_limits adds the deferred ones while
  /// parallel_ is set) and run as slots free up.
  struct Flying {
    Config config;
    double scale = 1;
  };
  bool parallel_ = false;
  std::deque<Flying> parallel_remeasures_;
  std::unique_ptr<Executor> executor_;  ///< where trials run (tuner/exec/executor.h); this thread alone journals them
  int next_seq_ = 0;                    ///< the last trial folder handed out (trials/NNNN)
  Progress progress_;
  const int reserve_;
  std::unique_ptr<Strategy> strategy_;
  History history_;
  StabilityOptions limits_;      ///< opts_.stability, calibrated to the host's noise once measured (update_limits)
  bool limits_settled_ = false;  ///< limits_ are final (calibrated, or calibration off / not possible)
  struct Deferred {
    Config config;
    double scale;
    int reserve_trials;
  };
  std::vector<Deferred> deferred_;             ///< configs measured before the limits settled that may need re-measures
  std::map<std::string, std::string> phases_;  ///< config key → the search phase that proposed it, for the report
  std::vector<FoldedConfig> folded_;
  std::optional<MemoryModel> memory_;  ///< --memory-cap: predicts each config's peak before it runs
  MemoryReport memory_report_;         ///< its decisions, kept in the journal (meta.memory)
  std::vector<Config> unexplored_;
  std::string best_text_;
  double trial_seconds_sum_ = 0;
  int trials_timed_ = 0;
};

}  // namespace

TuneOutcome run_tune(const TuneOptions& opts, std::ostream& progress) { return TuneRun(opts, progress).run(); }

SlurmOptions slurm_options(const TuneOptions& o) {
  SlurmOptions s;
  s.mode = o.executor;
  s.slots = o.parallel;
  s.cpus_per_trial = o.slurm_cpus;
  s.gpus_per_trial = o.slurm_gpus;
  s.mem_mb = o.slurm_mem_mb;
  s.extra = o.slurm_args;
  s.run_name = slurm_run_name(o.out_dir.empty() ? "." : o.out_dir);
  return s;
}

}  // namespace autotune
