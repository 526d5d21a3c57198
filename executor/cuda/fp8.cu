// executor/cuda/fp8.cu — amax, scale, cast and decode kernels of the tensorwise fp8 recipe (see fp8.h). The
// amax is a grid-stride block reduction whose blocks meet in one atomicMax on the float's bits (for
// non-negative floats the integer order is the float order).
#include "executor/cuda/fp8.h"

#include <cuda_fp8.h>

#include "core/errors.h"
#include "executor/cuda/common.cuh"
#include "executor/cuda/cuda_check.h"

namespace fsdpx::cuda {
namespace {

constexpr int kBlock = 256;
constexpr int kMaxBlocks = 1024;

__nv_fp8_interpretation_t interpretation(Fp8Format f) { return f == Fp8Format::e4m3 ? __NV_E4M3 : __NV_E5M2; }

template <class T>
__global__ void amax_kernel(float* amax, const T* x, std::int64_t n) {
  float m = 0.0f;
  for (std::int64_t i = std::int64_t(blockIdx.x) * kBlock + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * kBlock)
    m = fmaxf(m, fabsf(to_f32(x[i])));
  for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  __shared__ float warp_max[kBlock / 32];
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = m;
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (int w = 1; w < kBlock / 32; ++w) m = fmaxf(m, warp_max[w]);
  atomicMax(reinterpret_cast<int*>(amax), __float_as_int(m));
}

__global__ void scale_kernel(float* scale, float* inv_scale, const float* amax, float fp8_max) {
  const float s = fp8_max / fmaxf(amax[0], 1e-12f);  // torchao float8_utils.py EPS
  scale[0] = s;
  inv_scale[0] = 1.0f / s;
}

template <class T>
__global__ void cast_kernel(std::uint8_t* codes, const T* x, std::int64_t rows, std::int64_t cols, bool transpose,
                            const float* scale, __nv_fp8_interpretation_t kind) {
  const std::int64_t i = std::int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (i >= rows * cols) return;
  const std::int64_t r = i / cols, c = i % cols;
  codes[transpose ? c * rows + r : i] = __nv_cvt_float_to_fp8(to_f32(x[i]) * scale[0], __NV_SATFINITE, kind);
}

__global__ void decode_kernel(float* out, const std::uint8_t* codes, std::int64_t n, const float* inv_scale,
                              __nv_fp8_interpretation_t kind) {
  const std::int64_t i = std::int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (i < n) out[i] = __half2float(__half(__nv_cvt_fp8_to_halfraw(codes[i], kind))) * inv_scale[0];
}

}  // namespace

template <class T>
void fp8_amax(float* amax, const T* x, std::int64_t n, cudaStream_t stream) {
  CUDA_CHECK(cudaMemsetAsync(amax, 0, sizeof(float), stream));
  if (n <= 0) return;
  const unsigned blocks = unsigned(ceil_div<std::int64_t>(n, kBlock) < kMaxBlocks ? ceil_div<std::int64_t>(n, kBlock)
                                                                                   : kMaxBlocks);
  amax_kernel<T><<<blocks, kBlock, 0, stream>>>(amax, x, n);
  CUDA_CHECK(cudaGetLastError());
}
template void fp8_amax<float>(float*, const float*, std::int64_t, cudaStream_t);
template void fp8_amax<bf16>(float*, const bf16*, std::int64_t, cudaStream_t);

void fp8_scale_from_amax(float* scale, float* inv_scale, const float* amax, Fp8Format f, cudaStream_t stream) {
  scale_kernel<<<1, 1, 0, stream>>>(scale, inv_scale, amax, fp8_max(f));
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void fp8_cast(std::uint8_t* codes, const T* x, std::int64_t rows, std::int64_t cols, bool transpose,
              const float* scale, Fp8Format f, cudaStream_t stream) {
  FSDP_CHECK(rows >= 0 && cols >= 0, "fp8_cast: negative shape");
  if (rows * cols == 0) return;
  cast_kernel<T><<<grid_for(rows * cols, kBlock), kBlock, 0, stream>>>(codes, x, rows, cols, transpose, scale,
                                                                interpretation(f));
  CUDA_CHECK(cudaGetLastError());
}
template void fp8_cast<float>(std::uint8_t*, const float*, std::int64_t, std::int64_t, bool, const float*, Fp8Format,
                              cudaStream_t);
template void fp8_cast<bf16>(std::uint8_t*, const bf16*, std::int64_t, std::int64_t, bool, const float*, Fp8Format,
                             cudaStream_t);

void fp8_decode(float* out, const std::uint8_t* codes, std::int64_t n, const float* inv_scale, Fp8Format f,
                cudaStream_t stream) {
  if (n <= 0) return;
  decode_kernel<<<grid_for(n, kBlock), kBlock, 0, stream>>>(out, codes, n, inv_scale, interpretation(f));
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace fsdpx::cuda
