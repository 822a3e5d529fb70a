#include "knobs/knob.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "knobs/did_you_mean.h"
#include "knobs/error.h"

namespace autotune {

namespace {

std::optional<std::int64_t> parse_int(const std::string& s) {
  std::int64_t v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end || s.empty()) return std::nullopt;
  return v;
}

Knob choice(std::string name, std::vector<std::string> values, std::string applies, std::string tip) {
  Knob k;
  k.name = std::move(name);
  k.type = Knob::Type::choice;
  k.default_value = values.front();
  k.values = std::move(values);
  k.applies = std::move(applies);
  k.tip = std::move(tip);
  return k;
}

Knob integer(std::string name, std::vector<std::string> values, std::int64_t max, std::string def, std::string applies,
             std::string tip) {
  Knob k;
  k.name = std::move(name);
  k.type = Knob::Type::integer;
  k.values = std::move(values);
  k.min = 1;
  k.max = max;
  k.default_value = std::move(def);
  k.applies = std::move(applies);
  k.tip = std::move(tip);
  return k;
}

Requirement needs_cuda() {
  Requirement r;
  r.cuda = true;
  return r;
}

/// PyTorch 2.11's defaults, each with its source (docs/baseline.md): what a plain training script of each
/// frontend does when it sets nothing. Read by Knob::pytorch_default; the tune's baseline is built from it.
void cite_defaults(std::vector<Knob>& catalog) {
  const std::map<std::string, std::pair<std::string, std::vector<Knob::FrontendDefault>>> table = {
      {"batch_size", {"the workload's own (its spec's or the built-in model's usual batch): DataLoader(batch_size=1) has no "
                      "training default worth the name", {}}},
      {"threads", {"at::init_num_threads: one intra-op thread per physical core unless torch.set_num_threads is called", {}}},
      {"precision", {"fp32: autocast is opt-in (torch.autocast / at::autocast), and the fp32 precision settings are left as "
                     "PyTorch sets them", {}}},
      {"optimizer_impl",
       {"torch::optim::AdamW steps each parameter in turn (torch/csrc/api/src/optim/adamw.cpp): LibTorch has no foreach or "
        "fused AdamW",
        {{"python", "cuda", "foreach",
          "torch.optim.AdamW(foreach=None, fused=None): _default_to_fused_or_foreach (torch/optim/optimizer.py) picks foreach "
          "when every parameter is on a foreach-supported device, CUDA among them"},
         {"python", "cpu", "loop",
          "torch.optim.AdamW(foreach=None): the same function finds the CPU not foreach-supported and takes the per-parameter "
          "loop"}}}},
      {"zero_grad",
       {"zeros in place: zero_grad(set_to_none=False), the default before PyTorch 2.0",
        {{"", "", "none",
          "zero_grad(set_to_none=True) since PyTorch 2.0: torch/optim/optimizer.py, and LibTorch's "
          "Optimizer::zero_grad(bool set_to_none = true) (torch/csrc/api/include/torch/optim/optimizer.h)"}}}},
      {"grad_accum", {"one backward per optimizer step: accumulation is something a script writes", {}}},
      {"log_every", {"a loop that reads loss.item() every step, as PyTorch's own examples do (examples/imagenet/main.py)", {}}},
      {"checkpointing", {"activation checkpointing (torch.utils.checkpoint) is opt-in", {}}},
      {"memory_format", {"tensors are torch.contiguous_format unless converted with .to(memory_format=torch.channels_last)", {}}},
      {"pin_memory", {"DataLoader(pin_memory=False) (torch/utils/data/dataloader.py)", {}}},
      {"decode", {"the whole JPEG decoded, then cropped (torchvision's decode_jpeg or PIL, then RandomResizedCrop)", {}}},
      {"num_workers", {"DataLoader(num_workers=0): batches are loaded in the training process", {}}},
      {"prefetch", {"DataLoader(prefetch_factor=None → 2 when num_workers > 0) (torch/utils/data/dataloader.py)", {}}},
      {"augment_device", {"torchvision's transforms run in the loader, on the CPU", {}}},
      {"cuda_graphs", {"CUDA graphs (torch.cuda.CUDAGraph, at::cuda::CUDAGraph) are opt-in", {}}},
      {"cudnn_benchmark", {"torch.backends.cudnn.benchmark = False (at::globalContext().benchmarkCuDNN() false)", {}}},
      {"ranks", {"one process: DistributedDataParallel is opt-in", {}}},
      {"bucket_mb", {"DistributedDataParallel(bucket_cap_mb=None → 25 MiB) (torch/nn/parallel/distributed.py)", {}}},
      {"first_bucket_mb", {"DDP's first bucket: dist._DEFAULT_FIRST_BUCKET_BYTES, c10d's kDefaultFirstBucketBytes = 1 MiB "
                           "(torch/csrc/distributed/c10d/reducer.hpp)", {}}},
      {"grad_as_bucket_view", {"DistributedDataParallel(gradient_as_bucket_view=False)", {}}},
      {"static_graph", {"DistributedDataParallel(static_graph=False)", {}}},
      {"broadcast_buffers", {"DistributedDataParallel(broadcast_buffers=True)", {}}},
      {"comm_hook", {"no communication hook registered: DDP averages gradients with allreduce", {}}},
      {"compile", {"eager: torch.compile is opt-in (a module runs eagerly unless torch.compile wraps it)", {}}},
  };
  for (Knob& k : catalog) {
    const auto it = table.find(k.name);
    if (it == table.end()) continue;
    k.default_source = it->second.first;
    k.frontend_defaults = it->second.second;
  }
}

std::vector<Knob> make_catalog() {
  std::vector<Knob> k;
  {
    Knob x = integer("batch_size", {"32", "64", "128", "256"}, 1 << 20, "workload", "always",
                     "samples per step per rank; larger batches amortise per-step overhead until compute saturates "
                     "or memory runs out — the fastest batch is not the largest that fits");
    x.impact_rank = 1;
    k.push_back(x);
  }
  {
    Knob t = integer("threads", {"default", "1", "2"}, 1024, "default", "always (intra-op threads of the training process)",
                     "torch::set_num_threads; torch's default is one thread per physical core — fewer can win when "
                     "ops are small or loader threads need the cores");
    t.words = {"default"};
    t.impact_rank = 14;
    k.push_back(t);
  }
  {
    Knob p = choice("precision", {"fp32", "tf32", "amp_fp16", "amp_bf16"}, "always; tf32 and amp_fp16 need CUDA",
                    "autocast runs matmuls/convs in bf16/fp16 (fp16 with a GradScaler); tf32 keeps fp32 storage but "
                    "uses TF32 tensor cores — large wins on GPUs, little or none on most CPUs");
    p.value_requires = {{"tf32", needs_cuda()}, {"amp_fp16", needs_cuda()}};
    p.impact_rank = 5;
    p.recipe = {"amp_bf16", "amp_fp16"};
    k.push_back(p);
  }
  {
    Knob x = choice("optimizer_impl", {"loop", "foreach", "fused"}, "always",
                    "AdamW per parameter (loop), over whole parameter lists (_foreach_*), or in one fused kernel "
                    "(_fused_adamw_): fewer kernel launches for models with many small tensors");
    x.impact_rank = 6;
    x.recipe = {"fused"};
    k.push_back(x);
  }
  {
    Knob x = choice("zero_grad", {"zeros", "none"}, "always",
                    "zero_grad(set_to_none): frees gradients instead of writing zeros; saves a memset per "
                    "parameter and some memory");
    x.impact_rank = 16;
    x.recipe = {"none"};
    x.effect_bounds = {{"", 1.25,
                        "it only skips one fill of the gradients with zeros per step, while backward and the optimizer read "
                        "and write every gradient several times"}};
    k.push_back(x);
  }
  {
    Knob x = integer("grad_accum", {"1", "2", "4"}, 1024, "1", "always",
                     "sum gradients over k micro-batches before one optimizer step: keeps the effective batch when "
                     "memory caps the micro-batch, and amortises the optimizer over k");
    x.impact_rank = 11;
    k.push_back(x);
  }
  {
    Knob x = integer("log_every", {"1", "10", "100"}, 100000, "1", "always",
                     "read the loss (loss.item(), a device sync on GPUs) every N steps instead of every step; losses "
                     "are kept on the device in between");
    x.impact_rank = 13;
    x.recipe = {"100"};
    x.effect_bounds = {{"cpu", 1.15, "on a CPU, reading the loss waits for no device: it copies one number per step"}};
    k.push_back(x);
  }
  {
    Knob c = choice("checkpointing", {"none", "blocks", "every_2"}, "models built of blocks (resnet, gpt)",
                    "recompute block activations in backward instead of storing them: ~1/3 more compute for much "
                    "less activation memory, which can buy a larger batch");
    c.requires_.block_model = true;
    c.impact_rank = 10;
    k.push_back(c);
  }
  {
    Knob m = choice("memory_format", {"contiguous", "channels_last"}, "convolutional models",
                    "NHWC activations and weights: the layout tensor cores and oneDNN prefer for convolutions");
    m.requires_.conv_model = true;
    m.impact_rank = 7;
    m.recipe = {"channels_last"};
    k.push_back(m);
  }
  {
    Knob p = choice("pin_memory", {"false", "true"}, "CUDA",
                    "copy each batch through reusable page-locked buffers and send it with non_blocking=true: "
                    "faster H2D and the host is not blocked; pinning fresh memory per batch would be slower");
    p.requires_.cuda = true;
    p.requires_.host_data = true;
    p.impact_rank = 12;
    p.recipe = {"true"};
    k.push_back(p);
  }
  {
    Knob d = choice("decode", {"jpeg_full", "jpeg_crop_scale", "cache"}, "image folders (--data DIR; cache needs --cache)",
                    "how images become tensors: full TurboJPEG decode then crop; decode only the crop window with DCT "
                    "scaling (libjpeg crop + skip scanlines, 1/2–1/8); or read pre-decoded pixels from a mapped cache");
    d.requires_.image_files = true;
    d.requires_.cpp_trainer = true;  // the Python worker decodes with torchvision or PIL, not through these paths
    Requirement cache_req;
    cache_req.data_cache = true;
    d.value_requires = {{"cache", cache_req}};
    d.impact_rank = 3;
    k.push_back(d);
  }
  {
    Knob w = integer("num_workers", {"0", "1", "2", "4"}, 256, "0", "real data (--data)",
                     "loader threads decoding and augmenting ahead of the training step (0 = in the training thread, "
                     "PyTorch's default); \"4 per GPU\" is folklore: the best count depends on the cores and the decode cost");
    w.min = 0;
    w.requires_.real_data = true;
    w.impact_rank = 2;
    w.recipe = {"4"};  // the folklore's "4 workers per GPU": where auto starts, not where it stops
    k.push_back(w);
  }
  {
    Knob f = integer("prefetch", {"1", "2", "4"}, 64, "2", "real data (--data)",
                     "batches each loader worker may prepare ahead (PyTorch's prefetch_factor, default 2): more hides "
                     "jitter in decode time at the cost of memory");
    f.requires_.real_data = true;
    f.impact_rank = 15;
    k.push_back(f);
  }
  {
    Knob a = choice("augment_device", {"cpu", "gpu"}, "CUDA + pre-decoded cache (--cache, decode=cache)",
                    "RandomResizedCrop, flip and normalise as one batched grid_sample on the GPU: loader threads only copy "
                    "the cache's uint8 pixels (4x fewer bytes to the device than float32) and the CPU does no resampling");
    a.requires_.cuda = true;
    a.requires_.image_data = true;
    a.requires_.data_cache = true;
    a.requires_.cpp_trainer = true;
    a.impact_rank = 4;
    k.push_back(a);
  }
  {
    Knob g = choice("cuda_graphs", {"off", "on"}, "CUDA; static shapes; fused optimizer; no host sync in the step",
                    "capture the whole step into one CUDA graph and replay it: removes per-kernel launch cost, the "
                    "win when steps are short and launch-bound");
    g.requires_.cuda = true;
    g.impact_rank = 9;
    k.push_back(g);
  }
  {
    Knob b = choice("cudnn_benchmark", {"false", "true"}, "CUDA + convolutional models",
                    "let cuDNN time its algorithms for each new input shape and keep the fastest; the first steps "
                    "are slower (never measured), static shapes then gain");
    b.requires_.cuda = true;
    b.requires_.conv_model = true;
    b.impact_rank = 8;
    b.recipe = {"true"};
    k.push_back(b);
  }
  {
    Knob r = integer("ranks", {"1", "2"}, 1024, "1", "always (processes on this machine: GPUs on a GPU host, cores on a CPU host)",
                     "data-parallel processes on this machine, gradients averaged by c10d's Reducer over NCCL (GPUs) or "
                     "Gloo (CPU); batch_size stays per rank and a CPU host's cores are split between the ranks");
    r.value_limit = [](std::int64_t n, const TargetInfo& t) -> std::optional<std::string> {
      if (t.launcher_ranks) return std::nullopt;  // the launcher's allocation decides (and the worker checks WORLD_SIZE)
      if (t.cuda && n > t.gpu_count)
        return fmt::format("{} ranks need {} GPUs; this machine has {} (more ranks need --launcher)", n, n, t.gpu_count);
      if (!t.cuda && n > t.cpu_cores)
        return fmt::format("{} ranks need {} cores; this machine has {} (more ranks need --launcher)", n, n, t.cpu_cores);
      return std::nullopt;
    };
    r.impact_rank = 3;
    k.push_back(r);
  }
  {
    Knob b = integer("bucket_mb", {"1", "25", "100"}, 4096, "25", "ranks > 1",
                     "gradient bucket size of the Reducer (DDP's bucket_cap_mb): small buckets start communicating "
                     "earlier in backward, large ones make fewer, more efficient collectives");
    b.impact_rank = 17;
    b.needs_ranks = true;
    k.push_back(b);
  }
  {
    Knob b = integer("first_bucket_mb", {"1", "4"}, 4096, "1", "ranks > 1",
                     "the first (last-layer) bucket's size: small lets communication start as soon as backward begins");
    b.impact_rank = 21;
    b.needs_ranks = true;
    k.push_back(b);
  }
  {
    Knob b = choice("grad_as_bucket_view", {"false", "true"}, "ranks > 1",
                    "gradients are views into the communication buckets: no copy into and out of the buckets, and one "
                    "gradient-sized allocation less");
    b.impact_rank = 18;
    b.recipe = {"true"};
    b.needs_ranks = true;
    k.push_back(b);
  }
  {
    Knob b = choice("static_graph", {"false", "true"}, "ranks > 1",
                    "tell the Reducer the set of used parameters never changes: it can skip per-step bookkeeping");
    b.impact_rank = 20;
    b.needs_ranks = true;
    k.push_back(b);
  }
  {
    Knob b = choice("broadcast_buffers", {"true", "false"}, "ranks > 1 and a model with buffers (BatchNorm)",
                    "send rank 0's buffers (BatchNorm running statistics) to every rank before each step, as DDP does by "
                    "default; off saves a broadcast per step and leaves each rank its own statistics");
    b.impact_rank = 19;
    b.needs_ranks = true;
    k.push_back(b);
  }
  {
    Knob b = choice("comm_hook", {"allreduce", "fp16", "bf16"}, "ranks > 1",
                    "how buckets are communicated: fp32 allreduce, or compressed to fp16 (the Reducer's built-in hook) "
                    "or bf16 (half the bytes; the averaged gradient is rounded, so the run is checked like AMP)");
    b.impact_rank = 22;
    b.needs_ranks = true;
    k.push_back(b);
  }
  {
    Knob c = choice("compile", {"off", "default", "reduce-overhead", "max-autotune"}, "the Python trainer",
                    "torch.compile the forward and loss (Inductor kernels; reduce-overhead adds CUDA graphs, max-autotune "
                    "times kernel choices): a steadier, faster step after a compile that the run pays once");
    c.requires_.python_trainer = true;
    c.impact_rank = 3;
    c.recipe = {"default"};
    k.push_back(c);
  }
  cite_defaults(k);
  return k;
}

}  // namespace

