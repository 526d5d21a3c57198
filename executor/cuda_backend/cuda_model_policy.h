// executor/cuda_backend/cuda_model_policy.h — the CUDA device policy of the model's ends
// (executor/model/ends_sequence.h): the block policy (cuda_block_policy.h) plus the device kernels of
// executor/cuda/ for the embedding (bucketed backward), the fused softmax cross-entropy (per-token losses,
// the mean written to the caller's device scalar) and the vocabulary-parallel lookup and loss, on the
// context's stream. A split backward keeps the final norm's fp32 gradients ([w, b] x C) and reads the
// embedding's output gradient where it stays (dres). For the model driver (executor/model/model_driver.h)
// it also names the device buffers, the block's entry points (cuda_block.h), the replicated-gradient ops
// and the stream each call enqueues on. Internal to cuda_model.*; leaves out learned positions under tp
// or cp (the capabilities row refuses them; the calls FSDP_CHECK).
#pragma once

#include <cstdint>

#include "core/errors.h"
#include "executor/cuda/cross_entropy.h"
#include "executor/cuda/embedding.h"
#include "executor/cuda/vocab_parallel.h"
#include "executor/cuda_backend/batch_staging.h"
#include "executor/cuda_backend/cuda_block_policy.h"
#include "executor/cuda_backend/cuda_replicated_grads.h"
#include "executor/cuda_backend/device_buffer.h"
#include "executor/model/ends_sequence.h"
#include "executor/model/model_options.h"
#include "executor/model/moe_aux_loss.h"

namespace fsdpx::cuda {

// The device model's options (executor/model/model_options.h) over its device collectives; fp8 is refused.
using CudaModelOptions = ModelOptionsT<CudaModelComm>;

// What the device's end kernels read of a micro-batch and where the loss goes.
struct CudaEndsBatch {
  const BatchStaging* batch = nullptr;  // tokens, targets and the embedding's buckets on the device
  float* losses = nullptr;              // [N] per-token cross-entropy
  float* loss_out = nullptr;            // the caller's fp32 device scalar: the micro-batch's mean loss
  float* loss_scratch = nullptr;        // [1] the mean the backward's classifier call rewrites
  const MoeAuxLoss<float>* moe_aux = nullptr;  // MoE models: added to the loss (tp = cp = pp = 1)
};

template <class T>
struct CudaModelPolicy : CudaBlockPolicy<T> {
  using Ctx = typename CudaBlockPolicy<T>::Ctx;
  using Ends = EndsBuffers<T, float, CudaBlockScratch<T>, float*, CudaEndsBatch>;
  using Stream = cudaStream_t;
  using Options = CudaModelOptions;
  using Buffers = CudaBlockBuffers<T>;  // device buffers (cuda_block.h)
  using GradOps = DeviceGradOps;

  // The block module (cuda_block.h) and the replicated-gradient ops' context, on the context's stream.
  static BlockTensors<const T*> block_params(const ModuleLayout& m, const T* base) { return block_params16(m, base); }
  static void block_forward(const Ctx& ctx, const BlockTensors<const T*>& p, const T* x_in, T* x_out,
                            CudaBlockActs<T>& a) {
    cuda_block_forward(ctx, p, x_in, x_out, a);
  }
  static void block_backward(const Ctx& ctx, const BlockTensors<const T*>& p, const BlockTensors<float*>& g,
                             const T* x_in, const CudaBlockActs<T>& a, T* dres, CudaBlockScratch<T>& s,
                             GradPass pass, CudaBlockWeightGrads<T>* keep) {
    cuda_block_backward(ctx, p, g, x_in, a, dres, s, pass, keep);
  }
  static DeviceGradOps::Ctx grad_ops(const Ctx& ctx) { return {ctx.comm, ctx.stream}; }

