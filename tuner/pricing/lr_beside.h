#pragma once
// An lr-sweep's answer beside the tune run it swept (`autotune lr-sweep --from-run`; docs/time-to-train.md, "Priced at
// the measured rate"): TUNE_DIR/lr-sweep-your-batch.json and lr-sweep-changed-batch.json, which `autotune report
// TUNE_DIR` reads to price (a) and (b) at their measured rates. A sweep belongs to the batch it trained; one whose batch
// is no longer the one it names (a resumed tune moved (b)) is left out, said in one line.
#include <cstdint>
#include <string>

#include "reports/batch_ramp_summary.h"
#include "reports/lr_measured.h"
#include "reports/lr_sweep_summary.h"

namespace autotune {

/// Writes the sweep's answer beside TUNE_DIR (an earlier one at the same batch kept, renamed with its date); returns the path.
std::string write_lr_sweep_beside(const std::string& tune_dir, const LrSweepSummary& s, const std::string& date);

/// The sweeps beside a tune run whose user batch is `user_batch` and whose answer (b) is at `b_batch` (0: none), and (b)
/// over (a) priced at their rates from the rule's price `b_time_ratio` (0: (b) is not priced).
LrMeasured read_lr_sweeps_beside(const std::string& tune_dir, std::int64_t user_batch, std::int64_t b_batch,
                                 double b_time_ratio);

/// Answer (c) `r` priced at the rates the sweeps in `m` measured: a phase at a sweep's batch (one that prices it) at that
/// sweep's best rate, its time ÷ the sweep's gain; the other phases at the rule's rate. (a) and (b) are moved by their own
/// sweeps' gains (1 where none prices them). Empty when there is no ramp or no sweep prices any phase.
RampAtMeasured ramp_at_measured_rates(const RampAnswer& r, const LrMeasured& m);

}  // namespace autotune
