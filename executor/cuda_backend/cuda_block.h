// executor/cuda_backend/cuda_block.h — one pre-norm transformer block on the device: the CPU block's
// kernel-call sequence (executor/model/block_sequence.h, run over cuda_block_policy.h) on T activations
// and parameters (bf16, or f16 for fp16 plans), fp32 norm statistics, attention log-sum-exp and parameter
// gradients. Attention is the flash kernel, so a block saves lse [B, NH, T] where the CPU saves
// probabilities. With a profiler in the context, each kernel group is timed under the CPU block's names.
// With LoRA (CudaBlockContext::lora) the adapters add to the projections' outputs (cuda_lora.h) and the
// frozen base gets no gradient. Leaves out dropout, selective recompute and fused residual + norm kernels.
#pragma once

#include <cstdint>

#include "core/model_spec.h"
#include "executor/cuda/gemm.h"
#include "executor/cuda/types.h"
#include "executor/cuda_backend/cuda_lora.h"
#include "executor/cuda_backend/cuda_mla_buffers.h"
#include "executor/cuda_backend/cuda_model_comm.h"
#include "executor/cuda_backend/cuda_moe_buffers.h"
#include "executor/cuda_backend/device_buffer.h"
#include "executor/model/block_dims.h"
#include "executor/model/block_sequence.h"  // GradPass
#include "executor/model/moe_dims.h"
#include "executor/model/op_profiler.h"
#include "executor/model/tp_region.h"
#include "executor/runtime/param_layout.h"

namespace fsdpx::cuda {

// Activations one block keeps from its forward to its backward (llm.c ActivationTensors per layer). Under
// sequence parallelism the norm outputs ln1, ln2 hold all N tokens (gathered for the GEMMs); statistics
// and x_mid the rank's N_local tokens, as the CPU block's BlockActs.
template <class T>
struct CudaBlockActs {
  DeviceBuffer<T> ln1;                  // [N, C] attn_norm output (qkv input)
  DeviceBuffer<float> ln1_mean, ln1_rstd;  // [N] (mean: LayerNorm only, else empty), [N]
  DeviceBuffer<T> qkv;                  // [N, QKV] after RoPE
  DeviceBuffer<float> lse;                 // [B, NH, T] attention row log-sum-exp
  DeviceBuffer<T> atty;                 // [N, Q] attention output (attn_out input)
  DeviceBuffer<T> x_mid;                // [N, C] residual stream after attention
  DeviceBuffer<T> ln2;                  // [N, C] mlp_norm output (mlp_up input)
  DeviceBuffer<float> ln2_mean, ln2_rstd;  // [N] (LayerNorm only), [N]
  DeviceBuffer<T> fc;                   // [N, FU] mlp_up output (pre-activation)
  DeviceBuffer<T> fc_act;               // [N, F] activation output (mlp_down input)
  DeviceBuffer<T> lora_u;               // [adapters, N, r] u = x Aᵀ per adapter (LoRA only)
  CudaMoeActs<T> moe;  // an MoE block's MLP: host routing, device rows (allocated by its model; cuda_moe_mlp.h)
  CudaMlaActs<T> mla;  // latent attention's chains and padded qkv (allocated by its model; cuda_mla_attention.h)
  void allocate(const BlockDims& d, std::int64_t lora_u_elems = 0);  // lora_saved_elems
  std::int64_t bytes() const;  // 0 when not allocated
};

// Backward scratch shared by all blocks (and the final norm), overwritten per block.
template <class T>
struct CudaBlockScratch {
  DeviceBuffer<T> dln, datty, dqkv, dfc, dfc_act;  // [N, C], [N, Q], [N, QKV], [N, FU], [N, F]
  DeviceBuffer<float> attn;  // [B·NH·T] flash backward delta (flash_attention_scratch_elems)
  DeviceBuffer<float> norm;  // [norm_backward_scratch_elems(N, C)] chunked dweight/dbias partial sums
  DeviceBuffer<float> bias;  // [bias_backward_scratch_elems(N, max(QKV, C, FU))]; empty without biases
  DeviceBuffer<T> lora_du;  // [N, r] an adapter's du (LoRA only)
  // Sequence parallelism: [N, C] a row-parallel GEMM's partial output (forward) and the gathered output
  // gradient (backward), as the CPU block's BlockScratch::wide; empty otherwise.
  DeviceBuffer<T> wide;
  // Context parallelism (cp > 1): the K and V of the rank's tokens [N, KVW] (KVW = 2·KV_local), every cp
  // rank's [cp·N, KVW] in rank order, and in sequence order [B·T_kv, KVW] with their gradients.
  DeviceBuffer<T> kv_local, kv_gathered, kv_full, dkv_full;
  CudaMoeScratch<T> moe;  // MoE blocks (allocated by the model; cuda_moe_mlp.h)
  CudaMlaScratch<T> mla;  // latent attention (allocated by the model; cuda_mla_attention.h)
  void allocate(const BlockDims& d, bool has_bias, std::int64_t lora_rank = 0);
  std::int64_t bytes() const;
};

// What zero bubble's weight pass of one block reads, kept by its input pass (Qi et al. 2023, §2: W
// needs each linear's output gradient and input): the output gradients of mlp_down (d x_out), mlp_up
// (dfc), attn_out (d x_mid) and qkv (after RoPE's backward), and the micro-batch's norm gradients
// [attn_norm w, b, mlp_norm w, b] × C (fp32), which the norm kernels compute with their input gradient.
template <class T>
struct CudaBlockWeightGrads {
  DeviceBuffer<T> d_out, d_mid, dfc, dqkv;  // [N, C], [N, C], [N, FU], [N, QKV]
  DeviceBuffer<float> norm;                    // [4·C]
  void allocate(const BlockDims& d);
  std::int64_t bytes() const;  // 0 when not allocated
};

template <class T>
struct CudaBlockContext {
  const ModelSpec* spec = nullptr;
  BlockDims dims;
  const float* rope_cos = nullptr;  // [T, HD/2] fp32 (latent attention: [T, qk_rope_head_dim/2]); both null
  const float* rope_sin = nullptr;  // for gpt (no RoPE); both from spec->rope_theta; the norms use spec->norm_eps
  GemmContext* gemm = nullptr;
  cudaStream_t stream = nullptr;
  OpProfiler* profiler = nullptr;  // null: no timing; else each kernel group is event-timed (synchronous)
  int module = -1;                 // ParamLayout index reported with each kernel time
  CudaLoraBlock<T> lora;              // the block's adapters (layout null: no LoRA)
  // Tensor parallelism (tp > 1): qkv and mlp_up column-parallel, attn_out and mlp_down row-parallel,
  // each half one region of executor/model/tp_region.h over the model's device collectives.
  ModelParallel par;
  CudaModelComm* comm = nullptr;
  CudaBlockScratch<T>* scratch = nullptr;  // the forward's `wide` and `kv_*` buffers
  // cp > 1 (device int64): the rank's query positions [T] and, per row of kv_gathered, its row in kv_full.
  const std::int64_t* q_pos = nullptr;
  const std::int64_t* cp_rows = nullptr;
  bool tensor_core_attention = false;  // CudaModelOptions::tensor_core_attention
  MoeAuxGrad<float> moe_aux = {};      // MoE blocks: the load-balancing loss's gradient (moe_aux_loss.h)
};

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
