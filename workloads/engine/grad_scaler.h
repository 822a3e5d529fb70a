#pragma once
#include <torch/torch.h>

#include <vector>

namespace autotune {

/// Dynamic loss scaling for fp16 training, as torch.amp.GradScaler, on ATen's own kernels:
/// `_amp_foreach_non_finite_check_and_unscale_` (unscale + inf/NaN check, grouped by device and
/// dtype) and `_amp_update_scale_` (backoff on inf, growth after `growth_interval` clean steps).
/// The scale and the found-inf flag stay on the device: no host sync unless the caller asks.
class GradScaler {
 public:
  struct Options {
    double init_scale = 65536.0;
    double growth_factor = 2.0;
    double backoff_factor = 0.5;
    int64_t growth_interval = 2000;
  };
  GradScaler(torch::Device device, Options opts);
  explicit GradScaler(torch::Device device) : GradScaler(device, Options{}) {}

  /// loss × scale.
  torch::Tensor scale(const torch::Tensor& loss) const;
  /// Divides every defined grad in place by the scale and sets found_inf (a 1-element float tensor)
  /// when any is inf/NaN. Call once per optimizer step, after the last backward. `check_only` only
  /// sets found_inf (for fused optimizers, which unscale in-kernel from grad_scale).
  void unscale(const std::vector<torch::Tensor>& params, bool check_only = false);
  /// found_inf of the last unscale (device tensor, 0 or 1).
  const torch::Tensor& found_inf() const { return found_inf_; }
  /// Host read of found_inf (a sync): whether the step must be skipped, for optimizers that cannot
  /// take found_inf themselves.
  bool step_should_skip() const { return found_inf_.item<float>() != 0.0f; }
  /// Updates the scale from found_inf and resets it. Call after the optimizer step.
  void update();

  const torch::Tensor& scale_tensor() const { return scale_; }
  double current_scale() const { return scale_.item<double>(); }

 private:
  Options opts_;
  torch::Tensor scale_;           // float32 [1]
  torch::Tensor growth_tracker_;  // int32 [1]
  torch::Tensor found_inf_;       // float32 [1]
};

}  // namespace autotune
