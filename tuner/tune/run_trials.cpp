#include "tuner/tune/run_trials.h"

#include <algorithm>
#include <stdexcept>

#include "tuner/exec/interrupt.h"

namespace autotune {

RunTrials::RunTrials(Journal& journal, std::unique_ptr<Executor> executor, const MeasureOptions& measure, Budget& budget)
    : journal_(journal), executor_(std::move(executor)), budget_(budget), index_(measure) {}

void RunTrials::load(std::vector<TrialRecord> records) {
  for (auto& r : records) {
    budget_.add_trial(r.result.wall_seconds);
    done_.push_back(std::move(r));
    index_.add(done_.back());
    if (on_commit) on_commit(done_.back(), true);
  }
  next_seq_ = static_cast<int>(done_.size());
  for (const auto& r : done_)
    if (r.result.placement) next_seq_ = std::max(next_seq_, r.result.placement->seq);
}

int RunTrials::start(const TrialPlan& plan, TrialKind kind, bool whole_host) {
  if (const int sig = stop_signal()) throw Interrupted(sig);  // no new trial once asked to stop
  executor_->start(TrialJob{plan, kind, ++next_seq_, whole_host});
  return next_seq_;
}

const TrialRecord& RunTrials::wait_any(int* seq) {
  Finished f = executor_->wait_any();
  if (seq) *seq = f.seq;
  if (f.error) {
    executor_->drain();
    std::rethrow_exception(f.error);
  }
  TrialRecord rec = std::move(f.record);
  if (rec.kind != TrialKind::noise) budget_.add_trial(f.seconds);
  rec.id = journal_.append(rec);
  done_.push_back(std::move(rec));
  index_.add(done_.back());
  if (on_commit) on_commit(done_.back(), false);
  return done_.back();
}

const TrialRecord& RunTrials::run_alone(const TrialPlan& plan, TrialKind kind, bool whole_host) {
  if (const int sig = stop_signal()) throw Interrupted(sig);
  if (executor_->in_flight() != 0) throw std::logic_error("a trial that runs alone was started beside others");
  start(plan, kind, whole_host);
  return wait_any();
}

}  // namespace autotune
