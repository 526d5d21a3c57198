// executor/cpu/gemm.h — the linear layer of the CPU reference: out = inp · Wᵀ + b and its two backward
// GEMMs (dinp and dW/db), in llm.c's layout (train_gpt2.c matmul_forward/backward: weights [OC, C],
// row-major), and the GEMM under them. Uses cblas_{s,d}gemm when built with OpenBLAS and it loads
// (dlopened on the first GEMM, blas_loader.h), plain loops otherwise. Every output element is computed by
// one single-threaded GEMM call on a tile of the output whose bounds depend only on the shapes, so results
// do not depend on the thread count. Backward kernels accumulate (+=) so gradient accumulation works;
// callers zero. Leaves out fused epilogues.
#pragma once

#include <cstdint>

namespace fsdpx::cpu {

// C [M, N] = alpha · op(A) · op(B) + beta · C, row-major, op(X) = Xᵀ when trans_x; on the calling thread
// only (for kernels that run it inside their own parallel loops). beta = 0 ignores C's old contents.
template <class Real>
void gemm_serial(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, Real alpha,
                 const Real* a, std::int64_t lda, const Real* b, std::int64_t ldb, Real beta, Real* c,
                 std::int64_t ldc);

// The plain loops gemm_serial runs without OpenBLAS (row by row, k summed in order); for tests.
template <class Real>
void gemm_loops(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, Real alpha,
                const Real* a, std::int64_t lda, const Real* b, std::int64_t ldb, Real beta, Real* c,
                std::int64_t ldc);

// The same GEMM with its output cut into tiles (gemm_tile_count) that the calling rank's OpenMP threads
// share; bit-identical to the serial call on the same tiles for any thread count.
template <class Real>
void gemm_parallel(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, Real alpha,
                   const Real* a, std::int64_t lda, const Real* b, std::int64_t ldb, Real beta, Real* c,
                   std::int64_t ldc);

// Tiles gemm_parallel cuts C [M, N] into, along its longer side: a function of the shape only.
std::int64_t gemm_tile_count(std::int64_t m, std::int64_t n);

// out [N, OC] = inp [N, C] · weight [OC, C]ᵀ + bias [OC] (bias may be null).
template <class Real>
void matmul_forward(Real* out, const Real* inp, const Real* weight, const Real* bias, std::int64_t n,
                    std::int64_t c, std::int64_t oc);

// dinp [N, C] += dout [N, OC] · weight [OC, C].
template <class Real>
void matmul_backward_dx(Real* dinp, const Real* dout, const Real* weight, std::int64_t n, std::int64_t c,
                        std::int64_t oc);

// dweight [OC, C] += dout [N, OC]ᵀ · inp [N, C]; dbias [OC] += Σ_n dout[n] (dbias may be null; summed
// over n in order for each output element).
template <class Real>
void matmul_backward_dw(Real* dweight, Real* dbias, const Real* dout, const Real* inp, std::int64_t n,
                        std::int64_t c, std::int64_t oc);

// True when the GEMMs go through cblas (reported by tools and tests); loads OpenBLAS on the first call.
bool gemm_uses_blas();

}  // namespace fsdpx::cpu
