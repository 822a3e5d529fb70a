// A compiled config pays its compile once: ranking prices it over the run (tuner/search/ranking.h, compile_factor), and the
// loss-trajectory check verifies it against its eager fp32 twin (tuner/search/stability.h, verify_leaders).
#include <gtest/gtest.h>

#include "tuner/search/ranking.h"
#include "tuner/search/stability.h"

namespace autotune {
namespace {

ConfigSummary measured(const std::string& compile, double samples_per_s, double compile_seconds) {
  ConfigSummary s;
  if (!compile.empty()) s.config.set("compile", compile);
  s.status = TrialStatus::ok;
  s.eligible = true;
  s.median = s.ci_lo = s.ci_hi = samples_per_s;
  s.throughputs = {samples_per_s, samples_per_s, samples_per_s};
  s.compile_seconds = compile_seconds;
  s.batch_size = s.global_batch = 32;
  return s;
}

TEST(CompilePricing, AnHourOfTrainingWithoutARunLength) {
  const Objective o;  // throughput: no run length known
  EXPECT_DOUBLE_EQ(o.compile_factor(measured("", 100, 0), 100), 1.0);
  EXPECT_DOUBLE_EQ(o.compile_factor(measured("default", 100, 36), 100), 3600.0 / 3636.0);
  // 5% faster steady: a 30-s compile keeps the win over an hour, a 300-s one loses it.
  EXPECT_GT(o.score(measured("default", 105, 30)), o.score(measured("", 100, 0)));
  EXPECT_LT(o.score(measured("default", 105, 300)), o.score(measured("", 100, 0)));
  EXPECT_DOUBLE_EQ(o.score_lo(measured("default", 105, 30)), 105 * 3600.0 / 3630.0);
}

TEST(CompilePricing, OverTheRunLengthTheTimeObjectivePrices) {
  NoiseScaleSummary n;
  n.measured = n.usable = true;
  n.value = n.lo = n.hi = 1e9;  // a noise scale so large that batch efficiency is 1: only the compile matters
  n.run_samples = 100 * 600;    // ten minutes of training at 100 samples/s
  const Objective o(ObjectiveKind::time, 32, n);
  const ConfigSummary c = measured("default", 120, 60);  // 20% faster, a minute to compile
  const double x = o.score(measured("", 120, 0));         // its steady score, uncompiled
  EXPECT_NEAR(o.score(c), x / (1 + 60 * x / 60000.0), 1e-9);
  // Ten minutes at 100/s take 600 s; compiled, 500 s + 60 s: it still wins, by 600/560.
  EXPECT_NEAR(o.score(c) / o.score(measured("", 100, 0)), 600.0 / 560.0, 1e-3);
}

TEST(CompilePricing, ACompiledLeaderIsVerifiedAgainstItsEagerFp32Twin) {
  History h;
  h.add(measured("", 100, 0));
  h.add(measured("default", 130, 10));
  std::vector<Config> asked;
  verify_leaders(
      h, 2, 0.05,
      [&](const Config& twin) -> const TrialRecord* {
        asked.push_back(twin);
        return nullptr;  // no reference ran: the compiled config cannot win
      },
      [](const ConfigSummary&) -> const TrialRecord* { return nullptr; });
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].get("compile"), "off");
  EXPECT_EQ(asked[0].get("precision"), "fp32");
  Config compiled;
  compiled.set("compile", "default");
  EXPECT_FALSE(h.find(compiled)->eligible);
  EXPECT_NE(h.find(compiled)->reason.find("no fp32 reference run"), std::string::npos);
}

}  // namespace
}  // namespace autotune
