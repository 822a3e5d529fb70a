#pragma once
// One optimizer step of a noise-scale trial on a problem whose noise scale is known in closed form: linear
// regression with Gaussian inputs and Gaussian label noise, at fixed weights δ = w − w* away from the optimum.
// x ~ N(0, I_d), y = x·w* + σε; per-sample gradient g = x(x·δ − σε); B_simple = d(1 + σ²/|δ|²) + 1
// (tests/knobs/noise_scale_test.cpp derives it). Shared by the estimator's and the trajectory's tests.
#include <random>
#include <vector>

#include "knobs/noise_scale.h"

namespace autotune::testing {

/// The sums the worker records for one step of K micro-batches of b samples (d = delta.size() inputs).
inline NoiseStep regression_step(std::mt19937_64& rng, const std::vector<double>& delta, double sigma, int b, int K) {
  std::normal_distribution<double> n01(0.0, 1.0);
  const size_t d = delta.size();
  std::vector<double> mean_g(d, 0.0), gk(d), x(d);
  double small = 0;
  for (int k = 0; k < K; ++k) {
    std::fill(gk.begin(), gk.end(), 0.0);
    for (int i = 0; i < b; ++i) {
      double xd = 0;
      for (size_t j = 0; j < d; ++j) {
        x[j] = n01(rng);
        xd += x[j] * delta[j];
      }
      const double r = xd - sigma * n01(rng);
      for (size_t j = 0; j < d; ++j) gk[j] += x[j] * r / b;
    }
    double sq = 0;
    for (size_t j = 0; j < d; ++j) {
      sq += gk[j] * gk[j];
      mean_g[j] += gk[j] / K;
    }
    small += sq / K;
  }
  double big = 0;
  for (double v : mean_g) big += v * v;
  return {small, big};
}

}  // namespace autotune::testing
