// Host→device and on-device data benchmarks (Google Benchmark). GPU only: without a CUDA device the
// binary says so and exits 0, running nothing.
//   build/bin/device_bench --benchmark_format=json > device_bench.json
// H2D: pageable tensor.to(cuda) (the host waits) vs a reused pinned buffer + non_blocking copy (what
// the pin_memory knob does) vs pinning a fresh buffer per batch (the slow way the pin_memory knob's tip warns about)
// vs the pinned→device copy alone (the link), at 1, 8 and 64 MiB. The gpt model's residual add, mixed-dtype vs
// cast-then-add; the tied embedding's gradient accumulation with the LM head's gradient transposed vs not. Augmentation: augment_on_device for a batch of 256 cache images 256² → 224
// (augment_device=gpu), and the uint8 vs float32 bytes the two augment_device settings copy; the first
// augmentation of the process (one-time CUDA/cuBLAS costs) is timed apart, in the output's context.
#include <benchmark/benchmark.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <utility>

#include "workloads/input/pipeline.h"

namespace {

void sync() { c10::cuda::getCurrentCUDAStream().synchronize(); }

torch::Tensor host(std::int64_t bytes, bool pinned) {
  return torch::empty({bytes}, torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(pinned)).fill_(7);
}

void BM_H2D_Pageable(benchmark::State& st) {
  const auto src = host(st.range(0), false);
  for (auto _ : st) {
    auto d = src.to(torch::kCUDA);  // synchronous for pageable memory
    benchmark::DoNotOptimize(d);
  }
  sync();
  st.SetBytesProcessed(st.iterations() * st.range(0));
}

void BM_H2D_PinnedReused(benchmark::State& st) {
  const auto src = host(st.range(0), false);
  auto staging = host(st.range(0), true);  // allocated once, as PinnedStager does
  for (auto _ : st) {
    staging.copy_(src);
    auto d = staging.to(torch::kCUDA, /*non_blocking=*/true);
    sync();  // the staging buffer is reused next iteration
    benchmark::DoNotOptimize(d);
  }
  st.SetBytesProcessed(st.iterations() * st.range(0));
}

void BM_H2D_PinnedPerBatch(benchmark::State& st) {
  const auto src = host(st.range(0), false);
  for (auto _ : st) {
    auto staging = src.pin_memory();  // cudaHostAlloc (or the caching host allocator) every batch
    auto d = staging.to(torch::kCUDA, /*non_blocking=*/true);
    sync();
    benchmark::DoNotOptimize(d);
  }
  st.SetBytesProcessed(st.iterations() * st.range(0));
}

// The link alone: a pinned buffer already filled, copied to the device (what the pinned staging ring's
// copy engine does once the host has packed the batch). H2D/pinned_reused adds the host-side pack (a
// memcpy from pageable memory) in series, so it understates the link; this is the figure to hold
// against the PCIe link's bandwidth (scripts/device_check.py reads the link's generation and width).
void BM_H2D_PinnedOnly(benchmark::State& st) {
  const auto staging = host(st.range(0), true);
  auto d = torch::empty({st.range(0)}, torch::TensorOptions().dtype(torch::kUInt8).device(torch::kCUDA));
  for (auto _ : st) {
    d.copy_(staging, /*non_blocking=*/true);
    sync();
  }
  benchmark::DoNotOptimize(d);
  st.SetBytesProcessed(st.iterations() * st.range(0));
}

// gpt2-124m's residual add under autocast: the fp32 stream (32 × 1024 × 768) plus a bf16 branch.
// mixed = `x + branch`, what workloads/models/gpt.cpp does (one pass, ATen's per-element dynamic-casting
// kernel); cast = `x + branch.to(fp32)` (a cast copy, then a same-dtype add: more bytes moved, simpler
// kernels); bitwise the same values. Which is faster on the GPU decides whether the model should cast.
void BM_ResidualAdd(benchmark::State& st, bool cast) {
  const auto x = torch::randn({32, 1024, 768}, torch::TensorOptions().device(torch::kCUDA));
  const auto branch = torch::randn({32, 1024, 768}, torch::TensorOptions().device(torch::kCUDA)).to(torch::kBFloat16);
  for (auto _ : st) {
    auto y = cast ? x + branch.to(torch::kFloat) : x + branch;
    sync();
    benchmark::DoNotOptimize(y);
  }
  st.SetBytesProcessed(st.iterations() * (x.nbytes() * 2 + branch.nbytes()));  // read both, write fp32
}

// gpt2-124m's tied embedding: its gradient is accumulated from the embedding's backward ([V, C]) and the
// LM head's, which workloads/models/gpt.cpp computes as matmul(x, wte.weight.t()) and so delivers
// transposed (a strided read). transposed = that add; contiguous = the same add when the head's gradient
// arrives as [V, C] (F::linear(x, wte.weight) would deliver it so).
void BM_TiedGradAdd(benchmark::State& st, bool transposed) {
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  const auto emb = torch::randn({50304, 768}, opts);
  const auto head = transposed ? torch::randn({768, 50304}, opts).t() : torch::randn({50304, 768}, opts);
  for (auto _ : st) {
    auto y = emb + head;
    sync();
    benchmark::DoNotOptimize(y);
  }
  st.SetBytesProcessed(st.iterations() * emb.nbytes() * 3);
}

constexpr std::int64_t kAugmentBatch = 256;

// A batch of 256 uint8 cache images 256² on the GPU and a random crop window (x, y, w, h, flip) per image.
std::pair<torch::Tensor, torch::Tensor> augment_input() {
  const std::int64_t b = kAugmentBatch;
  auto img = torch::randint(256, {b, 256, 256, 3}, torch::TensorOptions().dtype(torch::kUInt8).device(torch::kCUDA));
  auto crops = torch::rand({b, 5});
  crops.select(1, 2).mul_(200).add_(56);
  crops.select(1, 3).mul_(200).add_(56);
  crops.select(1, 0).mul_(256).sub_(crops.select(1, 2)).clamp_min_(0);
  crops.select(1, 1).mul_(256).sub_(crops.select(1, 3)).clamp_min_(0);
  crops.select(1, 4).round_();
  return {img, crops.cuda()};
}

void BM_AugmentOnDevice(benchmark::State& st) {
  const std::int64_t b = kAugmentBatch;
  const auto [img, dev_crops] = augment_input();
  for (auto _ : st) {
    auto y = autotune::augment_on_device(img, dev_crops, 224);
    sync();
    benchmark::DoNotOptimize(y);
  }
  st.SetItemsProcessed(st.iterations() * b);
  st.counters["uint8_MiB_per_batch"] = static_cast<double>(img.nbytes()) / (1 << 20);
  st.counters["float32_MiB_per_batch_cpu_augment"] = static_cast<double>(b * 3 * 224 * 224 * 4) / (1 << 20);
}

}  // namespace

