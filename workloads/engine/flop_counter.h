#pragma once
// FLOPs of a training step, counted from the operators a forward pass really runs — the way to get
// MFU for a model nobody described by hand (a TorchScript file, a plugin). One forward runs under a
// RecordFunction observer; convolutions, linear layers, matrix products and attention are counted from
// their input and output shapes (2 FLOPs per multiply-add), an op nested inside a counted one (linear's
// addmm, conv2d's _convolution) is not counted again, and training = 3 × forward (the backward pass
// costs about twice the forward). Elementwise ops, norms and einsum are not counted.
#include <functional>
#include <map>
#include <string>

namespace autotune {

struct FlopCount {
  double forward_flops = 0;             ///< of the whole forward that ran
  std::map<std::string, double> by_op;  ///< forward FLOPs per counted operator ("aten::conv2d")
  bool saw_convolution = false;         ///< the model has convolutions (memory_format applies)
  double training_flops(std::int64_t batch) const { return batch > 0 ? 3 * forward_flops / static_cast<double>(batch) : 0; }
};

/// Runs `forward` once on this thread with the observer on. `forward` may throw; the observer is
/// removed either way.
FlopCount count_forward_flops(const std::function<void()>& forward);

}  // namespace autotune
