// executor/cuda_backend/cuda_model.h — the device twin of the CPU reference Transformer
// (executor/model/transformer.h): the same protocol, module order, parameter layout and += gradients,
// on 16-bit (T = bf16, or f16 for fp16 plans) parameters and activations with fp32 statistics, loss and
// parameter gradients. The model owns only activations and scratch, allocated once in the constructor; parameters and gradients are the
// caller's per-module device buffers (an FSDP unit's unsharded buffer at ParamLayout offsets).
// Leaves out dropout, ignore-index targets, vocabulary padding, selective recompute and sharing scratch
// between the models of a pipeline rank's micro-batches in flight.
//
// Protocol for one micro-batch (every call enqueues on `stream` and returns; see CudaModel::set_batch
// for the one bounded host wait, and CudaModelOptions::profiler for the waits of a profiled run):
//   set_batch(tokens, targets, stream);                  // host int32 [B, T] each
//   set_loss_output(loss_device);                        // before the head's forward
//   for m in 0..M-1:  forward_module(m, params, stream); // params[k]: module k's T buffer or null
//   begin_backward(dloss);
//   for m in M-1..0:  backward_module(m, params, grads, stream);  // fp32 grads[k] accumulate (+=)
// A pipeline stage runs a range of modules, as the CPU Transformer: input_buffer(m) is where the previous
// stage's activations for module m are received (the forward resumes at m), output(m) what module m hands
// on; output_grad_buffer(m) is where the next stage's gradient w.r.t. module m's output is received (the
// backward resumes at m), input_grad() the gradient w.r.t. the input of the last module run backward.
// Zero bubble splits each module's backward into backward_input_module (in backward order) and, later,
// backward_weight_module, which writes the parameter gradients without reading parameters.
// All calls of one micro-batch must be ordered on the device (one stream, or the caller's events): the
// activation and scratch buffers are shared between modules. The tied head reads params[0] and writes
// grads[0] (the token table), which must then be set during the head's forward and backward.
// LoRA (CudaModelOptions::lora): set_lora_buffers before the forward (the buffers stay set); the base is frozen,
// so the backward takes null gradient pointers and computes input and adapter gradients only.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/model_spec.h"
#include "core/plan_settings.h"
#include "executor/cuda/gemm.h"
#include "executor/cuda/types.h"
#include "executor/cuda_backend/batch_staging.h"
#include "executor/cuda_backend/cuda_block.h"
#include "executor/cuda_backend/cuda_model_comm.h"
#include "executor/cuda_backend/cuda_replicated_grads.h"
#include "executor/cuda_backend/device_buffer.h"
#include "executor/model/block_dims.h"
#include "executor/model/module_driver.h"
#include "executor/model/moe_aux_loss.h"
#include "executor/model/op_profiler.h"
#include "executor/runtime/param_layout.h"

namespace fsdpx::cuda {

// Run-time choices only, as ModelOptions (executor/model/transformer.h): the RoPE base and norm epsilon
// come from the ModelSpec.
struct CudaModelOptions {
  // One per block (empty = none everywhere). full keeps only the block input and re-runs the block's
  // forward in backward; selective (and selective_op) is treated as none.
  std::vector<RecomputeMode> recompute;
  // Null: nothing is timed. Otherwise every kernel group reports its GPU time (a CUDA event pair) under
  // the CPU model's op names, and each call waits for its kernels (cuda_op_timer.h).
  OpProfiler* profiler = nullptr;
  // The modules this model runs (empty = all): a pipeline rank allocates activations for its stages'
  // modules only.
  std::vector<bool> modules;
  // Zero bubble: keep what each module's weight pass needs (CudaBlockWeightGrads<T> per block; a
  // recomputing block keeps its re-materialised activations from the input pass to the weight pass).
  bool split_backward = false;
  // LoRA (executor/model/lora_layout.h; must outlive the model): the adapters add to the adapted projections
  // (cuda_lora.h), and the base gets no gradient: no dW GEMMs, no norm, embedding or head gradients.
  const LoraLayout* lora = nullptr;
  // Tensor parallelism (Megatron-LM's, as the CPU Transformer runs it: executor/model/tp_region.h,
  // vocab_parallel.h), with or without sequence parallelism: this rank's place and its device collectives
  // (needed when tp > 1). With bf16 (or the emulated float) activations, no biases, no learned positions
  // and kv_heads >= tp for now. Context parallelism likewise (llama, bf16): K and V all-gathered over cp.
  ModelParallel parallel;
  CudaModelComm* comm = nullptr;
  // The attention core on tensor cores (executor/cuda/attention_tc.h; the plan says `tensor_core`), else on
  // CUDA cores (attention.h). Context parallelism runs the CUDA-core context kernels either way (the
  // capabilities row keeps tensor_core plans to cp 1).
  bool tensor_core_attention = false;
};

template <class T>
class CudaModelT {
 public:
  // Allocates every activation and scratch buffer (cudaMalloc) and uploads the RoPE tables (a
  // synchronous copy). `gemm` must outlive the model; its workspace is used on the calls' streams.
  CudaModelT(const ModelSpec& spec, std::int64_t batch, std::int64_t seq, CudaModelOptions opts, GemmContext& gemm);
  CudaModelT(const CudaModelT&) = delete;
  CudaModelT& operator=(const CudaModelT&) = delete;

