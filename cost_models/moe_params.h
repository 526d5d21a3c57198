// cost_models/moe_params.h — total and active parameter counts of a mixture-of-experts model (routed and
// shared SwiGLU experts, router, leading dense layers) and of multi-head latent attention, and the model
// FLOPs per token they imply. Active parameters are those one token passes through: embeddings, head and
// norms as the dense count has them, attention, router, shared experts and top_k routed experts. Leaves
// out DeepSeek-V3's multi-token-prediction module (its 671B count leaves it out too) and buffers.
#pragma once

#include <cstdint>

#include "core/model_spec.h"

namespace fsdpx {

struct MoeParamCounts {
  std::int64_t embedding = 0;   // token table
  std::int64_t head = 0;        // LM head; 0 when tied
  std::int64_t final_norm = 0;
  std::int64_t dense_block = 0;       // one leading block with a dense ffn_hidden MLP
  std::int64_t moe_block = 0;         // one MoE block, every expert
  std::int64_t moe_block_active = 0;  // of it, what one token passes through
  std::int64_t dense_layers = 0;
  std::int64_t moe_layers = 0;

  std::int64_t total() const;
  std::int64_t active() const;
};

// Per block: latent attention when m.is_mla() (modeling_deepseek_v3.py DeepseekV3Attention), else
// attention_params plus q_norm/k_norm (Qwen3); two RMSNorms; the MLP. m must be a llama-arch model.
MoeParamCounts count_moe_params(const ModelSpec& m);

// One block's latent attention: q_a_proj h x q_lora_rank, q_a_layernorm, q_b_proj q_lora_rank x H(nope+rope)
// (or q_proj h x H(nope+rope) without q_lora_rank), kv_a_proj_with_mqa h x (kv_lora_rank + rope),
// kv_a_layernorm, kv_b_proj kv_lora_rank x H(nope+v), o_proj H v x h.
std::int64_t mla_params(const ModelSpec& m);

// PaLM's model FLOPs per token (Chowdhery et al. 2022, Appendix B) over the active parameters:
// 6 N_active + 6 L H (d_qk + d_v) T, N_active without the input table (tied: counted once as the head),
// d_qk = d_v = head_dim without MLA and qk_nope + qk_rope, v_head_dim with it (PaLM's 12 L H Q T is the
// d_qk = d_v case: QK^T and PV each 2 H d T per token forward, x3 with the backward pass).
double moe_model_flops_per_token(const ModelSpec& m, std::int64_t seq);

}  // namespace fsdpx
