// tests/cuda/cuda_test_util.h — helpers for the CUDA-vs-CPU kernel tests: an owning device buffer,
// host bf16 rounding (round-to-nearest-even, the rounding of __float2bfloat16_rn), fresh random inputs
// and a closeness check that prints maxdiff and the relative norm error (llm.c check_tensor;
// .library/device/METHOD.md: bf16 operands land between 1e-3 and 1e-2). Leaves out fp16.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>  // the typed cudaMalloc(T**) template; nccl.h included it only when NCCL is found
#include <doctest/doctest.h>

#include "executor/cuda/cuda_check.h"
#include "executor/cuda/types.h"
#include "tests/nan_max.h"

namespace fsdpx::cuda::test {

inline std::uint16_t bf16_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);                     // round to nearest even
  return std::uint16_t(u >> 16);
}
inline float bf16_value(std::uint16_t b) {
  const std::uint32_t u = std::uint32_t(b) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
inline float round_bf16(float x) { return bf16_value(bf16_bits(x)); }

template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t n) : n_(n) { CUDA_CHECK(cudaMalloc(&ptr_, sizeof(T) * (n ? n : 1))); }
  ~DeviceBuffer() { CUDA_CHECK_NOEXCEPT(cudaFree(ptr_)); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() const { return ptr_; }
  std::size_t size() const { return n_; }

 private:
  T* ptr_ = nullptr;
  std::size_t n_;
};

// Host floats -> device bf16 (rounded); device bf16 -> host floats.
inline void upload_bf16(DeviceBuffer<bf16>& d, const std::vector<float>& x) {
  std::vector<std::uint16_t> bits(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) bits[i] = bf16_bits(x[i]);
  CUDA_CHECK(cudaMemcpy(d.get(), bits.data(), 2 * x.size(), cudaMemcpyHostToDevice));
}
inline std::vector<float> download_bf16(const DeviceBuffer<bf16>& d) {
  std::vector<std::uint16_t> bits(d.size());
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(bits.data(), d.get(), 2 * d.size(), cudaMemcpyDeviceToHost));
  std::vector<float> x(bits.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = bf16_value(bits[i]);
  return x;
}
template <class T>
void upload(DeviceBuffer<T>& d, const std::vector<T>& x) {
  CUDA_CHECK(cudaMemcpy(d.get(), x.data(), sizeof(T) * x.size(), cudaMemcpyHostToDevice));
}
template <class T>
std::vector<T> download(const DeviceBuffer<T>& d) {
  std::vector<T> x(d.size());
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(x.data(), d.get(), sizeof(T) * x.size(), cudaMemcpyDeviceToHost));
  return x;
}

// Fresh seed per process (printed by the test main), so every run draws new inputs.
std::mt19937_64& rng();

// n values uniform in [lo, hi), already representable in bf16 (CPU and GPU see the same inputs).
inline std::vector<float> random_bf16(std::size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> x(n);
  for (float& v : x) v = round_bf16(u(rng()));
  return x;
}

// Passes when every |got − ref| ≤ atol + rtol·|ref| and both are finite; prints maxdiff and ‖got − ref‖/‖ref‖ either way.
inline bool close(const std::string& name, const std::vector<float>& got, const std::vector<float>& ref, double atol,
                  double rtol) {
  REQUIRE(got.size() == ref.size());
  double maxdiff = 0, worst = 0, num = 0, den = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    // NaN-safe: a non-finite value on either side fails, and NaN differences are not dropped (std::max
    // and `>` ignore NaN).
    const double d = std::fabs(double(got[i]) - double(ref[i]));
    const bool finite = std::isfinite(got[i]) && std::isfinite(ref[i]);
    const double ratio = finite ? d / (atol + rtol * std::fabs(double(ref[i]))) : 1e30;
    if (ratio > worst) worst = ratio, at = i;
    maxdiff = ::fsdpx::test::nan_max(maxdiff, d);
    num += d * d;
    den += double(ref[i]) * double(ref[i]);
  }
  MESSAGE(name << ": maxdiff " << maxdiff << ", rel norm err " << std::sqrt(num / (den > 0 ? den : 1)) << " (atol "
                << atol << ", rtol " << rtol << "; worst at " << at << ": got " << got[at] << " ref " << ref[at] << ")");
  return worst <= 1.0;
}

// bf16 output tolerance: 2 units in the last place (2^-7 relative) plus atol for values near zero.
constexpr double kBf16Rtol = 1.0 / 128;

}  // namespace fsdpx::cuda::test
