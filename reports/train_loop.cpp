#include "reports/train_loop.h"

#include <fmt/format.h>

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
  if (!own_adamw(s))
    return zeros ? "optimizer.zero_grad(/*set_to_none=*/false);  // zero_grad=zeros: writes zeros instead of freeing\n"
                 : "optimizer.zero_grad();  // frees the gradients (set_to_none, the default)\n";
  return zeros ? "for (auto& q : params)  // zero_grad=zeros: writes zeros into the gradients instead of freeing them\n"
                 "  if (q.grad().defined()) q.mutable_grad().zero_();\n"
               : "for (auto& q : params) q.mutable_grad().reset();  // frees the gradients (set_to_none, PyTorch's default)\n";
}

/// The micro-batch's forward and backward, under autocast when the precision asks for it.
std::string cpp_micro_step(const LoopSpec& s, const std::string& x, const std::string& y) {
  const std::string loss = s.cpp_loss(x, y) + (s.grad_accum > 1 ? " / accum" : "");
  std::string out;
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
  const std::string k = std::to_string(s.grad_accum);
  const std::string loss = s.grad_accum > 1 ? s.py_loss("xb", "yb") + " / " + k : s.py_loss("x", "y");
  return py_autocast_forward(s, loss) + (fp16(s) ? "scaler.scale(loss).backward()\n" : "loss.backward()\n") +
         "running += loss.detach()\n";
}

std::string py_zero_grad(const LoopSpec& s) {
  return s.zero_grad == "zeros" ? "optimizer.zero_grad(set_to_none=False)  # zero_grad=zeros: writes zeros instead of freeing\n"
                                : "optimizer.zero_grad()  # frees the gradients (set_to_none=True, the default)\n";
}

}  // namespace

std::string cpp_train_loop(const LoopSpec& s) {
  const bool scripted = !s.model_file.empty();
  const std::string accum = std::to_string(s.grad_accum);
  std::string out = fmt::format(
      "// One process, the whole training loop: {}.\n"
      "// Your program calls train() with the data in memory (inputs: one row per sample; targets), lr and epochs.\n"
      "{}#include <torch/script.h>\n"
      "#include <torch/torch.h>\n"
      "\n"
      "#include <cmath>\n"
      "#include <iostream>\n"
      "#include <vector>\n"
      "\n",
      s.what, amp(s) ? "#include <ATen/autocast_mode.h>\n" : "");
  out += scripted ? "void train(const torch::Tensor& inputs, const torch::Tensor& targets, double lr, int epochs) {\n"
                  : "template <typename Model>  // a torch::nn::Module holder\n"
                    "void train(Model& model, const torch::Tensor& inputs, const torch::Tensor& targets, double lr, int epochs) {\n";
  std::string body = fmt::format("const torch::Device device(\"{}\");\n", s.device);
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
  body += cpp_optimizer(s);
  if (s.loss == "mse") body += "auto criterion = torch::nn::MSELoss();\n";
  else if (s.loss != "model") body += "auto criterion = torch::nn::CrossEntropyLoss();\n";
  if (fp16(s))
    body += "// fp16 loss scaling, as torch.amp.GradScaler: scale, unscale + inf check, skip, grow or back off\n"
            "auto scale = torch::full({}, 65536.0, torch::TensorOptions().dtype(torch::kFloat32).device(device));\n"
            "auto growth_tracker = torch::zeros({}, torch::TensorOptions().dtype(torch::kInt32).device(device));\n"
            "auto found_inf = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat32).device(device));\n";
  body += fmt::format("const int64_t batch_size = {};  // samples per optimizer step{}\n",
                      s.batch.empty() ? "64" : s.batch, s.batch.empty() ? " (yours)" : "");
  if (s.grad_accum > 1) body += fmt::format("const int64_t accum = {};  // grad_accum={}: micro-batches per step\n", accum, accum);
  body += fmt::format("auto running = torch::zeros({{}}, device);  // the loss summed over {}, on the device\n"
                      "int64_t step = 0;\n",
                      s.log_every > 1 ? fmt::format("the last {} steps", s.log_every) : "the step");
  std::string inner = s.grad_accum > 1 ? "const auto xs = x.chunk(accum), ys = y.chunk(accum);\n"
                                         "for (int64_t i = 0; i < accum; ++i) {\n" +
                                             indent(cpp_micro_step(s, "xs[i]", "ys[i]"), "  ") + "}\n"
                                       : cpp_micro_step(s, "x", "y");
  inner += cpp_after_backward(s);
  inner += "++step;\n";
  inner += s.log_every > 1
               ? fmt::format("if (step % {0} == 0) {{  // log_every={0}: one device sync per {0} steps\n"
                             "  std::cout << \"step \" << step << \": loss \" << (running / {0}).item<double>() << std::endl;  // their mean\n"
                             "  running.zero_();\n"
                             "}}\n",
                             s.log_every)
               : "std::cout << \"step \" << step << \": loss \" << running.item<double>() << std::endl;  // a sync each step\n"
                 "running.zero_();\n";
  body += "for (int epoch = 0; epoch < epochs; ++epoch) {\n"
          "  const auto order = torch::randperm(inputs.size(0));  // a new shuffle each epoch\n"
          "  for (int64_t b = 0; b + batch_size <= inputs.size(0); b += batch_size) {\n"
          "    const auto idx = order.slice(0, b, b + batch_size);\n"
          "    const auto x = inputs.index_select(0, idx).to(device), y = targets.index_select(0, idx).to(device);\n" +
          indent(inner, "    ") +
          "  }\n"
          "}\n";
  return out + indent(body, "  ") + "}";
}

