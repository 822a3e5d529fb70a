#include "tuner/stability.h"

#include <gtest/gtest.h>

namespace autotune {
namespace {

TrialRecord attempt(std::int64_t id, const std::string& batch, std::vector<double> per_window, TrialStatus st = TrialStatus::ok,
                    std::int64_t rss = 100 << 20) {
  TrialRecord r;
  r.id = id;
  r.kind = TrialKind::search;
  r.plan.config.set("batch_size", batch);
  r.result.status = st;
  r.result.batch_size = std::stoll(batch);
  for (double v : per_window) r.result.windows.push_back({10, static_cast<std::int64_t>(v), 1.0});
  r.result.losses = {1.0, 0.9};
  r.result.peak_rss_bytes = rss;
  r.result.host_total_bytes = 1000LL << 20;
  r.outcome = "exit 0";
  return r;
}

TEST(Stability, QuietOkConfigIsEligibleWithEveryCheckRecorded) {
  const auto a = attempt(1, "64", {1000, 1010, 990});
  const ConfigSummary s = summarize_config({&a}, {});
  EXPECT_TRUE(s.eligible) << s.reason;
  EXPECT_DOUBLE_EQ(s.median, 1000);
  EXPECT_LE(s.ci_lo, 1000);
  EXPECT_GE(s.ci_hi, 1000);
  ASSERT_EQ(s.checks.size(), 4u);
  EXPECT_EQ(s.checks[0].name, "survival");
  EXPECT_EQ(s.checks[1].detail, "0 non-finite of 2 measured losses");
  EXPECT_EQ(s.checks[2].detail, "IQR/median 1.0% over 3 windows ≤ 5% (attempt 1 of 1)");
  EXPECT_EQ(s.checks[3].detail, "peak RSS 100 MiB = 10.0% of 1000 MiB (limit 90%)");
}

TEST(Stability, NoisyConfigIsRemeasuredThenRejected) {
  StabilityOptions o;
  const auto a1 = attempt(1, "64", {800, 1000, 1200});
  ConfigSummary s = summarize_config({&a1}, o);
  EXPECT_FALSE(s.eligible);
  EXPECT_EQ(s.reason, "noisy: IQR/median 20.0% over 3 windows > 5% (attempt 1 of 1)");
  EXPECT_TRUE(wants_remeasure(s, 1, o));
  const auto a2 = attempt(2, "64", {700, 1000, 1300});
  const auto a3 = attempt(3, "64", {900, 1000, 1150});
  s = summarize_config({&a1, &a2, &a3}, o);
  EXPECT_FALSE(s.eligible);
  EXPECT_FALSE(wants_remeasure(s, 3, o));  // 1 + max_remeasure attempts used up
  EXPECT_EQ(s.measured_trial, 3);
}

TEST(Stability, AQuietRemeasureIsUsed) {
  const auto a1 = attempt(1, "64", {800, 1000, 1200});
  const auto a2 = attempt(2, "64", {995, 1000, 1005});
  const ConfigSummary s = summarize_config({&a1, &a2}, {});
  EXPECT_TRUE(s.eligible);
  EXPECT_EQ(s.measured_trial, 2);
  EXPECT_EQ((std::vector<std::int64_t>{1, 2}), s.trial_ids);
}

TEST(Stability, FailuresAreRejectedWithTheirReason) {
  auto oom = attempt(1, "512", {}, TrialStatus::oom);
  oom.result.message = "CUDA out of memory";
  ConfigSummary s = summarize_config({&oom}, {});
  EXPECT_FALSE(s.eligible);
  EXPECT_EQ(s.reason, "oom: CUDA out of memory");
  EXPECT_FALSE(wants_remeasure(s, 1, {}));

  auto nan = attempt(2, "64", {1000, 1000, 1000}, TrialStatus::non_finite);
  nan.result.losses = {1.0, std::nan("")};
  nan.result.message = "non-finite loss";
  s = summarize_config({&nan}, {});
  EXPECT_FALSE(s.eligible);
  EXPECT_EQ(s.checks[1].detail, "1 non-finite of 2 measured losses");

  const auto fat = attempt(3, "64", {1000, 1000, 1000}, TrialStatus::ok, 950LL << 20);
  s = summarize_config({&fat}, {});
  EXPECT_FALSE(s.eligible);
  EXPECT_EQ(s.reason, "peak RSS 950 MiB = 95.0% of 1000 MiB (limit 90%)");
}

TEST(Stability, WinnerIsFastestUnlessTiedWithASimplerConfig) {
  const auto base = attempt(1, "64", {1000, 1010, 990});
  const auto fast = attempt(2, "256", {2000, 2020, 1980});
  const auto close = attempt(3, "128", {1990, 2000, 2010});
  const auto slow = attempt(4, "32", {500, 505, 495});
  std::vector<ConfigSummary> cs = {summarize_config({&base}, {}), summarize_config({&fast}, {}), summarize_config({&slow}, {})};
  std::string note;
  EXPECT_EQ(choose_winner(cs, {{"batch_size", "64"}}, note), 1);
  EXPECT_EQ(note, "");

  // 128 and 256 overlap; both are one non-default knob; 128 uses less memory → preferred.
  auto close_lean = close;
  close_lean.result.peak_rss_bytes = 50 << 20;
  cs.push_back(summarize_config({&close_lean}, {}));
  EXPECT_EQ(choose_winner(cs, {{"batch_size", "64"}}, note), 3);
  EXPECT_NE(note.find("'batch_size=128' (2000 samples/s) is within the 95% CI of the fastest, 'batch_size=256'"),
            std::string::npos)
      << note;

  for (auto& c : cs) c.eligible = false;
  EXPECT_EQ(choose_winner(cs, {}, note), -1);
}

}  // namespace
}  // namespace autotune
