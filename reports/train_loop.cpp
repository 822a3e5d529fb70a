#include "reports/train_loop.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace autotune {

namespace {

bool amp(const LoopSpec& s) { return s.precision == "amp_bf16" || s.precision == "amp_fp16"; }
bool fp16(const LoopSpec& s) { return s.precision == "amp_fp16"; }
bool own_adamw(const LoopSpec& s) { return s.optimizer_impl == "foreach" || s.optimizer_impl == "fused"; }

/// Every line of `text` led by `ind` (empty lines stay empty).
std::string indent(const std::string& text, const std::string& ind) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t nl = text.find('\n', start);
    const std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    out += (line.empty() ? "" : ind) + line + "\n";
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return out;
}

// ---- C++

/// The optimizer: LibTorch's AdamW (one parameter at a time), or AdamW's state kept here for the _foreach_ / fused
/// kernels (the same hyper-parameters: betas 0.9/0.999, eps 1e-8, weight decay 0.01).
std::string cpp_optimizer(const LoopSpec& s) {
  if (!own_adamw(s)) return "torch::optim::AdamW optimizer(params, torch::optim::AdamWOptions(lr));  // one parameter at a time\n";
  return fmt::format(
      "// optimizer_impl={}: AdamW's state, kept here for the {}; lr, betas 0.9/0.999,\n"
      "// eps 1e-8 and weight decay 0.01 as torch::optim::AdamWOptions\n"
      "std::vector<torch::Tensor> exp_avgs, exp_avg_sqs, state_steps;\n"
      "for (const auto& p : params) {{\n"
      "  exp_avgs.push_back(torch::zeros_like(p));\n"
      "  exp_avg_sqs.push_back(torch::zeros_like(p));\n"
      "  state_steps.push_back(torch::zeros({{}}, p.options().dtype(torch::kFloat32)));\n"
      "}}\n"
      "int64_t adam_steps = 0;\n",
      s.optimizer_impl, s.optimizer_impl == "fused" ? "fused kernel (one launch for all parameters)" : "_foreach_ kernels (one launch per operation over all parameters)");
}

/// The optimizer takes the new `lr` (a ramp's switch): LibTorch's AdamW keeps it per parameter group; the spelled-out
/// foreach / fused steps read `lr` itself.
std::string cpp_set_lr(const LoopSpec& s) {
  if (own_adamw(s)) return "";
  return "for (auto& group : optimizer.param_groups())\n"
         "  static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);\n";
}

/// One optimizer step (inside the loop, no grad).
std::string cpp_step(const LoopSpec& s) {
  if (!own_adamw(s)) return "optimizer.step();\n";
  std::string out =
      "{\n"
      "  torch::NoGradGuard no_grad;\n"
      "  std::vector<torch::Tensor> p, g, m, v, t;  // the parameters that have gradients, with their state\n"
      "  for (size_t j = 0; j < params.size(); ++j)\n"
      "    if (params[j].grad().defined()) {\n"
      "      p.push_back(params[j]);\n"
      "      g.push_back(params[j].grad());\n"
      "      m.push_back(exp_avgs[j]);\n"
      "      v.push_back(exp_avg_sqs[j]);\n"
      "      t.push_back(state_steps[j]);\n"
      "    }\n"
      "  at::_foreach_add_(t, 1.0);\n"
      "  ++adam_steps;\n";
  if (s.optimizer_impl == "fused")
    out += "  at::_fused_adamw_(p, g, m, v, /*max_exp_avg_sqs=*/{}, t, lr, 0.9, 0.999, /*weight_decay=*/0.01, 1e-8,\n"
           "                   /*amsgrad=*/false, /*maximize=*/false);\n";
  else
    out += "  const double bc1 = 1 - std::pow(0.9, adam_steps), bc2 = 1 - std::pow(0.999, adam_steps);\n"
           "  at::_foreach_mul_(p, 1 - lr * 0.01);  // decoupled weight decay\n"
           "  at::_foreach_lerp_(m, g, 1 - 0.9);\n"
           "  at::_foreach_mul_(v, 0.999);\n"
           "  at::_foreach_addcmul_(v, g, g, 1 - 0.999);\n"
           "  auto denom = at::_foreach_sqrt(v);\n"
           "  at::_foreach_div_(denom, std::sqrt(bc2));\n"
           "  at::_foreach_add_(denom, 1e-8);\n"
           "  at::_foreach_addcdiv_(p, m, denom, -lr / bc1);\n";
  return out + "}\n";
}

std::string cpp_zero_grad(const LoopSpec& s) {
  const bool zeros = s.zero_grad == "zeros";
  if (s.ddp && s.ddp->grad_as_bucket_view)  // Optimizer::zero_grad detaches each gradient first: a bucket view refuses
    return zeros ? "for (auto& q : params)  // zero_grad=zeros, in the Reducer's buckets (the gradients are views of them)\n"
                   "  if (q.grad().defined()) q.mutable_grad().zero_();\n"
                 : "for (auto& q : params) q.mutable_grad().reset();  // set_to_none; not optimizer.zero_grad(), which "
                   "detaches each gradient first and a bucket view refuses that\n";
  if (!own_adamw(s))
    return zeros ? "optimizer.zero_grad(/*set_to_none=*/false);  // zero_grad=zeros: writes zeros instead of freeing\n"
                 : "optimizer.zero_grad();  // frees the gradients (set_to_none, the default)\n";
  return zeros ? "for (auto& q : params)  // zero_grad=zeros: writes zeros into the gradients instead of freeing them\n"
                 "  if (q.grad().defined()) q.mutable_grad().zero_();\n"
               : "for (auto& q : params) q.mutable_grad().reset();  // frees the gradients (set_to_none, PyTorch's default)\n";
}

