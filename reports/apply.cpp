#include "reports/apply.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "knobs/host_heap.h"
#include "knobs/knob.h"
#include "reports/train_loop.h"

namespace autotune {

namespace {

/// What a snippet needs besides the knob's value: the device ("cuda" or "cpu") and how the trained model
/// is called.
struct Ctx {
  std::string device;
  ApplySubject subject;
  bool scripted() const { return !subject.model_file.empty(); }
  /// The loss of inputs `x` and targets `y`, in C++.
  std::string cpp_loss(const std::string& x, const std::string& y) const {
    // A target per position (a language model): the loss over every position, as the Python loss flattens it.
    const auto of = [&](const std::string& out) {
      return subject.sequence_target ? fmt::format("criterion({}.flatten(0, 1), {}.flatten())", out, y)
                                     : fmt::format("criterion({}, {})", out, y);
    };
    if (!scripted()) return of(fmt::format("model->forward({})", x));
    if (subject.loss == "model") return fmt::format("model.forward({{{}, {}}}).toTensor()", x, y);
    return of(fmt::format("model.forward({{{}}}).toTensor()", x));
  }
  std::string py_loss(const std::string& x, const std::string& y) const {
    const std::string& f = subject.python_forward;
    if (!f.empty()) {  // the spec's expression of x and y, with the snippet's names
      std::string out;
      for (size_t i = 0; i < f.size(); ++i) {
        const bool word_start = i == 0 || !(std::isalnum(static_cast<unsigned char>(f[i - 1])) || f[i - 1] == '_');
        const bool word_end = i + 1 == f.size() || !(std::isalnum(static_cast<unsigned char>(f[i + 1])) || f[i + 1] == '_');
        if (word_start && word_end && (f[i] == 'x' || f[i] == 'y')) out += f[i] == 'x' ? x : y;
        else out += f[i];
      }
      const auto hash = out.find("  #");
      if (hash != std::string::npos) out.resize(hash);
      if (subject.loss == "model") return out;
      return subject.sequence_target ? fmt::format("criterion(({}).flatten(0, 1), {}.flatten())", out, y)
                                     : fmt::format("criterion({}, {})", out, y);
    }
    if (subject.loss == "model") return fmt::format("model({}, {})", x, y);
    if (subject.sequence_target) return fmt::format("criterion(model({}).flatten(0, 1), {}.flatten())", x, y);
    return fmt::format("criterion(model({}), {})", x, y);
  }
  /// `loss = LOSS` in Python, under autocast when `precision` is an amp one; each line led by `ind`.
  std::string py_forward(const std::string& precision, const std::string& loss, const std::string& ind = "") const {
    if (precision != "amp_bf16" && precision != "amp_fp16") return ind + "loss = " + loss;
    return fmt::format("{0}with torch.autocast(\"{1}\", dtype=torch.{2}):\n{0}    loss = {3}", ind, device,
                       precision == "amp_bf16" ? "bfloat16" : "float16", loss);
  }
};

/// One knob value's snippet: `values` empty = any value but the baseline.
struct Snippet {
  const char* knob;
  std::vector<std::string> values;
  void (*write)(const std::string& v, const Ctx& c, ApplySnippets& s);
};

void cpp(ApplySnippets& s, std::string l) { s.cpp.push_back(std::move(l)); }
void py(ApplySnippets& s, std::string l) { s.python.push_back(std::move(l)); }

/// How to apply each knob in the user's own loop, by knob (a knob value without an entry gets no
/// snippet; its tip still says what it does). batch_size and grad_accum have none: one process prints the whole loop
/// with them (reports/train_loop.h), several the data-parallel loop.
const std::vector<Snippet>& snippets() {
  static const std::vector<Snippet> table = {
      {"threads",
       {},
       [](const std::string& v, const Ctx& c, ApplySnippets& s) {
         cpp(s, fmt::format("torch::set_num_threads({});  // before any parallel work", v));
         py(s, fmt::format("torch.set_num_threads({})", v));
       }},
      {"precision",
       {"amp_bf16", "amp_fp16"},
       [](const std::string& v, const Ctx& c, ApplySnippets& s) {
         const std::string at_dev = c.device == "cuda" ? "at::kCUDA" : "at::kCPU";
         const std::string dt = v == "amp_bf16" ? "BFloat16" : "Half";
         cpp(s, fmt::format("// around the forward pass and loss (autocast state is per thread; no RAII guard in LibTorch):\n"
                            "at::autocast::set_autocast_enabled({0}, true);\n"
                            "at::autocast::set_autocast_dtype({0}, at::k{1});\n"
                            "at::autocast::increment_nesting();\n"
                            "auto loss = {2};\n"
                            "if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();\n"
                            "at::autocast::set_autocast_enabled({0}, false);",
                            at_dev, dt, c.cpp_loss("x", "y")));
         py(s, c.py_forward(v, c.py_loss("x", "y")));
         if (v == "amp_fp16") {
           cpp(s,
               "// fp16 needs loss scaling: scale the loss, unscale + inf-check the grads with\n"
               "// at::_amp_foreach_non_finite_check_and_unscale_, skip the step on inf, update the scale with\n"
               "// at::_amp_update_scale_ (autotune's workloads/engine/grad_scaler.cpp is a complete example).");
           py(s,
              "scaler = torch.amp.GradScaler(\"cuda\")\nscaler.scale(loss).backward()\nscaler.step(optimizer)\nscaler.update()");
         }
       }},
      {"precision",
       {"tf32"},
       [](const std::string& v, const Ctx& c, ApplySnippets& s) {
         cpp(s,
             "at::globalContext().setFloat32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL, at::Float32Precision::TF32);\n"
             "at::globalContext().setFloat32Precision(at::Float32Backend::CUDA, at::Float32Op::CONV, at::Float32Precision::TF32);");
         py(s, "torch.backends.cuda.matmul.fp32_precision = \"tf32\"\ntorch.backends.cudnn.conv.fp32_precision = \"tf32\"");
       }},
      {"optimizer_impl",
       {},
       [](const std::string& v, const Ctx& c, ApplySnippets& s) {
         if (v == "fused") {
           cpp(s,
               "// one fused kernel for all parameters (increment the float32 state_steps yourself first):\n"
               "at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, /*max_exp_avg_sqs=*/{}, state_steps,\n"
               "                  lr, 0.9, 0.999, weight_decay, 1e-8, /*amsgrad=*/false, /*maximize=*/false);");
           py(s, "optimizer = torch.optim.AdamW(model.parameters(), lr=lr, fused=True)");
         } else if (v == "loop") {
           cpp(s, "torch::optim::AdamW optimizer(params, torch::optim::AdamWOptions(lr));  // one parameter at a time");
           py(s, "optimizer = torch.optim.AdamW(model.parameters(), lr=lr, foreach=False)  # one parameter at a time");
         } else {
           cpp(s,
               "// AdamW over whole parameter lists: at::_foreach_mul_/_foreach_lerp_/_foreach_addcmul_/_foreach_addcdiv_\n"
               "// (autotune's workloads/engine/optim.cpp, ForeachAdamW)");
           py(s, "optimizer = torch.optim.AdamW(model.parameters(), lr=lr, foreach=True)");
         }
       }},
      {"zero_grad",
       {},
       [](const std::string& v, const Ctx& c, ApplySnippets& s) {
         if (v == "zeros") {  // PyTorch's default frees them (set_to_none=True): only this value needs a line
           cpp(s, "optimizer.zero_grad(/*set_to_none=*/false);  // writes zeros into the gradients instead of freeing them");
           py(s, "optimizer.zero_grad(set_to_none=False)  # writes zeros into the gradients instead of freeing them");
         } else {
           cpp(s, "optimizer.zero_grad(/*set_to_none=*/true);");
           py(s, "optimizer.zero_grad(set_to_none=True)  # the default since PyTorch 2.0");
         }
       }},
      {"log_every",
       {},
       [](const std::string& v, const Ctx& c, ApplySnippets& s) {
         cpp(s, fmt::format("auto running = torch::zeros({{}}, device);  // before the loop: the window's loss sum, on the device\n"
                            "// each step, after the backward:\n"
                            "running += loss.detach();\n"
                            "if (step % {0} == 0) {{  // one sync per {0} steps: the mean loss of the last {0}\n"
                            "  log((running / {0}).item<double>());\n"
                            "  running.zero_();\n"
                            "}}",
                            v));
         py(s, fmt::format("running = torch.zeros((), device=\"{1}\")  # before the loop: the window's loss sum, on the device\n"
                           "# each step, after the backward:\n"
                           "running += loss.detach()\n"
                           "if step % {0} == 0:  # one sync per {0} steps: the mean loss of the last {0}\n"
                           "    log((running / {0}).item())\n"
                           "    running.zero_()",
                           v, c.device));
       }},
      {"checkpointing",
       {},
       [](const std::string& v, const Ctx& c, ApplySnippets& s) {
         cpp(s, fmt::format("// {}: wrap those blocks' forward in a torch::autograd::Function that runs it without grad and\n"
                            "// recomputes in backward with the saved RNG and autocast state (workloads/engine/checkpoint.h)",
                            v == "blocks" ? "every block" : "every second block"));
         py(s, "from torch.utils.checkpoint import checkpoint\nx = checkpoint(block, x, use_reentrant=False)");
       }},
      {"memory_format",
       {},
       [](const std::string& v, const Ctx& c, ApplySnippets& s) {
         cpp(s, std::string(c.scripted() ? "for (auto p : model.parameters())  // script::Module::to has no memory_format\n"
                                         : "for (auto& p : model->parameters())  // Module::to has no memory_format\n") +
                    "  if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));\n"
                    "x = x.contiguous(at::MemoryFormat::ChannelsLast);");
         py(s, "model = model.to(memory_format=torch.channels_last)\nx = x.to(memory_format=torch.channels_last)");
       }},
      {"pin_memory",
       {},
       [](const std::string& v, const Ctx& c, ApplySnippets& s) {
         cpp(s,
             "// allocate once, reuse every step (do not pin per batch):\n"
             "auto staging = torch::empty(batch.sizes(), torch::TensorOptions().dtype(batch.scalar_type()).pinned_memory(true));\n"
             "staging.copy_(batch);\n"
             "auto on_gpu = staging.to(device, /*non_blocking=*/true);  // record an event before reusing staging");
         py(s, "loader = torch.utils.data.DataLoader(dataset, ..., pin_memory=True)\nx = x.to(\"cuda\", non_blocking=True)");
       }},
      {"cuda_graphs",
       {},
       [](const std::string& v, const Ctx& c, ApplySnippets& s) {
         cpp(s,
             "// after a few eager warm-up steps, on a side stream (autotune's workloads/engine/cuda_graph_step.cpp):\n"
             "at::cuda::CUDAGraph graph;\n"
             "graph.capture_begin();  // forward + backward + fused AdamW on static input tensors\n"
             "static_loss = train_step(static_x, static_y);\n"
             "graph.capture_end();\n"
             "// each step: static_x.copy_(x); static_y.copy_(y); graph.replay();");
         py(s,
            "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    static_loss = train_step(static_x, static_y)\n"
            "# each step: static_x.copy_(x); static_y.copy_(y); g.replay()");
       }},
      {"num_workers",
       {},
       [](const std::string& v, const Ctx& c, ApplySnippets& s) {
         cpp(s, fmt::format("// autotune's loader (data/loader.h): {} threads decode and augment ahead of the step\n"
                            "autotune::data::BatchLoader loader(/*num_workers=*/{}, /*prefetch=*/2, fill_batch);",
                            v, v));
         py(s,
            fmt::format("loader = torch.utils.data.DataLoader(dataset, batch_size=..., num_workers={}, persistent_workers=True)",
                        v));
       }},
      {"prefetch",
       {},
       [](const std::string& v, const Ctx& c, ApplySnippets& s) {
         cpp(s, fmt::format("// at most {} batches in flight per loader thread:\n"
                            "autotune::data::BatchLoader loader(num_workers, /*prefetch=*/{}, fill_batch);",
                            v, v));
         py(s, fmt::format("loader = torch.utils.data.DataLoader(dataset, ..., prefetch_factor={})  # needs num_workers > 0", v));
       }},
      {"decode",
       {"jpeg_crop_scale"},
       [](const std::string& v, const Ctx& c, ApplySnippets& s) {
         cpp(s,
             "// decode only the RandomResizedCrop window, with DCT scaling (libjpeg: jpeg_crop_scanline + jpeg_skip_scanlines):\n"
             "auto region = autotune::data::decode_region(bytes.data(), bytes.size(), crop.window,\n"
             "    autotune::data::choose_scale_denom(crop.window.w, crop.window.h, 224, 224));");
         py(s,
            "# PIL's draft mode is the nearest Python equivalent (DCT scaling, no crop):\n"
            "img = PIL.Image.open(path); img.draft(\"RGB\", (2 * 224, 2 * 224)); img = img.convert(\"RGB\")");
       }},
      {"decode",
       {"cache"},
       [](const std::string& v, const Ctx& c, ApplySnippets& s) {
         cpp(s,
             "// once: autotune prepare-data --from IMAGES --to cache.bin --size 256\n"
             "auto source = autotune::data::make_cache_source(\"cache.bin\");  // memory-mapped uint8 pixels");
         py(s,
            "# once: autotune prepare-data --from IMAGES --to cache.bin --size 256 (a flat uint8 file; see docs/data.md),\n"
            "# then read it with numpy.memmap and apply RandomResizedCrop/flip to the 256×256 images");
       }},
      {"augment_device",
       {"gpu"},
       [](const std::string& v, const Ctx& c, ApplySnippets& s) {
         cpp(s,
             "// loader threads copy the cache's uint8 images; crop + flip + normalise on the GPU in one grid_sample:\n"
             "auto x = autotune::augment_on_device(batch_u8.to(device, /*non_blocking=*/true), crops.to(device), 224);");
         py(s,
            "# uint8 batches to the GPU, then RandomResizedCrop/flip/normalise there, e.g. torchvision.transforms.v2 on the\n"
            "# CUDA tensor, or F.affine_grid + F.grid_sample with one crop window per image");
       }},
      {"compile",
       {},
       [](const std::string& v, const Ctx& c, ApplySnippets& s) {
         cpp(s, "// compile: torch.compile is Python's; LibTorch has no counterpart (the Python worker measured it)");
         py(s, v == "off" ? "# compile=off: the model runs eagerly (no torch.compile)"
                : v == "default" ? "model = torch.compile(model)"
                                 : fmt::format("model = torch.compile(model, mode=\"{}\")", v));
       }},
      {"cudnn_benchmark",
       {},
       [](const std::string& v, const Ctx& c, ApplySnippets& s) {
         cpp(s, fmt::format("at::globalContext().setBenchmarkCuDNN({});", v));
         py(s, fmt::format("torch.backends.cudnn.benchmark = {}", v == "true" ? "True" : "False"));
       }},
  };
  return table;
}

/// The Python optimizer line with the implementation `impl` ("" = PyTorch's default).
std::string py_adamw(const std::string& impl) {
  return "optimizer = torch.optim.AdamW(model.parameters(), lr=lr" +
         (impl.empty() ? std::string() : impl == "loop" ? std::string(", foreach=False") : ", " + impl + "=True") + ")";
}

/// The Python criterion line of `loss`, after a newline; "" when the model returns its loss.
std::string py_criterion(const std::string& loss) {
  return loss == "model" ? "" : loss == "mse" ? "\ncriterion = torch.nn.MSELoss()" : "\ncriterion = torch.nn.CrossEntropyLoss()";
}

/// AdamW with `impl` and the criterion of `loss` (none when the model returns its loss), after the model's lines.
std::string py_optimizer_and_loss(const std::string& impl, const std::string& loss) {
  return py_adamw(impl) + (loss == "model" ? "  # model(x, y) returns the loss" : py_criterion(loss));
}

/// The Python lines that build the user's model on the device: the Hugging Face build the spec recorded, or the factory
/// call (`from module import f` / a file's module by its name); `whose` ends the comment ("exported to m.pt", "as tuned").
std::string py_model_build(const Ctx& c, const std::string& whose) {
  const ApplySubject& u = c.subject;
  if (!u.python_build.empty()) return fmt::format("{}\nmodel.to(\"{}\")  # your model, {}", u.python_build, c.device, whose);
  if (u.python_factory.empty()) return fmt::format("model = ...  # your model, the one saved as {}", u.model_file);
  const auto colon = u.python_factory.rfind(':');
  std::string where = u.python_factory.substr(0, colon);
  const std::string name = u.python_factory.substr(colon + 1);
  std::string path_line;
  if (where.size() > 3 && where.compare(where.size() - 3, 3, ".py") == 0) {
    // A file, not a module on the path: its folder goes on sys.path first, so the snippet imports it from any folder (the
    // Python worker records the file's absolute path; an older run's relative one is relative to where autotune ran).
    const std::filesystem::path file(where);
    const std::string folder = file.parent_path().empty() ? "." : file.parent_path().string();
    path_line = fmt::format("import sys\nsys.path.insert(0, \"{}\")  # the folder of {}{}\n", folder, file.filename().string(),
                            file.is_absolute() ? "" : ", relative to where autotune ran");
    where = file.stem().string();
  }
  return fmt::format("{}from {} import {}\nmodel = {}({}).to(\"{}\")  # your model, {}", path_line, where, name, name,
                     u.python_kwargs, c.device, whose);
}

/// A model the Python worker built (a factory or a Hugging Face config), not a TorchScript export.
bool python_worker_model(const Ctx& c) {
  return !c.scripted() && (!c.subject.python_factory.empty() || !c.subject.python_build.empty());
}

/// A user's model, its optimizer and its loss, named as the rest of the snippets name them.
void preamble(const Ctx& c, ApplySnippets& s, const std::string& optimizer_impl) {
  const ApplySubject& u = c.subject;
  cpp(s, fmt::format("// your model as tuned: the TorchScript file, its parameters, AdamW over them\n"
                     "torch::jit::script::Module model = torch::jit::load(\"{}\");\n"
                     "model.to(torch::Device(\"{}\"));\n"
                     "std::vector<torch::Tensor> params;\n"
                     "for (const auto& p : model.parameters()) params.push_back(p);\n"
                     "torch::optim::AdamW optimizer(params, torch::optim::AdamWOptions(lr));{}",
                     u.model_file, c.device,
                     u.loss == "model" ? "\n// forward(x, y) returns the loss"
                     : u.loss == "mse" ? "\nauto criterion = torch::nn::MSELoss();"
                                       : "\nauto criterion = torch::nn::CrossEntropyLoss();"));
  const std::string build = py_model_build(c, "exported to " + u.model_file);
  // One optimizer line: the winner's implementation in it (not a second AdamW further down).
  py(s, build + "\n" + py_optimizer_and_loss(optimizer_impl, u.loss));
}

/// The body of the data-parallel loop (indented for it): the forward under autocast when the precision asks for it,
/// the backward (scaled for fp16), and with grad_accum k the optimizer step every k-th micro-batch, the others under
/// no_sync so that the gradients are all-reduced once per step, not k times.
std::string ddp_step(const std::string& precision, const std::string& accum, const Ctx& c) {
  const bool fp16 = precision == "amp_fp16";  // (its scaler is made before the loop, in data_parallel)
  const bool accumulates = accum != "1";
  const std::string ind = accumulates ? "            " : "        ";  // under `with …no_sync()`, or the loop's own
  const std::string forward_backward =
      c.py_forward(precision, c.py_loss("x", "y") + (accumulates ? " / " + accum : ""), ind) + "\n" +
      fmt::format("{}{}  # DDP averages the gradients across ranks{}\n", ind,
                  fp16 ? "scaler.scale(loss).backward()" : "loss.backward()", accumulates ? " on the last micro-batch" : " here");
  const auto step = [&](const std::string& at) {
    return (fp16 ? at + "scaler.step(optimizer)\n" + at + "scaler.update()\n" : at + "optimizer.step()\n") + at +
           "optimizer.zero_grad()\n";
  };
  if (!accumulates) return forward_backward + step("        ");
  return fmt::format("        last = (i + 1) % {} == 0  # the step's last micro-batch\n"
                     "        with contextlib.nullcontext() if last else model.no_sync():  # all-reduce once per step\n",
                     accum) +
         forward_backward + "        if last:\n" + step("            ");
}

/// DDP's arguments for the winner's Reducer settings, the lines before `model = DDP(…)` (the first bucket's size) and the
/// lines after it (the comm hook, then torch.compile around DDP).
struct DdpLines {
  std::string args, before, after;
};
DdpLines ddp_lines(const Config& cfg, const std::map<std::string, std::string>& defaults, const Ctx& c) {
  const auto val = [&](const std::string& k) { return cfg.get(k, Config::default_of(k, defaults)); };
  const auto changed = [&](const std::string& k) { return cfg.has(k) && cfg.get(k) != Config::default_of(k, defaults); };
  const bool cuda = c.device == "cuda";
  DdpLines d;
  std::string &ddp_args = d.args, &before = d.before, &after = d.after;
  ddp_args = cuda ? "device_ids=[local_rank]" : "";
  const auto arg = [&](const std::string& a) { ddp_args += (ddp_args.empty() ? "" : ", ") + a; };
  if (changed("bucket_mb")) arg("bucket_cap_mb=" + val("bucket_mb"));
  if (changed("grad_as_bucket_view")) arg(std::string("gradient_as_bucket_view=") + (val("grad_as_bucket_view") == "true" ? "True" : "False"));
  if (changed("static_graph")) arg(std::string("static_graph=") + (val("static_graph") == "true" ? "True" : "False"));
  if (changed("broadcast_buffers")) arg(std::string("broadcast_buffers=") + (val("broadcast_buffers") == "true" ? "True" : "False"));
  if (changed("first_bucket_mb")) {
    before = changed("bucket_mb")
                 ? fmt::format("# first_bucket_mb={}: Python's DDP sizes the first bucket like the others once bucket_cap_mb "
                               "is given (torch/nn/parallel/distributed.py); only LibTorch's Reducer takes both\n",
                               val("first_bucket_mb"))
                 : fmt::format("dist._DEFAULT_FIRST_BUCKET_BYTES = {} << 20  # first bucket (a private setting DDP reads "
                               "when it is built)\n",
                               val("first_bucket_mb"));
  }
  if (changed("comm_hook")) {
    const std::string hook = val("comm_hook") == "fp16" ? "fp16_compress_hook" : "bf16_compress_hook";
    after = fmt::format("from torch.distributed.algorithms.ddp_comm_hooks import default_hooks\n"
                        "model.register_comm_hook(None, default_hooks.{})  # gradients sent as {}\n",
                        hook, val("comm_hook"));
  }
  if (changed("compile") && val("compile") != "off")  // compiled around DDP, as PyTorch's DDP + compile guide does
    after += (val("compile") == "default" ? std::string("model = torch.compile(model)")
                                          : fmt::format("model = torch.compile(model, mode=\"{}\")", val("compile"))) +
             "  # compile=" + val("compile") + ", around DDP\n";
  return d;
}

/// The global batch of `ranks` processes at `batch` each (`per_process` when the config leaves the batch as it is) and
/// `accum` micro-batches a step, in words.
std::string global_batch(const std::string& batch, const std::string& ranks, const std::string& accum, const std::string& per_process) {
  const bool accumulates = accum != "1";
  if (batch.empty() || batch == "default") return per_process + " × " + ranks + (accumulates ? " × " + accum : "");
  if (accumulates)
    return fmt::format("{} per process × {} processes × {} micro-batches = {}", batch, ranks, accum,
                       std::stoll(batch) * std::stoll(ranks) * std::stoll(accum));
  return fmt::format("{} × {} = {}", batch, ranks, std::stoll(batch) * std::stoll(ranks));
}

/// A data-parallel winner (ranks > 1): process group, DDP with the winner's Reducer settings, a sampler that
/// gives each rank its share, the per-rank batch and the global one, the loop, and the launch lines.
void data_parallel(const Config& cfg, const std::map<std::string, std::string>& defaults, const Ctx& c,
                   ApplySnippets& s) {
  const auto val = [&](const std::string& k) { return cfg.get(k, Config::default_of(k, defaults)); };
  const std::string ranks = val("ranks");
  const std::string batch = val("batch_size");
  const std::string accum = val("grad_accum");
  const bool cuda = c.device == "cuda";
  const std::string global = global_batch(batch, ranks, accum, "batch_size");
  // The Python worker's model: built by its factory (or its Hugging Face config) on this rank's device, with its AdamW.
  const std::string setup = python_worker_model(c) ? py_model_build(c, "as tuned (the Python worker built it this way)") + "\n" +
                                                         py_optimizer_and_loss(cfg.has("optimizer_impl") ? cfg.get("optimizer_impl") : "",
                                                                               c.subject.loss) + "\n"
                                                   : "";
  DdpLines d = ddp_lines(cfg, defaults, c);
  std::string &ddp_args = d.args, &before = d.before, &after = d.after;
  const std::string to_dev = cuda ? "x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)" : "";
  const std::string step_lines = ddp_step(val("precision"), accum, c);
  if (val("precision") == "amp_fp16") before += fmt::format("scaler = torch.amp.GradScaler(\"{}\")  # fp16 loss scaling\n", c.device);
  py(s, fmt::format(
            "# data parallel: {ranks} processes, one per {unit}, each training on its share of the data\n"
            "import contextlib\n"
            "import os\n"
            "import torch.distributed as dist\n"
            "from torch.nn.parallel import DistributedDataParallel as DDP\n"
            "# torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; under srun they come from Slurm\n"
            "rank = int(os.environ.get(\"RANK\", os.environ.get(\"SLURM_PROCID\", 0)))\n"
            "world = int(os.environ.get(\"WORLD_SIZE\", os.environ.get(\"SLURM_NTASKS\", 1)))\n"
            "local_rank = int(os.environ.get(\"LOCAL_RANK\", os.environ.get(\"SLURM_LOCALID\", 0)))\n"
            "os.environ.setdefault(\"MASTER_ADDR\", \"127.0.0.1\")\n"
            "os.environ.setdefault(\"MASTER_PORT\", \"29500\")\n"
            "dist.init_process_group(\"{backend}\", rank=rank, world_size=world)\n"
            "{device_lines}"
            "{before}"
            "model = DDP(model{ddp_args})\n"
            "{after}"
            "sampler = torch.utils.data.distributed.DistributedSampler(dataset, num_replicas=world, rank=rank)\n"
            "# batch_size is per process: the global batch is {global}\n"
            "loader = torch.utils.data.DataLoader(dataset, batch_size={batch}, sampler=sampler, drop_last=True)\n"
            "for epoch in range(epochs):\n"
            "    sampler.set_epoch(epoch)  # a new shuffle each epoch, the same on every rank\n"
            "    for i, (x, y) in enumerate(loader):\n"
            "{to_dev}"
            "{step_lines}"
            "dist.destroy_process_group()\n"
            "# launch on this machine:  torchrun --standalone --nproc_per_node={ranks} train.py\n"
            "# through Slurm:           srun --ntasks={ranks} {srun_dev}python train.py\n"
            "#   (on several nodes, first: export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n1))",
            fmt::arg("ranks", ranks), fmt::arg("unit", cuda ? "GPU" : "group of cores"),
            fmt::arg("backend", cuda ? "nccl" : "gloo"),
            fmt::arg("device_lines", cuda ? "torch.cuda.set_device(local_rank)\ndevice = torch.device(\"cuda\", local_rank)\n" +
                                                (setup.empty() ? "model.to(device)\n" : setup)
                                          : setup),
            fmt::arg("before", before), fmt::arg("ddp_args", ddp_args.empty() ? "" : ", " + ddp_args),
            fmt::arg("after", after), fmt::arg("global", global),
            fmt::arg("batch", batch.empty() || batch == "default" ? "batch_size" : batch),
            fmt::arg("to_dev", to_dev.empty() ? "" : "        " + to_dev + "\n"), fmt::arg("step_lines", step_lines),
            fmt::arg("srun_dev", cuda ? "--gpus-per-task=1 " : "--cpus-per-task=N ")));
}

/// Whether knob `k` at `v` changes how the step runs: such a config gets the whole one-process loop
/// (reports/train_loop.h) rather than a line per knob.
bool loop_knob(const std::string& k, const std::string& v) {
  return k == "batch_size" || k == "optimizer_impl" || k == "zero_grad" || k == "grad_accum" || k == "log_every" ||
         k == "threads" || (k == "precision" && (v == "amp_bf16" || v == "amp_fp16"));
}

/// Knobs the whole loop also carries once it is printed, beyond the step's own: channels_last in both languages, and in
/// Python the DataLoader's settings (the C++ loop trains on tensors in memory; autotune's loader stays a fragment).
bool in_cpp_loop(const std::string& k, const std::string& v) { return loop_knob(k, v) || (k == "memory_format" && v == "channels_last"); }
bool in_py_loop(const std::string& k, const std::string& v) {
  return in_cpp_loop(k, v) || k == "num_workers" || k == "prefetch" || k == "pin_memory" || k == "compile";
}

/// The loop of `cfg` with every loop knob at the config's value (reports/train_loop.h); its Python setup is the model,
/// AdamW and criterion lines the script needs.
LoopSpec loop_spec(const Config& cfg, const std::map<std::string, std::string>& defaults, const Ctx& c) {
  LoopSpec l;
  l.device = c.device;
  l.model_file = c.subject.model_file;
  l.loss = c.subject.loss;
  l.cpp_loss = [&c](const std::string& x, const std::string& y) { return c.cpp_loss(x, y); };
  l.py_loss = [&c](const std::string& x, const std::string& y) { return c.py_loss(x, y); };
  const auto val = [&](const std::string& k) { return cfg.get(k, Config::default_of(k, defaults)); };
  const auto changed = [&](const std::string& k) { return cfg.has(k) && cfg.get(k) != Config::default_of(k, defaults); };
  l.batch = cfg.has("batch_size") && cfg.get("batch_size") != "default" ? cfg.get("batch_size") : "";
  if (changed("threads")) l.threads = val("threads");
  if (const std::string p = val("precision"); p == "amp_bf16" || p == "amp_fp16") l.precision = p;
  l.optimizer_impl = cfg.has("optimizer_impl") ? cfg.get("optimizer_impl") : "";
  if (cfg.has("zero_grad")) l.zero_grad = cfg.get("zero_grad");
  if (cfg.has("grad_accum")) l.grad_accum = std::stoi(cfg.get("grad_accum"));
  if (cfg.has("log_every")) l.log_every = std::stoi(cfg.get("log_every"));
  l.channels_last = val("memory_format") == "channels_last";
  if (changed("num_workers")) l.num_workers = val("num_workers");
  if (changed("prefetch")) l.prefetch = val("prefetch");
  if (changed("pin_memory")) l.pin_memory = val("pin_memory");
  if (changed("compile") && val("compile") != "off") l.compile = val("compile");
  for (const auto& [k, v] : cfg.values())
    if (changed(k) && (in_py_loop(k, v) || k == "ranks" || find_knob(k).needs_ranks)) l.what += (l.what.empty() ? "" : " ") + k + "=" + v;
  l.task = c.subject.python_task;
  l.task_functions = c.subject.task_functions;
  l.task_iterable = c.subject.task_iterable;
  l.task_lightning = c.subject.task_lightning;
  if (!l.task.empty()) {
    // the task loop builds the model, optimizer and data from the task itself
  } else if (c.scripted()) {
    ApplySnippets built;
    preamble(c, built, l.optimizer_impl);
    l.py_setup = built.python.front();
  } else if (python_worker_model(c)) {
    l.py_setup = py_model_build(c, "as tuned (the Python worker built it this way)") + "\n" +
                 py_optimizer_and_loss(l.optimizer_impl, c.subject.loss);
  } else {
    l.py_setup = "# model: your torch.nn.Module, on the device\n" + py_adamw(l.optimizer_impl) + py_criterion(c.subject.loss);
  }
  return l;
}

/// A task's data-parallel config: one rank's whole script (reports/train_loop.h, LoopSpec::task_ddp), first in `s`
/// (after the learning-rate line), with DDP's arguments for the config's Reducer settings.
void task_data_parallel(const Config& cfg, const std::map<std::string, std::string>& defaults, const Ctx& c, bool lr_given,
                        ApplySnippets& s) {
  const auto val = [&](const std::string& k) { return cfg.get(k, Config::default_of(k, defaults)); };
  LoopSpec l = loop_spec(cfg, defaults, c);
  const DdpLines d = ddp_lines(cfg, defaults, c);
  l.task_ddp = TaskDdp{val("ranks"), c.device == "cuda" ? "nccl" : "gloo", d.args, d.before, d.after,
                       global_batch(val("batch_size"), val("ranks"), val("grad_accum"), "task.batch_size")};
  l.lr_line = lr_given;
  const size_t first = lr_given ? 1 : 0;
  if (s.python.size() > first)
    s.python.insert(s.python.begin() + first, "# this config's other settings, each where its comment says (in the script above):");
  s.python.insert(s.python.begin() + first, py_train_loop(l));
  s.cpp.clear();  // a task is Python: no LibTorch program to change
}

/// One rank's whole loop in C++ for a data-parallel config: the Reducer with the config's DDP settings in it.
std::string cpp_ddp_loop(const Config& cfg, const std::map<std::string, std::string>& defaults, const Ctx& c) {
  LoopSpec l = loop_spec(cfg, defaults, c);
  const auto val = [&](const std::string& k) { return cfg.get(k, Config::default_of(k, defaults)); };
  const auto num = [&](const std::string& k, int fallback) {
    const std::string v = val(k);
    return v.empty() || v == "default" ? fallback : std::stoi(v);
  };
  DdpLoop d;
  d.ranks = num("ranks", 2);
  d.bucket_mb = num("bucket_mb", 25);
  d.first_bucket_mb = num("first_bucket_mb", 1);
  d.grad_as_bucket_view = val("grad_as_bucket_view") == "true";
  d.static_graph = val("static_graph") == "true";
  d.broadcast_buffers = val("broadcast_buffers") != "false";
  d.comm_hook = val("comm_hook").empty() ? "none" : val("comm_hook");
  const std::string batch = val("batch_size");
  const std::string micro = l.grad_accum > 1 ? fmt::format(" × {} micro-batches", l.grad_accum) : "";
  if (batch.empty() || batch == "default")
    d.global = fmt::format("batch_size × {} processes{}", d.ranks, micro);
  else
    d.global = fmt::format("{} per process × {} processes{} = {}", batch, d.ranks, micro, std::stoll(batch) * d.ranks * l.grad_accum);
  l.ddp = d;
  return cpp_train_loop(l);
}

/// The one-process loop of `cfg` with every loop knob at the config's value, in both languages, first in `s`.
void whole_loop(const Config& cfg, const std::map<std::string, std::string>& defaults, const Ctx& c, bool lr_given,
                const std::vector<RampStep>& ramp, ApplySnippets& s) {
  LoopSpec l = loop_spec(cfg, defaults, c);
  if (!ramp.empty()) {
    l.ramp = ramp;
    l.grad_accum = 1;
    l.what += (l.what.empty() ? "" : " ") + std::string("with a batch ramp of grad_accum");
  }
  const bool lr_line = lr_given;  // the learning-rate line stays first: the loop's optimizer uses its `lr`
  l.lr_line = lr_line;
  if (l.task.empty()) s.cpp.insert(s.cpp.begin() + (lr_line ? 1 : 0), cpp_train_loop(l));
  s.python.insert(s.python.begin() + (lr_line ? 1 : 0), py_train_loop(l));
}

}  // namespace

ApplySubject apply_subject(const WorkloadInfo& w) {
  ApplySubject a;
  a.model_file = w.model_file;
  if (!w.loss.empty()) a.loss = w.loss;
  a.python_factory = w.python_factory;
  a.python_kwargs = w.python_kwargs;
  a.python_build = w.python_build;
  a.python_forward = w.python_forward;
  a.sequence_target = w.block_size > 0;
  a.python_task = w.python_task;
  a.task_functions = w.task_functions;
  a.task_iterable = w.task_iterable;
  a.task_lightning = w.task_lightning;
  return a;
}

ApplySnippets apply_snippets(const Config& cfg, const std::string& device,
                             const std::map<std::string, std::string>& defaults, const ApplySubject& subject,
                             const LrHint& lr, const std::vector<RampStep>& ramp) {
  ApplySnippets s;
  const Ctx c{device, subject};
  if (lr.lr > 0) {
    cpp(s, fmt::format("const double lr = {:.3g};  // a starting point for the new batch: {}", lr.lr, lr.why));
    py(s, fmt::format("lr = {:.3g}  # a starting point for the new batch: {}", lr.lr, lr.why));
  }
  const bool ddp = cfg.has("ranks") && cfg.get("ranks") != "1" && cfg.get("ranks") != Config::default_of("ranks", defaults);
  // One process with a changed step (not threads alone, a line of its own): the whole loop, not fragments of it. A task's
  // loop is always whole: its data, loss and optimizer are the task's, and the loader's settings live in it.
  const bool task = !subject.python_task.empty();
  bool whole = (!ramp.empty() && !ddp) || task;
  for (const auto& [k, v] : cfg.values())
    whole |= !ddp && k != "threads" && loop_knob(k, v) && v != Config::default_of(k, defaults);
  std::string optimizer_impl;  // the scripted preamble's AdamW carries it
  for (const auto& [k, v] : cfg.values()) {
    if (v == Config::default_of(k, defaults)) continue;  // the baseline's (PyTorch's default)
    // One process: data-parallel settings mean nothing. Several: the DDP block has them, the batch and the loop.
    if (k == "ranks" || find_knob(k).needs_ranks || (ddp && (k == "batch_size" || k == "grad_accum"))) continue;
    if (whole && in_py_loop(k, v) && in_cpp_loop(k, v)) continue;  // in both loops
    if (k == "optimizer_impl") optimizer_impl = v;
    for (const Snippet& sn : snippets())
      if (k == sn.knob && (sn.values.empty() || std::find(sn.values.begin(), sn.values.end(), v) != sn.values.end())) {
        const size_t py_before = s.python.size(), cpp_before = s.cpp.size();
        sn.write(v, c, s);
        if ((ddp || whole) && in_cpp_loop(k, v)) s.cpp.resize(cpp_before);  // in the (rank's) C++ loop
        if (whole && in_py_loop(k, v)) s.python.resize(py_before);            // in the Python loop
        if (k == "optimizer_impl" && (c.scripted() || (ddp && python_worker_model(c)))) s.python.resize(py_before);  // in the AdamW line above
        if ((k == "precision" || k == "compile") && ddp) s.python.resize(py_before);  // autocast and compile: in the DDP block
        break;
      }
  }
  if (ddp && task) {  // the task's own script, one rank of it
    task_data_parallel(cfg, defaults, c, lr.lr > 0, s);
    return s;
  }
  if (ddp) {
    data_parallel(cfg, defaults, c, s);  // Python: DistributedDataParallel around the script's model
    // C++: one rank's whole loop (it loads the model itself), the other settings' lines after it.
    const size_t first = lr.lr > 0 ? 1 : 0;
    if (s.cpp.size() > first)
      s.cpp.insert(s.cpp.begin() + first, "// this config's other settings, each where its comment says (in train() above):");
    s.cpp.insert(s.cpp.begin() + first, cpp_ddp_loop(cfg, defaults, c));
    if (c.scripted()) {
      ApplySnippets all;
      preamble(c, all, optimizer_impl);
      s.python.insert(s.python.begin(), all.python.begin(), all.python.end());
    }
    return s;
  }
  if (whole) {  // the loop builds the model itself; the other knobs' lines follow it
    const size_t first = lr.lr > 0 ? 1 : 0;  // after the learning-rate line
    if (s.cpp.size() > first)
      s.cpp.insert(s.cpp.begin() + first, "// this config's other settings, each where its comment says (in train() above):");
    if (s.python.size() > first)
      s.python.insert(s.python.begin() + first, "# this config's other settings, each where its comment says (in the loop above):");
    whole_loop(cfg, defaults, c, lr.lr > 0, ramp, s);
    if (task) s.cpp.clear();  // a task is Python: no LibTorch program to change
    return s;
  }
  if (c.scripted() && (!s.cpp.empty() || !s.python.empty())) {
    ApplySnippets all;
    preamble(c, all, optimizer_impl);
    all.cpp.insert(all.cpp.end(), s.cpp.begin(), s.cpp.end());
    all.python.insert(all.python.end(), s.python.begin(), s.python.end());
    return all;
  }
  return s;
}

ApplySnippets heap_snippets(const std::string& host_malloc) {
  ApplySnippets s;
  if (host_malloc != host_heap::kApplied) return s;
  s.cpp.push_back(
      fmt::format("#include <malloc.h>\n"
                  "// first thing in main(), before LibTorch allocates:\n"
                  "mallopt(M_MMAP_THRESHOLD, {});  // 32 MiB: freed blocks stay in the heap\n"
                  "mallopt(M_TRIM_THRESHOLD, {});  // never trim the heap top",
                  host_heap::kMmapThresholdBytes, host_heap::kTrimThresholdBytes));
  s.python.push_back(
      fmt::format("# glibc reads these when the process starts: set them in the launching shell\n"
                  "MALLOC_MMAP_THRESHOLD_={} MALLOC_TRIM_THRESHOLD_={} python train.py",
                  host_heap::kMmapThresholdBytes, host_heap::kTrimThresholdBytes));
  return s;
}

std::string heap_note(const std::string& host_malloc, double faults_per_step) {
  return fmt::format(
      "Host heap: every trial, the baseline's included, ran with {}{}. LibTorch frees and re-allocates a "
      "step's tensors every step; with glibc's defaults that memory is mapped and page-faulted in again each "
      "time. Give your program the same policy to see the measured speeds:",
      host_malloc, faults_per_step >= 0 ? fmt::format(" (the winner: {:.0f} minor page faults per step)", faults_per_step) : "");
}

}  // namespace autotune
