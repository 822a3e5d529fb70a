#include "tuner/tune/parallel_search.h"

#include <fmt/format.h>

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "knobs/numbers.h"
#include "tuner/exec/interrupt.h"
#include "tuner/measures/statistics.h"
#include "tuner/search/stability.h"

namespace autotune {

namespace {

class ParallelSearch {
  /// What the parallel search measures: a config at a window scale.
  struct Flying {
    Config config;
    double scale = 1;
  };

 public:
  explicit ParallelSearch(TuneCore& run) : c_(run) {}

  void run() {
    interference();
    std::map<int, Flying> flying;  // seq → what it measures
    while (true) {
      fill_free_slots(flying);
      if (c_.trials.in_flight() == 0) {
        if (const int sig = stop_signal()) throw Interrupted(sig);
        if (held_ || !remeasures_.empty()) continue;  // nothing beside it now: it starts (after its probes)
        break;                                        // nothing to propose, nothing to re-measure
      }
      int seq = 0;
      const TrialRecord& rec = c_.trials.wait_any(&seq);
      const Flying fl = flying.at(seq);
      flying.erase(seq);
      if (alone_seq_ == seq) alone_seq_.reset();
      judge_in_flight(rec, fl);
    }
    // Nothing is in flight now: a re-measure the limits still defer runs alone, as the serial search's do.
    c_.end_search();
  }

  /// Starts trials while a slot is free: queued re-measures first, then the strategy's proposals. A proposal that
  /// must run alone (a data-parallel config, or one whose family needs memory probes) is held until nothing is in
  /// flight.
  void fill_free_slots(std::map<int, Flying>& flying) {
    const auto launch = [&](const Flying& f, TrialKind kind) {
      c_.history.mark_in_flight(f.config, f.scale);  // its verdict is not final: a strategy that reads it waits
      const int seq = c_.start(c_.plan_of(f.config, f.scale), kind);
      flying[seq] = f;
      return seq;
    };
    while (c_.trials.has_free_slot() && !stop_signal() && !alone_seq_) {
      if (!remeasures_.empty()) {
        // A config timed beside another program is timed again as the serial search times it: alone, once the others
        // end, after a wait for a quiet host (its neighbours in the slots would otherwise be the load it waits out).
        const Flying f = remeasures_.front();
        const auto& before = c_.index().attempts(f.config, f.scale);  // none yet at a longer window
        const bool busy = !before.empty() && failed_quiet_host(summarize_config(before, c_.limits));
        if ((c_.whole_host(f.config) || busy) && c_.trials.in_flight() > 0) break;  // alone, once the others end
        if (busy) {
          const bool quiet = c_.wait_for_quiet(), fits = c_.budget.fits(c_.reserve, 1, c_.trials.slots());
          c_.note_after_wait(f.config.diff_key(c_.ctx.baseline), quiet, fits);
          if (!fits) {  // the wait took what the re-measure needed
            remeasures_.pop_front();
            c_.add_verdict(summarize_config(c_.index().attempts(f.config, f.scale), c_.limits), f.config, f.scale);
            continue;
          }
        }
        remeasures_.pop_front();
        const int seq = launch(f, TrialKind::remeasure);
        if (busy) alone_seq_ = seq;  // nothing starts beside it until it ends
        continue;
      }
      if (!proposing_) break;
      std::optional<Proposal> p = held_ ? std::exchange(held_, std::nullopt) : c_.strategy->next(c_.history);
      if (!p || p->wait) {
        if (c_.trials.in_flight() == 0) proposing_ = false;  // else: ask again when a result is in
        break;
      }
      const Config cfg = c_.fold(*p);
      if (const ConfigSummary* known = c_.history.find(cfg); known && known->in_flight) continue;  // folded into one in flight
      if ((c_.whole_host(cfg) || (c_.memory && c_.memory->needs_probes(cfg))) && c_.trials.in_flight() > 0) {
        held_ = p;  // the probes measure memory, and a data-parallel trial runs, with nothing beside them
        break;
      }
      c_.record_phase(cfg, p->phase, p->phase);
      if (!c_.index().attempts(cfg, p->window_scale).empty()) {  // resumed: the journal has it
        c_.add_verdict(summarize_config(c_.index().attempts(cfg, p->window_scale), c_.limits), cfg, p->window_scale);
        continue;
      }
      if (c_.skipped_for_memory(cfg)) continue;
      if (!c_.budget.fits(c_.reserve, c_.trials.in_flight() + 1, c_.trials.slots())) {
        c_.stop_proposing(p->config);
        proposing_ = false;
        break;
      }
      launch(Flying{cfg, p->window_scale}, TrialKind::search);
    }
  }

