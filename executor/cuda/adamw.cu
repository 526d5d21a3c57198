// executor/cuda/adamw.cu — one thread per element (llm.c adamw_kernel3 without the lerp trick, so the
// arithmetic order equals the CPU reference). Bias corrections are computed once on the host in double.
#include "executor/cuda/adamw.h"

#include <cmath>

#include "core/errors.h"
#include "executor/cuda/common.cuh"

namespace fsdpx::cuda {
namespace {

constexpr int kBlock = 256;

struct AdamWConsts {
  float b1, b2, eps, decay, step_size, bc2_sqrt, grad_scale;
};

template <class T>
__global__ void adamw_kernel(AdamWConsts k, float* params, float* exp_avg, float* exp_avg_sq, const float* grads,
                             T* params_16, std::int64_t n) {
  const std::int64_t i = std::int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (i >= n) return;
  const float g = grads[i] * k.grad_scale;
  const float m = k.b1 * exp_avg[i] + (1.0f - k.b1) * g;
  const float v = k.b2 * exp_avg_sq[i] + (1.0f - k.b2) * g * g;
  exp_avg[i] = m;
  exp_avg_sq[i] = v;
  const float denom = sqrtf(v) / k.bc2_sqrt + k.eps;
  const float p = params[i] * k.decay - k.step_size * m / denom;
  params[i] = p;
  if (params_16) params_16[i] = from_f32<T>(p);
}

}  // namespace

template <class T>
void adamw_update(const AdamWArgs& a, float* params, float* exp_avg, float* exp_avg_sq, const float* grads,
                  T* params_16, std::int64_t n, cudaStream_t stream) {
  FSDP_CHECK(a.t >= 1 && n >= 0, "adamw_update: t must be >= 1");
  if (n == 0) return;
  // p ← p·(1 − lr·wd) − lr/(1−β1^t) · m / (√v / √(1−β2^t) + eps)  (torch.optim.AdamW, single-tensor path)
  const double bc1 = 1.0 - std::pow(double(a.beta1), double(a.t));
  const double bc2 = 1.0 - std::pow(double(a.beta2), double(a.t));
  const AdamWConsts k{a.beta1, a.beta2, a.eps, float(1.0 - double(a.lr) * double(a.weight_decay)),
                      float(double(a.lr) / bc1), float(std::sqrt(bc2)), a.grad_scale};
  adamw_kernel<T><<<unsigned(ceil_div<std::int64_t>(n, kBlock)), kBlock, 0, stream>>>(k, params, exp_avg, exp_avg_sq,
                                                                                     grads, params_16, n);
  CUDA_CHECK(cudaGetLastError());
}
template void adamw_update<bf16>(const AdamWArgs&, float*, float*, float*, const float*, bf16*, std::int64_t,
                                 cudaStream_t);
template void adamw_update<f16>(const AdamWArgs&, float*, float*, float*, const float*, f16*, std::int64_t,
                                cudaStream_t);

}  // namespace fsdpx::cuda
