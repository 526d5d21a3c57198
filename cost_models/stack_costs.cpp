// cost_models/stack_costs.cpp — the implementation choices of each training stack (stack_costs.h),
// read from the stacks' code at the versions the published runs used, and the HBM bytes of their
// optimizer passes and FSDP copies. Leaves out gradient pre/post-division (fp32 and bf16 reduce with
// NCCL's AVG in FSDP2; FSDP1's pre-divide is counted) and the accumulation of sharded gradients.
#include "cost_models/stack_costs.h"

#include "core/errors.h"

namespace fsdpx {

// torchtitan (docs/performance.md runs @3faaa1a0d Aug 2024 and @9dec370 Dec 2024):
// - RMSNorm: `self._norm(x.float()).type_as(x) * self.weight`, _norm = x * rsqrt(x.pow(2).mean(-1) + eps)
//   (torchtitan/models/norms.py; norm_type = "rmsnorm" in train_configs/llama3_8b.toml);
// - RoPE: view_as_complex(xq.float()...) * freqs_cis, view_as_real(...).type_as(xq) (models/llama/model.py);
// - Attention projects with separate nn.Linear wq, wk, wv and FeedForward with w1, w3 (not fused);
// - FeedForward: w2(F.silu(w1(x)) * w3(x)); repeat_kv via expand + reshape (a copy when n_rep > 1) and
//   output.transpose(1, 2).contiguous() around F.scaled_dot_product_attention (models/llama/model.py);
//   from v0.2.2 SDPA takes the K and V heads as they are with enable_gqa (torchtitan_repeats_kv,
//   core/framework.h), the output copy stays (models/llama3/model/model.py @v0.2.2);
// - loss: cross_entropy(pred.flatten(0, 1).float(), labels) (train.py; "compiling loss function causes
//   CUDA errors, turning off for now");
// - FSDP2 fully_shard per block (parallelisms/parallelize_llama.py apply_fsdp);
// - AdamW with fused = False, foreach = not fused (torchtitan/optimizer.py, --optimizer.fused default False);
// - context parallelism through torch.distributed.tensor.experimental.context_parallel (train.py
//   create_context_parallel_ctx @9dec370, rotate method "allgather" by default; SDPA flash or efficient);
// - torch.compile per TransformerBlock (apply_compile): Inductor fuses the block's elementwise chains;
//   repeat_kv's expansion and the contiguous copy of SDPA's output remain materialised copies (SDPA and
//   the wo mm are extern kernels that read them), the loss, FSDP and the optimizer stay eager.
// fms-fsdp (IBM; foundation-model-stack/fms-fsdp main_training.py @4ffb9bd builds fms's LLaMA,
// foundation-model-stack fms/models/llama.py and fms/modules/*.py @1e7ba639, 2024-03-13): the same eager
// module code as torchtitan's where fsdpx costs it (LayerNormParameterized with use_high_precision_pow:
// x.float(), pow(2).mean, rsqrt, type_as, * weight; GatedLinearUnit: a(wg(x)) * w1(x); separate query,
// key, value projections; K and V expanded to every query head by unsqueeze/expand/flatten;
// attn.transpose(2, 1).contiguous() after F.scaled_dot_product_attention with is_causal), except RoPE:
// RotaryEmbedding.adjusted_qk (fms/modules/positions.py) views q.float() as pairs and multiplies them
// by the 2x2 rotation matrices with a broadcast (B L H D/2 2 2 in fp32), then .sum(5) and type_as.
// FSDP1, the bf16 loss and torch.compile of the whole model are costed as torchtitan's FSDP2, fp32 loss
// and per-block compile (docs/validation.md, branches val6, fms13 and fms19).
// llm-foundry (scripts/train/benchmarking/submit_benchmarks.py @495218376; MPT modeling_mpt.py):
// - norm_type = 'low_precision_layernorm' (F.layer_norm in bf16, one kernel), GELU one kernel, no RoPE;
// - loss_fn default 'fused_crossentropy': flash_attn.losses.cross_entropy.CrossEntropyLoss (Triton);
// - Composer FSDP1 (FullyShardedDataParallel, MP mode DEFAULT: bf16 params, fp32 reduce);
// - DecoupledAdamW: a per-parameter loop of elementwise ops (composer/optim/decoupled_weight_decay.py).
// Megatron-LM / NeMo: Transformer Engine fused norms, fused RoPE and bias-SwiGLU, flash attention with
// native GQA, the distributed optimizer's contiguous buffers and apex/TE FusedAdam; the vocab-parallel
// loss works on an fp32 copy (megatron/core/tensor_parallel/cross_entropy.py). Their published
// performance runs overlap the sequence-parallel TP collectives with the GEMMs through TE's userbuffers:
// Megatron-LM's README @core_r0.8.0 ("tensor-parallel (`--tp-comm-overlap`)" for its H100 scaling
// tables) and NVIDIA/dgxc-benchmarking @35a9aec (ub_tp_comm_overlap: true in llama3.1_{70b,405b}.yaml,
// gpt3_175b_hydra.yaml, nemotron4-15b-synth.yaml; false in nemotron4-340b-synth.yaml).
// fsdpx's executor: fused norm, RoPE and activation kernels, llm.c's fused classifier, flat FSDP units
// (executor/cuda_backend/cuda_unit.h) and one fused AdamW kernel (executor/cuda/adamw.h).
StackCosts stack_costs(Framework f, bool compiled, std::string_view version) {
  StackCosts s;
  switch (f) {
    case Framework::fsdpx: return s;
    case Framework::torchtitan:
    case Framework::fms_fsdp:
      s.attention_copies = true;
      s.repeat_kv = f == Framework::fms_fsdp || torchtitan_repeats_kv(version);
      s.separate_projections = true;
      s.loss = LossImpl::eager_fp32;
      s.fsdp = FsdpImpl::fsdp2;
      s.optimizer = OptimizerImpl::foreach;
      s.torch_ring_attention = true;
      if (!compiled) {
        s.norm = NormImpl::eager_fp32;
        s.rope = f == Framework::fms_fsdp ? RopeImpl::eager_rotation_matrix : RopeImpl::eager_complex;
        s.unfused_swiglu = true;
      }
      return s;
    case Framework::llm_foundry:
      s.fsdp = FsdpImpl::fsdp1;
      s.optimizer = OptimizerImpl::foreach;
      return s;
    case Framework::megatron:
      s.loss = LossImpl::eager_fp32;
      s.te_tp_overlap = true;
      // Megatron-Core's Transformer Engine layer spec builds linear_qkv and linear_fc1 as
      // TELayerNormColumnParallelLinear (megatron/core/models/gpt/gpt_layer_specs.py).
      s.te_layernorm_linear = true;
      return s;
  }
  FSDP_CHECK(false, "unknown framework");
  return s;
}

namespace {
constexpr double kFp32 = 4;
}

// Fused: read param, grad, m, v; write param, m, v (and the low-precision copy where one is kept).
// Unfused (torch/optim/adamw.py _multi_tensor_adamw, one kernel per line; a per-parameter loop runs
// the same ops): lerp_(m, g) r8 w4; mul_(v, b2) r4 w4; addcmul_(v, g, g) r8 w4; sqrt(v) r4 w4;
// div_(bias correction) r4 w4; add_(eps) r4 w4; addcdiv_(p, m, denom) r12 w4; weight decay mul_(p)
// r4 w4 — fp32 state, `grad_bytes` for each gradient read.
double optimizer_bytes_per_param(OptimizerImpl impl, double grad_bytes, double low_precision_copy_bytes,
                                 bool weight_decay) {
  if (impl == OptimizerImpl::fused) return 3 * kFp32 + grad_bytes + 3 * kFp32 + low_precision_copy_bytes;
  const double moments = (kFp32 + grad_bytes + kFp32) + (2 * kFp32) + (kFp32 + 2 * grad_bytes + kFp32);
  const double update = 3 * (2 * kFp32) + (3 * kFp32 + kFp32);
  const double decay = weight_decay ? 2 * kFp32 : 0;
  return moments + update + decay + low_precision_copy_bytes;
}

// clip_grad_norm_: the norm reads every gradient once (torch._foreach_norm, or apex's
// multi_tensor_l2norm), then the gradients are scaled by the clip coefficient (_foreach_mul_: read and
// write). fsdpx's AdamW kernel applies the scale as it reads the gradient.
double clip_bytes_per_param(OptimizerImpl impl, double grad_bytes) {
  return impl == OptimizerImpl::fused ? grad_bytes : 3 * grad_bytes;
}

// FSDP2 (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py): _get_param_all_gather_inputs casts
// the fp32 shard to the param dtype with _foreach_copy_ (read master, write param), all_gather_copy_in
// copies it into the all-gather buffer (read, write), and foreach_all_gather_copy_out's
// split_with_sizes_copy copies the gathered buffer into per-parameter tensors on the compute stream
// (read and write every unsharded element). FSDP1 gathers straight into the FlatParameter after casting
// its shard to the low-precision copy (_use_low_precision_shard).
double fsdp_gather_copy_bytes(FsdpImpl impl, double param_bytes, double master_bytes, int shards) {
  FSDP_CHECK(shards >= 1, "fsdp_gather_copy_bytes: shards must be >= 1");
  const double cast_in = (master_bytes + param_bytes) / shards;
  switch (impl) {
    case FsdpImpl::flat: return 0;
    case FsdpImpl::fsdp1: return cast_in;
    case FsdpImpl::fsdp2: return cast_in + 2 * param_bytes / shards + 2 * param_bytes;
  }
  return 0;
}

// FSDP2's foreach_reduce: _chunk_cat of the unsharded gradients into the reduce-scatter input, widening
// to the reduce dtype as it copies (read grad, write reduce). FSDP1: the FlatParameter's gradient is the
// concatenation autograd builds from its views' gradients (SplitWithSizesBackward: read, write),
// _post_backward_hook casts it to the reduce dtype (read, write) and pre-divides it in place by
// _get_gradient_predivide_factor (read, write) before the reduce-scatter (_runtime_utils.py).
double fsdp_reduce_copy_bytes(FsdpImpl impl, double grad_bytes, double reduce_bytes, int shards) {
  FSDP_CHECK(shards >= 1, "fsdp_reduce_copy_bytes: shards must be >= 1");
  if (shards == 1) return 0;
  switch (impl) {
    case FsdpImpl::flat: return 0;
    case FsdpImpl::fsdp2: return grad_bytes + reduce_bytes;
    case FsdpImpl::fsdp1: {
      const double cast = grad_bytes != reduce_bytes ? grad_bytes + reduce_bytes : 0;
      return 2 * grad_bytes + cast + 2 * reduce_bytes;
    }
  }
  return 0;
}

}  // namespace fsdpx
