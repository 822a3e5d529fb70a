#pragma once
// What each part of a run's summary reads (tuner/summary/summarize.cpp calls them in order): the run's context,
// its records and the configs' verdicts. Internal to the summary.
#include <vector>

#include "reports/summary.h"
#include "tuner/ranking.h"
#include "tuner/record_index.h"
#include "tuner/run_context.h"

namespace autotune {

struct SummaryInput {
  const RunContext& ctx;
  const RecordIndex& index;
  const History& history;
};

}  // namespace autotune
