// Host→device and on-device data benchmarks (Google Benchmark). GPU only: without a CUDA device the
// binary says so and exits 0, running nothing.
//   build/bin/device_bench --benchmark_format=json > device_bench.json
// H2D: pageable tensor.to(cuda) (the host waits) vs a reused pinned buffer + non_blocking copy (what
// the pin_memory knob does) vs pinning a fresh buffer per batch (the slow way the pin_memory knob's tip warns about),
// at 1, 8 and 64 MiB. Augmentation: augment_on_device for a batch of 256 cache images 256² → 224
// (augment_device=gpu), and the uint8 vs float32 bytes the two augment_device settings copy.
#include <benchmark/benchmark.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <cstdio>

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

void BM_AugmentOnDevice(benchmark::State& st) {
  const std::int64_t b = 256;
  const auto img = torch::randint(256, {b, 256, 256, 3}, torch::TensorOptions().dtype(torch::kUInt8).device(torch::kCUDA));
  auto crops = torch::rand({b, 5});
  crops.select(1, 2).mul_(200).add_(56);
  crops.select(1, 3).mul_(200).add_(56);
  crops.select(1, 0).mul_(256).sub_(crops.select(1, 2)).clamp_min_(0);
  crops.select(1, 1).mul_(256).sub_(crops.select(1, 3)).clamp_min_(0);
  crops.select(1, 4).round_();
  const auto dev_crops = crops.cuda();
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
  for (auto* b : {benchmark::RegisterBenchmark("H2D/pageable", BM_H2D_Pageable),
                  benchmark::RegisterBenchmark("H2D/pinned_reused", BM_H2D_PinnedReused),
                  benchmark::RegisterBenchmark("H2D/pinned_per_batch", BM_H2D_PinnedPerBatch)})
    b->Arg(1 << 20)->Arg(8 << 20)->Arg(64 << 20)->UseRealTime();
  benchmark::RegisterBenchmark("augment_on_device/256x256to224/batch256", BM_AugmentOnDevice)->UseRealTime();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
