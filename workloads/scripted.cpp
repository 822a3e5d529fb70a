#include "workloads/scripted.h"

#include <caffe2/serialize/inline_container.h>
#include <fmt/format.h>

#include <filesystem>

#include "knobs/did_you_mean.h"
#include "knobs/error.h"
#include "workloads/engine/flop_counter.h"
#include "workloads/file_hash.h"
#include "workloads/input/synthetic.h"

namespace autotune {

namespace fs = std::filesystem;
namespace F = torch::nn::functional;

namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

/// The reason in a TorchScript interpreter error: its last "…Error: reason" line (the rest is the
/// serialized and the original traceback), else its first line.
std::string interpreter_reason(const std::string& what) {
  std::string reason = first_line(what);
  std::size_t start = 0;
  while (start < what.size()) {
    const std::size_t end = std::min(what.find('\n', start), what.size());
    const std::string line = what.substr(start, end - start);
    if (const auto colon = line.find("Error: "); colon != std::string::npos && line.find(' ') > colon)
      reason = line.substr(colon + 7);
    start = end + 1;
  }
  return reason;
}

/// Why a file torch::jit::load refused is not TorchScript, in words a user can act on.
std::string not_torchscript(const std::string& path, const std::string& error) {
  const std::string how = "save the model with torch.jit.script or torch.jit.trace (scripts/export_model.py does it)";
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    bool code = false, export_format = false, pickle = false;
    for (const auto& r : reader.getAllRecords()) {
      code |= r.rfind("code/", 0) == 0;
      export_format |= r == "archive_format";
      pickle |= r == "data.pkl";
    }
    if (export_format)
      return "a torch.export program (.pt2), not TorchScript: torch.export and AOTInductor have no C++ training path in torch 2.11; " +
             how;
    if (pickle && !code) return "a torch.save() file (a state_dict or a pickled module), not TorchScript; " + how;
  } catch (const std::exception&) {
    return "not a PyTorch archive (a Python pickle or another file), not TorchScript; " + how;
  }
  return "not loadable as TorchScript: " + first_line(error);
}

torch::jit::Module load(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw UsageError(fmt::format("--model {}: is a directory; give a TorchScript file (torch.jit.save)", path));
  if (!fs::is_regular_file(path, ec)) throw UsageError(fmt::format("--model {}: no such file", path));
  if (fs::file_size(path, ec) == 0) throw UsageError(fmt::format("--model {}: the file is empty", path));
  try {
    return torch::jit::load(path, torch::kCPU);
  } catch (const c10::Error& e) {
    throw UsageError(fmt::format("--model {}: {}", path, not_torchscript(path, e.what_without_backtrace())));
  }
}

c10::ScalarType dtype_of(const std::string& d) {
  return d == "float16" ? torch::kFloat16 : d == "bfloat16" ? torch::kBFloat16 : d == "int64" ? torch::kInt64 : torch::kFloat32;
}

std::vector<std::int64_t> dims(const std::vector<std::int64_t>& shape, std::int64_t n) {
  std::vector<std::int64_t> d;
  for (auto x : shape) d.push_back(x < 0 ? n : x);
  return d;
}

std::string shape_of(const torch::Tensor& t) {
  std::string s = "(";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + ")";
}

}  // namespace

ScriptedWorkload::ScriptedWorkload(const TrialSetup& setup)
    : path_(setup.model), module_(load(setup.model)), spec_(load_model_spec(setup)) {
  info_.name = fs::path(path_).stem().string();
  info_.description = spec_.description.empty() ? "TorchScript model " + fs::path(path_).filename().string() : spec_.description;
  info_.default_batch_size = spec_.default_batch_size;
  info_.loss = spec_.loss;
  info_.data = "synthetic batches from the spec (256 samples kept on the training device)";
  info_.source = fmt::format("TorchScript model {} (sha256 {})", path_, sha256_file(path_));
  info_.batch_spec = spec_.text();
  info_.model_file = path_;
  info_.python_factory = spec_.python;
  info_.python_kwargs = spec_.python_kwargs;
  info_.python_build = spec_.python_build;
  info_.python_forward = spec_.python_forward;
  info_.random_weights = spec_.weights == "random";
  info_.train_mode = spec_.train_mode;
  info_.batch_norms = 0;
  for (const auto& m : module_.modules()) {  // scripted torch.nn.BatchNorm1d/2d/3d and SyncBatchNorm keep their class name
    const auto type = m.type()->name();
    if (type && type->qualifiedName().find("BatchNorm") != std::string::npos) ++info_.batch_norms;
  }
  const InputSpec& x = spec_.inputs.front();
  const bool one_input = spec_.inputs.size() == 1;
  info_.image_data = one_input && x.dtype != "int64" && x.shape.size() == 4 && x.shape[0] < 0 && x.shape[1] == 3 &&
                     x.shape[2] == x.shape[3] && spec_.target.kind == "classes" && spec_.target.shape.size() == 1;
  if (info_.image_data) info_.default_image_size = x.shape[2];
  if (one_input && x.dtype == "int64" && x.shape.size() == 2 && spec_.target.kind == "classes" &&
      spec_.target.shape.size() == 2) {
    info_.token_vocab = x.vocab;
    info_.block_size = x.shape[1];
  }
  probe();
}

