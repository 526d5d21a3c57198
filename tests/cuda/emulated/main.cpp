// tests/cuda/emulated/main.cpp — main of test_device_comm_emulated: doctest and the fixed-seed rng() that
// the CUDA test files share with test_cuda_main.cpp (there: a fresh seed; here: reproducible runs).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <random>

namespace fsdpx::cuda::test {
std::mt19937_64& rng() {
  static std::mt19937_64 r(12345);
  return r;
}
}  // namespace fsdpx::cuda::test
