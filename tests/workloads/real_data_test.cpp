// Real data in the worker: an image folder (and its cache) feeding resnet, a token file feeding gpt,
// through the threaded loader — the knobs' proofs, determinism across worker counts, bad data.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/temp_dir.h"
#include "workloads/data/augment.h"
#include "workloads/data/cache_file.h"
#include "workloads/data/jpeg.h"
#include "workloads/data/pipeline.h"
#include "workloads/engine/trainer.h"

namespace autotune {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

/// DIR/c0..c2/*.jpg: textured 96×72 images encoded with tjCompress2 (plus `bad` zero-byte files).
void make_folder(const std::string& root, int per_class, int bad = 0) {
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < per_class; ++i) {
      data::Image img;
      img.width = 96;
      img.height = 72;
      img.rgb.resize(96 * 72 * 3);
      for (size_t p = 0; p < img.rgb.size(); ++p) img.rgb[p] = static_cast<std::uint8_t>((p * (7 + c) + i * 31 + (p / 288) * 5) & 255);
      const auto jpg = data::encode_jpeg(img, 90);
      fs::create_directories(root + "/c" + std::to_string(c));
      std::ofstream(root + "/c" + std::to_string(c) + "/" + std::to_string(i) + ".jpg", std::ios::binary)
          .write(reinterpret_cast<const char*>(jpg.data()), static_cast<std::streamsize>(jpg.size()));
    }
  for (int b = 0; b < bad; ++b) std::ofstream(root + "/c0/bad" + std::to_string(b) + ".jpg");
}

TrialPlan plan(const std::string& workload, const std::string& data) {
  TrialPlan p;
  p.workload = workload;
  p.data = data;
  p.device = "cpu";
  p.image_size = 32;
  p.config.set("batch_size", "4").set("threads", "1");
  p.measure.warmup_min_steps = 2;
  p.measure.warmup_min_seconds = 0;
  p.measure.windows = 3;
  p.measure.window_min_seconds = 0.01;
  p.measure.window_min_steps = 2;
  return p;
}

std::string observed(const TrialResult& r, const std::string& knob) {
  for (const auto& a : r.applied)
    if (a.knob == knob) return a.observed;
  return "";
}

TEST(RealData, ImageFolderTrainsWithLoaderThreadsAndRecordsProofs) {
  TempDir dir;
  make_folder(dir / "imgs", 8);
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
  make_folder(dir / "imgs", 5);
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
      auto [x, y] = p.next();
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

TEST(RealData, TooMuchBadDataFailsTheTrialWithTheCounts) {
  TempDir dir;
  make_folder(dir / "imgs", 6, 2);  // 2 of 20 files are empty: 10% > 1%
  const TrialResult r = run_trial(plan("resnet18", dir / "imgs"));
  EXPECT_EQ(r.status, TrialStatus::error);
  EXPECT_NE(r.message.find("too much bad data: "), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("empty"), std::string::npos) << r.message;
  EXPECT_GT(r.data.images_bad, 0);
  // With a higher allowed share the same folder trains, and the skips are counted.
  TrialPlan p = plan("resnet18", dir / "imgs");
  p.max_bad_share = 0.5;
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
  make_folder(dir / "imgs", 8);
  TrialPlan p = plan("resnet18", dir / "imgs");
  p.config.set("num_workers", "1");
  p.trace = dir / "t.json";
  p.trace_steps = 4;
  const TrialResult r = run_trial(p);
  ASSERT_EQ(r.status, TrialStatus::ok) << r.message;
  const auto prof = nlohmann::json::parse(r.profile);
  EXPECT_EQ(prof["mode"], "host-only");
  ASSERT_TRUE(prof.contains("loader")) << prof.dump();
  EXPECT_EQ(prof["loader"]["num_workers"], 1);
  const double u = prof["loader"]["utilisation"].get<double>();
  EXPECT_GT(u, 0.0);
  EXPECT_LE(u, 1.05);  // one thread cannot be busy more than the wall time (small timer slack)
  EXPECT_TRUE(fs::exists(dir / "t.json"));
  EXPECT_TRUE(r.windows.empty());  // a traced trial is never a timed one
}

TEST(RealData, TokenFileFeedsGpt) {
  TempDir dir;
  std::vector<std::uint16_t> toks(20000);
  for (size_t i = 0; i < toks.size(); ++i) toks[i] = static_cast<std::uint16_t>((i * 31 + i / 7) % 500);  // gpt-mini: vocab 512
  std::ofstream(dir / "t.bin", std::ios::binary).write(reinterpret_cast<const char*>(toks.data()), static_cast<std::streamsize>(toks.size() * 2));
  TrialPlan p = plan("gpt-mini", dir / "t.bin");
  p.config.set("num_workers", "1");
  const TrialResult r = run_trial(p);
  ASSERT_EQ(r.status, TrialStatus::ok) << r.message;
  EXPECT_EQ(r.data.decode, "tokens");
  EXPECT_EQ(r.data.num_workers, 1);
  EXPECT_GT(r.data.batches, 0);
  // A token outside the vocabulary is refused with the id and the vocabulary size.
  toks[123] = 600;
  std::ofstream(dir / "big.bin", std::ios::binary).write(reinterpret_cast<const char*>(toks.data()), static_cast<std::streamsize>(toks.size() * 2));
  const TrialResult bad = run_trial(plan("gpt-mini", dir / "big.bin"));
  EXPECT_EQ(bad.status, TrialStatus::error);
  EXPECT_EQ(bad.message, "token file " + dir / "big.bin" + ": token id 600 is outside the model's vocabulary of 512");
}

}  // namespace
}  // namespace autotune
