// Device paths. CTest label `gpu`; every test skips cleanly when no CUDA device is available.
#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include "tests/support/golden.h"
#include "tests/support/image_fixtures.h"
#include "tests/support/temp_dir.h"
#include "tests/support/trial_helpers.h"
#include "workloads/engine/grad_scaler.h"
#include "workloads/engine/optim.h"
#include "workloads/input/pipeline.h"
#include "workloads/engine/trainer.h"

namespace autotune {
namespace {

#define REQUIRE_CUDA() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device available"

using testing::observed;

TrialPlan cuda_plan(const std::string& workload, std::initializer_list<std::pair<const char*, const char*>> knobs) {
  TrialPlan p;
  p.setup.workload = workload;
  p.setup.device = "cuda";
  p.setup.image_size = 64;
  p.setup.measure.warmup_min_seconds = 0;
  p.setup.measure.window_min_seconds = 0.05;
  for (const auto& [k, v] : knobs) p.config.set(k, v);
  return p;
}

TEST(Gpu, Fp16WithGradScalerTrainsAndRecordsTheScale) {
  REQUIRE_CUDA();
  for (const char* impl : {"loop", "fused"}) {
    const auto r = run_trial(cuda_plan("gpt-mini", {{"precision", "amp_fp16"}, {"optimizer_impl", impl}}));
    ASSERT_EQ(r.status, TrialStatus::ok) << r.message;
    EXPECT_EQ(observed(r, "precision").rfind("autocast matmul dtype Half, GradScaler scale 65536", 0), 0u)
        << observed(r, "precision");
    EXPECT_LE(r.scaler_skips, static_cast<int>(r.losses.size() / 50) + 1);
    EXPECT_GT(r.peak_device_bytes, 0);
    EXPECT_GT(r.device_total_bytes, r.peak_device_bytes);
  }
}

TEST(Gpu, FusedCudaAdamWMatchesPyTorch) {
  REQUIRE_CUDA();
  const auto& g = testing::golden()["adamw"];
  std::map<std::string, torch::Tensor> p;
  for (const char* k : {"w1", "b1", "w2", "b2"})
    p[k] = testing::tensor(g["init"][k], g["shapes"][k].get<std::vector<int64_t>>()).cuda().requires_grad_(true);
  const auto x = testing::tensor(g["x"], g["x_shape"].get<std::vector<int64_t>>()).cuda();
  const auto y = torch::tensor(g["y"].get<std::vector<int64_t>>(), torch::kInt64).cuda();
  auto opt =
      make_adamw("fused", {p["w1"], p["b1"], p["w2"], p["b2"]}, {g["lr"], g["beta1"], g["beta2"], g["eps"], g["weight_decay"]});
  for (int s = 0; s < g["steps"].get<int>(); ++s) {
    opt->zero_grad(true);
    auto h = torch::relu(torch::addmm(p["b1"], x, p["w1"].t()));
    torch::nn::functional::cross_entropy(torch::addmm(p["b2"], h, p["w2"].t()), y).backward();
    opt->step();
  }
  for (const char* k : {"w1", "b1", "w2", "b2"})
    EXPECT_TRUE(
        torch::allclose(p[k].cpu(), testing::tensor(g["fused"][k], g["shapes"][k].get<std::vector<int64_t>>()), 1e-4, 1e-5))
        << k;
}

TEST(Gpu, CudnnBenchmarkFlagIsReadBack) {
  REQUIRE_CUDA();
  EXPECT_EQ(observed(run_trial(cuda_plan("resnet18", {{"cudnn_benchmark", "true"}})), "cudnn_benchmark"),
            "at::globalContext().benchmarkCuDNN() = true");
  EXPECT_EQ(observed(run_trial(cuda_plan("resnet18", {{"cudnn_benchmark", "false"}})), "cudnn_benchmark"),
            "at::globalContext().benchmarkCuDNN() = false");
}

TEST(Gpu, ChannelsLastAndTf32OnCuda) {
  REQUIRE_CUDA();
  const auto r = run_trial(cuda_plan("resnet18", {{"memory_format", "channels_last"}, {"precision", "tf32"}}));
  ASSERT_EQ(r.status, TrialStatus::ok) << r.message;
  EXPECT_EQ(observed(r, "memory_format"), "first conv weight channels_last = true");
  EXPECT_NE(observed(r, "precision").find("CUDA matmul fp32 precision tf32"), std::string::npos) << observed(r, "precision");
  EXPECT_TRUE(r.skipped.empty());
}

/// resnet18 on CUDA reading a pre-decoded cache (real host batches: what pin_memory is for).
TrialPlan cache_plan(const std::string& cache, std::initializer_list<std::pair<const char*, const char*>> knobs) {
  TrialPlan p = cuda_plan("resnet18", knobs);
  p.setup.data = cache;
  p.setup.data_cache = cache;
  p.config.set("decode", "cache");
  return p;
}

TEST(Gpu, PinMemoryReusesPinnedBuffers) {
  REQUIRE_CUDA();
  testing::TempDir dir;
  const auto r = run_trial(cache_plan(testing::make_image_cache(dir / "d", 8, 72), {{"pin_memory", "true"}}));
  ASSERT_EQ(r.status, TrialStatus::ok) << r.message;
  const std::string obs = observed(r, "pin_memory");
  // 2 slots × (input, target): allocated once, however many batches were staged.
  EXPECT_EQ(obs.rfind("staged batch is_pinned() = true; 4 pinned buffers allocated for ", 0), 0u) << obs;
}

TEST(Gpu, SyntheticDataIsMadeOnTheDeviceSoThereIsNoCopyToPin) {
  REQUIRE_CUDA();
  const auto r = run_trial(cuda_plan("resnet18", {{"pin_memory", "true"}}));
  ASSERT_EQ(r.status, TrialStatus::ok) << r.message;
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(
      r.skipped[0].reason,
      "pin_memory=true: synthetic data is generated on the device: there is no host-to-device copy (use --data); ran with false");
  EXPECT_EQ(observed(r, "pin_memory"), "no host-to-device copy: synthetic batches are made on the device");
  EXPECT_LT(r.breakdown.h2d_ms, 0.05);
}

TEST(Gpu, AugmentOnCudaEqualsTheSameOpsOnTheCpu) {
  REQUIRE_CUDA();
  const auto img = torch::randint(256, {16, 72, 72, 3}, torch::kUInt8);
  auto crops = torch::rand({16, 5});
  crops.select(1, 0).mul_(30);
  crops.select(1, 1).mul_(30);
  crops.select(1, 2).mul_(40).add_(2);
  crops.select(1, 3).mul_(40).add_(2);
  crops.select(1, 4).round_();
  const auto cpu = augment_on_device(img, crops, 64);
  const auto gpu = augment_on_device(img.cuda(), crops.cuda(), 64);
  EXPECT_TRUE(gpu.is_cuda());
  EXPECT_TRUE(torch::allclose(gpu.cpu(), cpu, 1e-3, 1e-3)) << (gpu.cpu() - cpu).abs().max();
}

TEST(Gpu, AugmentDeviceGpuTrainsFromTheCacheAndCopiesUint8) {
  REQUIRE_CUDA();
  testing::TempDir dir;
  const auto r = run_trial(cache_plan(testing::make_image_cache(dir / "d", 8, 72),
                                      {{"augment_device", "gpu"}, {"pin_memory", "true"}, {"batch_size", "16"}}));
  ASSERT_EQ(r.status, TrialStatus::ok) << r.message;
  EXPECT_TRUE(r.skipped.empty());
  EXPECT_EQ(
      observed(r, "augment_device"),
      "uint8 (16, 72, 72, 3) = 248832 bytes per batch copied; crop/flip/normalise by grid_sample on cuda:0 → Float (16, 3, 64, 64)");
  // input, target and crop windows in each of the 2 slots.
  EXPECT_EQ(observed(r, "pin_memory").rfind("staged batch is_pinned() = true; 6 pinned buffers allocated for ", 0), 0u)
      << observed(r, "pin_memory");
  for (double l : r.losses) EXPECT_TRUE(std::isfinite(l));
}

TEST(Gpu, CudaGraphsReplayTheStepWithTheEagerLosses) {
  REQUIRE_CUDA();
  auto plan = cuda_plan("gpt-mini", {{"optimizer_impl", "fused"}, {"log_every", "10"}});
  const auto eager = run_trial(plan);
  plan.config.set("cuda_graphs", "on");
  const auto graphed = run_trial(plan);
  ASSERT_EQ(eager.status, TrialStatus::ok) << eager.message;
  ASSERT_EQ(graphed.status, TrialStatus::ok) << graphed.message;
  EXPECT_TRUE(graphed.skipped.empty());
  EXPECT_EQ(observed(graphed, "cuda_graphs").rfind("whole step captured once; ", 0), 0u) << observed(graphed, "cuda_graphs");
  // Same seed, same batches, one optimizer step per call: the first 10 losses agree.
  auto all = [](const TrialResult& r) {
    auto v = r.warmup_losses;
    v.insert(v.end(), r.losses.begin(), r.losses.end());
    return v;
  };
  const auto a = all(eager), b = all(graphed);
  ASSERT_GE(std::min(a.size(), b.size()), 10u);
  for (size_t i = 0; i < 10; ++i) EXPECT_NEAR(a[i], b[i], 1e-3 * std::abs(a[i])) << "step " << i + 1;
}

TEST(Gpu, CudaGraphsRefuseANonFusedOptimizerWithTheReason) {
  REQUIRE_CUDA();
  const auto r = run_trial(cuda_plan("gpt-mini", {{"cuda_graphs", "on"}, {"optimizer_impl", "loop"}}));
  ASSERT_EQ(r.status, TrialStatus::ok) << r.message;
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].reason,
            "cuda_graphs=on: needs optimizer_impl=fused (its step counters live on the device); ran with off");
}

