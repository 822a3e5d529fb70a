#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "knobs/protocol.h"

namespace autotune {

/// One training step's inputs. Produced on the host by the data stage; moved to the device by the
/// trainer (the H2D phase).
struct Batch {
  torch::Tensor input;   ///< (B, …)
  torch::Tensor target;  ///< (B) or (B, T) class indices, int64
  /// augment_device=gpu: (B, 5) crop windows; `input` is then uint8 (B, R, R, 3) until
  /// Workload::finish_on_device crops, flips and normalises it on the device.
  torch::Tensor crops = {};
  /// Models with several inputs (a TorchScript forward(x, mask, …)): the inputs after `input`, in order.
  std::vector<torch::Tensor> more = {};
};

/// How the model and its data are built for this trial: the setup (seed, image size, data, the bad-data
/// limit) and the knobs as resolved (checkpointing, the loader's decode, workers and prefetch, the batch
/// size it assembles, where augmentation runs).
struct BuildOptions {
  TrialSetup setup;
  Settings settings;
  /// Where the trial trains: synthetic data is generated there (no host-to-device copy).
  torch::Device device = torch::kCPU;
  /// A data-parallel trial: this rank's share of every global batch (input/synthetic.h, Shard).
  int rank = 0, world = 1;
};

/// A model + its data + its loss. The trainer owns the loop; a workload only answers "what is the
/// next batch" and "what is the loss of this batch".
class Workload {
 public:
  virtual ~Workload() = default;
  virtual const WorkloadInfo& info() const = 0;
  /// Builds model and data (same seed → same weights and batches).
  virtual void build(const BuildOptions& opts) = 0;
  /// The tensors the optimizer trains, in a fixed order.
  virtual std::vector<torch::Tensor> parameters() = 0;
  /// Non-trained state a data-parallel trial keeps equal across ranks (BatchNorm statistics).
  virtual std::vector<torch::Tensor> buffers() { return {}; }
  /// Every tensor of the model's state with a stable name — trained parameters, then buffers — what a
  /// weights file holds (engine/weights_file.h). Default: "param.<i>" / "buffer.<i>" in the order above.
  /// (Inline, as every virtual here: plugins built against this header find nothing to link in the worker.)
  virtual std::vector<std::pair<std::string, torch::Tensor>> named_state() {
    std::vector<std::pair<std::string, torch::Tensor>> out;
    int i = 0;
    for (auto& p : parameters()) out.emplace_back("param." + std::to_string(i++), p);
    i = 0;
    for (auto& b : buffers()) out.emplace_back("buffer." + std::to_string(i++), b);
    return out;
  }
  /// Moves the model to `device` and into training mode.
  virtual void to_device(const torch::Device& device) = 0;
  /// The next `batch_size` samples (the "data" phase of a step): on the host for real data, already on
  /// the training device for synthetic data.
  virtual Batch next_batch(std::int64_t batch_size) = 0;
  /// The batch after its host-to-device copy: work the data stage does on the device (GPU augmentation).
  virtual Batch finish_on_device(Batch b) { return b; }
  /// Forward pass and loss on a device-resident batch; returns a scalar.
  virtual torch::Tensor loss(const Batch& batch) = 0;
  /// Training FLOPs (forward + backward) per sample as built (image size and sequence length resolved).
  virtual double flops_per_sample() const { return info().flops_per_sample; }
  /// What the input pipeline did (real data); nullopt for synthetic data.
  virtual std::optional<DataStats> data_stats() const { return std::nullopt; }
  /// Throws when the data was too bad to trust the trial (more bad images than allowed).
  virtual void check_data() const {}
  /// Blocks checkpointed as built, and how many there are (0 for models without blocks).
  virtual std::pair<int, int> checkpointed_blocks() const { return {0, 0}; }
};

/// A workload whose model is a torch::nn::Module (the built-in ones).
class ModuleWorkload : public Workload {
 public:
  virtual torch::nn::Module& module() = 0;
  std::vector<torch::Tensor> parameters() override { return module().parameters(); }
  std::vector<torch::Tensor> buffers() override { return module().buffers(); }
  /// The module's own names ("blocks.0.attn.qkv.weight", "bn1.running_mean").
  std::vector<std::pair<std::string, torch::Tensor>> named_state() override {
    std::vector<std::pair<std::string, torch::Tensor>> out;
    for (const auto& p : module().named_parameters(/*recurse=*/true)) out.emplace_back(p.key(), p.value());
    for (const auto& b : module().named_buffers(/*recurse=*/true)) out.emplace_back(b.key(), b.value());
    return out;
  }
  void to_device(const torch::Device& device) override {
    module().to(device);
    module().train();
  }
};

/// Which of `n` blocks a checkpointing mode recomputes: none, blocks (all), every_2 (0, 2, 4, …).
std::vector<bool> checkpoint_pattern(const std::string& mode, size_t n);

}  // namespace autotune
