// executor/cuda_backend/cuda_model.h — the device's model: the CPU reference Transformer's driver
// (executor/model/model_driver.h) over the CUDA policy, so the same protocol, module order, parameter
// layout and += gradients,
// on 16-bit (T = bf16, or f16 for fp16 plans) parameters and activations with fp32 statistics, loss and
// parameter gradients. The model owns only activations and scratch, allocated once in the constructor; parameters and gradients are the
// caller's per-module device buffers (an FSDP unit's unsharded buffer at ParamLayout offsets).
// Leaves out dropout, ignore-index targets, vocabulary padding, selective recompute and sharing scratch
// between the models of a pipeline rank's micro-batches in flight.
//
// The protocol of one micro-batch, the pipeline's resume points and zero bubble's split passes are the
// shared driver's (executor/model/model_driver.h); every call enqueues on its `stream` and returns (see
// set_batch for the one bounded host wait, and CudaModelOptions::profiler for a profiled run's waits).
// Here: set_batch(tokens, targets, stream) and set_loss_output(loss_device) before the head's forward;
// a pipeline's receives land in input_buffer(m) / output_grad_buffer(m). All calls of one micro-batch
// must be ordered on the device (one stream, or the caller's events): the activation and scratch
// buffers are shared between modules. LoRA: set_lora_buffers before the forward; the backward's
// gradient pointers are then null (a frozen base).
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
#include "executor/cuda_backend/cuda_model_policy.h"
#include "executor/model/model_driver.h"
#include "executor/model/model_options.h"
#include "executor/model/op_profiler.h"
#include "executor/runtime/param_layout.h"

namespace fsdpx::cuda {

// The device's model over the shared driver (executor/model/model_driver.h): its device buffers (only
// for the modules it runs), RoPE tables, batch staging, loss slot and the split backward's keeps;
// ModelDriver runs the modules (forward_module, backward_module, backward_input_module,
// backward_weight_module on a stream; input_buffer, output, output_grad_buffer, input_grad for a
// pipeline's messages: see above).
template <class T>
class CudaModelT : public ModelDriver<CudaModelT<T>, CudaModelPolicy<T>> {
  using Base = ModelDriver<CudaModelT<T>, CudaModelPolicy<T>>;
  friend Base;

 public:
  // Allocates every activation and scratch buffer (cudaMalloc) and uploads the RoPE tables (a
  // synchronous copy). `gemm` must outlive the model; its workspace is used on the calls' streams.
  CudaModelT(const ModelSpec& spec, std::int64_t batch, std::int64_t seq, CudaModelOptions opts, GemmContext& gemm);
  CudaModelT(const CudaModelT&) = delete;
  CudaModelT& operator=(const CudaModelT&) = delete;

  // tokens, targets: host int32 [B·T] of the whole sequences (checked to lie in [0, vocab)); with cp > 1
  // the model takes its rank's tokens. Builds the embedding buckets on
  // the host and copies everything to the device on `stream` through pinned staging (BatchStaging): the
  // host arrays may be reused right after return. The only host wait: for the staging copy of two
  // set_batch calls ago.
  void set_batch(const std::int32_t* tokens, const std::int32_t* targets, cudaStream_t stream);
  // The head's forward writes the micro-batch's mean cross-entropy to *loss_device (fp32, device).
  void set_loss_output(float* loss_device);

  // Device bytes the model owns besides what its modules keep (ModelDriver::saved_bytes and
  // weight_pass_bytes): residual gradients, backward scratch, the shared recompute activations, batch
  // arrays, RoPE tables; the GemmContext workspace and pinned host staging are not counted.
  std::int64_t working_bytes() const;

 private:
  using Base::opts_, Base::spec_, Base::par_, Base::drv_, Base::dims_, Base::seq_, Base::positions_, Base::resid_, Base::acts_;
  using Base::recompute_acts_, Base::recompute_out_, Base::scratch_, Base::emb_, Base::lnf_, Base::lnf_mean_;
  using Base::lnf_rstd_, Base::logits_, Base::ce_stats_, Base::dres_, Base::dlnf_, Base::replicated_;
  using Base::moe_aux_, Base::lora_params_, Base::lora_grads_, Base::kept_, Base::lnf_keep_;

  // ModelDriver's hooks (executor/model/model_driver.h).
  CudaBlockContext<T> context(cudaStream_t stream, int module);
  typename CudaModelPolicy<T>::Ends ends(int m, GradPass pass);
  CudaBlockActs<T>& backward_acts(std::int64_t block, GradPass pass);
  void keep_recomputed(std::int64_t) {}  // a split backward recomputes into the block's own activations
  CudaBlockWeightGrads<T>* weight_inputs(std::int64_t block, GradPass pass);
  std::int64_t own_saved_bytes(int m) const;  // the head's row losses
  bool runs(int module) const;
  void allocate_activations();

  GemmContext* gemm_;
  DeviceBuffer<float> rope_cos_, rope_sin_;  // [T, HD/2] (llama; MLA: rope/2) at the rank's positions; empty for gpt
  DeviceBuffer<std::int64_t> q_pos_, cp_rows_;  // cp > 1: the rank's positions [T]; context_rows [cp·N]
  BatchStaging batch_;                       // tokens, targets, embedding buckets on the device
  DeviceBuffer<float> losses_;               // [N] per-token cross-entropy
  DeviceBuffer<float> loss_scratch_;         // [1] mean loss that the backward classifier call rewrites
  float* loss_out_ = nullptr;                // caller's fp32 device scalar
};

// The bf16 model of bf16 plans (the default); CudaModelT<f16> computes fp16 plans.
using CudaModel = CudaModelT<bf16>;

}  // namespace fsdpx::cuda

namespace fsdpx {

// The instantiations cuda_model.cpp makes: bf16, f16 and, in the emulated build (tests/cuda/emulated), float.
#if defined(FSDPX_CUDA_EMULATED)
#define FSDPX_CUDA_MODEL_INSTANTIATE(X) X(cuda::bf16) X(cuda::f16) X(float)
#else
#define FSDPX_CUDA_MODEL_INSTANTIATE(X) X(cuda::bf16) X(cuda::f16)
#endif
#define FSDPX_CUDA_MODEL_EXTERN(T)                                                \
  extern template class ModelDriver<cuda::CudaModelT<T>, cuda::CudaModelPolicy<T>>; \
  extern template class cuda::CudaModelT<T>;
FSDPX_CUDA_MODEL_INSTANTIATE(FSDPX_CUDA_MODEL_EXTERN)
#undef FSDPX_CUDA_MODEL_EXTERN

}  // namespace fsdpx
