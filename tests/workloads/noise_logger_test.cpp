// The C++ noise logger (logger/autotune_noise_log.h) in a LibTorch loop with gradient accumulation: each logged step's
// sums equal the ones computed from every micro-batch's own gradient (autograd run on each micro-batch alone), with the
// loss divided by K or summed, logging every step or every 3rd; and the file it writes reads back through the tuner's
// reader (tuner/pricing/noise_log.h) to the same estimate.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "knobs/noise_scale.h"
#include "logger/autotune_noise_log.h"
#include "tuner/pricing/noise_log.h"

namespace fs = std::filesystem;

namespace {

struct Reference {
  double small_sq = 0, big_sq = 0;
};

/// The step's sums from each micro-batch's own gradient (of its mean loss).
Reference reference(torch::nn::Linear& model, const std::vector<torch::Tensor>& xs, const std::vector<torch::Tensor>& ys) {
  Reference r;
  std::vector<torch::Tensor> mean;
  for (size_t k = 0; k < xs.size(); ++k) {
    auto loss = torch::nn::functional::cross_entropy(model->forward(xs[k]), ys[k]);
    auto g = torch::autograd::grad({loss}, model->parameters());
    double sq = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      sq += g[i].to(torch::kDouble).pow(2).sum().item<double>();
      if (mean.size() <= i) mean.push_back(g[i].to(torch::kDouble) / static_cast<double>(xs.size()));
      else mean[i] += g[i].to(torch::kDouble) / static_cast<double>(xs.size());
    }
    r.small_sq += sq / static_cast<double>(xs.size());
  }
  for (const auto& m : mean) r.big_sq += m.pow(2).sum().item<double>();
  return r;
}

struct Run {
  std::vector<Reference> expected;  ///< per logged step
  std::string path;
};

/// Trains a linear classifier with K micro-batches per step for `steps` steps, logging into `path`.
Run train(const std::string& path, bool divided, int every, int steps) {
  torch::manual_seed(0);
  auto model = torch::nn::Linear(16, 5);
  torch::optim::SGD opt(model->parameters(), 0.1);
  const int K = 4;
  const std::int64_t b = 8;
  autotune_log::NoiseLog::Options o;
  o.loss_divided = divided;
  o.every = every;
  o.data = "random \"teacher\" labels";
  autotune_log::NoiseLog log(path, model->parameters(), b, K, o);
  auto teacher = torch::randn({16, 5});
  Run run;
  run.path = path;
  for (int s = 0; s < steps; ++s) {
    std::vector<torch::Tensor> xs, ys;
    for (int k = 0; k < K; ++k) {
      xs.push_back(torch::randn({b, 16}));
      ys.push_back((xs.back().matmul(teacher) + torch::randn({b, 5})).argmax(1));
    }
    if ((s + 1) % every == 0) run.expected.push_back(reference(model, xs, ys));
    opt.zero_grad();
    double total = 0;
    for (int k = 0; k < K; ++k) {
      auto loss = torch::nn::functional::cross_entropy(model->forward(xs[k]), ys[k]);
      total += loss.item<double>() / K;
      (divided ? loss / K : loss).backward();
      log.micro_batch_done();
    }
    log.step(total);
    opt.step();
  }
  return run;
}

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("autotune-noise-logger-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::remove(dir / name);
  return dir / name;
}

void expect_matches(const Run& run, std::int64_t every) {
  const autotune::NoiseLog log = autotune::read_noise_log(run.path);
  ASSERT_EQ(log.steps.size(), run.expected.size());
  EXPECT_EQ(log.micro_batch, 8);
  EXPECT_EQ(log.micro_batches, 4);
  EXPECT_EQ(log.parameters, 16 * 5 + 5);
  EXPECT_EQ(log.tensors, 2);
  EXPECT_EQ(log.logger, "c++");
  EXPECT_EQ(log.data, "random \"teacher\" labels");
  for (size_t i = 0; i < log.steps.size(); ++i) {
    EXPECT_NEAR(log.steps[i].small_sq, run.expected[i].small_sq, 1e-5 * run.expected[i].small_sq) << "step " << i;
    EXPECT_NEAR(log.steps[i].big_sq, run.expected[i].big_sq, 1e-5 * run.expected[i].big_sq) << "step " << i;
    EXPECT_EQ(log.samples[i], static_cast<std::int64_t>(i + 1) * every * 32);
    EXPECT_EQ(log.step_numbers[i], static_cast<std::int64_t>(i + 1) * every);
    EXPECT_TRUE(std::isfinite(log.losses[i]));
  }
  // The tuner's estimate from the file is the one from the reference sums.
  std::vector<autotune::NoiseStep> ref;
  for (const auto& r : run.expected) ref.push_back({r.small_sq, r.big_sq});
  const auto a = autotune::estimate_noise_scale(log.steps, 8, 32), b = autotune::estimate_noise_scale(ref, 8, 32);
  EXPECT_NEAR(a.b_simple, b.b_simple, 1e-4 * std::abs(b.b_simple));
}

}  // namespace

TEST(NoiseLogger, EachStepsSumsAreTheMicroBatchGradientsOwnWithTheLossDividedByK) {
  expect_matches(train(scratch("divided.jsonl").string(), true, 1, 24), 1);
}

TEST(NoiseLogger, ASummedLossAndEveryThirdStepGiveTheSameSums) {
  expect_matches(train(scratch("summed.jsonl").string(), false, 3, 30), 3);
}

TEST(NoiseLogger, AnExistingFileIsNeverOverwrittenAndOneMicroBatchIsRefused) {
  const fs::path p = scratch("kept.jsonl");
  { std::ofstream(p) << "the user's own file\n"; }
  auto model = torch::nn::Linear(4, 2);
  EXPECT_THROW(autotune_log::NoiseLog(p.string(), model->parameters(), 8, 4), std::runtime_error);
  std::ifstream f(p);
  std::string line;
  std::getline(f, line);
  EXPECT_EQ(line, "the user's own file");
  EXPECT_THROW(autotune_log::NoiseLog(scratch("one.jsonl").string(), model->parameters(), 8, 1), std::invalid_argument);
}
