// executor/cuda/attention.h — causal multi-head attention with grouped KV heads (GQA) as a fused,
// tiled FlashAttention-style forward and backward (Dao et al. 2022; FA2's loop order, Dao 2023): the
// scores are never stored, forward saves only the row log-sum-exp [B, NH, T], backward recomputes
// P per tile. Same layout and math as executor/cpu/attention.h (qkv [B, T, (NH + 2·NKV)·HD]; scale
// 1/sqrt(HD)); dqkv is accumulated (+=), and every dqkv element has one writer (deterministic).
// Correctness-first version: fp32 CUDA-core arithmetic on 16-bit (bf16 or f16) tiles in shared memory, no tensor cores
// (wgmma/mma) and no pipelining; attention_tc.h is the tensor-core version (FA2 on WMMA). Plans name this
// kernel `cuda_core` (core/attention_kernel.h); cost_models/attention_cuda_core.h costs it.
//
// Launch constraints (checked): HD ∈ {32, 64, 96, 128}; NH % NKV == 0; NH, NKV, B ≤ 65535.
// Forward grid (⌈T/32⌉, NH, B) × 256 threads: 8 warps, each owning 4 query rows; lane j scores key j of
// a 32-key tile, then lanes split the HD output dims. Static shared memory 3·32·(HD+2)·2 B (≤ 25 KiB).
// Backward: delta = rowsum(dO ∘ O) [B, NH, T] fp32; a dQ kernel with the forward's layout; a dK/dV
// kernel on grid (⌈T/32⌉ key tiles, NKV, B), each warp owning 4 keys over all query rows of the GQA
// group (≤ 33 KiB static shared memory).
#pragma once

#include <cstdint>

#include "executor/cuda/types.h"
#include "executor/model/attn_shape.h"

namespace fsdpx::cuda {

// fp32 elements of the saved row log-sum-exp, and of the backward's scratch (delta): B·NH·T each.
std::int64_t flash_attention_lse_elems(const AttnShape& s);
std::int64_t flash_attention_scratch_elems(const AttnShape& s);

// qkv [B, T, (NH + 2·NKV)·HD] -> out [B, T, NH·HD] (T = bf16 or f16); lse [B, NH, T] (fp32) saved.
template <class T>
void flash_attention_forward(T* out, float* lse, const T* qkv, const AttnShape& s, cudaStream_t stream);

// delta [B, NH, T] (fp32) = rowsum(dout ∘ out) per query row and head: FA2's D (Dao 2023, Alg. 2 line 4),
// shared with the tensor-core backward (attention_tc.h).
template <class T>
void flash_attention_delta(float* delta, const T* dout, const T* out, const AttnShape& s, cudaStream_t stream);

// dqkv [B, T, (NH + 2·NKV)·HD] (T) += gradient w.r.t. qkv, given dout and the forward's out and lse.
template <class T>
void flash_attention_backward(T* dqkv, float* scratch, const T* dout, const T* out, const T* qkv,
                              const float* lse, const AttnShape& s, cudaStream_t stream);

}  // namespace fsdpx::cuda
