#include "workloads/registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "knobs/did_you_mean.h"
#include "knobs/error.h"
#include "knobs/model_spec.h"
#include "workloads/input/pipeline.h"
#include "workloads/input/synthetic.h"
#include "workloads/models/gpt.h"
#include "workloads/models/mlp.h"
#include "workloads/models/resnet.h"
#include "workloads/plugins.h"
#include "workloads/scripted.h"
#include "workloads/workload.h"

namespace autotune {

std::vector<bool> checkpoint_pattern(const std::string& mode, size_t n) {
  std::vector<bool> p(n, false);
  for (size_t i = 0; i < n; ++i) p[i] = mode == "blocks" || (mode == "every_2" && i % 2 == 0);
  return p;
}

namespace {

namespace F = torch::nn::functional;

int count_true(const std::vector<bool>& v) { return static_cast<int>(std::count(v.begin(), v.end(), true)); }

/// `mlp`: 512 → 1024 → 1024 → 10 on synthetic data. Small enough for tests and a 2-core machine,
/// large enough that batch size and thread count change throughput measurably.
class MlpWorkload : public ModuleWorkload {
 public:
  static WorkloadInfo make_info() {
    WorkloadInfo i;
    i.name = "mlp";
    i.description = "MLP 512-1024-1024-10, AdamW, synthetic data (a learnable linear teacher)";
    i.default_batch_size = 64;
    i.loss = "cross_entropy";
    i.data = "synthetic (8192-sample pool kept on the training device)";
    const double macs = 512.0 * 1024 + 1024.0 * 1024 + 1024.0 * 10;
    i.flops_per_sample = 2 * 3 * macs;  // forward + backward ≈ 3 × forward, 2 FLOPs per MAC
    i.batch_norms = 0;
    return i;
  }
  const WorkloadInfo& info() const override { return info_; }
  void build(const BuildOptions& o) override {
    torch::manual_seed(o.setup.seed);
    model_ = Mlp(std::vector<std::int64_t>{512, 1024, 1024, 10});
    data_ = std::make_unique<SyntheticClassification>(8192, 512, 10, o.setup.seed + 1, o.device);
    data_->set_shard({o.rank, o.world});
  }
  torch::nn::Module& module() override { return *model_; }
  Batch next_batch(std::int64_t batch_size) override {
    auto [x, y] = data_->next(batch_size);
    return {x, y};
  }
  torch::Tensor loss(const Batch& b) override { return F::cross_entropy(model_->forward(b.input), b.target); }

 private:
  WorkloadInfo info_ = make_info();
  Mlp model_{nullptr};
  std::unique_ptr<SyntheticClassification> data_;
};

/// resnet18 / resnet50 on synthetic images (a fixed pool of N(0,1) images, random labels).
class ResNetWorkload : public ModuleWorkload {
 public:
  ResNetWorkload(std::string name, ResNetConfig cfg) : cfg_(cfg) { info_ = make_info(name, cfg); }
  static WorkloadInfo make_info(const std::string& name, const ResNetConfig& cfg) {
    WorkloadInfo i;
    i.name = name;
    i.description = fmt::format("torchvision-equivalent {} (v1.5), 1000 classes, AdamW", name);
    i.default_batch_size = 32;
    i.loss = "cross_entropy";
    i.data = "synthetic images (256-image pool kept on the training device), or an image folder / pre-decoded cache with --data";
    i.conv_model = true;
    i.image_data = true;
    i.block_model = true;
    i.default_image_size = 224;
    i.flops_per_sample = 6.0 * static_cast<double>(resnet_macs_per_sample(cfg, 224));
    i.batch_norms = cfg.batch_norms();
    return i;
  }
  const WorkloadInfo& info() const override { return info_; }
  void build(const BuildOptions& o) override {
    torch::manual_seed(o.setup.seed);
    size_ = o.setup.image_size > 0 ? o.setup.image_size : info_.default_image_size;
    TORCH_CHECK(size_ >= 32, "image_size ", size_, " is too small for a ResNet; allowed: ≥ 32");
    model_ = ResNet(cfg_);
    pattern_ = checkpoint_pattern(o.settings.checkpointing, model_->num_blocks());
    model_->set_checkpointing(pattern_);
    flops_ = 6.0 * static_cast<double>(resnet_macs_per_sample(cfg_, size_));
    if (!o.setup.data.empty()) {
      pipeline_ = std::make_unique<ImagePipeline>(DataOptions::images(o, size_));
      TORCH_CHECK(pipeline_->num_classes() <= cfg_.num_classes, "the image folder has ", pipeline_->num_classes(),
                  " classes; the model has ", cfg_.num_classes);
      return;
    }
    // Drawn on the CPU (the same pool on every device), kept and gathered on the training device.
    auto gen = at::detail::createCPUGenerator(o.setup.seed + 1);
    images_ = at::randn({256, 3, size_, size_}, gen, torch::kFloat32).to(o.device);
    labels_ = at::randint(cfg_.num_classes, {256}, gen, torch::kInt64).to(o.device);
    gen_ = make_generator(o.device, o.setup.data_seed() + 2);
    shard_ = {o.rank, o.world};
  }
  std::optional<DataStats> data_stats() const override {
    return pipeline_ ? std::optional<DataStats>(pipeline_->stats()) : std::nullopt;
  }
  void check_data() const override {
    if (pipeline_) pipeline_->check();
  }
  torch::nn::Module& module() override { return *model_; }
  Batch next_batch(std::int64_t batch_size) override {
    if (pipeline_) return pipeline_->next();
    const auto idx = shard_indices(images_.size(0), batch_size, gen_, labels_.options(), shard_);
    return {images_.index_select(0, idx), labels_.index_select(0, idx)};
  }
  Batch finish_on_device(Batch b) override {
    if (b.crops.defined()) {
      b.input = augment_on_device(b.input, b.crops, size_);
      b.crops = torch::Tensor();
    }
    return b;
  }
  torch::Tensor loss(const Batch& b) override { return F::cross_entropy(model_->forward(b.input), b.target); }
  double flops_per_sample() const override { return flops_; }
  std::pair<int, int> checkpointed_blocks() const override { return {count_true(pattern_), static_cast<int>(pattern_.size())}; }

