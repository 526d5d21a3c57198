// executor/model/transformer.h — the CPU reference model (llama or gpt from a ModelSpec) with a
// hand-written backward, driven module by module so an FSDP runtime can all-gather a unit before its
// modules run and reduce-scatter its gradients after. Parameters and gradients are external flat
// buffers per module (executor/runtime/param_layout.h); the model owns only activations. Under tensor
// and context parallelism (ModelOptions::parallel) the parameters are the rank's slices, the model
// keeps the rank's part of each sequence and its token shard, and it issues the collectives of
// model_parallel.h (Megatron-LM TP with sequence parallelism; vocabulary-parallel embedding and
// cross-entropy). Leaves out dropout, ignore-index tokens and KV caches.
//
// Protocol for one micro-batch:
//   set_batch(tokens, targets);                          // [B, T] each, int32 (whole sequences)
//   for m in 0..M-1:  forward_module(m, params);         // params[k]: module k's buffer or null
//   loss();                                              // Σ over the rank's tokens / (B·T) (+ MoE aux loss)
//   begin_backward(dloss);                               // e.g. 1/(grad_accum·dp) for averaged grads
//   for m in M-1..0:  backward_module(m, params, grads); // grads[k] accumulate (+=): zero them per step
// Module m reads params[m] only, except the tied head, which reads (and writes the gradient of) the
// embedding's token table: params[0]/grads[0] must then be set too (default_plan puts them in one unit;
// a pipeline's last stage points them at its copy of the table).
//
// Pipeline stages run a contiguous range of modules of one micro-batch (one model per micro-batch in
// flight): set_input(m, x) resumes the forward at module m from the previous stage's output x, and
// output(m) is what module m hands to the next stage; set_output_grad(m, d) resumes the backward at
// module m from the next stage's gradient, and input_grad() is the gradient w.r.t. the input of the last
// module run backward. Zero-bubble schedules split each module's backward: backward_input_module (in
// backward order) computes the input gradient and keeps what backward_weight_module needs, which
// later writes the parameter gradients without reading parameters (Qi et al. 2023); the split runs
// without tensor or context parallelism.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "core/model_spec.h"
#include "core/plan_settings.h"
#include "executor/model/block.h"
#include "executor/model/module_driver.h"
#include "executor/model/moe_aux_loss.h"
#include "executor/model/op_profiler.h"
#include "executor/model/replicated_grads.h"
#include "executor/runtime/param_layout.h"

namespace fsdpx {

// Run-time choices only: the RoPE base and norm epsilon belong to the model (ModelSpec::rope_theta,
// ModelSpec::norm_eps).
struct ModelOptions {
  // One per block (empty = none everywhere). full keeps only the block input and re-runs the block's
  // forward in backward; selective is treated as none on CPU (the GPU recomputes attention scores,
  // which this reference keeps), so all three give bit-identical gradients.
  std::vector<RecomputeMode> recompute;
  OpProfiler* profiler = nullptr;
  // Tensor / context parallelism: this rank's place and its tp and cp communicators (needed when a
  // degree is > 1). With cp > 1 loss() is the rank's share of the micro-batch mean: the cp ranks' sum.
  ModelParallel parallel;
  ModelComm* comm = nullptr;
  // LoRA (lora.h): base weights frozen (backward writes no gradient into `grads`, which may be null),
  // adapters in the buffers given to set_lora_buffers. tp = 1 and the whole backward only.
  const LoraLayout* lora = nullptr;
  // fp8 training: the blocks' linear GEMMs with torchao's tensorwise recipe emulated (fp8_linear.h); the
  // output head, attention and norms stay in fp32. tp = 1, no LoRA.
  bool fp8 = false;
};

// The host's ops for the sum over tp of the replicated tensors' gradients (replicated_grads.h).
template <class Real>
struct HostGradOps {
  using Elem = Real;
  using Buf = std::vector<Real>;
  using Ctx = ModelComm*;
  static void resize(Buf& b, std::int64_t n) { b.assign(std::size_t(n), Real(0)); }
  static std::int64_t bytes(const Buf& b) { return std::int64_t(b.size() * sizeof(Real)); }
  static Real* data(Buf& b) { return b.data(); }
  static void copy(Ctx, Real* dst, const Real* src, std::int64_t n) { std::copy(src, src + n, dst); }
  static void zero(Ctx, Real* p, std::int64_t n) { std::fill(p, p + n, Real(0)); }
  static void add(Ctx, Real* dst, const Real* src, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] += src[i];
  }
  static void sum_over_tp(Ctx comm, Real* p, std::int64_t n) { comm->all_reduce(ModelAxis::tp, p, n); }
};

template <class Real>
class Transformer {
 public:
  Transformer(const ModelSpec& spec, std::int64_t batch, std::int64_t seq, ModelOptions opts = {});

