// executor/cuda/activation.cu — elementwise kernels, one thread per output element (n·F), the
// activation kind a template parameter. GELU tanh form 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
// (Hendrycks & Gimpel 2016, §2; llm.c gelu.cuh); SwiGLU silu(gate)·up (Shazeer 2020); ReLU² (Primer).
#include "executor/cuda/activation.h"

#include "core/errors.h"
#include "executor/cuda/common.cuh"

namespace fsdpx::cuda {
namespace {

constexpr int kBlock = 256;
constexpr float kGeluScale = 0.7978845608028654f;  // √(2/π)
constexpr float kGeluCubic = 0.044715f;

template <FfnKind kKind, class T>
__global__ void act_forward_kernel(T* out, const T* inp, std::int64_t n, std::int64_t f) {
  const std::int64_t idx = std::int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (idx >= n * f) return;
  const std::int64_t i = idx / f, j = idx % f;
  const std::int64_t w = kKind == FfnKind::swiglu ? 2 * f : f;
  const float v = to_f32(inp[i * w + j]);
  float y;
  if (kKind == FfnKind::swiglu) {
    y = v / (1.0f + expf(-v)) * to_f32(inp[i * w + f + j]);
  } else if (kKind == FfnKind::gelu) {
    y = 0.5f * v * (1.0f + tanhf(kGeluScale * (v + kGeluCubic * v * v * v)));
  } else {
    y = v > 0.0f ? v * v : 0.0f;
  }
  out[idx] = from_f32<T>(y);
}

template <FfnKind kKind, class T>
__global__ void act_backward_kernel(T* dinp, const T* dout, const T* inp, std::int64_t n, std::int64_t f) {
  const std::int64_t idx = std::int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (idx >= n * f) return;
  const std::int64_t i = idx / f, j = idx % f;
  const std::int64_t w = kKind == FfnKind::swiglu ? 2 * f : f;
  const float v = to_f32(inp[i * w + j]), dy = to_f32(dout[idx]);
  T* dx = dinp + i * w + j;
  if (kKind == FfnKind::swiglu) {
    const float s = 1.0f / (1.0f + expf(-v)), up = to_f32(inp[i * w + f + j]);
    *dx = from_f32<T>(to_f32(*dx) + dy * up * s * (1.0f + v * (1.0f - s)));  // d silu/dv = σ(1 + v(1 − σ))
    dx[f] = from_f32<T>(to_f32(dx[f]) + dy * v * s);
  } else if (kKind == FfnKind::gelu) {
    const float th = tanhf(kGeluScale * (v + kGeluCubic * v * v * v));
    const float du = kGeluScale * (1.0f + 3.0f * kGeluCubic * v * v);
    *dx = from_f32<T>(to_f32(*dx) + dy * (0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * du));
  } else {
    *dx = from_f32<T>(to_f32(*dx) + (v > 0.0f ? 2.0f * v * dy : 0.0f));
  }
}

template <class T>
__global__ void residual_kernel(T* out, const T* a, const T* b, std::int64_t count) {
  const std::int64_t idx = std::int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (idx < count) out[idx] = from_f32<T>(to_f32(a[idx]) + to_f32(b[idx]));
}

unsigned grid_for(std::int64_t count) { return unsigned(ceil_div<std::int64_t>(count, kBlock)); }

}  // namespace

template <class T>
void mlp_act_forward(FfnKind kind, T* out, const T* inp, std::int64_t n, std::int64_t f, cudaStream_t stream) {
  FSDP_CHECK(n > 0 && f > 0, "mlp_act_forward: bad shape");
  const unsigned grid = grid_for(n * f);
  switch (kind) {
    case FfnKind::swiglu: act_forward_kernel<FfnKind::swiglu, T><<<grid, kBlock, 0, stream>>>(out, inp, n, f); break;
    case FfnKind::gelu: act_forward_kernel<FfnKind::gelu, T><<<grid, kBlock, 0, stream>>>(out, inp, n, f); break;
    case FfnKind::squared_relu:
      act_forward_kernel<FfnKind::squared_relu, T><<<grid, kBlock, 0, stream>>>(out, inp, n, f);
      break;
  }
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void mlp_act_backward(FfnKind kind, T* dinp, const T* dout, const T* inp, std::int64_t n, std::int64_t f,
                      cudaStream_t stream) {
  FSDP_CHECK(n > 0 && f > 0, "mlp_act_backward: bad shape");
  const unsigned grid = grid_for(n * f);
  switch (kind) {
    case FfnKind::swiglu:
      act_backward_kernel<FfnKind::swiglu, T><<<grid, kBlock, 0, stream>>>(dinp, dout, inp, n, f);
      break;
    case FfnKind::gelu: act_backward_kernel<FfnKind::gelu, T><<<grid, kBlock, 0, stream>>>(dinp, dout, inp, n, f); break;
    case FfnKind::squared_relu:
      act_backward_kernel<FfnKind::squared_relu, T><<<grid, kBlock, 0, stream>>>(dinp, dout, inp, n, f);
      break;
  }
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void residual_forward(T* out, const T* a, const T* b, std::int64_t count, cudaStream_t stream) {
  FSDP_CHECK(count > 0, "residual_forward: empty");
  residual_kernel<<<grid_for(count), kBlock, 0, stream>>>(out, a, b, count);
  CUDA_CHECK(cudaGetLastError());
}

#define FSDPX_INSTANTIATE(T)                                                                                     \
  template void mlp_act_forward<T>(FfnKind, T*, const T*, std::int64_t, std::int64_t, cudaStream_t);            \
  template void mlp_act_backward<T>(FfnKind, T*, const T*, const T*, std::int64_t, std::int64_t, cudaStream_t); \
  template void residual_forward<T>(T*, const T*, const T*, std::int64_t, cudaStream_t);
FSDPX_INSTANTIATE(bf16)
FSDPX_INSTANTIATE(f16)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cuda
