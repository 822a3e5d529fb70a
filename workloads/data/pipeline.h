#pragma once
// Real data for the workloads: the LibTorch-free loader (workloads/data/loader.h) feeding torch
// tensors. Images: decode + RandomResizedCrop + flip in the loader's workers, normalised to float32
// NCHW there too (ImageNet mean/std), so the training thread only waits and wraps. Tokens: windows
// of T+1 from a mapped uint16 file.
#include <torch/torch.h>

#include <memory>
#include <string>

#include "knobs/protocol.h"
#include "workloads/data/image_source.h"
#include "workloads/data/loader.h"
#include "workloads/data/tokens.h"

namespace autotune {

struct DataOptions {
  std::string data, cache;
  std::string decode = "jpeg_full";
  int num_workers = 0, prefetch = 2;
  std::int64_t batch_size = 0;
  std::int64_t image_size = 224;
  std::uint64_t seed = 0;
  double max_bad_share = 0.01;
};

class ImagePipeline {
 public:
  /// Throws std::runtime_error / UsageError (one line) for a bad folder or cache.
  explicit ImagePipeline(const DataOptions& o);
  /// (B, 3, S, S) float32 normalised and (B) int64 labels, on the host.
  std::pair<torch::Tensor, torch::Tensor> next();
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

}  // namespace autotune
