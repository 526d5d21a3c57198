// executor/cuda_backend/cuda_block.h — one pre-norm transformer block on the device: the CPU block's
// kernel-call sequence (executor/model/block_sequence.h, run over cuda_block_policy.h) on T activations
// and parameters (bf16, or f16 for fp16 plans), fp32 norm statistics, attention log-sum-exp and parameter
// gradients. Attention is the flash kernel, so a block saves lse [B, NH, T] where the CPU saves
// probabilities. With a profiler in the context, each kernel group is timed under the CPU block's names.
// With LoRA (CudaBlockContext::lora) the adapters add to the projections' outputs (cuda_lora.h) and the
// frozen base gets no gradient. Leaves out dropout, selective recompute and fused residual + norm kernels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "core/model_spec.h"
#include "executor/cuda/attention.h"
#include "executor/cuda/bias.h"
#include "executor/cuda/gemm.h"
#include "executor/cuda/norm.h"
#include "executor/cuda/types.h"
#include "executor/cuda_backend/cuda_lora.h"
#include "executor/cuda_backend/cuda_mla_buffers.h"
#include "executor/cuda_backend/cuda_model_comm.h"
#include "executor/cuda_backend/cuda_moe_buffers.h"
#include "executor/cuda_backend/cuda_op_timer.h"
#include "executor/cuda_backend/device_buffer.h"
#include "executor/model/block_buffers.h"
#include "executor/model/block_context.h"
#include "executor/model/block_dims.h"
#include "executor/model/block_sequence.h"  // GradPass
#include "executor/model/moe_dims.h"
#include "executor/model/op_profiler.h"
#include "executor/model/tp_region.h"
#include "executor/runtime/param_layout.h"

namespace fsdpx::cuda {

// The device's block buffers (executor/model/block_buffers.h): T activations on the device, fp32 norm
// statistics; the flash attention keeps its row log-sum-exp [B, NH, T] (the CPU its probabilities)
// and its backward works in an fp32 delta [B·NH·T]; the norms' and biases' backward kernels sum their
// weight gradients in chunked fp32 scratch, so a split backward keeps the norms' weight gradients (the
// norm kernels compute them with their input gradient). LoRA keeps u [adapters, N, r] (lora_saved_elems).
template <class T>
struct CudaBlockBuffers {
  template <class X>
  using Buffer = DeviceBuffer<X>;
  using E = T;
  using S = float;
  using Lora = DeviceBuffer<T>;
  using MoeActs = CudaMoeActs<T>;  // host routing, device rows (cuda_moe_mlp.h)
  using MoeScratch = CudaMoeScratch<T>;
  using MlaActs = CudaMlaActs<T>;  // the chains and padded qkv (cuda_mla_attention.h)
  using MlaScratch = CudaMlaScratch<T>;
  static constexpr bool kKeepsNormGrads = true;

  template <class X>
  static void alloc(DeviceBuffer<X>& b, std::int64_t n) { b = DeviceBuffer<X>(n); }
  template <class X>
  static std::int64_t bytes(const DeviceBuffer<X>& b) { return b.bytes(); }
  template <class Moe, class Mla>
  static std::int64_t parts_bytes(const Moe& moe, const Mla& mla) { return moe.bytes() + mla.bytes(); }
  static std::int64_t attention_keep_elems(const BlockDims& d) { return flash_attention_lse_elems(d.attn); }
  static std::int64_t attention_scratch_elems(const BlockDims& d) { return flash_attention_scratch_elems(d.attn); }
  static std::int64_t norm_scratch_elems(const BlockDims& d) { return norm_backward_scratch_elems(d.n, d.c); }
  static std::int64_t bias_scratch_elems(const BlockDims& d) {
    return bias_backward_scratch_elems(d.n, std::max({d.qkv, d.c, d.fu}));
  }
};
template <class T>
using CudaBlockActs = BlockActsT<CudaBlockBuffers<T>>;
template <class T>
using CudaBlockScratch = BlockScratchT<CudaBlockBuffers<T>>;
template <class T>
using CudaBlockWeightGrads = BlockWeightInputsT<CudaBlockBuffers<T>>;

// The shared context (executor/model/block_context.h: the device collectives, cuda_lora.h's adapters;
// with a profiler each kernel group is event-timed, synchronously) and the device's own.
template <class T>
struct CudaBlockContext : BlockContextBase<CudaModelComm, CudaBlockScratch<T>, CudaLoraBlock<T>, float> {
  const float* rope_cos = nullptr;  // [T, HD/2] fp32 (latent attention: [T, qk_rope_head_dim/2]); both null
  const float* rope_sin = nullptr;  // for gpt (no RoPE); both from spec->rope_theta
  GemmContext* gemm = nullptr;
  cudaStream_t stream = nullptr;
  // cp > 1 (device int64): the rank's query positions [T] and, per row of kv_gathered, its row in kv_full.
  const std::int64_t* q_pos = nullptr;
  const std::int64_t* cp_rows = nullptr;
  bool tensor_core_attention = false;  // CudaModelOptions::tensor_core_attention
};

// Times the kernels a scope enqueues on the block's stream under `op` with the context's profiler
// (cuda_op_timer.h): the block policy's timer, also its MoE and latent-attention parts'.
template <class T>
CudaScopedOp timed(const CudaBlockContext<T>& ctx, std::string_view op) {
  return CudaScopedOp(ctx.profiler, op, ctx.module, ctx.stream);
}

// Pointers to one block's tensors inside its T parameter buffer; absent tensors are null. (The fp32
// gradient pointers come from block_tensors<float*> of executor/model/block_dims.h.)
template <class T>
BlockTensors<const T*> block_params16(const ModuleLayout& m, const T* base);

// x_in [N, C] -> x_out [N, C] (T); fills `acts`. x_out must not alias x_in.
template <class T>
void cuda_block_forward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p, const T* x_in,
                        T* x_out, CudaBlockActs<T>& acts);

// dres [N, C] (T): gradient w.r.t. x_out on entry, w.r.t. x_in on exit. Parameter gradients (fp32)
// accumulate (+=); a null gradient pointer (LoRA's frozen base) skips that tensor's gradient. Zero
// bubble's split, as the CPU's block_backward: GradPass::input updates dres and fills `keep` (no
// parameter gradient); GradPass::weight, later, writes the parameter gradients from `acts` and `keep`
// (reads no parameters, x_in or dres).
template <class T>
void cuda_block_backward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p,
                         const BlockTensors<float*>& g, const T* x_in, const CudaBlockActs<T>& acts, T* dres,
                         CudaBlockScratch<T>& scratch, GradPass pass = GradPass::all,
                         CudaBlockWeightGrads<T>* keep = nullptr);

// The arch's norm (RMSNorm for llama, LayerNorm for gpt), shared with the final norm. mean is unused
// (may be null) for RMSNorm; bias and dbias are null for RMSNorm. Backward: dinp (T) +=, dw, db +=.
template <class T>
void norm_forward16(const CudaBlockContext<T>& ctx, T* out, float* mean, float* rstd, const T* inp,
                       const T* w, const T* b);
template <class T>
void norm_backward16(const CudaBlockContext<T>& ctx, T* dinp, float* dw, float* db, float* scratch,
                        const T* dout, const T* inp, const T* w, const float* mean, const float* rstd);

}  // namespace fsdpx::cuda
