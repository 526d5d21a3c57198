// executor/cuda_backend/cuda_moe_mlp.h — a CUDA block's MLP half when the block is a mixture-of-experts
// block, on the device with the routing on the host: the router GEMM runs on the device and only its fp32
// logits [N, E] go down; the shared host routing (executor/model/moe_routing.h: scores, top-k, combine
// weights, expert-major rows, balance statistics; the CPU's own code, so both backends pick the same
// experts) and the dispatch plan (moe_exchange.h) run there; the row indices go up; the gather, the
// per-expert SwiGLU GEMMs (one GEMM per chunk of rows, host-known counts), the weighted combine and the
// shared expert run on the block's stream (executor/cuda/moe.h). Backward likewise: the routed gradients
// and the experts' on the device, the combine weights' gradient [N, k] down and the router logits'
// gradient [N, E] up (the host router backward). Under expert parallelism (ep > 1) the rows cross the ep
// group on the device (CudaModelComm::all_to_allv_rows) after the per-expert counts. Each pass syncs its
// stream a few times (logits, indices, counts; dweight and dlogits). Leaves out device routing, grouped
// GEMMs in one launch (issue 30), tp, cp, pp and LoRA on MoE blocks, and zero bubble's split backward (the
// block sequence runs an MoE block's whole backward).
#pragma once

#include "executor/cuda_backend/cuda_block.h"

namespace fsdpx::cuda {

// out [N, C] (T, written) = the MoE MLP of a.ln2; fills a.moe (host routing, device rows) for the backward
// and the aux loss.
template <class T>
void cuda_moe_forward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p, CudaBlockActs<T>& a, T* out);

// s.dln [N, C] (T, written) = the gradient w.r.t. a.ln2 from dout [N, C] and the load-balancing loss
// (ctx.moe_aux); the router's and experts' fp32 gradients in g accumulate (+=).
template <class T>
void cuda_moe_backward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p, const BlockTensors<float*>& g,
                       const CudaBlockActs<T>& a, const T* dout, CudaBlockScratch<T>& s);

// *loss_device (fp32, on the device) += add, ordered on `stream` (the MoE models' aux loss).
void add_to_device_scalar(float* loss_device, float add, cudaStream_t stream);

}  // namespace fsdpx::cuda
