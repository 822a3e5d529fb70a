#include "tuner/measures/statistics.h"

#include <gtest/gtest.h>

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

TEST(Interval, Overlap) {
  EXPECT_TRUE((Interval{1, 3}).overlaps({2, 4}));
  EXPECT_TRUE((Interval{1, 3}).overlaps({3, 4}));
  EXPECT_FALSE((Interval{1, 2}).overlaps({2.5, 4}));
}

}  // namespace
}  // namespace autotune
