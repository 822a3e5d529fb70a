#pragma once
#include <torch/torch.h>

#include <cstdint>

namespace autotune {
/// A generator for index draws on `device` (CPU or CUDA), seeded.
at::Generator make_generator(const torch::Device& device, std::uint64_t seed);

/// This process's share of each global batch in a data-parallel trial (rank 0 of 1 otherwise).
struct Shard {
  int rank = 0, world = 1;
};

/// `batch` random indices below `high` (shape {batch, tail...}) for `shard`: every rank draws the same
/// global batch of world × batch indices (equal seeds keep the generators in step) and keeps its own
/// contiguous slice, so the ranks' batches are disjoint draws and together are exactly the batch one
/// process of world × batch would draw — what DistributedSampler does to a global order.
torch::Tensor shard_indices(std::int64_t high, std::int64_t batch, at::Generator& gen, const torch::TensorOptions& o,
                            const Shard& shard, std::vector<std::int64_t> tail = {});
}  // namespace autotune

namespace autotune {

/// Synthetic classification data: a fixed pool of `pool_size` samples drawn once from N(0, 1), with
/// labels from a fixed random linear teacher so the task is learnable (loss falls as it trains).
/// Batches are random rows of the pool (sampled with a seeded generator), gathered into a fresh
/// contiguous tensor each step — the data phase costs a real gather, as a loader's collate would.
class SyntheticClassification {
 public:
  /// The pool is drawn on the CPU (same values on every device), then kept on `device`, where the
  /// batches are gathered too: compute-only measurements have no host-to-device copy.
  SyntheticClassification(std::int64_t pool_size, std::int64_t features, std::int64_t classes, std::uint64_t seed,
                          torch::Device device = torch::kCPU);

  /// (batch_size, features) float32 and (batch_size) int64, on the device.
  std::pair<torch::Tensor, torch::Tensor> next(std::int64_t batch_size);
  void set_shard(Shard s) { shard_ = s; }

  std::int64_t features() const { return features_; }
  std::int64_t classes() const { return classes_; }

 private:
  std::int64_t features_, classes_;
  torch::Tensor inputs_, labels_;
  at::Generator gen_;
  Shard shard_;
};

}  // namespace autotune
