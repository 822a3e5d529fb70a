#pragma once
#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <functional>
#include <vector>

namespace autotune {

/// The phases of one training step, in order. `other` = everything between phases (loss read, …).
enum class Phase { data, h2d, forward, backward, optimizer, other, count };
const char* phase_name(Phase p);

/// Monotonic clock behind a seam so tests can drive time.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual double now_seconds() const = 0;
};
class SteadyClock : public Clock {
 public:
  double now_seconds() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
};

/// Host wall-time per phase, summed over the steps since reset(). CPU path: steady clock.
/// (On a GPU the phases also need CUDA events; host time alone then measures launch time.)
///
///   timer.begin_step(); timer.mark(Phase::data); … timer.mark(Phase::optimizer); timer.end_step();
/// mark(P) attributes the time since the previous mark (or begin_step) to phase P.
class StepTimer {
 public:
  explicit StepTimer(const Clock& clock) : clock_(clock) {}
  void reset();
  void begin_step();
  void mark(Phase p);
  /// Attributes the rest of the step to Phase::other and counts the step.
  void end_step();

  std::int64_t steps() const { return steps_; }
  /// Traced trials: keep every phase interval (clock seconds) until take_intervals() drains them.
  struct Interval {
    Phase phase;
    double t0, t1;
  };
  void record_intervals(bool on) { record_ = on; }
  /// Called with the segment index (0 at begin_step, then after each mark) when a phase begins:
  /// traced trials push a CUPTI external correlation id per segment from here.
  void set_segment_hook(std::function<void(int)> f) { hook_ = std::move(f); }
  std::vector<Interval> take_intervals() { return std::move(intervals_); }
  /// Mean milliseconds per step spent in `p` (0 when no step was timed).
  double mean_ms(Phase p) const;
  double total_seconds(Phase p) const { return total_[static_cast<int>(p)]; }

 private:
  const Clock& clock_;
  std::array<double, static_cast<int>(Phase::count)> total_{};
  double last_ = 0;
  std::int64_t steps_ = 0;
  bool record_ = false;
  int segment_ = 0;
  std::function<void(int)> hook_;
  std::vector<Interval> intervals_;
};

}  // namespace autotune
