#pragma once
// A tuning run's progress lines: one plain line per finished trial (the same in a TTY, a log and CI) — the trial's id
// (the journal's, the report's and trials/NNNN/'s number), what ran, its result, the best so far and the budget left —
// and indented notes that are not trials.
#include <cstdint>
#include <iosfwd>
#include <string>

#include "knobs/record.h"
#include "tuner/measures/budget.h"

namespace autotune {

class Progress {
 public:
  Progress(std::ostream& out, const Budget& budget) : out_(out), budget_(budget) {}
  /// A measured trial: its result (`s`, the config's verdict so far), the best so far and what ran.
  void trial(const TrialRecord& rec, const ConfigSummary& s, const std::string& best, const std::string& what_ran);
  /// A line for a finished trial that is not a measurement (reference, confirmation, trace): `[id]`.
  void line(std::int64_t id, const std::string& s);
  /// A line for trials `first`..`last` that ended together (the interference copies, a family's memory probes): `[a-b]`.
  void line(std::int64_t first, std::int64_t last, const std::string& s);
  /// A line that is not a trial.
  void note(const std::string& s);
  /// The console itself, for a phase that prints its own lines (tune --lr-sweep's sweep).
  std::ostream& stream() { return out_; }

 private:
  std::ostream& out_;
  const Budget& budget_;
};

}  // namespace autotune
