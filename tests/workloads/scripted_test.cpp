// The user's own TorchScript model as a workload (workloads/scripted.h): it trains with the same engine
// and proofs as the built-ins, its FLOPs are counted, and every bad input is a one-line error.
// Models come from tests/workloads/make_models.sh (CTest fixture).
#include "workloads/scripted.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "knobs/error.h"
#include "tests/support/expect_throw_msg.h"
#include "tests/support/temp_dir.h"
#include "tests/support/trial_helpers.h"
#include "workloads/engine/trainer.h"
#include "workloads/registry.h"

namespace autotune {
namespace {

std::string models() { return testing::binary_dir() + "/test-models"; }

#define NEED_MODELS() \
  if (!std::filesystem::exists(models() + "/cnn.pt")) GTEST_SKIP() << "no test models (make_models.sh skipped: no torch)"

TrialSetup setup(const std::string& model) {
  TrialSetup s;
  s.model = models() + "/" + model;
  return s;
}

TrialPlan short_plan(const std::string& model) {
  TrialPlan p;
  p.setup = setup(model);
  p.setup.device = "cpu";
  p.setup.measure.warmup_min_steps = 2;
  p.setup.measure.warmup_min_seconds = 0;
  p.setup.measure.windows = 3;
  p.setup.measure.window_min_seconds = 0;
  p.setup.measure.window_min_steps = 3;
  return p;
}

TEST(Scripted, ACnnTrainsWithTheEnginesKnobsAndCountedFlops) {
  NEED_MODELS();
  const auto w = make_workload(setup("cnn.pt"));
  const WorkloadInfo& i = w->info();
  EXPECT_EQ(i.name, "cnn");
  EXPECT_TRUE(i.conv_model);
  EXPECT_TRUE(i.image_data);
  EXPECT_EQ(i.default_image_size, 32);
  EXPECT_EQ(i.default_batch_size, 16);
  // c1 16×32×32 outputs × 27, c2 32×16×16 × 144, fc 32 × 10 multiply-adds; ×2 FLOPs, ×3 for training.
  EXPECT_DOUBLE_EQ(i.flops_per_sample, 6.0 * (16 * 32 * 32 * 27 + 32 * 16 * 16 * 144 + 32 * 10));
  EXPECT_EQ(i.source.rfind("TorchScript model " + models() + "/cnn.pt (sha256 ", 0), 0u) << i.source;
  TrialPlan p = short_plan("cnn.pt");
  p.config.set("memory_format", "channels_last")
      .set("optimizer_impl", "fused")
      .set("checkpointing", "blocks")
      .set("grad_accum", "2");
  const TrialResult r = run_trial(p);
  ASSERT_EQ(r.status, TrialStatus::ok) << r.message;
  EXPECT_EQ(r.workload, "cnn");
  EXPECT_EQ(testing::observed(r, "memory_format"), "first conv weight channels_last = true");
  EXPECT_EQ(testing::observed(r, "optimizer_impl"), "AdamW fused");
  EXPECT_EQ(testing::observed(r, "grad_accum"), "2 micro-batches of 16 per optimizer step");
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].knob, "checkpointing");
  EXPECT_DOUBLE_EQ(r.flops_per_sample, i.flops_per_sample);
  for (double l : r.losses) EXPECT_TRUE(std::isfinite(l));
}

TEST(Scripted, ALanguageModelThatMakesItsOwnLossAMseModelAndTwoInputsTrain) {
  NEED_MODELS();
  for (const char* m : {"tinygpt.pt", "regress.pt", "two_inputs.pt"}) {
    TrialPlan p = short_plan(m);
    p.config.set("precision", "amp_bf16");
    const TrialResult r = run_trial(p);
    ASSERT_EQ(r.status, TrialStatus::ok) << m << ": " << r.message;
    EXPECT_EQ(testing::observed(r, "precision"), "autocast matmul dtype BFloat16") << m;
    EXPECT_GT(r.flops_per_sample, 0) << m;
  }
  // The GPT's loss falls on its synthetic token pool.
  TrialPlan p = short_plan("tinygpt.pt");
  p.setup.measure.window_min_steps = 20;
  const TrialResult r = run_trial(p);
  ASSERT_EQ(r.status, TrialStatus::ok) << r.message;
  EXPECT_LT(r.losses.back(), r.warmup_losses.front());
}

