// executor/model/transformer.h — the CPU reference model (llama or gpt from a ModelSpec) with a
// hand-written backward, driven module by module so an FSDP runtime can all-gather a unit before its
// modules run and reduce-scatter its gradients after. Parameters and gradients are external flat
// buffers per module (executor/runtime/param_layout.h); the model owns only activations. Under tensor
// and context parallelism (ModelOptions::parallel) the parameters are the rank's slices, the model
// keeps the rank's part of each sequence and its token shard, and it issues the collectives of
// model_parallel.h (Megatron-LM TP with sequence parallelism; vocabulary-parallel embedding and
// cross-entropy). Leaves out dropout, ignore-index tokens and KV caches.
//
// The protocol of one micro-batch, the pipeline's resume points and zero bubble's split passes are the
// shared driver's (model_driver.h); here: set_batch(tokens, targets) with host [B, T] int32 arrays,
// loss() a host scalar (Σ over the rank's tokens / (B·T), plus the MoE aux loss), set_input and
// set_output_grad copy a received message in. The tied head reads (and writes the gradient of) the
// embedding's token table: params[0]/grads[0] must then be set too (default_plan puts them in one unit;
// a pipeline's last stage points them at its copy of the table). The split runs without tensor or
// context parallelism.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "core/model_spec.h"
#include "core/plan_settings.h"
#include "executor/model/block.h"
#include "executor/model/model_driver.h"
#include "executor/model/model_options.h"
#include "executor/model/model_parallel.h"
#include "executor/model/model_policy.h"
#include "executor/model/op_profiler.h"
#include "executor/runtime/param_layout.h"

namespace fsdpx {

// The CPU's model over the shared driver (model_driver.h): its host buffers, RoPE table, batch, loss
// and the split backward's keeps; ModelDriver runs the modules.
template <class Real>
class Transformer : public ModelDriver<Transformer<Real>, CpuModelPolicy<Real>> {
  using Base = ModelDriver<Transformer<Real>, CpuModelPolicy<Real>>;
  friend Base;

 public:
  Transformer(const ModelSpec& spec, std::int64_t batch, std::int64_t seq, ModelOptions opts = {});

  std::int64_t batch() const { return dims_.b; }
  std::int64_t seq() const { return seq_; }

  void set_batch(const std::int32_t* tokens, const std::int32_t* targets);
  Real loss() const { return loss_; }
  // Next-token probabilities [B·T, V] (softmax of the logits) after the head's forward, until
  // begin_backward turns them into logit gradients.
  std::span<const Real> probabilities() const { return logits_; }

  // Pipeline stages (see above): copy the received x, dout [N_local, C] in.
  void set_input(int m, const Real* x);
  void set_output_grad(int m, const Real* dout);

  // Whole-model helpers on one flat buffer in layout order (layout().total elements).
  Real forward(const Real* params, const std::int32_t* tokens, const std::int32_t* targets);
  void backward(const Real* params, Real* grads, Real dloss = Real(1));
  std::vector<const Real*> module_ptrs(const Real* flat) const;
  std::vector<Real*> module_ptrs(Real* flat) const;

 private:
  using Base::opts_, Base::spec_, Base::par_, Base::drv_, Base::dims_, Base::seq_, Base::positions_, Base::resid_, Base::acts_;
  using Base::recompute_acts_, Base::recompute_out_, Base::scratch_, Base::emb_, Base::lnf_, Base::lnf_mean_;
  using Base::lnf_rstd_, Base::logits_, Base::ce_stats_, Base::dres_, Base::dlnf_, Base::replicated_;
  using Base::moe_aux_, Base::lora_params_, Base::lora_grads_, Base::kept_, Base::kept_acts_, Base::embedding_dout_;

  // ModelDriver's hooks (model_driver.h).
  BlockContext<Real> context(HostStream, int module);
  typename CpuModelPolicy<Real>::Ends ends(int m, GradPass pass);
  BlockActs<Real>& backward_acts(std::int64_t block, GradPass pass);
  void keep_recomputed(std::int64_t block);
  BlockWeightInputs<Real>* weight_inputs(std::int64_t block, GradPass pass);
  std::int64_t own_saved_bytes(int m) const;

  std::vector<std::int64_t> cp_positions_;         // [cp, T] every cp rank's (cp > 1)
  std::vector<std::int64_t> shard_positions_;      // [N_local] of its token shard (gpt positions)
  std::vector<std::int64_t> group_columns_;        // kv_heads < tp: query_group_columns
  cpu::RopeTable<Real> rope_;                      // rows = positions_
  std::vector<std::int32_t> tokens_, targets_;     // [B, T]
  Fp8Workspace<Real> fp8_;                         // the rounded GEMM operands (opts_.fp8)
  Real loss_ = 0;
};

extern template class ModelDriver<Transformer<float>, CpuModelPolicy<float>>;
extern template class ModelDriver<Transformer<double>, CpuModelPolicy<double>>;
extern template class Transformer<float>;
extern template class Transformer<double>;

}  // namespace fsdpx
