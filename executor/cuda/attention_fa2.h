// executor/cuda/attention_fa2.h — the causal GQA attention forward with its working state in registers:
// FlashAttention-2's Algorithm 1 (Dao 2023, arXiv:2307.08691) on mma.sync m16n8k16 (bf16 or f16
// operands, fp32 accumulation) with ldmatrix operand loads, the structure of the FA2 repository's
// csrc/flash_attn/src/flash_fwd_kernel.h (compute_attn_1rowblock) written for this layout. S = Q·Kᵀ, the
// online softmax's row max m and sum l, and the O accumulators stay in registers; P is packed to 16 bits
// in registers and fed to P·V as the A operand. Leaves out: cp.async double buffering of K/V (each tile
// is loaded with 16-byte copies between two barriers), wgmma/TMA (sm_90), splitting the KV loop.
//
// The same interface, shapes, outputs and launch constraints as tc_attention_forward (attention_tc.h):
// qkv [B, T, (NH + 2·NKV)·HD] -> out [B, T, NH·HD]; lse [B, NH, T] fp32 = log Σ_k exp(scale·q·k),
// scale 1/sqrt(HD); HD ∈ {64, 128}; NH % NKV == 0. tc_attention_forward calls it.
#pragma once

#include "executor/cuda/types.h"
#include "executor/model/attn_shape.h"

namespace fsdpx::cuda {

template <class T>
void fa2_attention_forward(T* out, float* lse, const T* qkv, const AttnShape& s, cudaStream_t stream);

// The backward (attention_fa2_backward.cu): dqkv += gradient w.r.t. qkv, from the forward's out and lse;
// scratch: flash_attention_scratch_elems fp32 (delta). Two kernels (dQ; dK and dV), no float atomics: the
// same dqkv bits every run. tc_attention_backward's interface.
template <class T>
void fa2_attention_backward(T* dqkv, float* scratch, const T* dout, const T* out, const T* qkv, const float* lse,
                            const AttnShape& s, cudaStream_t stream);

}  // namespace fsdpx::cuda
