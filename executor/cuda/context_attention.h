// executor/cuda/context_attention.h — context parallelism's device kernels (the CPU reference:
// executor/model/context_parallel.h and cpu::context_attention_*): causal attention of a rank's query rows,
// at their global positions, against the K and V of the whole sequences (the all-gather variant of
// Megatron-Core's cp_comm_type "all_gather"), saving the row log-sum-exp as flash attention does, and the
// row moves that put the all-gathered K/V in sequence order and their gradients back. T: bf16, f16 (float
// in the emulated build); lse and the backward's delta fp32. Leaves out the ring (P2P) variant and tiling:
// one thread per query row (forward, dQ) or per K/V row (dK, dV), each sum in one fixed order.
#pragma once

#include <cstdint>

#include "executor/cuda/types.h"

namespace fsdpx::cuda {

struct ContextAttnDims {
  std::int64_t b = 0, t_q = 0, t_kv = 0, nh = 0, nkv = 0, hd = 0;
  const std::int64_t* q_pos = nullptr;  // [t_q] the query rows' positions (device memory)
};

// qkv [B, T_q, (NH + 2·NKV)·HD] (its Q heads are read), kv [B, T_kv, 2·NKV·HD] (K heads, then V heads)
// -> out [B, T_q, NH·HD] and lse [B, NH, T_q].
template <class T>
void context_attention_forward(T* out, float* lse, const T* qkv, const T* kv, const ContextAttnDims& s,
                               cudaStream_t stream);
// dqkv's Q columns += dQ; dkv [B, T_kv, 2·NKV·HD] += dK, dV (this rank's part), given dout and the
// forward's out and lse; delta [B·NH·T_q] is scratch.
template <class T>
void context_attention_backward(T* dqkv, T* dkv, float* delta, const T* dout, const T* out, const T* qkv, const T* kv,
                                const float* lse, const ContextAttnDims& s, cudaStream_t stream);

// Row moves of [rows, width] arrays through a map of row indices (device int64 [rows]):
// scatter dst[map[r]] = src[r]; gather dst[r] = src[map[r]].
template <class T>
void scatter_rows(T* dst, const T* src, const std::int64_t* map, std::int64_t rows, std::int64_t width,
                  cudaStream_t stream);
template <class T>
void gather_rows(T* dst, const T* src, const std::int64_t* map, std::int64_t rows, std::int64_t width,
                 cudaStream_t stream);
// dst [rows, dst_ld] columns [0, width) = (or += with accumulate) src [rows, src_ld] columns [0, width).
template <class T>
void copy_columns(T* dst, std::int64_t dst_ld, const T* src, std::int64_t src_ld, std::int64_t rows,
                  std::int64_t width, bool accumulate, cudaStream_t stream);

// The explicit instantiations of the launchers above for element type T (context_attention.cu and the
// emulated runtime's kernels_context.cpp define the same set).
#define FSDPX_CONTEXT_ATTENTION_INSTANTIATE(T)                                                                     \
  template void context_attention_forward<T>(T*, float*, const T*, const T*, const ContextAttnDims&, cudaStream_t); \
  template void context_attention_backward<T>(T*, T*, float*, const T*, const T*, const T*, const T*, const float*, \
                                              const ContextAttnDims&, cudaStream_t);                               \
  template void scatter_rows<T>(T*, const T*, const std::int64_t*, std::int64_t, std::int64_t, cudaStream_t);       \
  template void gather_rows<T>(T*, const T*, const std::int64_t*, std::int64_t, std::int64_t, cudaStream_t);        \
  template void copy_columns<T>(T*, std::int64_t, const T*, std::int64_t, std::int64_t, std::int64_t, bool,         \
                                cudaStream_t);

}  // namespace fsdpx::cuda