  const ParamLayout& layout() const { return drv_.layout(); }
  const ModelSpec& spec() const { return spec_; }

  // tokens, targets: host int32 [B·T] of the whole sequences (checked to lie in [0, vocab)); with cp > 1
  // the model takes its rank's tokens. Builds the embedding buckets on
  // the host and copies everything to the device on `stream` through pinned staging (BatchStaging): the
  // host arrays may be reused right after return. The only host wait: for the staging copy of two
  // set_batch calls ago.
  void set_batch(const std::int32_t* tokens, const std::int32_t* targets, cudaStream_t stream);
  // The head's forward writes the micro-batch's mean cross-entropy to *loss_device (fp32, device).
  void set_loss_output(float* loss_device);
  // LoRA: the whole model's adapters, T [lora->total] (read in forward and backward) and their fp32
  // gradient (accumulated in backward), in the flat layout of executor/model/lora_layout.h.
  void set_lora_buffers(const T* params, float* grads);
  // params[k]: module k's T device buffer in ParamLayout order, or null when not needed now.
  void forward_module(int m, std::span<const T* const> params, cudaStream_t stream);
  void begin_backward(float dloss);
  // grads[k]: module k's fp32 device gradient buffer (same layout); parameter gradients accumulate.
  // With LoRA every grads[k] is null (a frozen base).
  void backward_module(int m, std::span<const T* const> params, std::span<float* const> grads,
                       cudaStream_t stream);
  void backward_input_module(int m, std::span<const T* const> params, cudaStream_t stream);
  void backward_weight_module(int m, std::span<float* const> grads, cudaStream_t stream);

  // Pipeline stages (see above); every buffer holds boundary_elems() T values [N, C].
  std::int64_t boundary_elems() const { return dims_.n_local * dims_.c; }
  T* input_buffer(int m);
  const T* output(int m) const;
  T* output_grad_buffer(int m);
  const T* input_grad() const { return dres_.get(); }

  // Device bytes kept from module m's forward to its backward: its output (embedding, blocks), a
  // block's CudaBlockActs<T> unless it recomputes, the final norm's output and statistics, the head's
  // logits and row losses. working_bytes: everything else the model owns (residual gradients, backward
  // scratch, the shared recompute activations, batch arrays, RoPE tables); the GemmContext workspace and
  // pinned host staging are not counted.
  // weight_pass_bytes: what a split backward keeps from module m's input pass to its weight pass.
  std::int64_t saved_bytes(int module) const;
  std::int64_t weight_pass_bytes(int module) const;
  std::int64_t working_bytes() const;

