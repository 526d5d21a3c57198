// executor/cuda/embedding.h — token embedding lookup plus optional learned positions on 16-bit tables
// (T = bf16 or f16; executor/cpu/embedding.h shapes), and a deterministic backward into fp32 gradient tables: one
// thread per (token row, channel) sums that row's positions in token order from the host-built
// EmbeddingBuckets (embedding_buckets.h), so no float atomics. Leaves out vocabulary padding.
#pragma once

#include <cstdint>

#include "executor/cuda/types.h"

namespace fsdpx::cuda {

// out [B, T, C] = wte [V, C][tokens [B, T]] + wpe [maxT, C][t] (wpe may be null). Tokens must be in
// [0, V): the caller checks them on the host (make_embedding_buckets does).
template <class T>
void embedding_forward(T* out, const std::int32_t* tokens, const T* wte, const no_deduce_t<T>* wpe,
                       std::int64_t b, std::int64_t t, std::int64_t c, cudaStream_t stream);

// dwte [V, C] (fp32) += scatter of dout [B, T, C] by token through the device copy of the buckets
// (rows [U], offsets [U+1], positions [B·T]); dwpe [maxT, C] (fp32) += Σ_b dout[b, t] (may be null).
template <class T>
void embedding_backward(float* dwte, float* dwpe, const T* dout, const std::int32_t* bucket_rows,
                        const std::int32_t* bucket_offsets, const std::int32_t* bucket_positions,
                        std::int64_t unique_rows, std::int64_t b, std::int64_t t, std::int64_t c, cudaStream_t stream);

}  // namespace fsdpx::cuda
