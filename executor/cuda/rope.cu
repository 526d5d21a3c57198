// executor/cuda/rope.cu — one thread per rotated pair (b, t, head, i); forward and backward share the
// kernel with sign ±1 (the rotation is orthogonal: its backward is its transpose).
#include "executor/cuda/rope.h"

#include "core/errors.h"
#include "executor/cuda/common.cuh"

namespace fsdpx::cuda {
namespace {

constexpr int kBlock = 256;

template <class T>
__global__ void rope_kernel(T* qkv, const float* cos_table, const float* sin_table, std::int64_t pairs, int t,
                            int heads, int row, int half, float sign) {
  const std::int64_t idx = std::int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (idx >= pairs) return;
  const int i = int(idx % half);
  const std::int64_t rest = idx / half;
  const int h = int(rest % heads);
  const std::int64_t token = rest / heads;  // b·T + t
  const int ti = int(token % t);
  T* x = qkv + token * row + std::int64_t(h) * 2 * half;  // [HD] of one Q or K head
  const float c = cos_table[ti * half + i], s = sin_table[ti * half + i];
  const float x0 = to_f32(x[i]), x1 = to_f32(x[i + half]);
  x[i] = from_f32<T>(x0 * c - sign * x1 * s);
  x[i + half] = from_f32<T>(x1 * c + sign * x0 * s);
}

template <class T>
void rope(T* qkv, const float* cos_table, const float* sin_table, std::int64_t b, std::int64_t t, std::int64_t nh,
          std::int64_t nkv, std::int64_t hd, float sign, cudaStream_t stream) {
  FSDP_CHECK(hd % 2 == 0 && b > 0 && t > 0 && nh > 0 && nkv > 0, "rope: bad shape");
  const std::int64_t half = hd / 2, heads = nh + nkv, pairs = b * t * heads * half;
  rope_kernel<<<unsigned(ceil_div<std::int64_t>(pairs, kBlock)), kBlock, 0, stream>>>(
      qkv, cos_table, sin_table, pairs, int(t), int(heads), int((nh + 2 * nkv) * hd), int(half), sign);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

template <class T>
void rope_forward(T* qkv, const float* cos_table, const float* sin_table, std::int64_t b, std::int64_t t,
                  std::int64_t nh, std::int64_t nkv, std::int64_t hd, cudaStream_t stream) {
  rope(qkv, cos_table, sin_table, b, t, nh, nkv, hd, 1.0f, stream);
}

template <class T>
void rope_backward(T* dqkv, const float* cos_table, const float* sin_table, std::int64_t b, std::int64_t t,
                   std::int64_t nh, std::int64_t nkv, std::int64_t hd, cudaStream_t stream) {
  rope(dqkv, cos_table, sin_table, b, t, nh, nkv, hd, -1.0f, stream);
}

#define FSDPX_INSTANTIATE(T)                                                                                    \
  template void rope_forward<T>(T*, const float*, const float*, std::int64_t, std::int64_t, std::int64_t,      \
                                std::int64_t, std::int64_t, cudaStream_t);                                     \
  template void rope_backward<T>(T*, const float*, const float*, std::int64_t, std::int64_t, std::int64_t,     \
                                 std::int64_t, std::int64_t, cudaStream_t);
FSDPX_INSTANTIATE(bf16)
FSDPX_INSTANTIATE(f16)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cuda
