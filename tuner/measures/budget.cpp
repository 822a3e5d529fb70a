#include "tuner/measures/budget.h"

#include <algorithm>
#include <cmath>

namespace autotune {

bool Budget::fits(int trials, int side_by_side, int slots) const {
  return elapsed() + trial_seconds() * (trials + std::ceil(side_by_side / static_cast<double>(slots))) <= seconds_;
}

int confirmation_reserve(int confirm_top, int confirm_rounds) {
  return std::max(1, confirm_top * (confirm_rounds + 1) + confirm_rounds);
}

double search_budget_minutes(double per_trial, int reserve) { return std::ceil(per_trial * (1 + 4 + reserve) / 60.0); }

}  // namespace autotune
