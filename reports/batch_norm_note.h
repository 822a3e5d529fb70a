#pragma once
// The reports' caveats for a model with batch norms whose forwards see another batch than the user's: converge's
// training losses are then read under different batch statistics, so the held-out loss (eval mode, running statistics)
// is the like-for-like comparison (docs/time-to-train.md, "Batch norm, not the rate"); the tune report's answer (a),
// the user's batch as micro-batches, trains with the micro-batch's statistics.
#include <cstdint>
#include <string>

#include "reports/converge_summary.h"

namespace autotune {

/// One sentence naming the candidates whose forward batch differs from the baseline's, or "" where the model has no
/// batch norm (WorkloadInfo::batch_norms) or every run's forward sees the baseline's batch (grad_accum and ranks change
/// the optimizer's batch, not the forward's).
std::string batch_norm_note(const ConvergeSummary& s);

/// The tune report's caveat on answer (a), the user's batch of `user_batch` trained as micro-batches of `micro_batch`:
/// "" where the two are equal or the model has no batch norm. A model whose batch norms were not counted
/// (WorkloadInfo::batch_norms -1: a plugin that does not say, a journal from before the count) gets it where it has
/// convolutions, worded as a condition.
std::string micro_batch_note(const WorkloadInfo& w, std::int64_t user_batch, std::int64_t micro_batch);

}  // namespace autotune
