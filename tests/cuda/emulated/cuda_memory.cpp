// tests/cuda/emulated/cuda_memory.cpp — memory calls of the emulated CUDA runtime, with CUDA's ordering
// rules (CUDA Runtime API, "API synchronization behavior"): device memory is host memory that starts as
// garbage (all bytes 0xFF: NaN in fp32, bf16 and fp16) — at once for cudaMalloc, at the allocation's point
// in its stream for cudaMallocAsync, whose cudaFreeAsync frees at its point in its stream, so a use not
// ordered after the allocation or before the free reads NaN, races (TSan) or touches freed memory (ASan).
// cudaMemset is asynchronous on the legacy stream; cudaMemcpy waits for the legacy stream; async copies
// from pageable host memory snapshot the source at the call, and those to pageable memory return when done;
// pinned memory (cudaMallocHost) is copied in stream order. cudaFree and cudaFreeHost synchronise the
// device. Leaves out memory pools' reuse policy (attributes are accepted), managed memory and peer copies.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "tests/cuda/emulated/emu_stream.h"

namespace {

using fsdpx::cuda::emu::enqueue;

constexpr int kGarbage = 0xFF;

std::mutex g_pinned_mu;
std::map<std::uintptr_t, std::size_t>& pinned() {  // start -> bytes of every cudaMallocHost block
  static auto* m = new std::map<std::uintptr_t, std::size_t>();
  return *m;
}

bool is_pinned(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard<std::mutex> lk(g_pinned_mu);
  auto it = pinned().upper_bound(a);
  if (it == pinned().begin()) return false;
  --it;
  return a < it->first + it->second;
}

void* host_block(std::size_t bytes) {
  void* p = std::malloc(bytes ? bytes : 1);
  if (!p) {
    std::fprintf(stderr, "emulated CUDA: out of host memory (%zu bytes)\n", bytes);
    std::abort();
  }
  return p;
}

// Enqueues the copy on `s`; returns whether the caller must wait for it (a copy to pageable memory).
bool copy_in_stream_order(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
  if (bytes == 0) return false;
  if (kind == cudaMemcpyHostToDevice && !is_pinned(src)) {
    auto snapshot = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(src),
                                                                 static_cast<const unsigned char*>(src) + bytes);
    enqueue(s, [=] { std::memcpy(dst, snapshot->data(), bytes); });
    return false;
  }
  if (kind == cudaMemcpyDefault) {
    std::fprintf(stderr, "emulated CUDA: cudaMemcpyDefault is not emulated (say the direction)\n");
    std::abort();
  }
  enqueue(s, [=] { std::memcpy(dst, src, bytes); });
  return kind == cudaMemcpyDeviceToHost && !is_pinned(dst);
}

}  // namespace

extern "C" {
cudaError_t cudaMalloc(void** p, size_t bytes) {
  *p = host_block(bytes);
  std::memset(*p, kGarbage, bytes);
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
  if (!p) return cudaSuccess;
  fsdpx::cuda::emu::synchronize_device();
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMallocAsync(void** p, size_t bytes, cudaStream_t s) {
  void* block = host_block(bytes);
  *p = block;
  enqueue(s, [block, bytes] { std::memset(block, kGarbage, bytes); });
  return cudaSuccess;
}
cudaError_t cudaFreeAsync(void* p, cudaStream_t s) {
  if (p) enqueue(s, [p] { std::free(p); });
  return cudaSuccess;
}
cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned int) {
  *p = host_block(bytes);
  std::lock_guard<std::mutex> lk(g_pinned_mu);
  pinned()[reinterpret_cast<std::uintptr_t>(*p)] = bytes ? bytes : 1;
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** p, size_t bytes) { return cudaHostAlloc(p, bytes, 0); }
cudaError_t cudaFreeHost(void* p) {
  if (!p) return cudaSuccess;
  fsdpx::cuda::emu::synchronize_device();
  {
    std::lock_guard<std::mutex> lk(g_pinned_mu);
    pinned().erase(reinterpret_cast<std::uintptr_t>(p));
  }
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int v, size_t bytes, cudaStream_t s) {
  if (bytes > 0) enqueue(s, [=] { std::memset(p, v, bytes); });
  return cudaSuccess;
}
cudaError_t cudaMemset(void* p, int v, size_t bytes) { return cudaMemsetAsync(p, v, bytes, nullptr); }
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
  if (copy_in_stream_order(dst, src, bytes, kind, s)) fsdpx::cuda::emu::synchronize_stream(s);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  copy_in_stream_order(dst, src, bytes, kind, nullptr);
  fsdpx::cuda::emu::synchronize_stream(nullptr);
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  *free_bytes = *total_bytes = std::size_t(8) << 30;
  return cudaSuccess;
}
// One default pool whose attributes are accepted and ignored (the emulation frees in stream order).
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device) {
  static int the_pool = 0;
  if (device != 0) return cudaErrorInvalidDevice;
  *pool = reinterpret_cast<cudaMemPool_t>(&the_pool);
  return cudaSuccess;
}
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, cudaMemPoolAttr, void*) { return cudaSuccess; }
}  // extern "C"
