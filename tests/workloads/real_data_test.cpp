// Real data in the worker: an image folder (and its cache) feeding resnet, a token file feeding gpt,
// through the threaded loader — the knobs' proofs, determinism across worker counts, bad data.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "knobs/error.h"
#include "tests/support/expect_throw_msg.h"
#include "tests/support/image_fixtures.h"
#include "tests/support/temp_dir.h"
#include "data/augment.h"
#include "data/cache_file.h"
#include "data/jpeg.h"
#include "workloads/input/pipeline.h"
#include "workloads/engine/trainer.h"

namespace autotune {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

using testing::make_image_folder;

TrialPlan plan(const std::string& workload, const std::string& data) {
  TrialPlan p;
  p.setup.workload = workload;
  p.setup.data = data;
  p.setup.device = "cpu";
  p.setup.image_size = 32;
  p.config.set("batch_size", "4").set("threads", "1");
  p.setup.measure.warmup_min_steps = 2;
  p.setup.measure.warmup_min_seconds = 0;
  p.setup.measure.windows = 3;
  p.setup.measure.window_min_seconds = 0.01;
  p.setup.measure.window_min_steps = 2;
  return p;
}

std::string observed(const TrialResult& r, const std::string& knob) {
  for (const auto& a : r.applied)
    if (a.knob == knob) return a.observed;
  return "";
}

TEST(RealData, ImageFolderTrainsWithLoaderThreadsAndRecordsProofs) {
  TempDir dir;
  make_image_folder(dir / "imgs", 8);
  TrialPlan p = plan("resnet18", dir / "imgs");
  p.config.set("num_workers", "2").set("decode", "jpeg_crop_scale").set("prefetch", "1");
  const TrialResult r = run_trial(p);
  ASSERT_EQ(r.status, TrialStatus::ok) << r.message;
  EXPECT_EQ(r.data.source, dir / "imgs");
  EXPECT_EQ(r.data.decode, "jpeg_crop_scale");
  EXPECT_EQ(r.data.num_workers, 2);
  EXPECT_GT(r.data.images_ok, 0);
  EXPECT_EQ(r.data.images_bad, 0);
  EXPECT_NE(observed(r, "num_workers").find("2 loader threads"), std::string::npos) << observed(r, "num_workers");
  EXPECT_NE(observed(r, "decode").find("decoded by jpeg_crop_scale"), std::string::npos);
  EXPECT_NE(observed(r, "prefetch").find("at most 2 batches in flight"), std::string::npos);
  for (double l : r.losses) EXPECT_TRUE(std::isfinite(l));
}

TEST(RealData, BatchesAreIdenticalForAnyWorkerCountAndTheCacheMatchesItsShape) {
  TempDir dir;
  make_image_folder(dir / "imgs", 5);
  auto first_batches = [&](int workers, const std::string& decode) {
    DataOptions o;
    o.data = dir / "imgs";
    o.cache = dir / "cache.bin";
    o.decode = decode;
    o.num_workers = workers;
    o.batch_size = 4;
    o.image_size = 32;
    o.seed = 11;
    ImagePipeline p(o);
    std::vector<torch::Tensor> xs;
    for (int i = 0; i < 6; ++i) {  // 24 samples: crosses the 15-image epoch boundary
      auto [x, y, crops, more] = p.next();
      EXPECT_TRUE(more.empty());
      EXPECT_FALSE(crops.defined());
      EXPECT_EQ(x.sizes(), (std::vector<std::int64_t>{4, 3, 32, 32}));
      EXPECT_EQ(y.max().item<std::int64_t>() < 3, true);
      xs.push_back(x);
    }
    return xs;
  };
  const auto ref = first_batches(0, "jpeg_full");
  for (int w : {1, 3}) {
    const auto got = first_batches(w, "jpeg_full");
    for (size_t i = 0; i < ref.size(); ++i) EXPECT_TRUE(torch::equal(ref[i], got[i])) << "workers " << w << " batch " << i;
  }
  // Normalised with ImageNet mean/std: roughly centred.
  EXPECT_LT(ref[0].mean().abs().item<double>(), 1.5);
  data::PrepareOptions po;
  po.from = dir / "imgs";
  po.to = dir / "cache.bin";
  po.side = 40;
  data::prepare_cache(po);
  const auto cached = first_batches(2, "cache");
  EXPECT_EQ(cached.size(), ref.size());
}

/// (images - mean) · inv_std per channel of uint8 NHWC → float NCHW: the CPU reference of the mapping.
torch::Tensor normalise(const torch::Tensor& u8_nhwc) {
  const auto mean = torch::tensor({0.485f * 255, 0.456f * 255, 0.406f * 255}).view({1, 3, 1, 1});
  const auto std = torch::tensor({0.229f * 255, 0.224f * 255, 0.225f * 255}).view({1, 3, 1, 1});
  return (u8_nhwc.permute({0, 3, 1, 2}).to(torch::kFloat32) - mean) / std;
}

TEST(AugmentOnDevice, AnUnscaledWindowIsExactlyThosePixelsAndAFlipMirrorsThem) {
  const auto img = torch::randint(256, {2, 40, 44, 3}, torch::kUInt8);
  // Image 0: window x=5, y=3, 32×32, no flip. Image 1: window x=0, y=8, 32×32, flipped.
  const auto crops = torch::tensor({5.f, 3.f, 32.f, 32.f, 0.f, 0.f, 8.f, 32.f, 32.f, 1.f}).view({2, 5});
  const auto out = augment_on_device(img, crops, 32);
  ASSERT_EQ(out.sizes(), (std::vector<std::int64_t>{2, 3, 32, 32}));
  const auto want0 = normalise(img.narrow(0, 0, 1).narrow(1, 3, 32).narrow(2, 5, 32));
  const auto want1 = normalise(img.narrow(0, 1, 1).narrow(1, 8, 32).narrow(2, 0, 32)).flip({3});
  EXPECT_TRUE(torch::allclose(out.narrow(0, 0, 1), want0, 1e-4, 1e-4)) << (out.narrow(0, 0, 1) - want0).abs().max();
  EXPECT_TRUE(torch::allclose(out.narrow(0, 1, 1), want1, 1e-4, 1e-4)) << (out.narrow(0, 1, 1) - want1).abs().max();
  // A 2× upscale of a 2×2 window: pixel centres map as in a plain bilinear resize (half-pixel offsets).
  const auto ramp = torch::tensor({0, 0, 0, 100, 100, 100, 0, 0, 0, 100, 100, 100}, torch::kUInt8).view({1, 2, 2, 3});
  const auto up = augment_on_device(ramp, torch::tensor({0.f, 0.f, 2.f, 2.f, 0.f}).view({1, 5}), 4);
  const auto row = (up[0][0][0] / (1 / (0.229 * 255)) + 0.485 * 255);  // back to levels, red channel
  // Output x centres 0.25, 0.75, 1.25, 1.75 px → source x −0.25 (border), 0.25, 0.75, 1.25 (border).
  const std::vector<double> want = {0, 25, 75, 100};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(row[i].item<double>(), want[i], 1e-3) << i;
}

TEST(AugmentOnDevice, MatchesTheLoadersCpuCropOfTheSameSamples) {
  TempDir dir;
  // Side 36 → 32: the largest downscale is 1.125, as 256 → 224 on ImageNet (1.14).
  const std::string cache = testing::make_image_cache(dir / "d", 6, 36);
  DataOptions o;
  o.cache = cache;
  o.decode = "cache";
  o.batch_size = 8;
  o.image_size = 32;
  o.seed = 5;
  ImagePipeline cpu(o);
  o.augment_on_device = true;
  o.num_workers = 2;
  ImagePipeline raw(o);
  double worst_mean = 0, flipped_mean = 1e9;
  for (int i = 0; i < 3; ++i) {
    const auto a = cpu.next(), b = raw.next();
    EXPECT_FALSE(a.crops.defined());
    ASSERT_TRUE(b.crops.defined());
    ASSERT_EQ(b.input.sizes(), (std::vector<std::int64_t>{8, 36, 36, 3}));
    EXPECT_TRUE(torch::equal(a.target, b.target));  // same samples in the same order
    const auto got = augment_on_device(b.input, b.crops, 32);
    // In pixel levels: |Δ| · 255 · std ≈ |Δ| · 57.
    const auto levels = (got - a.input).abs() * (0.226 * 255);
    worst_mean = std::max(worst_mean, levels.mean().item<double>());
    auto wrong = b.crops.clone();
    wrong.select(1, 4).fill_(1).sub_(b.crops.select(1, 4));  // every flip inverted
    flipped_mean =
        std::min(flipped_mean, ((augment_on_device(b.input, wrong, 32) - a.input).abs() * (0.226 * 255)).mean().item<double>());
  }
  // Bilinear vs the loader's antialiased triangle filter on a busy texture: about half a level (0.50 measured)…
  EXPECT_LT(worst_mean, 1.5) << "flipped " << flipped_mean;
  // …while the same pixels with the flips inverted are far off: the comparison can fail.
  EXPECT_GT(flipped_mean, 5 * worst_mean) << "matched " << worst_mean;
}

TEST(AugmentOnDevice, NeedsTheCacheAndACudaDevice) {
  TempDir dir;
  make_image_folder(dir / "imgs", 4);
  DataOptions o;
  o.data = dir / "imgs";
  o.decode = "jpeg_full";
  o.batch_size = 4;
  o.image_size = 32;
  o.augment_on_device = true;
  EXPECT_THROW_MSG(
      ImagePipeline p(o), UsageError,
      "augment_device=gpu needs decode=cache: the GPU crops the cache's fixed-size images (JPEG files differ in size)");
  TrialPlan p = plan("resnet18", dir / "imgs");
  p.config.set("augment_device", "gpu");
  const TrialResult r = run_trial(p);
  ASSERT_EQ(r.status, TrialStatus::ok) << r.message;
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].reason, "augment_device=gpu: needs a CUDA device; none is available; ran with cpu");
}

