// core/attention_kernel.h — which attention implementation a training stack runs. It is a property of
// the software, not of the GPU: FlashAttention-2 (PyTorch SDPA's flash backend, flash-attn 2.x) is the
// default; FlashAttention-1-class kernels (flash-attn 1.x and its Triton port, which MPT's
// `attn_impl: triton` uses) run at half its speed (Dao 2023, FlashAttention-2, abstract: "2x speedup
// compared to FlashAttention"); `unfused` is Megatron-LM's attention before flash kernels (2021):
// QKᵀ as a batched GEMM into a materialised [b·a, s, s] score tensor, a fused scale-mask-softmax kernel
// and attention dropout over it, then a batched GEMM with V (Narayanan et al. 2021, SC21, §4.3).
// `cuda_core` is fsdpx's own CUDA-core tiled kernel (executor/cuda/attention.cu: FA2's loop order in fp32
// on CUDA cores, no tensor cores); its time comes from its own structure (cost_models/attention_cuda_core.h),
// not from the FlashAttention-2 curves. `tensor_core` is fsdpx's own FA2-style kernel on WMMA tiles
// (executor/cuda/attention_tc.cu), costed from its structure (cost_models/attention_tensor_core.h;
// unmeasured). `cudnn` is cuDNN's fused flash attention, which Transformer Engine's DotProductAttention
// selects over flash-attn on Hopper and later (`get_attention_backend`); it runs at the GPU file's own
// cuDNN curves (cudnn_attention_efficiency). Leaves out FlashAttention-3 (no curves shipped yet).
#pragma once

#include <string_view>

namespace fsdpx {

enum class AttentionKernel { flash2, flash1, unfused, cuda_core, tensor_core, cudnn };

// Throughput of a fused (flash) kernel relative to FlashAttention-2 (the GPU specs' attention curves
// are FlashAttention-2's). `unfused` runs no fused kernel: its GEMMs and softmax are costed as such;
// `cuda_core` and `tensor_core` are timed by their shared-memory traffic instead, `cudnn` by its own
// curves (the 1 here is unused).
constexpr double attention_kernel_relative_speed(AttentionKernel k) {
  return k == AttentionKernel::flash1 ? 0.5 : 1.0;
}

// True when the s×s scores are never written to memory.
constexpr bool attention_kernel_is_fused(AttentionKernel k) { return k != AttentionKernel::unfused; }

constexpr std::string_view attention_kernel_name(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::flash2: return "flash2";
    case AttentionKernel::flash1: return "flash1";
    case AttentionKernel::unfused: return "unfused";
    case AttentionKernel::cuda_core: return "cuda_core";
    case AttentionKernel::tensor_core: return "tensor_core";
    case AttentionKernel::cudnn: return "cudnn";
  }
  return "flash2";
}

}  // namespace fsdpx
