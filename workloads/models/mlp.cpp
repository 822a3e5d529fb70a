#include "workloads/models/mlp.h"

namespace autotune {

MlpImpl::MlpImpl(const std::vector<std::int64_t>& dims) {
  TORCH_CHECK(dims.size() >= 2, "Mlp needs at least {in, out}");
  layers_ = register_module("layers", torch::nn::ModuleList());
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    layers_->push_back(torch::nn::Linear(dims[i], dims[i + 1]));
    macs_ += dims[i] * dims[i + 1];
  }
}

torch::Tensor MlpImpl::forward(torch::Tensor x) {
  const size_t n = layers_->size();
  for (size_t i = 0; i < n; ++i) {
    x = layers_[i]->as<torch::nn::Linear>()->forward(x);
    if (i + 1 < n) x = torch::relu(x);
  }
  return x;
}

}  // namespace autotune
