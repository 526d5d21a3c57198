// executor/cuda_backend/cuda_mla_buffers.h — what a CUDA block's latent attention (cuda_mla_attention.h) keeps
// from its forward, and its scratch, on the device: the chains' norm inputs, outputs and fp32 statistics, and
// the flash kernel's padded multi-head qkv and output (heads of Dp = mla_padded_head_dim columns, cuda/mla.h).
// The attention's row log-sum-exp is the block's lse. Scratch serves the forward (q, kv_a's and kv_b's
// outputs) and the backward (their gradients) in turn. Leaves out a pooled allocator.
#pragma once

#include <cstdint>

#include "executor/cuda_backend/device_buffer.h"
#include "executor/model/mla_dims.h"

namespace fsdpx::cuda {

template <class T>
struct CudaMlaActs {
  DeviceBuffer<T> qa, qa_n;         // [N, Rq] q_a's output and its norm's (empty without a q LoRA rank)
  DeviceBuffer<float> qa_rstd;      // [N] (likewise)
  DeviceBuffer<T> c_kv, kv_n;       // [N, Rkv] the latent (kv_a's first Rkv columns) and its norm's output
  DeviceBuffer<float> kv_rstd;      // [N]
  DeviceBuffer<T> qkv, out;         // [N, 3·H·Dp] after RoPE, queries scaled; [N, H·Dp] the flash output
  void allocate(const MlaDims& d);
  std::int64_t bytes() const;
};

template <class T>
struct CudaMlaScratch {
  DeviceBuffer<T> q;                // [N, H·D] queries before RoPE; backward: their gradient
  DeviceBuffer<T> kva;              // [N, Rkv + rope] kv_a's output; backward: its gradient
  DeviceBuffer<T> kvb;              // [N, H·(nope + v)] kv_b's output; backward: its gradient
  DeviceBuffer<T> dout, dqkv;       // [N, H·Dp] the padded output gradient, [N, 3·H·Dp]
  DeviceBuffer<T> dkv_n, dc_kv;     // [N, Rkv]
  DeviceBuffer<T> dqa_n, dqa;       // [N, Rq]
  DeviceBuffer<float> norm;         // the latent norms' weight-gradient partial sums (norm_backward_scratch_elems)
  void allocate(const MlaDims& d);
  std::int64_t bytes() const;
};

}  // namespace fsdpx::cuda
