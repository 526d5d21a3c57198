// core/attention_kernel.h — which fused attention kernel family a training stack runs. It is a property
// of the software, not of the GPU: FlashAttention-2 (PyTorch SDPA's flash backend, flash-attn 2.x) is the
// default; FlashAttention-1-class kernels (flash-attn 1.x and its Triton port, which MPT's
// `attn_impl: triton` uses) run at half its speed (Dao 2023, FlashAttention-2, abstract: "2x speedup
// compared to FlashAttention"). Leaves out cuDNN and FlashAttention-3 (no curves shipped yet).
#pragma once

#include <string_view>

namespace fsdpx {

enum class AttentionKernel { flash2, flash1 };

// Throughput relative to FlashAttention-2 (the GPU specs' attention curves are FlashAttention-2's).
constexpr double attention_kernel_relative_speed(AttentionKernel k) {
  return k == AttentionKernel::flash1 ? 0.5 : 1.0;
}

constexpr std::string_view attention_kernel_name(AttentionKernel k) {
  return k == AttentionKernel::flash1 ? "flash1" : "flash2";
}

}  // namespace fsdpx
