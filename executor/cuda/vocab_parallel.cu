// executor/cuda/vocab_parallel.cu — the vocabulary-parallel embedding and cross-entropy kernels (see
// vocab_parallel.h). Simple on purpose: the lookup is one thread per output element, its backward one
// thread per table channel walking the tokens in order, the statistics and the backward one thread per
// token row, the loss one thread summing the tokens in order; every sum has one fixed order. A faster
// statistics kernel would reduce a row in a block as cross_entropy.cu does (issue 27).
#include "executor/cuda/vocab_parallel.h"

#include <cmath>

#include "core/errors.h"
#include "executor/cuda/common.cuh"

namespace fsdpx::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks(std::int64_t n) { return unsigned((n + kThreads - 1) / kThreads); }

template <class T>
__global__ void embedding_kernel(T* out, const std::int32_t* tokens, const T* wte, std::int64_t v_first,
                                 std::int64_t v_local, std::int64_t n, std::int64_t c) {
  const std::int64_t i = std::int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n * c) return;
  const std::int64_t row = std::int64_t(tokens[i / c]) - v_first;
  out[i] = row >= 0 && row < v_local ? wte[row * c + i % c] : from_f32<T>(0.0f);
}

template <class T>
__global__ void embedding_backward_kernel(float* dwte, const T* dout, const std::int32_t* tokens,
                                          std::int64_t v_first, std::int64_t v_local, std::int64_t n, std::int64_t c) {
  const std::int64_t j = std::int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (j >= c) return;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t row = std::int64_t(tokens[i]) - v_first;
    if (row >= 0 && row < v_local) dwte[row * c + j] += to_f32(dout[i * c + j]);
  }
}

template <class T>
__global__ void stats_kernel(float* stats, const T* logits, const std::int32_t* targets, std::int64_t n,
                             std::int64_t v_local, std::int64_t v_first) {
  const std::int64_t i = std::int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  const T* z = logits + i * v_local;
  float m = -INFINITY, s = 0.0f;
  for (std::int64_t v = 0; v < v_local; ++v) m = fmaxf(m, to_f32(z[v]));
  for (std::int64_t v = 0; v < v_local; ++v) s += expf(to_f32(z[v]) - m);
  const std::int64_t t = std::int64_t(targets[i]) - v_first;
  stats[i * 3] = m, stats[i * 3 + 1] = s, stats[i * 3 + 2] = t >= 0 && t < v_local ? to_f32(z[t]) : 0.0f;
}

// The log-sum-exp over every rank's slice and the target's logit of token i, in rank order.
__device__ void combine(const float* all, int ranks, std::int64_t n, std::int64_t i, float* lse, float* target) {
  float m = all[i * 3], s = 0.0f, t = 0.0f;
  for (int r = 1; r < ranks; ++r) m = fmaxf(m, all[(r * n + i) * 3]);
  for (int r = 0; r < ranks; ++r) {
    const float* st = all + (r * n + i) * 3;
    s += st[1] * expf(st[0] - m);
    t += st[2];
  }
  *lse = m + logf(s), *target = t;
}

__global__ void loss_kernel(float* loss, const float* all, int ranks, std::int64_t n, float tokens) {
  float total = 0.0f;
  for (std::int64_t i = 0; i < n; ++i) {
    float lse, target;
    combine(all, ranks, n, i, &lse, &target);
    total += lse - target;
  }
  *loss = total / tokens;
}

template <class T>
__global__ void ce_backward_kernel(T* z, const float* all, const std::int32_t* targets, int ranks, std::int64_t n,
                                   std::int64_t v_local, std::int64_t v_first, float scale) {
  const std::int64_t i = std::int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  float lse, target;
  combine(all, ranks, n, i, &lse, &target);
  const std::int64_t t = std::int64_t(targets[i]) - v_first;
  for (std::int64_t v = 0; v < v_local; ++v) {
    const float p = expf(to_f32(z[i * v_local + v]) - lse);
    z[i * v_local + v] = from_f32<T>((p - (v == t ? 1.0f : 0.0f)) * scale);
  }
}

}  // namespace

template <class T>
void vocab_embedding_forward(T* out, const std::int32_t* tokens, const T* wte, std::int64_t v_first,
                             std::int64_t v_local, std::int64_t n, std::int64_t c, cudaStream_t stream) {
  embedding_kernel<T><<<blocks(n * c), kThreads, 0, stream>>>(out, tokens, wte, v_first, v_local, n, c);
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void vocab_embedding_backward(float* dwte, const T* dout, const std::int32_t* tokens, std::int64_t v_first,
                              std::int64_t v_local, std::int64_t n, std::int64_t c, cudaStream_t stream) {
  embedding_backward_kernel<T><<<blocks(c), kThreads, 0, stream>>>(dwte, dout, tokens, v_first, v_local, n, c);
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void vocab_ce_stats(float* stats, const T* logits, const std::int32_t* targets, std::int64_t n, std::int64_t v_local,
                    std::int64_t v_first, cudaStream_t stream) {
  stats_kernel<T><<<blocks(n), kThreads, 0, stream>>>(stats, logits, targets, n, v_local, v_first);
  CUDA_CHECK(cudaGetLastError());
}

void vocab_ce_loss(float* loss, const float* all_stats, int ranks, std::int64_t n, float tokens, cudaStream_t stream) {
  loss_kernel<<<1, 1, 0, stream>>>(loss, all_stats, ranks, n, tokens);
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void vocab_ce_backward(T* logits_to_dlogits, const float* all_stats, const std::int32_t* targets, int ranks,
                       std::int64_t n, std::int64_t v_local, std::int64_t v_first, float scale, cudaStream_t stream) {
  ce_backward_kernel<T><<<blocks(n), kThreads, 0, stream>>>(logits_to_dlogits, all_stats, targets, ranks, n, v_local,
                                                            v_first, scale);
  CUDA_CHECK(cudaGetLastError());
}

FSDPX_VOCAB_PARALLEL_INSTANTIATE(bf16)
FSDPX_VOCAB_PARALLEL_INSTANTIATE(f16)

}  // namespace fsdpx::cuda