  const ParamLayout& layout() const { return drv_.layout(); }
  const ModelSpec& spec() const { return spec_; }
  std::int64_t batch() const { return dims_.b; }
  std::int64_t seq() const { return seq_; }

  void set_batch(const std::int32_t* tokens, const std::int32_t* targets);
  void forward_module(int m, std::span<const Real* const> params);
  Real loss() const { return loss_; }
  // Next-token probabilities [B·T, V] (softmax of the logits) after the head's forward, until
  // begin_backward turns them into logit gradients.
  std::span<const Real> probabilities() const { return probs_; }
  void begin_backward(Real dloss = Real(1));
  void backward_module(int m, std::span<const Real* const> params, std::span<Real* const> grads);
  // LoRA: the adapter buffer [lora->total] and its gradient (+=), read and written by later calls.
  void set_lora_buffers(const Real* params, Real* grads) { lora_params_ = params, lora_grads_ = grads; }

  // Pipeline stages (see above). x, dout: [N_local, C]; output and input_grad point at [N_local, C].
  void set_input(int m, const Real* x);
  const Real* output(int m) const;
  void set_output_grad(int m, const Real* dout);
  const Real* input_grad() const { return dres_.data(); }
  void backward_input_module(int m, std::span<const Real* const> params);
  void backward_weight_module(int m, std::span<Real* const> grads);

  // Whole-model helpers on one flat buffer in layout order (layout().total elements).
  Real forward(const Real* params, const std::int32_t* tokens, const std::int32_t* targets);
  void backward(const Real* params, Real* grads, Real dloss = Real(1));
  std::vector<const Real*> module_ptrs(const Real* flat) const;
  std::vector<Real*> module_ptrs(Real* flat) const;

 private:
  void run_backward(int m, std::span<const Real* const> params, std::span<Real* const> grads, GradPass pass);
  void block_module_backward(int m, std::span<const Real* const> params, std::span<Real* const> grads,
                             GradPass pass);
  auto ends(int m, GradPass pass);  // the ends' buffers (ends_sequence.h, model_policy.h)
  BlockContext<Real> block_context(int module);

  ModelSpec spec_;
  ModelOptions opts_;
  ModelParallel par_;
  ModuleDriver<Real, Real> drv_;                   // module order, protocol, pointer lookups
  BlockDims dims_;
  std::int64_t seq_ = 0;                           // whole sequence (dims_.t = seq / cp)
  std::int64_t v_local_ = 0, v_first_ = 0;         // the rank's vocabulary slice
  std::vector<std::int64_t> positions_;            // [T] global positions of the rank's tokens
  std::vector<std::int64_t> cp_positions_;         // [cp, T] every cp rank's (cp > 1)
  std::vector<std::int64_t> shard_positions_;      // [N_local] of its token shard (gpt positions)
  std::vector<std::int64_t> group_columns_;        // kv_heads < tp: query_group_columns
  cpu::RopeTable<Real> rope_;                      // rows = positions_
  std::vector<std::int32_t> tokens_, targets_;     // [B, T]
  std::vector<std::vector<Real>> resid_;           // L+1 × [N_local, C]: embedding output, then each block's output
  std::vector<BlockActs<Real>> acts_;              // per block; empty for blocks that recompute
  BlockActs<Real> recompute_acts_;                 // shared by recomputing blocks
  std::vector<Real> recompute_out_;                // [N_local, C] discarded block output during recompute
  BlockScratch<Real> scratch_;
  Fp8Workspace<Real> fp8_;                         // the rounded GEMM operands (opts_.fp8)
  std::vector<Real> emb_;                          // [N, C] vocabulary-parallel embedding partial (SP)
  std::vector<Real> lnf_, lnf_mean_, lnf_rstd_;    // [N, C] (rank's rows at its shard), [N_local] (LayerNorm only), [N_local]
  std::vector<Real> probs_;                        // [N, V_local] probabilities, then dlogits
  std::vector<Real> ce_stats_;                     // [tp, N, 3] vocabulary-parallel cross-entropy statistics
  std::vector<Real> dres_, dlnf_;                  // [N_local, C] residual-stream gradient, [N, C] final-norm output grad
  ReplicatedGradSum<HostGradOps<Real>> replicated_;  // SP: the replicated tensors' gradient sums
  // Split backward: per block what its weight pass needs (and, for a block that recomputes, the
  // activations it re-materialised) and the embedding output's gradient.
  std::vector<BlockWeightInputs<Real>> kept_;
  std::vector<BlockActs<Real>> kept_acts_;
  std::vector<Real> embedding_dout_;               // [N, C]
  const Real* lora_params_ = nullptr;
  Real* lora_grads_ = nullptr;
  MoeAuxLoss<Real> moe_aux_;                       // MoE models: the load-balancing loss (moe_aux_loss.h)
  Real loss_ = 0, dloss_ = 1;
};

extern template class Transformer<float>;
extern template class Transformer<double>;

}  // namespace fsdpx
