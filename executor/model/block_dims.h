// executor/model/block_dims.h — the shape of one transformer block on one rank, for every backend: its
// sizes for a micro-batch under tensor and context parallelism (Megatron-LM's column and row slices,
// the rank's context-parallel tokens) and where its tensors sit inside its module buffer
// (runtime/param_layout.h). Leaves out the block's computation (model/block.h on the CPU,
// cuda_backend/cuda_block.h on CUDA).
#pragma once

#include <cstdint>

#include "core/model_spec.h"
#include "executor/model/attn_shape.h"
#include "executor/runtime/model_groups.h"
#include "executor/runtime/param_layout.h"

namespace fsdpx {

// Columns of the MLP up-projection output per token: 2F for SwiGLU ([gate | up]), F otherwise.
inline std::int64_t mlp_up_width(FfnKind kind, std::int64_t ffn) { return kind == FfnKind::swiglu ? 2 * ffn : ffn; }

// Sizes of one block on one rank for a micro-batch of B sequences of T tokens (T = seq / cp: the
// rank's context-parallel part). Widths are the rank's tensor-parallel slices. Under latent attention
// (tp = cp = 1) q is attn_out's input H·v_head_dim, qkv the padded multi-head call's 3·H·(nope + rope) and
// attn its shape (mla_attention.h).
struct BlockDims {
  std::int64_t b = 0, t = 0, n = 0;  // n = B·T tokens inside the tensor-parallel regions
  std::int64_t t_kv = 0;             // keys per sequence the attention sees: seq (T·cp)
  std::int64_t n_local = 0;          // tokens outside them: n / tp with sequence parallelism, else n
  std::int64_t c = 0;                // hidden
  std::int64_t q = 0, qkv = 0;       // local q_dim; local attention input (Q + 2·KV of the rank's heads)
  std::int64_t qkv_rows = 0;         // local rows of the qkv weight: qkv, or Q+2KV / tp when kv_heads < tp
  std::int64_t f = 0, fu = 0;        // local ffn_hidden, mlp_up width (2F for SwiGLU)
  bool layernorm = false;            // gpt: norms save mean and rstd; llama's RMSNorm saves rstd only
  AttnShape attn;                    // the rank's query and KV heads
  bool grouped_qkv() const { return qkv_rows != qkv; }  // Megatron's kv_heads < tp path
  bool context_parallel() const { return t_kv != t; }
  std::int64_t kv_width() const { return 2 * attn.nkv * attn.hd; }  // K and V columns of qkv
};
BlockDims make_block_dims(const ModelSpec& m, std::int64_t batch, std::int64_t seq, const ModelParallel& par = {});

// Pointers to one block's tensors inside its module buffer (P = const Real* for params, Real* for
// grads); absent tensors (biases of a llama block) are null.
template <class P>
struct BlockTensors {
  P attn_norm_w, attn_norm_b, qkv_w, qkv_b, attn_out_w, attn_out_b;
  P mlp_norm_w, mlp_norm_b, mlp_up_w, mlp_up_b, mlp_down_w, mlp_down_b;
  P router_w = nullptr, experts_up_w = nullptr, experts_down_w = nullptr;  // an MoE block's MLP (moe_mlp.h)
  P router_bias = nullptr, shared_up_w = nullptr, shared_down_w = nullptr;  // DeepSeek-V3's (null: none)
  // Latent attention (mla_attention.h) in place of qkv: q_a, q_a_norm, q_b (or q), kv_a, kv_a_norm, kv_b.
  P mla_q_a = nullptr, mla_q_a_norm = nullptr, mla_q_b = nullptr, mla_q = nullptr;
  P mla_kv_a = nullptr, mla_kv_a_norm = nullptr, mla_kv_b = nullptr;
};
template <class P>
BlockTensors<P> block_tensors(const ModuleLayout& m, P base);

}  // namespace fsdpx
