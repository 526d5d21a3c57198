// executor/model/block.h — one pre-norm transformer block, forward and hand-written backward:
//   x_mid = x_in + attn_out(attention(rope(qkv(norm1(x_in)))));  x_out = x_mid + mlp_down(act(mlp_up(norm2(x_mid))))
// llama: RMSNorm, RoPE, GQA, SwiGLU; gpt: LayerNorm, learned positions (outside the block), GELU, biases.
// Under tensor parallelism the block holds its tp rank's slices (param_layout.h): qkv and mlp_up are
// column-parallel and attn_out and mlp_down row-parallel, so each half is one tensor-parallel region
// (model_parallel.h: entered by f, left by g, row-parallel biases added after g); with sequence
// parallelism the norms and residuals run on the rank's token shard. The saved activations
// (BlockActs) follow llm.c's ActivationTensors per layer. Leaves out dropout (plans with
// training.dropout > 0 are rejected by the runtime).
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_spec.h"
#include "executor/cpu/attention.h"
#include "executor/cpu/rope.h"
#include "executor/model/block_dims.h"
#include "executor/model/block_sequence.h"  // GradPass
#include "executor/model/fp8_linear.h"
#include "executor/model/lora.h"
#include "executor/model/mla_attention.h"
#include "executor/model/model_parallel.h"
#include "executor/model/moe_mlp.h"
#include "executor/model/op_profiler.h"
#include "executor/runtime/param_layout.h"