  /// A trial of the parallel search has ended: its config is judged (a noisy one queued to be re-measured, staying in
  /// flight so that the strategy waits for its verdict).
  void judge_in_flight(const TrialRecord& rec, const Flying& fl) {
    c_.update_limits();
    for (const DeferredRemeasure& d : c_.take_deferred())  // beside the others
      queue_remeasure(d.config, d.scale, summarize_config(c_.index().attempts(d.config, d.scale), c_.limits));
    const auto& attempts = c_.index().attempts(fl.config, fl.scale);
    const AttemptChain chain = attempt_chain(c_.index(), fl.config, fl.scale);
    const ConfigSummary s = summarize_config(chain, c_.limits);
    c_.progress.trial(rec, s, c_.best_text, fl.config.diff_key(c_.ctx.baseline) + slot_tag(rec));
    if (c_.limits_settled && wants_remeasure(s, chain.attempts.size(), c_.limits) &&
        c_.budget.fits(c_.reserve, c_.trials.in_flight() + 1, c_.trials.slots())) {
      queue_remeasure(fl.config, fl.scale, s);
      return;
    }
    if (!c_.limits_settled && wants_remeasure(s, attempts.size(), c_.opts.stability))
      c_.defer_remeasure({fl.config, fl.scale, c_.reserve});
    c_.add_verdict(s, fl.config, fl.scale);
  }

  /// Queues a re-measure of `cfg`, whose verdict at `scale` is `s`: at a longer window for an input-bound config whose
  /// windows vary (remeasure_scale), else at `scale`.
  void queue_remeasure(const Config& cfg, double scale, const ConfigSummary& s) {
    const double longer = remeasure_scale(s, scale, c_.limits);
    if (longer != scale) c_.note_longer_windows(cfg.diff_key(c_.ctx.baseline), s, scale, longer);
    remeasures_.push_back({cfg, longer});
  }

  /// A parallel run measures what a slot costs its neighbours: the baseline in every slot at once,
  /// against the baseline's own trial, which ran alone (slot 0). The ratio goes to the report.
  void interference() {
    if (!c_.index().interference().empty() || stop_signal()) return;
    const auto& base = c_.index().attempts(c_.ctx.baseline, 1.0);
    if (base.empty() || base.front()->result.status != TrialStatus::ok) return;
    for (int i = 0; i < c_.trials.slots(); ++i) c_.start(c_.plan_of(c_.ctx.baseline, 1.0), TrialKind::interference);
    std::vector<double> beside;
    std::int64_t first = 0, last = 0;  // the copies' trial ids
    while (c_.trials.in_flight() > 0) {
      const TrialRecord& rec = c_.trials.wait_any();
      first = first == 0 ? rec.id : std::min(first, rec.id);
      last = std::max(last, rec.id);
      if (rec.result.status == TrialStatus::ok) beside.push_back(median(rec.result.throughputs()));
    }
    const double alone = median(base.front()->result.throughputs());
    if (beside.empty() || alone <= 0) {
      c_.progress.line(first, last, "interference: no copy of the baseline finished; not measured");
      return;
    }
    c_.progress
        .line(first, last,
              fmt::
                  format("interference: the baseline alone {} samples/s; in each of {} slots at once {} (median) = {:.2f}× alone",
                         with_commas(alone), c_.trials.slots(), with_commas(median(beside)), median(beside) / alone));
  }

  /// "  [slot 1, beside 2]" for a progress line of a parallel run.
  std::string slot_tag(const TrialRecord& rec) const {
    if (!rec.result.placement || c_.trials.slots() <= 1) return "";
    if (rec.result.placement->slot < 0) return "  [whole host, alone]";
    return fmt::format("  [slot {}{}]", rec.result.placement->slot,
                       rec.result.placement->alone() ? ", alone"
                                                     : fmt::format(", beside {}", rec.result.placement->neighbours.size()));
  }

 private:
  TuneCore& c_;
  std::deque<Flying> remeasures_;  ///< queued re-measures (a noisy verdict, or one the limits deferred): next free slot
  std::optional<int> alone_seq_;   ///< a busy config's re-measure in flight: it runs with nothing beside it
  std::optional<Proposal> held_;   ///< a proposal that runs alone, held until nothing is in flight
  bool proposing_ = true;          ///< whether the strategy still proposes
};

}  // namespace

void search_in_parallel(TuneCore& run) { ParallelSearch(run).run(); }

}  // namespace autotune