void Knob::validate(const std::string& value) const {
  if (type == Type::choice) {
    if (std::find(values.begin(), values.end(), value) != values.end()) return;
    throw UsageError(
        fmt::format("knob '{}': '{}' is not allowed; allowed: {}{}", name, value, join(values), did_you_mean(value, values)));
  }
  if (std::find(words.begin(), words.end(), value) != words.end()) return;
  const auto v = parse_int(value);
  if (!v || *v < min || *v > max) {
    throw UsageError(
        fmt::format("knob '{}': '{}' is not allowed; allowed: {}{}", name, value, domain_text(), did_you_mean(value, words)));
  }
}

const Knob::EffectBound* Knob::effect_bound(bool cuda) const {
  for (const auto& b : effect_bounds)
    if (b.device.empty() || b.device == (cuda ? "cuda" : "cpu")) return &b;
  return nullptr;
}

std::string Knob::domain_text() const {
  if (type == Type::choice) return join(values);
  std::string s = fmt::format("integer {}..{}", min, max);
  if (!words.empty()) s += " or " + join(words, " or ");
  return s;
}

std::optional<std::string> Requirement::unmet(const TargetInfo& t) const {
  if (cuda && !t.cuda) return std::string("needs a CUDA device; none is available");
  if (min_gpus > t.gpu_count) return fmt::format("needs at least {} GPUs; {} available", min_gpus, t.gpu_count);
  if (conv_model && !t.conv_model) return std::string("applies to convolutional models only");
  if (image_data && !t.image_data) return std::string("applies to image workloads only");
  if (block_model && !t.block_model)
    return std::string(t.python_trainer ? "needs a model built of repeated blocks (none found: no ModuleList/Sequential of ≥ 2 "
                                          "same-class modules)"
                                        : "applies to models built of blocks (resnet, gpt) only");
  if (real_data && t.data.empty()) return std::string("needs real data (--data): the synthetic data has no loader to tune");
  if (image_files && t.data != "images") return std::string("needs an image folder (--data DIR)");
  if (data_cache && !t.data_cache) return std::string("needs a pre-decoded cache (--cache FILE from autotune prepare-data)");
  if (python_trainer && !t.python_trainer)
    return std::string("needs the Python trainer (--trainer python; a Python model, --model module:factory or hf:TYPE, "
                       "trains there by default)");
  if (cpp_trainer && t.python_trainer)
    return std::string("the Python trainer does not apply it (the C++ worker does: --trainer cpp)");
  if (host_data && t.data.empty())
    return std::string("synthetic data is generated on the device: there is no host-to-device copy (use --data)");
  return std::nullopt;
}

