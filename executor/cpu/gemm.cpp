// executor/cpu/gemm.cpp — GEMMs of the linear layer. OpenBLAS's cblas when this build found it and it
// loads (blas_loader.h: dlopened on the first GEMM, kept at one thread: the tiles below are the
// parallelism), else plain loops. Why tiles: OpenBLAS's threaded driver
// cuts K into blocks differently from its serial one when GEMM_Q < K < 2·GEMM_Q (OpenBLAS
// driver/level3/level3_thread.c halves K, level3.c rounds the half to GEMM_UNROLL_M), so its sums,
// and the training run, change with OPENBLAS_NUM_THREADS; a tiling fixed by the shapes, each tile one
// serial call, cannot. Tiles are at least kMinTileExtent wide because each re-packs the other operand
// (measured on the 2-core VM: 512-wide tiles cost 2-5% of one thread's GEMM time, 256-wide 5-12%).
#include "executor/cpu/gemm.h"
#include "executor/cpu/blas_loader.h"
#include "executor/cpu/kernel_pool.h"

#include <algorithm>

namespace fsdpx::cpu {
namespace {

constexpr std::int64_t kMinTileExtent = 512;  // rows (or columns) of C per tile, at least
constexpr std::int64_t kMaxTiles = 64;

void blas_gemm(const BlasGemms& g, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
               const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
               std::int64_t ldc) {
  g.sgemm(kCblasRowMajor, ta ? kCblasTrans : kCblasNoTrans, tb ? kCblasTrans : kCblasNoTrans, int(m), int(n), int(k),
          alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
}
void blas_gemm(const BlasGemms& g, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
               const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c,
               std::int64_t ldc) {
  g.dgemm(kCblasRowMajor, ta ? kCblasTrans : kCblasNoTrans, tb ? kCblasTrans : kCblasNoTrans, int(m), int(n), int(k),
          alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
}

}  // namespace

bool gemm_uses_blas() { return blas_gemms().loaded(); }

// Row i of C: c_i = beta·c_i + alpha·Σ_p a(i, p)·b(p, :), summed over p in order.
template <class Real>
void gemm_loops(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, Real alpha, const Real* a,
                std::int64_t lda, const Real* b, std::int64_t ldb, Real beta, Real* c, std::int64_t ldc) {
  for (std::int64_t i = 0; i < m; ++i) {
    Real* ci = c + i * ldc;  // [N]
    for (std::int64_t j = 0; j < n; ++j) ci[j] = beta == Real(0) ? Real(0) : beta * ci[j];
    for (std::int64_t p = 0; p < k; ++p) {
      const Real aip = alpha * (ta ? a[p * lda + i] : a[i * lda + p]);
      if (tb)
        for (std::int64_t j = 0; j < n; ++j) ci[j] += aip * b[j * ldb + p];
      else
        for (std::int64_t j = 0; j < n; ++j) ci[j] += aip * b[p * ldb + j];
    }
  }
}

template <class Real>
void gemm_serial(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, Real alpha, const Real* a,
                 std::int64_t lda, const Real* b, std::int64_t ldb, Real beta, Real* c, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (const BlasGemms& g = blas_gemms(); g.loaded())
    blas_gemm(g, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  else
    gemm_loops(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// 1, 2 or a multiple of 4 tiles (so that 2 and 4 threads share them evenly), each >= kMinTileExtent.
std::int64_t gemm_tile_count(std::int64_t m, std::int64_t n) {
  const std::int64_t fit = std::min(std::max(m, n) / kMinTileExtent, kMaxTiles);
  if (fit >= 4) return fit / 4 * 4;
  return fit >= 2 ? 2 : 1;
}

template <class Real>
void gemm_parallel(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, Real alpha, const Real* a,
                   std::int64_t lda, const Real* b, std::int64_t ldb, Real beta, Real* c, std::int64_t ldc) {
  const std::int64_t tiles = gemm_tile_count(m, n);
  const bool by_rows = m >= n;
  const std::int64_t dim = by_rows ? m : n, extent = (dim + tiles - 1) / tiles;
  // Tiles are claimed one by one: a thread slowed by another job on its core takes fewer; who computes a
  // tile does not change its result.
  parallel_for(tiles, m * n, [&](std::int64_t t) {
    const std::int64_t lo = t * extent, len = std::min(extent, dim - lo);
    if (by_rows)
      gemm_serial(ta, tb, len, n, k, alpha, ta ? a + lo : a + lo * lda, lda, b, ldb, beta, c + lo * ldc, ldc);
    else
      gemm_serial(ta, tb, m, len, k, alpha, a, lda, tb ? b + lo * ldb : b + lo, ldb, beta, c + lo, ldc);
  });
}

template <class Real>
void matmul_forward(Real* out, const Real* inp, const Real* weight, const Real* bias, std::int64_t n,
                    std::int64_t c, std::int64_t oc) {
  gemm_parallel(false, true, n, oc, c, Real(1), inp, c, weight, c, Real(0), out, oc);
  if (!bias) return;
  parallel_for(n, n * oc, [&](std::int64_t i) {
    for (std::int64_t o = 0; o < oc; ++o) out[i * oc + o] += bias[o];
  });
}

template <class Real>
void matmul_backward_dx(Real* dinp, const Real* dout, const Real* weight, std::int64_t n, std::int64_t c,
                        std::int64_t oc) {
  gemm_parallel(false, false, n, c, oc, Real(1), dout, oc, weight, c, Real(1), dinp, c);
}

template <class Real>
void matmul_backward_dw(Real* dweight, Real* dbias, const Real* dout, const Real* inp, std::int64_t n,
                        std::int64_t c, std::int64_t oc) {
  gemm_parallel(true, false, oc, c, n, Real(1), dout, oc, inp, c, Real(1), dweight, c);
  if (!dbias) return;
  // Columns in fixed blocks; rows in order inside each: one summation order per element.
  constexpr std::int64_t kBlock = 256;
  parallel_for((oc + kBlock - 1) / kBlock, n * oc, [&](std::int64_t blk) {
    const std::int64_t o0 = blk * kBlock, o1 = std::min(oc, o0 + kBlock);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t o = o0; o < o1; ++o) dbias[o] += dout[i * oc + o];
  });
}

#define FSDPX_INSTANTIATE(Real)                                                                              \
  template void gemm_loops<Real>(bool, bool, std::int64_t, std::int64_t, std::int64_t, Real, const Real*,      \
                                 std::int64_t, const Real*, std::int64_t, Real, Real*, std::int64_t);         \
  template void gemm_serial<Real>(bool, bool, std::int64_t, std::int64_t, std::int64_t, Real, const Real*,     \
                                  std::int64_t, const Real*, std::int64_t, Real, Real*, std::int64_t);        \
  template void gemm_parallel<Real>(bool, bool, std::int64_t, std::int64_t, std::int64_t, Real, const Real*,   \
                                    std::int64_t, const Real*, std::int64_t, Real, Real*, std::int64_t);      \
  template void matmul_forward<Real>(Real*, const Real*, const Real*, const Real*, std::int64_t, std::int64_t, \
                                     std::int64_t);                                                         \
  template void matmul_backward_dx<Real>(Real*, const Real*, const Real*, std::int64_t, std::int64_t,        \
                                         std::int64_t);                                                     \
  template void matmul_backward_dw<Real>(Real*, Real*, const Real*, const Real*, std::int64_t, std::int64_t, \
                                         std::int64_t);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cpu
