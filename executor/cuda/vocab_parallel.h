// executor/cuda/vocab_parallel.h — the device launchers of the vocabulary-parallel embedding and
// cross-entropy (the CPU reference: executor/model/vocab_parallel.h, Megatron-LM's
// VocabParallelEmbedding and vocab-parallel cross-entropy): a tensor-parallel rank holds rows
// [v_first, v_first + v_local) of the token table and of the head. The cross-entropy exchanges three
// fp32 numbers per token (max, Σ exp(z − max), target logit) in one all-gather and combines them as the
// online softmax does (Milakov & Gimelshein 2018, §3), in rank order so every rank gets the same bits.
// Activations and logits are T (bf16, f16; float in the emulated build), gradients and statistics fp32.
// Leaves out vocabulary padding; the kernels favour a fixed summation order over speed.
#pragma once

#include <cstdint>

#include "executor/cuda/types.h"

namespace fsdpx::cuda {

// out [N, C] = wte [v_local, C] rows of the tokens in the slice, zero rows for the others.
template <class T>
void vocab_embedding_forward(T* out, const std::int32_t* tokens, const T* wte, std::int64_t v_first,
                             std::int64_t v_local, std::int64_t n, std::int64_t c, cudaStream_t stream);
// dwte [v_local, C] += dout rows of the tokens in the slice, in token order per channel (deterministic).
template <class T>
void vocab_embedding_backward(float* dwte, const T* dout, const std::int32_t* tokens, std::int64_t v_first,
                              std::int64_t v_local, std::int64_t n, std::int64_t c, cudaStream_t stream);

// stats [N, 3] of the slice logits [N, v_local]: row max, Σ exp(z − max), the target's logit when the
// slice holds the target (else 0).
template <class T>
void vocab_ce_stats(float* stats, const T* logits, const std::int32_t* targets, std::int64_t n, std::int64_t v_local,
                    std::int64_t v_first, cudaStream_t stream);
// *loss = Σ_n (lse_n − target logit_n) / tokens from all_stats [ranks, N, 3] (summed in token order).
void vocab_ce_loss(float* loss, const float* all_stats, int ranks, std::int64_t n, float tokens, cudaStream_t stream);
// logits [N, v_local] -> dlogits = (softmax − onehot(target)) · scale in place, the softmax's
// normaliser from all_stats [ranks, N, 3].
template <class T>
void vocab_ce_backward(T* logits_to_dlogits, const float* all_stats, const std::int32_t* targets, int ranks,
                       std::int64_t n, std::int64_t v_local, std::int64_t v_first, float scale, cudaStream_t stream);

// The explicit instantiations of the launchers above for element type T (vocab_parallel.cu and the
// emulated runtime's kernels_vocab.cpp define the same set).
#define FSDPX_VOCAB_PARALLEL_INSTANTIATE(T)                                                                         \
  template void vocab_embedding_forward<T>(T*, const std::int32_t*, const T*, std::int64_t, std::int64_t,           \
                                           std::int64_t, std::int64_t, cudaStream_t);                              \
  template void vocab_embedding_backward<T>(float*, const T*, const std::int32_t*, std::int64_t, std::int64_t,      \
                                            std::int64_t, std::int64_t, cudaStream_t);                             \
  template void vocab_ce_stats<T>(float*, const T*, const std::int32_t*, std::int64_t, std::int64_t, std::int64_t,  \
                                  cudaStream_t);                                                                    \
  template void vocab_ce_backward<T>(T*, const float*, const std::int32_t*, int, std::int64_t, std::int64_t,        \
                                     std::int64_t, float, cudaStream_t);

}  // namespace fsdpx::cuda
