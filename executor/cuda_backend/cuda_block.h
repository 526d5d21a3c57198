// executor/cuda_backend/cuda_block.h — one pre-norm transformer block on the device, the bf16 twin of
// executor/model/block.h (same formulas, tensor layout, residual-gradient flow and += parameter
// gradients): bf16 activations and parameters, fp32 norm statistics, attention log-sum-exp and
// parameter gradients. Attention is the flash kernel, so a block saves lse [B, NH, T] where the CPU
// saves probabilities. With a profiler in the context, each kernel group is timed under the CPU block's
// names (executor/model/block.cpp). With LoRA (CudaBlockContext::lora) the adapters add to the qkv,
// attn_out, mlp_up and mlp_down outputs (cuda_lora.h) and the frozen base gets no gradient: null gradient
// pointers skip their dW GEMMs and norm sums. Leaves out dropout, selective recompute and fused
// residual + norm kernels.
#pragma once

#include <cstdint>

#include "core/model_spec.h"
#include "executor/cuda/gemm.h"
#include "executor/cuda/types.h"
#include "executor/cuda_backend/cuda_lora.h"
#include "executor/cuda_backend/device_buffer.h"
#include "executor/model/block.h"
#include "executor/model/op_profiler.h"
#include "executor/runtime/param_layout.h"

namespace fsdpx::cuda {

// Activations one block keeps from its forward to its backward (llm.c ActivationTensors per layer).
struct CudaBlockActs {
  DeviceBuffer<bf16> ln1;                  // [N, C] attn_norm output (qkv input)
  DeviceBuffer<float> ln1_mean, ln1_rstd;  // [N] (mean: LayerNorm only, else empty), [N]
  DeviceBuffer<bf16> qkv;                  // [N, QKV] after RoPE
  DeviceBuffer<float> lse;                 // [B, NH, T] attention row log-sum-exp
  DeviceBuffer<bf16> atty;                 // [N, Q] attention output (attn_out input)
  DeviceBuffer<bf16> x_mid;                // [N, C] residual stream after attention
  DeviceBuffer<bf16> ln2;                  // [N, C] mlp_norm output (mlp_up input)
  DeviceBuffer<float> ln2_mean, ln2_rstd;  // [N] (LayerNorm only), [N]
  DeviceBuffer<bf16> fc;                   // [N, FU] mlp_up output (pre-activation)
  DeviceBuffer<bf16> fc_act;               // [N, F] activation output (mlp_down input)
  DeviceBuffer<bf16> lora_u;               // [adapters, N, r] u = x Aᵀ per adapter (LoRA only)
  void allocate(const BlockDims& d, std::int64_t lora_u_elems = 0);  // lora_saved_elems
  std::int64_t bytes() const;  // 0 when not allocated
};

// Backward scratch shared by all blocks (and the final norm), overwritten per block.
struct CudaBlockScratch {
  DeviceBuffer<bf16> dln, datty, dqkv, dfc, dfc_act;  // [N, C], [N, Q], [N, QKV], [N, FU], [N, F]
  DeviceBuffer<float> attn;  // [B·NH·T] flash backward delta (flash_attention_scratch_elems)
  DeviceBuffer<float> norm;  // [norm_backward_scratch_elems(N, C)] chunked dweight/dbias partial sums
  DeviceBuffer<float> bias;  // [bias_backward_scratch_elems(N, max(QKV, C, FU))]; empty without biases
  DeviceBuffer<bf16> lora_du;  // [N, r] an adapter's du (LoRA only)
  void allocate(const BlockDims& d, bool has_bias, std::int64_t lora_rank = 0);
  std::int64_t bytes() const;
};

// What zero bubble's weight pass of one block reads, kept by its input pass (Qi et al. 2023, §2: W
// needs each linear's output gradient and input): the output gradients of mlp_down (d x_out), mlp_up
// (dfc), attn_out (d x_mid) and qkv (after RoPE's backward), and the micro-batch's norm gradients
// [attn_norm w, b, mlp_norm w, b] × C (fp32), which the norm kernels compute with their input gradient.
struct CudaBlockWeightGrads {
  DeviceBuffer<bf16> dout, dx_mid, dfc, dqkv;  // [N, C], [N, C], [N, FU], [N, QKV]
  DeviceBuffer<float> norm;                    // [4·C]
  void allocate(const BlockDims& d);
  std::int64_t bytes() const;  // 0 when not allocated
};

struct CudaBlockContext {
  const ModelSpec* spec = nullptr;
  BlockDims dims;
  const float* rope_cos = nullptr;  // [T, HD/2] fp32; both null for gpt (no RoPE)
  const float* rope_sin = nullptr;  // both from spec->rope_theta; the norms use spec->norm_eps
  GemmContext* gemm = nullptr;
  cudaStream_t stream = nullptr;
  OpProfiler* profiler = nullptr;  // null: no timing; else each kernel group is event-timed (synchronous)
  int module = -1;                 // ParamLayout index reported with each kernel time
  CudaLoraBlock lora;              // the block's adapters (layout null: no LoRA)
};

// Pointers to one block's tensors inside its bf16 parameter buffer; absent tensors are null. (The fp32
// gradient pointers come from block_tensors<float*> of executor/model/block.h.)
BlockTensors<const bf16*> block_params_bf16(const ModuleLayout& m, const bf16* base);

// x_in [N, C] -> x_out [N, C] (bf16); fills `acts`. x_out must not alias x_in.
void cuda_block_forward(const CudaBlockContext& ctx, const BlockTensors<const bf16*>& p, const bf16* x_in,
                        bf16* x_out, CudaBlockActs& acts);

// dres [N, C] (bf16): gradient w.r.t. x_out on entry, w.r.t. x_in on exit. Parameter gradients (fp32)
// accumulate (+=); a null gradient pointer (LoRA's frozen base) skips that tensor's gradient.
void cuda_block_backward(const CudaBlockContext& ctx, const BlockTensors<const bf16*>& p,
                         const BlockTensors<float*>& g, const bf16* x_in, const CudaBlockActs& acts, bf16* dres,
                         CudaBlockScratch& scratch);

// Zero bubble's split of cuda_block_backward: the input pass (dres as above; no parameter gradient,
// `keep` filled), then, later, the weight pass (parameter gradients +=, from `acts` and `keep`; reads no
// parameters).
void cuda_block_backward_input(const CudaBlockContext& ctx, const BlockTensors<const bf16*>& p, const bf16* x_in,
                               const CudaBlockActs& acts, bf16* dres, CudaBlockScratch& scratch,
                               CudaBlockWeightGrads& keep);
void cuda_block_backward_weight(const CudaBlockContext& ctx, const BlockTensors<float*>& g, const CudaBlockActs& acts,
                                const CudaBlockWeightGrads& keep, CudaBlockScratch& scratch);

// The arch's norm (RMSNorm for llama, LayerNorm for gpt), shared with the final norm. mean is unused
// (may be null) for RMSNorm; bias and dbias are null for RMSNorm. Backward: dinp (bf16) +=, dw, db +=.
void norm_forward_bf16(const CudaBlockContext& ctx, bf16* out, float* mean, float* rstd, const bf16* inp,
                       const bf16* w, const bf16* b);
void norm_backward_bf16(const CudaBlockContext& ctx, bf16* dinp, float* dw, float* db, float* scratch,
                        const bf16* dout, const bf16* inp, const bf16* w, const float* mean, const float* rstd);

}  // namespace fsdpx::cuda
