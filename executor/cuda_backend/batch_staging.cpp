// executor/cuda_backend/batch_staging.cpp — pack tokens, targets and buckets into a pinned slot, then
// one cudaMemcpyAsync of the whole packed array (a fixed size: the unused bucket tail is stale but
// never read, since the kernels see unique_rows).
#include "executor/cuda_backend/batch_staging.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/cuda/embedding_buckets.h"

namespace fsdpx::cuda {

BatchStaging::BatchStaging(std::int64_t n, std::int64_t vocab)
    : n_(n), vocab_(vocab), max_unique_(std::min(n, vocab)), device_(3 * n + 2 * std::min(n, vocab) + 1) {
  FSDP_CHECK(n > 0 && vocab > 0, "BatchStaging: need n > 0 tokens and vocab > 0");
  for (int s = 0; s < 2; ++s) {
    slots_[std::size_t(s)] = PinnedBuffer<std::int32_t>(device_.size());
    std::memset(slots_[std::size_t(s)].get(), 0, std::size_t(slots_[std::size_t(s)].bytes()));
    CUDA_CHECK(cudaEventCreateWithFlags(&copied_[std::size_t(s)], cudaEventDisableTiming));
  }
}

BatchStaging::~BatchStaging() {
  for (cudaEvent_t e : copied_)
    if (e) CUDA_CHECK_NOEXCEPT(cudaEventDestroy(e));
}

void BatchStaging::upload(const std::int32_t* tokens, const std::int32_t* targets, cudaStream_t stream) {
  for (std::int64_t i = 0; i < n_; ++i)  // fused_classifier trusts its targets (cross_entropy.h)
    FSDP_CHECK(targets[i] >= 0 && targets[i] < vocab_, fmt::format("CudaModel: target {} out of range", targets[i]));
  const EmbeddingBuckets bk = make_embedding_buckets(tokens, n_, vocab_);  // checks the tokens
  const auto slot = std::size_t(next_slot_);
  next_slot_ = 1 - next_slot_;
  // The slot's previous copy (two uploads ago) must have read the pinned memory before we overwrite it.
  CUDA_CHECK(cudaEventSynchronize(copied_[slot]));
  std::int32_t* h = slots_[slot].get();
  const auto n = std::size_t(n_);
  std::memcpy(h, tokens, n * sizeof(std::int32_t));
  std::memcpy(h + n, targets, n * sizeof(std::int32_t));
  std::copy(bk.positions.begin(), bk.positions.end(), h + 2 * n);
  std::copy(bk.offsets.begin(), bk.offsets.end(), h + 3 * n);
  std::copy(bk.rows.begin(), bk.rows.end(), h + 3 * n + std::size_t(max_unique_) + 1);
  unique_rows_ = std::int64_t(bk.rows.size());
  CUDA_CHECK(cudaMemcpyAsync(device_.get(), h, std::size_t(device_.bytes()), cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaEventRecord(copied_[slot], stream));
}

}  // namespace fsdpx::cuda
