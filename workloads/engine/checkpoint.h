#pragma once
#include <torch/torch.h>

#include <functional>

namespace autotune {

/// A block of a model: input activations → output activations, using the block's own parameters.
using BlockFn = std::function<torch::Tensor(const torch::Tensor&)>;

/// Activation checkpointing (LibTorch has no torch.utils.checkpoint): runs `fn(x)` without keeping
/// its intermediate activations; backward recomputes them under grad mode and backpropagates through
/// the recomputation. The recomputation replays the forward's RNG state (CPU and, for CUDA inputs,
/// the input's GPU generator: dropout masks match) and the forward's autocast state — the autograd
/// engine runs backward on threads that do not carry it. Parameters used by `fn` receive gradients
/// even when `x` does not require grad. `fn` must outlive the backward pass.
torch::Tensor checkpoint(const BlockFn& fn, const torch::Tensor& x);

}  // namespace autotune