/// The micro-batch's forward and backward, under autocast when the precision asks for it; `before_forward` and
/// `before_backward` are the data-parallel Reducer's calls (empty in one process).
std::string cpp_micro_step(const LoopSpec& s, const std::string& x, const std::string& y, const std::string& before_forward = "",
                           const std::string& before_backward = "") {
  const std::string loss = s.cpp_loss(x, y) + (s.grad_accum > 1 || !s.ramp.empty() ? " / accum" : "");
  std::string out = before_forward;
  if (amp(s)) {
    const std::string dev = s.device == "cuda" ? "at::kCUDA" : "at::kCPU";
    out += fmt::format(
        "// precision={}: autocast around the forward and the loss (its state is per thread; LibTorch has no guard)\n"
        "at::autocast::set_autocast_enabled({}, true);\n"
        "at::autocast::set_autocast_dtype({}, at::k{});\n"
        "at::autocast::increment_nesting();\n",
        s.precision, dev, dev, fp16(s) ? "Half" : "BFloat16");
    out += "auto loss = " + loss + ";\n";
    out += fmt::format("if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();\n"
                       "at::autocast::set_autocast_enabled({}, false);\n",
                       dev);
  } else {
    out += "auto loss = " + loss + ";\n";
  }
  out += before_backward;
  out += fp16(s) ? "(loss * scale).backward();  // scaled: fp16 gradients would underflow\n" : "loss.backward();\n";
  out += "running += loss.detach();\n";
  return out;
}

/// The step after the micro-batches: (fp16: unscale, skip on inf, update the scale) the optimizer, zero_grad.
std::string cpp_after_backward(const LoopSpec& s) {
  if (!fp16(s)) return cpp_step(s) + cpp_zero_grad(s);
  return "std::vector<torch::Tensor> grads;\n"
         "for (auto& q : params)\n"
         "  if (q.grad().defined()) grads.push_back(q.grad());\n"
         "found_inf.zero_();\n"
         "at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, scale.reciprocal());\n"
         "if (found_inf.item<double>() == 0) {  // a step whose gradients overflowed is skipped\n" +
         indent(cpp_step(s), "  ") +
         "}\n"
         "at::_amp_update_scale_(scale, growth_tracker, found_inf, /*growth=*/2.0, /*backoff=*/0.5, /*interval=*/2000);\n" +
         cpp_zero_grad(s);
}

// ---- Python

std::string py_autocast_forward(const LoopSpec& s, const std::string& loss) {
  if (!amp(s)) return "loss = " + loss + "\n";
  return fmt::format("with torch.autocast(\"{}\", dtype=torch.{}):  # precision={}\n    loss = {}\n", s.device,
                     fp16(s) ? "float16" : "bfloat16", s.precision, loss);
}

std::string py_micro_step(const LoopSpec& s) {
  const std::string k = s.ramp.empty() ? std::to_string(s.grad_accum) : "accum";
  const std::string loss = s.grad_accum > 1 || !s.ramp.empty() ? s.py_loss("xb", "yb") + " / " + k : s.py_loss("x", "y");
  return py_autocast_forward(s, loss) + (fp16(s) ? "scaler.scale(loss).backward()\n" : "loss.backward()\n") +
         "running += loss.detach()\n";
}

std::string py_zero_grad(const LoopSpec& s);

/// The end of a Python step: the optimizer step (through the scaler for fp16), zero_grad, the step counted and the loss
/// read every log_every steps (printed by rank 0 alone in a task's data-parallel script).
std::string py_step_end(const LoopSpec& s) {
  const std::string who = s.task_ddp ? "if rank == 0:  # rank 0's share of the batch\n    " : "";
  const std::string print_mean = fmt::format("print(f\"step {{step}}: loss {{(running / {0}).item():.4f}}\")  # their mean\n", s.log_every);
  return (fp16(s) ? "scaler.step(optimizer)\nscaler.update()\n" : "optimizer.step()\n") + py_zero_grad(s) + "step += 1\n" +
         (s.log_every > 1 ? fmt::format("if step % {0} == 0:  # log_every={0}: one device sync per {0} steps\n", s.log_every) +
                                indent(who + print_mean, "    ") + "    running.zero_()\n"
                          : who + "print(f\"step {step}: loss {running.item():.4f}\")  # a sync each step\nrunning.zero_()\n");
}

std::string py_zero_grad(const LoopSpec& s) {
  return s.zero_grad == "zeros" ? "optimizer.zero_grad(set_to_none=False)  # zero_grad=zeros: writes zeros instead of freeing\n"
                                : "optimizer.zero_grad()  # frees the gradients (set_to_none=True, the default)\n";
}

// ---- C++, data parallel (one rank)

/// The includes a rank needs beyond the one-process loop's.
std::string cpp_ddp_includes(const LoopSpec& s) {
  std::string out =
      "// Built with torch's CMake config (find_package(Torch)): it defines USE_DISTRIBUTED and USE_C10D_GLOO / USE_C10D_NCCL,\n"
      "// without which these headers are empty.\n";
  out += s.device == "cuda" ? "#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>\n"
                            : "// ProcessGroupGloo.hpp includes gloo's own headers, which the torch wheel does not ship: "
                              "libgloo-dev (Debian, Ubuntu) has them\n"
                              "#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>\n";
  return out + "#include <torch/csrc/distributed/c10d/TCPStore.hpp>\n"
               "#include <torch/csrc/distributed/c10d/comm.hpp>\n"
               "#include <torch/csrc/distributed/c10d/default_comm_hooks.hpp>\n"
               "#include <torch/csrc/distributed/c10d/reducer.hpp>\n"
               "\n"
               "#include <algorithm>\n"
               "#include <cstdint>\n"
               "#include <cstdlib>\n"
               "#include <string>\n"
               "#include <unordered_map>\n"
               "\n";
}

/// comm_hook=bf16: LibTorch's Reducer has fp16 compression built in, not bf16 — this hook (as Python's
/// bf16_compress_hook) divides by the world, sends bfloat16 and writes the average back.
std::string cpp_bf16_hook() {
  return "// comm_hook=bf16: gradients sent as bfloat16 (Python's bf16_compress_hook; LibTorch's Reducer builds in fp16 only)\n"
         "class Bf16CompressHook : public c10d::CppCommHookInterface<c10::intrusive_ptr<c10d::ProcessGroup>> {\n"
         " public:\n"
         "  using CppCommHookInterface::CppCommHookInterface;\n"
         "  c10::intrusive_ptr<c10::ivalue::Future> runHook(c10d::GradBucket& bucket) override {\n"
         "    at::Tensor buffer = bucket.getBufferRef();\n"
         "    std::vector<at::Tensor> tensors = {buffer.div(state_->getSize()).to(at::kBFloat16)};\n"
         "    auto fut = state_->allreduce(tensors)->getFuture();\n"
         "    return fut->then(\n"
         "        [buffer](c10::ivalue::Future& f) {\n"
         "          buffer.copy_(f.value().toTensorVector().at(0));\n"
         "          return c10::IValue(buffer);\n"
         "        },\n"
         "        c10::TensorType::get());\n"
         "  }\n"
         "};\n"
         "\n";
}

