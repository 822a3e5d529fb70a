#pragma once
// A tuning run's progress lines: one plain line per finished trial (the same in a TTY, a log and CI) — trial count,
// what ran, its result, the best so far and the budget left — and indented notes that are not trials.
#include <iosfwd>
#include <string>

#include "knobs/record.h"
#include "tuner/budget.h"

namespace autotune {

class Progress {
 public:
  Progress(std::ostream& out, const Budget& budget) : out_(out), budget_(budget) {}
  /// A measured trial: its result (`s`, the config's verdict so far), the best so far and what ran.
  void trial(const TrialRecord& rec, const ConfigSummary& s, const std::string& best, const std::string& what_ran);
  /// A line for a finished trial that is not a measurement (reference, confirmation, trace).
  void line(const std::string& s);
  /// A line that is not a trial.
  void note(const std::string& s);

 private:
  std::ostream& out_;
  const Budget& budget_;
  int done_ = 0;
};

}  // namespace autotune
