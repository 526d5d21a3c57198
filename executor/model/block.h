// executor/model/block.h — one pre-norm transformer block, forward and hand-written backward:
//   x_mid = x_in + attn_out(attention(rope(qkv(norm1(x_in)))));  x_out = x_mid + mlp_down(act(mlp_up(norm2(x_mid))))
// llama: RMSNorm, RoPE, GQA, SwiGLU; gpt: LayerNorm, learned positions (outside the block), GELU, biases.
// The saved activations (BlockActs) follow llm.c's ActivationTensors per layer. Leaves out dropout
// (plans with training.dropout > 0 are rejected by the runtime).
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_spec.h"
#include "executor/cpu/attention.h"
#include "executor/cpu/rope.h"
#include "executor/model/op_profiler.h"
#include "executor/runtime/param_layout.h"

namespace fsdpx {

// Sizes of one block for a micro-batch of B sequences of T tokens.
struct BlockDims {
  std::int64_t b = 0, t = 0, n = 0;  // n = B·T tokens
  std::int64_t c = 0;                // hidden
  std::int64_t q = 0, qkv = 0;       // q_dim, q_dim + 2·kv_dim
  std::int64_t f = 0, fu = 0;        // ffn_hidden, mlp_up width (2F for SwiGLU)
  bool layernorm = false;            // gpt: norms save mean and rstd; llama's RMSNorm saves rstd only
  cpu::AttnShape attn;
};
BlockDims make_block_dims(const ModelSpec& m, std::int64_t batch, std::int64_t seq);

// Pointers to one block's tensors inside its module buffer (P = const Real* for params, Real* for
// grads); absent tensors (biases of a llama block) are null.
template <class P>
struct BlockTensors {
  P attn_norm_w, attn_norm_b, qkv_w, qkv_b, attn_out_w, attn_out_b;
  P mlp_norm_w, mlp_norm_b, mlp_up_w, mlp_up_b, mlp_down_w, mlp_down_b;
};
template <class P>
BlockTensors<P> block_tensors(const ModuleLayout& m, P base);

// Activations a block saves for backward, tensor by tensor the itemisation of the simulator's memory
// model for (unfused attention, no dropout) in cost_models/activations.cpp (per token, in elements):
//   norm region: ln1 (QKV input) C, x_mid (MLP-norm input) C, ln2 (MLP input) C and the block's
//     output C (the next block's / final norm's input: the simulator counts a block's input, the CPU
//     model its output, the embedding output standing in for block 0's input); norm statistics;
//   attention: qkv Q + 2·KV (QKᵀ inputs and V), atty Q (out-proj input), att NH·T (softmax output);
//   MLP: fc FU and fc_act F (SwiGLU: gate, up and their product, 3F; GELU: input and output, 2F).
template <class Real>
struct BlockActs {
  std::vector<Real> ln1, ln1_mean, ln1_rstd;  // [N, C], [N] (LayerNorm only, else empty), [N]
  std::vector<Real> qkv;                      // [N, QKV] after RoPE
  std::vector<Real> att;                      // [attention_saved_elems] softmax probabilities
  std::vector<Real> atty;                     // [N, Q] attention output before attn_out
  std::vector<Real> x_mid;                    // [N, C] residual stream after attention
  std::vector<Real> ln2, ln2_mean, ln2_rstd;  // [N, C], [N] (LayerNorm only), [N]
  std::vector<Real> fc;                       // [N, FU] mlp_up output (pre-activation)
  std::vector<Real> fc_act;                   // [N, F]
  void allocate(const BlockDims& d);
};

// Gradient scratch shared by all blocks (overwritten per block).
template <class Real>
struct BlockScratch {
  std::vector<Real> dln, datty, dqkv, dfc, dfc_act;  // [N, C], [N, Q], [N, QKV], [N, FU], [N, F]
  void allocate(const BlockDims& d);
};

template <class Real>
struct BlockContext {
  const ModelSpec* spec = nullptr;
  BlockDims dims;
  const cpu::RopeTable<Real>* rope = nullptr;  // null for gpt; built from spec->rope_theta
  OpProfiler* profiler = nullptr;
  int module = 0;  // for the profiler
};

// x_in [N, C] -> x_out [N, C]; fills `acts`.
template <class Real>
void block_forward(const BlockContext<Real>& ctx, const BlockTensors<const Real*>& p, const Real* x_in, Real* x_out,
                   BlockActs<Real>& acts);

// dres [N, C]: gradient w.r.t. x_out on entry, w.r.t. x_in on exit. Parameter gradients accumulate (+=).
template <class Real>
void block_backward(const BlockContext<Real>& ctx, const BlockTensors<const Real*>& p, const BlockTensors<Real*>& g,
                    const Real* x_in, const BlockActs<Real>& acts, Real* dres, BlockScratch<Real>& scratch);

// Norm of the arch (RMSNorm for llama, LayerNorm for gpt), shared with the final norm.
template <class Real>
void norm_forward(Arch arch, Real* out, Real* mean, Real* rstd, const Real* inp, const Real* w, const Real* b,
                  std::int64_t n, std::int64_t c, double eps);
template <class Real>
void norm_backward(Arch arch, Real* dinp, Real* dw, Real* db, const Real* dout, const Real* inp, const Real* w,
                   const Real* mean, const Real* rstd, std::int64_t n, std::int64_t c);

}  // namespace fsdpx
