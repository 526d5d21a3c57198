// tests/cuda/comm_test_util.h — helpers for the device communicator tests: an owning stream, pinned host
// memory, stream-ordered uploads/downloads (rank threads use non-blocking streams, so the legacy default
// stream of cuda_test_util.h's helpers would not order against them) and a bitwise comparison that
// reports the first differing element. Leaves out multi-device helpers.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "tests/cuda/cuda_test_util.h"

namespace fsdpx::cuda::test {

class Stream {
 public:
  Stream() { CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { CUDA_CHECK_NOEXCEPT(cudaStreamDestroy(s_)); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  void sync() const { CUDA_CHECK(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

template <class T>
class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t n) : n_(n) { CUDA_CHECK(cudaMallocHost(&ptr_, sizeof(T) * (n ? n : 1))); }
  ~PinnedBuffer() { CUDA_CHECK_NOEXCEPT(cudaFreeHost(ptr_)); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  T* get() const { return ptr_; }
  std::size_t size() const { return n_; }

 private:
  T* ptr_ = nullptr;
  std::size_t n_;
};

// Host x -> device d, in `stream` order, then waits for it.
template <class T, class H>
void upload_on(T* d, const std::vector<H>& x, cudaStream_t stream) {
  static_assert(sizeof(T) == sizeof(H), "same element size");
  CUDA_CHECK(cudaMemcpyAsync(d, x.data(), sizeof(H) * x.size(), cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

// Device d [n] -> host, after everything enqueued on `stream` so far.
template <class H, class T>
std::vector<H> download_on(const T* d, std::size_t n, cudaStream_t stream) {
  static_assert(sizeof(T) == sizeof(H), "same element size");
  std::vector<H> x(n);
  CUDA_CHECK(cudaMemcpyAsync(x.data(), d, sizeof(H) * n, cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return x;
}

// Bit-for-bit equality; prints the first difference (as raw bits) and how many elements differ.
template <class T>
bool same_bits(const std::string& name, const std::vector<T>& got, const std::vector<T>& ref) {
  if (got.size() != ref.size()) {
    MESSAGE(name << ": size " << got.size() << " vs " << ref.size());
    return false;
  }
  std::size_t wrong = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &ref[i], sizeof(T)) != 0 && wrong++ == 0) first = i;
  if (wrong > 0) MESSAGE(name << ": " << wrong << " of " << got.size() << " elements differ, first at " << first);
  return wrong == 0;
}

}  // namespace fsdpx::cuda::test
