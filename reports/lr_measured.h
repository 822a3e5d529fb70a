#pragma once
// The learning rate measured for a tune run's answers (docs/time-to-train.md, "Priced at the measured rate"): the
// lr-sweeps run from it (`autotune lr-sweep --from-run`) as plain data. tuner/pricing/lr_beside.h writes and reads them
// beside the run; reports/run_facts.h says what they change in its answers.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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

/// One phase of answer (c), the batch ramp, at the measured rates.
struct RampPhaseAtMeasured {
  std::int64_t global_batch = 0;
  std::string priced_by;  ///< the sweep whose batch it trains at ("your-batch", "changed-batch"), or "" (the rule's rate)
  double lr = 0;          ///< that sweep's best rate; 0 at the rule's rate
  double gain = 1;        ///< the sweep's gain: the phase's time at the rule's rate ÷ at the measured one; 1 at the rule's
  double seconds = 0;     ///< the phase's predicted time at that rate
};

/// Answer (c) priced at the measured rates: each phase at a batch a sweep measured (and priced) trains at its best rate,
/// its time moved by the sweep's gain; every other phase stays at the batch rule's rate. Empty (`phases` empty) without a
/// ramp or without a sweep.
struct RampAtMeasured {
  std::vector<RampPhaseAtMeasured> phases;
  double seconds = 0;  ///< the ramp's predicted time over the run
  /// (a)'s and (b)'s times, each at its own measured rate, ÷ the ramp's (> 1: the ramp is faster); 0 where (b) has none.
  double vs_a = 0, vs_b = 0;
  /// Phase k when a sweep prices it, else null (the rule's rate, or no such phase).
  const RampPhaseAtMeasured* swept(std::size_t k) const {
    return k < phases.size() && !phases[k].priced_by.empty() ? &phases[k] : nullptr;
  }
  /// How many phases a sweep prices.
  int measured() const {
    int n = 0;
    for (std::size_t k = 0; k < phases.size(); ++k) n += swept(k) ? 1 : 0;
    return n;
  }
};

/// The sweeps beside a tune run: at the user's batch, and at answer (b)'s.
struct LrMeasured {
  LrSwept at_user, at_b;
  RampAtMeasured ramp;  ///< answer (c) at the measured rates
  /// (b) over (a) in time to the same loss, each at its measured rate: the rule's price × at_b's gain ÷ at_user's (1
  /// where no sweep prices (a)); 0 when no sweep prices (b) or (b) has no price.
  double b_over_a = 0;
  std::string refused;  ///< a sweep there of another batch than the one it names, left out: why (one line)
};

}  // namespace autotune
