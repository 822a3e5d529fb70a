#include "workloads/engine/checkpoint.h"

#include <ATen/autocast_mode.h>

#include <cstdint>
#include <mutex>

#include "workloads/engine/autocast.h"

namespace autotune {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

at::Generator default_generator(const torch::Device& d) { return at::globalContext().defaultGenerator(d); }

torch::Tensor rng_state(const torch::Device& d) {
  at::Generator g = default_generator(d);
  std::lock_guard<std::mutex> lock(g.mutex());
  return g.get_state();
}
void set_rng_state(const torch::Device& d, const torch::Tensor& s) {
  at::Generator g = default_generator(d);
  std::lock_guard<std::mutex> lock(g.mutex());
  g.set_state(s);
}

struct CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
  // `anchor` is an empty tensor that requires grad: it makes the output require grad (so backward
  // reaches us) even when `x` does not, e.g. for the first block fed straight from the data.
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, torch::Tensor anchor, int64_t fn_addr) {
    ctx->saved_data["fn"] = fn_addr;
    ctx->saved_data["cpu_rng"] = rng_state(torch::kCPU);
    if (x.is_cuda()) {
      ctx->saved_data["cuda_rng"] = rng_state(x.device());
      ctx->saved_data["cuda_index"] = static_cast<int64_t>(x.device().index());
    }
    for (auto dev : {c10::DeviceType::CPU, c10::DeviceType::CUDA}) {
      const AutocastState s = AutocastState::current(dev);
      const std::string key = dev == c10::DeviceType::CPU ? "cpu" : "cuda";
      ctx->saved_data["autocast_" + key] = s.enabled;
      ctx->saved_data["autocast_dtype_" + key] = static_cast<int64_t>(s.dtype);
    }
    ctx->saved_data["x_requires_grad"] = x.requires_grad();
    ctx->save_for_backward({x});
    const auto* fn = reinterpret_cast<const BlockFn*>(fn_addr);
    return (*fn)(x);  // autograd is off inside forward: nothing is saved
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_out) {
    const auto* fn = reinterpret_cast<const BlockFn*>(ctx->saved_data["fn"].toInt());
    const torch::Tensor x = ctx->get_saved_variables()[0];
    const bool x_grad = ctx->saved_data["x_requires_grad"].toBool();
    torch::Tensor xd = x.detach().requires_grad_(x_grad);

    // Fork the RNG: replay the forward's state for the recomputation, then put the current one back.
    const torch::Tensor cpu_now = rng_state(torch::kCPU);
    set_rng_state(torch::kCPU, ctx->saved_data["cpu_rng"].toTensor());
    std::optional<torch::Device> cuda_dev;
    torch::Tensor cuda_now;
    if (ctx->saved_data.count("cuda_rng")) {
      cuda_dev = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(ctx->saved_data["cuda_index"].toInt()));
      cuda_now = rng_state(*cuda_dev);
      set_rng_state(*cuda_dev, ctx->saved_data["cuda_rng"].toTensor());
    }
    torch::Tensor out;
    {
      torch::AutoGradMode grad_on(true);
      AutocastGuard cpu(c10::DeviceType::CPU, ctx->saved_data["autocast_cpu"].toBool(),
                        static_cast<c10::ScalarType>(ctx->saved_data["autocast_dtype_cpu"].toInt()));
      AutocastGuard cuda(c10::DeviceType::CUDA, ctx->saved_data["autocast_cuda"].toBool(),
                         static_cast<c10::ScalarType>(ctx->saved_data["autocast_dtype_cuda"].toInt()));
      out = (*fn)(xd);
    }
    set_rng_state(torch::kCPU, cpu_now);
    if (cuda_dev) set_rng_state(*cuda_dev, cuda_now);

    if (out.requires_grad()) torch::autograd::backward({out}, {grad_out[0]});
    return {x_grad ? xd.grad() : torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor checkpoint(const BlockFn& fn, const torch::Tensor& x) {
  static thread_local torch::Tensor anchor = torch::empty({0}, torch::requires_grad());
  return CheckpointFunction::apply(x, anchor, reinterpret_cast<int64_t>(&fn));
}

}  // namespace autotune
