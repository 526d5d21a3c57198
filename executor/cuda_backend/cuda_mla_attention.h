// executor/cuda_backend/cuda_mla_attention.h — a CUDA block's multi-head latent attention (DeepSeek-V3),
// run host-staged as the MoE MLP is (cuda_moe_mlp.h): the block's attn_norm output and its latent
// projections are copied to the host as fp32, the shared MLA code (executor/model/mla_attention.h: the
// q and kv LoRA chains, their RMSNorms, RoPE on the rope parts, the CPU attention core over the padded
// multi-head qkv, and the backward of all of them) runs on them, and the attention output (forward) or
// the input gradient and the accumulated fp32 gradients (backward) go back. One copy of the MLA math; the
// attention core is the CPU's (materialised probabilities, kept on the host), not the plan's device
// kernel. Correct on a GPU and the emulated runtime, slow on a GPU. Leaves out device kernels for MLA,
// YaRN, tp, cp, LoRA, fp8 and zero bubble's split (the capabilities row refuses them).
#pragma once

#include "executor/cuda_backend/cuda_block.h"

namespace fsdpx::cuda {

// a.atty [N, H·v] (T, written) from a.ln1; fills the host state a.mla, a.mla_qkv and a.mla_att.
template <class T>
void cuda_mla_forward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p, CudaBlockActs<T>& a);

// s.dln [N, C] (T, written) = the gradient w.r.t. a.ln1 from s.datty; the latent projections' fp32
// gradients in g accumulate (+=).
template <class T>
void cuda_mla_backward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p, const BlockTensors<float*>& g,
                       const CudaBlockActs<T>& a, CudaBlockScratch<T>& s);

}  // namespace fsdpx::cuda