/// The process group from the launcher's environment (torchrun's variables, or srun's SLURM_*), first in train().
std::string cpp_process_group(const LoopSpec& s) {
  std::string out =
      "// data parallel: this process's rank and the job's size from the launcher (torchrun, or srun's SLURM_* variables)\n"
      "const auto env = [](const char* name, const char* slurm, const char* fallback) {\n"
      "  const char* v = std::getenv(name);\n"
      "  if ((v == nullptr || *v == 0) && slurm != nullptr) v = std::getenv(slurm);\n"
      "  return std::string(v != nullptr && *v != 0 ? v : fallback);\n"
      "};\n"
      "const int rank = std::stoi(env(\"RANK\", \"SLURM_PROCID\", \"0\"));\n"
      "const int world = std::stoi(env(\"WORLD_SIZE\", \"SLURM_NTASKS\", \"1\"));\n"
      "c10d::TCPStoreOptions store_options;  // rank 0 serves the rendezvous at MASTER_ADDR:MASTER_PORT\n"
      "store_options.port = static_cast<std::uint16_t>(std::stoi(env(\"MASTER_PORT\", nullptr, \"29500\")));\n"
      "store_options.isServer = rank == 0;\n"
      "store_options.numWorkers = world;\n"
      "auto store = c10::make_intrusive<c10d::TCPStore>(env(\"MASTER_ADDR\", nullptr, \"127.0.0.1\"), store_options);\n"
      "auto pg = c10::make_intrusive<c10d::ProcessGroup>(store, rank, world);\n";
  if (s.device == "cuda")
    return out +
           "const int local_rank = std::stoi(env(\"LOCAL_RANK\", \"SLURM_LOCALID\", \"0\"));\n"
           "const torch::Device device(torch::kCUDA, local_rank);  // one GPU per process\n"
           "pg->setBackend(c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::NCCL,\n"
           "               c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world, c10d::ProcessGroupNCCL::Options::create()));\n"
           "pg->setDefaultBackend(c10d::ProcessGroup::BackendType::NCCL);\n";
  return out +
         "const torch::Device device(\"cpu\");\n"
         "auto gloo_options = c10d::ProcessGroupGloo::Options::create();\n"
         "gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());  // the interface of this host's name\n"
         "pg->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO,\n"
         "               c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world, gloo_options));\n"
         "pg->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);\n";
}

/// After the model and its parameters: rank 0's weights everywhere, and the Reducer with the config's DDP settings.
std::string cpp_reducer(const LoopSpec& s, bool scripted) {
  const DdpLoop& d = *s.ddp;
  std::string out = scripted ? "std::vector<torch::Tensor> buffers;\nfor (const auto& b : model.buffers()) buffers.push_back(b);\n"
                             : "std::vector<torch::Tensor> buffers = model->buffers();\n";
  out += "{  // every rank starts from rank 0's weights and buffers, as DistributedDataParallel's constructor makes it\n"
         "  torch::NoGradGuard no_grad;\n"
         "  std::vector<torch::Tensor> state = params;\n"
         "  state.insert(state.end(), buffers.begin(), buffers.end());\n"
         "  c10d::broadcast_coalesced(pg, state, /*buffer_size=*/250 << 20, /*rank=*/0);\n"
         "}\n";
  out += fmt::format(
      "// c10d::Reducer, DistributedDataParallel's engine: the gradients averaged across ranks, bucket by bucket, while\n"
      "// backward runs. The first step has one bucket; then the buckets are rebuilt in the order the gradients came,\n"
      "// the first of first_bucket_mb={0} MiB, the others of bucket_mb={1} MiB.\n"
      "auto [bucket_indices, bucket_limits] =\n"
      "    c10d::compute_bucket_assignment_by_size(params, {{SIZE_MAX}}, std::vector<bool>(params.size(), false));\n"
      "std::reverse(bucket_indices.begin(), bucket_indices.end());\n"
      "c10d::Reducer reducer(params, bucket_indices, pg, std::vector<bool>(params.size(), false),\n"
      "                      /*bucket_bytes_cap=*/int64_t{{{1}}} << 20, /*find_unused_parameters=*/false,\n"
      "                      /*gradient_as_bucket_view=*/{2}, std::unordered_map<size_t, std::string>{{}},\n"
      "                      /*first_bucket_bytes_cap=*/int64_t{{{0}}} << 20, /*skip_all_reduce_unused_params=*/false,\n"
      "                      /*use_python_reducer=*/false, std::vector<int64_t>{{}});\n",
      d.first_bucket_mb, d.bucket_mb, d.grad_as_bucket_view ? "true" : "false");
  if (d.static_graph) out += "reducer.set_static_graph();  // static_graph=true: the same graph every step\n";
  if (d.comm_hook == "fp16")
    out += "reducer.register_builtin_comm_hook(c10d::BuiltinCommHookType::FP16_COMPRESS);  // comm_hook=fp16: sent as fp16\n";
  else if (d.comm_hook == "bf16")
    out += "reducer.register_comm_hook(std::make_unique<Bf16CompressHook>(pg));  // comm_hook=bf16\n";
  if (d.static_graph) out += "bool first_sync = true;\n";
  return out;
}

/// The Reducer's calls around the micro-batch that all-reduces (the step's last): buffers broadcast (at the step's
/// start), buckets rebuilt once, forward and backward prepared; after it, static_graph's delayed all-reduce the first time.
std::string cpp_ddp_before_forward(const LoopSpec& s) {
  std::string out;
  if (s.ddp->broadcast_buffers)
    out += "if (!buffers.empty()) {  // broadcast_buffers: rank 0's buffers (e.g. BatchNorm's statistics) before each step\n"
           "  torch::NoGradGuard no_grad;\n"
           "  c10d::broadcast_coalesced(pg, buffers, 250 << 20, 0);\n"
           "}\n";
  return out;
}

