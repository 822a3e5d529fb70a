#pragma once
// converge's caveat for a model with batch norms whose runs' forwards see different batches: their training losses
// are read under different batch statistics, so the held-out loss (eval mode, running statistics) is the like-for-like
// comparison (docs/time-to-train.md, "Batch norm, not the rate").
#include <string>

#include "reports/converge_summary.h"

namespace autotune {

/// One sentence naming the candidates whose forward batch differs from the baseline's, or "" where the model has no
/// batch norm (WorkloadInfo::batch_norms) or every run's forward sees the baseline's batch (grad_accum and ranks change
/// the optimizer's batch, not the forward's).
std::string batch_norm_note(const ConvergeSummary& s);

}  // namespace autotune
