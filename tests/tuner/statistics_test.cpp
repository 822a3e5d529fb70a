#include "tuner/measures/statistics.h"

#include <gtest/gtest.h>

#include <cmath>

namespace autotune {
namespace {

TEST(Statistics, QuantilesInterpolateLinearly) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4, 5}, 0.25), 2);
  EXPECT_DOUBLE_EQ(quantile({10, 20}, 0.75), 17.5);
  EXPECT_DOUBLE_EQ(median({}), 0);
}

TEST(Statistics, RelativeIqr) {
  // {90, 100, 110}: Q1 = 95, Q3 = 105 → IQR/median = 10%.
  EXPECT_NEAR(relative_iqr({110, 90, 100}), 0.10, 1e-12);
  EXPECT_DOUBLE_EQ(relative_iqr({5, 5, 5}), 0);
}

TEST(Statistics, BootstrapCiBracketsTheMedianAndIsDeterministic) {
  const std::vector<double> xs = {98, 101, 100, 99, 102, 100, 97, 103, 100};
  const Interval ci = bootstrap_median_ci(xs);
  EXPECT_LE(ci.lo, 100);
  EXPECT_GE(ci.hi, 100);
  EXPECT_GE(ci.lo, 97);
  EXPECT_LE(ci.hi, 103);
  const Interval again = bootstrap_median_ci(xs);
  EXPECT_EQ(ci.lo, again.lo);
  EXPECT_EQ(ci.hi, again.hi);
  const Interval tight = bootstrap_median_ci({100, 100, 100});
  EXPECT_EQ(tight.lo, 100);
  EXPECT_EQ(tight.hi, 100);
}

TEST(Statistics, RatioCiAroundTheTrueRatio) {
  const Interval r = bootstrap_ratio_ci({200, 202, 198, 201, 199}, {100, 101, 99, 100, 100});
  EXPECT_LE(r.lo, 2.0);
  EXPECT_GE(r.hi, 2.0);
  EXPECT_GT(r.lo, 1.9);
  EXPECT_LT(r.hi, 2.1);
}

// Two interleaved rounds on a machine that doubled its speed between them, each config timed for another number of
// windows per round: pooled, the medians came from different rounds (2,290 against 1,000: 2.29×, beyond both rounds'
// own 1.145× and 1.007×, as the gpt-mini 1.19× beside its rounds' 1.145× and 1.007×). Paired, the value is the
// rounds' geometric mean and the interval spans the rounds.
TEST(Statistics, PairedRatioLiesAmongItsRoundsWherePoolingLeftThem) {
  const std::vector<RoundPair> rounds = {{{2290, 2290, 2290, 2290}, {2000, 2000}}, {{1007, 1007}, {1000, 1000, 1000, 1000}}};
  std::vector<double> num, den;
  for (const auto& r : rounds) {
    num.insert(num.end(), r.num.begin(), r.num.end());
    den.insert(den.end(), r.den.begin(), r.den.end());
  }
  EXPECT_NEAR(median(num) / median(den), 2.29, 1e-9);  // what pooling printed
  const PairedRatio p = paired_ratio(rounds);
  ASSERT_EQ(p.per_round.size(), 2u);
  EXPECT_NEAR(p.per_round[0], 1.145, 1e-9);
  EXPECT_NEAR(p.per_round[1], 1.007, 1e-9);
  EXPECT_NEAR(p.value, std::sqrt(1.145 * 1.007), 1e-9);  // their geometric mean
  EXPECT_NEAR(p.lo, 1.007, 1e-9);  // rounds resampled: both rounds' own ratios are reachable, nothing beyond them
  EXPECT_NEAR(p.hi, 1.145, 1e-9);
  const PairedRatio again = paired_ratio(rounds);  // deterministic
  EXPECT_EQ(again.lo, p.lo);
  EXPECT_EQ(again.hi, p.hi);
}

TEST(Statistics, PairedRatioOfOneRoundIsThatRoundsWindows) {
  const std::vector<double> a = {200, 202, 198, 201, 199}, b = {100, 101, 99, 100, 100};
  const PairedRatio p = paired_ratio({{a, b}});
  EXPECT_DOUBLE_EQ(p.value, median(a) / median(b));
  EXPECT_LE(p.lo, 2.0);
  EXPECT_GE(p.hi, 2.0);
  EXPECT_GT(p.lo, 1.9);
  EXPECT_LT(p.hi, 2.1);
  // A round with an empty side or a zero median is left out; none left: all zero.
  const PairedRatio dropped = paired_ratio({{a, b}, {{}, b}, {a, {0, 0}}});
  EXPECT_EQ(dropped.per_round.size(), 1u);
  const PairedRatio none = paired_ratio({{{}, b}});
  EXPECT_EQ(none.value, 0);
  EXPECT_EQ(none.lo, 0);
  EXPECT_TRUE(none.per_round.empty());
}

TEST(Interval, Overlap) {
  EXPECT_TRUE((Interval{1, 3}).overlaps({2, 4}));
  EXPECT_TRUE((Interval{1, 3}).overlaps({3, 4}));
  EXPECT_FALSE((Interval{1, 2}).overlaps({2.5, 4}));
}

}  // namespace
}  // namespace autotune