std::string cpp_ddp_last_forward() {
  return "reducer.rebuild_buckets();  // after the first step only: the buckets in gradient order\n"
         "reducer.prepare_for_forward();\n";
}

std::string cpp_ddp_after_backward(const LoopSpec& s) {
  return s.ddp->static_graph ? "if (first_sync) reducer.delay_all_reduce();  // static_graph: the first step's all-reduce runs here\n"
                               "first_sync = false;\n"
                             : "";
}

/// One optimizer step inside the loop over batches (x, y): the micro-batches (with the Reducer's calls for a rank),
/// the optimizer, zero_grad, and the loss logged every log_every steps.
std::string cpp_step_body(const LoopSpec& s) {
  const bool ddp = s.ddp.has_value();
  std::string inner;
  if (s.grad_accum > 1 || !s.ramp.empty()) {
    // Data parallel: only the last micro-batch's backward all-reduces (the others only accumulate, as no_sync()).
    const std::string first =
        ddp && !cpp_ddp_before_forward(s).empty() ? "if (i == 0) {\n" + indent(cpp_ddp_before_forward(s), "  ") + "}\n" : "";
    const std::string last_fwd = ddp ? "if (i == accum - 1) {  // the step's last micro-batch all-reduces\n" +
                                           indent(cpp_ddp_last_forward(), "  ") + "}\n"
                                     : "";
    const std::string last_bwd = ddp ? "if (i == accum - 1) reducer.prepare_for_backward({});\n" : "";
    inner = "const auto xs = x.chunk(accum), ys = y.chunk(accum);\n"
            "for (int64_t i = 0; i < accum; ++i) {\n" +
            indent(cpp_micro_step(s, "xs[i]", "ys[i]", first + last_fwd, last_bwd), "  ") +
            "}\n";
  } else {
    inner = ddp ? cpp_micro_step(s, "x", "y", cpp_ddp_before_forward(s) + cpp_ddp_last_forward(), "reducer.prepare_for_backward({});\n")
                : cpp_micro_step(s, "x", "y");
  }
  if (ddp) inner += cpp_ddp_after_backward(s);
  inner += cpp_after_backward(s);
  inner += "++step;\n";
  const std::string who = ddp ? "if (rank == 0) " : "";
  const std::string whose = ddp ? " (rank 0's share of the batch)" : "";
  inner += s.log_every > 1
               ? fmt::format("if (step % {0} == 0) {{  // log_every={0}: one device sync per {0} steps\n"
                             "  {1}std::cout << \"step \" << step << \": loss \" << (running / {0}).item<double>() << std::endl;  // their mean{2}\n"
                             "  running.zero_();\n"
                             "}}\n",
                             s.log_every, who, whose)
               : fmt::format("{}std::cout << \"step \" << step << \": loss \" << running.item<double>() << std::endl;  // a sync each step{}\n"
                             "running.zero_();\n",
                             who, whose);
  return inner;
}

/// A ramp's phases as a table in the C++ loop, and its first phase applied: the micro-batch stays, `accum` and `lr` move.
std::string cpp_ramp_table(const LoopSpec& s) {
  std::string rows;
  for (const RampStep& r : s.ramp)
    rows += fmt::format("    {{{}, {}, {:.4g}}},\n", static_cast<long long>(std::llround(r.from_samples)), r.grad_accum, r.lr);
  return "// A batch ramp: from each phase's sample count on, grad_accum micro-batches per optimizer step at its learning rate\n"
         "struct Phase {\n"
         "  int64_t from_samples, accum;\n"
         "  double lr;\n"
         "};\n"
         "const std::vector<Phase> ramp = {\n" +
         rows +
         "};\n"
         "size_t phase = 0;\n"
         "int64_t accum = ramp[0].accum, samples = 0;\n"
         "lr = ramp[0].lr;\n" +
         cpp_set_lr(s);
}

/// After an optimizer step: the samples trained, and the next phase once they reach it.
std::string cpp_ramp_switch(const LoopSpec& s) {
  return "samples += batch_size * accum;\n"
         "while (phase + 1 < ramp.size() && samples >= ramp[phase + 1].from_samples) {  // the next phase of the ramp\n"
         "  ++phase;\n"
         "  accum = ramp[phase].accum;\n"
         "  lr = ramp[phase].lr;\n" +
         indent(cpp_set_lr(s), "  ") + "}\n";
}

/// A ramp's phases as a Python list, and its first phase applied to the optimizer.
std::string py_ramp_table(const LoopSpec& s, const std::string& batch) {
  std::string rows;
  for (const RampStep& r : s.ramp)
    rows += fmt::format("    ({}, {}, {:.4g}),\n", static_cast<long long>(std::llround(r.from_samples)), r.grad_accum, r.lr);
  return fmt::format("# A batch ramp: micro-batches of {}; from each phase's sample count on, grad_accum micro-batches per\n"
                     "# optimizer step at its learning rate\n"
                     "ramp = [  # (from samples, grad_accum, lr)\n{}]\n"
                     "phase, accum, samples, pending = 0, ramp[0][1], 0, []\n"
                     "for group in optimizer.param_groups:\n"
                     "    group[\"lr\"] = ramp[0][2]\n",
                     batch, rows);
}

