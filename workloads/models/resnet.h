#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "workloads/engine/checkpoint.h"

namespace autotune {

/// torchvision's ResNet v1.5 (stride on the 3×3 conv of Bottleneck), zero-free init as torchvision:
/// kaiming_normal(fan_out) convs, BN weight 1 / bias 0. Any input size ≥ 32 (adaptive average pool),
/// so CPU runs can use small images.
struct ResNetConfig {
  bool bottleneck = false;
  std::vector<int64_t> layers = {2, 2, 2, 2};
  int64_t num_classes = 1000;
  static ResNetConfig resnet18() { return {false, {2, 2, 2, 2}, 1000}; }
  static ResNetConfig resnet50() { return {true, {3, 4, 6, 3}, 1000}; }
  /// The batch norms ResNet(*this) builds: the stem's, two or three a block, and one in each block that downsamples.
  int batch_norms() const;
};

struct ResBlockImpl : torch::nn::Module {
  ResBlockImpl(int64_t in, int64_t planes, int64_t stride, bool bottleneck);
  torch::Tensor forward(const torch::Tensor& x);
  bool bottleneck;
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr};
  torch::nn::Sequential downsample{nullptr};
};
TORCH_MODULE(ResBlock);

struct ResNetImpl : torch::nn::Module {
  explicit ResNetImpl(const ResNetConfig& c);
  torch::Tensor forward(const torch::Tensor& x);  // (B,3,H,W) → (B,num_classes)
  /// Checkpoint residual block i when checkpointed[i] (size = total blocks).
  void set_checkpointing(std::vector<bool> checkpointed) { checkpointed_ = std::move(checkpointed); }
  size_t num_blocks() const { return blocks.size(); }

  torch::nn::Conv2d stem{nullptr};
  torch::nn::BatchNorm2d stem_bn{nullptr};
  std::vector<ResBlock> blocks;
  std::vector<BlockFn> block_fns;
  torch::nn::Linear fc{nullptr};
  std::vector<bool> checkpointed_;
};
TORCH_MODULE(ResNet);

/// Forward multiply-adds per sample at an `image_size`² input (convs + fc), from the architecture
/// alone. ResNet-18 at 224: ≈1.82 G; ResNet-50: ≈4.1 G (the published figures).
int64_t resnet_macs_per_sample(const ResNetConfig& c, int64_t image_size);

}  // namespace autotune
