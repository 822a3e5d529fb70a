#pragma once
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

namespace autotune {

struct AdamWOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 1e-2;  // torch defaults
};

/// AdamW behind one interface, three ways (the `optimizer_impl` knob):
///  - loop:    torch::optim::AdamW — one small kernel sequence per parameter (LibTorch's default);
///  - foreach: the same math on whole parameter lists with at::_foreach_* (PyTorch's multi-tensor path);
///  - fused:   at::_fused_adamw_ — one kernel family for everything, takes grad_scale/found_inf so an
///             fp16 step can be skipped without a host sync.
/// All three must give the same parameters after N steps (tests/workloads/optim_test.cpp).
class AdamW {
 public:
  virtual ~AdamW() = default;
  /// One step. `grad_scale`/`found_inf` (device scalars) come from a GradScaler: `found_inf` ≠ 0 skips
  /// the step. Only fused takes `grad_scale` (it unscales in-kernel); loop/foreach expect grads that are
  /// already unscaled and read `found_inf` on the host (one sync, as Python's GradScaler does).
  virtual void step(const torch::Tensor& grad_scale = {}, const torch::Tensor& found_inf = {}) = 0;
  /// Clears gradients: zeros in place, or sets them undefined (`set_to_none`, the `zero_grad` knob).
  void zero_grad(bool set_to_none);
  /// The learning rate of the next steps (a batch ramp's switch); the state (moments, step counts) is kept.
  virtual void set_lr(double lr) = 0;
  /// Whether step() consumes grad_scale itself (then the scaler must not unscale the grads).
  virtual bool unscales_in_step() const { return false; }
  const std::vector<torch::Tensor>& params() const { return params_; }
  virtual std::string name() const = 0;
  /// The optimizer's state tensors (m, v and any step counters), empty before the first step: the
  /// memory meter counts them (workloads/engine/device_memory.h).
  virtual std::vector<torch::Tensor> state_tensors() const = 0;

 protected:
  explicit AdamW(std::vector<torch::Tensor> params) : params_(std::move(params)) {}
  std::vector<torch::Tensor> params_;
};

/// impl: "loop" | "foreach" | "fused". Throws std::invalid_argument for anything else.
std::unique_ptr<AdamW> make_adamw(const std::string& impl, std::vector<torch::Tensor> params, AdamWOptions opts);

}  // namespace autotune