/// The loop over epochs and their optimizer steps around `inner` (one step of `per_step` samples): each epoch's shuffle,
/// a rank's share of it, the step's rows copied to the device. A ramp's step changes length at a switch, so its loop
/// advances by the step it just took.
std::string cpp_epochs(const LoopSpec& s, const std::string& per_step, const std::string& inner) {
  const bool ddp = s.ddp.has_value(), ramp = !s.ramp.empty(), accumulates = s.grad_accum > 1 || ramp;
  const std::string advance = ramp ? "" : " b += " + per_step;
  std::string body;
  if (ddp)
    body += "for (int epoch = 0; epoch < epochs; ++epoch) {\n"
            "  // the same shuffle on every rank (seeded by the epoch, as DistributedSampler.set_epoch); this rank takes every\n"
            "  // world-th sample of it, from its rank on\n"
            "  const auto order = torch::randperm(inputs.size(0), at::detail::createCPUGenerator(epoch)).slice(0, rank, inputs.size(0), world);\n" +
            fmt::format("  for (int64_t b = 0; b + {0} <= order.size(0);{1}) {{\n", per_step, advance);
  else
    body += "for (int epoch = 0; epoch < epochs; ++epoch) {\n"
            "  const auto order = torch::randperm(inputs.size(0));  // a new shuffle each epoch\n" +
            fmt::format("  for (int64_t b = 0; b + {0} <= inputs.size(0);{1}) {{\n", per_step, advance);
  body += fmt::format("    const auto idx = order.slice(0, b, b + {});{}\n", per_step,
                      accumulates ? "  // one optimizer step's samples" : "") +
          (ramp ? "    b += idx.size(0);\n" : "") +
          "    const auto x = inputs.index_select(0, idx).to(device)" +
          (s.channels_last ? ".contiguous(at::MemoryFormat::ChannelsLast)" : "") +
          ", y = targets.index_select(0, idx).to(device);\n" +
          indent(inner, "    ") +
          "  }\n"
          "}\n";
  return body;
}

}  // namespace

std::string cpp_train_loop(const LoopSpec& s) {
  const bool scripted = !s.model_file.empty();
  const bool ddp = s.ddp.has_value();
  const std::string accum = std::to_string(s.grad_accum);
  std::string out =
      ddp ? fmt::format(
                "// Data parallel, the whole training loop of one rank: {0}.\n"
                "// Start {1} processes as the Python script is started (torchrun or srun set RANK, WORLD_SIZE, MASTER_ADDR,\n"
                "// MASTER_PORT); each calls train() with all the data in memory (inputs: one row per sample; targets), lr and\n"
                "// epochs, and trains on its share. batch_size is per process: the global batch is {2}.\n",
                s.what, s.ddp->ranks, s.ddp->global)
          : fmt::format("// One process, the whole training loop: {}.\n"
                        "// Your program calls train() with the data in memory (inputs: one row per sample; targets), lr and epochs.\n",
                        s.what);
  out += fmt::format("{}{}#include <torch/script.h>\n"
                     "#include <torch/torch.h>\n"
                     "\n"
                     "#include <cmath>\n"
                     "#include <iostream>\n"
                     "#include <vector>\n"
                     "\n",
                     ddp ? cpp_ddp_includes(s) : "", amp(s) ? "#include <ATen/autocast_mode.h>\n" : "");
  if (ddp && s.ddp->comm_hook == "bf16") out += cpp_bf16_hook();
  out += scripted ? "void train(const torch::Tensor& inputs, const torch::Tensor& targets, double lr, int epochs) {\n"
                  : "template <typename Model>  // a torch::nn::Module holder\n"
                    "void train(Model& model, const torch::Tensor& inputs, const torch::Tensor& targets, double lr, int epochs) {\n";
  std::string body = ddp ? cpp_process_group(s) : fmt::format("const torch::Device device(\"{}\");\n", s.device);
  if (!s.threads.empty()) body += fmt::format("torch::set_num_threads({});  // threads={}, before any parallel work\n", s.threads, s.threads);
  if (scripted)
    body += fmt::format("torch::jit::script::Module model = torch::jit::load(\"{}\");  // your model as tuned\n"
                        "model.to(device);\n"
                        "model.train();\n"
                        "std::vector<torch::Tensor> params;\n"
                        "for (const auto& p : model.parameters()) params.push_back(p);\n",
                        s.model_file);
  else
    body += "model->to(device);\n"
            "model->train();\n"
            "std::vector<torch::Tensor> params = model->parameters();\n";
  if (s.channels_last)
    body += "for (auto& p : params)  // memory_format=channels_last (Module::to has no memory_format)\n"
            "  if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));\n";
  if (ddp) body += cpp_reducer(s, scripted);
  body += cpp_optimizer(s);
  if (s.loss == "mse") body += "auto criterion = torch::nn::MSELoss();\n";
  else if (s.loss != "model") body += "auto criterion = torch::nn::CrossEntropyLoss();\n";
  if (fp16(s))
    body += "// fp16 loss scaling, as torch.amp.GradScaler: scale, unscale + inf check, skip, grow or back off\n"
            "auto scale = torch::full({}, 65536.0, torch::TensorOptions().dtype(torch::kFloat32).device(device));\n"
            "auto growth_tracker = torch::zeros({}, torch::TensorOptions().dtype(torch::kInt32).device(device));\n"
            "auto found_inf = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat32).device(device));\n";
  const bool ramp = !s.ramp.empty();
  const bool accumulates = s.grad_accum > 1 || ramp;
  body += fmt::format("const int64_t batch_size = {};  // samples per {}{}{}\n", s.batch.empty() ? "64" : s.batch,
                      accumulates ? "micro-batch" : "optimizer step", ddp ? " and process" : "", s.batch.empty() ? " (yours)" : "");
  if (ramp)
    body += cpp_ramp_table(s);
  else if (s.grad_accum > 1)
    body += fmt::format("const int64_t accum = {};  // grad_accum={}: micro-batches per optimizer step\n", accum, accum);
  const std::string per_step = accumulates ? "batch_size * accum" : "batch_size";
  body += fmt::format("auto running = torch::zeros({{}}, device);  // the loss summed over {}, on the device\n"
                      "int64_t step = 0;\n",
                      s.log_every > 1 ? fmt::format("the last {} steps", s.log_every) : "the step");
  std::string inner = cpp_step_body(s);
  if (ramp) inner += cpp_ramp_switch(s);
  body += cpp_epochs(s, per_step, inner);
  if (ddp) body += "pg->barrier()->wait();  // no rank leaves (rank 0 takes the rendezvous with it) while another still trains\n";
  return out + indent(body, "  ") + "}";
}

