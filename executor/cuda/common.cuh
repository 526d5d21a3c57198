// executor/cuda/common.cuh — device-side helpers shared by the .cu kernels: bf16/fp16 <-> fp32 loads,
// warp reductions, CEIL_DIV, and Pack: kN consecutive values moved as one access (16 bytes for 8 bf16, the
// llm.c x128 idea; kN = 1 is the scalar fallback for rows whose length or address is not 16-byte aligned).
// Device code only (included by .cu files, never by .cpp).
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "executor/cuda/cuda_check.h"
#include "executor/cuda/types.h"

namespace fsdpx::cuda {


template <class I>
constexpr I ceil_div(I a, I b) {
  return (a + b - 1) / b;
}

// The grid of a one-thread-per-element launch over `count` elements in blocks of `block` threads.
inline unsigned grid_for(std::int64_t count, int block) { return unsigned(ceil_div<std::int64_t>(count, block)); }

__device__ __forceinline__ float to_f32(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(f16 x) { return __half2float(x); }
__device__ __forceinline__ bf16 to_bf16(float x) { return __float2bfloat16_rn(x); }

// fp32 -> the 16-bit storage type T, round to nearest even (fp16 overflows to ±inf past 65504).
template <class T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ bf16 from_f32<bf16>(float x) { return __float2bfloat16_rn(x); }
template <>
__device__ __forceinline__ f16 from_f32<f16>(float x) { return __float2half_rn(x); }

// 16-bit values per 16-byte access.
inline constexpr int kPack16 = 8;

// kN values of T, aligned to their size so that a load or store of one is a single instruction.
template <class T, int kN>
struct alignas(sizeof(T) * kN) Pack {
  T v[kN];
};

template <int kN, class T>
__device__ __forceinline__ Pack<T, kN> load_pack(const T* p) {
  return *reinterpret_cast<const Pack<T, kN>*>(p);
}

template <int kN, class T>
__device__ __forceinline__ void store_pack(T* p, const Pack<T, kN>& x) {
  *reinterpret_cast<Pack<T, kN>*>(p) = x;
}

// Host side: may p be read as 16-byte packs?
inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

}  // namespace fsdpx::cuda
