// executor/cuda_backend/host_staging.h — copies between device T buffers (bf16, f16, or the emulated
// build's float) and host fp32 vectors, for the blocks that run shared host code on staged tensors
// (cuda_mla_attention.h) or on small device results (cuda_moe_mlp.h: router logits, the combine weights'
// and the logits' gradients, the loss scalar). Each call waits for its stream: what the kernels before it
// wrote is there, and the host vector may be freed on return. Leaves out pinned memory and overlap.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "executor/cuda/cuda_check.h"

// M(T) for each activation type the CUDA blocks run: bf16, f16 and, in the emulated build, float (what
// the host-staged files instantiate).
#if defined(FSDPX_CUDA_EMULATED)
#define FSDPX_HOST_STAGED_TYPES(M) M(bf16) M(f16) M(float)
#else
#define FSDPX_HOST_STAGED_TYPES(M) M(bf16) M(f16)
#endif

namespace fsdpx::cuda {

// host [n] (fp32) = device src [n] (T); empty-valued (zeros) when src is null.
template <class T>
std::vector<float> download(const T* src, std::int64_t n, cudaStream_t stream) {
  std::vector<float> out(static_cast<std::size_t>(n));
  if (n == 0 || src == nullptr) return out;
  std::vector<T> raw(out.size());
  CUDA_CHECK(cudaMemcpyAsync(raw.data(), src, raw.size() * sizeof(T), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  for (std::size_t i = 0; i < raw.size(); ++i) out[i] = static_cast<float>(raw[i]);
  return out;
}

// device dst [n] (T) = host src [n] (fp32, rounded to T); returns once the copy has landed.
template <class T>
void upload(T* dst, const std::vector<float>& src, cudaStream_t stream) {
  if (src.empty() || dst == nullptr) return;
  std::vector<T> raw(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) raw[i] = T(src[i]);
  CUDA_CHECK(cudaMemcpyAsync(dst, raw.data(), raw.size() * sizeof(T), cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

// Staged tensors: each device tensor's host copy, kept in `store`, with where it came from (so that
// gradients staged this way go back with put_back).
template <class T>
struct StagedTensors {
  std::vector<std::vector<float>> store;
  std::vector<T*> from;
  // The host copy of src [n] (null for a null src); the pointer stays valid while this object lives
  // (growing `store` moves the inner vectors, whose buffers stay where they are).
  float* stage(T* src, std::int64_t n, cudaStream_t stream) {
    if (!src) return nullptr;
    store.push_back(download(static_cast<const std::remove_const_t<T>*>(src), n, stream));
    from.push_back(src);
    return store.back().data();
  }
  // Every staged tensor back to the device buffer it came from (T non-const: gradients).
  void put_back(cudaStream_t stream) {
    for (std::size_t i = 0; i < store.size(); ++i) upload(from[i], store[i], stream);
  }
};

}  // namespace fsdpx::cuda
