// executor/cuda/fp8_gemm.h — fp8 GEMMs through cuBLASLt on sm_90 (cuBLAS docs, cublasLtMatmul "FP8"):
// E4M3 x E4M3 (or one E5M2 operand: E5M2 x E5M2 is not offered) -> bf16, fp32 accumulation, the
// operands' inverse scales passed as device pointers (CUBLASLT_MATMUL_DESC_A/B_SCALE_POINTER) so that
// D = a_inv_scale·b_inv_scale·op(A)·op(B), and the amax of the bf16 D written to a device pointer when asked
// (fp8_amax after the GEMM: cuBLASLt's CUBLASLT_MATMUL_DESC_AMAX_D_POINTER takes only an fp8 D). Hopper's fp8 kernels take only the "TN" layout (A
// transposed, B not), so each of the linear layer's three GEMMs reads operands cast in the layout it needs
// (fp8.h fp8_cast, transpose). cuBLASLt needs k, lda and ldb multiples of 16 and 16-byte aligned operands.
// Leaves out fp8 outputs (D_SCALE), bias epilogues, rowwise scales and use_fast_accum.
#pragma once

#include <cstdint>

#include "executor/cuda/fp8.h"
#include "executor/cuda/gemm.h"

namespace fsdpx::cuda {

// One fp8 operand: its codes and the device pointer to 1 / its cast scale.
struct Fp8Operand {
  const std::uint8_t* codes = nullptr;
  Fp8Format format = Fp8Format::e4m3;
  const float* inv_scale = nullptr;
};

// Column-major D [m, n] (ldd = m) (+)= Aᵀ · B with A stored column-major [k, m] (lda = k) and B [k, n]
// (ldb = k); amax_d (device, may be null) := max |D|.
void fp8_gemm_tn(GemmContext& ctx, std::int64_t m, std::int64_t n, std::int64_t k, const Fp8Operand& a,
                 const Fp8Operand& b, bf16* d, float* amax_d, bool accumulate, cudaStream_t stream);

// The linear layer's GEMMs on row-major operands (executor/cpu/gemm.h shapes), from operands cast as each needs:
// out [N, OC] = inp [N, C] · W [OC, C]ᵀ: inp and W as cast (no transpose).
inline void fp8_matmul_forward(GemmContext& ctx, bf16* out, const Fp8Operand& inp, const Fp8Operand& w, std::int64_t n,
                               std::int64_t c, std::int64_t oc, float* amax_out, cudaStream_t stream) {
  fp8_gemm_tn(ctx, oc, n, c, w, inp, out, amax_out, false, stream);  // outᵀ [OC, N] = (W stored [C, OC])ᵀ · inpᵀ
}
// dinp [N, C] (+)= dout [N, OC] · W [OC, C]: W cast transposed ([C, OC]), dout as is.
inline void fp8_matmul_backward_dx(GemmContext& ctx, bf16* dinp, const Fp8Operand& dout, const Fp8Operand& w_t,
                                   std::int64_t n, std::int64_t c, std::int64_t oc, bool accumulate,
                                   cudaStream_t stream) {
  fp8_gemm_tn(ctx, c, n, oc, w_t, dout, dinp, nullptr, accumulate, stream);
}
// dW [OC, C] (+)= dout [N, OC]ᵀ · inp [N, C]: both cast transposed (inpᵀ [C, N], doutᵀ [OC, N]).
inline void fp8_matmul_backward_dw(GemmContext& ctx, bf16* dw, const Fp8Operand& dout_t, const Fp8Operand& inp_t,
                                   std::int64_t n, std::int64_t c, std::int64_t oc, bool accumulate,
                                   cudaStream_t stream) {
  fp8_gemm_tn(ctx, c, oc, n, inp_t, dout_t, dw, nullptr, accumulate, stream);
}

}  // namespace fsdpx::cuda
