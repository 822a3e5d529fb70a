#pragma once
// The learning rate measured for a tune run's answers (docs/time-to-train.md, "Priced at the measured rate"): the
// lr-sweeps run from it (`autotune lr-sweep --from-run`) as plain data. tuner/pricing/lr_beside.h writes and reads them
// beside the run; reports/run_facts.h says what they change in its answers.
#include <cstdint>
#include <string>

namespace autotune {

/// One sweep's answer, as kept beside the tune run it swept.
struct LrSwept {
  bool present = false;
  std::string at;               ///< "your-batch" | "changed-batch"
  std::string sweep_dir, date;  ///< the lr-sweep folder and when it finished
  std::int64_t global_batch = 0;
  double centre_lr = 0;  ///< the rate it swept around: the user's, or at (b) the batch rule's for that batch
  double best_lr = 0;
  std::string verdict;  ///< too low | about right | too high | no rate trained | not judged
  /// The best over the centre in time to the centre's loss (mean, range over data orders); 1 about right, 0 when the
  /// centre never reached a loss to time (it diverged).
  double gain = 1, gain_lo = 1, gain_hi = 1;
  std::string headline;  ///< the sweep's own one-line verdict
  /// Whether it prices its batch: about right (gain 1), or too low / too high with a gain measured.
  bool prices() const {
    return present && gain > 0 && (verdict == "too low" || verdict == "too high" || verdict == "about right");
  }
  /// Its gain where it prices, else 1: the factor its batch's time moves by at the measured rate.
  double priced_gain() const { return prices() ? gain : 1; }
};

/// The sweeps beside a tune run: at the user's batch, and at answer (b)'s.
struct LrMeasured {
  LrSwept at_user, at_b;
  /// (b) over (a) in time to the same loss, each at its measured rate: the rule's price × at_b's gain ÷ at_user's (1
  /// where no sweep prices (a)); 0 when no sweep prices (b) or (b) has no price.
  double b_over_a = 0;
  std::string refused;  ///< a sweep there of another batch than the one it names, left out: why (one line)
};

}  // namespace autotune
