#include "tuner/memory/probes.h"

#include <algorithm>

namespace autotune {

std::vector<std::int64_t> probe_batches(std::int64_t smallest) {
  const std::int64_t p = std::max<std::int64_t>(1, smallest / 4);
  return {p, 2 * p, 4 * p};
}

TrialPlan memory_probe_plan(const TrialSetup& setup, Config c, std::int64_t batch) {
  TrialPlan plan;
  plan.setup = setup;
  // Probes measure, uncapped (the meter counts without refusing): a family whose every batch is too big
  // for the cap still gets its curves, and with them which term is too big (MemoryModel::cannot_fit_advice).
  plan.setup.memory_cap.clear();
  c.set("batch_size", std::to_string(batch));
  plan.config = std::move(c);
  plan.memory_probe.on = true;
  plan.memory_probe.steps = 3;
  return plan;
}

int probe_family(MemoryModel& model, const Config& c, const TrialSetup& setup, std::int64_t smallest_batch,
                 const std::function<const TrialRecord&(const TrialPlan&)>& run) {
  if (!model.needs_probes(c)) return 0;
  int ran = 0;
  for (std::int64_t b : probe_batches(smallest_batch)) {
    const TrialRecord& rec = run(memory_probe_plan(setup, c, b));
    ++ran;
    model.add(rec);
    if (rec.result.status != TrialStatus::ok) break;
  }
  return ran;
}

}  // namespace autotune