void ScriptedWorkload::probe() {
  std::int64_t trainable = 0, total = 0;
  for (const auto& p : module_.parameters(/*recurse=*/true)) {
    ++total;
    trainable += p.requires_grad() ? 1 : 0;
  }
  if (total == 0) throw UsageError(fmt::format("--model {}: the model has no parameters: nothing to train", path_));
  if (trainable == 0)
    throw UsageError(
        fmt::format("--model {}: every parameter has requires_grad=False (a frozen model): nothing to train", path_));
  // The forward's arguments against the spec's: the inputs, then the target when the model makes the loss.
  const auto& schema = module_.get_method("forward").function().getSchema();
  std::vector<std::string> names;
  std::size_t required = 0;
  for (std::size_t i = 1; i < schema.arguments().size(); ++i) {  // 0 is self
    const auto& a = schema.arguments()[i];
    names.push_back(a.name() + ": " + a.type()->str());
    required += a.default_value() ? 0 : 1;
  }
  const std::size_t given = spec_.inputs.size() + (spec_.loss == "model" && spec_.target.kind != "none" ? 1 : 0);
  const std::string forward = "forward(" + join(names) + ")";
  if (given < required || given > names.size())
    throw UsageError(
        fmt::format("--model {}: {} takes {} argument(s); the spec gives {}: {}", path_, forward,
                    required == names.size() ? std::to_string(required) : fmt::format("{}–{}", required, names.size()), given,
                    spec_.text()));
  at::Generator gen = at::detail::createCPUGenerator(0);
  const Batch b = random_batch(2, gen, torch::kCPU);
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  FlopCount flops;
  try {
    flops = count_forward_flops([&] { loss = this->loss(b); });
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("--model {}: the batch spec does not fit {}: {}; the spec gives {}", path_, forward,
                                 interpreter_reason(e.what()), spec_.text()));
  }
  if (!torch::isfinite(loss).all().item<bool>())
    throw UsageError(
        fmt::format("--model {}: the loss is {} at step 0 (before any training): check the model's initialisation and the "
                    "spec's input ranges",
                    path_, loss.item<double>()));
  info_.conv_model = flops.saw_convolution;
  info_.flops_per_sample = spec_.flops_per_sample > 0 ? spec_.flops_per_sample : flops.training_flops(2);
  info_.flops_basis = spec_.flops_per_sample > 0
                          ? "given in the spec"
                          : "counted from the forward's convolutions, linear layers, matrix products and attention";
}

Batch ScriptedWorkload::random_batch(std::int64_t n, at::Generator& gen, const torch::Device& device) const {
  Batch b;
  for (std::size_t i = 0; i < spec_.inputs.size(); ++i) {
    const InputSpec& in = spec_.inputs[i];
    torch::Tensor t = in.dtype == "int64"
                          ? at::randint(in.vocab, dims(in.shape, n), gen, torch::TensorOptions(torch::kInt64))
                          : (at::rand(dims(in.shape, n), gen, torch::TensorOptions(torch::kFloat32)) * (in.hi - in.lo) + in.lo)
                                .to(dtype_of(in.dtype));
    t = t.to(device);
    if (i == 0) b.input = t;
    else b.more.push_back(t);
  }
  const TargetSpec& tg = spec_.target;
  if (tg.kind == "classes")
    b.target = at::randint(tg.classes, dims(tg.shape, n), gen, torch::TensorOptions(torch::kInt64)).to(device);
  else if (tg.kind == "regression")
    b.target = at::randn(dims(tg.shape, n), gen, torch::TensorOptions(torch::kFloat32)).to(device);
  return b;
}

