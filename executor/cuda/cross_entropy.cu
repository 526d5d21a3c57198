// executor/cuda/cross_entropy.cu — one 512-thread block per row: each thread keeps an online (max,
// sum of exp) pair over its strided columns (Milakov & Gimelshein 2018, "Online normalizer calculation
// for softmax"), pairs merge through warp shuffles and shared memory, then a second pass over the row
// writes dlogits. The loss mean is one block summing the row losses in a fixed order.
#include "executor/cuda/cross_entropy.h"

#include <cmath>

#include "core/errors.h"
#include "executor/cuda/common.cuh"

namespace fsdpx::cuda {
namespace {

constexpr int kBlock = 512;

struct MaxSum {
  float m, s;  // running max and Σ exp(x − m)
};

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return {m, 0.0f};
  return {m, a.s * __expf(a.m - m) + b.s * __expf(b.m - m)};
}

__device__ MaxSum block_max_sum(MaxSum v) {
  __shared__ MaxSum warp_vals[kBlock / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const MaxSum other{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)};
    v = merge(v, other);
  }
  if (threadIdx.x % 32 == 0) warp_vals[threadIdx.x / 32] = v;
  __syncthreads();
  MaxSum total{-INFINITY, 0.0f};
  for (int w = 0; w < kBlock / 32; ++w) total = merge(total, warp_vals[w]);  // same order in every thread
  return total;
}

template <class T>
__global__ void fused_classifier_kernel(T* logits, float* losses, const std::int32_t* targets, int vocab,
                                        int vocab_padded, float dlogit_scale, bool write_dlogits) {
  const std::int64_t row = blockIdx.x;
  T* z = logits + row * vocab_padded;  // [Vp]
  MaxSum acc{-INFINITY, 0.0f};
  for (int v = threadIdx.x; v < vocab; v += kBlock) acc = merge(acc, MaxSum{to_f32(z[v]), 1.0f});
  const MaxSum total = block_max_sum(acc);
  const int target = targets[row];
  const float target_logit = to_f32(z[target]);
  __syncthreads();  // everyone has read z[target] before it is overwritten
  if (threadIdx.x == 0) losses[row] = logf(total.s) + total.m - target_logit;
  if (!write_dlogits) return;
  const float inv_sum = 1.0f / total.s;
  for (int v = threadIdx.x; v < vocab_padded; v += kBlock) {
    const float p = v < vocab ? __expf(to_f32(z[v]) - total.m) * inv_sum : 0.0f;
    z[v] = from_f32<T>((p - (v == target ? 1.0f : 0.0f)) * dlogit_scale);
  }
}

__global__ void mean_kernel(float* mean, const float* values, std::int64_t n) {
  __shared__ float partial[kBlock];
  float acc = 0.0f;
  for (std::int64_t i = threadIdx.x; i < n; i += kBlock) acc += values[i];
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = kBlock / 2; stride > 0; stride /= 2) {  // fixed tree: deterministic
    if (int(threadIdx.x) < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) *mean = partial[0] / float(n);
}

}  // namespace

template <class T>
void fused_classifier(T* logits_to_dlogits, float* losses, float* loss_mean, const std::int32_t* targets,
                      std::int64_t n, std::int64_t vocab, std::int64_t vocab_padded, float dloss, bool write_dlogits,
                      cudaStream_t stream) {
  FSDP_CHECK(n > 0 && vocab > 0 && vocab <= vocab_padded && vocab_padded < (1 << 30) && n < (1LL << 31),
             "fused_classifier: bad shape");
  fused_classifier_kernel<T><<<unsigned(n), kBlock, 0, stream>>>(logits_to_dlogits, losses, targets, int(vocab),
                                                                 int(vocab_padded), dloss / float(n), write_dlogits);
  CUDA_CHECK(cudaGetLastError());
  mean_kernel<<<1, kBlock, 0, stream>>>(loss_mean, losses, n);
  CUDA_CHECK(cudaGetLastError());
}

template void fused_classifier<bf16>(bf16*, float*, float*, const std::int32_t*, std::int64_t, std::int64_t,
                                     std::int64_t, float, bool, cudaStream_t);
template void fused_classifier<f16>(f16*, float*, float*, const std::int32_t*, std::int64_t, std::int64_t,
                                    std::int64_t, float, bool, cudaStream_t);

}  // namespace fsdpx::cuda
