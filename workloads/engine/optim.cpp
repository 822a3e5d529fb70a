#include "workloads/engine/optim.h"

#include <cmath>
#include <stdexcept>

namespace autotune {

void AdamW::zero_grad(bool set_to_none) {
  for (auto& p : params_) {
    auto& g = p.mutable_grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      g.reset();
    } else {
      if (g.grad_fn()) g = g.detach();
      else g.requires_grad_(false);
      g.zero_();
    }
  }
}

namespace {

bool skip_on_host(const torch::Tensor& found_inf) { return found_inf.defined() && found_inf.item<float>() != 0.0f; }

class LoopAdamW : public AdamW {
 public:
  LoopAdamW(std::vector<torch::Tensor> params, AdamWOptions o)
      : AdamW(params),
        opt_(params, torch::optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weight_decay)) {}
  void step(const torch::Tensor&, const torch::Tensor& found_inf) override {
    if (skip_on_host(found_inf)) return;
    opt_.step();
  }
  std::string name() const override { return "loop"; }
  void set_lr(double lr) override {
    for (auto& g : opt_.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
  }
  std::vector<torch::Tensor> state_tensors() const override {
    std::vector<torch::Tensor> out;
    for (const auto& p : params_) {
      const auto it = opt_.state().find(p.unsafeGetTensorImpl());
      if (it == opt_.state().end()) continue;
      const auto& st = static_cast<const torch::optim::AdamWParamState&>(*it->second);
      for (const auto& t : {st.exp_avg(), st.exp_avg_sq(), st.max_exp_avg_sq()})
        if (t.defined()) out.push_back(t);
    }
    return out;
  }

 private:
  torch::optim::AdamW opt_;
};

/// Parameters with a gradient, and their state, as parallel lists (the foreach/fused calling shape).
struct Lists {
  std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
};

class StatefulAdamW : public AdamW {
 public:
  StatefulAdamW(std::vector<torch::Tensor> params, AdamWOptions o) : AdamW(std::move(params)), o_(o) {}
  void set_lr(double lr) override { o_.lr = lr; }

 protected:
  /// Lazily creates state (as torch does on the first step) for params whose grad is defined.
  Lists gather() {
    Lists l;
    if (exp_avg_.empty()) {
      for (auto& p : params_) {
        exp_avg_.push_back(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        exp_avg_sq_.push_back(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        // float32 step counter per parameter, on the parameter's device (what _fused_adamw_ wants).
        step_.push_back(torch::zeros({}, p.options().dtype(torch::kFloat32)));
      }
    }
    for (size_t i = 0; i < params_.size(); ++i) {
      if (!params_[i].grad().defined()) continue;
      l.params.push_back(params_[i]);
      l.grads.push_back(params_[i].grad());
      l.exp_avgs.push_back(exp_avg_[i]);
      l.exp_avg_sqs.push_back(exp_avg_sq_[i]);
      l.steps.push_back(step_[i]);
    }
    return l;
  }
  std::vector<torch::Tensor> state_tensors() const override {
    std::vector<torch::Tensor> out = exp_avg_;
    out.insert(out.end(), exp_avg_sq_.begin(), exp_avg_sq_.end());
    out.insert(out.end(), step_.begin(), step_.end());
    return out;
  }
  AdamWOptions o_;
  std::vector<torch::Tensor> exp_avg_, exp_avg_sq_, step_;
};

class ForeachAdamW : public StatefulAdamW {
 public:
  using StatefulAdamW::StatefulAdamW;
  void step(const torch::Tensor&, const torch::Tensor& found_inf) override {
    if (skip_on_host(found_inf)) return;
    torch::NoGradGuard no_grad;
    Lists l = gather();
    if (l.params.empty()) return;
    at::_foreach_add_(l.steps, 1.0);
    ++host_step_;  // all parameters step together, so the bias corrections are host scalars
    if (o_.weight_decay != 0) at::_foreach_mul_(l.params, 1.0 - o_.lr * o_.weight_decay);
    at::_foreach_lerp_(l.exp_avgs, l.grads, 1.0 - o_.beta1);
    at::_foreach_mul_(l.exp_avg_sqs, o_.beta2);
    at::_foreach_addcmul_(l.exp_avg_sqs, l.grads, l.grads, 1.0 - o_.beta2);
    const double bc1 = 1.0 - std::pow(o_.beta1, static_cast<double>(host_step_));
    const double bc2 = 1.0 - std::pow(o_.beta2, static_cast<double>(host_step_));
    const double step_size = o_.lr / bc1;
    auto denom = at::_foreach_sqrt(l.exp_avg_sqs);
    at::_foreach_div_(denom, std::sqrt(bc2));
    at::_foreach_add_(denom, o_.eps);
    at::_foreach_addcdiv_(l.params, l.exp_avgs, denom, -step_size);
  }
  std::string name() const override { return "foreach"; }

 private:
  int64_t host_step_ = 0;
};

class FusedAdamW : public StatefulAdamW {
 public:
  using StatefulAdamW::StatefulAdamW;
  void step(const torch::Tensor& grad_scale, const torch::Tensor& found_inf) override {
    torch::NoGradGuard no_grad;
    Lists l = gather();
    if (l.params.empty()) return;
    // As torch.optim.AdamW(fused=True): the caller increments the step counters; a skipped (inf) step
    // takes them back, all on the device.
    at::_foreach_add_(l.steps, 1.0);
    std::optional<at::Tensor> gs, fi;
    if (grad_scale.defined()) gs = grad_scale.to(l.params.front().device());
    if (found_inf.defined()) fi = found_inf.to(l.params.front().device());
    at::_fused_adamw_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, /*max_exp_avg_sqs=*/{}, l.steps, o_.lr, o_.beta1, o_.beta2,
                      o_.weight_decay, o_.eps, /*amsgrad=*/false, /*maximize=*/false, gs, fi);
    if (fi) at::_foreach_sub_(l.steps, std::vector<at::Tensor>(l.steps.size(), fi->reshape({})));
  }
  bool unscales_in_step() const override { return true; }
  std::string name() const override { return "fused"; }
};

}  // namespace

std::unique_ptr<AdamW> make_adamw(const std::string& impl, std::vector<torch::Tensor> params, AdamWOptions opts) {
  if (impl == "loop") return std::make_unique<LoopAdamW>(std::move(params), opts);
  if (impl == "foreach") return std::make_unique<ForeachAdamW>(std::move(params), opts);
  if (impl == "fused") return std::make_unique<FusedAdamW>(std::move(params), opts);
  throw std::invalid_argument("optimizer_impl '" + impl + "' is not allowed; allowed: loop, foreach, fused");
}

}  // namespace autotune
