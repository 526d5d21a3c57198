// executor/cpu/context_attention.h — causal GQA attention of a context-parallel rank's query rows
// against the keys and values of whole sequences (all-gathered over the cp group): query row i sits
// at global position q_pos[i] and sees keys 0 .. q_pos[i] (the load-balanced causal split of
// Megatron-Core and torchtitan gives each rank two chunks, so its positions are increasing but not
// contiguous). The same softmax form as attention.h (probabilities [B, NH, T_q, T_kv] saved).
// Leaves out ring (P2P) exchanges: K and V arrive whole.
#pragma once

#include <cstdint>

namespace fsdpx::cpu {

struct ContextAttnShape {
  std::int64_t b = 0;
  std::int64_t t_q = 0;   // query rows per sequence on this rank
  std::int64_t t_kv = 0;  // keys per sequence (the whole sequence)
  std::int64_t nh = 0, nkv = 0, hd = 0;
  const std::int64_t* q_pos = nullptr;  // [t_q] global positions of the query rows, increasing
  std::int64_t qkv_row() const { return (nh + 2 * nkv) * hd; }
  std::int64_t kv_row() const { return 2 * nkv * hd; }
};

std::int64_t context_attention_saved_elems(const ContextAttnShape& s);

// qkv [B, T_q, (NH + 2·NKV)·HD] (its Q heads are read), kv [B, T_kv, 2·NKV·HD] (K heads, then V
// heads) -> out [B, T_q, NH·HD]; saved [context_attention_saved_elems]. Scores scaled by 1/sqrt(HD).
template <class Real>
void context_attention_forward(Real* out, Real* saved, const Real* qkv, const Real* kv, const ContextAttnShape& s);

// dqkv's Q columns [B, T_q, ·] += dQ; dkv [B, T_kv, 2·NKV·HD] += dK, dV (this rank's part: the cp
// ranks' parts add up), given dout [B, T_q, NH·HD]. Parallel over (batch, kv head), fixed order.
template <class Real>
void context_attention_backward(Real* dqkv, Real* dkv, const Real* dout, const Real* qkv, const Real* kv,
                                const Real* saved, const ContextAttnShape& s);

}  // namespace fsdpx::cpu
