#pragma once
// The memory policy of a tuning run (--memory-cap with --memory-model on; docs/memory.md): before a config runs,
// probe its family when the model has too few points, and skip it when it is predicted not to fit — each decision
// recorded in the run's MemoryReport (the report's Memory section) with the estimate and the reason. The tune loop
// asks the gate; it holds no memory wording of its own.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "knobs/memory.h"
#include "knobs/protocol.h"
#include "knobs/record.h"
#include "reports/summary.h"
#include "tuner/memory/model.h"

namespace autotune {

class MemoryGate {
 public:
  /// `report`: what the journal holds already (a resumed run goes on from it). `smallest_batch`: the smallest batch
  /// the space lists (else the workload's); probes run at a quarter, half and all of it.
  MemoryGate(MemoryModelOptions options, std::map<std::string, std::string> defaults, std::int64_t smallest_batch,
             MemoryReport report);

  /// Whether `c`'s family has fewer than two batch sizes observed: its first config waits for probes, alone.
  bool needs_probes(const Config& c) const { return model_.needs_probes(c); }

  /// Runs the probes of `c`'s family when it needs them, each through `run` (one trial alone; the caller journals
  /// it), and returns the progress line that says what they found ("" when none ran).
  std::string probe(const Config& c, const TrialSetup& setup, const std::function<const TrialRecord&(const TrialPlan&)>& run);

  /// The gate's answer for a config about to run: skip it (its upper prediction above the capacity less the margin,
  /// or a batch at or above one that ran out of memory), with the estimate and the reason. Recorded in the report
  /// either way (one decision per config). Probe first.
  struct Decision {
    bool skip = false;
    MemoryEstimate estimate;  ///< estimate.reason: why it is skipped
    std::int64_t batch = 0;
  };
  Decision decide(const Config& c);

  /// A finished trial into the fit; the model's new misses, each a sentence (also added to the report).
  std::vector<std::string> add(const TrialRecord& rec);
  /// A trial the journal held already (a resumed run) into the fit; its misses are in the report already.
  void replay(const TrialRecord& rec) { model_.add(rec); }

  /// The largest of `candidates` that `c`'s family is predicted to fit (0: none, -1: unknown); the batch search
  /// starts there.
  std::int64_t largest_fitting(const Config& c, const std::vector<std::int64_t>& candidates, std::int64_t max_batch) const {
    return model_.largest_fitting(c, candidates, max_batch);
  }

  const MemoryReport& report() const { return report_; }

 private:
  MemoryModel model_;
  std::map<std::string, std::string> defaults_;
  std::int64_t smallest_;
  MemoryReport report_;
};

}  // namespace autotune
