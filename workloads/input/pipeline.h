#pragma once
// Real data for the workloads: the LibTorch-free loader (data/loader.h) feeding torch
// tensors. Images: decode + RandomResizedCrop + flip in the loader's workers, normalised to float32
// NCHW there too (ImageNet mean/std), so the training thread only waits and wraps. Tokens: windows
// of T+1 from a mapped uint16 file.
#include <torch/torch.h>

#include <memory>
#include <string>

#include "knobs/protocol.h"
#include "data/image_source.h"
#include "data/loader.h"
#include "data/tokens.h"
#include "workloads/workload.h"

namespace autotune {

struct DataOptions {
  std::string data, cache;
  std::string decode = "jpeg_full";
  int num_workers = 0, prefetch = 2;
  std::int64_t batch_size = 0;
  std::int64_t image_size = 224;
  std::uint64_t seed = 0;
  double max_bad_share = 0.01;
  /// augment_device=gpu: workers only copy the cache's stored uint8 images and draw each crop; the
  /// crop, flip and normalisation run on the device (augment_on_device). Needs decode=cache.
  bool augment_on_device = false;
  /// Data-parallel: batch k of rank r is slice r of global batch k (world × batch_size samples).
  int rank = 0, world = 1;

  /// An image workload's loader for a trial built with `o`, at `image_size` pixels.
  static DataOptions images(const BuildOptions& o, std::int64_t image_size);
  /// A token workload's loader (windows of a uint16 file; no cache, no augmentation).
  static DataOptions tokens(const BuildOptions& o);
};

/// RandomResizedCrop + horizontal flip + ImageNet normalisation of uint8 NHWC images on whatever device
/// they are on, as one batched bilinear grid_sample (pixel centres mapped as in a plain resize:
/// out pixel i samples x + (i + ½)·w/out − ½). `crops` (B, 5): x, y, w, h, flip, as in Batch. Returns float32
/// (B, 3, out, out). Bilinear without antialiasing: from a cache of side R the largest downscale is
/// R/out (256/224 ≈ 1.14), where a triangle filter and bilinear sampling differ by about a level.
torch::Tensor augment_on_device(const torch::Tensor& u8_nhwc, const torch::Tensor& crops, std::int64_t out_size);

class ImagePipeline {
 public:
  /// Throws std::runtime_error / UsageError (one line) for a bad folder or cache.
  explicit ImagePipeline(const DataOptions& o);
  /// The next batch on the host: normalised float32 (B, 3, S, S) — or, when augmenting on the device,
  /// the stored uint8 images (B, R, R, 3) with `crops` (B, 5): x, y, w, h, flip.
  Batch next();
  int num_classes() const { return source_->num_classes(); }
  std::size_t size() const { return source_->size(); }
  DataStats stats() const;
  /// Throws when more than max_bad_share of the images met were bad.
  void check() const { bad_.check(opts_.max_bad_share); }

 private:
  DataOptions opts_;
  std::unique_ptr<data::ImageSource> source_;
  mutable data::BadDataCounter bad_;
  std::mutex order_mu_;
  std::map<std::uint64_t, std::shared_ptr<const std::vector<std::uint32_t>>> orders_;
  std::shared_ptr<const std::vector<std::uint32_t>> order(std::uint64_t epoch);
  std::unique_ptr<data::BatchLoader> loader_;  // last: its workers use the members above until it is destroyed
};

class TokenPipeline {
 public:
  TokenPipeline(const DataOptions& o, int block_size, std::int64_t vocab_size);
  std::pair<torch::Tensor, torch::Tensor> next();  ///< (B, T) int64 inputs and targets
  DataStats stats() const;

 private:
  DataOptions opts_;
  int t_;
  std::unique_ptr<data::TokenFile> file_;
  std::unique_ptr<data::BatchLoader> loader_;
};

/// The checks a trial would make on --data (and --cache) before its first step, made up front by the
/// worker's `describe` so a tune or check with unusable data stops with one line instead of running
/// every trial into the same error: a token file's size and vocabulary, an image folder's layout, a
/// cache's header. Throws UsageError naming the file.
void check_data(const TrialSetup& setup, const WorkloadInfo& info);

}  // namespace autotune
