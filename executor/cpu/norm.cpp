// executor/cpu/norm.cpp — LayerNorm and RMSNorm kernels. Rows run in parallel, each row's sums as
// `omp simd` reductions (lane partial sums in an order fixed by the build's vector width). Weight/bias
// gradients are summed per channel over rows in order, channels in fixed blocks of kChannelBlock that
// threads share, so results do not depend on the thread count (llm.c makes its GPU LN backward
// deterministic the same way, without float atomics).
#include "executor/cpu/norm.h"
#include "executor/cpu/kernel_pool.h"

#include <algorithm>
#include <cmath>

namespace fsdpx::cpu {
namespace {

constexpr std::int64_t kChannelBlock = 64;

// dst [C] += Σ_i f(i, j) over rows i in order, for channels in fixed blocks (one thread per block).
template <class Real, class F>
void sum_rows_per_channel(Real* dst, std::int64_t n, std::int64_t c, F f) {
  parallel_for((c + kChannelBlock - 1) / kChannelBlock, n * c, [&](std::int64_t blk) {
    const std::int64_t j0 = blk * kChannelBlock, width = std::min(kChannelBlock, c - j0);
    Real acc[kChannelBlock] = {};
    for (std::int64_t i = 0; i < n; ++i)
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j) acc[j] += f(i, j0 + j);
    for (std::int64_t j = 0; j < width; ++j) dst[j0 + j] += acc[j];
  });
}

}  // namespace

template <class Real>
void layernorm_forward(Real* out, Real* mean, Real* rstd, const Real* inp, const Real* weight, const Real* bias,
                       std::int64_t n, std::int64_t c, double eps) {
  parallel_for(n, n * c, [&](std::int64_t i) {
    const Real* x = inp + i * c;  // [C]
    Real m = 0;
#pragma omp simd reduction(+ : m)
    for (std::int64_t j = 0; j < c; ++j) m += x[j];
    m /= Real(c);
    Real v = 0;
#pragma omp simd reduction(+ : v)
    for (std::int64_t j = 0; j < c; ++j) v += (x[j] - m) * (x[j] - m);
    v /= Real(c);  // biased variance, as torch.nn.LayerNorm
    const Real s = Real(1) / std::sqrt(v + Real(eps));
    Real* y = out + i * c;
    for (std::int64_t j = 0; j < c; ++j) y[j] = (x[j] - m) * s * weight[j] + bias[j];
    mean[i] = m;
    rstd[i] = s;
  });
}

template <class Real>
void layernorm_backward(Real* dinp, Real* dweight, Real* dbias, const Real* dout, const Real* inp,
                        const Real* weight, const Real* mean, const Real* rstd, std::int64_t n, std::int64_t c) {
  if (dinp != nullptr) parallel_for(n, n * c, [&](std::int64_t i) {
    const Real* dy = dout + i * c;
    const Real* x = inp + i * c;
    const Real m = mean[i], s = rstd[i];
    Real dnorm_mean = 0, dnorm_norm_mean = 0;
#pragma omp simd reduction(+ : dnorm_mean, dnorm_norm_mean)
    for (std::int64_t j = 0; j < c; ++j) {
      const Real dnorm = dy[j] * weight[j];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * ((x[j] - m) * s);
    }
    dnorm_mean /= Real(c);
    dnorm_norm_mean /= Real(c);
    Real* dx = dinp + i * c;
    for (std::int64_t j = 0; j < c; ++j)
      dx[j] += s * (dy[j] * weight[j] - dnorm_mean - (x[j] - m) * s * dnorm_norm_mean);
  });
  if (dweight == nullptr) return;
  sum_rows_per_channel(dweight, n, c, [&](std::int64_t i, std::int64_t j) {
    return dout[i * c + j] * ((inp[i * c + j] - mean[i]) * rstd[i]);
  });
  sum_rows_per_channel(dbias, n, c, [&](std::int64_t i, std::int64_t j) { return dout[i * c + j]; });
}

template <class Real>
void rmsnorm_forward(Real* out, Real* rstd, const Real* inp, const Real* weight, std::int64_t n, std::int64_t c,
                     double eps) {
  parallel_for(n, n * c, [&](std::int64_t i) {
    const Real* x = inp + i * c;  // [C]
    Real ss = 0;
#pragma omp simd reduction(+ : ss)
    for (std::int64_t j = 0; j < c; ++j) ss += x[j] * x[j];
    const Real s = Real(1) / std::sqrt(ss / Real(c) + Real(eps));
    Real* y = out + i * c;
    for (std::int64_t j = 0; j < c; ++j) y[j] = x[j] * s * weight[j];
    rstd[i] = s;
  });
}

template <class Real>
void rmsnorm_backward(Real* dinp, Real* dweight, const Real* dout, const Real* inp, const Real* weight,
                      const Real* rstd, std::int64_t n, std::int64_t c) {
  if (dinp != nullptr) parallel_for(n, n * c, [&](std::int64_t i) {
    const Real* dy = dout + i * c;
    const Real* x = inp + i * c;
    const Real s = rstd[i];
    Real dnorm_norm_mean = 0;
#pragma omp simd reduction(+ : dnorm_norm_mean)
    for (std::int64_t j = 0; j < c; ++j) dnorm_norm_mean += dy[j] * weight[j] * x[j] * s;
    dnorm_norm_mean /= Real(c);
    Real* dx = dinp + i * c;
    for (std::int64_t j = 0; j < c; ++j) dx[j] += s * (dy[j] * weight[j] - x[j] * s * dnorm_norm_mean);
  });
  if (dweight == nullptr) return;
  sum_rows_per_channel(dweight, n, c,
                       [&](std::int64_t i, std::int64_t j) { return dout[i * c + j] * inp[i * c + j] * rstd[i]; });
}

#define FSDPX_INSTANTIATE(Real)                                                                                \
  template void layernorm_forward<Real>(Real*, Real*, Real*, const Real*, const Real*, const Real*, std::int64_t, \
                                        std::int64_t, double);                                                \
  template void layernorm_backward<Real>(Real*, Real*, Real*, const Real*, const Real*, const Real*, const Real*, \
                                         const Real*, std::int64_t, std::int64_t);                            \
  template void rmsnorm_forward<Real>(Real*, Real*, const Real*, const Real*, std::int64_t, std::int64_t, double); \
  template void rmsnorm_backward<Real>(Real*, Real*, const Real*, const Real*, const Real*, const Real*,        \
                                       std::int64_t, std::int64_t);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cpu
