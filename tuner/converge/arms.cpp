#include "tuner/converge/arms.h"

namespace autotune {

bool baseline_role(const std::string& role) { return role == "baseline" || role == "rerun"; }

std::vector<const ConvergeRun*> baseline_runs(const ConvergeSummary& s) {
  std::vector<const ConvergeRun*> out;
  for (const auto& r : s.runs)
    if (baseline_role(r.role) && r.status == "ok" && !r.curve.empty()) out.push_back(&r);
  return out;
}

std::vector<const ConvergeRun*> arm_runs(const ConvergeSummary& s, int k) {
  const ConvergeRun& c = s.runs[k];
  std::vector<const ConvergeRun*> out = {&c};
  for (const auto& r : s.runs)
    if (r.role == "candidate-rerun" && r.config == c.config && r.ramp == c.ramp && r.lr == c.lr) out.push_back(&r);
  return out;
}

}  // namespace autotune
