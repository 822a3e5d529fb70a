#pragma once
// A run's time budget: how long it has run, and whether more trials fit in what is left, estimated from the
// trials it has timed so far (docs/search.md: the search keeps room for the confirmation at the end).
#include <chrono>

namespace autotune {

class Budget {
 public:
  explicit Budget(double seconds) : seconds_(seconds), t0_(std::chrono::steady_clock::now()) {}

  double seconds() const { return seconds_; }
  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }
  double left() const { return seconds_ - elapsed(); }

  /// A finished trial's wall time into the per-trial estimate.
  void add_trial(double seconds) {
    trial_seconds_ += seconds;
    ++trials_;
  }
  /// Keeps `seconds` of what is left for work after the trials (tune --lr-sweep): the trials see a smaller budget.
  void set_aside(double seconds) { seconds_ -= seconds; }
  /// The average wall time of the trials timed so far (0 before the first).
  double trial_seconds() const { return trials_ ? trial_seconds_ / trials_ : 0.0; }
  /// Whether `trials` more trials of the average length, run one after another, and `side_by_side` more in
  /// `slots` slots fit in what is left.
  bool fits(int trials, int side_by_side = 0, int slots = 1) const;

 private:
  double seconds_;
  std::chrono::steady_clock::time_point t0_;
  double trial_seconds_ = 0;
  int trials_ = 0;
};

/// Trials the confirmation keeps back from the search: each candidate and the baseline once per round, plus the fp32
/// references (at least one).
int confirmation_reserve(int confirm_top, int confirm_rounds);
/// The budget, in whole minutes, that fits the baseline, a search of four configs and the confirmation's `reserve` at
/// `per_trial` seconds a trial: what the run says a short budget should grow to (the same figure up front and after).
double search_budget_minutes(double per_trial, int reserve);

}  // namespace autotune
