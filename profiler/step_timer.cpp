#include "profiler/step_timer.h"

namespace autotune {

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::data:
      return "data";
    case Phase::h2d:
      return "h2d";
    case Phase::forward:
      return "forward";
    case Phase::backward:
      return "backward";
    case Phase::optimizer:
      return "optimizer";
    case Phase::other:
      return "other";
    case Phase::count:
      break;
  }
  return "?";
}

void StepTimer::reset() {
  total_.fill(0);
  steps_ = 0;
}

void StepTimer::begin_step() {
  segment_ = 0;
  if (hook_) hook_(segment_);
  last_ = clock_.now_seconds();
}

void StepTimer::mark(Phase p) {
  const double t = clock_.now_seconds();
  total_[static_cast<int>(p)] += t - last_;
  if (record_) intervals_.push_back({p, last_, t});
  if (hook_) {  // a traced step: the hook's own time (a CUPTI push) is not the next phase's
    hook_(++segment_);
    last_ = clock_.now_seconds();
  } else {
    last_ = t;
  }
}

void StepTimer::end_step() {
  mark(Phase::other);
  ++steps_;
}

double StepTimer::mean_ms(Phase p) const {
  return steps_ == 0 ? 0.0 : 1e3 * total_[static_cast<int>(p)] / static_cast<double>(steps_);
}

}  // namespace autotune
