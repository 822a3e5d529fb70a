#include "tuner/budget.h"

#include <cmath>

namespace autotune {

bool Budget::fits(int trials, int side_by_side, int slots) const {
  const double estimate = trials_ ? trial_seconds_ / trials_ : 0.0;
  return elapsed() + estimate * (trials + std::ceil(side_by_side / static_cast<double>(slots))) <= seconds_;
}

}  // namespace autotune
