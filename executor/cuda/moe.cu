// executor/cuda/moe.cu — the MoE row kernels (see moe.h): the combine one thread per output element; the
// routed gradients one warp per routed row (its dot product a warp sum).
#include "executor/cuda/moe.h"

#include "core/errors.h"
#include "executor/cuda/common.cuh"

namespace fsdpx::cuda {
namespace {

constexpr int kBlock = 256;
constexpr int kWarpsPerBlock = kBlock / 32;

template <class T>
__global__ void combine_kernel(T* out, const T* y, const std::int32_t* rows, const float* weight, std::int64_t n,
                               std::int64_t k, std::int64_t c, bool accumulate) {
  const std::int64_t idx = std::int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (idx >= n * c) return;
  const std::int64_t i = idx / c, j = idx % c;
  float acc = accumulate ? to_f32(out[idx]) : 0.0f;
  for (std::int64_t s = 0; s < k; ++s) {
    const float w = weight ? weight[i * k + s] : 1.0f;
    acc += w * to_f32(y[std::int64_t(rows[i * k + s]) * c + j]);
  }
  out[idx] = from_f32<T>(acc);
}

template <class T>
__global__ void routed_grads_kernel(T* dy, float* dweight, const T* dout, const T* y, const std::int32_t* slot_of_row,
                                    const float* weight, std::int64_t rows, std::int64_t k, std::int64_t c) {
  const std::int64_t r = std::int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (r >= rows) return;
  const int lane = threadIdx.x % 32;
  const std::int64_t slot = slot_of_row[r], i = slot / k;
  const float w = weight[slot];
  float dot = 0.0f;
  for (std::int64_t j = lane; j < c; j += 32) {
    const float g = to_f32(dout[i * c + j]);
    dy[r * c + j] = from_f32<T>(w * g);
    dot += g * to_f32(y[r * c + j]);
  }
  dot = warp_sum(dot);
  if (lane == 0) dweight[slot] = dot;
}

}  // namespace

template <class T>
void moe_combine_rows(T* out, const T* y, const std::int32_t* rows, const float* weight, std::int64_t n,
                      std::int64_t k, std::int64_t c, bool accumulate, cudaStream_t stream) {
  FSDP_CHECK(n > 0 && k > 0 && c > 0, "moe_combine_rows: empty");
  combine_kernel<<<grid_for(n * c, kBlock), kBlock, 0, stream>>>(out, y, rows, weight, n, k, c, accumulate);
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void moe_routed_grads(T* dy, float* dweight, const T* dout, const T* y, const std::int32_t* slot_of_row,
                      const float* weight, std::int64_t rows, std::int64_t k, std::int64_t c, cudaStream_t stream) {
  if (rows == 0) return;
  const unsigned blocks = unsigned(ceil_div<std::int64_t>(rows, kWarpsPerBlock));
  routed_grads_kernel<<<blocks, kBlock, 0, stream>>>(dy, dweight, dout, y, slot_of_row, weight, rows, k, c);
  CUDA_CHECK(cudaGetLastError());
}

FSDPX_MOE_INSTANTIATE(bf16)
FSDPX_MOE_INSTANTIATE(f16)

}  // namespace fsdpx::cuda
