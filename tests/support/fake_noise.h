#pragma once
// The fake worker's run-to-run noise (FAKE_CV): each worker process's throughput is the true value times
// one draw from N(1, cv) — a whole process runs faster or slower, as processes on a shared CI runner do.
// The gate's error-rate simulation (bench/gate_sim.cpp) draws from the same model.
#include <algorithm>
#include <random>

namespace autotune::testing {

inline double process_factor(std::mt19937_64& rng, double cv) {
  std::normal_distribution<double> d(1.0, cv);
  return std::max(0.05, d(rng));
}

}  // namespace autotune::testing
