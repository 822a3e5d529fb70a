// The baseline table's sources (tuner/options/run_context.cpp, make_context): each value with where it is PyTorch's
// default. The catalog cites AdamW, the optimizer autotune builds; a task's own torch.optim optimizer is named instead,
// and anything else keeps the catalog's words.
#include <gtest/gtest.h>

#include "tuner/options/run_context.h"

namespace autotune {
namespace {

std::string optimizer_source(const std::string& optimizer, bool own, bool cuda) {
  TuneOptions o;
  o.frontend = "python";
  o.budget_seconds = 60;
  o.space.add("optimizer_impl", {"foreach", "fused"});
  o.stability.calibrate = false;
  WorkloadInfo w;
  w.name = "task";
  w.default_batch_size = 16;
  w.trainer = "python";
  w.optimizer = optimizer;
  if (own) {
    w.task_functions = {"model", "dataset", "optimizer"};
    w.optimizer_lr = 0.05;
  }
  EnvFingerprint e;
  e.cpu_cores = 2;
  e.cuda_available = cuda;
  e.device_count = cuda ? 1 : 0;
  e.device_name = cuda ? "test GPU" : "test CPU";
  for (const BaselineValue& b : make_context(o, w, e).baseline_sources)
    if (b.knob == "optimizer_impl") return b.value + " | " + b.source;
  return "";
}

TEST(BaselineSources, ATasksOwnTorchOptimizerIsNamedWhereTheCatalogCitesAdamW) {
  const std::string gpu = optimizer_source("torch.optim.SGD", true, true);
  EXPECT_EQ(gpu.rfind("foreach | your optimizer() builds torch.optim.SGD: torch.optim.SGD(foreach=None, fused=None): "
                      "_default_to_fused_or_foreach",
                      0),
            0u)
      << gpu;
  EXPECT_NE(gpu.find("(unless your optimizer() sets foreach or fused itself)"), std::string::npos) << gpu;
  EXPECT_EQ(gpu.find("AdamW"), std::string::npos) << gpu;
  const std::string cpu = optimizer_source("torch.optim.SGD", true, false);
  EXPECT_EQ(cpu.rfind("loop | your optimizer() builds torch.optim.SGD: torch.optim.SGD(foreach=None): the same function", 0), 0u)
      << cpu;
}

TEST(BaselineSources, AutotunesOwnAdamWAndOtherOptimizersKeepTheCatalogsWords) {
  const std::string catalog = "foreach | torch.optim.AdamW(foreach=None, fused=None): _default_to_fused_or_foreach";
  EXPECT_EQ(optimizer_source("torch.optim.AdamW", false, true).rfind(catalog, 0), 0u);  // no optimizer(): autotune's AdamW
  EXPECT_EQ(optimizer_source("torch.optim.AdamW", true, true).rfind(catalog, 0), 0u);   // the task's own AdamW
  // not torch.optim's: the rule is torch.optim's, so nothing is claimed for it
  EXPECT_EQ(optimizer_source("bitsandbytes.optim.adam.Adam8bit", true, true).rfind(catalog, 0), 0u);
  EXPECT_EQ(optimizer_source("torch.optim.LBFGS", true, true).rfind(catalog, 0), 0u);  // torch.optim's, without foreach
}

}  // namespace
}  // namespace autotune
