// The regression gate's statistics against SciPy/statsmodels (tests/golden/mann_whitney.json, written
// by tests/golden/make_mwu_golden.py), and its decision on fixed samples.
#include "tuner/measures/gate.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "knobs/protocol.h"
#include "tests/support/gate_sim.h"
#include "tests/support/temp_dir.h"

namespace autotune {
namespace {

nlohmann::json golden() { return nlohmann::json::parse(read_file(testing::source_dir() + "/tests/golden/mann_whitney.json")); }

TEST(Gate, MannWhitneyMatchesScipyExactAndAsymptotic) {
  int exact = 0, asymptotic = 0;
  const nlohmann::json g = golden();
  for (const auto& c : g.at("mann_whitney_less")) {
    double u = -1;
    const double p = mann_whitney_less(c.at("x").get<std::vector<double>>(), c.at("y").get<std::vector<double>>(), &u);
    EXPECT_DOUBLE_EQ(u, c.at("u").get<double>()) << c.dump();
    EXPECT_NEAR(p, c.at("p_less").get<double>(), 1e-9 + 1e-7 * c.at("p_less").get<double>()) << c.dump();
    (c.at("method") == "exact" ? exact : asymptotic)++;
  }
  EXPECT_GE(exact, 9);
  EXPECT_GE(asymptotic, 5);
}

TEST(Gate, HolmMatchesStatsmodels) {
  const nlohmann::json g = golden();
  for (const auto& c : g.at("holm")) {
    const auto got = holm(c.at("p").get<std::vector<double>>());
    const auto want = c.at("adjusted").get<std::vector<double>>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << c.dump();
  }
}

TEST(Gate, NormalQuantileAndTheRepetitionsANoisyBaselineNeeds) {
  EXPECT_NEAR(normal_quantile(0.975), 1.959963984540054, 1e-9);
  EXPECT_NEAR(normal_quantile(0.99), 2.326347874040841, 1e-9);
  EXPECT_NEAR(normal_quantile(0.001), -3.090232306167813, 1e-9);
  EXPECT_NEAR(normal_quantile(0.5), 0.0, 1e-12);
  // CV 3% against a 3% floor at α 0.01: 2·(2.326 + 0.842)²·1 / 0.955 ≈ 21.0 → 22 per side.
  EXPECT_EQ(reps_needed(0.03, 0.03, 0.01), 22);
  EXPECT_EQ(reps_needed(0.01, 0.03, 0.01), 3);
  EXPECT_NEAR(coefficient_of_variation({9, 10, 11}), 0.1, 1e-12);
}

std::vector<double> noisy(double level, double cv, int n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(1.0, cv);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(level * d(rng));
  return v;
}

MetricSample throughput(std::vector<double> a, std::vector<double> b) {
  return {"throughput", "samples/s", true, std::move(a), std::move(b)};
}

TEST(Gate, AClearSlowdownBeyondTheFloorIsARegression) {
  const GateDecision g = decide({throughput(noisy(1000, 0.01, 10, 1), noisy(930, 0.01, 10, 2))}, {});
  EXPECT_EQ(g.verdict, "regression");
  const MetricDecision& d = g.metrics[0];
  EXPECT_NEAR(d.ratio, 0.93, 0.015);
  EXPECT_LT(d.p, 0.001);
  EXPECT_LT(d.ratio_hi, 1.0);
  EXPECT_NE(d.reason.find("slower"), std::string::npos) << d.reason;
}

TEST(Gate, FasterOrWithinTheFloorPasses) {
  EXPECT_EQ(decide({throughput(noisy(1000, 0.01, 10, 3), noisy(1100, 0.01, 10, 4))}, {}).verdict, "pass");  // improvements pass
  // 1.5% slower with a quiet machine: detectable, but under the 3% floor.
  const GateDecision g = decide({throughput(noisy(1000, 0.002, 10, 5), noisy(985, 0.002, 10, 6))}, {});
  EXPECT_EQ(g.verdict, "pass");
  EXPECT_LT(g.metrics[0].p_holm, 0.01);
  EXPECT_NE(g.metrics[0].reason.find("within the 3.0% floor"), std::string::npos) << g.metrics[0].reason;
}

TEST(Gate, TooFewRepetitionsOrANoisyBaselineIsInconclusiveWithTheRepetitionsNeeded) {
  GateDecision g = decide({throughput(noisy(1000, 0.01, 4, 7), noisy(800, 0.01, 10, 8))}, {});
  EXPECT_EQ(g.verdict, "inconclusive");
  EXPECT_EQ(g.metrics[0].reason, "4 usable repetitions of A and 10 of B; at least 5 per side are needed");
  EXPECT_EQ(g.metrics[0].reps_needed, 5);
  // CV ≈ 5% over 10 repetitions: the baseline median is known to ±2%, more than half the 3% floor.
  g = decide({throughput(noisy(1000, 0.05, 10, 9), noisy(1000, 0.05, 10, 10))}, {});
  EXPECT_EQ(g.verdict, "inconclusive");
  EXPECT_GT(g.metrics[0].cv_a, 0.03);
  EXPECT_GT(g.metrics[0].reps_needed, 10);
  EXPECT_NE(g.metrics[0].reason.find("half the floor"), std::string::npos) << g.metrics[0].reason;
  // The same noise with the repetitions it asked for is decisive.
  const int n = g.metrics[0].reps_needed;
  g = decide({throughput(noisy(1000, 0.05, n, 9), noisy(1000, 0.05, n, 10))}, {});
  EXPECT_NE(g.verdict, "inconclusive") << g.metrics[0].reason;
}

TEST(Gate, ANoisyBaselineStillShowsAClearRegressionButCannotPass) {
  // CV 6% over 10 repetitions: too noisy to trust a pass, yet a 25% slowdown is beyond doubt.
  GateDecision g = decide({throughput(noisy(1000, 0.06, 10, 21), noisy(750, 0.06, 10, 22))}, {});
  EXPECT_EQ(g.verdict, "regression") << g.metrics[0].reason;
  g = decide({throughput(noisy(1000, 0.06, 10, 21), noisy(1000, 0.06, 10, 22))}, {});
  EXPECT_EQ(g.verdict, "inconclusive") << g.metrics[0].reason;
}

TEST(Gate, ErrorRatesUnderTheFakeWorkersNoiseModel) {
  // Run-to-run CV 2.7% (shared CI runners), 10 repetitions per side, deterministic draws
  // (tests/support/gate_sim.h; bench/gate_sim prints the full table).
  const auto same = testing::simulate_gate(600, 10, 0.027, 1.00, {}, 11);
  EXPECT_LE(same.regression, 0.01) << "false failures";
  EXPECT_GE(testing::simulate_gate(400, 10, 0.027, 0.95, {}, 13).regression, 0.85) << "5% slowdowns detected";
  EXPECT_GE(testing::simulate_gate(300, 10, 0.027, 0.90, {}, 14).regression, 0.99) << "10% slowdowns detected";
}

TEST(Gate, MemoryGrowthBeyondItsFloorIsARegressionAndHolmCorrectsAcrossMetrics) {
  const std::vector<double> same = noisy(1000, 0.005, 10, 11);
  MetricSample mem{"peak_memory", "bytes", false, noisy(1e9, 0.001, 10, 12), noisy(1.08e9, 0.001, 10, 13)};
  GateDecision g = decide({throughput(same, noisy(1000, 0.005, 10, 14)), mem}, {});
  EXPECT_EQ(g.verdict, "regression");
  EXPECT_EQ(g.metrics[1].verdict, "regression");
  EXPECT_EQ(g.metrics[0].verdict, "pass");
  // Holm: the smaller p is multiplied by 2, the larger by 1 (never below the smaller's).
  EXPECT_DOUBLE_EQ(g.metrics[1].p_holm, std::min(1.0, 2 * g.metrics[1].p));
  EXPECT_GE(g.metrics[0].p_holm, g.metrics[1].p_holm);
}

}  // namespace
}  // namespace autotune
