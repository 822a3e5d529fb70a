#pragma once
// Answer (c), a batch ramp (docs/time-to-train.md, "A batch ramp"): among the measured configs that differ only in
// grad_accum (one micro-batch, the same knobs — what a training loop can switch between mid-run), the cheapest schedule
// over the user's run along the noise scale's fitted growth (knobs/batch_ramp.h), priced against answers (a) and (b).
#include "reports/summary.h"
#include "tuner/summary/input.h"

namespace autotune {

/// Fills summary.answer_c from the summary's configs, answers (a) and (b) and its noise scale along the run. `lr` is
/// the user's learning rate. A run without a priced trajectory (or without two grad_accum of one config) gets a note.
void add_batch_ramp(RunSummary& summary, const Objective& o, double lr);

}  // namespace autotune
