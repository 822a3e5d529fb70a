#pragma once
// An in-process executor for the tuner's tests (tuner/exec/executor.h), as tests/support/fake_worker_main.cpp is an
// out-of-process worker: no process starts, every trial "runs" at once and ends when the tune loop waits for it —
// in start order, or in the order `finish_last_first` says (the latest started ends first) — with the result that
// `measure` gives its plan. Placements carry the slot and the trials beside it, as the real executor's do.
#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "knobs/protocol.h"
#include "tuner/exec/executor.h"
#include "tuner/tune/tune.h"

namespace autotune::testing {

class FakeExecutor : public Executor {
 public:
  using Measure = std::function<TrialResult(const TrialPlan&, TrialKind)>;
  /// What it did, kept past its life (the tune run owns and destroys the executor).
  struct Stats {
    int started = 0, most_in_flight = 0;
  };
  FakeExecutor(int slots, Measure measure, bool finish_last_first = false, std::shared_ptr<Stats> stats = nullptr)
      : slots_(slots), measure_(std::move(measure)), lifo_(finish_last_first),
        stats_(stats ? std::move(stats) : std::make_shared<Stats>()) {}

  std::string name() const override { return slots_ > 1 ? "local slots" : "local"; }
  int slots() const override { return slots_; }
  int in_flight() const override { return static_cast<int>(running_.size()); }
  bool has_free_slot() const override { return !whole_host_ && in_flight() < slots_; }
  void start(TrialJob job) override {
    if (!has_free_slot()) throw std::logic_error("fake executor: start() with every slot busy");
    std::set<int> used;
    for (const auto& r : running_) used.insert(r.slot);
    int slot = 0;
    while (used.count(slot)) ++slot;
    whole_host_ = job.whole_host;
    for (auto& r : running_) r.neighbours.insert(job.seq);
    Running r{std::move(job), job.whole_host ? -1 : slot, {}};
    for (const auto& o : running_) r.neighbours.insert(o.job.seq);
    running_.push_back(std::move(r));
    ++stats_->started;
    stats_->most_in_flight = std::max(stats_->most_in_flight, in_flight());
  }
  Finished wait_any() override {
    if (running_.empty()) throw std::logic_error("fake executor: wait_any() with nothing in flight");
    Running r = lifo_ ? running_.back() : running_.front();
    if (lifo_) running_.pop_back();
    else running_.pop_front();
    Finished f;
    f.seq = r.job.seq;
    f.seconds = 0.001;
    f.record.kind = r.job.kind;
    f.record.plan = r.job.plan;
    f.record.outcome = "exit 0";
    f.record.result = measure_(r.job.plan, r.job.kind);
    Placement p;
    p.host = "fake";
    p.executor = name();
    p.seq = r.job.seq;
    p.slot = r.slot;
    p.slots = slots_;
    p.neighbours.assign(r.neighbours.begin(), r.neighbours.end());
    f.record.result.placement = p;
    if (r.slot < 0) whole_host_ = false;
    return f;
  }
  void drain() override { running_.clear(); }

 private:
  struct Running {
    TrialJob job;
    int slot = 0;
    std::set<int> neighbours;
  };
  int slots_;
  Measure measure_;
  bool lifo_;
  std::deque<Running> running_;
  bool whole_host_ = false;
  std::shared_ptr<Stats> stats_;
};

/// A trial's result at `samples_per_s`: `windows` equal windows of 20 steps, finite losses, memory in range.
inline TrialResult steady_result(const TrialPlan& plan, double samples_per_s, std::int64_t batch) {
  TrialResult r;
  r.status = TrialStatus::ok;
  r.workload = plan.setup.workload;
  r.config = plan.config;
  r.device = "cpu";
  r.batch_size = batch;
  const std::int64_t samples = 20 * batch;
  for (int w = 0; w < std::max(3, plan.setup.measure.windows); ++w) r.windows.push_back({20, samples, samples / samples_per_s});
  for (int i = 0; i < 20; ++i) r.losses.push_back(2.0 - 0.01 * i);
  r.peak_rss_bytes = 100LL << 20;
  r.host_total_bytes = 16LL << 30;
  r.wall_seconds = 0.01;
  return r;
}

/// The seams of a run that needs neither a worker binary nor a process: the workload and machine given, trials
/// through a FakeExecutor of `slots` slots that measures with `measure`; what it did lands in `stats`.
inline TuneSeams fake_seams(WorkloadInfo workload, EnvFingerprint env, int slots, FakeExecutor::Measure measure, bool lifo,
                            std::shared_ptr<FakeExecutor::Stats> stats) {
  TuneSeams s;
  s.describe = [workload](const TrialSetup&) { return workload; };
  s.environment = [env] { return env; };
  s.executor = [=](const ExecutionPlan&, TrialRunner) -> std::unique_ptr<Executor> {
    return std::make_unique<FakeExecutor>(slots, measure, lifo, stats);
  };
  return s;
}

}  // namespace autotune::testing
