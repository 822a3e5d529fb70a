#include "workloads/engine/staging.h"

#include <c10/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>

namespace autotune {

struct PinnedStager::Slot {
  torch::Tensor input, target, crops;
  c10::cuda::CUDAEvent done;  // recorded after the H2D copies that read this slot
  bool used = false;
};

PinnedStager::PinnedStager(torch::Device device, int slots) : device_(device) {
  TORCH_CHECK(device.is_cuda(), "PinnedStager needs a CUDA device");
  TORCH_CHECK(slots >= 1, "PinnedStager needs at least one slot");
  for (int i = 0; i < slots; ++i) slots_.push_back(std::make_unique<Slot>());
}

PinnedStager::~PinnedStager() {
  for (auto& s : slots_)
    if (s->used) s->done.synchronize();  // never free a buffer a copy still reads
}

torch::Tensor& PinnedStager::ensure(torch::Tensor& buf, const torch::Tensor& like) {
  if (!buf.defined() || buf.sizes() != like.sizes() || buf.scalar_type() != like.scalar_type()) {
    buf = torch::empty(like.sizes(), torch::TensorOptions().dtype(like.scalar_type()).pinned_memory(true));
    ++allocations_;
  }
  return buf;
}

Batch PinnedStager::stage(const Batch& host) {
  Slot& s = *slots_[next_];
  next_ = (next_ + 1) % slots_.size();
  if (s.used) s.done.synchronize();  // the previous copy out of this slot has finished
  ensure(s.input, host.input).copy_(host.input);
  ensure(s.target, host.target).copy_(host.target);
  last_pinned_ = s.input.is_pinned();
  Batch dev{s.input.to(device_, /*non_blocking=*/true), s.target.to(device_, /*non_blocking=*/true)};
  if (host.crops.defined()) dev.crops = ensure(s.crops, host.crops).copy_(host.crops).to(device_, /*non_blocking=*/true);
  s.done.record(c10::cuda::getCurrentCUDAStream(device_.index()));
  s.used = true;
  ++staged_;
  return dev;
}

}  // namespace autotune
