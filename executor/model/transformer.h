// executor/model/transformer.h — the CPU reference model (llama or gpt from a ModelSpec) with a
// hand-written backward, driven module by module so an FSDP runtime can all-gather a unit before its
// modules run and reduce-scatter its gradients after. Parameters and gradients are external flat
// buffers per module (executor/runtime/param_layout.h); the model owns only activations.
// Leaves out dropout, ignore-index tokens, KV caches and tensor parallelism.
//
// Protocol for one micro-batch:
//   set_batch(tokens, targets);                          // [B, T] each, int32
//   for m in 0..M-1:  forward_module(m, params);         // params[k]: module k's buffer or null
//   loss();                                              // mean cross-entropy over B·T tokens
//   begin_backward(dloss);                               // e.g. 1/(grad_accum·dp) for averaged grads
//   for m in M-1..0:  backward_module(m, params, grads); // grads[k] accumulate (+=): zero them per step
// Module m reads params[m] only, except the tied head, which reads (and writes the gradient of) the
// embedding's token table: params[0]/grads[0] must then be set too (default_plan puts them in one unit).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/model_spec.h"
#include "core/plan.h"
#include "executor/model/block.h"
#include "executor/model/op_profiler.h"
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
};

template <class Real>
class Transformer {
 public:
  Transformer(const ModelSpec& spec, std::int64_t batch, std::int64_t seq, ModelOptions opts = {});

  const ParamLayout& layout() const { return layout_; }
  const ModelSpec& spec() const { return spec_; }
  std::int64_t batch() const { return dims_.b; }
  std::int64_t seq() const { return dims_.t; }

  void set_batch(const std::int32_t* tokens, const std::int32_t* targets);
  void forward_module(int m, std::span<const Real* const> params);
  Real loss() const { return loss_; }
  void begin_backward(Real dloss = Real(1));
  void backward_module(int m, std::span<const Real* const> params, std::span<Real* const> grads);

  // Whole-model helpers on one flat buffer in layout order (layout().total elements).
  Real forward(const Real* params, const std::int32_t* tokens, const std::int32_t* targets);
  void backward(const Real* params, Real* grads, Real dloss = Real(1));
  std::vector<const Real*> module_ptrs(const Real* flat) const;
  std::vector<Real*> module_ptrs(Real* flat) const;

 private:
  void embedding_forward(std::span<const Real* const> params);
  void head_forward(std::span<const Real* const> params);
  void head_backward(std::span<const Real* const> params, std::span<Real* const> grads);
  void embedding_backward(std::span<Real* const> grads);
  void final_norm_forward(const Real* p);
  void final_norm_backward(const Real* p, Real* g);
  BlockContext<Real> block_context(int module) const;
  bool recomputes(std::int64_t block) const;
  const Real* module_base(std::span<const Real* const> params, int module) const;
  Real* module_base(std::span<Real* const> grads, int module) const;
  const Real* tensor(std::span<const Real* const> params, int module, const char* name) const;
  Real* tensor(std::span<Real* const> grads, int module, const char* name) const;

  ModelSpec spec_;
  ModelOptions opts_;
  ParamLayout layout_;
  BlockDims dims_;
  cpu::RopeTable<Real> rope_;
  std::vector<std::int32_t> tokens_, targets_;     // [B, T]
  std::vector<std::vector<Real>> resid_;           // L+1 × [N, C]: embedding output, then each block's output
  std::vector<BlockActs<Real>> acts_;              // per block; empty for blocks that recompute
  BlockActs<Real> recompute_acts_;                 // shared by recomputing blocks
  std::vector<Real> recompute_out_;                // [N, C] discarded block output during recompute
  BlockScratch<Real> scratch_;
  std::vector<Real> lnf_, lnf_mean_, lnf_rstd_;    // [N, C], [N] (LayerNorm only), [N]
  std::vector<Real> probs_;                        // [N, V] probabilities, then dlogits
  std::vector<Real> dres_, dlnf_;                  // [N, C] residual-stream gradient, final-norm output grad
  Real loss_ = 0, dloss_ = 1;
  int next_forward_ = -1, next_backward_ = -1;     // protocol state (-1: not allowed)
};

extern template class Transformer<float>;
extern template class Transformer<double>;

}  // namespace fsdpx