int main(int argc, char** argv) {
  // Flags first: a bad flag must fail here too, not only on a GPU machine (scripts/device-check.sh
  // rehearses this binary on the CPU).
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (!torch::cuda::is_available()) {
    std::printf("device_bench: no CUDA device available; nothing to measure (GPU-only benchmarks)\n");
    return 0;
  }
  // The first augmentation in a process pays one-time costs the timed ones must not: cuBLAS's handle and
  // workspace (affine_grid is a batched matmul) and loading the kernels' modules (CUDA loads them lazily).
  // Timed once here, apart; in a trial the warm-up absorbs it.
  {
    const auto [img, crops] = augment_input();
    sync();
    const auto t0 = std::chrono::steady_clock::now();
    auto y = autotune::augment_on_device(img, crops, 224);
    sync();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    benchmark::AddCustomContext("augment_on_device_first_call_ms", fmt::format("{:.2f}", ms));
  }
  for (auto* b : {benchmark::RegisterBenchmark("H2D/pageable", BM_H2D_Pageable),
                  benchmark::RegisterBenchmark("H2D/pinned_reused", BM_H2D_PinnedReused),
                  benchmark::RegisterBenchmark("H2D/pinned_per_batch", BM_H2D_PinnedPerBatch),
                  benchmark::RegisterBenchmark("H2D/pinned_only", BM_H2D_PinnedOnly)})
    b->Arg(1 << 20)->Arg(8 << 20)->Arg(64 << 20)->UseRealTime()->MinWarmUpTime(0.05);
  benchmark::RegisterBenchmark("residual_add/mixed", BM_ResidualAdd, false)->UseRealTime()->MinWarmUpTime(0.05);
  benchmark::RegisterBenchmark("residual_add/cast_then_add", BM_ResidualAdd, true)->UseRealTime()->MinWarmUpTime(0.05);
  benchmark::RegisterBenchmark("tied_grad_add/transposed", BM_TiedGradAdd, true)->UseRealTime()->MinWarmUpTime(0.05);
  benchmark::RegisterBenchmark("tied_grad_add/contiguous", BM_TiedGradAdd, false)->UseRealTime()->MinWarmUpTime(0.05);
  benchmark::RegisterBenchmark("augment_on_device/256x256to224/batch256", BM_AugmentOnDevice)
      ->UseRealTime()
      ->MinWarmUpTime(0.1);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
