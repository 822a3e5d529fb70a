#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace autotune {

/// Multi-layer perceptron: Linear → ReLU repeated, then a Linear classifier head.
struct MlpImpl : torch::nn::Module {
  /// dims = {in, hidden…, out}; at least {in, out}.
  explicit MlpImpl(const std::vector<std::int64_t>& dims);
  torch::Tensor forward(torch::Tensor x);  // (B, in) → (B, out) logits
  /// Multiply-adds per sample of the forward pass.
  std::int64_t macs_per_sample() const { return macs_; }

 private:
  torch::nn::ModuleList layers_;
  std::int64_t macs_ = 0;
};
TORCH_MODULE(Mlp);

}  // namespace autotune
