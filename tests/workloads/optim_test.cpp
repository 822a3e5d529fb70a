// AdamW loop / foreach / fused against PyTorch's own AdamW (golden values from Python, torch 2.11.0),
// and GradScaler's scale/skip sequence with injected inf gradients.
#include "workloads/engine/optim.h"

#include <gtest/gtest.h>

#include "tests/support/golden.h"
#include "workloads/engine/grad_scaler.h"

namespace autotune {
namespace {

using testing::golden;
using testing::tensor;

struct Mlp2 {
  std::map<std::string, torch::Tensor> p;
  explicit Mlp2(const nlohmann::json& g) {
    for (const char* k : {"w1", "b1", "w2", "b2"})
      p[k] = tensor(g["init"][k], g["shapes"][k].get<std::vector<int64_t>>()).requires_grad_(true);
  }
  std::vector<torch::Tensor> params() { return {p["w1"], p["b1"], p["w2"], p["b2"]}; }
  torch::Tensor loss(const torch::Tensor& x, const torch::Tensor& y) {
    auto h = torch::relu(torch::addmm(p["b1"], x, p["w1"].t()));
    return torch::nn::functional::cross_entropy(torch::addmm(p["b2"], h, p["w2"].t()), y);
  }
};

class AdamWGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(AdamWGolden, MatchesPyTorchAfterNSteps) {
  const auto& g = golden()["adamw"];
  Mlp2 m(g);
  const auto x = tensor(g["x"], g["x_shape"].get<std::vector<int64_t>>());
  const auto y = torch::tensor(g["y"].get<std::vector<int64_t>>(), torch::kInt64);
  AdamWOptions o{g["lr"], g["beta1"], g["beta2"], g["eps"], g["weight_decay"]};
  auto opt = make_adamw(GetParam(), m.params(), o);
  EXPECT_EQ(opt->name(), GetParam());
  const auto losses = g["losses"].get<std::vector<double>>();
  for (int s = 0; s < g["steps"].get<int>(); ++s) {
    opt->zero_grad(true);
    auto l = m.loss(x, y);
    EXPECT_NEAR(l.item<double>(), losses[s], 1e-5) << "step " << s;
    l.backward();
    opt->step();
  }
  // Every implementation is compared with PyTorch's loop ("for-loop") result, and with its own twin.
  for (const char* k : {"w1", "b1", "w2", "b2"}) {
    const auto shape = g["shapes"][k].get<std::vector<int64_t>>();
    EXPECT_TRUE(torch::allclose(m.p[k], tensor(g["loop"][k], shape), 1e-5, 1e-6)) << k;
    EXPECT_TRUE(torch::allclose(m.p[k], tensor(g[GetParam()][k], shape), 1e-5, 1e-6)) << k;
    EXPECT_FALSE(torch::allclose(m.p[k], tensor(g["init"][k], shape))) << k << " did not move";
  }
}

INSTANTIATE_TEST_SUITE_P(Impls, AdamWGolden, ::testing::Values("loop", "foreach", "fused"));

TEST(AdamW, UnknownImplNamesTheAllowedOnes) { EXPECT_THROW(make_adamw("apex", {}, {}), std::invalid_argument); }

TEST(AdamW, ZeroGradNoneUndefinesZerosKeeps) {
  auto p = torch::ones({3}, torch::requires_grad());
  auto opt = make_adamw("fused", {p}, {});
  (p * 2).sum().backward();
  opt->zero_grad(false);
  ASSERT_TRUE(p.grad().defined());
  EXPECT_EQ(p.grad().abs().sum().item<float>(), 0.0f);
  (p * 2).sum().backward();
  opt->zero_grad(true);
  EXPECT_FALSE(p.grad().defined());
}

class ScalerGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ScalerGolden, ScaleAndSkipSequenceMatchesTorchAmpGradScaler) {
  const bool fused = GetParam() == "fused";
  const auto& g = golden()[fused ? "grad_scaler_fused" : "grad_scaler"];
  auto p = tensor(g["p0"], {4}).requires_grad_(true);
  const auto c = tensor(g["c"], {4});
  AdamWOptions o;
  o.lr = 1e-2;
  auto opt = make_adamw(GetParam(), {p}, o);
  GradScaler scaler(torch::kCPU, {g["init_scale"], g["growth_factor"], g["backoff_factor"], g["growth_interval"]});
  const auto inf_steps = g["inf_steps"].get<std::vector<int>>();
  const auto scales = g["scales"].get<std::vector<double>>();
  const auto skipped = g["skipped"].get<std::vector<bool>>();
  for (size_t step = 0; step < scales.size(); ++step) {
    opt->zero_grad(true);
    scaler.scale((p * c).sum()).backward();
    if (std::find(inf_steps.begin(), inf_steps.end(), static_cast<int>(step)) != inf_steps.end()) {
      torch::NoGradGuard ng;
      p.mutable_grad()[1] = std::numeric_limits<float>::infinity();
    }
    const auto before = p.detach().clone();
    if (opt->unscales_in_step()) {
      scaler.unscale(opt->params(), /*check_only=*/true);
      opt->step(scaler.scale_tensor(), scaler.found_inf());
    } else {
      scaler.unscale(opt->params());
      opt->step({}, scaler.found_inf());
    }
    scaler.update();
    EXPECT_EQ(torch::equal(before, p.detach()), skipped[step]) << "step " << step;
    EXPECT_DOUBLE_EQ(scaler.current_scale(), scales[step]) << "step " << step;
  }
  EXPECT_TRUE(torch::allclose(p.detach(), tensor(g["final"], {4}), 1e-5, 1e-6));
}

INSTANTIATE_TEST_SUITE_P(Impls, ScalerGolden, ::testing::Values("loop", "fused"));

}  // namespace
}  // namespace autotune