  static void embedding_forward(const Ctx& ctx, Ends& e, const T* wte, const T* wpe) {
    const BlockDims& d = ctx.dims;
    cuda::embedding_forward(e.x0, e.batch.batch->tokens(), wte, wpe, d.b, d.t, d.c, ctx.stream);
  }
  static void embedding_backward(const Ctx& ctx, Ends& e, float* dwte, float* dwpe, const T* dout) {
    const BlockDims& d = ctx.dims;
    const BatchStaging& b = *e.batch.batch;
    cuda::embedding_backward(dwte, dwpe, dout, b.bucket_rows(), b.bucket_offsets(), b.bucket_positions(),
                             b.unique_rows(), d.b, d.t, d.c, ctx.stream);
  }
  static void vocab_embedding_forward(const Ctx& ctx, Ends& e, T* out, const T* wte) {
    cuda::vocab_embedding_forward(out, e.batch.batch->tokens(), wte, e.v_first, e.v_local, ctx.dims.n, ctx.dims.c,
                                  ctx.stream);
  }
  static void vocab_embedding_backward(const Ctx& ctx, Ends& e, float* dwte, const T* dout) {
    cuda::vocab_embedding_backward(dwte, dout, e.batch.batch->tokens(), e.v_first, e.v_local, ctx.dims.n, ctx.dims.c,
                                   ctx.stream);
  }
  static void add_positions(const Ctx&, Ends&, const T*) {
    FSDP_CHECK(false, "CudaModelPolicy: learned positions under tp or cp are not run on CUDA");
  }
  static void positions_backward(const Ctx&, Ends&, float*, const T*) {
    FSDP_CHECK(false, "CudaModelPolicy: learned positions under tp or cp are not run on CUDA");
  }

  // logits -> the per-token losses and their mean into the caller's scalar (the logits stay), plus an MoE
  // model's load-balancing loss (moe_aux_loss.h) as the CPU's loss_forward adds it.
  static void loss_forward(const Ctx& ctx, Ends& e) {
    const std::int64_t v = e.v_local;
    fused_classifier(e.logits, e.batch.losses, e.batch.loss_out, e.batch.batch->targets(), ctx.dims.n, v, v, 1.0f,
                     false, ctx.stream);
    if (e.batch.moe_aux && e.batch.moe_aux->loss() != 0.0f)
      add_to_device_scalar(e.batch.loss_out, e.batch.moe_aux->loss(), ctx.stream);
  }
  // logits -> dlogits = (softmax − onehot)·dloss/N in place; the mean goes to the scratch so that the
  // caller's loss output is not written after the forward.
  static void loss_backward(const Ctx& ctx, Ends& e) {
    const std::int64_t v = e.v_local;
    fused_classifier(e.logits, e.batch.losses, e.batch.loss_scratch, e.batch.batch->targets(), ctx.dims.n, v, v,
                     e.dloss, true, ctx.stream);
  }
  static void vocab_ce_stats(const Ctx& ctx, Ends& e, float* mine) {
    cuda::vocab_ce_stats(mine, e.logits, e.batch.batch->targets(), ctx.dims.n, e.v_local, e.v_first, ctx.stream);
  }
  static void gather_ce_stats(const Ctx& ctx, const float* mine, float* all, std::int64_t count) {
    ctx.comm->all_gather_f32(ModelAxis::tp, mine, all, count);
  }
  static void vocab_ce_loss(const Ctx& ctx, Ends& e) {
    cuda::vocab_ce_loss(e.batch.loss_out, e.ce_stats, ctx.par.tp, ctx.dims.n, float(e.batch_tokens), ctx.stream);
  }
  static void vocab_loss_backward(const Ctx& ctx, Ends& e, float scale) {
    cuda::vocab_ce_backward(e.logits, e.ce_stats, e.batch.batch->targets(), ctx.par.tp, ctx.dims.n, e.v_local,
                            e.v_first, scale, ctx.stream);
  }
};

}  // namespace fsdpx::cuda