 private:
  void block_module_backward(int m, std::span<const T* const> params, std::span<float* const> grads,
                      cudaStream_t stream);
  CudaBlockContext<T> context(cudaStream_t stream, int module);
  auto ends();  // the ends' buffers (executor/model/ends_sequence.h, cuda_model_policy.h)
  bool runs(int module) const;
  void allocate_activations();
  // Block i's activations for its backward: the shared recompute buffers unless a split backward keeps them.
  CudaBlockActs<T>& backward_acts(std::int64_t block);
  void run_backward(int m, std::span<const T* const> params, std::span<float* const> grads, cudaStream_t stream);
  void weight_pass(int m, std::span<float* const> grads, cudaStream_t stream);

  ModelSpec spec_;
  CudaModelOptions opts_;
  ModuleDriver<T, float> drv_;               // module order, protocol, pointer lookups
  BlockDims dims_;
  GemmContext* gemm_;
  DeviceBuffer<float> rope_cos_, rope_sin_;  // [T, HD/2] each (llama) at the rank's positions, empty for gpt
  DeviceBuffer<std::int64_t> q_pos_, cp_rows_;  // cp > 1: the rank's positions [T]; context_rows [cp·N]
  std::int64_t seq_ = 0;                     // whole sequence (dims_.t = seq / cp)
  std::vector<std::int64_t> positions_;      // [T] the rank's tokens' global positions
  BatchStaging batch_;                       // tokens, targets, embedding buckets on the device
  std::vector<DeviceBuffer<T>> resid_;    // L+1 × [N, C]: embedding output, then each block's output
  std::vector<CudaBlockActs<T>> acts_;          // per block; unallocated for blocks that recompute (or not run)
  std::vector<CudaBlockWeightGrads<T>> keep_;   // per block, split backward only
  DeviceBuffer<float> lnf_keep_;             // [2·C] the final norm's gradients, split backward only
  CudaBlockActs<T> recompute_acts_;             // shared by recomputing blocks (forward and recompute)
  DeviceBuffer<T> recompute_out_;         // [N, C] discarded block output during recompute
  CudaBlockScratch<T> scratch_;
  DeviceBuffer<T> lnf_;                   // [N, C] final norm output (head input)
  DeviceBuffer<float> lnf_mean_, lnf_rstd_;  // [N] (LayerNorm only, else empty), [N]
  DeviceBuffer<T> logits_;                // [N, V_local] logits; dlogits in place during the head's backward
  DeviceBuffer<float> losses_;               // [N] per-token cross-entropy
  DeviceBuffer<float> loss_scratch_;         // [1] mean loss that the backward classifier call rewrites
  std::int64_t v_local_ = 0, v_first_ = 0;   // the rank's vocabulary slice (tp > 1)
  DeviceBuffer<float> ce_stats_;             // [tp, N, 3] every tp rank's cross-entropy statistics (tp > 1)
  DeviceBuffer<T> emb_;                      // [N, C] the embedding's partial output / gathered gradient (SP)
  DeviceReplicatedGradSum replicated_;       // SP: the replicated tensors' gradient sums
  DeviceBuffer<T> dres_, dlnf_;           // [N, C] residual-stream gradient, final-norm output gradient
  float* loss_out_ = nullptr;                // caller's fp32 device scalar
  const T* lora_params_ = nullptr;        // LoRA: [lora->total] T adapters
  float* lora_grads_ = nullptr;              // and their fp32 gradient
  float dloss_ = 1.0f;
  RopeTable<float> mla_rope_;  // latent attention: host RoPE rows (cuda_mla_attention.h)
  MoeAuxLoss<float> moe_aux_;  // MoE models: the load-balancing loss, from the blocks' host statistics
};

// The bf16 model of bf16 plans (the default); CudaModelT<f16> computes fp16 plans.
using CudaModel = CudaModelT<bf16>;

// The instantiations cuda_model.cpp makes: bf16, f16 and, in the emulated build (tests/cuda/emulated), float.
#if defined(FSDPX_CUDA_EMULATED)
#define FSDPX_CUDA_MODEL_INSTANTIATE \
  template class CudaModelT<bf16>;   \
  template class CudaModelT<f16>;    \
  template class CudaModelT<float>;
#else
#define FSDPX_CUDA_MODEL_INSTANTIATE \
  template class CudaModelT<bf16>;   \
  template class CudaModelT<f16>;
#endif

}  // namespace fsdpx::cuda
