#include "tuner/measures/paired_rounds.h"

#include <algorithm>

namespace autotune {

std::vector<RoundPair> paired_rounds(const std::vector<const TrialRecord*>& num, const std::vector<const TrialRecord*>& den) {
  std::vector<RoundPair> out;
  for (std::size_t r = 0; r < std::min(num.size(), den.size()); ++r) {
    if (num[r]->result.status != TrialStatus::ok || den[r]->result.status != TrialStatus::ok) continue;
    RoundPair p{num[r]->result.throughputs(), den[r]->result.throughputs()};
    if (!p.num.empty() && !p.den.empty()) out.push_back(std::move(p));
  }
  return out;
}

std::vector<RoundPair> paired_rounds(const std::vector<const TrialRecord*>& num, const std::vector<const TrialRecord*>& den,
                                     const std::vector<const TrialRecord*>& num_more,
                                     const std::vector<const TrialRecord*>& den_more) {
  std::vector<RoundPair> out = paired_rounds(num, den);
  for (RoundPair& p : paired_rounds(num_more, den_more)) out.push_back(std::move(p));
  return out;
}

}  // namespace autotune
