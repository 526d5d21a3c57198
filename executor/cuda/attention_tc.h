// executor/cuda/attention_tc.h — causal GQA attention on tensor cores: FlashAttention-2's forward and
// backward (Dao 2023, arXiv:2307.08691, Algorithms 1 and 2) with WMMA 16x16x16 tiles, 16-bit (bf16 or
// f16) operands and fp32 accumulation, the same layout, math and saved log-sum-exp as the CUDA-core
// kernels of attention.h, whose delta kernel it shares. dQ is computed in its own pass (as attention.cu)
// instead of FA2's atomic adds, so every dqkv element has one writer (deterministic).
// Not yet run on a GPU (docs/cuda.md, "Tensor-core attention"); the block does not call it yet.
//
// Launch constraints (checked): HD ∈ {64, 128}; NH % NKV == 0; NH, NKV, B ≤ 65535; qkv, out, dout, dqkv
// 16-byte aligned. Blocks of 64 query rows (or keys) x 4 warps of 16 rows; dynamic shared memory up to
// 187 KiB (HD 128, dK/dV kernel), within sm_90's 227 KiB.
#pragma once

#include <cstdint>

#include "executor/cuda/types.h"
#include "executor/model/attn_shape.h"

namespace fsdpx::cuda {

// True when the tensor-core kernels take this shape (head dim 64 or 128).
bool tc_attention_supports(const AttnShape& s);

// True when the environment says FSDPX_TC_ATTENTION=wmma: tc_attention_forward/backward then run the WMMA
// kernels below (the first version) instead of the register-resident ones, e.g. for a GPU check whose
// attention test failed (tools/gpu_check.sh falls back so). Read once per process.
bool tc_attention_wmma_selected();

// qkv [B, T, (NH + 2·NKV)·HD] -> out [B, T, NH·HD]; lse [B, NH, T] (fp32, flash_attention_lse_elems) saved.
// Runs fa2_attention_forward (attention_fa2.h: S, softmax state and O in mma.sync registers), or the WMMA
// one when tc_attention_wmma_selected().
template <class T>
void tc_attention_forward(T* out, float* lse, const T* qkv, const AttnShape& s, cudaStream_t stream);

// The same forward with S, P and O in shared memory through WMMA fragments (the first version; A/B benches).
template <class T>
void tc_attention_forward_wmma(T* out, float* lse, const T* qkv, const AttnShape& s, cudaStream_t stream);

// dqkv += gradient w.r.t. qkv; scratch: flash_attention_scratch_elems fp32 (delta). Runs
// fa2_attention_backward (attention_fa2.h: the tiles' products and dS in mma.sync registers), or the WMMA
// one when tc_attention_wmma_selected().
template <class T>
void tc_attention_backward(T* dqkv, float* scratch, const T* dout, const T* out, const T* qkv, const float* lse,
                           const AttnShape& s, cudaStream_t stream);

// The same backward through WMMA and shared-memory tiles (the first version; A/B benches).
template <class T>
void tc_attention_backward_wmma(T* dqkv, float* scratch, const T* dout, const T* out, const T* qkv,
                                const float* lse, const AttnShape& s, cudaStream_t stream);

}  // namespace fsdpx::cuda
