// executor/cuda/embedding.cu — embedding kernels. Forward: one thread per output element. Backward:
// grid (bucket, channel block); each thread owns one dwte element and adds its bucket's positions in
// order (one writer per element: bitwise deterministic, llm.c encoder_backward's reason).
#include "executor/cuda/embedding.h"

#include "core/errors.h"
#include "executor/cuda/common.cuh"

namespace fsdpx::cuda {
namespace {

constexpr int kBlock = 256;

template <class T>
__global__ void embedding_forward_kernel(T* out, const std::int32_t* tokens, const T* wte, const T* wpe,
                                         std::int64_t count, int t, int c) {
  const std::int64_t idx = std::int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (idx >= count) return;
  const std::int64_t i = idx / c;
  const int j = int(idx % c);
  float v = to_f32(wte[std::int64_t(tokens[i]) * c + j]);
  if (wpe) v += to_f32(wpe[(i % t) * c + j]);
  out[idx] = from_f32<T>(v);
}

template <class T>
__global__ void embedding_backward_wte_kernel(float* dwte, const T* dout, const std::int32_t* rows,
                                              const std::int32_t* offsets, const std::int32_t* positions, int c) {
  const std::int64_t u = blockIdx.x;
  const int j = blockIdx.y * kBlock + threadIdx.x;
  if (j >= c) return;
  float acc = 0.0f;
  for (std::int32_t p = offsets[u]; p < offsets[u + 1]; ++p) acc += to_f32(dout[std::int64_t(positions[p]) * c + j]);
  dwte[std::int64_t(rows[u]) * c + j] += acc;
}

template <class T>
__global__ void embedding_backward_wpe_kernel(float* dwpe, const T* dout, int b, int t, int c) {
  const std::int64_t idx = std::int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (idx >= std::int64_t(t) * c) return;
  const std::int64_t ti = idx / c, j = idx % c;
  float acc = 0.0f;
  for (int bi = 0; bi < b; ++bi) acc += to_f32(dout[(bi * std::int64_t(t) + ti) * c + j]);
  dwpe[idx] += acc;
}

}  // namespace

template <class T>
void embedding_forward(T* out, const std::int32_t* tokens, const T* wte, const no_deduce_t<T>* wpe,
                       std::int64_t b, std::int64_t t, std::int64_t c, cudaStream_t stream) {
  FSDP_CHECK(b > 0 && t > 0 && c > 0 && c < (1 << 30), "embedding_forward: bad shape");
  const std::int64_t count = b * t * c;
  embedding_forward_kernel<T><<<unsigned(ceil_div<std::int64_t>(count, kBlock)), kBlock, 0, stream>>>(
      out, tokens, wte, wpe, count, int(t), int(c));
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void embedding_backward(float* dwte, float* dwpe, const T* dout, const std::int32_t* bucket_rows,
                        const std::int32_t* bucket_offsets, const std::int32_t* bucket_positions,
                        std::int64_t unique_rows, std::int64_t b, std::int64_t t, std::int64_t c, cudaStream_t stream) {
  FSDP_CHECK(b > 0 && t > 0 && c > 0 && c < (1 << 30) && unique_rows < (std::int64_t(1) << 31),
             "embedding_backward: bad shape");
  if (unique_rows > 0) {
    const dim3 grid(unsigned(unique_rows), unsigned(ceil_div<std::int64_t>(c, kBlock)));
    embedding_backward_wte_kernel<T><<<grid, kBlock, 0, stream>>>(dwte, dout, bucket_rows, bucket_offsets,
                                                              bucket_positions, int(c));
    CUDA_CHECK(cudaGetLastError());
  }
  if (dwpe) {
    embedding_backward_wpe_kernel<T><<<unsigned(ceil_div<std::int64_t>(t * c, kBlock)), kBlock, 0, stream>>>(
        dwpe, dout, int(b), int(t), int(c));
    CUDA_CHECK(cudaGetLastError());
  }
}

#define FSDPX_INSTANTIATE(T)                                                                                     \
  template void embedding_forward<T>(T*, const std::int32_t*, const T*, const T*, std::int64_t, std::int64_t,     \
                                     std::int64_t, cudaStream_t);                                                 \
  template void embedding_backward<T>(float*, float*, const T*, const std::int32_t*, const std::int32_t*,         \
                                      const std::int32_t*, std::int64_t, std::int64_t, std::int64_t, std::int64_t, \
                                      cudaStream_t);
FSDPX_INSTANTIATE(bf16)
FSDPX_INSTANTIATE(f16)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cuda
