// resolve(): the settings a trial really runs with, and why a value fell back. The tuner folds and
// explains with it before running; the worker applies its result.
#include "knobs/resolve.h"

#include <gtest/gtest.h>

#include <random>
#include <type_traits>

#include "knobs/knob.h"

namespace autotune {
namespace {

WorkloadInfo resnet() {
  WorkloadInfo w;
  w.name = "resnet18";
  w.default_batch_size = 32;
  w.conv_model = w.image_data = w.block_model = true;
  return w;
}

TargetInfo target(bool cuda, const WorkloadInfo& w, const std::string& data = "", bool cache = false) {
  EnvFingerprint env;
  env.cuda_available = cuda;
  env.device_count = cuda ? 1 : 0;
  env.cpu_cores = 8;
  TrialSetup s;
  s.data = data;
  s.data_cache = cache ? "/c.bin" : "";
  return make_target(w, env, s);
}

Config config(std::initializer_list<std::pair<const char*, const char*>> kv) {
  Config c;
  for (const auto& [k, v] : kv) c.set(k, v);
  return c;
}

TEST(Resolve, DefaultsAreTheBaselineWithTheWorkloadsBatch) {
  const Resolution r = resolve(Config(), resnet(), target(false, resnet()));
  EXPECT_TRUE(r.skipped.empty());
  EXPECT_EQ(r.settings.batch_size, 32);
  EXPECT_EQ(r.settings.threads, "default");
  EXPECT_EQ(r.settings.grad_accum, 1);
  EXPECT_EQ(r.settings.prefetch, 2);
  EXPECT_FALSE(r.settings.cuda_graphs);
  EXPECT_TRUE(r.effective.empty());
}

TEST(Resolve, RanksAreLimitedByThisMachineUnlessALauncherPlacedThem) {
  TargetInfo t = target(false, resnet());
  t.cpu_cores = 1;  // a rank of `srun --ntasks=2 -c1` sees one CPU
  const Resolution alone = resolve(config({{"ranks", "2"}}), resnet(), t);
  ASSERT_EQ(alone.skipped.size(), 1u);
  EXPECT_NE(alone.skipped[0].reason.find("2 ranks need 2 cores; this machine has 1"), std::string::npos);
  EXPECT_EQ(alone.settings.ranks, 1);
  t.launcher_ranks = true;
  const Resolution launched = resolve(config({{"ranks", "2"}}), resnet(), t);
  EXPECT_TRUE(launched.skipped.empty());
  EXPECT_EQ(launched.settings.ranks, 2);
  TargetInfo g = target(true, resnet());  // one visible GPU per task (--gpus-per-task=1)
  g.launcher_ranks = true;
  EXPECT_EQ(resolve(config({{"ranks", "4"}}), resnet(), g).settings.ranks, 4);
}

TEST(Resolve, TypedValuesFromTheConfig) {
  const Resolution r =
      resolve(config({{"batch_size", "128"}, {"grad_accum", "4"}, {"log_every", "100"}, {"cudnn_benchmark", "true"}}), resnet(),
              target(true, resnet()));
  EXPECT_TRUE(r.skipped.empty());
  EXPECT_EQ(r.settings.batch_size, 128);
  EXPECT_EQ(r.settings.grad_accum, 4);
  EXPECT_EQ(r.settings.log_every, 100);
  EXPECT_TRUE(r.settings.cudnn_benchmark);
}

TEST(Resolve, AValueThatDoesNotApplyHereFallsBackWithTheReason) {
  const Resolution r =
      resolve(config({{"precision", "amp_fp16"}, {"cudnn_benchmark", "true"}}), resnet(), target(false, resnet()));
  ASSERT_EQ(r.skipped.size(), 2u);
  EXPECT_EQ(r.skipped[0].knob, "precision");
  EXPECT_EQ(r.skipped[0].reason, "precision=amp_fp16: needs a CUDA device; none is available; ran with fp32");
  EXPECT_EQ(r.skipped[1].reason, "cudnn_benchmark=true: needs a CUDA device; none is available; ran with false");
  EXPECT_EQ(r.settings.precision, "fp32");
  EXPECT_FALSE(r.settings.cudnn_benchmark);
  EXPECT_EQ(r.effective.key(), "precision=fp32");  // cudnn_benchmark means nothing on a CPU: left out
}

TEST(Resolve, CudaGraphsNeedFusedAdamWAndNoHostSideStepLogic) {
  const TargetInfo gpu = target(true, resnet());
  auto why = [&](std::initializer_list<std::pair<const char*, const char*>> kv) {
    const Resolution r = resolve(config(kv), resnet(), gpu);
    EXPECT_EQ(r.settings.cuda_graphs, r.skipped.empty());
    return r.skipped.empty() ? std::string() : r.skipped.back().reason;
  };
  EXPECT_EQ(why({{"cuda_graphs", "on"}}),
            "cuda_graphs=on: needs optimizer_impl=fused (its step counters live on the device); ran with off");
  EXPECT_EQ(why({{"cuda_graphs", "on"}, {"optimizer_impl", "fused"}, {"checkpointing", "blocks"}}),
            "cuda_graphs=on: checkpointing replays RNG state from the host, which a graph cannot; ran with off");
  EXPECT_EQ(why({{"cuda_graphs", "on"}, {"optimizer_impl", "fused"}, {"precision", "amp_fp16"}}),
            "cuda_graphs=on: the fp16 GradScaler is not captured (use amp_bf16, which needs no scaler); ran with off");
  EXPECT_EQ(why({{"cuda_graphs", "on"}, {"optimizer_impl", "fused"}, {"grad_accum", "2"}}),
            "cuda_graphs=on: grad_accum > 1 is not captured (one micro-batch per replay); ran with off");
  EXPECT_EQ(why({{"cuda_graphs", "on"}, {"optimizer_impl", "fused"}, {"precision", "amp_bf16"}}), "");
}

TEST(Resolve, GpuAugmentationNeedsTheCache) {
  const TargetInfo t = target(true, resnet(), "images", true);
  Resolution r = resolve(config({{"augment_device", "gpu"}, {"decode", "jpeg_full"}}), resnet(), t);
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(
      r.skipped[0].reason,
      "augment_device=gpu: needs decode=cache (the GPU crops the cache's fixed-size images; JPEG files differ in size); ran with cpu");
  EXPECT_EQ(r.settings.augment_device, "cpu");
  r = resolve(config({{"augment_device", "gpu"}, {"decode", "cache"}}), resnet(), t);
  EXPECT_TRUE(r.skipped.empty());
  EXPECT_EQ(r.settings.augment_device, "gpu");
}

TEST(Resolve, SettingsHaveOneMemberPerCatalogKnob) {
  // A knob added to the catalog without its typed setting (or the reverse) fails here.
  std::vector<std::string> members;
  Settings s;
  Settings::visit([&](const char* name, auto&) { members.push_back(name); }, s);
  EXPECT_EQ(members, knob_names());
}

TEST(Resolve, TheEffectiveConfigResolvesToItselfWithNothingSkipped) {
  // What the tuner sends a worker is what the worker runs: resolving the effective config again
  // changes nothing, on every kind of target, for random configs over every knob's whole domain.
  std::mt19937 rng(7);
  const WorkloadInfo w = resnet();
  WorkloadInfo mlp;
  mlp.name = "mlp";
  mlp.default_batch_size = 64;
  const std::vector<std::pair<WorkloadInfo, TargetInfo>> targets = {{w, target(false, w)},
                                                                    {w, target(true, w)},
                                                                    {w, target(true, w, "images", true)},
                                                                    {w, target(false, w, "images")},
                                                                    {mlp, target(true, mlp)}};
  int folded = 0;
  for (int i = 0; i < 2000; ++i) {
    Config c;
    for (const Knob& k : knob_catalog())
      if (rng() % 2) c.set(k.name, k.values[rng() % k.values.size()]);
    const auto& [wl, t] = targets[i % targets.size()];
    const Resolution r = resolve(c, wl, t);
    folded += r.skipped.empty() ? 0 : 1;
    const Resolution again = resolve(r.effective, wl, t);
    EXPECT_TRUE(again.skipped.empty()) << c.key() << " → " << r.effective.key() << ": " << again.skipped.front().reason;
    EXPECT_EQ(again.effective, r.effective);
    EXPECT_EQ(again.settings.precision, r.settings.precision);
    EXPECT_EQ(again.settings.cuda_graphs, r.settings.cuda_graphs);
  }
  EXPECT_GT(folded, 100);  // the property was exercised, not vacuous
}

TEST(Resolve, DataParallelKnobsNeedSeveralRanksAndCudaGraphsRefuseThem) {
  const WorkloadInfo w = resnet();
  // One process: no gradient communication, so the DDP knobs run as their defaults, with the reason.
  const Resolution one = resolve(config({{"bucket_mb", "1"}, {"comm_hook", "bf16"}}), w, target(false, w));
  ASSERT_EQ(one.skipped.size(), 2u);
  EXPECT_EQ(one.skipped[0].reason,
            "bucket_mb=1: only with ranks > 1 (one process has no gradient communication); ran with 25");
  EXPECT_EQ(one.settings.bucket_mb, 25);
  EXPECT_EQ(one.settings.comm_hook, "allreduce");
  EXPECT_EQ(one.effective.key(), "bucket_mb=25 comm_hook=allreduce");
  // Two ranks: applied as asked.
  const Resolution two =
      resolve(config({{"ranks", "2"}, {"bucket_mb", "1"}, {"comm_hook", "bf16"}, {"broadcast_buffers", "false"}}), w,
              target(false, w));
  EXPECT_TRUE(two.skipped.empty());
  EXPECT_EQ(two.settings.ranks, 2);
  EXPECT_EQ(two.settings.bucket_mb, 1);
  EXPECT_FALSE(two.settings.broadcast_buffers);
  // A default value with one rank is no fallback (nothing to explain).
  EXPECT_TRUE(resolve(config({{"bucket_mb", "25"}}), w, target(false, w)).skipped.empty());
  // CUDA graphs cannot capture the Reducer's host-driven collectives (a host with 2 GPUs).
  TargetInfo two_gpus = target(true, w);
  two_gpus.gpu_count = 2;
  const Resolution g = resolve(config({{"ranks", "2"}, {"cuda_graphs", "on"}, {"optimizer_impl", "fused"}}), w, two_gpus);
  ASSERT_EQ(g.skipped.size(), 1u);
  EXPECT_EQ(g.skipped[0].knob, "cuda_graphs");
  EXPECT_NE(g.skipped[0].reason.find("not with ranks > 1"), std::string::npos) << g.skipped[0].reason;
  EXPECT_EQ(g.settings.ranks, 2);
  EXPECT_FALSE(g.settings.cuda_graphs);
}

TEST(Resolve, RanksAreBoundedByTheCoresOrTheGpusOfTheMachine) {
  const WorkloadInfo w = resnet();
  const Knob& r = find_knob("ranks");
  EXPECT_FALSE(r.value_not_applicable("8", target(false, w)).has_value());  // 8 cores
  EXPECT_EQ(*r.value_not_applicable("16", target(false, w)),
            "16 ranks need 16 cores; this machine has 8 (more ranks need --launcher)");
  EXPECT_EQ(*r.value_not_applicable("2", target(true, w)), "2 ranks need 2 GPUs; this machine has 1 (more ranks need --launcher)");
}

TEST(ApplicableSpace, DropsWhatCannotApplyAndSaysWhy) {
  KnobSpace s;
  s.add("precision", {"fp32", "amp_fp16", "amp_bf16"})
      .add("memory_format", {"contiguous", "channels_last"})
      .add("batch_size", {"32"});
  WorkloadInfo mlp;
  mlp.name = "mlp";
  std::vector<SkippedKnob> skipped;
  const KnobSpace out = applicable_space(s, target(false, mlp), skipped);
  EXPECT_EQ(out.describe(), "precision={fp32,amp_bf16} batch_size={32}");
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].knob, "precision=amp_fp16");
  EXPECT_EQ(skipped[0].reason, "needs a CUDA device; none is available");
  EXPECT_EQ(skipped[1].knob, "memory_format");
  EXPECT_EQ(skipped[1].reason, "applies to convolutional models only");
}

TEST(Target, OneBuilderForBothSidesOfTheProcessBoundary) {
  const WorkloadInfo w = resnet();
  EnvFingerprint env;
  env.cuda_available = true;
  env.device_count = 2;
  env.cpu_cores = 16;
  TrialSetup s;
  TargetInfo t = make_target(w, env, s);
  EXPECT_TRUE(t.cuda);
  EXPECT_EQ(t.gpu_count, 2);
  EXPECT_EQ(t.cpu_cores, 16);
  EXPECT_TRUE(t.conv_model && t.image_data && t.block_model);
  EXPECT_EQ(t.data, "");
  s.device = "cpu";  // asked for the CPU on a GPU machine: CUDA knobs do not apply
  s.data = "/imgs";
  s.data_cache = "/c.bin";
  t = make_target(w, env, s);
  EXPECT_FALSE(t.cuda);
  EXPECT_EQ(t.gpu_count, 0);
  EXPECT_EQ(t.data, "images");
  EXPECT_TRUE(t.data_cache);
  WorkloadInfo gpt;
  gpt.name = "gpt-mini";
  EXPECT_EQ(make_target(gpt, env, s).data, "tokens");
}

}  // namespace
}  // namespace autotune
