// FLOPs counted from the ops a forward runs (workloads/engine/flop_counter.h), against hand counts and
// against the built-in workloads' own analytic FLOPs.
#include "workloads/engine/flop_counter.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <torch/torch.h>

#include "workloads/registry.h"
#include "workloads/workload.h"

namespace autotune {
namespace {

TEST(FlopCounter, HandCountsOfEachCountedOp) {
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({2, 3, 8, 8});
  FlopCount c = count_forward_flops([&] { torch::conv2d(x, torch::randn({4, 3, 3, 3}), {}, 1, 1); });
  EXPECT_DOUBLE_EQ(c.forward_flops, 2.0 * (2 * 4 * 8 * 8) * (3 * 3 * 3));  // output elements × C_in·k·k
  EXPECT_TRUE(c.saw_convolution);
  EXPECT_EQ(c.by_op.size(), 1u) << "conv2d's own _convolution is not counted again";
  c = count_forward_flops([&] {
    torch::nn::functional::linear(torch::randn({5, 16}), torch::randn({7, 16}), torch::randn({7}));
  });
  EXPECT_DOUBLE_EQ(c.forward_flops, 2.0 * 5 * 7 * 16);
  EXPECT_FALSE(c.saw_convolution);
  c = count_forward_flops([&] { torch::matmul(torch::randn({3, 4, 6}), torch::randn({6, 5})); });
  EXPECT_DOUBLE_EQ(c.forward_flops, 2.0 * 3 * 4 * 5 * 6);
  const auto q = torch::randn({2, 4, 10, 8}), k = torch::randn({2, 4, 12, 8}), v = torch::randn({2, 4, 12, 8});
  c = count_forward_flops([&] { at::scaled_dot_product_attention(q, k, v); });
  EXPECT_DOUBLE_EQ(c.forward_flops, 2.0 * (2 * 4) * 10 * 12 * (8 + 8));  // QKᵀ and AV
  c = count_forward_flops([&] { torch::relu(x) + 1; });
  EXPECT_EQ(c.forward_flops, 0);
  EXPECT_THROW(count_forward_flops([] { throw std::runtime_error("x"); }), std::runtime_error);
  EXPECT_EQ(count_forward_flops([&] {
              torch::mm(torch::randn({2, 3}), torch::randn({3, 4}));
            }).forward_flops,
            2.0 * 2 * 4 * 3)
      << "the observer was removed after the throw and added again";
}

/// Training FLOPs per sample counted on one forward of a built-in workload, against its declared ones.
double counted(const std::string& name, std::int64_t batch) {
  auto w = make_workload(name);
  BuildOptions o;
  o.setup.image_size = 64;
  w->build(o);
  const Batch b = w->next_batch(batch);
  torch::NoGradGuard no_grad;
  return count_forward_flops([&] { w->loss(b); }).training_flops(batch) / w->flops_per_sample();
}

TEST(FlopCounter, AgreesWithTheBuiltInWorkloadsAnalyticFlops) {
  EXPECT_NEAR(counted("mlp", 4), 1.0, 1e-9);
  EXPECT_NEAR(counted("resnet18", 2), 1.0, 0.01);
  EXPECT_NEAR(counted("gpt-mini", 2), 1.0, 0.05);
  std::printf("counted ÷ declared: mlp %.4f, resnet18 %.4f, gpt-mini %.4f\n", counted("mlp", 4), counted("resnet18", 2),
              counted("gpt-mini", 2));
}

}  // namespace
}  // namespace autotune