 private:
  ResNetConfig cfg_;
  WorkloadInfo info_;
  ResNet model_{nullptr};
  std::vector<bool> pattern_;
  std::int64_t size_ = 224;
  double flops_ = 0;
  torch::Tensor images_, labels_;
  at::Generator gen_;
  Shard shard_;
  std::unique_ptr<ImagePipeline> pipeline_;
};

/// gpt-mini / gpt2-124m on synthetic tokens from a fixed sparse Markov chain (learnable: each token
/// has 4 likely successors), random windows of T+1 tokens as nanoGPT's get_batch.
class GptWorkload : public ModuleWorkload {
 public:
  GptWorkload(std::string name, GptConfig cfg, std::int64_t default_batch) : cfg_(cfg) {
    info_ = make_info(name, cfg, default_batch);
  }
  static WorkloadInfo make_info(const std::string& name, const GptConfig& c, std::int64_t default_batch) {
    WorkloadInfo i;
    i.name = name;
    i.description = fmt::format("nanoGPT-style decoder L={} H={} C={} T={} vocab={}, causal SDPA, AdamW",
                                c.n_layer, c.n_head, c.n_embd, c.block_size, c.vocab_size);
    i.default_batch_size = default_batch;
    i.loss = "cross_entropy (next token)";
    i.data = "synthetic tokens (Markov chain, 1M-token stream kept on the training device), or a uint16 token .bin with --data";
    i.block_model = true;
    i.token_vocab = c.vocab_size;  // what a --data token file must fit (checked before any trial)
    i.block_size = c.block_size;
    const double n = static_cast<double>(param_count(c));
    const double Q = static_cast<double>(c.n_embd / c.n_head);
    i.flops_per_sample = (6.0 * n + 12.0 * c.n_layer * c.n_head * Q * c.block_size) * c.block_size;
    i.batch_norms = 0;  // layer norms: per sample, whatever the batch
    return i;
  }
  /// Non-embedding-position parameter count, computed from the shapes (no model needed).
  static std::int64_t param_count(const GptConfig& c) {
    const std::int64_t C = c.n_embd, L = c.n_layer;
    const std::int64_t block = 2 * 2 * C + (C * 3 * C + 3 * C) + (C * C + C) + (C * 4 * C + 4 * C) + (4 * C * C + C);
    return c.vocab_size * C + L * block + 2 * C;
  }
  const WorkloadInfo& info() const override { return info_; }
  void build(const BuildOptions& o) override {
    torch::manual_seed(o.setup.seed);
    model_ = Gpt(cfg_);
    pattern_ = checkpoint_pattern(o.settings.checkpointing, cfg_.n_layer);
    model_->set_checkpointing(pattern_);
    if (!o.setup.data.empty()) {
      tokens_ = std::make_unique<TokenPipeline>(DataOptions::tokens(o), static_cast<int>(cfg_.block_size), cfg_.vocab_size);
      return;
    }
    // Token stream: next = succ[prev][k] with k uniform in 0..3, succ fixed at random.
    auto gen = at::detail::createCPUGenerator(o.setup.seed + 1);
    const auto succ = at::randint(cfg_.vocab_size, {cfg_.vocab_size, 4}, gen, torch::kInt64);
    const std::int64_t n = 1 << 20;
    const auto choice = at::randint(4, {n}, gen, torch::kInt64);
    stream_ = torch::empty({n}, torch::kInt64);
    auto s = stream_.accessor<int64_t, 1>();
    auto c = choice.accessor<int64_t, 1>();
    auto t = succ.accessor<int64_t, 2>();
    s[0] = 0;
    for (std::int64_t i = 1; i < n; ++i) s[i] = t[s[i - 1]][c[i]];
    // Built on the CPU, kept and windowed on the training device.
    stream_ = stream_.to(o.device);
    gen_ = make_generator(o.device, o.setup.data_seed() + 2);
    offsets_ = torch::arange(cfg_.block_size + 1, stream_.options());
    shard_ = {o.rank, o.world};
  }
  torch::nn::Module& module() override { return *model_; }
  std::optional<DataStats> data_stats() const override {
    return tokens_ ? std::optional<DataStats>(tokens_->stats()) : std::nullopt;
  }
  Batch next_batch(std::int64_t batch_size) override {
    if (tokens_) {
      auto [x, y] = tokens_->next();
      return {x, y};
    }
    const auto start = shard_indices(stream_.size(0) - cfg_.block_size - 1, batch_size, gen_, stream_.options(), shard_, {1});
    const auto win = stream_.index({start + offsets_});  // (B, T+1)
    return {win.narrow(1, 0, cfg_.block_size).contiguous(), win.narrow(1, 1, cfg_.block_size).contiguous()};
  }
  torch::Tensor loss(const Batch& b) override {
    const auto logits = model_->forward(b.input);  // (B,T,V)
    return F::cross_entropy(logits.view({-1, logits.size(-1)}), b.target.view({-1}));
  }
  std::pair<int, int> checkpointed_blocks() const override { return {count_true(pattern_), static_cast<int>(pattern_.size())}; }

