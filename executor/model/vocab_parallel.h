// executor/model/vocab_parallel.h — the embedding and the cross-entropy over a tensor-parallel rank's
// slice of the vocabulary (Megatron-LM: megatron/core/tensor_parallel/layers.py VocabParallelEmbedding,
// megatron/core/tensor_parallel/cross_entropy.py), and positions looked up by their global index
// (context parallelism, sequence shards). The cross-entropy never gathers the logits: each rank
// reduces its slice to three numbers per token (max, Σ exp(z − max), the target's logit when it holds
// it), the ranks exchange those, and every rank combines them into the log-sum-exp as the online
// softmax does (Milakov & Gimelshein 2018, "Online normalizer calculation for softmax", §3) — one
// all-gather where Megatron all-reduces a max and then two sums. Leaves out vocabulary padding.
#pragma once

#include <cstdint>

namespace fsdpx {

// out [N, C] = wte rows of the tokens in [v_first, v_first + v_count), zero rows for the others.
template <class Real>
void vocab_embedding_forward(Real* out, const std::int32_t* tokens, const Real* wte, std::int64_t v_first,
                             std::int64_t v_count, std::int64_t n, std::int64_t c);
// dwte [v_count, C] += dout rows of the tokens in the slice (token order per channel: deterministic).
template <class Real>
void vocab_embedding_backward(Real* dwte, const Real* dout, const std::int32_t* tokens, std::int64_t v_first,
                              std::int64_t v_count, std::int64_t n, std::int64_t c);

// out [N, C] += wpe [max_seq, C] [positions[i]]; backward dwpe += dout rows at their positions.
template <class Real>
void add_positions(Real* out, const Real* wpe, const std::int64_t* positions, std::int64_t n, std::int64_t c);
template <class Real>
void positions_backward(Real* dwpe, const Real* dout, const std::int64_t* positions, std::int64_t n, std::int64_t c);

// stats [N, 3] of the slice logits [N, V_local]: row max, Σ exp(z − max), the target's logit when
// v_first <= target < v_first + V_local (else 0).
template <class Real>
void vocab_ce_stats(Real* stats, const Real* logits, const std::int32_t* targets, std::int64_t n,
                    std::int64_t v_local, std::int64_t v_first);
// all_stats [ranks, N, 3] in rank order -> logits [N, V_local] turned into probabilities in place
// (p = exp(z − lse)); returns Σ_n (lse_n − target logit_n), summed in token order.
template <class Real>
Real vocab_ce_probs(Real* logits_to_probs, const Real* all_stats, int ranks, std::int64_t n, std::int64_t v_local);
// probs -> dlogits = (p − onehot(target)) · scale in place (scale = dloss / tokens of the mean).
template <class Real>
void vocab_ce_backward(Real* probs_to_dlogits, const std::int32_t* targets, std::int64_t n, std::int64_t v_local,
                       std::int64_t v_first, Real scale);

}  // namespace fsdpx
