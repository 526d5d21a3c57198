// executor/cuda/embedding_buckets.cpp — counting sort of positions by token id (stable: token order
// kept inside each bucket). O(N + V) time, O(V) temporary.
#include "executor/cuda/embedding_buckets.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace fsdpx::cuda {

EmbeddingBuckets make_embedding_buckets(const std::int32_t* tokens, std::int64_t n, std::int64_t vocab) {
  FSDP_CHECK(n >= 0 && n < (std::int64_t(1) << 31), "embedding buckets: too many tokens for int32 positions");
  std::vector<std::int32_t> count(static_cast<std::size_t>(vocab), 0);
  for (std::int64_t i = 0; i < n; ++i) {
    FSDP_CHECK(tokens[i] >= 0 && tokens[i] < vocab, fmt::format("embedding buckets: token {} out of range", tokens[i]));
    ++count[static_cast<std::size_t>(tokens[i])];
  }
  EmbeddingBuckets out;
  std::vector<std::int32_t> start(static_cast<std::size_t>(vocab), 0);  // first position slot of each token
  std::int32_t next = 0;
  out.offsets.push_back(0);
  for (std::int64_t v = 0; v < vocab; ++v) {
    const std::int32_t c = count[static_cast<std::size_t>(v)];
    if (c == 0) continue;
    start[static_cast<std::size_t>(v)] = next;
    next += c;
    out.rows.push_back(std::int32_t(v));
    out.offsets.push_back(next);
  }
  out.positions.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    out.positions[static_cast<std::size_t>(start[static_cast<std::size_t>(tokens[i])]++)] = std::int32_t(i);
  return out;
}

}  // namespace fsdpx::cuda
