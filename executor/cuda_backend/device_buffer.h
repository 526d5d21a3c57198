// executor/cuda_backend/device_buffer.h — owning, move-only arrays of device memory (cudaMalloc) and of
// pinned host memory (cudaMallocHost), so the device model allocates everything once in its constructor
// and frees it in its destructor (llm.c's cudaFreeCheck without the manual pairing). An empty buffer
// holds no allocation and a null pointer. Leaves out pools, stream-ordered allocation and alignment
// beyond cudaMalloc's 256 bytes (which the GEMM heuristic then sees for every activation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "core/errors.h"
#include "executor/cuda/cuda_check.h"

namespace fsdpx::cuda {

// kPinned = false: device memory; true: page-locked host memory (async host <-> device copies).
template <class T, bool kPinned>
class CudaArray {
 public:
  CudaArray() = default;
  explicit CudaArray(std::int64_t count) : count_(count) {
    FSDP_CHECK(count >= 0, "CudaArray: negative element count");
    if (count == 0) return;
    void* p = nullptr;
    if constexpr (kPinned) CUDA_CHECK(cudaMallocHost(&p, bytes()));
    else CUDA_CHECK(cudaMalloc(&p, bytes()));
    ptr_ = static_cast<T*>(p);
  }
  ~CudaArray() { reset(); }
  CudaArray(const CudaArray&) = delete;
  CudaArray& operator=(const CudaArray&) = delete;
  CudaArray(CudaArray&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  CudaArray& operator=(CudaArray&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }

  T* get() const { return ptr_; }
  T* data() const { return ptr_; }  // as std::vector's, for code shared with the CPU (block_sequence.h)
  std::int64_t size() const { return count_; }
  std::int64_t bytes() const { return count_ * std::int64_t(sizeof(T)); }
  bool empty() const { return count_ == 0; }

 private:
  void reset() {
    if (!ptr_) return;
    if constexpr (kPinned) CUDA_CHECK_NOEXCEPT(cudaFreeHost(ptr_));  // also from the destructor
    else CUDA_CHECK_NOEXCEPT(cudaFree(ptr_));
    ptr_ = nullptr;
    count_ = 0;
  }

  T* ptr_ = nullptr;
  std::int64_t count_ = 0;
};

template <class T>
using DeviceBuffer = CudaArray<T, false>;
template <class T>
using PinnedBuffer = CudaArray<T, true>;

// Asynchronous zero fill of a whole device buffer on `stream` (bf16, fp32 and int zero are all-zero bits).
template <class T>
void zero_async(const DeviceBuffer<T>& buf, cudaStream_t stream) {
  if (!buf.empty()) CUDA_CHECK(cudaMemsetAsync(buf.get(), 0, std::size_t(buf.bytes()), stream));
}

}  // namespace fsdpx::cuda