 private:
  GptConfig cfg_;
  WorkloadInfo info_;
  Gpt model_{nullptr};
  std::vector<bool> pattern_;
  torch::Tensor stream_, offsets_;
  at::Generator gen_;
  Shard shard_;
  std::unique_ptr<TokenPipeline> tokens_;
};

struct Entry {
  WorkloadInfo info;
  std::function<std::unique_ptr<Workload>()> make;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> e = {
      {MlpWorkload::make_info(), [] { return std::make_unique<MlpWorkload>(); }},
      {ResNetWorkload::make_info("resnet18", ResNetConfig::resnet18()),
       [] { return std::make_unique<ResNetWorkload>("resnet18", ResNetConfig::resnet18()); }},
      {ResNetWorkload::make_info("resnet50", ResNetConfig::resnet50()),
       [] { return std::make_unique<ResNetWorkload>("resnet50", ResNetConfig::resnet50()); }},
      {GptWorkload::make_info("gpt-mini", GptConfig::mini(), 32),
       [] { return std::make_unique<GptWorkload>("gpt-mini", GptConfig::mini(), 32); }},
      {GptWorkload::make_info("gpt2-124m", GptConfig::gpt2_124m(), 8),
       [] { return std::make_unique<GptWorkload>("gpt2-124m", GptConfig::gpt2_124m(), 8); }},
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
  throw UsageError(fmt::format("unknown workload '{}'; known workloads: {}{}", name, join(names), did_you_mean(name, names)));
}

std::unique_ptr<Workload> make_workload(const TrialSetup& setup) {
  if (setup.trainer == "python")  // a plan for the other worker: training it here would measure the wrong frontend
    throw UsageError("this plan asks for the Python trainer (trainer: python); autotune-worker-py runs it, this is the C++ worker");
  if (is_python_model(setup.model))
    throw UsageError(fmt::format("--model {}: a Python model is trained by the Python worker (--trainer python, its default); "
                                 "this C++ worker trains TorchScript files (scripts/export_model.py makes one)",
                                 setup.model));
  if (!setup.model.empty()) return std::make_unique<ScriptedWorkload>(setup);
  if (!setup.plugin.empty()) {
    std::vector<std::string> names;
    for (const auto& [info, make] : load_plugin(setup.plugin).entries()) {
      if (info.name == setup.workload) return make();
      names.push_back(info.name);
    }
    throw UsageError(fmt::format("--plugin {} has no workload '{}'; it registers: {}{}", setup.plugin, setup.workload,
                                 join(names), did_you_mean(setup.workload, names)));
  }
  return make_workload(setup.workload);
}

std::vector<WorkloadInfo> workload_infos(const std::string& plugin) {
  if (plugin.empty()) return workload_infos();
  std::vector<WorkloadInfo> out;
  for (const auto& [info, make] : load_plugin(plugin).entries()) {
    WorkloadInfo i = info;
    if (i.source.empty()) i.source = "plugin " + plugin;
    out.push_back(i);
  }
  return out;
}

}  // namespace autotune
