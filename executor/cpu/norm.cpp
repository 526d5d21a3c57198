// executor/cpu/norm.cpp — LayerNorm and RMSNorm kernels. Rows run in parallel; weight/bias gradients
// are summed per channel over rows in order by one thread each, so results do not depend on the
// thread count (llm.c makes its GPU LN backward deterministic the same way, without float atomics).
#include "executor/cpu/norm.h"

#include <cmath>

namespace fsdpx::cpu {

template <class Real>
void layernorm_forward(Real* out, Real* mean, Real* rstd, const Real* inp, const Real* weight, const Real* bias,
                       std::int64_t n, std::int64_t c, double eps) {
#pragma omp parallel for
  for (std::int64_t i = 0; i < n; ++i) {
    const Real* x = inp + i * c;  // [C]
    Real m = 0;
    for (std::int64_t j = 0; j < c; ++j) m += x[j];
    m /= Real(c);
    Real v = 0;
    for (std::int64_t j = 0; j < c; ++j) v += (x[j] - m) * (x[j] - m);
    v /= Real(c);  // biased variance, as torch.nn.LayerNorm
    const Real s = Real(1) / std::sqrt(v + Real(eps));
    Real* y = out + i * c;
    for (std::int64_t j = 0; j < c; ++j) y[j] = (x[j] - m) * s * weight[j] + bias[j];
    mean[i] = m;
    rstd[i] = s;
  }
}

namespace {

template <class Real>
void layernorm_backward_input(Real* dinp, const Real* dout, const Real* inp, const Real* weight, const Real* mean,
                              const Real* rstd, std::int64_t n, std::int64_t c) {
#pragma omp parallel for
  for (std::int64_t i = 0; i < n; ++i) {
    const Real* dy = dout + i * c;
    const Real* x = inp + i * c;
    Real dnorm_mean = 0, dnorm_norm_mean = 0;
    for (std::int64_t j = 0; j < c; ++j) {
      const Real norm = (x[j] - mean[i]) * rstd[i];
      const Real dnorm = dy[j] * weight[j];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= Real(c);
    dnorm_norm_mean /= Real(c);
    Real* dx = dinp + i * c;
    for (std::int64_t j = 0; j < c; ++j) {
      const Real norm = (x[j] - mean[i]) * rstd[i];
      const Real dnorm = dy[j] * weight[j];
      dx[j] += rstd[i] * (dnorm - dnorm_mean - norm * dnorm_norm_mean);
    }
  }
}

template <class Real>
void layernorm_backward_weight(Real* dweight, Real* dbias, const Real* dout, const Real* inp, const Real* mean,
                               const Real* rstd, std::int64_t n, std::int64_t c) {
#pragma omp parallel for
  for (std::int64_t j = 0; j < c; ++j) {
    Real dw = 0, db = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const Real norm = (inp[i * c + j] - mean[i]) * rstd[i];
      dw += dout[i * c + j] * norm;
      db += dout[i * c + j];
    }
    dweight[j] += dw;
    dbias[j] += db;
  }
}

template <class Real>
void rmsnorm_backward_input(Real* dinp, const Real* dout, const Real* inp, const Real* weight, const Real* rstd,
                            std::int64_t n, std::int64_t c) {
#pragma omp parallel for
  for (std::int64_t i = 0; i < n; ++i) {
    const Real* dy = dout + i * c;
    const Real* x = inp + i * c;
    Real dnorm_norm_mean = 0;
    for (std::int64_t j = 0; j < c; ++j) dnorm_norm_mean += dy[j] * weight[j] * x[j] * rstd[i];
    dnorm_norm_mean /= Real(c);
    Real* dx = dinp + i * c;
    for (std::int64_t j = 0; j < c; ++j)
      dx[j] += rstd[i] * (dy[j] * weight[j] - x[j] * rstd[i] * dnorm_norm_mean);
  }
}

template <class Real>
void rmsnorm_backward_weight(Real* dweight, const Real* dout, const Real* inp, const Real* rstd, std::int64_t n,
                             std::int64_t c) {
#pragma omp parallel for
  for (std::int64_t j = 0; j < c; ++j) {
    Real dw = 0;
    for (std::int64_t i = 0; i < n; ++i) dw += dout[i * c + j] * inp[i * c + j] * rstd[i];
    dweight[j] += dw;
  }
}

}  // namespace

template <class Real>
void layernorm_backward(Real* dinp, Real* dweight, Real* dbias, const Real* dout, const Real* inp,
                        const Real* weight, const Real* mean, const Real* rstd, std::int64_t n, std::int64_t c) {
  if (dinp != nullptr) layernorm_backward_input(dinp, dout, inp, weight, mean, rstd, n, c);
  if (dweight != nullptr) layernorm_backward_weight(dweight, dbias, dout, inp, mean, rstd, n, c);
}

template <class Real>
void rmsnorm_forward(Real* out, Real* rstd, const Real* inp, const Real* weight, std::int64_t n, std::int64_t c,
                     double eps) {
#pragma omp parallel for
  for (std::int64_t i = 0; i < n; ++i) {
    const Real* x = inp + i * c;  // [C]
    Real ss = 0;
    for (std::int64_t j = 0; j < c; ++j) ss += x[j] * x[j];
    const Real s = Real(1) / std::sqrt(ss / Real(c) + Real(eps));
    Real* y = out + i * c;
    for (std::int64_t j = 0; j < c; ++j) y[j] = x[j] * s * weight[j];
    rstd[i] = s;
  }
}

template <class Real>
void rmsnorm_backward(Real* dinp, Real* dweight, const Real* dout, const Real* inp, const Real* weight,
                      const Real* rstd, std::int64_t n, std::int64_t c) {
  if (dinp != nullptr) rmsnorm_backward_input(dinp, dout, inp, weight, rstd, n, c);
  if (dweight != nullptr) rmsnorm_backward_weight(dweight, dout, inp, rstd, n, c);
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
