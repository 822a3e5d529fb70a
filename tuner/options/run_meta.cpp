#include "tuner/options/run_meta.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "knobs/memory.h"
#include "knobs/protocol.h"

namespace autotune {

RunMeta read_run_meta(const Journal& journal, double budget) {
  RunMeta meta;
  meta.started_at = journal.meta("created_at");
  meta.finished_at = journal.meta("finished_at");
  const std::string elapsed = journal.meta("elapsed_seconds"), stored_budget = journal.meta("budget_seconds");
  meta.elapsed_seconds = elapsed.empty() ? 0 : std::stod(elapsed);
  meta.budget_seconds = stored_budget.empty() ? budget : std::stod(stored_budget);
  if (const std::string t = journal.meta("trial_seconds"); !t.empty()) meta.trial_seconds = std::stod(t);
  if (const std::string u = journal.meta("unexplored"); !u.empty())
    for (const auto& c : nlohmann::json::parse(u)) meta.unexplored.push_back(c.get<Config>());
  if (const std::string p = journal.meta("phases"); !p.empty())
    meta.phases = nlohmann::json::parse(p).get<std::map<std::string, std::string>>();
  if (const std::string f = journal.meta("folded"); !f.empty()) meta.folded = folded_from_json(nlohmann::json::parse(f));
  meta.busy_at_end = journal.meta("busy_at_end") == "1";
  if (const std::string m = journal.meta("memory"); !m.empty()) meta.memory = nlohmann::json::parse(m).get<MemoryReport>();
  return meta;
}

void store_run_end(Journal& journal, const RunMeta& meta) {
  journal.set_meta("finished_at", meta.finished_at);
  journal.set_meta("elapsed_seconds", fmt::format("{:.3f}", meta.elapsed_seconds));
  journal.set_meta("budget_seconds", fmt::format("{:.3f}", meta.budget_seconds));
  journal.set_meta("trial_seconds", fmt::format("{:.3f}", meta.trial_seconds));
  journal.set_meta("unexplored", nlohmann::json(meta.unexplored).dump());
  journal.set_meta("busy_at_end", meta.busy_at_end ? "1" : "");
}

void store_phases(Journal& journal, const std::map<std::string, std::string>& phases) {
  journal.set_meta("phases", nlohmann::json(phases).dump());
}
void store_folded(Journal& journal, const std::vector<FoldedConfig>& folded) {
  journal.set_meta("folded", folded_to_json(folded).dump());
}
void store_memory(Journal& journal, const MemoryReport& memory) { journal.set_meta("memory", nlohmann::json(memory).dump()); }

nlohmann::json folded_to_json(const std::vector<FoldedConfig>& f) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& x : f) j.push_back({{"proposed", x.proposed}, {"runs_as", x.runs_as}, {"reasons", x.reasons}});
  return j;
}

std::vector<FoldedConfig> folded_from_json(const nlohmann::json& j) {
  std::vector<FoldedConfig> f;
  for (const auto& x : j)
    f.push_back({x.at("proposed").get<Config>(), x.at("runs_as").get<Config>(), x.at("reasons").get<std::vector<std::string>>()});
  return f;
}

}  // namespace autotune