namespace {

bool defines(const LoopSpec& s, const std::string& fn) {
  return std::find(s.task_functions.begin(), s.task_functions.end(), fn) != s.task_functions.end();
}

/// The lines that import the task file by its folder, as `task`.
std::string py_task_import(const LoopSpec& s) {
  const std::filesystem::path file(s.task);
  return fmt::format("sys.path.insert(0, \"{}\")  # the folder of {}\nimport {} as task\n\n", file.parent_path().string(),
                     file.filename().string(), file.stem().string());
}

/// The start of a task's script: the task imported by its folder, its model and optimizer (each of its functions used
/// where it defines one, the Python worker's defaults for the rest), the loss and device helpers the loop calls.
std::string py_task_setup(const LoopSpec& s) {
  const std::string file = std::filesystem::path(s.task).filename().string(), what = s.what.empty() ? "" : ": " + s.what;
  std::string out;
  if (const auto& d = s.task_ddp)
    out = fmt::format("# Data parallel: {} processes, one per {}, each training your task {} on its share of the data{}.\n"
                      "import contextlib\nimport os\nimport sys\n\nimport torch\nimport torch.distributed as dist\n"
                      "from torch.nn.parallel import DistributedDataParallel as DDP\n\n",
                      d->ranks, s.device == "cuda" ? "GPU" : "group of cores", file, what) +
          py_task_import(s) + "epochs = 1  # as many as your training runs\n" +
          "# torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; under srun they come from Slurm\n"
          "rank = int(os.environ.get(\"RANK\", os.environ.get(\"SLURM_PROCID\", 0)))\n"
          "world = int(os.environ.get(\"WORLD_SIZE\", os.environ.get(\"SLURM_NTASKS\", 1)))\n"
          "local_rank = int(os.environ.get(\"LOCAL_RANK\", os.environ.get(\"SLURM_LOCALID\", 0)))\n"
          "os.environ.setdefault(\"MASTER_ADDR\", \"127.0.0.1\")\n"
          "os.environ.setdefault(\"MASTER_PORT\", \"29500\")\n" +
          fmt::format("dist.init_process_group(\"{}\", rank=rank, world_size=world)\n", d->backend) +
          (s.device == "cuda" ? "torch.cuda.set_device(local_rank)  # \"cuda\" below is this rank's GPU\n" : "");
  else
    out = fmt::format("# One process, the whole training loop of your task {}{}.\nimport sys\n\nimport torch\n\n", file, what) +
          py_task_import(s) + "epochs = 1  # as many as your training runs\n";
  if (!s.threads.empty()) out += fmt::format("torch.set_num_threads({})  # threads={}\n", s.threads, s.threads);
  out += fmt::format("model = task.model().to(\"{}\")\n", s.device);
  if (s.channels_last) out += "model = model.to(memory_format=torch.channels_last)  # memory_format=channels_last\n";
  if (const auto& d = s.task_ddp)  // the optimizer below takes the wrapped model's parameters, as the Python worker's does
    out += d->before + fmt::format("model = DDP(model{})  # your loss() is given this module\n", d->args.empty() ? "" : ", " + d->args) +
           d->after;
  const std::string impl = s.optimizer_impl == "loop" ? "foreach=False" : s.optimizer_impl.empty() ? "" : s.optimizer_impl + "=True";
  if (defines(s, "optimizer")) {
    out += "optimizer = task.optimizer(model.parameters())\n";
    if (s.lr_line)
      out += "scale = lr / optimizer.param_groups[0][\"lr\"]  # the learning rate to start from at this batch (above)\n"
             "for group in optimizer.param_groups:  # every group moved alike\n"
             "    group[\"lr\"] *= scale\n";
    if (!impl.empty())  // the Python worker rebuilt the task's optimizer with it; here each group takes it
      out += fmt::format("for group in optimizer.param_groups:  # optimizer_impl={0}: or pass {1} where your optimizer() builds it\n"
                         "    group[\"{2}\"] = {3}\n",
                         s.optimizer_impl, impl, s.optimizer_impl == "fused" ? "fused" : "foreach",
                         s.optimizer_impl == "loop" ? "False" : "True");
  } else {
    if (!s.lr_line) out += "lr = 1e-3  # AdamW at --lr (PyTorch's default): your task has no optimizer()\n";
    out += std::string("optimizer = torch.optim.AdamW(model.parameters(), lr=lr") + (impl.empty() ? "" : ", " + impl) + ")\n";
  }
  if (!s.compile.empty() && !s.task_ddp)  // (under DDP: around it, in `after`)
    out += s.compile == "default" ? "model = torch.compile(model)  # compile=default\n"
                                  : fmt::format("model = torch.compile(model, mode=\"{0}\")  # compile={0}\n", s.compile);
  if (!defines(s, "loss"))
    out += "\n\ndef loss_of(model, batch):  # your task has no loss(): the default the Python worker trained with\n"
           "    if isinstance(batch, dict):  # the model's own loss, as Hugging Face models return it\n"
           "        out = model(**batch)\n"
           "        return out[\"loss\"] if isinstance(out, dict) else out.loss\n"
           "    x, y = batch\n"
           "    out = model(x)\n"
           "    if y.is_floating_point():\n"
           "        return torch.nn.functional.mse_loss(out, y)\n"
           "    return torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))\n\n\n";
  if (s.device == "cuda")
    out += "\n\ndef to_device(b):  # every tensor of the batch onto the GPU\n"
           "    if isinstance(b, torch.Tensor):\n"
           "        return b.to(\"cuda\", non_blocking=True)\n"
           "    if isinstance(b, dict):\n"
           "        return {k: to_device(v) for k, v in b.items()}\n"
           "    if isinstance(b, (tuple, list)):\n"
           "        return type(b)(to_device(v) for v in b)\n"
           "    return b\n\n\n";
  return out;
}

/// The whole loop of a task file: its setup (above), its dataset in a DataLoader with the config's loader arguments,
/// and the config's step around its loss.
std::string py_task_loop(const LoopSpec& s) {
  std::string out = py_task_setup(s);
  const std::string batch = s.batch.empty() ? "task.batch_size" : s.batch;
  std::string args = fmt::format("batch_size={}", batch), why;
  const auto arg = [&](const std::string& a, const std::string& w) {
    args += ", " + a;
    why += (why.empty() ? "" : ", ") + w;
  };
  const bool ddp = s.task_ddp.has_value();
  if (ddp && !s.task_iterable) args += ", sampler=sampler";
  else if (defines(s, "sampler")) args += ", sampler=task.sampler(dataset)";
  else if (!s.task_iterable) args += ", shuffle=True";
  args += ", drop_last=True";
  if (defines(s, "collate")) args += ", collate_fn=task.collate";
  if (!s.num_workers.empty() && s.num_workers != "0") {
    arg("num_workers=" + s.num_workers, "num_workers=" + s.num_workers);
    args += ", persistent_workers=True";
  }
  if (!s.prefetch.empty() && !s.num_workers.empty() && s.num_workers != "0") arg("prefetch_factor=" + s.prefetch, "prefetch=" + s.prefetch);
  if (s.pin_memory == "true") arg("pin_memory=True", "pin_memory=true");
  out += "dataset = task.dataset()\n";
  if (ddp && s.task_iterable)
    out += "# an IterableDataset: each rank must read its own share (torch.utils.data.get_worker_info and the rank)\n";
  else if (ddp && defines(s, "sampler"))
    out += "sampler = task.sampler(dataset)  # yours: it must give each rank its own share\n";
  else if (ddp)
    out += "sampler = torch.utils.data.distributed.DistributedSampler(dataset, num_replicas=world, rank=rank, drop_last=True)\n";
  if (ddp) out += fmt::format("# batch_size is per process: the global batch is {}\n", s.task_ddp->global);
  out += fmt::format("loader = torch.utils.data.DataLoader(dataset, {}){}\n", args, why.empty() ? "" : "  # " + why);
  if (fp16(s)) out += fmt::format("scaler = torch.amp.GradScaler(\"{}\")  # fp16 loss scaling\n", s.device);
  out += fmt::format("running = torch.zeros((), device=\"{}\")  # the loss summed over {}, on the device\nstep = 0\n", s.device,
                     s.log_every > 1 ? fmt::format("the last {} steps", s.log_every) : "the step");
  const std::string loss_call = defines(s, "loss") ? "task.loss(model, b)" : "loss_of(model, b)";
  std::string inner = s.device == "cuda" ? "batch = to_device(batch)\n" : "";
  const std::string micro = py_autocast_forward(s, loss_call + (s.grad_accum > 1 ? " / " + std::to_string(s.grad_accum) : "")) +
                            (fp16(s) ? "scaler.scale(loss).backward()\n" : "loss.backward()\n") + "running += loss.detach()\n";
  if (s.grad_accum > 1 && ddp)
    inner += fmt::format("pending.append(batch)\n"
                         "if len(pending) < {0}:  # grad_accum={0}: a step takes {0} of the loader's batches\n"
                         "    continue\n"
                         "for j, b in enumerate(pending):  # the gradients all-reduced once, in the last one's backward\n"
                         "    with contextlib.nullcontext() if j == {1} else model.no_sync():\n",
                         s.grad_accum, s.grad_accum - 1) +
             indent(micro, "        ") + "pending = []\n";
  else if (s.grad_accum > 1)
    inner += fmt::format("pending.append(batch)\n"
                         "if len(pending) < {0}:  # grad_accum={0}: a step takes {0} of the loader's batches\n"
                         "    continue\n"
                         "for b in pending:\n",
                         s.grad_accum) +
             indent(micro, "    ") + "pending = []\n";
  else
    inner += "b = batch\n" + micro;
  inner += py_step_end(s);
  out += "model.train()\nfor epoch in range(epochs):\n";
  if (ddp && !s.task_iterable) out += "    if hasattr(sampler, \"set_epoch\"):  # a new shuffle each epoch, the same on every rank\n"
                                      "        sampler.set_epoch(epoch)\n";
  if (s.grad_accum > 1) out += "    pending = []\n";
  out += "    for batch in loader:\n" + indent(inner, "        ");
  if (ddp)
    out += fmt::format("dist.destroy_process_group()\n"
                       "# launch on this machine:  torchrun --standalone --nproc_per_node={0} train.py\n"
                       "# through Slurm:           srun --ntasks={0} {1}python train.py\n"
                       "#   (on several nodes, first: export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n1))",
                       s.task_ddp->ranks, s.device == "cuda" ? "--gpus-per-task=1 " : "--cpus-per-task=N ");
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

/// A LightningModule task: the Trainer's arguments and the DataLoader's that carry the config, in a script that fits it.
std::string py_lightning_fit(const LoopSpec& s) {
  std::string out = fmt::format("# Your LightningModule {} ({}) fitted by Lightning's Trainer{}.\n"
                                "import sys\n\nimport lightning as L\nimport torch\n\n",
                                s.task_lightning, std::filesystem::path(s.task).filename().string(),
                                s.what.empty() ? "" : ": " + s.what) +
                    py_task_import(s);
  if (!s.threads.empty()) out += fmt::format("torch.set_num_threads({})  # threads={}\n", s.threads, s.threads);
  out += "model = task.model()\n";
  if (s.channels_last) out += "model = model.to(memory_format=torch.channels_last)  # memory_format=channels_last\n";
  const std::string from = defines(s, "datamodule") ? "dm.train_dataloader()" : "model.train_dataloader()";
  if (defines(s, "datamodule")) out += "dm = task.datamodule()\ndm.prepare_data()\ndm.setup(\"fit\")\n";
  std::string args = fmt::format("theirs.dataset, batch_size={}", s.batch.empty() ? "theirs.batch_size" : s.batch), why;
  args += s.task_iterable ? "" : defines(s, "sampler") ? ", sampler=theirs.sampler" : ", shuffle=True";
  args += ", drop_last=True, collate_fn=theirs.collate_fn";
  if (!s.num_workers.empty() && s.num_workers != "0") {
    args += ", num_workers=" + s.num_workers + ", persistent_workers=True";
    why += "num_workers=" + s.num_workers;
  }
  if (!s.prefetch.empty() && !s.num_workers.empty() && s.num_workers != "0") {
    args += ", prefetch_factor=" + s.prefetch;
    why += ", prefetch=" + s.prefetch;
  }
  if (s.pin_memory == "true") {
    args += ", pin_memory=True";
    why += (why.empty() ? "" : ", ") + std::string("pin_memory=true");
  }
  out += fmt::format("theirs = {}\n"
                     "# the winner's DataLoader arguments{}: write them into {}.train_dataloader()\n"
                     "loader = torch.utils.data.DataLoader({})\n",
                     from, why.empty() ? "" : " (" + why + ")", s.task_lightning, args);
  std::string trainer = fmt::format("max_epochs=1, accelerator=\"{}\", devices=1", s.device == "cuda" ? "gpu" : "cpu");
  if (s.precision == "amp_bf16") trainer += ", precision=\"bf16-mixed\"";
  if (s.precision == "amp_fp16") trainer += ", precision=\"16-mixed\"";
  if (s.grad_accum > 1) trainer += fmt::format(", accumulate_grad_batches={}", s.grad_accum);
  if (s.log_every > 1) trainer += fmt::format(", log_every_n_steps={}", s.log_every);
  trainer += ", logger=False, enable_checkpointing=False";
  if (!s.optimizer_impl.empty())
    out += fmt::format("# optimizer_impl={0}: pass {1} to the optimizer {2}.configure_optimizers builds\n", s.optimizer_impl,
                       s.optimizer_impl == "loop" ? "foreach=False" : s.optimizer_impl + "=True", s.task_lightning);
  if (s.zero_grad == "zeros")
    out += "# zero_grad=zeros: override optimizer_zero_grad in your module with optimizer.zero_grad(set_to_none=False)\n";
  if (!s.compile.empty())
    out += s.compile == "default" ? "model = torch.compile(model)  # compile=default\n"
                                  : fmt::format("model = torch.compile(model, mode=\"{0}\")  # compile={0}\n", s.compile);
  out += fmt::format("trainer = L.Trainer({})  # the winner's Trainer arguments\n"
                     "trainer.fit(model, train_dataloaders=loader)\n"
                     "print(f\"fitted: {{trainer.global_step}} optimizer steps, loss {{trainer.callback_metrics.get('train_loss', float('nan')):.4f}}\")",
                     trainer);
  return out;
}

}  // namespace

std::string py_train_loop(const LoopSpec& s) {
  if (!s.task_lightning.empty()) return py_lightning_fit(s);
  if (!s.task.empty()) return py_task_loop(s);
  std::string out = fmt::format("# One process, the whole training loop: {}.\n"
                                "# Your script provides torch, lr, epochs and dataset (pairs of x, y).\n",
                                s.what);
  if (!s.threads.empty()) out += fmt::format("torch.set_num_threads({})  # threads={}\n", s.threads, s.threads);
  out += s.py_setup + "\n";
  if (s.channels_last) out += "model = model.to(memory_format=torch.channels_last)  # memory_format=channels_last\n";
  if (!s.compile.empty())  // after the optimizer: the compiled module trains the same parameters
    out += s.compile == "default" ? "model = torch.compile(model)  # compile=default\n"
                                  : fmt::format("model = torch.compile(model, mode=\"{0}\")  # compile={0}\n", s.compile);
  const std::string batch = s.batch.empty() ? "batch_size" : s.batch;
  std::string loader_args, loader_why;
  const auto arg = [&](const std::string& a, const std::string& why) {
    loader_args += ", " + a;
    loader_why += (loader_why.empty() ? "" : ", ") + why;
  };
  if (!s.num_workers.empty() && s.num_workers != "0") {
    arg("num_workers=" + s.num_workers, "num_workers=" + s.num_workers);
    loader_args += ", persistent_workers=True";
  }
  if (!s.prefetch.empty()) arg("prefetch_factor=" + s.prefetch, "prefetch=" + s.prefetch);
  if (s.pin_memory == "true") arg("pin_memory=True", "pin_memory=true");
  const bool ramp = !s.ramp.empty();
  if (ramp)
    out += py_ramp_table(s, batch);
  else if (s.grad_accum > 1)
    out += fmt::format("# batch_size={0} per micro-batch, grad_accum={1}: each optimizer step takes {1} micro-batches\n", batch,
                       s.grad_accum);
  out += fmt::format("loader = torch.utils.data.DataLoader(dataset, batch_size={}, shuffle=True, drop_last=True{}){}\n",
                     s.grad_accum > 1 && !ramp ? fmt::format("{} * {}", batch, s.grad_accum) : batch, loader_args,
                     loader_why.empty() ? "" : "  # " + loader_why);
  if (fp16(s)) out += fmt::format("scaler = torch.amp.GradScaler(\"{}\")  # fp16 loss scaling\n", s.device);
  out += fmt::format("running = torch.zeros((), device=\"{}\")  # the loss summed over {}, on the device\nstep = 0\n", s.device,
                     s.log_every > 1 ? fmt::format("the last {} steps", s.log_every) : "the step");
  std::string inner = s.device == "cuda" ? "x, y = x.to(\"cuda\", non_blocking=True), y.to(\"cuda\", non_blocking=True)\n" : "";
  if (s.channels_last) inner += "x = x.to(memory_format=torch.channels_last)\n";
  if (ramp)
    inner += "pending.append((x, y))\n"
             "if len(pending) < accum:  # a step takes `accum` micro-batches of the loader's\n"
             "    continue\n"
             "for xb, yb in pending:\n" +
             indent(py_micro_step(s), "    ") + "pending = []\n";
  else if (s.grad_accum > 1)
    inner += fmt::format("for xb, yb in zip(x.chunk({0}), y.chunk({0})):  # grad_accum={0}: micro-batches per step\n", s.grad_accum) +
             indent(py_micro_step(s), "    ");
  else
    inner += py_micro_step(s);
  inner += py_step_end(s);
  if (ramp)
    inner += fmt::format("samples += {} * accum\n"
                         "while phase + 1 < len(ramp) and samples >= ramp[phase + 1][0]:  # the next phase of the ramp\n"
                         "    phase += 1\n"
                         "    accum = ramp[phase][1]\n"
                         "    for group in optimizer.param_groups:\n"
                         "        group[\"lr\"] = ramp[phase][2]\n",
                         batch);
  out += "for epoch in range(epochs):\n    for x, y in loader:\n" + indent(inner, "        ");
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace autotune
