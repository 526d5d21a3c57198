// executor/cpu/cross_entropy.h — softmax cross-entropy over the vocabulary, mean over tokens, as
// llm.c's fused classifier: forward turns logits into probabilities in place and returns the loss;
// backward overwrites the probabilities with dlogits = (p − onehot(target))·dloss/N in place, so the
// [N, V] buffer is reused (fused_classifier.cuh). The LM-head GEMM around it is matmul_forward.
// Leaves out ignore-index tokens and z-loss.
#pragma once

#include <cstdint>

namespace fsdpx::cpu {

// logits [N, V] -> probs [N, V] in place; returns mean over N of −log p[n, targets[n]].
template <class Real>
Real softmax_cross_entropy_forward(Real* logits_to_probs, const std::int32_t* targets, std::int64_t n,
                                   std::int64_t vocab);

// probs [N, V] -> dlogits [N, V] in place, for loss gradient `dloss` (1 for a plain mean).
template <class Real>
void softmax_cross_entropy_backward(Real* probs_to_dlogits, const std::int32_t* targets, std::int64_t n,
                                    std::int64_t vocab, Real dloss);

}  // namespace fsdpx::cpu
