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
// (refused by the capability row). The kernel-call order is mla_sequence.h's, shared with the CUDA backend.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_spec.h"
#include "executor/model/mla_dims.h"
#include "executor/model/op_profiler.h"
#include "executor/model/rope_table.h"

namespace fsdpx {

// x [N, C] (the attention norm's output) -> out [N, H·v] (attn_out's input); fills qkv [N, 3·H·D] (RoPE
// applied, V padded) and att [attention_saved_elems] for the attention core's backward. rope: rows of the
// sequence positions, qk_rope_head_dim wide.
template <class Real>
void mla_forward(const MlaDims& d, const MlaTensors<const Real*>& p, const RopeTable<Real>& rope, const Real* x,
                 Real* out, Real* qkv, Real* att, MlaActs<Real>& a, OpProfiler* prof, int module);

// dx [N, C] (written) = the gradient w.r.t. x from dout [N, H·v]; the tensors' gradients accumulate (+=).
// dqkv [N, 3·H·D] is scratch (overwritten).
template <class Real>
void mla_backward(const MlaDims& d, const MlaTensors<const Real*>& p, const MlaTensors<Real*>& g,
                  const RopeTable<Real>& rope, const Real* x, const Real* dout, const Real* qkv, const Real* att,
                  const MlaActs<Real>& a, Real* dqkv, Real* dx, MlaScratch<Real>& s, OpProfiler* prof, int module);

}  // namespace fsdpx
