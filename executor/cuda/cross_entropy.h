// executor/cuda/cross_entropy.h — fused LM-head softmax + cross-entropy (llm.c fused_classifier.cuh):
// one block per token row finds the row max and exp-sum online, writes the row loss, and (optionally)
// overwrites the bf16 logits in place with dlogits = (softmax − onehot(target))·dloss/N, never storing
// the probabilities. The mean loss is a fixed-order reduction. Same values as executor/cpu/
// cross_entropy.h's forward + backward. Leaves out ignore-index tokens, z-loss and label smoothing.
#pragma once

#include <cstdint>

#include "executor/cuda/types.h"

namespace fsdpx::cuda {

// logits [N, Vp] (T = bf16 or f16; the first `vocab` columns are real, the padding columns Vp − vocab are
// ignored and get dlogits 0); targets [N] in [0, vocab) (the caller checks them on the host).
// losses [N] (fp32) = −log softmax(row)[target]; *loss_mean (fp32, device) = mean over N.
// write_dlogits: overwrite logits with dlogits for loss gradient dloss (1 for a plain mean).
template <class T>
void fused_classifier(T* logits_to_dlogits, float* losses, float* loss_mean, const std::int32_t* targets,
                      std::int64_t n, std::int64_t vocab, std::int64_t vocab_padded, float dloss, bool write_dlogits,
                      cudaStream_t stream);

}  // namespace fsdpx::cuda
