// executor/cuda_backend/grad_scaler_kernels.cu — see grad_scaler_kernels.h.
#include "executor/cuda_backend/grad_scaler_kernels.h"

#include "core/errors.h"
#include "executor/cuda/common.cuh"

namespace fsdpx::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void unscale_check_kernel(float* g, std::int64_t n, float inv_scale, int* found_inf) {
  const std::int64_t i = std::int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  const float v = g[i];
  if (!isfinite(v)) *found_inf = 1;  // benign race: every writer stores 1
  g[i] = inv_scale == 1.0f ? v : v * inv_scale;
}

}  // namespace

void unscale_check_finite(float* g, std::int64_t n, float inv_scale, int* found_inf, cudaStream_t stream) {
  FSDP_CHECK(n >= 0, "unscale_check_finite: negative size");
  if (n == 0) return;
  unscale_check_kernel<<<unsigned(ceil_div<std::int64_t>(n, kThreads)), kThreads, 0, stream>>>(g, n, inv_scale,
                                                                                              found_inf);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace fsdpx::cuda
