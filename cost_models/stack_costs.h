// cost_models/stack_costs.h — what a training stack runs around the model's matrix math, as the cost
// models need it: how norms, RoPE and SwiGLU are implemented (one fused kernel, or eager PyTorch's
// chain of elementwise kernels with fp32 intermediates), whether attention layout copies surround SDPA,
// how the loss is computed, which FSDP implementation copies parameters and gradients around its
// collectives, and how the optimizer and gradient clipping walk the state. Sources per stack in
// stack_costs.cpp. Leaves out host-side costs (kernel launches, Python); of float8 only which module
// owns the norm.
#pragma once

#include <string_view>

#include "core/framework.h"

namespace fsdpx {

enum class NormImpl {
  fused,       // one kernel per pass (Transformer Engine, MPT's low_precision_layernorm, fsdpx, Inductor)
  eager_fp32,  // torchtitan's RMSNorm: x.float(), pow, mean, +eps, rsqrt, mul, type_as, * weight
};
enum class RopeImpl {
  fused,          // one kernel over Q and K
  eager_complex,  // torchtitan: view_as_complex(x.float()) * freqs_cis, view_as_real, type_as
  eager_rotation_matrix,  // fms: x.float() as pairs, times 2x2 rotation matrices (two fp32 products per
                          // element), .sum(5), type_as
};
enum class LossImpl {
  fused,       // one pass over the logits each way (flash-attn's Triton cross-entropy, llm.c's classifier)
  eager_fp32,  // F.cross_entropy(logits.float(), labels): fp32 copy, log_softmax, nll and their backward
};
enum class FsdpImpl {
  flat,   // all-gather into and reduce-scatter from the unit's own buffers (fsdpx, Megatron)
  fsdp2,  // fully_shard: all-gather copy-in and copy-out, reduce-scatter copy-in with the dtype cast
  fsdp1,  // FlatParameter: gradient concatenation by autograd, cast to the reduce dtype, pre-divide
};
enum class OptimizerImpl {
  fused,    // one pass over param, grad, m, v (apex / TE FusedAdam, torch fused=True, fsdpx)
  foreach,  // torch.optim.AdamW(foreach=True) or a per-parameter loop: one pass per elementwise op
};

// Sharded gradients that exist only from a unit's first reduction of the step: FSDP2's foreach_reduce
// assigns the reduce-scatter output as the sharded .grad (pytorch/pytorch torch/distributed/fsdp/
// _fully_shard/_fsdp_collectives.py) and optimizer.zero_grad() drops it after the step (torch/optim/
// optimizer.py, set_to_none=True by default; torchtitan's OptimizersContainer.zero_grad calls it).
inline bool sharded_grads_from_reduction(FsdpImpl f) { return f == FsdpImpl::fsdp2; }

struct StackCosts {
  NormImpl norm = NormImpl::fused;
  RopeImpl rope = RopeImpl::fused;
  bool unfused_swiglu = false;    // silu(w1 x) and its product with w3 x as two kernels
  bool separate_projections = false;  // wq, wk, wv (and w1, w3) as separate GEMMs, not one fused GEMM;
                                      // backward sums their input gradients
  bool attention_copies = false;  // SDPA's output is made contiguous with transpose(1, 2).contiguous()
  bool repeat_kv = false;         // repeat_kv expands K and V to every query head before SDPA
  LossImpl loss = LossImpl::fused;
  FsdpImpl fsdp = FsdpImpl::flat;
  OptimizerImpl optimizer = OptimizerImpl::fused;
  // Sequence-parallel TP collectives overlap the block's GEMMs through Transformer Engine's userbuffers
  // (tp_overlap.h) instead of running between them.
  bool te_tp_overlap = false;
  // The attention and MLP input projections are Transformer Engine LayerNormLinear modules: the norm
  // runs inside them and, under fp8, can write its output in fp8 (compute_fp8.cpp).
  bool te_layernorm_linear = false;
  // Context parallelism through PyTorch's experimental ring attention (torch/distributed/tensor/
  // experimental/_attention.py): one SDPA per KV chunk, the partial outputs merged in fp32 and the
  // gradients accumulated in fp32 (cost_models/ring_attention.cpp). Only read when cp > 1.
  bool torch_ring_attention = false;
};

// `version`: the stack's version where its code differs (core/framework.h framework_versions); empty
// when not stated.
StackCosts stack_costs(Framework f, bool compiled, std::string_view version = {});

// HBM bytes per parameter of the local shard for one AdamW step (fp32 master, m, v; the gradient in
// `grad_bytes` per element) and for gradient-norm clipping.
double optimizer_bytes_per_param(OptimizerImpl impl, double grad_bytes, double low_precision_copy_bytes,
                                 bool weight_decay);
double clip_bytes_per_param(OptimizerImpl impl, double grad_bytes);

// HBM bytes of an FSDP implementation's copies around one unit's collectives, per unsharded parameter
// (`param_bytes`, `grad_bytes`: the all-gather and unsharded-gradient element sizes; `reduce_bytes` the
// reduce-scatter element size; `master_bytes` the sharded parameter's; `shards` the dp_shard degree).
// Before the consumer of an all-gather: copy-in of the shard and copy-out into per-parameter tensors.
double fsdp_gather_copy_bytes(FsdpImpl impl, double param_bytes, double master_bytes, int shards);
// After the backward that produced a unit's gradients, before its reduce-scatter.
double fsdp_reduce_copy_bytes(FsdpImpl impl, double grad_bytes, double reduce_bytes, int shards);

}  // namespace fsdpx
