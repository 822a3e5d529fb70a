#include <gtest/gtest.h>

#include <tuple>

#include "workloads/models/gpt.h"
#include "workloads/models/resnet.h"
#include "workloads/registry.h"
#include "workloads/workload.h"

namespace autotune {
namespace {

int64_t count_params(torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

TEST(ResNet, TorchvisionParameterAndMacCounts) {
  // torchvision: resnet18 11,689,512 params / 1.814 GMACs; resnet50 25,557,032 / 4.089 GMACs (224²).
  ResNet r18(ResNetConfig::resnet18());
  EXPECT_EQ(count_params(*r18), 11689512);
  EXPECT_NEAR(resnet_macs_per_sample(ResNetConfig::resnet18(), 224) / 1e9, 1.814, 0.01);
  ResNet r50(ResNetConfig::resnet50());
  EXPECT_EQ(count_params(*r50), 25557032);
  EXPECT_NEAR(resnet_macs_per_sample(ResNetConfig::resnet50(), 224) / 1e9, 4.089, 0.02);
}

// torchvision's resnet18 has 20 BatchNorm2d modules, resnet50 53: the count converge's batch-norm note names
// (reports/batch_norm_note.h), from the config without a build, checked against the built module and the workload's info.
TEST(ResNet, BatchNormsCountedAsBuilt) {
  for (const auto& [name, cfg, want] : {std::tuple{"resnet18", ResNetConfig::resnet18(), 20},
                                        std::tuple{"resnet50", ResNetConfig::resnet50(), 53}}) {
    ResNet r(cfg);
    int built = 0;
    for (const auto& m : r->modules(/*include_self=*/false)) built += m->as<torch::nn::BatchNorm2d>() ? 1 : 0;
    EXPECT_EQ(built, want) << name;
    EXPECT_EQ(cfg.batch_norms(), want) << name;
    TrialSetup setup;
    setup.workload = name;
    EXPECT_EQ(make_workload(setup)->info().batch_norms, want) << name;
  }
  TrialSetup mlp;
  mlp.workload = "mlp";
  EXPECT_EQ(make_workload(mlp)->info().batch_norms, 0);
}

TEST(ResNet, ForwardBackwardShapesAtSmallImages) {
  ResNet r(ResNetConfig::resnet18());
  auto x = torch::randn({2, 3, 64, 64});
  auto y = r->forward(x);
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 1000}));
  y.sum().backward();
  EXPECT_EQ(r->stem->weight.grad().sizes(), r->stem->weight.sizes());
}

TEST(Gpt, ShapesCausalityAndGpt2Size) {
  Gpt g(GptConfig::mini());
  auto idx = torch::randint(512, {2, 16}, torch::kInt64);
  auto logits = g->forward(idx);
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{2, 16, 512}));
  // Causal: changing a later token leaves earlier positions' logits untouched.
  auto idx2 = idx.clone();
  idx2.index_put_({0, 10}, (idx[0][10].item<int64_t>() + 1) % 512);
  auto logits2 = g->forward(idx2);
  EXPECT_TRUE(torch::allclose(logits.index({0, torch::indexing::Slice(0, 10)}), logits2.index({0, torch::indexing::Slice(0, 10)}),
                              1e-5, 1e-6));
  EXPECT_FALSE(torch::allclose(logits.index({0, 10}), logits2.index({0, 10})));
  // GPT-2 small, vocab padded to 50304: 123.69 M parameters without the position embedding (nanoGPT).
  bool found = false;
  for (const auto& w : workload_infos())
    if (w.name == "gpt2-124m") {
      found = true;
      // per token: 6N + 12·L·H·Q·T (Q = 64, T = 1024); solve for N.
      const double n = (w.flops_per_sample / 1024 - 12.0 * 12 * 12 * 64 * 1024) / 6;
      EXPECT_NEAR(n / 1e6, 123.69, 0.01);  // nanoGPT prints "number of parameters: 123.69M"
    }
  EXPECT_TRUE(found);
}

class LossFalls : public ::testing::TestWithParam<std::string> {};

TEST_P(LossFalls, OnAFixedBatchWithinAFewSteps) {
  auto w = make_workload(GetParam());
  BuildOptions o;
  o.setup.image_size = 32;
  w->build(o);
  torch::optim::AdamW opt(w->parameters(), torch::optim::AdamWOptions(1e-3));
  const Batch b = w->next_batch(8);
  const double first = w->loss(b).item<double>();
  for (int i = 0; i < 15; ++i) {
    opt.zero_grad();
    w->loss(b).backward();
    opt.step();
  }
  EXPECT_LT(w->loss(b).item<double>(), 0.8 * first) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Workloads, LossFalls, ::testing::Values("mlp", "resnet18", "gpt-mini"));

TEST(Checkpointing, PatternAndEqualGradientsOnGpt) {
  EXPECT_EQ(checkpoint_pattern("every_2", 5), (std::vector<bool>{true, false, true, false, true}));
  EXPECT_EQ(checkpoint_pattern("none", 2), (std::vector<bool>{false, false}));
  auto grads_of = [](const std::string& mode) {
    auto w = make_workload("gpt-mini");
    BuildOptions o;
    o.settings.checkpointing = mode;
    w->build(o);
    const Batch b = w->next_batch(4);
    w->loss(b).backward();
    std::vector<torch::Tensor> g;
    for (auto& p : w->parameters()) g.push_back(p.grad().clone());
    return std::make_pair(g, w->checkpointed_blocks());
  };
  const auto [plain, n0] = grads_of("none");
  const auto [ckpt, n1] = grads_of("blocks");
  EXPECT_EQ(n0, std::make_pair(0, 4));
  EXPECT_EQ(n1, std::make_pair(4, 4));
  ASSERT_EQ(plain.size(), ckpt.size());
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_TRUE(torch::allclose(plain[i], ckpt[i], 1e-4, 1e-6)) << "param " << i;
}

}  // namespace
}  // namespace autotune
