#pragma once
// What every phase of a tuning run shares (tuner/tune/tune.cpp runs the phases; tuner/tune/parallel_search.h,
// noise_phase.h and final_rounds.h hold the ones with rooms of their own): the run's options, folder, journal, trials,
// budget and console; the configs' verdicts (the History) and the stability limits they are judged by; and the
// operations every phase measures through — fold a proposal into what really runs, measure it (re-measuring a noisy
// one), run a trial alone, wait for a quiet host, settle the limits, consult the memory gate, summarize the journal.
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "knobs/worker_info.h"
#include "reports/summary.h"
#include "tuner/exec/plan.h"
#include "tuner/exec/run_lock.h"
#include "tuner/measures/budget.h"
#include "tuner/measures/journal.h"
#include "tuner/measures/record_index.h"
#include "tuner/memory/gate.h"
#include "tuner/options/run_context.h"
#include "tuner/options/run_meta.h"
#include "tuner/options/tune_options.h"
#include "tuner/search/quiet_host.h"
#include "tuner/search/ranking.h"
#include "tuner/search/strategy.h"
#include "tuner/tune/progress.h"
#include "tuner/tune/run_trials.h"
#include "tuner/tune/seams.h"

namespace autotune {

/// A new verdict of a config keeps what the search labelled its old one with.
ConfigSummary relabelled(ConfigSummary s, const ConfigSummary& old);

/// A config measured before the stability limits settled, whose re-measures wait for them.
struct DeferredRemeasure {
  Config config;
  double scale = 1;
  int reserve_trials = 0;
};

class TuneCore {
  // Declared before the state below: the journal's opening reads them.
  const TuneSeams seams_;
  std::optional<RunContext> new_run_ctx_;  ///< a new run's context, made before its folder is (moved into ctx)
  std::optional<RunLock> lock_;            ///< held for the run's life: one writer per folder

 public:
  /// Opens the run's journal (a new run's checks come first: a refused run leaves nothing behind), records the run's
  /// identity in it, loads what a resumed run already measured, and sets the strategy and the memory gate.
  TuneCore(const TuneOptions& in, std::ostream& console, TuneSeams seams);

  const RecordIndex& index() const { return trials.index(); }

  // ---- configs and their verdicts

  /// The config `p` really runs as (tuner/options/run_context.h, runs_as): a proposal with values that would fall back is
  /// folded into that config — measured once, and explained in the report.
  Config fold(const Proposal& p);
  /// Measures a proposal (re-measuring a noisy one in fresh processes) unless the journal has it.
  void measure(const Proposal& proposal, TrialKind kind, int reserve_trials);
  /// The search phase that proposed `cfg`, for the report (journal meta "phases"): `label` when the config is
  /// new or was last proposed by another phase than `proposed_by`.
  void record_phase(const Config& cfg, const std::string& proposed_by, const std::string& label);
  /// `s`, the verdict on `cfg` at window scale `scale`, labelled and entered in the History (replacing its
  /// in-flight placeholder, if any).
  void add_verdict(ConfigSummary s, const Config& cfg, double scale);
  /// The "best so far" of the progress lines.
  void update_best_text();
  /// A noisy or drifting config again in fresh processes, up to max_remeasure times, budget permitting; one
  /// timed on a busy host after waiting for the host to be quiet; an input-bound one with longer windows
  /// (remeasure_scale). The result's window_scale is the scale of the attempts it summarizes.
  ConfigSummary remeasure(const Config& cfg, double scale, int reserve_trials, ConfigSummary s);
  /// The console's line for a re-measure at a longer window: why, and how long.
  void note_longer_windows(const std::string& what, const ConfigSummary& s, double scale, double longer);
  /// A config other than the baseline that the confirmation would run.
  bool has_rival() const;
  /// Configs to time again, most promising first: at the user's batch first where the objective holds it (answer (a) is
  /// about them), then the fastest.
  void order_to_retime(std::vector<ConfigSummary>& configs) const;
  /// The budget ends the search before `proposed`: it and what the strategy still meant to measure are unexplored.
  void stop_proposing(const Config& proposed);

  // ---- a busy host and the stability limits

