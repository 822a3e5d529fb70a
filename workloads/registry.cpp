#include "workloads/registry.h"

#include <fmt/format.h>

#include <functional>

#include "knobs/did_you_mean.h"
#include "knobs/error.h"
#include "workloads/data/synthetic.h"
#include "workloads/models/mlp.h"
#include "workloads/workload.h"

namespace autotune {

namespace {

/// `mlp`: 512 → 1024 → 1024 → 10 on synthetic data. Small enough for tests and a 2-core machine,
/// large enough that batch size and thread count change throughput measurably.
class MlpWorkload : public Workload {
 public:
  static WorkloadInfo make_info() {
    WorkloadInfo i;
    i.name = "mlp";
    i.description = "MLP 512-1024-1024-10, AdamW, synthetic data (a learnable linear teacher)";
    i.default_batch_size = 64;
    i.loss = "cross_entropy";
    i.data = "synthetic (8192-sample pool in the worker)";
    const double macs = 512.0 * 1024 + 1024.0 * 1024 + 1024.0 * 10;
    i.flops_per_sample = 2 * 3 * macs;  // forward + backward ≈ 3 × forward, 2 FLOPs per MAC
    return i;
  }
  const WorkloadInfo& info() const override { return info_; }
  void build(std::uint64_t seed) override {
    torch::manual_seed(seed);
    model_ = Mlp(std::vector<std::int64_t>{512, 1024, 1024, 10});
    data_ = std::make_unique<SyntheticClassification>(8192, 512, 10, seed + 1);
  }
  torch::nn::Module& module() override { return *model_; }
  Batch next_batch(std::int64_t batch_size) override {
    auto [x, y] = data_->next(batch_size);
    return {x, y};
  }
  torch::Tensor loss(const Batch& b) override {
    return torch::nn::functional::cross_entropy(model_->forward(b.input), b.target);
  }

 private:
  WorkloadInfo info_ = make_info();
  Mlp model_{nullptr};
  std::unique_ptr<SyntheticClassification> data_;
};

struct Entry {
  WorkloadInfo info;
  std::function<std::unique_ptr<Workload>()> make;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> e = {
      {MlpWorkload::make_info(), [] { return std::make_unique<MlpWorkload>(); }},
  };
  return e;
}

}  // namespace

std::vector<WorkloadInfo> workload_infos() {
  std::vector<WorkloadInfo> out;
  for (const auto& e : entries()) out.push_back(e.info);
  return out;
}

std::unique_ptr<Workload> make_workload(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& e : entries()) {
    if (e.info.name == name) return e.make();
    names.push_back(e.info.name);
  }
  throw UsageError(fmt::format("unknown workload '{}'; known workloads: {}{}", name, join(names),
                               did_you_mean(name, names)));
}

}  // namespace autotune
