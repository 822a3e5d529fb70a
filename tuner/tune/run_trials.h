#pragma once
// A tuning run's trials: each started through the executor (tuner/exec/executor.h) in its own folder
// trials/NNNN, and committed to the journal the moment it ends — by the calling thread alone, the journal's only
// writer — then kept and indexed (tuner/measures/record_index.h) for the run's verdicts. A trial that could not be
// measured at all (interrupted, no room on the disk) stops the run: the others in flight are waited for and left
// out of the journal, so --resume runs them again.
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "knobs/record.h"
#include "tuner/measures/budget.h"
#include "tuner/exec/executor.h"
#include "tuner/measures/journal.h"
#include "tuner/measures/record_index.h"

namespace autotune {

class RunTrials {
 public:
  /// `budget` learns each trial's wall time (the noise-scale trial's length is its own share, not a trial's).
  RunTrials(Journal& journal, std::unique_ptr<Executor> executor, const MeasureOptions& measure, Budget& budget);

  /// The journal's trials (a resumed run): kept, indexed and timed; trial folders go on after the highest it holds
  /// (a folder whose trial was in flight when the run stopped holds no journaled trial: it runs again, from
  /// scratch, in a new folder or its own).
  void load(std::vector<TrialRecord> records);

  /// Starts a trial in a free slot (every slot: `whole_host`); its folder number. Throws Interrupted when the run
  /// was asked to stop.
  int start(const TrialPlan& plan, TrialKind kind, bool whole_host = false);
  /// The next trial to end, committed to the journal; `seq`, when given, gets its folder number.
  const TrialRecord& wait_any(int* seq = nullptr);
  /// One trial with nothing else in flight (the serial phases).
  const TrialRecord& run_alone(const TrialPlan& plan, TrialKind kind, bool whole_host = false);

  int slots() const { return executor_->slots(); }
  int in_flight() const { return executor_->in_flight(); }
  bool has_free_slot() const { return executor_->has_free_slot(); }

  const RecordIndex& index() const { return index_; }
  /// Every trial of the run, in completion order.
  const std::deque<TrialRecord>& all() const { return done_; }
  /// Called with each trial as it is committed (and each loaded one, `loaded` true).
  std::function<void(const TrialRecord&, bool loaded)> on_commit;

 private:
  Journal& journal_;
  std::unique_ptr<Executor> executor_;
  Budget& budget_;
  std::deque<TrialRecord> done_;  ///< a deque, so indexed records never move
  RecordIndex index_;
  int next_seq_ = 0;  ///< the last trial folder handed out (trials/NNNN)
};

}  // namespace autotune
