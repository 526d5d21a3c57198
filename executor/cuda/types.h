// executor/cuda/types.h — host-includable types for the CUDA launchers: the 16-bit storage types (bf16,
// and f16 for fp16 plans) and the stream type. Every launcher takes device pointers and a stream and
// returns immediately (async); launchers templated on the 16-bit type are instantiated for both.
// Leaves out fp8 storage.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

namespace fsdpx::cuda {
using bf16 = __nv_bfloat16;
using f16 = __half;

// The element types the device model (executor/cuda_backend/) is instantiated for: bf16, f16, and the
// emulated build's float model (tests/cuda/emulated). FSDPX_CUDA_MODEL_TYPES(M) expands M(T) for each.
#if defined(FSDPX_CUDA_EMULATED)
#define FSDPX_CUDA_MODEL_TYPES(M) M(bf16) M(f16) M(float)
#else
#define FSDPX_CUDA_MODEL_TYPES(M) M(bf16) M(f16)
#endif

// A parameter of type no_deduce_t<T> takes no part in template argument deduction (C++20's
// std::type_identity_t; the .cu files compile as C++17), so an optional T pointer may be passed as nullptr.
template <class T>
struct no_deduce {
  using type = T;
};
template <class T>
using no_deduce_t = typename no_deduce<T>::type;
}  // namespace fsdpx::cuda
