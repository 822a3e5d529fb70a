#pragma once
// Answer (c), the batch ramp, in the reports' words (docs/time-to-train.md, "A batch ramp"): the sentence beside answers
// (a) and (b), and the phases as table rows. Plain text; each report formats it.
#include <functional>
#include <string>
#include <vector>

#include "reports/summary.h"
#include "reports/train_loop.h"

namespace autotune {

/// "(c) A batch ramp — …": the schedule, where it switches, the predicted time of (a), (b), (c) and the baseline over
/// the run, and whether it beats (b) across the band; or why there is none. "" outside the time objective. `code` wraps
/// a config as the report formats it.
std::string ramp_text(const RunSummary& s, const std::function<std::string(const std::string&)>& code);

/// One phase of the ramp as a table row.
struct RampRow {
  std::string phase, batch, span, noise, rate, time, lr;
};
std::vector<RampRow> ramp_rows(const RunSummary& s);

/// The ramp's phases as a training loop takes them (reports/train_loop.h): each phase's first own sample, its grad_accum
/// and its learning rate: the rate an lr-sweep measured at the phase's batch where one prices it, else the rule's (SGD-like:
/// the user's × r; otherwise × √r). Empty without a ramp.
std::vector<RampStep> ramp_steps(const RunSummary& s);


}  // namespace autotune
