#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "workloads/engine/checkpoint.h"

namespace autotune {

/// nanoGPT-style decoder: token + position embeddings, pre-LayerNorm blocks of causal self-attention
/// (scaled_dot_product_attention, is_causal) and a 4× GELU MLP, final LayerNorm, LM head tied to the
/// token embedding.
struct GptConfig {
  int64_t vocab_size = 512, block_size = 64, n_layer = 4, n_head = 4, n_embd = 128;
  static GptConfig mini() { return {}; }                               ///< gpt-mini: ~0.9 M params, for CPU
  static GptConfig gpt2_124m() { return {50304, 1024, 12, 12, 768}; }  ///< GPT-2 small (vocab padded to 64×)
};

struct CausalSelfAttentionImpl : torch::nn::Module {
  explicit CausalSelfAttentionImpl(const GptConfig& c);
  torch::Tensor forward(const torch::Tensor& x);  // (B,T,C) → (B,T,C)
  torch::nn::Linear qkv{nullptr}, proj{nullptr};
  int64_t n_head;
};
TORCH_MODULE(CausalSelfAttention);

struct GptBlockImpl : torch::nn::Module {
  explicit GptBlockImpl(const GptConfig& c);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  CausalSelfAttention attn{nullptr};
  torch::nn::Linear fc{nullptr}, fc_proj{nullptr};
};
TORCH_MODULE(GptBlock);

struct GptImpl : torch::nn::Module {
  explicit GptImpl(const GptConfig& c);
  /// idx (B,T) int64 → logits (B,T,vocab).
  torch::Tensor forward(const torch::Tensor& idx);
  /// Checkpoint block i when checkpointed[i] (size n_layer).
  void set_checkpointing(std::vector<bool> checkpointed) { checkpointed_ = std::move(checkpointed); }
  /// Parameters excluding position embeddings (nanoGPT's count for the 6N FLOPs rule).
  int64_t num_params_non_embedding() const;

  GptConfig cfg;
  torch::nn::Embedding wte{nullptr}, wpe{nullptr};
  std::vector<GptBlock> blocks;
  std::vector<BlockFn> block_fns;  // stable callables for checkpoint()
  torch::nn::LayerNorm ln_f{nullptr};
  std::vector<bool> checkpointed_;
};
TORCH_MODULE(Gpt);

/// Training FLOPs per token (PaLM / nanoGPT estimate_mfu): 6N + 12·L·H·Q·T.
double gpt_flops_per_token(const GptConfig& c, int64_t n_params);

}  // namespace autotune
