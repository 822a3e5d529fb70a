// The noise-scale trial's burn-in follows whose weights the model starts from (tuner/options/run_context.h):
// random weights (a built-in workload, a model file whose export drew them) train an eighth of the trial's share of
// the budget first and record the rest (three windows of doubling length end at 8× the burn-in's steps), weights the
// user gave (--init-from, a model file exported with its own) none.
#include <gtest/gtest.h>

#include "tuner/options/run_context.h"

namespace autotune {
namespace {

RunContext context(const std::string& model, bool random_weights, const std::string& init_from = "") {
  TuneOptions o;
  o.setup.workload = model.empty() ? "gpt-mini" : "";
  o.setup.model = model;
  o.setup.init_from = init_from;
  o.budget_seconds = 200;
  o.space.add("batch_size", {"8", "16"});
  o.stability.calibrate = false;
  WorkloadInfo w;
  w.name = model.empty() ? "gpt-mini" : "m";
  w.default_batch_size = 16;
  w.random_weights = random_weights;
  EnvFingerprint e;
  e.device_name = "test CPU";
  e.cpu_cores = 2;
  return make_context(o, w, e);
}

TEST(NoisePlan, RandomWeightsGetABurnInWhereverTheyComeFrom) {
  EXPECT_DOUBLE_EQ(noise_plan(context("", false), 40).noise.burn_in_seconds, 5.0);           // built-in workload
  EXPECT_DOUBLE_EQ(noise_plan(context("", false), 40).noise.max_seconds, 35.0);              // the windows: the rest
  EXPECT_DOUBLE_EQ(noise_plan(context("m.pt", true), 40).noise.burn_in_seconds, 5.0);        // an hf: export
  EXPECT_DOUBLE_EQ(noise_plan(context("m.pt", false), 40).noise.burn_in_seconds, 0.0);       // the file's own weights
  EXPECT_DOUBLE_EQ(noise_plan(context("m.pt", false), 40).noise.max_seconds, 40.0);
  EXPECT_DOUBLE_EQ(noise_plan(context("m.pt", true, "w.pt"), 40).noise.burn_in_seconds, 0.0);  // --init-from
  EXPECT_EQ(noise_plan(context("", false), 40).noise.windows, 3);
}

TEST(NoisePlan, AGivenBurnInIsKept) {
  RunContext c = context("m.pt", true);
  c.opts.noise_burn_in = 3;
  EXPECT_DOUBLE_EQ(noise_plan(c, 10).noise.burn_in_seconds, 3.0);
}

}  // namespace
}  // namespace autotune
