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
// embedding's token table: params[0]/grads[0] must then be set too (default_plan puts them in one unit;
// a pipeline's last stage points them at its copy of the table).
//
// Pipeline stages run a contiguous range of modules of one micro-batch (one model per micro-batch in
// flight): set_input(m, x) resumes the forward at module m from the previous stage's output x, and
// output(m) is what module m hands to the next stage; set_output_grad(m, d) resumes the backward at
// module m from the next stage's gradient, and input_grad() is the gradient w.r.t. the input of the last
// module run backward. Zero-bubble schedules split each module's backward: backward_input_module (in
// backward order) computes the input gradient and keeps what backward_weight_module needs, which
// later writes the parameter gradients without reading parameters (Qi et al. 2023).
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

  // Pipeline stages (see above). x, dout: [N, C]; output and input_grad point at [N, C].
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
  void embedding_forward(std::span<const Real* const> params);
  void head_forward(std::span<const Real* const> params);
  void run_backward(int m, std::span<const Real* const> params, std::span<Real* const> grads, GradPass pass);
  void head_backward(std::span<const Real* const> params, std::span<Real* const> grads, GradPass pass);
  void embedding_backward(std::span<Real* const> grads, GradPass pass);
  void final_norm_forward(const Real* p);
  void final_norm_backward(std::span<const Real* const> params, std::span<Real* const> grads, GradPass pass);
  void block_backward_pass(int m, std::span<const Real* const> params, std::span<Real* const> grads, GradPass pass);
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
  // Split backward: per block what its weight pass needs (and, for a block that recomputes, the
  // activations it re-materialised), the embedding output's gradient, modules awaiting their weight pass.
  std::vector<BlockWeightInputs<Real>> kept_;
  std::vector<BlockActs<Real>> kept_acts_;
  std::vector<Real> embedding_dout_;                // [N, C]
  std::vector<char> weight_pending_;               // per module
  Real loss_ = 0, dloss_ = 1;
  int next_forward_ = -1, next_backward_ = -1;     // protocol state (-1: not allowed)
};

extern template class Transformer<float>;
extern template class Transformer<double>;

}  // namespace fsdpx
