// executor/cpu/activation.cpp — elementwise MLP activations and the residual add. GELU tanh form:
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) (Hendrycks & Gimpel 2016, §2; llm.c gelu_forward), with
// libm's tanh; SwiGLU's sigmoid on the vectorised exp of vec_math.h.
#include "executor/cpu/activation.h"

#include <cmath>

#include "executor/cpu/vec_math.h"
#include "executor/cpu/kernel_pool.h"

namespace fsdpx::cpu {
namespace {

constexpr double kGeluScale = 0.7978845608028654;  // √(2/π)
constexpr double kGeluCubic = 0.044715;

// One row per kind, so that each inner loop is branch-free and vectorises (SwiGLU's exp is vexp).
template <class Real>
void act_row(FfnKind kind, Real* y, const Real* x, std::int64_t f) {
  if (kind == FfnKind::swiglu) {
    for (std::int64_t j = 0; j < f; ++j) y[j] = x[j] * vsigmoid(x[j]) * x[f + j];
  } else if (kind == FfnKind::gelu) {
    for (std::int64_t j = 0; j < f; ++j) {
      const Real v = x[j], u = Real(kGeluScale) * (v + Real(kGeluCubic) * v * v * v);
      y[j] = Real(0.5) * v * (Real(1) + std::tanh(u));
    }
  } else {
    for (std::int64_t j = 0; j < f; ++j) y[j] = x[j] > 0 ? x[j] * x[j] : Real(0);
  }
}

template <class Real>
void act_row_backward(FfnKind kind, Real* dx, const Real* dy, const Real* x, std::int64_t f) {
  if (kind == FfnKind::swiglu) {
    for (std::int64_t j = 0; j < f; ++j) {
      const Real v = x[j], s = vsigmoid(v);
      // d silu(v)/dv = σ(v)·(1 + v·(1 − σ(v)))
      dx[j] += dy[j] * x[f + j] * s * (Real(1) + v * (Real(1) - s));
      dx[f + j] += dy[j] * v * s;
    }
  } else if (kind == FfnKind::gelu) {
    for (std::int64_t j = 0; j < f; ++j) {
      const Real v = x[j], u = Real(kGeluScale) * (v + Real(kGeluCubic) * v * v * v);
      const Real th = std::tanh(u);
      const Real du = Real(kGeluScale) * (Real(1) + Real(3 * kGeluCubic) * v * v);
      dx[j] += dy[j] * (Real(0.5) * (Real(1) + th) + Real(0.5) * v * (Real(1) - th * th) * du);
    }
  } else {
    for (std::int64_t j = 0; j < f; ++j) dx[j] += x[j] > 0 ? dy[j] * Real(2) * x[j] : Real(0);
  }
}

}  // namespace

template <class Real>
void mlp_act_forward(FfnKind kind, Real* out, const Real* inp, std::int64_t n, std::int64_t f) {
  const std::int64_t w = mlp_up_width(kind, f);
  parallel_for(n, n * w, [&](std::int64_t i) { act_row(kind, out + i * f, inp + i * w, f); });
}

template <class Real>
void mlp_act_backward(FfnKind kind, Real* dinp, const Real* dout, const Real* inp, std::int64_t n, std::int64_t f) {
  const std::int64_t w = mlp_up_width(kind, f);
  parallel_for(n, n * w, [&](std::int64_t i) { act_row_backward(kind, dinp + i * w, dout + i * f, inp + i * w, f); });
}

template <class Real>
void residual_forward(Real* out, const Real* a, const Real* b, std::int64_t count) {
  parallel_for_blocks(count, 4096, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) out[i] = a[i] + b[i];
  });
}

#define FSDPX_INSTANTIATE(Real)                                                                           \
  template void mlp_act_forward<Real>(FfnKind, Real*, const Real*, std::int64_t, std::int64_t);            \
  template void mlp_act_backward<Real>(FfnKind, Real*, const Real*, const Real*, std::int64_t, std::int64_t); \
  template void residual_forward<Real>(Real*, const Real*, const Real*, std::int64_t);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cpu
