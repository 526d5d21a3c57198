// executor/cpu/gemm.cpp — GEMMs of the linear layer: cblas when FSDPX_HAVE_CBLAS, else plain loops
// parallelised over output rows with OpenMP (the loop order of llm.c's matmul_forward_naive).
// Leaves out blocking/tiling of the fallback: it only has to be correct and tolerable for tiny models.
#include "executor/cpu/gemm.h"

#ifdef FSDPX_HAVE_CBLAS
#include <cblas.h>
#endif

namespace fsdpx::cpu {
namespace {

#ifdef FSDPX_HAVE_CBLAS
// C [M, N] = alpha · op(A) · op(B) + beta · C, row-major.
void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
          std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n),
              int(k), alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
}
void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const double* a,
          std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c, std::int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n),
              int(k), alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
}
#endif

}  // namespace

bool gemm_uses_blas() {
#ifdef FSDPX_HAVE_CBLAS
  return true;
#else
  return false;
#endif
}

template <class Real>
void matmul_forward(Real* out, const Real* inp, const Real* weight, const Real* bias, std::int64_t n,
                    std::int64_t c, std::int64_t oc) {
#ifdef FSDPX_HAVE_CBLAS
  gemm(false, true, n, oc, c, Real(1), inp, c, weight, c, Real(0), out, oc);
  if (bias) {
#pragma omp parallel for
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t o = 0; o < oc; ++o) out[i * oc + o] += bias[o];
  }
#else
#pragma omp parallel for
  for (std::int64_t i = 0; i < n; ++i) {
    const Real* x = inp + i * c;  // [C]
    for (std::int64_t o = 0; o < oc; ++o) {
      const Real* w = weight + o * c;  // [C]
      Real acc = bias ? bias[o] : Real(0);
      for (std::int64_t j = 0; j < c; ++j) acc += x[j] * w[j];
      out[i * oc + o] = acc;
    }
  }
#endif
}

template <class Real>
void matmul_backward_dx(Real* dinp, const Real* dout, const Real* weight, std::int64_t n, std::int64_t c,
                        std::int64_t oc) {
#ifdef FSDPX_HAVE_CBLAS
  gemm(false, false, n, c, oc, Real(1), dout, oc, weight, c, Real(1), dinp, c);
#else
#pragma omp parallel for
  for (std::int64_t i = 0; i < n; ++i) {
    Real* dx = dinp + i * c;  // [C]
    for (std::int64_t o = 0; o < oc; ++o) {
      const Real d = dout[i * oc + o];
      const Real* w = weight + o * c;
      for (std::int64_t j = 0; j < c; ++j) dx[j] += d * w[j];
    }
  }
#endif
}

template <class Real>
void matmul_backward_dw(Real* dweight, Real* dbias, const Real* dout, const Real* inp, std::int64_t n,
                        std::int64_t c, std::int64_t oc) {
#ifdef FSDPX_HAVE_CBLAS
  gemm(true, false, oc, c, n, Real(1), dout, oc, inp, c, Real(1), dweight, c);
#else
#pragma omp parallel for
  for (std::int64_t o = 0; o < oc; ++o) {
    Real* dw = dweight + o * c;  // [C]
    for (std::int64_t i = 0; i < n; ++i) {
      const Real d = dout[i * oc + o];
      const Real* x = inp + i * c;
      for (std::int64_t j = 0; j < c; ++j) dw[j] += d * x[j];
    }
  }
#endif
  if (dbias) {
#pragma omp parallel for
    for (std::int64_t o = 0; o < oc; ++o) {
      Real acc = 0;
      for (std::int64_t i = 0; i < n; ++i) acc += dout[i * oc + o];
      dbias[o] += acc;
    }
  }
}

#define FSDPX_INSTANTIATE(Real)                                                                              \
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
