// executor/cuda_backend/cuda_moe_mlp.h — a CUDA block's MLP half when the block is a mixture-of-experts
// block, run host-staged: the block's mlp_norm output and its MoE tensors are copied to the host as
// fp32, the shared MoE model code (executor/model/moe_mlp.h: router, top-k, permute, per-expert SwiGLU
// GEMMs, combine, load-balancing statistics, and their backward) runs on them, and the output (forward)
// or the input gradient and the accumulated fp32 parameter gradients (backward) go back to the device.
// There is one copy of the MoE math, the CPU backend's; what this file adds is the staging. It is
// correct on a GPU and on the emulated runtime (tests/cuda/emulated/), and slow on a GPU: every MoE
// block synchronises its stream twice per pass. Under expert parallelism (ep > 1) the block's expert
// tensors are the rank's local experts and the routed rows cross the ep group as T rows in a device
// all-to-all (cuda_model_comm.h), staged up from and back down to the host math. Leaves out device
// kernels for routing, gather and scatter and grouped expert GEMMs on the device (issue 30), tp, cp, pp
// and LoRA on MoE blocks, and zero bubble's split backward (the block sequence runs an MoE block's whole
// backward).
#pragma once

#include "executor/cuda_backend/cuda_block.h"

namespace fsdpx::cuda {

// The block at ctx.module (1 + block index) has an MoE MLP: an MoE model past its dense leading layers.
template <class T>
bool is_moe_block(const CudaBlockContext<T>& ctx) {
  return ctx.spec->is_moe() && ctx.module - 1 >= ctx.spec->moe.dense_layers;
}

// out [N, C] (T, written) = the MoE MLP of a.ln2; fills a.moe (host) for the backward and the aux loss.
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