namespace fsdpx {

// Activations a block saves for backward, tensor by tensor the itemisation of the simulator's memory
// model for (unfused attention, no dropout) in cost_models/activations.cpp (per token, in elements):
//   norm region: ln1 (QKV input) C, x_mid (MLP-norm input) C, ln2 (MLP input) C and the block's
//     output C (the next block's / final norm's input: the simulator counts a block's input, the CPU
//     model its output, the embedding output standing in for block 0's input); norm statistics;
//   attention: qkv Q + 2·KV (QKᵀ inputs and V), atty Q (out-proj input), att NH·T (softmax output);
//   MLP: fc FU and fc_act F (SwiGLU: gate, up and their product, 3F; GELU: input and output, 2F).
// Under sequence parallelism the norm outputs ln1, ln2 hold all N tokens (gathered for the GEMMs);
// statistics and x_mid hold the rank's N_local tokens.
template <class Real>
struct BlockActs {
  std::vector<Real> ln1, ln1_mean, ln1_rstd;  // [N, C], [N_local] (LayerNorm only, else empty), [N_local]
  std::vector<Real> qkv;                      // [N, QKV] after RoPE
  std::vector<Real> att;                      // [attention_saved_elems] softmax probabilities ([B, NH, T, T_kv] with cp)
  std::vector<Real> atty;                     // [N, Q] attention output before attn_out
  std::vector<Real> x_mid;                    // [N_local, C] residual stream after attention
  std::vector<Real> ln2, ln2_mean, ln2_rstd;  // [N, C], [N_local] (LayerNorm only), [N_local]
  std::vector<Real> fc;                       // [N, FU] mlp_up output (pre-activation)
  std::vector<Real> fc_act;                   // [N, F]
  std::vector<std::vector<Real>> lora_u;      // LoRA: per adapted projection x Aᵀ [N, r] (lora.h)
  MoeActs<Real> moe;                          // an MoE block's MLP (allocated by its model; moe_mlp.h)
  MlaActs<Real> mla;                          // latent attention's chains (allocated by its model)
  void allocate(const BlockDims& d);
};

// What a block's input pass keeps for its weight pass: the gradients w.r.t. the outputs of its linear
// layers and norms (the inputs of their weight gradients are activations the forward saved).
template <class Real>
struct BlockWeightInputs {
  std::vector<Real> d_out, d_mid;  // [N, C]: w.r.t. x_out (mlp_down's output) and x_mid (attn_out's)
  std::vector<Real> dfc, dqkv;     // [N, FU], [N, QKV]: w.r.t. mlp_up's and qkv's outputs (qkv after RoPE's backward)
  std::vector<Real> dln2, dln1;    // [N, C]: w.r.t. the MLP norm's and the attention norm's outputs
  void allocate(const BlockDims& d);
};

// Gradient scratch shared by all blocks (overwritten per block). With sequence parallelism `wide`
// [N, C] holds a row-parallel GEMM's partial output (forward) and the gathered output gradient
// (backward); with kv_heads < tp `qkv_part` [N, QKV_rows] and `qkv_all` [tp, N, QKV_rows] hold the
// rank's qkv GEMM output and the gathered one; with cp > 1 the K and V of whole sequences pass through
// kv_local [N, KVW], kv_gathered [cp, N, KVW] and kv_full, dkv_full [B, T_kv, KVW] (KVW = 2·KV_local).
template <class Real>
struct BlockScratch {
  std::vector<Real> dln, datty, dqkv, dfc, dfc_act;  // [N, C], [N, Q], [N, QKV], [N, FU], [N, F]
  std::vector<Real> wide, qkv_part, qkv_all;         // empty unless needed
  std::vector<Real> kv_local, kv_gathered, kv_full, dkv_full;
  MoeScratch<Real> moe;                              // MoE blocks (allocated by the model)
  MlaScratch<Real> mla;                              // latent attention (allocated by the model)
  void allocate(const BlockDims& d, const ModelParallel& par = {});
};

template <class Real>
struct BlockContext {
  const ModelSpec* spec = nullptr;
  BlockDims dims;
  const cpu::RopeTable<Real>* rope = nullptr;  // null for gpt; rope_theta, rope_scaling; rows = rank's positions
  OpProfiler* profiler = nullptr;
  int module = 0;  // for the profiler
  ModelParallel par;
  ModelComm* comm = nullptr;  // null when tp = cp = 1
  BlockScratch<Real>* scratch = nullptr;  // forward uses `wide` and the qkv buffers
  const std::vector<std::int64_t>* group_columns = nullptr;  // kv_heads < tp: query_group_columns
  const std::vector<std::int64_t>* cp_positions = nullptr;   // cp > 1: [cp, T] every cp rank's positions
  // LoRA (lora.h; tp = 1, GradPass::all): the base weights are frozen, so backward computes no weight
  // gradients for them (g is all null) and the adapters' gradients instead.
  LoraBlock<Real> lora;
  // fp8 training (fp8_linear.h): the four projections' GEMMs round their operands; null: fp32 throughout.
  Fp8Workspace<Real>* fp8 = nullptr;
  // MoE blocks: the load-balancing loss's gradient reaching the router (moe_aux_loss.h).
  MoeAuxGrad<Real> moe_aux = {};
};

// x_in [N_local, C] -> x_out [N_local, C]; fills `acts`.
template <class Real>
void block_forward(const BlockContext<Real>& ctx, const BlockTensors<const Real*>& p, const Real* x_in, Real* x_out,
                   BlockActs<Real>& acts);

// dres [N_local, C]: gradient w.r.t. x_out on entry, w.r.t. x_in on exit. Parameter gradients accumulate (+=).
// GradPass::input updates dres and fills `kept` (g unused); GradPass::weight reads `kept` and writes g
// only (p and dres unused); the two give the gradients of GradPass::all bit for bit. The split runs
// with tp = cp = 1 only (FSDP_CHECK).
template <class Real>
void block_backward(const BlockContext<Real>& ctx, const BlockTensors<const Real*>& p, const BlockTensors<Real*>& g,
                    const Real* x_in, const BlockActs<Real>& acts, Real* dres, BlockScratch<Real>& scratch,
                    GradPass pass = GradPass::all, BlockWeightInputs<Real>* kept = nullptr);

// Norm of the arch (RMSNorm for llama, LayerNorm for gpt), shared with the final norm.
template <class Real>
void norm_forward(Arch arch, Real* out, Real* mean, Real* rstd, const Real* inp, const Real* w, const Real* b,
                  std::int64_t n, std::int64_t c, double eps);
template <class Real>
void norm_backward(Arch arch, Real* dinp, Real* dw, Real* db, const Real* dout, const Real* inp, const Real* w,
                   const Real* mean, const Real* rstd, std::int64_t n, std::int64_t c);

}  // namespace fsdpx
