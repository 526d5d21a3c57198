// tests/cuda/emulated/elem.h — element conversions of the emulated kernels: the device's storage types
// (bf16, f16, and fp32 for the float model of the emulated build) to fp32 and back with round-to-nearest-
// even (cuda_bf16.h / cuda_fp16.h host conversions, the ones the device kernels use), and whole-array
// loads and stores, so each emulated kernel computes in fp32 with the CPU reference kernel between them.
// Leaves out stochastic rounding and fp8.
#pragma once

#include <cstdint>
#include <vector>

#include "executor/cuda/types.h"

namespace fsdpx::cuda::emu {

inline float to_f32(float x) { return x; }
inline float to_f32(bf16 x) { return __bfloat162float(x); }
inline float to_f32(f16 x) { return __half2float(x); }

template <class T>
T from_f32(float x);
template <>
inline float from_f32<float>(float x) { return x; }
template <>
inline bf16 from_f32<bf16>(float x) { return __float2bfloat16_rn(x); }
template <>
inline f16 from_f32<f16>(float x) { return __float2half_rn(x); }

// [n] device values -> fp32 host copy (an empty vector for a null pointer).
template <class T>
std::vector<float> load(const T* p, std::int64_t n) {
  std::vector<float> out(p ? std::size_t(n) : 0);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = to_f32(p[i]);
  return out;
}

template <class T>
void store(T* p, const std::vector<float>& v) {
  for (std::size_t i = 0; i < v.size(); ++i) p[i] = from_f32<T>(v[i]);
}

// The pointer of a loaded copy, or null when the device pointer was null.
inline const float* or_null(const std::vector<float>& v) { return v.empty() ? nullptr : v.data(); }

}  // namespace fsdpx::cuda::emu

// Explicit instantiations of a launcher template for the three storage types.
#define FSDPX_EMU_INSTANTIATE_16_AND_32(MACRO) \
  MACRO(::fsdpx::cuda::bf16)                   \
  MACRO(::fsdpx::cuda::f16)                    \
  MACRO(float)
