// tests/cuda/test_cuda_grad_scaler.cpp — fp16 loss scaling's device pass (unscale in place, inf/NaN flag)
// against the CPU backend's (executor/cpu/fp16.h): bit-identical results, the flag set by an infinity and
// by a NaN and left clear without either.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "executor/cpu/fp16.h"
#include "executor/cuda_backend/grad_scaler_kernels.h"
#include "tests/cuda/cuda_test_util.h"

namespace fsdpx::cuda::test {
namespace {

// Runs the device pass on x; returns the flag and leaves the result in x.
bool device_unscale(std::vector<float>& x, float inv_scale) {
  DeviceBuffer<float> d(std::int64_t(x.size()));
  DeviceBuffer<int> flag(1);
  upload(d, x);
  upload(flag, std::vector<int>{0});
  unscale_check_finite(d.get(), std::int64_t(x.size()), inv_scale, flag.get(), nullptr);
  x = download(d);
  return download(flag)[0] != 0;
}

TEST_CASE("cuda unscale and inf check match the CPU backend's pass") {
  const std::size_t n = 100003;
  std::vector<float> g = random_bf16(n, -3.0f, 3.0f);
  for (float& x : g) x *= 65536.0f;
  for (float inv_scale : {1.0f / 65536.0f, 1.0f, 0.3f}) {
    std::vector<float> cpu_g = g, dev_g = g;
    const bool cpu_inf = cpu::unscale_and_check(cpu_g.data(), std::int64_t(n), inv_scale);
    CHECK_FALSE(cpu_inf);
    CHECK_FALSE(device_unscale(dev_g, inv_scale));
    CHECK(dev_g == cpu_g);
  }
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    std::vector<float> x = g;
    x[n / 2] = bad;
    CHECK(device_unscale(x, 0.5f));
    CHECK(x[0] == g[0] * 0.5f);
  }
}

}  // namespace
}  // namespace fsdpx::cuda::test
