#pragma once
// A tuning run's facts that are not trials, kept in the journal's meta table beside them: when it started and
// ended, its budget, what the search did not reach, which phase proposed each config, the proposals that ran as
// another config and the memory model's decisions. The live run writes them as they change; the summary reads
// them back (tuner/summarize.h), so `autotune report DIR` sees what the run saw.
#include <nlohmann/json_fwd.hpp>

#include <map>
#include <string>
#include <vector>

#include "knobs/config.h"
#include "reports/summary.h"
#include "tuner/measures/journal.h"

namespace autotune {

/// Run facts that are not trials; stored in the journal's meta table.
struct RunMeta {
  std::string started_at, finished_at;  ///< finished_at "" = interrupted
  double elapsed_seconds = 0, budget_seconds = 0;
  double trial_seconds = 0;  ///< the tuner's mean wall time of a trial (tuner/measures/budget.h), as the run's own lines used it
  std::vector<Config> unexplored;
  std::map<std::string, std::string> phases;  ///< config key → the search phase that proposed it
  std::vector<FoldedConfig> folded;           ///< proposals that ran as another config (meta.folded)
  MemoryReport memory;                        ///< the memory model's decisions (meta.memory; docs/memory.md)
  /// The run stopped timing busy configs again because the host was still busy after its last wait, with budget
  /// left (meta.busy_at_end): what kept them at one trial was the host, not the budget.
  bool busy_at_end = false;
};

/// Everything the journal holds of RunMeta (absent keys stay empty; budget_seconds absent: `budget`).
RunMeta read_run_meta(const Journal& journal, double budget);

/// The run's end as the reports read it: finished_at, elapsed_seconds, budget_seconds, trial_seconds and unexplored.
void store_run_end(Journal& journal, const RunMeta& meta);
/// meta.phases, meta.folded and meta.memory, each written whenever it changes.
void store_phases(Journal& journal, const std::map<std::string, std::string>& phases);
void store_folded(Journal& journal, const std::vector<FoldedConfig>& folded);
void store_memory(Journal& journal, const MemoryReport& memory);

/// meta.folded: [{"proposed": {knob: value}, "runs_as": {…}, "reasons": ["…"]}, …].
nlohmann::json folded_to_json(const std::vector<FoldedConfig>& f);
std::vector<FoldedConfig> folded_from_json(const nlohmann::json& j);

}  // namespace autotune
