#pragma once
// The user's own model as a workload: a TorchScript file (torch.jit.script / torch.jit.trace output)
// with its batch spec (knobs/model_spec.h), trained by the same engine as the built-in workloads.
// TorchScript is the route to a C++ training loop in torch 2.11: torch.export / AOTInductor packages
// run inference only.
#include <torch/script.h>
#include <torch/torch.h>

#include <memory>

#include "knobs/model_spec.h"
#include "workloads/input/pipeline.h"
#include "workloads/input/synthetic.h"
#include "workloads/workload.h"

namespace autotune {

class ScriptedWorkload : public Workload {
 public:
  /// Loads `setup.model`, reads its spec, and probes it on the CPU with a batch of 2: the forward must
  /// accept the spec's inputs, the loss must be made and finite, FLOPs are counted from the ops it ran.
  /// Throws UsageError (one line) for a file that is not TorchScript, a spec that does not fit, a model
  /// with nothing to train, a forward whose output cannot make the loss.
  explicit ScriptedWorkload(const TrialSetup& setup);

  const WorkloadInfo& info() const override { return info_; }
  void build(const BuildOptions& o) override;
  std::vector<torch::Tensor> parameters() override;
  std::vector<torch::Tensor> buffers() override;
  std::vector<std::pair<std::string, torch::Tensor>> named_state() override;
  void to_device(const torch::Device& device) override;
  Batch next_batch(std::int64_t batch_size) override;
  torch::Tensor loss(const Batch& batch) override;
  double flops_per_sample() const override { return info_.flops_per_sample; }
  std::optional<DataStats> data_stats() const override;
  void check_data() const override;

 private:
  /// The forward's output made into the loss the spec asks for; throws std::runtime_error when it cannot be.
  torch::Tensor loss_of(const c10::IValue& out, const torch::Tensor& target) const;
  /// Inputs and target for `n` samples drawn from the spec with `gen`, on `device`.
  Batch random_batch(std::int64_t n, at::Generator& gen, const torch::Device& device) const;
  void probe();

  std::string path_;
  torch::jit::Module module_;
  ModelSpec spec_;
  WorkloadInfo info_;
  Batch pool_;  ///< synthetic data: 256 samples on the training device, gathered at random each step
  at::Generator gen_;
  Shard shard_;
  std::unique_ptr<ImagePipeline> images_;
  std::unique_ptr<TokenPipeline> tokens_;
};

}  // namespace autotune
