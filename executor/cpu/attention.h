// executor/cpu/attention.h — causal multi-head attention with grouped KV heads (GQA; Ainslie et al.
// 2023), plain softmax form as llm.c train_gpt2.c attention_forward/backward: the probabilities
// [B, NH, T, T] are saved for backward (the plan's `unfused` attention). Computed in query tiles whose
// products are GEMMs (attention.cpp). A flash variant (saving only the row log-sum-exp) can replace it
// behind the same calls: the saved state is opaque, sized by attention_saved_elems. The
// context-parallel form takes a rank's query rows at their positions in the sequence against K and V
// of whole sequences (all-gathered over the cp group): the load-balanced causal split of Megatron-Core
// and torchtitan gives each rank two chunks, so its positions increase but are not contiguous. Leaves
// out dropout, sliding windows and padding masks.
#pragma once

#include <cstdint>

#include "executor/model/attn_shape.h"

namespace fsdpx::cpu {

using fsdpx::AttnShape;  // executor/model/attn_shape.h, shared with the CUDA kernels
using fsdpx::attention_saved_elems;  // the state attention_forward saves for attention_backward

// qkv [B, T, (NH + 2·NKV)·HD] (Q heads, then K heads, then V heads) -> out [B, T, NH·HD];
// saved [attention_saved_elems]. Scores scaled by 1/sqrt(HD) (Vaswani et al. 2017, eq. 1).
template <class Real>
void attention_forward(Real* out, Real* saved, const Real* qkv, const AttnShape& s);

// dqkv [B, T, (NH + 2·NKV)·HD] += gradient of out w.r.t. qkv, given dout [B, T, NH·HD].
// Parallel over (batch, kv head): each dK/dV row is written by one thread, in a fixed order.
template <class Real>
void attention_backward(Real* dqkv, const Real* dout, const Real* qkv, const Real* saved, const AttnShape& s);

// Context parallelism: t_q query rows per sequence at positions q_pos (increasing; row i sees keys
// 0 .. q_pos[i]) against t_kv keys per sequence; probabilities [B, NH, T_q, T_kv] saved.
struct ContextAttnShape {
  std::int64_t b = 0;
  std::int64_t t_q = 0, t_kv = 0;
  std::int64_t nh = 0, nkv = 0, hd = 0;
  const std::int64_t* q_pos = nullptr;  // [t_q]
  std::int64_t qkv_row() const { return (nh + 2 * nkv) * hd; }
  std::int64_t kv_row() const { return 2 * nkv * hd; }
};

std::int64_t context_attention_saved_elems(const ContextAttnShape& s);

// qkv [B, T_q, (NH + 2·NKV)·HD] (its Q heads are read), kv [B, T_kv, 2·NKV·HD] (K heads, then V
// heads) -> out [B, T_q, NH·HD]; saved [context_attention_saved_elems].
template <class Real>
void context_attention_forward(Real* out, Real* saved, const Real* qkv, const Real* kv, const ContextAttnShape& s);

// dqkv's Q columns += dQ; dkv [B, T_kv, 2·NKV·HD] += dK, dV (this rank's part: the cp ranks' parts add
// up), given dout [B, T_q, NH·HD]. Parallel over (batch, kv head), in a fixed order.
template <class Real>
void context_attention_backward(Real* dqkv, Real* dkv, const Real* dout, const Real* qkv, const Real* kv,
                                const Real* saved, const ContextAttnShape& s);

}  // namespace fsdpx::cpu
