// tests/cuda/test_cuda_main.cpp — main of test_cuda: skips (exit 77, ctest SKIP_RETURN_CODE) when no
// CUDA device is visible, so CUDA builds on machines without a GPU (CI) pass; otherwise prints the
// device and the random seed and runs the doctest cases.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <random>

#include "executor/cuda/device.h"
#include "tests/cuda/cuda_test_util.h"

namespace fsdpx::cuda::test {
namespace {
std::uint64_t g_seed = 0;
}
std::mt19937_64& rng() {
  static std::mt19937_64 r(g_seed);
  return r;
}
}  // namespace fsdpx::cuda::test

int main(int argc, char** argv) {
  if (fsdpx::cuda::device_count() == 0) {
    std::printf("SKIPPED: no CUDA device found\n(%s)\n", fsdpx::cuda::cuda_unavailable_reason().c_str());
    return 77;
  }
  fsdpx::cuda::test::g_seed = std::random_device{}();
  std::printf("device: %s\nseed: %llu\n", fsdpx::cuda::describe(fsdpx::cuda::device_info(0)).c_str(),
              static_cast<unsigned long long>(fsdpx::cuda::test::g_seed));
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
