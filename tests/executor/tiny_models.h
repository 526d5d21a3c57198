// tests/executor/tiny_models.h — small ModelSpecs and random token batches for the executor tests:
// sizes chosen so that finite-difference checks of every parameter sample run in well under a second.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "core/model_spec.h"

namespace fsdpx::test {

// Llama-style: RMSNorm, RoPE, GQA (4 query heads on 2 kv heads), SwiGLU, untied head, no biases.
inline ModelSpec tiny_llama() {
  ModelSpec s;
  s.name = "tiny-llama";
  s.arch = Arch::llama;
  s.layers = 2, s.hidden = 16, s.heads = 4, s.kv_heads = 2, s.head_dim = 4, s.ffn_hidden = 24;
  s.ffn_kind = FfnKind::swiglu;
  s.vocab = 13, s.max_seq = 16;
  s.tied_embeddings = false;
  s.bias = LinearBias::none;
  return s;
}

// GPT-2-style: LayerNorm, learned positions, GELU, biases everywhere, tied head.
inline ModelSpec tiny_gpt() {
  ModelSpec s;
  s.name = "tiny-gpt";
  s.arch = Arch::gpt;
  s.layers = 2, s.hidden = 16, s.heads = 2, s.kv_heads = 2, s.head_dim = 8, s.ffn_hidden = 32;
  s.ffn_kind = FfnKind::gelu;
  s.vocab = 13, s.max_seq = 8;
  s.tied_embeddings = true;
  s.bias = LinearBias::all;
  return s;
}

// tiny_llama's attention with DeepSeek-V3's MoE block (modeling_deepseek_v3.py DeepseekV3MoE): 8 routed
// experts in 4 groups, top-2 within 2 groups, sigmoid scores with the correction bias, renormalised and
// scaled 2.5, one shared expert, a leading dense block, the sequence-wise balance loss.
inline ModelSpec tiny_deepseek_moe(double aux_coef = 0.02) {
  ModelSpec s = tiny_llama();
  s.name = "tiny-deepseek-moe";
  s.moe.experts = 8, s.moe.top_k = 2, s.moe.expert_ffn_hidden = 6;
  s.moe.shared_experts = 1, s.moe.shared_ffn_hidden = 5, s.moe.dense_layers = 1;
  s.moe.scoring = RouterScoring::sigmoid, s.moe.norm_topk_prob = true, s.moe.score_correction_bias = true;
  s.moe.groups = 4, s.moe.topk_groups = 2, s.moe.routed_scaling = 2.5, s.moe.aux_loss_coef = aux_coef;
  return s;
}

// tiny_llama with DeepSeek-V3's latent attention (modeling_deepseek_v3.py DeepseekV3Attention): q LoRA rank
// 6 (0: queries straight from the hidden state), kv LoRA rank 5, per head 3 nope + 4 rope dims, v 2 wide.
inline ModelSpec tiny_mla(std::int64_t q_lora_rank = 6) {
  ModelSpec s = tiny_llama();
  s.name = "tiny-mla";
  s.kv_heads = s.heads;
  s.mla.q_lora_rank = q_lora_rank, s.mla.kv_lora_rank = 5;
  s.mla.qk_nope_head_dim = 3, s.mla.qk_rope_head_dim = 4, s.mla.v_head_dim = 2;
  s.head_dim = 7;
  s.norm_eps = 1e-6;
  return s;
}

struct TokenBatch {
  std::vector<std::int32_t> tokens, targets;  // [B, T] each
};

inline TokenBatch random_tokens(std::int64_t b, std::int64_t t, std::int64_t vocab, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int32_t> dist(0, std::int32_t(vocab - 1));
  TokenBatch out;
  for (std::int64_t i = 0; i < b * t; ++i) out.tokens.push_back(dist(rng)), out.targets.push_back(dist(rng));
  return out;
}

}  // namespace fsdpx::test
