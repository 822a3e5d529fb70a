// The regression gate's error rates under the fake worker's noise model (tests/support/gate_sim.h):
// false failures of A-vs-A checks and the detection of real slowdowns, by noise level and repetitions.
//
//   build/bin/gate_sim [checks per cell, default 2000]
#include <cstdio>
#include <cstdlib>

#include "tests/support/gate_sim.h"

int main(int argc, char** argv) {
  using namespace autotune;
  const int checks = argc > 1 ? std::atoi(argv[1]) : 2000;
  std::printf("gate: one-sided Mann-Whitney, alpha 0.01, floor 3%%; %d simulated checks per cell\n\n", checks);
  std::printf(
      "| run-to-run CV | reps/side | A-vs-A: false fail | A-vs-A: inconclusive | 3%% slower: detected | 5%% slower: detected | "
      "10%% slower: detected |\n|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const double cv : {0.01, 0.027, 0.04})
    for (const int n : {5, 10, 20}) {
      const auto same = testing::simulate_gate(checks, n, cv, 1.00, {}, 11);
      const auto s3 = testing::simulate_gate(checks, n, cv, 0.97, {}, 12);
      const auto s5 = testing::simulate_gate(checks, n, cv, 0.95, {}, 13);
      const auto s10 = testing::simulate_gate(checks, n, cv, 0.90, {}, 14);
      std::printf("| %.1f%% | %d | %.2f%% | %.1f%% | %.1f%% | %.1f%% | %.1f%% |\n", 100 * cv, n, 100 * same.regression,
                  100 * same.inconclusive, 100 * s3.regression, 100 * s5.regression, 100 * s10.regression);
    }
  return 0;
}
