#include "workloads/models/gpt.h"

#include <cmath>

namespace autotune {

namespace F = torch::nn::functional;

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const GptConfig& c) : n_head(c.n_head) {
  TORCH_CHECK(c.n_embd % c.n_head == 0, "n_embd must be a multiple of n_head");
  qkv = register_module("qkv", torch::nn::Linear(c.n_embd, 3 * c.n_embd));
  proj = register_module("proj", torch::nn::Linear(c.n_embd, c.n_embd));
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x) {
  const auto B = x.size(0), T = x.size(1), C = x.size(2);
  auto parts = qkv->forward(x).split(C, 2);
  auto heads = [&](const torch::Tensor& t) { return t.view({B, T, n_head, C / n_head}).transpose(1, 2); };  // (B,H,T,Q)
  auto y = at::scaled_dot_product_attention(heads(parts[0]), heads(parts[1]), heads(parts[2]), {}, 0.0, /*is_causal=*/true);
  return proj->forward(y.transpose(1, 2).contiguous().view({B, T, C}));
}

GptBlockImpl::GptBlockImpl(const GptConfig& c) {
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.n_embd})));
  attn = register_module("attn", CausalSelfAttention(c));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.n_embd})));
  fc = register_module("fc", torch::nn::Linear(c.n_embd, 4 * c.n_embd));
  fc_proj = register_module("fc_proj", torch::nn::Linear(4 * c.n_embd, c.n_embd));
}

torch::Tensor GptBlockImpl::forward(const torch::Tensor& x) {
  auto h = x + attn->forward(ln1->forward(x));
  return h + fc_proj->forward(F::gelu(fc->forward(ln2->forward(h)), F::GELUFuncOptions().approximate("tanh")));
}

GptImpl::GptImpl(const GptConfig& c) : cfg(c) {
  wte = register_module("wte", torch::nn::Embedding(c.vocab_size, c.n_embd));
  wpe = register_module("wpe", torch::nn::Embedding(c.block_size, c.n_embd));
  for (int64_t i = 0; i < c.n_layer; ++i) blocks.push_back(register_module("h" + std::to_string(i), GptBlock(c)));
  for (auto& b : blocks) block_fns.emplace_back([m = b.get()](const torch::Tensor& x) { return m->forward(x); });
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.n_embd})));
  checkpointed_.assign(c.n_layer, false);
  // GPT-2 init: N(0, 0.02), residual projections scaled by 1/sqrt(2L).
  torch::NoGradGuard no_grad;
  for (auto& p : named_parameters()) {
    const auto& name = p.key();
    if (name.find("ln") != std::string::npos) continue;
    if (name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0) {
      p.value().zero_();
    } else {
      const bool residual = name.find("proj.weight") != std::string::npos;
      p.value().normal_(0.0, residual ? 0.02 / std::sqrt(2.0 * c.n_layer) : 0.02);
    }
  }
}

torch::Tensor GptImpl::forward(const torch::Tensor& idx) {
  const auto T = idx.size(1);
  TORCH_CHECK(T <= cfg.block_size, "sequence length ", T, " exceeds block_size ", cfg.block_size);
  auto pos = torch::arange(T, idx.options());
  auto x = wte->forward(idx) + wpe->forward(pos);
  for (size_t i = 0; i < blocks.size(); ++i) x = checkpointed_[i] ? checkpoint(block_fns[i], x) : blocks[i]->forward(x);
  return torch::matmul(ln_f->forward(x), wte->weight.t());  // tied LM head
}

int64_t GptImpl::num_params_non_embedding() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n - wpe->weight.numel();
}

double gpt_flops_per_token(const GptConfig& c, int64_t n_params) {
  const double Q = static_cast<double>(c.n_embd / c.n_head);
  return 6.0 * n_params + 12.0 * c.n_layer * c.n_head * Q * c.block_size;
}

}  // namespace autotune
