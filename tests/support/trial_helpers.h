#pragma once
#include <cstdint>
#include <string>

#include "knobs/protocol.h"
#include "knobs/record.h"

namespace autotune::testing {

/// What the worker observed after applying `knob` (result.applied), or "(not recorded)".
inline std::string observed(const TrialResult& r, const std::string& knob) {
  for (const auto& a : r.applied)
    if (a.knob == knob) return a.observed;
  return "(not recorded)";
}

/// A finished converge run of a config at `batch` on data order `order`, with an empty curve for the test to fill.
inline TrialRecord converge_record(std::int64_t batch, std::int64_t order) {
  TrialRecord r;
  r.id = 1;
  r.kind = TrialKind::converge;
  r.plan.config.set("batch_size", std::to_string(batch));
  r.plan.setup.data_order = order;
  r.result.status = TrialStatus::ok;
  r.result.batch_size = batch;
  r.result.converge = ConvergeRecord();
  return r;
}

}  // namespace autotune::testing
