// executor/cuda/cast.cu — elementwise cast and pad kernels, one thread per element; zero tails are
// cudaMemsetAsync (bf16 and fp32 zero are all-zero bits).
#include "executor/cuda/cast.h"

#include "core/errors.h"
#include "executor/cuda/common.cuh"

namespace fsdpx::cuda {
namespace {

constexpr int kBlock = 256;

template <class T>
__global__ void f32_to_16_kernel(T* out, const float* inp, std::int64_t n) {
  const std::int64_t i = std::int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (i < n) out[i] = from_f32<T>(inp[i]);
}

__global__ void round_through_f16_kernel(float* x, std::int64_t n) {
  const std::int64_t i = std::int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (i < n) x[i] = to_f32(from_f32<f16>(x[i]));
}

__global__ void bf16_to_f32_kernel(float* out, const bf16* inp, std::int64_t n, bool accumulate) {
  const std::int64_t i = std::int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (i < n) out[i] = accumulate ? out[i] + to_f32(inp[i]) : to_f32(inp[i]);
}

__global__ void pad_columns_kernel(bf16* dst, const bf16* src, std::int64_t rows, std::int64_t src_cols,
                                   std::int64_t dst_cols) {
  const std::int64_t i = std::int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (i >= rows * dst_cols) return;
  const std::int64_t r = i / dst_cols, c = i % dst_cols;
  dst[i] = c < src_cols ? src[r * src_cols + c] : to_bf16(0.0f);
}

}  // namespace

void cast_f32_to_bf16(bf16* out, const float* inp, std::int64_t n, cudaStream_t stream) {
  cast_f32_to_16(out, inp, n, stream);
}

template <class T>
void cast_f32_to_16(T* out, const float* inp, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  f32_to_16_kernel<T><<<grid_for(n, kBlock), kBlock, 0, stream>>>(out, inp, n);
  CUDA_CHECK(cudaGetLastError());
}
template void cast_f32_to_16<bf16>(bf16*, const float*, std::int64_t, cudaStream_t);
template void cast_f32_to_16<f16>(f16*, const float*, std::int64_t, cudaStream_t);

void round_through_f16(float* x, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  round_through_f16_kernel<<<grid_for(n, kBlock), kBlock, 0, stream>>>(x, n);
  CUDA_CHECK(cudaGetLastError());
}

void cast_bf16_to_f32(float* out, const bf16* inp, std::int64_t n, bool accumulate, cudaStream_t stream) {
  if (n <= 0) return;
  bf16_to_f32_kernel<<<grid_for(n, kBlock), kBlock, 0, stream>>>(out, inp, n, accumulate);
  CUDA_CHECK(cudaGetLastError());
}

void pad_columns_bf16(bf16* dst, const bf16* src, std::int64_t rows, std::int64_t src_cols, std::int64_t dst_cols,
                      cudaStream_t stream) {
  FSDP_CHECK(rows >= 0 && src_cols >= 0 && dst_cols >= src_cols, "pad_columns_bf16: dst narrower than src");
  if (rows * dst_cols == 0) return;
  pad_columns_kernel<<<grid_for(rows * dst_cols, kBlock), kBlock, 0, stream>>>(dst, src, rows, src_cols, dst_cols);
  CUDA_CHECK(cudaGetLastError());
}

void zero_tail_bf16(bf16* buf, std::int64_t valid, std::int64_t padded, cudaStream_t stream) {
  FSDP_CHECK(0 <= valid && valid <= padded, "zero_tail_bf16: valid > padded");
  if (padded > valid) CUDA_CHECK(cudaMemsetAsync(buf + valid, 0, sizeof(bf16) * std::size_t(padded - valid), stream));
}

void zero_tail_f32(float* buf, std::int64_t valid, std::int64_t padded, cudaStream_t stream) {
  FSDP_CHECK(0 <= valid && valid <= padded, "zero_tail_f32: valid > padded");
  if (padded > valid) CUDA_CHECK(cudaMemsetAsync(buf + valid, 0, sizeof(float) * std::size_t(padded - valid), stream));
}

}  // namespace fsdpx::cuda
