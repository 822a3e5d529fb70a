// The trial setup's one table of settings: what plan.json holds, what is checked, in which order the
// CLI offers them.
#include "knobs/setup.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <type_traits>

#include "knobs/error.h"
#include "knobs/protocol.h"
#include "tests/support/expect_throw_msg.h"

namespace autotune {
namespace {

using nlohmann::json;

TEST(TrialSetup, APlanWithDefaultsHoldsTheKeysEveryWorkerReads) {
  TrialPlan p;
  p.config.set("batch_size", "64");
  const json j = p;
  std::set<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.insert(k);
  // data, data_cache and max_bad_share are left out at their defaults; trace only for traced trials.
  EXPECT_EQ(keys, (std::set<std::string>{"schema", "workload", "config", "seed", "device", "image_size", "measure"}));
  std::set<std::string> measure;
  for (const auto& [k, v] : j.at("measure").items()) measure.insert(k);
  EXPECT_EQ(measure, (std::set<std::string>{"warmup_min_steps", "warmup_max_steps", "warmup_min_seconds", "settle_tolerance",
                                            "windows", "window_min_seconds", "window_min_steps"}));
  p.setup.data = "/data/imgs";
  p.setup.max_bad_share = 0.5;
  const json k = p;
  EXPECT_EQ(k.at("data"), "/data/imgs");
  EXPECT_EQ(k.at("max_bad_share"), 0.5);
  EXPECT_FALSE(k.contains("data_cache"));
}

TEST(TrialSetup, EverySettingRoundTripsThroughJson) {
  TrialSetup s;
  s.workload = "resnet18";
  s.device = "cpu";
  s.seed = 42;
  s.image_size = 64;
  s.data = "/d";
  s.data_cache = "/c.bin";
  s.max_bad_share = 0.2;
  s.measure = {7, 70, 0.7, 0.07, 4, 0.4, 6};
  s.adam_beta1 = 0.6;
  s.adam_beta2 = 0.996;
  s.adam_eps = 5e-9;
  const TrialSetup t = json(s).get<TrialSetup>();
  const json a = s, b = t;
  EXPECT_EQ(a, b);
  EXPECT_DOUBLE_EQ(t.beta2(), 0.996);
  EXPECT_DOUBLE_EQ(TrialSetup().beta2(), 0.999);  // unset: PyTorch's default
  EXPECT_EQ(t.measure.warmup_max_steps, 70);
  EXPECT_DOUBLE_EQ(t.measure.settle_tolerance, 0.07);
  EXPECT_EQ(t.seed, 42u);
}

TEST(TrialSetup, MissingMembersKeepTheirDefaults) {
  const TrialSetup s = json::parse(R"({"workload": "gpt-mini", "measure": {"windows": 5}})").get<TrialSetup>();
  EXPECT_EQ(s.workload, "gpt-mini");
  EXPECT_EQ(s.device, "auto");
  EXPECT_EQ(s.measure.windows, 5);
  EXPECT_DOUBLE_EQ(s.measure.window_min_seconds, 1.0);
}

TEST(TrialSetup, OutOfRangeOrUnknownValuesAreOneLineErrors) {
  auto read = [](const char* text) { return json::parse(text).get<TrialSetup>(); };
  EXPECT_THROW_MSG(read(R"({"device": "tpu"})"), UsageError, "device 'tpu' is not allowed; allowed: auto, cpu, cuda");
  EXPECT_THROW_MSG(read(R"({"image_size": -1})"), UsageError, "image_size -1 is out of range; allowed: 0..4096");
  EXPECT_THROW_MSG(read(R"({"measure": {"windows": 0}})"), UsageError, "measure.windows 0 is out of range; allowed: 1..1000");
  EXPECT_THROW_MSG(read(R"({"measure": {"window_min_seconds": -0.5}})"), UsageError,
                   "measure.window_min_seconds -0.5 is out of range; allowed: ≥ 0");
  EXPECT_THROW_MSG(read(R"({"max_bad_share": 2})"), UsageError, "max_bad_share 2 is out of range; allowed: 0..1");
  EXPECT_NO_THROW(
      read(R"({"image_size": 0, "measure": {"window_min_seconds": 0}})"));  // 0 = workload default; tests use 0 s windows
}

TEST(TrialSetup, TheTableNamesEveryFlagOnceWithHelpAndAUserRangeInsideTheValidOne) {
  std::vector<std::string> flags;
  std::set<std::string> keys;
  TrialSetup s;
  TrialSetup::visit(
      [&](const SettingSpec& sp, const auto& v) {
        EXPECT_TRUE(keys.insert(sp.group + "." + sp.key).second) << sp.key;
        if (sp.flag.empty()) return;
        flags.push_back(sp.flag);
        EXPECT_FALSE(sp.help.empty()) << sp.flag;
        if constexpr (std::is_arithmetic_v<std::decay_t<decltype(v)>>) {
          EXPECT_GE(sp.allowed.lo, sp.valid.lo) << sp.flag;
          EXPECT_LE(sp.allowed.hi, sp.valid.hi) << sp.flag;
          EXPECT_TRUE(sp.valid.contains(static_cast<double>(v))) << sp.flag << ": the default must be valid";
        }
      },
      s);
  EXPECT_EQ(flags,
            (std::vector<std::string>{"--workload,-w", "--device", "--seed", "--image-size", "--windows", "--window-seconds",
                                      "--warmup-seconds", "--data", "--cache", "--max-bad-share", "--model", "--model-spec",
                                      "--model-input", "--model-target", "--model-loss", "--model-flops", "--model-kwargs", "--model-task", "--model-seq", "--model-output", "--trainer", "--plugin", "--dist-timeout",
                                      "--lr", "--adam-beta1", "--adam-beta2", "--adam-eps", "--data-order", "--init-from", "--memory-cap"}));
}

}  // namespace
}  // namespace autotune