TEST(Gpu, GradScalerSkipsAnInfStepOnTheDevice) {
  REQUIRE_CUDA();
  auto p = torch::ones({4}, torch::TensorOptions().device(torch::kCUDA).requires_grad(true));
  auto opt = make_adamw("fused", {p}, {});
  GradScaler scaler(torch::Device(torch::kCUDA, 0));
  scaler.scale(p.sum()).backward();
  {
    torch::NoGradGuard ng;
    p.mutable_grad()[0] = std::numeric_limits<float>::infinity();
  }
  scaler.unscale(opt->params(), true);
  opt->step(scaler.scale_tensor(), scaler.found_inf());
  scaler.update();
  EXPECT_TRUE(torch::equal(p.detach().cpu(), torch::ones({4})));
  EXPECT_EQ(scaler.current_scale(), 32768.0);
}

}  // namespace
}  // namespace autotune

namespace autotune {
namespace {

/// A traced trial on the GPU: real CUPTI records, analysed.
nlohmann::json traced(const std::string& workload, std::initializer_list<std::pair<const char*, const char*>> knobs,
                      const std::string& path, const std::string& cache = "") {
  TrialPlan p;
  p.setup.workload = workload;
  p.setup.data = cache;
  p.setup.data_cache = cache;
  p.setup.device = "cuda";
  p.setup.image_size = 64;
  p.setup.measure.warmup_min_seconds = 0;
  for (const auto& [k, v] : knobs) p.config.set(k, v);
  p.trace = path;
  p.trace_steps = 5;
  const TrialResult r = run_trial(p);
  EXPECT_EQ(r.status, TrialStatus::ok) << r.message;
  return r.profile ? nlohmann::json(*r.profile) : nlohmann::json::object();
}

TEST(GpuProfile, CuptiRecordsKernelsAndItemIsOneSyncPerStepUntilLogEvery) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device available";
  for (const char* w : {"resnet18", "gpt-mini"}) {
    const auto p = traced(w, {{"log_every", "1"}}, "/tmp/autotune-gpu-trace-1.json");
    ASSERT_EQ(p.value("mode", std::string()), "cupti") << p.dump();
    EXPECT_TRUE(p.value("valid", false)) << p.value("invalid_reason", std::string());
    EXPECT_GT(p.value("kernels_per_step", 0.0), 10) << w;
    EXPECT_NEAR(p.value("syncs_per_step", 0.0), 1.0, 0.01) << p["syncs"].dump();  // loss.item() every step
    const auto q = traced(w, {{"log_every", "100"}}, "/tmp/autotune-gpu-trace-100.json");
    EXPECT_LT(q.value("syncs_per_step", 1.0), 0.25) << q["syncs"].dump();  // read once per 100 steps
  }
}

TEST(GpuProfile, PinnedH2DReachesASaneShareOfPcieBandwidth) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device available";
  testing::TempDir dir;
  const auto p = traced("resnet18", {{"pin_memory", "true"}, {"batch_size", "128"}, {"decode", "cache"}},
                        "/tmp/autotune-gpu-trace-pin.json", testing::make_image_cache(dir / "d", 8, 72));
  double pinned = 0;
  for (const auto& c : p["copies"])
    if (c.value("kind", std::string()) == "HtoD pinned") pinned = c.value("gb_per_s", 0.0);
  EXPECT_GT(pinned, 5.0) << p["copies"].dump();  // PCIe 4/5 x16: 25–55 GB/s; far below means unpinned or tiny copies
}

}  // namespace
}  // namespace autotune
