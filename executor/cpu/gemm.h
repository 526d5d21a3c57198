// executor/cpu/gemm.h — the linear layer of the CPU reference: out = inp · Wᵀ + b and its two backward
// GEMMs (dinp and dW/db), in llm.c's layout (train_gpt2.c matmul_forward/backward: weights [OC, C],
// row-major). Uses cblas_{s,d}gemm when built with OpenBLAS, plain loops otherwise. Backward kernels
// accumulate (+=) so gradient accumulation works; callers zero. Leaves out fused epilogues.
#pragma once

#include <cstdint>

namespace fsdpx::cpu {

// out [N, OC] = inp [N, C] · weight [OC, C]ᵀ + bias [OC] (bias may be null).
template <class Real>
void matmul_forward(Real* out, const Real* inp, const Real* weight, const Real* bias, std::int64_t n,
                    std::int64_t c, std::int64_t oc);

// dinp [N, C] += dout [N, OC] · weight [OC, C].
template <class Real>
void matmul_backward_dx(Real* dinp, const Real* dout, const Real* weight, std::int64_t n, std::int64_t c,
                        std::int64_t oc);

// dweight [OC, C] += dout [N, OC]ᵀ · inp [N, C]; dbias [OC] += Σ_n dout[n] (dbias may be null).
// Each output element is summed over n in order by one thread: deterministic for any thread count.
template <class Real>
void matmul_backward_dw(Real* dweight, Real* dbias, const Real* dout, const Real* inp, std::int64_t n,
                        std::int64_t c, std::int64_t oc);

// True when the GEMMs go through cblas (reported by tools and tests).
bool gemm_uses_blas();

}  // namespace fsdpx::cpu
