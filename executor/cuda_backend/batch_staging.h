// executor/cuda_backend/batch_staging.h — one micro-batch's integer inputs on the device: tokens,
// targets and the host-built embedding buckets (executor/cuda/embedding_buckets.h), packed into one
// int32 array and sent with one async copy from a pinned staging slot. Two slots alternate, so the
// caller's host arrays may be reused as soon as upload() returns and the host may run up to two
// micro-batches ahead of the device. Leaves out ignore-index targets and data loading.
#pragma once

#include <array>
#include <cstdint>

#include "executor/cuda/types.h"
#include "executor/cuda_backend/device_buffer.h"

namespace fsdpx::cuda {

class BatchStaging {
 public:
  // n = B·T tokens per micro-batch; token ids and targets lie in [0, vocab).
  BatchStaging(std::int64_t n, std::int64_t vocab);
  ~BatchStaging();
  BatchStaging(const BatchStaging&) = delete;
  BatchStaging& operator=(const BatchStaging&) = delete;

  // tokens, targets: host int32 [n], checked to lie in [0, vocab). Copies them (and their buckets) into
  // a pinned slot, then enqueues one host -> device copy on `stream`. Host synchronisation: waits for the
  // copy that used the same slot two uploads ago (cudaEventSynchronize), never for the whole stream.
  // The device arrays are overwritten in stream order: every kernel reading the previous micro-batch
  // must be ordered before this copy (same stream, or the caller's events).
  void upload(const std::int32_t* tokens, const std::int32_t* targets, cudaStream_t stream);

  const std::int32_t* tokens() const { return device_.get(); }              // [n]
  const std::int32_t* targets() const { return device_.get() + n_; }        // [n]
  const std::int32_t* bucket_positions() const { return device_.get() + 2 * n_; }  // [n]
  const std::int32_t* bucket_offsets() const { return device_.get() + 3 * n_; }    // [unique_rows + 1]
  const std::int32_t* bucket_rows() const { return device_.get() + 3 * n_ + max_unique_ + 1; }  // [unique_rows]
  std::int64_t unique_rows() const { return unique_rows_; }  // of the last upload (host value)

  std::int64_t device_bytes() const { return device_.bytes(); }

 private:
  std::int64_t n_ = 0, vocab_ = 0;
  std::int64_t max_unique_ = 0;  // min(n, vocab): at most this many distinct token ids per batch
  // Packed int32 layout [tokens n | targets n | positions n | offsets max_unique+1 | rows max_unique].
  DeviceBuffer<std::int32_t> device_;
  std::array<PinnedBuffer<std::int32_t>, 2> slots_;
  std::array<cudaEvent_t, 2> copied_{};  // recorded after each slot's copy
  int next_slot_ = 0;
  std::int64_t unique_rows_ = 0;
};

}  // namespace fsdpx::cuda
