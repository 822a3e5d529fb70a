#pragma once
// The gradient norms a noise-scale trial records (knobs/noise_scale.h): each micro-batch's gradient
// |g_k|² and the accumulated step gradient's |ḡ|². A hook on every trained parameter sees that
// parameter's gradient of one backward before it is added into .grad, so a micro-batch's norm costs
// one sum of squares per parameter and no copy of the gradients.
#include <torch/torch.h>

#include <vector>

#include "knobs/noise_scale.h"

namespace autotune {

class GradNoiseMeter {
 public:
  /// Registers the hooks; they are removed when the meter is destroyed.
  explicit GradNoiseMeter(std::vector<torch::Tensor> params);
  ~GradNoiseMeter();
  GradNoiseMeter(const GradNoiseMeter&) = delete;
  GradNoiseMeter& operator=(const GradNoiseMeter&) = delete;

  /// After a micro-batch's backward: Σ over parameters of |grad of that backward|² (float64, on the
  /// device), and the running sum reset.
  torch::Tensor take_micro();
  /// Σ over parameters of |p.grad|²: the accumulated gradient before the optimizer step.
  torch::Tensor accumulated() const;

  /// One step's record from its K micro-batch sums and the accumulated sum, with the factors the step
  /// applied undone: each micro-batch loss was divided by `K` (accumulation) and multiplied by
  /// `loss_scale` (fp16 GradScaler; 1 otherwise), so g'_k = (loss_scale / K)·g_k and ḡ' = loss_scale·ḡ.
  static NoiseStep step_record(const std::vector<torch::Tensor>& micro, const torch::Tensor& accumulated, int K,
                               double loss_scale);

 private:
  std::vector<torch::Tensor> params_;
  std::vector<unsigned> hooks_;
  torch::Tensor sum_;  ///< float64 scalar on the parameters' device
};

}  // namespace autotune