TEST(Scripted, TorchvisionResnet18ExportedHasTheBuiltInsParametersAndFlops) {
  NEED_MODELS();
  if (!std::filesystem::exists(models() + "/resnet18.pt"))
    GTEST_SKIP() << "torchvision was not installed: resnet18.pt not exported";
  auto user = make_workload(setup("resnet18.pt"));
  auto builtin = make_workload("resnet18");
  BuildOptions o;
  o.setup.image_size = 64;
  builtin->build(o);
  auto count = [](const std::vector<torch::Tensor>& ps) {
    std::int64_t n = 0;
    for (const auto& p : ps) n += p.numel();
    return n;
  };
  EXPECT_EQ(count(user->parameters()), count(builtin->parameters()));
  EXPECT_EQ(count(user->parameters()), 11689512);
  EXPECT_NEAR(user->info().flops_per_sample / builtin->flops_per_sample(), 1.0, 0.01);
  // The exporter recorded how Python builds it, for the report's snippets.
  EXPECT_EQ(user->info().python_factory, "torchvision.models:resnet18");
  EXPECT_EQ(user->info().model_file, models() + "/resnet18.pt");
  // Its batch norms counted in the scripted module, as the built-in's config counts them (tests/workloads/models_test.cpp).
  EXPECT_EQ(user->info().batch_norms, 20);
  EXPECT_EQ(make_workload(setup("cnn.pt"))->info().batch_norms, 0) << "a CNN without batch norm";
}

TEST(Scripted, EveryBadInputIsAOneLineUsageError) {
  NEED_MODELS();
  const std::string d = models() + "/";
  const std::string how = "save the model with torch.jit.script or torch.jit.trace (scripts/export_model.py does it)";
  auto fails = [&](const TrialSetup& s, const std::string& msg) { EXPECT_THROW_MSG(make_workload(s), UsageError, msg); };
  fails(setup("absent.pt"), "--model " + d + "absent.pt: no such file");
  fails(setup("empty.pt"), "--model " + d + "empty.pt: the file is empty");
  fails(setup("state_dict.pt"),
        "--model " + d + "state_dict.pt: a torch.save() file (a state_dict or a pickled module), not TorchScript; " + how);
  fails(setup("pickled.pt"),
        "--model " + d + "pickled.pt: a torch.save() file (a state_dict or a pickled module), not TorchScript; " + how);
  fails(setup("program.pt2"),
        "--model " + d +
            "program.pt2: a torch.export program (.pt2), not TorchScript: torch.export and AOTInductor have no C++ "
            "training path in torch 2.11; " +
            how);
  fails(setup("frozen.pt"),
        "--model " + d + "frozen.pt: every parameter has requires_grad=False (a frozen model): nothing to train");
  fails(setup("no_params.pt"), "--model " + d + "no_params.pt: the model has no parameters: nothing to train");
  fails(setup("nan.pt"),
        "--model " + d +
            "nan.pt: the loss is nan at step 0 (before any training): check the model's initialisation and the spec's "
            "input ranges");
  fails(setup("tuple.pt"),
        "--model " + d +
            "tuple.pt: forward returned a Tuple; with loss cross_entropy it must return one tensor (the logits), or the "
            "spec's loss must be \"model\" when forward makes the loss itself");
  TrialSetup s = setup("cnn.pt");
  s.model_spec = d + "count.json";
  fails(
      s,
      "--model " + d +
          "cnn.pt: forward(x: Tensor) takes 1 argument(s); the spec gives 2: x: (B, 3, 32, 32) float32 in [-1, 1), y: (B, 3) float32 "
          "in [-1, 1); target: classes 0..9 (B); loss cross_entropy");
  s.model_spec = d + "rank.json";  // what forward expected, in its own words
  try {
    make_workload(s);
    ADD_FAILURE() << "a rank-3 image should not fit";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_NE(m.find("the batch spec does not fit forward(x: Tensor): "), std::string::npos) << m;
    EXPECT_NE(m.find("channels"), std::string::npos) << m;
  }
  s.model_spec = d + "dtype.json";
  try {
    make_workload(s);
    ADD_FAILURE() << "int64 images should not fit";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("should be the same"), std::string::npos) << e.what();
  }
  s = setup("cnn.pt");
  s.model_spec = d + "absent.json";
  fails(s, "--model-spec " + d + "absent.json: no such file");
}

TEST(Scripted, TheSpecFlagsOverrideOrReplaceTheSidecar) {
  NEED_MODELS();
  TrialSetup s = setup("regress.pt");
  s.model_target = "regression:B,4";
  s.model_flops = 1234;
  EXPECT_DOUBLE_EQ(make_workload(s)->info().flops_per_sample, 1234);
  EXPECT_EQ(make_workload(s)->info().flops_basis, "given in the spec");
  testing::TempDir dir;  // a model with no sidecar: the flags alone
  std::filesystem::copy_file(models() + "/cnn.pt", dir / "bare.pt");
  TrialSetup b;
  b.model = dir / "bare.pt";
  EXPECT_THROW(make_workload(b), UsageError);
  b.model_input = "B,3,32,32:float32";
  b.model_target = "classes:10";
  b.model_loss = "cross_entropy";
  EXPECT_TRUE(make_workload(b)->info().conv_model);
}

}  // namespace
}  // namespace autotune
