// The held-out loss along a run (knobs/held_out.h): read between evaluations on a straight line in time, its lowest
// point not its last.
#include "knobs/held_out.h"

#include <gtest/gtest.h>

#include <cmath>

namespace autotune {
namespace {

TEST(HeldOut, TheTimeToALossIsInterpolatedBetweenTheEvaluationsAroundIt) {
  // evaluations at 0, 1,000, 2,000 samples (0, 10, 20 s of training): 3.0, 2.0, 1.0
  const std::vector<CurvePoint> v = {{0, 0, 3.0}, {1000, 10, 2.0}, {2000, 20, 1.0}};
  const Reached at = time_to_held_out(v, 1.5);
  ASSERT_TRUE(at.reached());
  EXPECT_DOUBLE_EQ(at.seconds, 15);  // halfway from 2.0 to 1.0
  EXPECT_EQ(at.samples, 1500);
  EXPECT_DOUBLE_EQ(time_to_held_out(v, 2.0).seconds, 10);  // exactly at an evaluation
  EXPECT_DOUBLE_EQ(time_to_held_out(v, 3.5).seconds, 0);   // the start is already below
  EXPECT_FALSE(time_to_held_out(v, 0.5).reached());
}

TEST(HeldOut, ARunThatOverfitsIsJudgedByItsLowestLossAndTheFirstTimeItGotThere) {
  // down to 1.2, then up again: a late rise does not undo the crossing
  const std::vector<CurvePoint> v = {{0, 0, 3.0}, {1000, 10, 1.2}, {2000, 20, 1.6}, {3000, 30, 2.0}};
  EXPECT_DOUBLE_EQ(lowest_held_out(v), 1.2);
  EXPECT_NEAR(time_to_held_out(v, 1.8).seconds, 10 * (3.0 - 1.8) / (3.0 - 1.2), 1e-12);
  // a non-finite evaluation is skipped, and is never the crossing's "before"
  const std::vector<CurvePoint> nan = {{0, 0, std::nan("")}, {1000, 10, 1.0}};
  EXPECT_DOUBLE_EQ(time_to_held_out(nan, 2.0).seconds, 10);
  EXPECT_DOUBLE_EQ(lowest_held_out(nan), 1.0);
  EXPECT_TRUE(std::isnan(lowest_held_out({})));
  // the start is where training began, not where it took the run: a run that only rose has its lowest after the start
  EXPECT_DOUBLE_EQ(lowest_held_out({{0, 0, 0.7}, {1000, 10, 0.9}, {2000, 20, 1.4}}), 0.9);
  EXPECT_TRUE(std::isnan(lowest_held_out({{0, 0, 0.7}})));
}

}  // namespace
}  // namespace autotune
