#include "workloads/engine/grad_scaler.h"

#include <map>
#include <utility>

namespace autotune {

GradScaler::GradScaler(torch::Device device, Options opts) : opts_(opts) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  scale_ = torch::full({1}, opts.init_scale, f32);
  growth_tracker_ = torch::zeros({1}, f32.dtype(torch::kInt32));
  found_inf_ = torch::zeros({1}, f32);
}

torch::Tensor GradScaler::scale(const torch::Tensor& loss) const { return loss * scale_.to(loss.dtype()); }

void GradScaler::unscale(const std::vector<torch::Tensor>& params, bool check_only) {
  found_inf_.zero_();
  const torch::Tensor inv_scale =
      check_only ? torch::ones_like(scale_) : scale_.to(torch::kFloat64).reciprocal().to(torch::kFloat32);
  // The kernel takes one device and dtype per call: group, as torch.amp.GradScaler does.
  std::map<std::pair<std::string, c10::ScalarType>, std::vector<torch::Tensor>> groups;
  for (const auto& p : params) {
    const auto& g = p.grad();
    if (g.defined()) groups[{g.device().str(), g.scalar_type()}].push_back(g);
  }
  for (auto& [key, grads] : groups) {
    torch::Tensor found = torch::zeros({1}, found_inf_.options().device(grads.front().device()));
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found, inv_scale.to(grads.front().device()));
    found_inf_.add_(found.to(found_inf_.device()));
  }
  found_inf_.clamp_max_(1.0);
}

void GradScaler::update() {
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, opts_.growth_factor, opts_.backoff_factor, opts_.growth_interval);
  found_inf_.zero_();
}

}  // namespace autotune
