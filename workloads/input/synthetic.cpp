#include "workloads/input/synthetic.h"

#include <ATen/cuda/CUDAGeneratorImpl.h>

namespace autotune {

at::Generator make_generator(const torch::Device& device, std::uint64_t seed) {
  if (!device.is_cuda()) return at::detail::createCPUGenerator(seed);
  at::Generator g = at::cuda::detail::createCUDAGenerator(device.index());
  g.set_current_seed(seed);
  return g;
}

SyntheticClassification::SyntheticClassification(std::int64_t pool_size, std::int64_t features, std::int64_t classes,
                                                 std::uint64_t seed, torch::Device device)
    : features_(features), classes_(classes) {
  TORCH_CHECK(pool_size > 0 && features > 0 && classes > 1, "synthetic data: bad shape");
  torch::NoGradGuard no_grad;
  auto cpu = at::detail::createCPUGenerator(seed);
  // Batch indices: the pool's generator continues on the CPU; a CUDA one (seeded) on a GPU.
  inputs_ = at::randn({pool_size, features}, cpu, torch::kFloat32);
  const auto teacher = at::randn({features, classes}, cpu, torch::kFloat32);
  labels_ = inputs_.matmul(teacher).argmax(1).to(device);
  inputs_ = inputs_.to(device);
  gen_ = device.is_cuda() ? make_generator(device, seed + 1) : cpu;
}

torch::Tensor shard_indices(std::int64_t high, std::int64_t batch, at::Generator& gen, const torch::TensorOptions& o,
                            const Shard& shard, std::vector<std::int64_t> tail) {
  std::vector<std::int64_t> dims{batch * shard.world};
  dims.insert(dims.end(), tail.begin(), tail.end());
  const auto all = at::randint(high, dims, gen, o);
  return shard.world == 1 ? all : all.narrow(0, shard.rank * batch, batch);
}

std::pair<torch::Tensor, torch::Tensor> SyntheticClassification::next(std::int64_t batch_size) {
  const auto idx = shard_indices(inputs_.size(0), batch_size, gen_,
                                 torch::TensorOptions().dtype(torch::kInt64).device(inputs_.device()), shard_);
  return {inputs_.index_select(0, idx), labels_.index_select(0, idx)};
}

}  // namespace autotune