void ScriptedWorkload::build(const BuildOptions& o) {
  torch::manual_seed(o.setup.seed);
  if (!o.setup.data.empty()) {
    if (info_.image_data) {
      images_ = std::make_unique<ImagePipeline>(DataOptions::images(o, info_.default_image_size));
      if (images_->num_classes() > spec_.target.classes)
        throw UsageError(fmt::format("--data {}: the folder has {} classes; the model's spec has {}", o.setup.data,
                                     images_->num_classes(), spec_.target.classes));
    } else if (info_.token_vocab > 0) {
      tokens_ = std::make_unique<TokenPipeline>(DataOptions::tokens(o), static_cast<int>(info_.block_size), info_.token_vocab);
    } else {
      throw UsageError(
          fmt::format("--data: {}'s spec takes neither images (B, 3, S, S) nor tokens (B, T): synthetic batches only",
                      info_.name));
    }
    return;
  }
  at::Generator gen = at::detail::createCPUGenerator(o.setup.seed + 1);
  pool_ = random_batch(256, gen, o.device);
  gen_ = make_generator(o.device, o.setup.data_seed() + 2);
  shard_ = {o.rank, o.world};
}

std::vector<torch::Tensor> ScriptedWorkload::parameters() {
  std::vector<torch::Tensor> out;
  for (const auto& p : module_.parameters(/*recurse=*/true))
    if (p.requires_grad()) out.push_back(p);
  return out;
}

std::vector<torch::Tensor> ScriptedWorkload::buffers() {
  std::vector<torch::Tensor> out;
  for (const auto& b : module_.buffers(/*recurse=*/true)) out.push_back(b);
  return out;
}

std::vector<std::pair<std::string, torch::Tensor>> ScriptedWorkload::named_state() {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : module_.named_parameters(/*recurse=*/true))
    if (p.value.requires_grad()) out.emplace_back(p.name, p.value);
  for (const auto& b : module_.named_buffers(/*recurse=*/true)) out.emplace_back(b.name, b.value);
  return out;
}

void ScriptedWorkload::to_device(const torch::Device& device) {
  module_.to(device);
  module_.train(true);
}

Batch ScriptedWorkload::next_batch(std::int64_t n) {
  if (images_) return images_->next();
  if (tokens_) {
    auto [x, y] = tokens_->next();
    return {x, y};
  }
  const auto idx =
      shard_indices(pool_.input.size(0), n, gen_, torch::TensorOptions(torch::kInt64).device(pool_.input.device()), shard_);
  Batch b{pool_.input.index_select(0, idx), pool_.target.defined() ? pool_.target.index_select(0, idx) : torch::Tensor()};
  for (const auto& m : pool_.more) b.more.push_back(m.index_select(0, idx));
  return b;
}

torch::Tensor ScriptedWorkload::loss(const Batch& b) {
  std::vector<c10::IValue> args = {b.input};
  for (const auto& m : b.more) args.emplace_back(m);
  if (spec_.loss == "model" && b.target.defined()) args.emplace_back(b.target);
  return loss_of(module_.forward(args), b.target);
}

torch::Tensor ScriptedWorkload::loss_of(const c10::IValue& out, const torch::Tensor& target) const {
  if (spec_.loss == "model") {  // the model made the loss: a scalar, alone or the one scalar of a tuple
    if (out.isTensor() && out.toTensor().numel() == 1) return out.toTensor().reshape({});
    std::vector<torch::Tensor> scalars;
    if (out.isTuple())
      for (const auto& e : out.toTupleRef().elements())
        if (e.isTensor() && e.toTensor().numel() == 1) scalars.push_back(e.toTensor());
    if (scalars.size() == 1) return scalars[0].reshape({});
    throw UsageError(
        fmt::format("--model {}: with loss \"model\", forward must return the loss (a scalar tensor, alone or the one scalar "
                    "of a tuple); it returned {}",
                    path_, out.tagKind()));
  }
  if (!out.isTensor())
    throw UsageError(
        fmt::format("--model {}: forward returned a {}; with loss {} it must return one tensor (the {}), or the spec's loss "
                    "must be \"model\" when forward makes the loss itself",
                    path_, out.tagKind(), spec_.loss, spec_.loss == "mse" ? "prediction" : "logits"));
  const torch::Tensor y = out.toTensor();
  if (spec_.loss == "mse") {
    if (y.sizes() != target.sizes())
      throw UsageError(
          fmt::format("--model {}: forward returned {} but the regression target is {}", path_, shape_of(y), shape_of(target)));
    return F::mse_loss(y, target);
  }
  if (y.dim() != target.dim() + 1 || y.sizes().slice(0, target.dim()) != target.sizes())
    throw UsageError(
        fmt::format("--model {}: forward returned logits {} but the class target is {}: cross_entropy needs logits (target's "
                    "shape…, classes)",
                    path_, shape_of(y), shape_of(target)));
  return F::cross_entropy(y.reshape({-1, y.size(-1)}), target.reshape({-1}));
}

std::optional<DataStats> ScriptedWorkload::data_stats() const {
  if (images_) return images_->stats();
  if (tokens_) return tokens_->stats();
  return std::nullopt;
}

void ScriptedWorkload::check_data() const {
  if (images_) images_->check();
}

}  // namespace autotune
