#include "tuner/tune/tune.h"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "knobs/error.h"
#include "reports/reporter.h"
#include "tuner/exec/interrupt.h"
#include "tuner/search/stability.h"
#include "tuner/tune/core.h"
#include "tuner/tune/final_rounds.h"
#include "tuner/tune/lr_sweep_phase.h"
#include "tuner/tune/noise_phase.h"
#include "tuner/tune/parallel_search.h"

namespace autotune {

namespace {

/// One tuning run, phase by phase: baseline, noise scale, search, verify, confirm, then — with the winner known —
/// the effect rounds (each knob's effect), trace (where the time goes) and report. Every trial is committed to the journal when
/// it finishes (tuner/tune/run_trials.h); a resumed run finds its finished trials there and does not repeat them. Where
/// trials run is the execution plan's (tuner/exec/plan.h), the memory policy the gate's (tuner/memory/gate.h).
class TuneRun {
 public:
  TuneRun(const TuneOptions& in, std::ostream& progress, TuneSeams seams) : c_(in, progress, std::move(seams)) {}

  TuneOutcome run() {
    for (const auto& note : c_.execution.notes) c_.progress.note(note);
    try {
      baseline();
      say_what_the_budget_fits();
      measure_noise_scale(c_);
      keep_for_lr_sweeps(c_);
      search();
      verify();
      if (search_on_without_a_rival()) verify();
      confirm(c_);
      if (retime_busy()) {
        verify();
        confirm(c_);
      }
      RunSummary summary = c_.summarize();
      if (measure_effects(c_, summary)) summary = c_.summarize();
      if (remeasure_effects(c_, summary)) summary = c_.summarize();
      if (trace_winner(c_, summary)) summary = c_.summarize();
      if (c_.lr_sweeps_kept.empty()) return report(summary);
      TuneOutcome done = report(summary);  // the tune's answer stands on its own before a sweep starts
      try {
        if (run_lr_sweeps(c_, summary)) done = report(c_.summarize());  // priced again at the measured rates
      } catch (const Interrupted& e) {
        done.interrupted_by = e.signal;
      }
      return done;
    } catch (const Interrupted& e) {
      // What finished is in the journal; the reports show it, marked interrupted, and --resume goes on.
      TuneOutcome r = report(c_.summarize(/*interrupted=*/true));
      r.interrupted_by = e.signal;
      return r;
    } catch (const DiskFull& e) {
      // No reports (there is no room for them); every committed trial is in the journal, whole.
      throw DiskFull(e.path(), fmt::format("{}; {} trials are kept in {}; make room, then continue with: autotune tune "
                                           "--resume {}",
                                           e.why(), c_.journal.trials().size(), c_.journal.path(), c_.out.string()));
    }
  }

 private:
  /// 1. The baseline (PyTorch's defaults) always runs: without it there is nothing to compare against. A noisy or
  /// drifting baseline is re-measured whenever one more trial fits, without keeping the confirmation's reserve:
  /// nothing can be confirmed against a baseline that never settled (a short budget once ended a run "no stable
  /// config" after its one baseline trial drifted 7%).
  void baseline() { c_.measure(Proposal{c_.ctx.baseline, 1.0, "baseline"}, TrialKind::baseline, 0); }

  /// After the baseline, the first timed trial: how many trials the rest of the budget fits at that length, of which
  /// the confirmation keeps `reserve`; when none is left for the search, the budget that would fit a small one.
  void say_what_the_budget_fits() {
    const double per = c_.budget.trial_seconds();
    if (per <= 0) return;
    const int fits = static_cast<int>(c_.budget.left() / per);
    const int search = fits - c_.reserve;
    if (search >= 1) {
      c_.progress.note(
          fmt::format("one trial takes about {:.3g} s: the budget fits about {} more, {} for the search and {} kept "
                      "for the confirmation and the fp32 references; the effect rounds (each round: the winner, the "
                      "baseline and one run per knob the winner changes) follow only if the search leaves room — "
                      "else each knob's effect comes from the search runs, and the report says so",
                      per, fits, search, c_.reserve));
      return;
    }
    const double needed = search_budget_minutes(per, c_.reserve);  // the baseline, a few search trials and the reserve
    c_.progress.note(
        fmt::format("the budget fits no search: one trial takes about {:.3g} s and the {:.0f} s left are what the "
                    "confirmation keeps ({} trials); the answer will be PyTorch's defaults unless the budget grows — "
                    "a search of a few configs needs about --budget {:.0f}m",
                    per, std::max(0.0, c_.budget.left()), c_.reserve, needed));
  }

  /// 2. The strategy, while the budget (minus the confirmation's share) allows; what it did not reach
  /// is recorded as unexplored.
  void search() {
    if (c_.trials.slots() > 1) return search_in_parallel(c_);
    while (auto p = c_.strategy->next(c_.history)) {
      const Config runs_as = c_.fold(*p);
      if (c_.index().attempts(runs_as, p->window_scale).empty() && !c_.budget.fits(1 + c_.reserve)) {
        c_.stop_proposing(p->config);
        break;
      }
      c_.measure(*p, TrialKind::search, c_.reserve);
    }
    c_.end_search();
  }

