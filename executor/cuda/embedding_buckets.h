// executor/cuda/embedding_buckets.h — the host-side bucketing of token positions by token id that
// makes the CUDA embedding backward deterministic with one writer per table row (llm.c
// encoder_backward: "the CPU pre-buckets token ids"). Positions inside a bucket stay in token order, the
// same summation order as executor/cpu/embedding.cpp. Leaves out the upload (the caller copies it).
#pragma once

#include <cstdint>
#include <vector>

namespace fsdpx::cuda {

// CSR over the distinct tokens of one batch: bucket u covers token id rows[u] and the flat positions
// positions[offsets[u] .. offsets[u+1]) in ascending order.
struct EmbeddingBuckets {
  std::vector<std::int32_t> rows;       // [U] distinct token ids, ascending
  std::vector<std::int32_t> offsets;    // [U + 1]
  std::vector<std::int32_t> positions;  // [N] flat b·T + t indices
};

// tokens [n] (host); every token must lie in [0, vocab) (checked).
EmbeddingBuckets make_embedding_buckets(const std::int32_t* tokens, std::int64_t n, std::int64_t vocab);

}  // namespace fsdpx::cuda