TEST(RealData, TooMuchBadDataFailsTheTrialWithTheCounts) {
  TempDir dir;
  make_image_folder(dir / "imgs", 6, 2);  // 2 of 20 files are empty: 10% > 1%
  const TrialResult r = run_trial(plan("resnet18", dir / "imgs"));
  EXPECT_EQ(r.status, TrialStatus::error);
  EXPECT_NE(r.message.find("too much bad data: "), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("empty"), std::string::npos) << r.message;
  EXPECT_GT(r.data.images_bad, 0);
  // With a higher allowed share the same folder trains, and the skips are counted.
  TrialPlan p = plan("resnet18", dir / "imgs");
  p.setup.max_bad_share = 0.5;
  const TrialResult ok = run_trial(p);
  ASSERT_EQ(ok.status, TrialStatus::ok) << ok.message;
  ASSERT_FALSE(ok.data.bad_by_reason.empty());
  EXPECT_EQ(ok.data.bad_by_reason[0].first, "empty");
}

TEST(RealData, AMissingFolderIsAnErrorResultNotACrash) {
  TempDir dir;
  const TrialResult r = run_trial(plan("resnet18", dir / "nope"));
  EXPECT_EQ(r.status, TrialStatus::error);
  EXPECT_EQ(r.message, "image folder " + dir / "nope" + " does not exist");
}

