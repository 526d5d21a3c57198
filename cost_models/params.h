// cost_models/params.h — parameter counts of a decoder-only transformer, by part (embedding, one
// block, final norm, LM head), from the ModelSpec alone. Leaves out buffers (RoPE tables) and any
// vocabulary padding a framework may add.
#pragma once

#include <cstdint>

#include "core/checked_math.h"
#include "core/model_spec.h"

namespace fsdpx {

struct ParamCounts {
  std::int64_t embedding = 0;   // token table, plus the learned position table for gpt
  std::int64_t per_block = 0;   // one transformer block (attention, MLP, norms, biases)
  std::int64_t final_norm = 0;
  std::int64_t head = 0;        // LM head; 0 when tied to the token table
  std::int64_t layers = 0;

  std::int64_t blocks() const { return checked_mul(per_block, layers); }
  std::int64_t total() const { return checked_add(checked_add(embedding, blocks()), checked_add(final_norm, head)); }
};

// A dense model (core/model_spec_moe.h has_moe_parts is false; RoPE scaling, YaRN included, changes no
// count); mixture-of-experts, latent-attention and qk_norm models are counted by cost_models/moe_params.h.
ParamCounts count_params(const ModelSpec& m);
// One block's multi-head (or grouped-query) attention: W_q, W_k, W_v, W_o and their biases per m.bias.
std::int64_t attention_params(const ModelSpec& m);

// Model FLOPs per token as PaLM (Chowdhery et al. 2022, Appendix B) defines them:
// 6N + 12·L·H·Q·T, with N the parameters that take part in matrix multiplies (all but the input
// embedding table, as torchtitan counts; when tied, the table is the LM head and counts) and T the
// sequence length. Attention is counted without causal halving, as in PaLM.
double model_flops_per_token(const ModelSpec& m, std::int64_t seq);

}  // namespace fsdpx
