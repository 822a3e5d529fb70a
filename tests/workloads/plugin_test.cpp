// Plugins (workloads/plugin.h): the example plugin's workload trains like a built-in one; a library
// that is not a plugin, or one built for another ABI, is refused with one line.
#include <gtest/gtest.h>

#include "knobs/error.h"
#include "tests/support/expect_throw_msg.h"
#include "tests/support/temp_dir.h"
#include "workloads/engine/trainer.h"
#include "workloads/plugin.h"
#include "workloads/registry.h"

namespace autotune {
namespace {

std::string plugin(const std::string& name) { return testing::binary_dir() + "/test-plugins/lib" + name + ".so"; }

TEST(Plugin, TheExamplePluginsWorkloadTrainsWithTheEngine) {
  const auto infos = workload_infos(plugin("tinycnn"));
  ASSERT_EQ(infos.size(), 1u);
  EXPECT_EQ(infos[0].name, "tinycnn");
  EXPECT_EQ(infos[0].source, "plugin " + plugin("tinycnn"));
  TrialPlan p;
  p.setup.plugin = plugin("tinycnn");
  p.setup.workload = "tinycnn";
  p.setup.device = "cpu";
  p.setup.measure.warmup_min_steps = 2;
  p.setup.measure.warmup_min_seconds = 0;
  p.setup.measure.window_min_seconds = 0;
  p.setup.measure.window_min_steps = 3;
  p.config.set("memory_format", "channels_last").set("batch_size", "8");
  const TrialResult r = run_trial(p);
  ASSERT_EQ(r.status, TrialStatus::ok) << r.message;
  EXPECT_EQ(r.workload, "tinycnn");
  bool channels_last = false;
  for (const auto& a : r.applied)
    channels_last |= a.knob == "memory_format" && a.observed == "first conv weight channels_last = true";
  EXPECT_TRUE(channels_last);
}

TEST(Plugin, WhatIsNotAPluginOrWasBuiltForAnotherAbiIsRefused) {
  TrialSetup s;
  s.workload = "tinycnn";
  s.plugin = plugin("no_register_plugin");
  EXPECT_THROW_MSG(
      make_workload(s), UsageError,
      "--plugin " + s.plugin +
          ": not an autotune plugin: it does not export autotune_plugin_abi and autotune_register (end the plugin with "
          "AUTOTUNE_PLUGIN(your_register_function), workloads/plugin.h)");
  s.plugin = plugin("other_abi_plugin");
  EXPECT_THROW_MSG(make_workload(s), UsageError,
                   "--plugin " + s.plugin + ": built for 'autotune-plugin/1 torch-2.10.0 cxx11abi-1', this worker is '" +
                       std::string(AUTOTUNE_PLUGIN_ABI) +
                       "': rebuild the plugin against this autotune and its LibTorch (find_package(autotune))");
  s.plugin = plugin("absent");
  EXPECT_THROW_MSG(make_workload(s), UsageError, "--plugin " + s.plugin + ": no such file");
  s.plugin = plugin("tinycnn");
  s.workload = "tinycn";
  EXPECT_THROW_MSG(make_workload(s), UsageError,
                   "--plugin " + s.plugin + " has no workload 'tinycn'; it registers: tinycnn (did you mean 'tinycnn'?)");
}

}  // namespace
}  // namespace autotune
