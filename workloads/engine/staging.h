#pragma once
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "workloads/workload.h"

namespace c10::cuda {
struct CUDAEvent;
}

namespace autotune {

/// Host→device copies through reusable page-locked (pinned) staging buffers, the `pin_memory` knob.
/// Pinning fresh memory per batch (cudaHostAlloc each time) can be slower than a plain pageable copy,
/// so a small ring of buffers is allocated once and reused: the batch is copied into the next slot,
/// then sent with `to(device, non_blocking=true)`. A CUDA event per slot guards reuse: a slot is only
/// overwritten after the copy that read it has finished.
class PinnedStager {
 public:
  explicit PinnedStager(torch::Device device, int slots = 2);
  ~PinnedStager();
  /// Device copy of `host` (input and target), sent from pinned memory without blocking the host.
  Batch stage(const Batch& host);
  /// Pinned buffers allocated so far (stays at 2 × slots for fixed shapes — 3 × with augment_device=gpu's
  /// crop windows — whatever the step count).
  int64_t allocations() const { return allocations_; }
  int64_t staged() const { return staged_; }
  /// Whether the last staging buffer used was page-locked (`is_pinned()`), the knob's proof.
  bool last_pinned() const { return last_pinned_; }

 private:
  struct Slot;
  torch::Tensor& ensure(torch::Tensor& buf, const torch::Tensor& like);
  torch::Device device_;
  std::vector<std::unique_ptr<Slot>> slots_;
  size_t next_ = 0;
  int64_t allocations_ = 0, staged_ = 0;
  bool last_pinned_ = false;
};

}  // namespace autotune