TEST(RealData, ATracedTrialReportsTheLoadersThreadUtilisation) {
  TempDir dir;
  make_image_folder(dir / "imgs", 8);
  TrialPlan p = plan("resnet18", dir / "imgs");
  p.config.set("num_workers", "1");
  p.trace = dir / "t.json";
  p.trace_steps = 4;
  const TrialResult r = run_trial(p);
  ASSERT_EQ(r.status, TrialStatus::ok) << r.message;
  ASSERT_TRUE(r.profile);
  EXPECT_EQ(r.profile->mode, "host-only");
  ASSERT_TRUE(r.profile->loader) << nlohmann::json(*r.profile).dump();
  EXPECT_EQ(r.profile->loader->num_workers, 1);
  const double u = r.profile->loader->utilisation;
  EXPECT_GT(u, 0.0);
  EXPECT_LE(u, 1.05);  // one thread cannot be busy more than the wall time (small timer slack)
  EXPECT_TRUE(fs::exists(dir / "t.json"));
  EXPECT_TRUE(r.windows.empty());  // a traced trial is never a timed one
}

TEST(RealData, TokenFileFeedsGpt) {
  TempDir dir;
  std::vector<std::uint16_t> toks(20000);
  for (size_t i = 0; i < toks.size(); ++i) toks[i] = static_cast<std::uint16_t>((i * 31 + i / 7) % 500);  // gpt-mini: vocab 512
  std::ofstream(dir / "t.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(toks.data()), static_cast<std::streamsize>(toks.size() * 2));
  TrialPlan p = plan("gpt-mini", dir / "t.bin");
  p.config.set("num_workers", "1");
  const TrialResult r = run_trial(p);
  ASSERT_EQ(r.status, TrialStatus::ok) << r.message;
  EXPECT_EQ(r.data.decode, "tokens");
  EXPECT_EQ(r.data.num_workers, 1);
  EXPECT_GT(r.data.batches, 0);
  // A token outside the vocabulary is refused with the id and the vocabulary size.
  toks[123] = 600;
  std::ofstream(dir / "big.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(toks.data()), static_cast<std::streamsize>(toks.size() * 2));
  const TrialResult bad = run_trial(plan("gpt-mini", dir / "big.bin"));
  EXPECT_EQ(bad.status, TrialStatus::error);
  EXPECT_EQ(bad.message, "token file " + dir / "big.bin" + ": token id 600 is outside the model's vocabulary of 512");
}

}  // namespace
}  // namespace autotune
