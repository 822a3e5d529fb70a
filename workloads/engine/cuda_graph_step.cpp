#include "workloads/engine/cuda_graph_step.h"

#include <ATen/autocast_mode.h>
#include <c10/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "workloads/engine/autocast.h"

namespace autotune {

GraphedStep::GraphedStep(Workload& w, AdamW& opt, torch::Device device, bool amp, c10::ScalarType amp_dtype, const Batch& example)
    : w_(w), opt_(opt), device_(device), amp_(amp), amp_dtype_(amp_dtype) {
  TORCH_CHECK(device.is_cuda(), "CUDA graphs need a CUDA device");
  // Every tensor of the batch gets a static copy: a model with several inputs (Batch::more) and one whose
  // forward makes the loss without a target (target undefined) are captured like the rest.
  static_input_ = torch::empty_like(example.input.to(device));
  if (example.target.defined()) static_target_ = torch::empty_like(example.target.to(device));
  for (const auto& t : example.more) static_more_.push_back(torch::empty_like(t.to(device)));
}

torch::Tensor GraphedStep::body() {
  torch::Tensor loss;
  {
    const bool cache = at::autocast::is_autocast_cache_enabled();
    at::autocast::set_autocast_cache_enabled(false);  // cached casts would be stale across replays
    {
      AutocastGuard guard(device_.type(), amp_, amp_dtype_);
      loss = w_.loss({static_input_, static_target_, {}, static_more_});
    }
    at::autocast::set_autocast_cache_enabled(cache);
  }
  loss.backward();
  opt_.step();
  return loss.detach();
}

torch::Tensor GraphedStep::step(const Batch& batch) {
  TORCH_CHECK(batch.input.sizes() == static_input_.sizes(), "CUDA graph replay needs the captured input shape ",
              static_input_.sizes(), ", got ", batch.input.sizes());
  TORCH_CHECK(batch.more.size() == static_more_.size() && batch.target.defined() == static_target_.defined(),
              "CUDA graph replay needs the captured batch's tensors");
  static_input_.copy_(batch.input, /*non_blocking=*/true);
  if (static_target_.defined()) static_target_.copy_(batch.target, /*non_blocking=*/true);
  for (std::size_t i = 0; i < static_more_.size(); ++i) static_more_[i].copy_(batch.more[i], /*non_blocking=*/true);
  // Every call is exactly one optimizer step on this call's batch, so the loss trajectory equals the
  // eager one: 3 eager steps on a side stream (cuBLAS workspaces, cuDNN autotuning, allocator), then
  // capture (which runs nothing) and from then on replays.
  const auto current = c10::cuda::getCurrentCUDAStream(device_.index());
  if (eager_steps_ < 3 || !captured_) {
    const auto side = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device_.index());
    c10::cuda::CUDAEvent ready;
    ready.record(current);
    ready.block(side);
    torch::Tensor loss;
    {
      c10::cuda::CUDAStreamGuard on_side(side);  // capture must not happen on the default stream
      // Grads are None before each step here; for the capture this means the captured backward
      // allocates them from the graph's pool and every replay overwrites (not accumulates) them.
      opt_.zero_grad(/*set_to_none=*/true);
      if (eager_steps_ < 3) {
        loss = body();
        ++eager_steps_;
      } else {
        graph_.capture_begin();
        static_loss_ = body();
        graph_.capture_end();
        captured_ = true;
      }
    }
    c10::cuda::CUDAEvent finished;
    finished.record(side);
    finished.block(current);
    if (loss.defined()) return loss;
  }
  graph_.replay();
  ++replays_;
  return static_loss_.clone();  // the next replay overwrites static_loss_
}

}  // namespace autotune
