// cost_models/params.cpp — parameter counts of a decoder-only transformer from its ModelSpec, the
// way Hugging Face / torchtitan modules hold them (one tensor per weight, biases per LinearBias,
// RMSNorm with a scale only, LayerNorm with scale and shift); and PaLM's model FLOPs per token.
// Leaves out non-persistent buffers (RoPE tables, attention masks) and vocabulary padding.
#include "cost_models/params.h"

#include "core/checked_math.h"
#include "core/errors.h"
#include "core/model_spec_moe.h"
#include "cost_models/moe_params.h"

namespace fsdpx {
namespace {

// Parameters of one norm layer: RMSNorm has a scale (llama), LayerNorm a scale and a shift (gpt).
std::int64_t norm_params(const ModelSpec& m) {
  return m.arch == Arch::llama ? m.hidden : checked_mul(2, m.hidden);
}

// Number of hidden×ffn matrices in the MLP: gate, up and down for SwiGLU (Shazeer 2020, "GLU
// Variants Improve Transformer"); up and down otherwise.
std::int64_t mlp_matrices(FfnKind f) { return f == FfnKind::swiglu ? 3 : 2; }

}  // namespace

std::int64_t attention_params(const ModelSpec& m) {
  const std::int64_t h = m.hidden, q = checked_mul(m.heads, m.head_dim), kv = checked_mul(m.kv_heads, m.head_dim);
  // W_q, W_k, W_v (h×q, h×kv, h×kv), W_o (q×h)
  const std::int64_t weights = checked_add(checked_mul(2, checked_mul(h, q)), checked_mul(2, checked_mul(h, kv)));
  std::int64_t biases = 0;
  if (m.bias != LinearBias::none) biases += q + 2 * kv;  // Qwen2 and GPT-2 bias Q, K, V
  if (m.bias == LinearBias::all) biases += h;            // GPT-2 also biases the output projection
  return checked_add(weights, biases);
}

namespace {

std::int64_t mlp_params(const ModelSpec& m) {
  const std::int64_t h = m.hidden, f = m.ffn_hidden;
  const std::int64_t weights = checked_mul(mlp_matrices(m.ffn_kind), checked_mul(h, f));
  std::int64_t biases = 0;
  if (m.bias == LinearBias::all) {
    const std::int64_t up_matrices = mlp_matrices(m.ffn_kind) - 1;  // gate and/or up: f each
    biases = up_matrices * f + h;                                    // plus down: h
  }
  return checked_add(weights, biases);
}

}  // namespace

namespace {

// A dense model with latent attention or q/k norms, counted by moe_params.h: identical blocks.
ParamCounts dense_counts_of(const MoeParamCounts& c, std::int64_t layers) {
  ParamCounts out;
  out.embedding = c.embedding;
  out.per_block = c.dense_block;
  out.final_norm = c.final_norm;
  out.head = c.head;
  out.layers = layers;
  return out;
}

}  // namespace

ParamCounts count_params(const ModelSpec& m) {
  FSDP_CHECK(!m.is_moe(), "count_params: a dense model; MoE models go through count_moe_params");
  if (has_moe_parts(m)) return dense_counts_of(count_moe_params(m), m.layers);  // latent attention, qk_norm
  FSDP_CHECK(m.layers > 0 && m.hidden > 0 && m.heads > 0 && m.kv_heads > 0 && m.head_dim > 0 &&
                 m.ffn_hidden > 0 && m.vocab > 0,
             "count_params: ModelSpec has a non-positive dimension");
  // Overflow-checked: the loaders keep models within input_range::kMaxModelParams, so a wrap here is a
  // ModelSpec built in code outside the ranges.
  ParamCounts c;
  c.embedding = checked_mul(m.vocab, m.hidden);
  // GPT-2 learns one position vector per position up to max_seq (wpe, max_seq×h).
  if (m.arch == Arch::gpt) c.embedding = checked_add(c.embedding, checked_mul(m.max_seq, m.hidden));
  // pre-attention and pre-MLP norms
  c.per_block = checked_add(checked_add(attention_params(m), mlp_params(m)), checked_mul(2, norm_params(m)));
  c.final_norm = norm_params(m);
  c.head = m.tied_embeddings ? 0 : checked_mul(m.vocab, m.hidden);  // no bias on the LM head in either family
  c.layers = m.layers;
  c.total();  // checks the sum
  return c;
}

double model_flops_per_token(const ModelSpec& m, std::int64_t seq) {
  FSDP_CHECK(seq > 0, "model_flops_per_token: seq must be positive");
  if (has_moe_parts(m)) return moe_model_flops_per_token(m, seq);  // its attention term knows latent heads
  const ParamCounts c = count_params(m);
  // N = all parameters but the input embedding (token and position tables), as torchtitan's
  // get_nparams_and_flops does; a tied table is the LM head's matrix and is counted once as such.
  const double table = static_cast<double>(m.vocab) * static_cast<double>(m.hidden);
  const double n = static_cast<double>(c.total() - c.embedding) + (m.tied_embeddings ? table : 0.0);
  // PaLM (Chowdhery et al. 2022, Appendix B): 6N + 12·L·H·Q·T, attention without causal halving.
  const double attention = 12.0 * static_cast<double>(m.layers) * static_cast<double>(m.heads) *
                           static_cast<double>(m.head_dim) * static_cast<double>(seq);
  return 6.0 * n + attention;
}

}  // namespace fsdpx