std::string py_train_loop(const LoopSpec& s) {
  std::string out = fmt::format("# One process, the whole training loop: {}.\n"
                                "# Your script provides torch, lr, epochs and dataset (pairs of x, y).\n",
                                s.what);
  if (!s.threads.empty()) out += fmt::format("torch.set_num_threads({})  # threads={}\n", s.threads, s.threads);
  out += s.py_setup + "\n";
  out += fmt::format("loader = torch.utils.data.DataLoader(dataset, batch_size={}, shuffle=True, drop_last=True)\n",
                     s.batch.empty() ? "batch_size" : s.batch);
  if (fp16(s)) out += fmt::format("scaler = torch.amp.GradScaler(\"{}\")  # fp16 loss scaling\n", s.device);
  out += fmt::format("running = torch.zeros((), device=\"{}\")  # the loss summed over {}, on the device\nstep = 0\n", s.device,
                     s.log_every > 1 ? fmt::format("the last {} steps", s.log_every) : "the step");
  std::string inner = s.device == "cuda" ? "x, y = x.to(\"cuda\", non_blocking=True), y.to(\"cuda\", non_blocking=True)\n" : "";
  if (s.grad_accum > 1)
    inner += fmt::format("for xb, yb in zip(x.chunk({0}), y.chunk({0})):  # grad_accum={0}: micro-batches per step\n", s.grad_accum) +
             indent(py_micro_step(s), "    ");
  else
    inner += py_micro_step(s);
  inner += fp16(s) ? "scaler.step(optimizer)\nscaler.update()\n" : "optimizer.step()\n";
  inner += py_zero_grad(s) + "step += 1\n";
  inner += s.log_every > 1 ? fmt::format("if step % {0} == 0:  # log_every={0}: one device sync per {0} steps\n"
                                         "    print(f\"step {{step}}: loss {{(running / {0}).item():.4f}}\")  # their mean\n"
                                         "    running.zero_()\n",
                                         s.log_every)
                           : "print(f\"step {step}: loss {running.item():.4f}\")  # a sync each step\nrunning.zero_()\n";
  out += "for epoch in range(epochs):\n    for x, y in loader:\n" + indent(inner, "        ");
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace autotune
