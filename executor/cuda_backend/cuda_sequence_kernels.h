// executor/cuda_backend/cuda_sequence_kernels.h — the device launches that the CUDA policies of the shared
// kernel-call sequences (executor/model/mla_sequence.h, moe_sequence.h) name alike, as the CPU's
// (executor/model/cpu_sequence_kernels.h): a block's event timer, zeroing, column copies, bias-free
// cuBLAS(Lt) GEMMs (dx written or accumulated, fp32 dW accumulated) and SwiGLU, all on the block's stream.
// Leaves out what a policy launches on its own (the norms' scratch, the attention core, the MoE rows).
#pragma once

#include <cstdint>

#include "executor/cuda/activation.h"
#include "executor/cuda/context_attention.h"  // copy_columns
#include "executor/cuda/cuda_check.h"
#include "executor/cuda/gemm.h"
#include "executor/cuda_backend/cuda_block.h"

namespace fsdpx::cuda {

template <class T>
struct CudaSequenceKernels {
  using E = T;      // activations
  using S = float;  // norm statistics, the attention core's log-sum-exp
  using G = float;  // weight gradients
  using Ctx = CudaBlockContext<T>;

  static constexpr auto timed = cuda::timed<T>;
  static void zero(const Ctx& ctx, T* p, std::int64_t n) {
    CUDA_CHECK(cudaMemsetAsync(p, 0, std::size_t(n) * sizeof(T), ctx.stream));
  }
  // dst [rows, dst_ld] columns [0, width) = src [rows, src_ld] columns [0, width).
  static void copy_columns(const Ctx& ctx, T* dst, std::int64_t dst_ld, const T* src, std::int64_t src_ld,
                           std::int64_t rows, std::int64_t width) {
    cuda::copy_columns(dst, dst_ld, src, src_ld, rows, width, false, ctx.stream);
  }
  // out [n, oc] = (or += with accumulate) x [n, k] · Wᵀ.
  static void linear(const Ctx& ctx, std::int64_t n, T* out, const T* x, const T* w, std::int64_t k, std::int64_t oc,
                     bool accumulate = false) {
    matmul_forward(*ctx.gemm, out, GemmOut::operand, x, w, nullptr, n, k, oc, accumulate, ctx.stream);
  }
  // dx [n, k] (written, or += with accumulate) from dout [n, oc] · W; dW [oc, k] += doutᵀ · x (fp32).
  static void linear_backward(const Ctx& ctx, std::int64_t n, T* dx, bool accumulate, float* dw, const T* dout,
                              const T* x, const T* w, std::int64_t k, std::int64_t oc) {
    matmul_backward_dx(*ctx.gemm, dx, GemmOut::operand, dout, w, n, k, oc, accumulate, ctx.stream);
    matmul_backward_dw(*ctx.gemm, dw, GemmOut::f32, dout, x, n, k, oc, true, ctx.stream);
  }
  // act [n, f] = SwiGLU of h [n, 2f] ([gate | up]); its backward dh += (dh zeroed by the sequence).
  static void swiglu(const Ctx& ctx, T* act, const T* h, std::int64_t n, std::int64_t f) {
    mlp_act_forward(FfnKind::swiglu, act, h, n, f, ctx.stream);
  }
  static void swiglu_backward(const Ctx& ctx, T* dh, const T* dact, const T* h, std::int64_t n, std::int64_t f) {
    mlp_act_backward(FfnKind::swiglu, dh, dact, h, n, f, ctx.stream);
  }
};

}  // namespace fsdpx::cuda
