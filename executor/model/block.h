// executor/model/block.h — one pre-norm transformer block, forward and hand-written backward:
//   x_mid = x_in + attn_out(attention(rope(qkv(norm1(x_in)))));  x_out = x_mid + mlp_down(act(mlp_up(norm2(x_mid))))
// llama: RMSNorm, RoPE, GQA, SwiGLU; gpt: LayerNorm, learned positions (outside the block), GELU, biases.
// Under tensor parallelism the block holds its tp rank's slices (param_layout.h): qkv and mlp_up are
// column-parallel and attn_out and mlp_down row-parallel, so each half is one tensor-parallel region
// (model_parallel.h: entered by f, left by g, row-parallel biases added after g); with sequence
// parallelism the norms and residuals run on the rank's token shard. The saved activations
// (BlockActs, block_buffers.h) follow llm.c's ActivationTensors per layer. Leaves out dropout (plans with
// training.dropout > 0 are rejected by the runtime).
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_spec.h"
#include "executor/cpu/attention.h"
#include "executor/cpu/rope.h"
#include "executor/model/block_buffers.h"
#include "executor/model/block_context.h"
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

// The CPU's block buffers (block_buffers.h) on host vectors. The saved activations follow, tensor by
// tensor, the simulator's memory model for (unfused attention, no dropout) in
// cost_models/activations.cpp (per token, in elements):
//   norm region: ln1 (QKV input) C, x_mid (MLP-norm input) C, ln2 (MLP input) C and the block's
//     output C (the next block's / final norm's input: the simulator counts a block's input, the CPU
//     model its output, the embedding output standing in for block 0's input); norm statistics;
//   attention: qkv Q + 2·KV (QKᵀ inputs and V), atty Q (out-proj input), att NH·T (softmax output);
//   MLP: fc FU and fc_act F (SwiGLU: gate, up and their product, 3F; GELU: input and output, 2F).
// The attention core keeps its softmax probabilities ([B, NH, T, T_kv] with cp); a split backward keeps
// the norms' output gradients (the weight pass re-runs the norm backward, block_policy.h). The MoE and
// latent-attention parts (host vectors sized by the routing and the latent ranks) are not counted.
template <class Real>
struct CpuBlockBuffers {
  template <class X>
  using Buffer = std::vector<X>;
  using E = Real;
  using S = Real;
  using Lora = std::vector<std::vector<Real>>;  // per adapted projection x Aᵀ [N, r] (lora.h)
  using MoeActs = fsdpx::MoeActs<Real>;         // moe_mlp.h
  using MoeScratch = fsdpx::MoeScratch<Real>;
  using MlaActs = fsdpx::MlaActs<Real>;         // mla_attention.h
  using MlaScratch = fsdpx::MlaScratch<Real>;
  static constexpr bool kKeepsNormGrads = false;

  template <class X>
  static void alloc(std::vector<X>& v, std::int64_t n) { v.assign(std::size_t(n), X(0)); }
  template <class X>
  static std::int64_t bytes(const std::vector<X>& v) { return std::int64_t(v.size() * sizeof(X)); }
  static std::int64_t bytes(const Lora& u) {
    std::int64_t b = 0;
    for (const std::vector<Real>& v : u) b += bytes(v);
    return b;
  }
  template <class Moe, class Mla>
  static std::int64_t parts_bytes(const Moe&, const Mla&) { return 0; }
  static std::int64_t attention_keep_elems(const BlockDims& d) {
    return d.context_parallel() ? d.b * d.attn.nh * d.t * d.t_kv : cpu::attention_saved_elems(d.attn);
  }
  static std::int64_t attention_scratch_elems(const BlockDims&) { return 0; }
  static std::int64_t norm_scratch_elems(const BlockDims&) { return 0; }
  static std::int64_t bias_scratch_elems(const BlockDims&) { return 0; }
};
template <class Real>
using BlockActs = BlockActsT<CpuBlockBuffers<Real>>;
template <class Real>
using BlockScratch = BlockScratchT<CpuBlockBuffers<Real>>;
template <class Real>
using BlockWeightInputs = BlockWeightInputsT<CpuBlockBuffers<Real>>;

// The shared context (block_context.h: host collectives, LoRA's lora.h) and the CPU's own.
template <class Real>
struct BlockContext : BlockContextBase<ModelComm, BlockScratch<Real>, LoraBlock<Real>, Real> {
  const cpu::RopeTable<Real>* rope = nullptr;  // null for gpt; rope_theta, rope_scaling; rows = rank's positions
  const std::vector<std::int64_t>* group_columns = nullptr;  // kv_heads < tp: query_group_columns
  const std::vector<std::int64_t>* cp_positions = nullptr;   // cp > 1: [cp, T] every cp rank's positions
  // fp8 training (fp8_linear.h): the four projections' GEMMs round their operands; null: fp32 throughout.
  Fp8Workspace<Real>* fp8 = nullptr;
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
