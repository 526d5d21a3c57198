// executor/model/cpu_sequence_kernels.h — the host kernels that the CPU policies of the shared kernel-call
// sequences (mla_sequence.h, moe_sequence.h) name alike: a timer per kernel group, zeroing, column copies,
// bias-free GEMMs in llm.c's layout (executor/cpu/gemm.h; the CPU's dx and dW accumulate, so a written dx
// is zeroed first), SwiGLU and RMSNorm. Every function takes the policy's context first, as the device's
// (cuda_backend/cuda_sequence_kernels.h); a context names its profiler `prof` and its `module`. Leaves out
// fp8 (those blocks refuse it) and everything a policy does on its own. Names the element types E, S, G.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "executor/cpu/activation.h"
#include "executor/cpu/gemm.h"
#include "executor/cpu/norm.h"
#include "executor/model/op_profiler.h"

namespace fsdpx {

template <class Real>
struct CpuSequenceKernels {
  using E = Real;  // activations
  using S = Real;  // norm statistics, the attention core's keep
  using G = Real;  // weight gradients
  static constexpr const Real* kNoBias = nullptr;

  template <class Ctx>
  static PausableOp timed(const Ctx& ctx, std::string_view op) { return PausableOp(ctx.prof, op, ctx.module); }
  template <class Ctx>
  static void zero(const Ctx&, Real* p, std::int64_t n) { std::fill(p, p + n, Real(0)); }
  // dst [rows, dst_ld] columns [0, width) = src [rows, src_ld] columns [0, width).
  template <class Ctx>
  static void copy_columns(const Ctx&, Real* dst, std::int64_t dst_ld, const Real* src, std::int64_t src_ld,
                           std::int64_t rows, std::int64_t width) {
    for (std::int64_t i = 0; i < rows; ++i) std::copy_n(src + i * src_ld, width, dst + i * dst_ld);
  }
  // out [n, oc] = (or += with accumulate, through a product of its own) x [n, k] · Wᵀ.
  template <class Ctx>
  static void linear(const Ctx&, std::int64_t n, Real* out, const Real* x, const Real* w, std::int64_t k,
                     std::int64_t oc, bool accumulate = false) {
    if (!accumulate) return cpu::matmul_forward(out, x, w, kNoBias, n, k, oc);
    std::vector<Real> y(static_cast<std::size_t>(n * oc));
    cpu::matmul_forward(y.data(), x, w, kNoBias, n, k, oc);
    for (std::int64_t i = 0; i < n * oc; ++i) out[i] += y[static_cast<std::size_t>(i)];
  }
  // dx [n, k] (written, or += with accumulate) from dout [n, oc] · W; dW [oc, k] += doutᵀ · x.
  template <class Ctx>
  static void linear_backward(const Ctx& ctx, std::int64_t n, Real* dx, bool accumulate, Real* dw, const Real* dout,
                              const Real* x, const Real* w, std::int64_t k, std::int64_t oc) {
    if (!accumulate) zero(ctx, dx, n * k);
    cpu::matmul_backward_dx(dx, dout, w, n, k, oc);
    cpu::matmul_backward_dw(dw, static_cast<Real*>(nullptr), dout, x, n, k, oc);
  }
  // act [n, f] = SwiGLU of h [n, 2f] ([gate | up]); its backward dh += (dh zeroed by the sequence).
  template <class Ctx>
  static void swiglu(const Ctx&, Real* act, const Real* h, std::int64_t n, std::int64_t f) {
    cpu::mlp_act_forward(FfnKind::swiglu, act, h, n, f);
  }
  template <class Ctx>
  static void swiglu_backward(const Ctx&, Real* dh, const Real* dact, const Real* h, std::int64_t n, std::int64_t f) {
    cpu::mlp_act_backward(FfnKind::swiglu, dh, dact, h, n, f);
  }
  template <class Ctx>
  static void rms_forward(const Ctx&, Real* out, Real* rstd, const Real* x, const Real* w, std::int64_t n,
                          std::int64_t c, double eps) {
    cpu::rmsnorm_forward(out, rstd, x, w, n, c, eps);
  }
  // dinp += and dw += (dinp zeroed by the sequence).
  template <class Ctx>
  static void rms_backward(const Ctx&, Real* dinp, Real* dw, const Real* dout, const Real* x, const Real* w,
                           const Real* rstd, std::int64_t n, std::int64_t c) {
    cpu::rmsnorm_backward(dinp, dw, dout, x, w, rstd, n, c);
  }
};

}  // namespace fsdpx