  /// 2b. The search stopped to keep the confirmation's reserve, yet nothing but the baseline is stable: nothing would be
  /// confirmed, and the reserve would go unspent while configs stayed noisy or unexplored (a run once ended with 83 s
  /// of 150 left, a 1.4× config noisy and never timed again, five configs "not explored (budget)"). Keeping back only
  /// what confirming one newcomer needs, it re-times the noisy configs (in retime_busy's order), then measures what the
  /// search left unexplored. True when it ran a trial.
  bool search_on_without_a_rival() {
    if (c_.trials.slots() > 1 || stop_signal() || c_.has_rival()) return false;
    const int keep = confirmation_reserve(1, c_.opts.confirm_rounds);
    if (!c_.budget.fits(1 + keep)) return false;
    bool ran = false;
    std::vector<ConfigSummary> noisy;
    for (const auto& [key, c] : c_.history.all())
      if (c.config != c_.ctx.baseline && wants_remeasure(c, attempt_chain(c_.index(), c.config, c.window_scale).attempts.size(), c_.limits))
        noisy.push_back(c);
    c_.order_to_retime(noisy);
    for (const ConfigSummary& c : noisy) {
      if (c_.has_rival() || !c_.budget.fits(1 + keep)) return ran;
      const auto before = c_.trials.all().size();
      c_.history.add(relabelled(c_.remeasure(c.config, c.window_scale, keep, c), c));
      ran |= c_.trials.all().size() > before;
    }
    std::vector<Config> left = c_.meta.unexplored;
    for (const Config& c : left) {
      if (c_.has_rival() || stop_signal() || !c_.budget.fits(1 + keep)) break;
      c_.meta.unexplored.erase(std::find(c_.meta.unexplored.begin(), c_.meta.unexplored.end(), c));
      c_.measure(Proposal{c, 1.0, "after the search: nothing else stable"}, TrialKind::search, keep);
      ran = true;
    }
    return ran;
  }

  /// 3. Loss trajectory vs the fp32 reference (same batch, seed, data) for the leading candidates that
  /// change numerics; a config that drifts — or whose reference the budget cannot fit — is not
  /// eligible. summarize_run() repeats this from the journal with the same function.
  void verify() {
    verify_leaders(
        c_.history, c_.opts.confirm_top, c_.opts.stability.loss_tolerance,
        [&](const Config& twin) -> const TrialRecord* {
          if (const auto& refs = c_.index().references(twin); !refs.empty()) return refs.back();
          // The reference spends its own share of the reserve: only the confirmation's must stay.
          if (!c_.budget.fits(1 + c_.confirm_reserve())) return nullptr;
          const TrialRecord& rr = c_.run_alone(c_.plan_of(twin, 1.0), TrialKind::reference);
          c_.progress.line(rr.id,
                           fmt::format("reference {} (fp32 twin) for the loss-trajectory check", twin.diff_key(c_.ctx.baseline)));
          return &rr;
        },
        [&](const ConfigSummary& s) { return c_.index().by_id(s.measured_trial); });
  }

  /// 3b. A busy spell that ended with budget left: each config still rejected as busy (its re-measures spent while other
  /// programs ran) is timed once more, the most promising first, once the host is quiet — in this invocation and in
  /// each `--resume` of it — so a run does not end with budget left and nothing timed at the user's batch. Returns
  /// whether any ran (the leaders are then verified and confirmed again).
  bool retime_busy() {
    std::vector<ConfigSummary> busy;
    for (const auto& [key, c] : c_.history.all())
      if (failed_quiet_host(c) && c.phase != "ablation" &&
          !wants_remeasure(c, c_.index().attempts(c.config, c.window_scale).size(), c_.limits))
        busy.push_back(c);
    c_.order_to_retime(busy);
    bool ran = false;
    for (const ConfigSummary& c : busy) {
      if (stop_signal() || !c_.budget.fits(1 + c_.confirm_reserve())) break;
      if (!c_.wait_for_quiet()) {  // still busy: the next attempt would be busy too
        c_.progress.note("not timed again: the host is still busy, and an attempt now would be busy too");
        c_.meta.busy_at_end = true;  // the reports then name the host, not the budget, as what left them at one trial
        break;
      }
      c_.progress.note(fmt::format("{}: timed again now that the host is quiet (every earlier attempt was busy)",
                                   c.config.diff_key(c_.ctx.baseline)));
      const TrialRecord& rec = c_.run_alone(c_.plan_of(c.config, c.window_scale), TrialKind::remeasure);
      const ConfigSummary s = summarize_config(c_.index().attempts(c.config, c.window_scale), c_.limits);
      c_.progress.trial(rec, s, c_.best_text, c.config.diff_key(c_.ctx.baseline));
      c_.add_verdict(s, c.config, c.window_scale);
      ran = true;
    }
    return ran;
  }

  /// 7. Every output, from the journal's records alone (as `autotune report` would write them).
  TuneOutcome report(const RunSummary& summary) {
    TuneOutcome result;
    result.summary = summary;
    result.out_dir = c_.opts.out_dir;
    result.journal_path = c_.journal.path();
    result.best_json_path = (c_.out / "best.json").string();
    result.report_md_path = (c_.out / "report.md").string();
    write_reports(summary, c_.opts.out_dir);
    return result;
  }

  TuneCore c_;  ///< the run's state and the operations every phase measures through
};

}  // namespace

TuneOutcome run_tune(const TuneOptions& opts, std::ostream& progress, TuneSeams seams) {
  return TuneRun(opts, progress, std::move(seams)).run();
}

}  // namespace autotune
