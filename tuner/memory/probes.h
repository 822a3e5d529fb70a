#pragma once
// Memory probes: the short untimed trials that give a family its first points (tuner/memory/model.h).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "knobs/protocol.h"
#include "knobs/record.h"
#include "tuner/memory/model.h"

namespace autotune {

/// The batches a family is probed at: p, 2p and 4p with p = max(1, smallest / 4) — small, so a probe
/// costs little, and spread, so the fit sees the slope.
std::vector<std::int64_t> probe_batches(std::int64_t smallest);

/// A probe of `c` at `batch`: `setup` as the run's but uncapped (the tuner compares with the cap), 3
/// optimizer steps, no windows.
TrialPlan memory_probe_plan(const TrialSetup& setup, Config c, std::int64_t batch);

/// Runs the probes of `c`'s family unless it has two batch sizes observed already (MemoryModel::needs_probes): each probe through `run` (a fresh
/// worker; the caller journals it) and into the model, smallest batch first. A probe that runs out of
/// memory ends the family's probing (larger ones would too); one that fails leaves the family
/// unpredicted and the caller goes on. Returns the number of probes run.
int probe_family(MemoryModel& model, const Config& c, const TrialSetup& setup, std::int64_t smallest_batch,
                 const std::function<const TrialRecord&(const TrialPlan&)>& run);

}  // namespace autotune
