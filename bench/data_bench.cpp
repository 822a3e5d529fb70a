// Input-pipeline benchmarks (Google Benchmark). Needs an image folder: $AUTOTUNE_BENCH_FOLDER
// (bench/data_bench.sh builds an ImageNet-like one from real photos). Every single-thread number is
// per core; the loader benchmarks report images/s of the whole process (real time).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

#include "data/augment.h"
#include "data/cache_file.h"
#include "data/image_source.h"
#include "data/jpeg.h"
#include "data/loader.h"

using namespace autotune::data;
namespace fs = std::filesystem;

namespace {

std::string bench_folder() {
  const char* f = std::getenv("AUTOTUNE_BENCH_FOLDER");
  return f ? f : "";
}

struct Files {
  std::vector<std::vector<std::uint8_t>> bytes;
  ImageFolder folder;
  static const Files& get() {
    static const Files f = [] {
      Files x;
      x.folder = ImageFolder::scan(bench_folder());
      for (const auto& p : x.folder.files) x.bytes.push_back(read_bytes(p));
      return x;
    }();
    return f;
  }
};

bool ready(benchmark::State& st) {
  if (bench_folder().empty()) {
    st.SkipWithError("set AUTOTUNE_BENCH_FOLDER to an image folder (bench/data_bench.sh makes one)");
    return false;
  }
  return true;
}

void BM_DecodeFull(benchmark::State& st) {
  if (!ready(st)) return;
  const auto& f = Files::get();
  std::size_t i = 0;
  for (auto _ : st) {
    const auto& b = f.bytes[i++ % f.bytes.size()];
    benchmark::DoNotOptimize(decode_full(b.data(), b.size()).rgb.data());
  }
  st.SetItemsProcessed(st.iterations());
}

/// One training sample (decode + RandomResizedCrop + flip to `range(0)`) per iteration, per mode.
void BM_Sample(benchmark::State& st, DecodeMode mode) {
  if (!ready(st)) return;
  const auto& f = Files::get();
  const int out = static_cast<int>(st.range(0));
  std::vector<std::uint8_t> px(static_cast<std::size_t>(out) * out * 3);
  std::unique_ptr<ImageSource> src;
  std::string cache;
  if (mode == DecodeMode::cache) {
    cache = (fs::temp_directory_path() / "autotune-bench-cache.bin").string();
    PrepareOptions o;
    o.from = bench_folder();
    o.to = cache;
    o.side = out * 8 / 7;  // 256 for 224: the usual resize-then-crop ratio
    o.force = true;
    prepare_cache(o);
    src = make_cache_source(cache);
  } else {
    src = make_folder_source(f.folder, mode);
  }
  std::uint64_t i = 0;
  for (auto _ : st) {
    const std::size_t idx = i % src->size();
    SampleRng rng(1, 0, i++);
    src->sample(idx, rng, out, px.data());
    benchmark::DoNotOptimize(px.data());
  }
  st.SetItemsProcessed(st.iterations());
  if (!cache.empty()) fs::remove(cache);
}

void BM_ResampleOnly(benchmark::State& st) {
  if (!ready(st)) return;
  const auto& f = Files::get();
  const Image img = decode_full(f.bytes[0].data(), f.bytes[0].size());
  std::vector<std::uint8_t> px(224 * 224 * 3);
  std::uint64_t i = 0;
  for (auto _ : st) {
    SampleRng rng(1, 0, i++);
    const CropParams p = random_resized_crop(img.width, img.height, rng);
    resample(img, p.window, 224, 224, p.flip, px.data());
    benchmark::DoNotOptimize(px.data());
  }
  st.SetItemsProcessed(st.iterations());
}

/// The threaded loader: batches of 64 at 224 with `range(0)` workers, decode mode jpeg_crop_scale.
void BM_Loader(benchmark::State& st, DecodeMode mode) {
  if (!ready(st)) return;
  const auto& f = Files::get();
  const auto src = make_folder_source(f.folder, mode);
  const auto order = epoch_order(src->size(), 1, 0);
  BadDataCounter bad;
  const int b = 64, out = 224;
  BatchLoader loader(static_cast<int>(st.range(0)), 2, [&](std::uint64_t k, BatchSlot& s) {
    s.bytes.resize(static_cast<std::size_t>(b) * out * out * 3);
    s.ints.resize(b);
    fill_image_batch(*src, order, 1, 0, (k * b) % src->size(), b, out, s.bytes.data(), s.ints.data(), bad);
  });
  for (auto _ : st) benchmark::DoNotOptimize(loader.next().bytes.data());
  st.SetItemsProcessed(st.iterations() * b);
}

}  // namespace

BENCHMARK(BM_DecodeFull)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ResampleOnly)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Sample, jpeg_full, DecodeMode::jpeg_full)->Arg(224)->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Sample, jpeg_crop_scale, DecodeMode::jpeg_crop_scale)->Arg(224)->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Sample, cache, DecodeMode::cache)->Arg(224)->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Loader, jpeg_crop_scale, DecodeMode::jpeg_crop_scale)
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Loader, jpeg_full, DecodeMode::jpeg_full)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
