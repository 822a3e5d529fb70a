#include "workloads/engine/grad_noise.h"

namespace autotune {

GradNoiseMeter::GradNoiseMeter(std::vector<torch::Tensor> params) : params_(std::move(params)) {
  sum_ = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(params_.front().device()));
  for (auto& p : params_) {
    torch::Tensor acc = sum_;  // the same storage: hooks add into the meter's sum
    hooks_.push_back(p.register_hook([acc](const torch::Tensor& g) {
      torch::NoGradGuard no_grad;
      acc.add_(torch::sum(g.detach().square(), torch::kFloat64));
    }));
  }
}

GradNoiseMeter::~GradNoiseMeter() {
  for (size_t i = 0; i < params_.size(); ++i) params_[i].remove_hook(hooks_[i]);
}

torch::Tensor GradNoiseMeter::take_micro() {
  torch::NoGradGuard no_grad;
  torch::Tensor v = sum_.clone();
  sum_.zero_();
  return v;
}

torch::Tensor GradNoiseMeter::accumulated() const {
  torch::NoGradGuard no_grad;
  torch::Tensor s = torch::zeros_like(sum_);
  for (const auto& p : params_)
    if (p.grad().defined()) s.add_(torch::sum(p.grad().square(), torch::kFloat64));
  return s;
}

NoiseStep GradNoiseMeter::step_record(const std::vector<torch::Tensor>& micro, const torch::Tensor& accumulated, int K,
                                      double loss_scale) {
  NoiseStep s;
  const double k2 = static_cast<double>(K) * K, s2 = loss_scale * loss_scale;
  for (const auto& m : micro) s.small_sq += m.item<double>() * k2 / s2 / static_cast<double>(micro.size());
  s.big_sq = accumulated.item<double>() / s2;
  return s;
}

}  // namespace autotune
