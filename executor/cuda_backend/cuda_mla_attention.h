// executor/cuda_backend/cuda_mla_attention.h — a CUDA block's multi-head latent attention (DeepSeek-V3
// technical report, arXiv:2412.19437 §2.1.1) on the device, the CPU's sequence (executor/model/
// mla_sequence.h): the q and kv LoRA chains as GEMMs (cuda/gemm.h) and RMSNorms (cuda/norm.h; the latent is
// kv_a's first Rkv columns, copied out), RoPE on the rope parts while assembling the padded multi-head qkv
// (cuda/mla.h), the flash kernel (or the tensor-core one, as the plan says, where it takes the padded head),
// and the heads' v columns sliced back; backward the reverse, the fp32 weight gradients accumulating.
// Heads pad from qk_nope + qk_rope to the flash kernel's next head size (deepseek-tiny's 24 to 32;
// DeepSeek-V3's 192 is refused until a kernel instantiation for it has run on a GPU, docs/cuda.md). Leaves
// out tp, cp, LoRA, fp8 and zero bubble's split (the capabilities row refuses them).
#pragma once

#include "executor/cuda_backend/cuda_block.h"

namespace fsdpx::cuda {

// a.atty [N, H·v] (T, written) from a.ln1; fills a.mla and a.att (the lse).
template <class T>
void cuda_mla_forward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p, CudaBlockActs<T>& a);

// s.dln [N, C] (T, written) = the gradient w.r.t. a.ln1 from s.datty; the latent projections' fp32
// gradients in g accumulate (+=).
template <class T>
void cuda_mla_backward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p, const BlockTensors<float*>& g,
                       const CudaBlockActs<T>& a, CudaBlockScratch<T>& s);

}  // namespace fsdpx::cuda
