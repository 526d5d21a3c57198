// executor/model/mla_attention.h — multi-head latent attention (DeepSeek-V3 technical report, arXiv:2412.19437,
// §2.1.1) on the CPU, forward and hand-written backward, as transformers' DeepseekV3Attention
// (models/deepseek_v3/modeling_deepseek_v3.py): queries x·W_q_a -> RMSNorm -> ·W_q_b (or x·W_q without a
// q LoRA rank), H heads of qk_nope + qk_rope; x·W_kv_a gives the latent c_kv (kv_lora_rank) and one shared
// rope key k_pe (qk_rope_head_dim); c_kv -> RMSNorm -> ·W_kv_b gives each head's k_nope and v (v_head_dim);
// RoPE on the queries' rope part and on k_pe; key = [k_nope | k_pe], query = [q_nope | q_pe]; causal softmax
// attention scaled by (qk_nope + qk_rope)^-1/2, times YaRN's mscale^2 where the model's rope_scaling sets
// mscale_all_dim (yarn_apply_mscale; executor/model/rope_table.h); the heads' v-wide outputs go to
// attn_out. RoPE rotates interleaved pairs (x_2i, x_2i+1), DeepSeek's own form (rope_interleave, the config's default):
// transformers' apply_rotary_pos_emb_interleave de-interleaves q and k alike before rotating, which leaves
// every score q·k the same. The attention core is executor/cpu/attention.h's, fed an equivalent multi-head
// qkv [N, 3·H·D] (D = qk_nope + qk_rope): V padded with zeros to D, the padded output columns dropped (the
// same result; D/v_head_dim times the P·V work). The RoPE table carries any RoPE scaling (YaRN's
// frequencies and cos/sin scale). Leaves out attention biases, tensor and context parallelism, LoRA and fp8
// (refused by the capability row).
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_spec.h"
#include "executor/model/attn_shape.h"
#include "executor/model/op_profiler.h"
#include "executor/model/rope_table.h"

namespace fsdpx {

// One MLA call's sizes: B sequences of T tokens (N = B·T) of width C, H heads.
struct MlaDims {
  std::int64_t b = 0, t = 0, n = 0, c = 0, heads = 0;
  std::int64_t q_rank = 0, kv_rank = 0;     // q_lora_rank (0: queries straight from x), kv_lora_rank
  std::int64_t nope = 0, rope = 0, v = 0;   // qk_nope_head_dim, qk_rope_head_dim, v_head_dim
  double eps = 1e-6;                        // the latent RMSNorms' (rms_norm_eps)
  double softmax_scale_factor = 1.0;        // YaRN's mscale^2 on the (nope + rope)^-1/2 softmax scale
  std::int64_t qk() const { return nope + rope; }
  std::int64_t q_width() const { return heads * qk(); }
  std::int64_t kv_a_width() const { return kv_rank + rope; }
  std::int64_t kv_b_width() const { return heads * (nope + v); }
  std::int64_t out_width() const { return heads * v; }
  AttnShape attn() const { return AttnShape{b, t, heads, heads, qk()}; }  // the padded multi-head call
};
MlaDims make_mla_dims(const ModelSpec& m, std::int64_t batch, std::int64_t seq);

// The block's latent-attention tensors (runtime/param_layout.cpp): q_a [Rq, C], q_a_norm [Rq], q_b [H·D, Rq]
// (or q [H·D, C] when Rq = 0: q_a, q_a_norm and q_b null), kv_a [Rkv + rope, C], kv_a_norm [Rkv],
// kv_b [H·(nope + v), Rkv] (head h's rows: its nope key rows, then its v rows).
template <class P>
struct MlaTensors {
  P q_a = nullptr, q_a_norm = nullptr, q_b = nullptr, q = nullptr;
  P kv_a = nullptr, kv_a_norm = nullptr, kv_b = nullptr;
};

// What forward keeps for backward besides the block's qkv, att and atty (block.h).
template <class Real>
struct MlaActs {
  std::vector<Real> qa, qa_rstd, qa_n;   // [N, Rq], [N], [N, Rq]: q_a output, its norm's rstd and output
  std::vector<Real> kva, kv_rstd, kv_n;  // [N, Rkv + rope] (k_pe unrotated), [N], [N, Rkv]
  std::vector<Real> kvb;                 // [N, H·(nope + v)]
  std::vector<Real> out_pad;             // [N, H·D] the attention core's output (v columns, then zeros)
  void allocate(const MlaDims& d);
};

template <class Real>
struct MlaScratch {
  std::vector<Real> dout_pad, dq, dqa_n, dqa, dkva, dkv_n, dkvb;  // the gradients of the forward's buffers
  void allocate(const MlaDims& d);
};

// x [N, C] (the attention norm's output) -> out [N, H·v] (attn_out's input); fills qkv [N, 3·H·D] (RoPE
// applied, V padded) and att [attention_saved_elems] for the attention core's backward. rope: rows of the
// sequence positions, qk_rope_head_dim wide.
template <class Real>
void mla_forward(const MlaDims& d, const MlaTensors<const Real*>& p, const RopeTable<Real>& rope, const Real* x,
                 Real* out, Real* qkv, Real* att, MlaActs<Real>& a, OpProfiler* prof, int module);

// dx [N, C] += the gradient w.r.t. x from dout [N, H·v]; the tensors' gradients accumulate (+=). dqkv
// [N, 3·H·D] is scratch (overwritten).
template <class Real>
void mla_backward(const MlaDims& d, const MlaTensors<const Real*>& p, const MlaTensors<Real*>& g,
                  const RopeTable<Real>& rope, const Real* x, const Real* dout, const Real* qkv, const Real* att,
                  const MlaActs<Real>& a, Real* dqkv, Real* dx, MlaScratch<Real>& s, OpProfiler* prof, int module);

}  // namespace fsdpx