std::optional<std::string> Knob::not_applicable(const TargetInfo& t) const {
  if (auto why = requires_.unmet(t)) return why;
  const auto& own = t.trainer_knobs;
  if (!own.empty() && std::find(own.begin(), own.end(), name) == own.end())
    return std::string("the worker does not apply it (it lists the knobs it applies, and this is not one)");
  return std::nullopt;
}

std::optional<std::string> Knob::value_not_applicable(const std::string& value, const TargetInfo& t) const {
  if (auto why = not_applicable(t)) return why;
  for (const auto& [v, req] : value_requires)
    if (v == value) return req.unmet(t);
  if (value_limit)
    if (const auto n = parse_int(value)) return value_limit(*n, t);
  return std::nullopt;
}

const std::vector<Knob>& knob_catalog() {
  static const std::vector<Knob> catalog = make_catalog();
  return catalog;
}

std::vector<std::string> knob_names() {
  std::vector<std::string> names;
  for (const auto& k : knob_catalog()) names.push_back(k.name);
  return names;
}

const Knob& find_knob(const std::string& name) {
  for (const auto& k : knob_catalog())
    if (k.name == name) return k;
  throw UsageError(
      fmt::format("unknown knob '{}'; known knobs: {}{}", name, join(knob_names()), did_you_mean(name, knob_names())));
}

std::pair<std::string, std::string> Knob::pytorch_default(const std::string& frontend, bool cuda,
                                                         const std::string& workload_default) const {
  for (const auto& d : frontend_defaults)
    if ((d.frontend.empty() || d.frontend == frontend) && (d.device.empty() || d.device == (cuda ? "cuda" : "cpu")))
      return {d.value, d.source};
  return {baseline(workload_default), default_source};
}

}  // namespace autotune
