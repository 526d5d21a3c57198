// cost_models/moe_params.cpp — parameter counts of mixture-of-experts and latent-attention models the way
// transformers' modules hold them (modeling_mixtral.py, modeling_qwen2_moe.py, modeling_qwen3_moe.py,
// modeling_deepseek_v3.py): bias-free SwiGLU experts, a bias-free router, RMSNorm scales. DeepSeek-V3's
// e_score_correction_bias (one per routed expert) is counted: the published checkpoint stores it and
// DeepSeek's modeling_deepseek.py MoEGate holds it as a parameter. Leaves out buffers and the MTP module.
#include "cost_models/moe_params.h"

#include "core/checked_math.h"
#include "core/errors.h"
#include "cost_models/params.h"

namespace fsdpx {
namespace {

// gate, up and down: 3 h f (Shazeer 2020, SwiGLU).
std::int64_t swiglu_params(std::int64_t hidden, std::int64_t ffn) { return checked_mul(3, checked_mul(hidden, ffn)); }

std::int64_t block_attention_params(const ModelSpec& m) {
  if (m.is_mla()) return mla_params(m);
  // Qwen3MoeAttention: q_norm and k_norm, head_dim scales each.
  return checked_add(attention_params(m), m.qk_norm ? checked_mul(2, m.head_dim) : 0);
}

// Router (hidden x experts), DeepSeek-V3's correction bias, shared experts and their gate (Qwen2-MoE).
std::int64_t moe_fixed_params(const ModelSpec& m) {
  const MoeSpec& e = m.moe;
  std::int64_t n = checked_mul(m.hidden, e.experts);
  if (e.score_correction_bias) n = checked_add(n, e.experts);
  n = checked_add(n, checked_mul(e.shared_experts, swiglu_params(m.hidden, e.shared_ffn_hidden)));
  if (e.shared_expert_gate) n = checked_add(n, m.hidden);
  return n;
}

}  // namespace

std::int64_t mla_params(const ModelSpec& m) {
  const MlaSpec& a = m.mla;
  const std::int64_t h = m.hidden, heads = m.heads;
  const std::int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
  const std::int64_t q_out = checked_mul(heads, qk);
  const std::int64_t q = a.q_lora_rank > 0
                             ? checked_add(checked_mul(a.q_lora_rank, checked_add(h, q_out)), a.q_lora_rank)
                             : checked_mul(h, q_out);
  const std::int64_t kv_a = checked_add(checked_mul(h, a.kv_lora_rank + a.qk_rope_head_dim), a.kv_lora_rank);
  const std::int64_t kv_b = checked_mul(a.kv_lora_rank, checked_mul(heads, a.qk_nope_head_dim + a.v_head_dim));
  const std::int64_t o = checked_mul(checked_mul(heads, a.v_head_dim), h);
  return checked_add(checked_add(q, kv_a), checked_add(kv_b, o));
}

MoeParamCounts count_moe_params(const ModelSpec& m) {
  FSDP_CHECK(m.arch == Arch::llama && m.ffn_kind == FfnKind::swiglu, "count_moe_params: a llama-arch SwiGLU model");
  MoeParamCounts c;
  c.embedding = checked_mul(m.vocab, m.hidden);
  c.head = m.tied_embeddings ? 0 : c.embedding;
  c.final_norm = m.hidden;
  const std::int64_t common = checked_add(block_attention_params(m), checked_mul(2, m.hidden));  // + 2 RMSNorms
  c.dense_block = checked_add(common, swiglu_params(m.hidden, m.ffn_hidden));
  if (!m.is_moe()) {
    c.dense_layers = m.layers;
    return c;
  }
  const MoeSpec& e = m.moe;
  const std::int64_t expert = swiglu_params(m.hidden, e.expert_ffn_hidden);
  const std::int64_t fixed = checked_add(common, moe_fixed_params(m));
  c.moe_block = checked_add(fixed, checked_mul(e.experts, expert));
  c.moe_block_active = checked_add(fixed, checked_mul(e.top_k, expert));
  c.dense_layers = e.dense_layers;
  c.moe_layers = m.layers - e.dense_layers;
  c.total();  // checks the sum
  return c;
}

std::int64_t MoeParamCounts::total() const {
  const std::int64_t blocks = checked_add(checked_mul(dense_layers, dense_block), checked_mul(moe_layers, moe_block));
  return checked_add(checked_add(embedding, head), checked_add(final_norm, blocks));
}

std::int64_t MoeParamCounts::active() const {
  const std::int64_t blocks =
      checked_add(checked_mul(dense_layers, dense_block), checked_mul(moe_layers, moe_block_active));
  return checked_add(checked_add(embedding, head), checked_add(final_norm, blocks));
}

double moe_model_flops_per_token(const ModelSpec& m, std::int64_t seq) {
  FSDP_CHECK(seq > 0, "moe_model_flops_per_token: seq must be positive");
  const MoeParamCounts c = count_moe_params(m);
  // N: active parameters but the input table; a tied table is the head's matrix, counted once as such.
  const double n = double(c.active() - c.embedding) + (m.tied_embeddings ? double(c.embedding) : 0.0);
  const double d_qk = m.is_mla() ? double(m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim) : double(m.head_dim);
  const double d_v = m.is_mla() ? double(m.mla.v_head_dim) : double(m.head_dim);
  const double attention = 6.0 * double(m.layers) * double(m.heads) * (d_qk + d_v) * double(seq);
  return 6.0 * n + attention;
}

}  // namespace fsdpx
