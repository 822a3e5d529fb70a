#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <memory>

#include "knobs/protocol.h"

namespace autotune {

/// One training step's inputs. Produced on the host by the data stage; moved to the device by the
/// trainer (the H2D phase).
struct Batch {
  torch::Tensor input;   ///< (B, …)
  torch::Tensor target;  ///< (B) class indices, int64
  Batch to(const torch::Device& d) const { return {input.to(d), target.to(d)}; }
};

/// A model + its data + its loss. The trainer owns the loop; a workload only answers "what is the
/// next batch" and "what is the loss of this batch".
class Workload {
 public:
  virtual ~Workload() = default;
  virtual const WorkloadInfo& info() const = 0;
  /// Builds model and data with `seed` (same seed → same weights and batches).
  virtual void build(std::uint64_t seed) = 0;
  virtual torch::nn::Module& module() = 0;
  /// The next `batch_size` samples, on the host (the "data" phase of a step).
  virtual Batch next_batch(std::int64_t batch_size) = 0;
  /// Forward pass and loss on a device-resident batch; returns a scalar.
  virtual torch::Tensor loss(const Batch& batch) = 0;
};

}  // namespace autotune
