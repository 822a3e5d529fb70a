// Activation checkpointing against PyTorch's torch.utils.checkpoint gradients (golden), RNG replay,
// autocast carried into the recomputation; the autocast guard and its output dtypes (golden).
#include <gtest/gtest.h>

#include "tests/support/golden.h"
#include "workloads/engine/autocast.h"
#include "workloads/engine/checkpoint.h"

namespace autotune {
namespace {

using testing::golden;
using testing::tensor;
namespace F = torch::nn::functional;

struct TwoLayer {
  std::map<std::string, torch::Tensor> w;
  BlockFn fn = [this](const torch::Tensor& h) {
    auto a = F::gelu(torch::addmm(w["b1"], h, w["w1"].t()));
    return torch::addmm(w["b2"], a, w["w2"].t());
  };
  TwoLayer() {
    const auto& g = golden()["checkpoint"];
    for (const char* k : {"w1", "b1", "w2", "b2"})
      w[k] = tensor(g["weights"][k], g["shapes"][k].get<std::vector<int64_t>>()).requires_grad_(true);
  }
};

TEST(Checkpoint, GradientsEqualPyTorchsPlainGradients) {
  const auto& g = golden()["checkpoint"];
  for (bool use_ckpt : {false, true}) {
    TwoLayer m;
    auto x = tensor(g["x"], g["x_shape"].get<std::vector<int64_t>>()).requires_grad_(true);
    auto h = x;
    for (int i = 0; i < 2; ++i) h = use_ckpt ? checkpoint(m.fn, h) : m.fn(h);
    h.pow(2).mean().backward();
    for (const char* k : {"w1", "b1", "w2", "b2"})
      EXPECT_TRUE(torch::allclose(m.w[k].grad(), tensor(g["grads"][k], g["shapes"][k].get<std::vector<int64_t>>()), 1e-5, 1e-6))
          << k << (use_ckpt ? " (checkpointed)" : " (plain)");
    EXPECT_TRUE(torch::allclose(x.grad(), tensor(g["grads"]["x"], g["x_shape"].get<std::vector<int64_t>>()), 1e-5, 1e-6));
  }
}

TEST(Checkpoint, ParamsGetGradsWhenTheInputDoesNot) {
  TwoLayer m;
  auto x = torch::randn({5, 6});  // straight from the data: no grad
  checkpoint(m.fn, x).sum().backward();
  EXPECT_TRUE(m.w["w1"].grad().defined());
  EXPECT_GT(m.w["w1"].grad().abs().sum().item<float>(), 0);
}

TEST(Checkpoint, ReplaysTheForwardsRngSoDropoutMasksMatch) {
  auto w = torch::randn({32, 32}, torch::requires_grad());
  BlockFn drop = [&](const torch::Tensor& h) {
    return F::dropout(torch::mm(h, w), F::DropoutFuncOptions().p(0.5).training(true));
  };
  auto x = torch::randn({16, 32});
  torch::manual_seed(7);
  drop(x).pow(2).sum().backward();
  const auto plain = w.grad().clone();
  w.mutable_grad().reset();
  torch::manual_seed(7);
  auto out = checkpoint(drop, x);
  torch::randn({100});  // consume RNG between forward and backward, as later layers would
  out.pow(2).sum().backward();
  EXPECT_TRUE(torch::allclose(w.grad(), plain)) << "recomputed dropout mask differs from the forward's";
}

TEST(Checkpoint, RecomputesUnderTheForwardsAutocastState) {
  TwoLayer a, b;
  auto x = torch::randn({5, 6});
  {
    AutocastGuard g(c10::DeviceType::CPU, true, torch::kBFloat16);
    a.fn(x).to(torch::kFloat32).pow(2).mean().backward();
  }
  torch::Tensor out;
  {
    AutocastGuard g(c10::DeviceType::CPU, true, torch::kBFloat16);
    out = checkpoint(b.fn, x);
  }
  EXPECT_EQ(out.scalar_type(), torch::kBFloat16);
  out.to(torch::kFloat32).pow(2).mean().backward();  // backward runs outside the autocast region
  for (const char* k : {"w1", "w2"}) EXPECT_TRUE(torch::allclose(a.w[k].grad(), b.w[k].grad())) << k;
}

TEST(Autocast, OutputDtypesMatchPyTorch) {
  const auto& g = golden()["autocast_cpu_bf16"];
  auto dtype = [](torch::Tensor t) {
    std::string s = c10::toString(t.scalar_type());  // "BFloat16" / "Float"
    return s == "BFloat16" ? std::string("bfloat16") : s == "Float" ? std::string("float32") : s;
  };
  AutocastGuard guard(c10::DeviceType::CPU, true, torch::kBFloat16);
  auto a = torch::randn({4, 8}), w = torch::randn({5, 8});
  auto lin = F::linear(a, w);
  EXPECT_EQ(dtype(lin), g["linear"]);
  EXPECT_EQ(dtype(torch::matmul(a, w.t())), g["matmul"]);
  EXPECT_EQ(dtype(F::conv2d(torch::randn({2, 3, 8, 8}), torch::randn({4, 3, 3, 3}))), g["conv2d"]);
  EXPECT_EQ(dtype(torch::relu(lin)), g["relu_of_linear"]);
  EXPECT_EQ(dtype(F::log_softmax(lin, -1)), g["log_softmax_of_linear"]);
  EXPECT_EQ(dtype(F::layer_norm(lin, F::LayerNormFuncOptions({5}))), g["layer_norm_of_linear"]);
  EXPECT_EQ(dtype(F::cross_entropy(lin, torch::zeros({4}, torch::kInt64))), g["cross_entropy_of_linear"]);
  auto q = torch::randn({1, 2, 4, 8});
  EXPECT_EQ(dtype(at::scaled_dot_product_attention(q, q, q, {}, 0.0, true)), g["sdpa"]);
}

TEST(Autocast, GuardRestoresStateAndNests) {
  ASSERT_FALSE(at::autocast::is_autocast_enabled(c10::DeviceType::CPU));
  {
    AutocastGuard outer(c10::DeviceType::CPU, true, torch::kBFloat16);
    EXPECT_TRUE(at::autocast::is_autocast_enabled(c10::DeviceType::CPU));
    {
      AutocastGuard inner(c10::DeviceType::CPU, false, torch::kBFloat16);
      EXPECT_FALSE(at::autocast::is_autocast_enabled(c10::DeviceType::CPU));
      EXPECT_EQ(torch::mm(torch::ones({2, 2}), torch::ones({2, 2})).scalar_type(), torch::kFloat32);
    }
    EXPECT_TRUE(at::autocast::is_autocast_enabled(c10::DeviceType::CPU));
    EXPECT_EQ(torch::mm(torch::ones({2, 2}), torch::ones({2, 2})).scalar_type(), torch::kBFloat16);
  }
  EXPECT_FALSE(at::autocast::is_autocast_enabled(c10::DeviceType::CPU));
  EXPECT_EQ(torch::mm(torch::ones({2, 2}), torch::ones({2, 2})).scalar_type(), torch::kFloat32);
}

}  // namespace
}  // namespace autotune
