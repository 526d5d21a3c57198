// executor/cuda_backend/grad_kernels.cu — see grad_kernels.h. The norm uses a fixed grid (kBlocks ×
// kThreads, grid-stride), a shared-memory tree per block and a single-thread ordered pass over the
// block sums, so the result does not depend on scheduling.
#include "executor/cuda_backend/grad_kernels.h"

#include "core/errors.h"
#include "executor/cuda/common.cuh"

namespace fsdpx::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kBlocks = 264;  // 2 waves of 132 SMs (H100 SXM); any value gives a deterministic result

__global__ void accumulate_check_kernel(float* acc, const float* add, std::int64_t n, int* non_finite) {
  const std::int64_t i = std::int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  const float a = add[i];
  if (non_finite && !isfinite(a)) *non_finite = 1;  // benign race: every writer stores 1
  acc[i] += a;
}

__global__ void block_sum_squares_kernel(const float* x, std::int64_t n, double* partial) {
  __shared__ double s[kThreads];
  double v = 0;
  for (std::int64_t i = std::int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += std::int64_t(kBlocks) * kThreads)
    v += double(x[i]) * double(x[i]);
  s[threadIdx.x] = v;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w >>= 1) {
    if (int(threadIdx.x) < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

__global__ void ordered_sum_kernel(const double* partial, double* out, bool accumulate) {
  double v = 0;
  for (int b = 0; b < kBlocks; ++b) v += partial[b];
  *out = accumulate ? *out + v : v;
}

}  // namespace

void accumulate_check_finite(float* acc, const float* add, std::int64_t n, int* non_finite, cudaStream_t stream) {
  FSDP_CHECK(n >= 0, "accumulate_check_finite: negative size");
  if (n == 0) return;
  accumulate_check_kernel<<<unsigned(ceil_div<std::int64_t>(n, kThreads)), kThreads, 0, stream>>>(acc, add, n,
                                                                                                 non_finite);
  CUDA_CHECK(cudaGetLastError());
}

std::int64_t sum_squares_scratch_elems() { return kBlocks; }

void sum_squares(const float* x, std::int64_t n, double* scratch, double* out, bool accumulate, cudaStream_t stream) {
  FSDP_CHECK(n >= 0, "sum_squares: negative size");
  block_sum_squares_kernel<<<kBlocks, kThreads, 0, stream>>>(x, n, scratch);
  CUDA_CHECK(cudaGetLastError());
  ordered_sum_kernel<<<1, 1, 0, stream>>>(scratch, out, accumulate);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace fsdpx::cuda
