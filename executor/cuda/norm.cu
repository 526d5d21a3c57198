// executor/cuda/norm.cu — LayerNorm / RMSNorm kernels: one warp per row for the row statistics and
// dinp (llm.c layernorm_forward_kernel3 layout), and a two-kernel deterministic column reduction for
// dweight/dbias. kLayer selects LayerNorm (mean subtracted, bias) or RMSNorm (mean = 0, no bias).
#include "executor/cuda/norm.h"

#include "core/errors.h"
#include "executor/cuda/common.cuh"

namespace fsdpx::cuda {
namespace {

constexpr int kBlock = 256;                 // threads; 8 rows (warps) per block in the row kernels
template <bool kLayer, class T>
__global__ void norm_forward_kernel(T* out, float* mean, float* rstd, const T* inp, const T* weight, const T* bias,
                                    std::int64_t n, int c, float eps) {
  const std::int64_t row = std::int64_t(blockIdx.x) * (kBlock / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= n) return;
  const T* x = inp + row * c;  // [C]
  float m = 0.0f;
  if (kLayer) {
    for (int j = lane; j < c; j += 32) m += to_f32(x[j]);
    m = warp_sum(m) / float(c);
  }
  float v = 0.0f;
  for (int j = lane; j < c; j += 32) {
    const float d = to_f32(x[j]) - m;
    v += d * d;
  }
  const float s = rsqrtf(warp_sum(v) / float(c) + eps);  // biased variance / mean square
  T* y = out + row * c;
  for (int j = lane; j < c; j += 32) {
    const float yv = (to_f32(x[j]) - m) * s * to_f32(weight[j]);
    y[j] = from_f32<T>(kLayer ? yv + to_f32(bias[j]) : yv);
  }
  if (lane == 0) {
    if (kLayer) mean[row] = m;
    rstd[row] = s;
  }
}

template <bool kLayer, class T>
__global__ void norm_backward_dinp_kernel(T* dinp, const T* dout, const T* inp, const T* weight,
                                          const float* mean, const float* rstd, std::int64_t n, int c) {
  const std::int64_t row = std::int64_t(blockIdx.x) * (kBlock / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= n) return;
  const T* dy = dout + row * c;
  const T* x = inp + row * c;
  const float m = kLayer ? mean[row] : 0.0f, s = rstd[row];
  float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
  for (int j = lane; j < c; j += 32) {
    const float dnorm = to_f32(dy[j]) * to_f32(weight[j]);
    dnorm_mean += dnorm;
    dnorm_norm_mean += dnorm * (to_f32(x[j]) - m) * s;
  }
  dnorm_mean = kLayer ? warp_sum(dnorm_mean) / float(c) : 0.0f;
  dnorm_norm_mean = warp_sum(dnorm_norm_mean) / float(c);
  T* dx = dinp + row * c;
  for (int j = lane; j < c; j += 32) {
    const float norm = (to_f32(x[j]) - m) * s;
    const float dnorm = to_f32(dy[j]) * to_f32(weight[j]);
    dx[j] = from_f32<T>(to_f32(dx[j]) + s * (dnorm - dnorm_mean - norm * dnorm_norm_mean));
  }
}

// scratch [2, chunks, C]: per-chunk Σ dout·norm and Σ dout over that chunk's rows, in row order.
template <bool kLayer, class T>
__global__ void norm_backward_partial_kernel(float* scratch, const T* dout, const T* inp, const float* mean,
                                             const float* rstd, std::int64_t n, int c, std::int64_t chunks) {
  const int j = blockIdx.x * kBlock + threadIdx.x;
  const std::int64_t chunk = blockIdx.y;
  if (j >= c) return;
  const std::int64_t rows = ceil_div(n, chunks), begin = chunk * rows, end = min(n, begin + rows);
  float dw = 0.0f, db = 0.0f;
  for (std::int64_t i = begin; i < end; ++i) {
    const float dy = to_f32(dout[i * c + j]);
    dw += dy * (to_f32(inp[i * c + j]) - (kLayer ? mean[i] : 0.0f)) * rstd[i];
    db += dy;
  }
  scratch[chunk * c + j] = dw;
  scratch[(chunks + chunk) * c + j] = db;
}

__global__ void norm_backward_finish_kernel(float* dweight, float* dbias, const float* scratch, int c,
                                            std::int64_t chunks) {
  const int j = blockIdx.x * kBlock + threadIdx.x;
  if (j >= c) return;
  float dw = 0.0f, db = 0.0f;
  for (std::int64_t k = 0; k < chunks; ++k) {
    dw += scratch[k * c + j];
    db += scratch[(chunks + k) * c + j];
  }
  dweight[j] += dw;
  if (dbias) dbias[j] += db;
}

template <bool kLayer, class T>
void norm_backward(T* dinp, float* dweight, float* dbias, float* scratch, const T* dout, const T* inp,
                   const T* weight, const float* mean, const float* rstd, std::int64_t n, std::int64_t c,
                   cudaStream_t stream) {
  FSDP_CHECK(n > 0 && c > 0 && c <= (1 << 30), "norm_backward: bad shape");
  const std::int64_t chunks = row_chunks(n);
  norm_backward_dinp_kernel<kLayer, T><<<unsigned(ceil_div<std::int64_t>(n, kBlock / 32)), kBlock, 0, stream>>>(
      dinp, dout, inp, weight, mean, rstd, n, int(c));
  CUDA_CHECK(cudaGetLastError());
  FSDP_CHECK(dweight != nullptr || dbias == nullptr, "norm_backward: a bias gradient without the weight's");
  if (!dweight) return;  // a frozen weight (LoRA): the input gradient only
  const dim3 grid(unsigned(ceil_div<std::int64_t>(c, kBlock)), unsigned(chunks));
  norm_backward_partial_kernel<kLayer, T><<<grid, kBlock, 0, stream>>>(scratch, dout, inp, mean, rstd, n, int(c), chunks);
  CUDA_CHECK(cudaGetLastError());
  norm_backward_finish_kernel<<<grid.x, kBlock, 0, stream>>>(dweight, dbias, scratch, int(c), chunks);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace


template <class T>
void layernorm_forward(T* out, float* mean, float* rstd, const T* inp, const T* weight, const T* bias,
                       std::int64_t n, std::int64_t c, float eps, cudaStream_t stream) {
  FSDP_CHECK(n > 0 && c > 0 && c <= (1 << 30), "layernorm_forward: bad shape");
  norm_forward_kernel<true, T><<<unsigned(ceil_div<std::int64_t>(n, kBlock / 32)), kBlock, 0, stream>>>(
      out, mean, rstd, inp, weight, bias, n, int(c), eps);
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void layernorm_backward(T* dinp, float* dweight, float* dbias, float* scratch, const T* dout, const T* inp,
                        const T* weight, const float* mean, const float* rstd, std::int64_t n, std::int64_t c,
                        cudaStream_t stream) {
  norm_backward<true, T>(dinp, dweight, dbias, scratch, dout, inp, weight, mean, rstd, n, c, stream);
}

template <class T>
void rmsnorm_forward(T* out, float* rstd, const T* inp, const T* weight, std::int64_t n, std::int64_t c,
                     float eps, cudaStream_t stream) {
  FSDP_CHECK(n > 0 && c > 0 && c <= (1 << 30), "rmsnorm_forward: bad shape");
  norm_forward_kernel<false, T><<<unsigned(ceil_div<std::int64_t>(n, kBlock / 32)), kBlock, 0, stream>>>(
      out, nullptr, rstd, inp, weight, nullptr, n, int(c), eps);
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void rmsnorm_backward(T* dinp, float* dweight, float* scratch, const T* dout, const T* inp,
                      const T* weight, const float* rstd, std::int64_t n, std::int64_t c, cudaStream_t stream) {
  norm_backward<false, T>(dinp, dweight, nullptr, scratch, dout, inp, weight, nullptr, rstd, n, c, stream);
}

#define FSDPX_INSTANTIATE(T)                                                                                     \
  template void layernorm_forward<T>(T*, float*, float*, const T*, const T*, const T*, std::int64_t, std::int64_t, \
                                     float, cudaStream_t);                                                        \
  template void layernorm_backward<T>(T*, float*, float*, float*, const T*, const T*, const T*, const float*,      \
                                      const float*, std::int64_t, std::int64_t, cudaStream_t);                    \
  template void rmsnorm_forward<T>(T*, float*, const T*, const T*, std::int64_t, std::int64_t, float,             \
                                   cudaStream_t);                                                                 \
  template void rmsnorm_backward<T>(T*, float*, float*, const T*, const T*, const T*, const float*, std::int64_t,  \
                                    std::int64_t, cudaStream_t);
FSDPX_INSTANTIATE(bf16)
FSDPX_INSTANTIATE(f16)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cuda
