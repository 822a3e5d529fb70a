#pragma once
// The regression gate under simulated noise: many checks of A against B, each repetition's throughput
// the true value times the fake worker's per-process draw (tests/support/fake_noise.h), decided by the
// gate itself (tuner/measures/gate.h). Error rates come out as shares of `checks`. Deterministic per seed.
#include <random>
#include <vector>

#include "tests/support/fake_noise.h"
#include "tuner/measures/gate.h"

namespace autotune::testing {

struct GateRates {
  int checks = 0;
  double regression = 0, inconclusive = 0, pass = 0;  ///< shares of the checks
};

/// `checks` checks of A (true throughput 1000) against B (1000 × `b_scale`), `reps` repetitions per side,
/// every repetition varying by `cv`.
inline GateRates simulate_gate(int checks, int reps, double cv, double b_scale, const GateOptions& o = {},
                               std::uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  GateRates r;
  r.checks = checks;
  for (int c = 0; c < checks; ++c) {
    MetricSample t{"throughput", "samples/s", true, {}, {}};
    for (int i = 0; i < reps; ++i) {  // interleaved, as a check runs them
      t.a.push_back(1000 * process_factor(rng, cv));
      t.b.push_back(1000 * b_scale * process_factor(rng, cv));
    }
    const std::string v = decide({t}, o).verdict;
    (v == "regression" ? r.regression : v == "inconclusive" ? r.inconclusive : r.pass) += 1.0 / checks;
  }
  return r;
}

}  // namespace autotune::testing
