#include "workloads/data/synthetic.h"

namespace autotune {

SyntheticClassification::SyntheticClassification(std::int64_t pool_size, std::int64_t features, std::int64_t classes,
                                                 std::uint64_t seed)
    : features_(features), classes_(classes), gen_(at::detail::createCPUGenerator(seed)) {
  TORCH_CHECK(pool_size > 0 && features > 0 && classes > 1, "synthetic data: bad shape");
  torch::NoGradGuard no_grad;
  inputs_ = at::randn({pool_size, features}, gen_, torch::kFloat32);
  const auto teacher = at::randn({features, classes}, gen_, torch::kFloat32);
  labels_ = inputs_.matmul(teacher).argmax(1);
}

std::pair<torch::Tensor, torch::Tensor> SyntheticClassification::next(std::int64_t batch_size) {
  const auto idx = at::randint(inputs_.size(0), {batch_size}, gen_, torch::kInt64);
  return {inputs_.index_select(0, idx), labels_.index_select(0, idx)};
}

}  // namespace autotune
