#pragma once
// The held-out loss of a converge run (docs/time-to-train.md, "A held-out target"): how often the runs evaluate it,
// and what the comparison makes of the curves — each candidate's time to a held-out loss against the baseline's, and
// whether the fastest to the training loss is the fastest to the held-out one (reports/held_out_summary.h).
#include <cstdint>
#include <string>
#include <vector>

#include "knobs/record.h"
#include "knobs/worker_info.h"
#include "reports/converge_summary.h"

namespace autotune {

/// Samples trained between two held-out evaluations when the user names none: twice the training loss's smoothing
/// window — a point per two windows resolves the time to a loss about as finely as the smoothed curve does, and with
/// the default 1,024 held-out samples an evaluation (a forward pass, about a third of a training step's work per sample)
/// costs about a sixth of the training between two of them, kept off the training clock.
std::int64_t default_held_out_every(std::int64_t smooth_samples);

/// Throws UsageError, one line, when `val_data` is given for a workload whose worker cannot evaluate it (only the Python
/// worker evaluates held-out data): converge's and lr-sweep's --val-data, refused before anything trains.
void check_val_data_worker(const std::string& val_data, const WorkloadInfo& w);

/// `s.held_out` from the runs' held-out curves (ConvergeRun::held_out, aligned with `records`): the source and size
/// from the records, each run's lowest and final held-out loss, the baseline's spread, each comparison's measured
/// ratio at the lowest loss both sides reached, and the fastest to each loss. `s.held_out.every` is kept (the header's).
void add_held_out(ConvergeSummary& s, const std::vector<TrialRecord>& records);

}  // namespace autotune
