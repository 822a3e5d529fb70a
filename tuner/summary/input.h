#pragma once
// What each part of a run's summary reads (tuner/summary/summarize.cpp calls them in order): the run's context,
// its records and the configs' verdicts. Internal to the summary.
#include <vector>

#include "reports/summary.h"
#include "tuner/search/ranking.h"
#include "tuner/measures/record_index.h"
#include "tuner/options/run_context.h"

namespace autotune {

struct SummaryInput {
  const RunContext& ctx;
  const RecordIndex& index;
  const History& history;
};

}  // namespace autotune
