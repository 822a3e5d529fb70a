#include "tuner/budget.h"

#include <cmath>

namespace autotune {

bool Budget::fits(int trials, int side_by_side, int slots) const {
  return elapsed() + trial_seconds() * (trials + std::ceil(side_by_side / static_cast<double>(slots))) <= seconds_;
}

}  // namespace autotune
