// An autotune plugin: one workload ("tinycnn", a small CNN on synthetic 32×32 images) that the worker
// loads with `--plugin libtinycnn.so --workload tinycnn` and trains like a built-in one — every knob
// that applies (threads, precision, optimizer_impl, memory_format, grad_accum, …), fresh processes,
// stability checks, reports.
#include <autotune/workloads/plugin.h>
#include <torch/torch.h>

namespace {

struct TinyCnnImpl : torch::nn::Module {
  TinyCnnImpl()
      : c1(register_module("c1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 16, 3).padding(1)))),
        c2(register_module("c2", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 32, 3).padding(1).stride(2)))),
        fc(register_module("fc", torch::nn::Linear(32, 10))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = torch::relu(c2(torch::relu(c1(x))));
    return fc(y.mean({2, 3}));
  }
  torch::nn::Conv2d c1, c2;
  torch::nn::Linear fc;
};
TORCH_MODULE(TinyCnn);

class TinyCnnWorkload : public autotune::ModuleWorkload {
 public:
  static autotune::WorkloadInfo describe() {
    autotune::WorkloadInfo i;
    i.name = "tinycnn";
    i.description = "tiny CNN from the example plugin (examples/plugin)";
    i.default_batch_size = 32;
    i.loss = "cross_entropy";
    i.data = "synthetic 32×32 images (256 kept on the training device)";
    i.conv_model = true;  // memory_format applies
    i.batch_norms = 0;    // none: the reports' batch-norm caveats read this count (-1, the default, is "not counted")
    // forward + backward ≈ 3 × forward; 2 FLOPs per multiply-add of the two convolutions and the linear layer.
    i.flops_per_sample = 6.0 * (16 * 32 * 32 * 27 + 32 * 16 * 16 * 144 + 32 * 10);
    return i;
  }
  const autotune::WorkloadInfo& info() const override { return info_; }
  void build(const autotune::BuildOptions& o) override {
    torch::manual_seed(o.setup.seed);
    model_ = TinyCnn();
    images_ = torch::rand({256, 3, 32, 32}).mul(2).sub(1).to(o.device);
    labels_ = torch::randint(10, {256}, torch::kInt64).to(o.device);
  }
  torch::nn::Module& module() override { return *model_; }
  autotune::Batch next_batch(std::int64_t batch_size) override {
    const auto idx = torch::randint(images_.size(0), {batch_size}, torch::TensorOptions(torch::kInt64).device(images_.device()));
    return {images_.index_select(0, idx), labels_.index_select(0, idx)};
  }
  torch::Tensor loss(const autotune::Batch& b) override {
    return torch::nn::functional::cross_entropy(model_->forward(b.input), b.target);
  }

 private:
  autotune::WorkloadInfo info_ = describe();
  TinyCnn model_{nullptr};
  torch::Tensor images_, labels_;
};

void register_workloads(autotune::PluginRegistry& r) {
  r.add(TinyCnnWorkload::describe(), [] { return std::make_unique<TinyCnnWorkload>(); });
}

}  // namespace

AUTOTUNE_PLUGIN(register_workloads)
