#include "knobs/record.h"

#include <stdexcept>

namespace autotune {

std::string to_string(TrialKind k) {
  switch (k) {
    case TrialKind::baseline:
      return "baseline";
    case TrialKind::search:
      return "search";
    case TrialKind::remeasure:
      return "remeasure";
    case TrialKind::reference:
      return "reference";
    case TrialKind::confirm:
      return "confirm";
    case TrialKind::ablation:
      return "ablation";
    case TrialKind::effect:
      return "effect";
    case TrialKind::trace:
      return "trace";
    case TrialKind::noise:
      return "noise";
    case TrialKind::converge:
      return "converge";
    case TrialKind::memory:
      return "memory";
    case TrialKind::interference:
      return "interference";
  }
  return "search";
}

TrialKind trial_kind_from_string(const std::string& s) {
  for (auto k : {TrialKind::baseline, TrialKind::search, TrialKind::remeasure, TrialKind::reference, TrialKind::confirm,
                 TrialKind::ablation, TrialKind::effect, TrialKind::trace, TrialKind::noise, TrialKind::converge, TrialKind::memory,
                 TrialKind::interference})
    if (to_string(k) == s) return k;
  throw std::invalid_argument("unknown trial kind '" + s + "'");
}

std::vector<double> pooled_windows(const std::vector<const TrialRecord*>& runs) {
  std::vector<double> t;
  for (const auto* r : runs) {
    if (r->result.status != TrialStatus::ok) return {};
    for (double x : r->result.throughputs()) t.push_back(x);
  }
  return t;
}

int config_index(const std::vector<ConfigSummary>& configs, const Config& c) {
  for (size_t j = 0; j < configs.size(); ++j)
    if (configs[j].config == c) return static_cast<int>(j);
  return -1;
}

}  // namespace autotune
