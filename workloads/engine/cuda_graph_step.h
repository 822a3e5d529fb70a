#pragma once
#include <ATen/cuda/CUDAGraph.h>
#include <torch/torch.h>

#include <vector>

#include "workloads/engine/optim.h"
#include "workloads/workload.h"

namespace autotune {

/// The `cuda_graphs` knob: the whole training step — forward, backward and the fused AdamW step — is
/// captured once into a CUDA graph on a side stream (after 3 eager steps there, which also settle
/// cuBLAS workspaces, cuDNN autotuning and the allocator) and replayed every step after copying the
/// batch into static input tensors. One launch replaces hundreds: the win for launch-bound steps.
/// Each step() call is one optimizer step on its batch, captured or not, so losses match eager.
///
/// Graph-safety is the caller's job (see the trainer's refusal reasons): the optimizer must keep its
/// step counters on the device (fused), nothing in the step may sync with the host, shapes must be
/// static, and autocast's weight cache is disabled inside the captured region.
class GraphedStep {
 public:
  GraphedStep(Workload& w, AdamW& opt, torch::Device device, bool amp, c10::ScalarType amp_dtype, const Batch& example);
  /// Copies `batch` (device tensors of the captured shapes) into the static inputs and replays.
  /// Returns this step's loss, on the device.
  torch::Tensor step(const Batch& batch);
  int64_t replays() const { return replays_; }

 private:
  torch::Tensor body();  // one step on the static inputs; its kernels are what gets captured
  Workload& w_;
  AdamW& opt_;
  torch::Device device_;
  bool amp_;
  c10::ScalarType amp_dtype_;
  torch::Tensor static_input_, static_target_, static_loss_;
  std::vector<torch::Tensor> static_more_;
  at::cuda::CUDAGraph graph_;
  int eager_steps_ = 0;
  bool captured_ = false;
  int64_t replays_ = 0;
};

}  // namespace autotune