  /// After a wait for a quiet host, what the caller does with `what`, said by it (the wait says only what it saw): not
  /// timed again when the wait left too little budget; timed again anyway when the host stayed busy; nothing to add
  /// when it is quiet.
  void note_after_wait(const std::string& what, bool quiet, bool fits);
  /// Before a config timed on a busy host is timed again: wait for the host to be quiet, a bounded share of what is left.
  /// False when it is still busy at the end of the wait; true when quiet, or when no wait is asked ($AUTOTUNE_QUIET_WAIT=0).
  bool wait_for_quiet();
  /// The noise and drift limits calibrated to this host (tuner/search/stability.h) once the first configs have
  /// measured it; the verdicts given so far are judged again under them. summarize_run() derives the
  /// same limits from the journal, so the reports and a resumed run agree with this run.
  void update_limits();
  /// The limits are final: every verdict so far is judged again under them; the configs whose re-measures were
  /// deferred get them at the caller's remeasure_deferred() (or take_deferred()), after the caller has said what it
  /// has to say.
  void settle_limits(const StabilityOptions& final_limits, const HostNoise* h);
  /// A config measured before the limits settled that may need re-measures under them: judged again once they have.
  void defer_remeasure(const DeferredRemeasure& d) { deferred_.push_back(d); }
  /// The configs measured before the limits settled that need re-measures under them get them now, one after another
  /// (the baseline first, then the most promising: take_deferred's order).
  void remeasure_deferred();
  /// The search has ended: where it measured too few configs to calibrate the limits to the host, the given limits are
  /// final; the re-measures deferred until then run now, one after another.
  void end_search();
  /// Those configs, once the limits have settled, for a caller that runs their re-measures itself (in slots); none
  /// before. The baseline first, then in order_to_retime's order.
  std::vector<DeferredRemeasure> take_deferred();

  // ---- the memory gate (--memory-cap; tuner/memory/gate.h, docs/memory.md)

  /// The probes of `c`'s family, when the gate wants them (each probe a trial alone, journaled).
  void probe(const Config& c);
  /// Whether the gate rules `cfg` out before it runs; a skipped config enters the history as out of memory, not
  /// run (the report's memory column says why).
  bool skipped_for_memory(const Config& cfg);

  // ---- trials

  /// `cfg` as a trial of this run, its windows `scale` times the run's.
  TrialPlan plan_of(const Config& cfg, double scale) const;
  /// Starts a trial in a free slot (a data-parallel one of local slots: on the whole host); its folder number.
  int start(const TrialPlan& plan, TrialKind kind) { return trials.start(plan, kind, whole_host(plan.config)); }
  /// One trial with nothing else in flight (slot 0 of a parallel run): the serial phases.
  const TrialRecord& run_alone(const TrialPlan& plan, TrialKind kind) {
    return trials.run_alone(plan, kind, whole_host(plan.config));
  }
  bool whole_host(const Config& c) const { return execution.whole_host(std::stoi(c.get("ranks", "1"))); }
  /// The confirmation's first round: each candidate and the baseline once (later rounds run only while
  /// the budget allows, see confirm()). A candidate without its fp32 reference cannot win at all, so the
  /// references come before the confirmation's second round.
  int confirm_reserve() const { return opts.confirm_top + 1; }

  /// The run as the journal holds it now (its end recorded in the journal), every config summarized.
  RunSummary summarize(bool interrupted = false);

 private:
  Journal open_journal();
  void record_run_meta();
  void committed(const TrialRecord& r, bool loaded);
  TrialRunner trial_runner() const;

 public:
  // ---- the run's state, in the order it is built

  Budget budget;
  TuneOptions opts;
  const std::filesystem::path out;
  Journal journal;
  const WorkloadInfo workload;
  const EnvFingerprint env;
  const RunContext ctx;
  const ExecutionPlan execution;  ///< where trials run (tuner/exec/plan.h)
  RunTrials trials;               ///< every trial of the run, journaled by this thread alone
  Progress progress;
  const int reserve;  ///< trials kept for the end: the confirmation runs and an fp32 reference per candidate
  RunMeta meta;       ///< phases, folded proposals, unexplored configs (the memory decisions live in memory)
  std::unique_ptr<Strategy> strategy;
  History history;
  StabilityOptions limits;           ///< opts.stability, calibrated to the host's noise once measured (update_limits)
  bool limits_settled = false;       ///< limits are final (calibrated, or calibration off / not possible)
  std::optional<MemoryGate> memory;  ///< --memory-cap: predicts each config's peak before it runs
  std::string best_text;
  std::vector<std::string> lr_sweeps_kept;  ///< tune --lr-sweep: the sweeps the budget kept time for (lr_sweep_phase.h)

 private:
  std::vector<DeferredRemeasure> deferred_;  ///< configs measured before the limits settled that may need re-measures
};

}  // namespace autotune
