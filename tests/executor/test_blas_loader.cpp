// tests/executor/test_blas_loader.cpp — OpenBLAS loaded on demand (executor/cpu/blas_loader.h): a build
// configured with it loads it, its GEMM agrees with the plain loops for every transpose in float and
// double, the environment is left as it was, and a missing library or one without cblas is refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "executor/cpu/blas_loader.h"
#include "executor/cpu/gemm.h"

namespace fsdpx {
namespace {

// max over C of |gemm_serial - gemm_loops| / Σ_p |alpha·a(i,p)·b(p,j)| + |beta·c(i,j)|: the error scale of a
// dot product summed in another order.
template <class Real>
double gemm_vs_loops(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, std::mt19937& rng) {
  std::uniform_real_distribution<Real> u(-1, 1);
  auto fill = [&](std::size_t size) {
    std::vector<Real> v(size);
    for (Real& x : v) x = u(rng);
    return v;
  };
  const std::int64_t lda = ta ? m : k, ldb = tb ? k : n, ldc = n + 3;  // C padded: ldc is honoured
  const std::vector<Real> a = fill(std::size_t(m * k)), b = fill(std::size_t(k * n)), c0 = fill(std::size_t(m * ldc));
  const Real alpha = Real(0.75), beta = Real(0.5);
  std::vector<Real> blas = c0, loops = c0;
  cpu::gemm_serial(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, blas.data(), ldc);
  cpu::gemm_loops(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, loops.data(), ldc);
  double worst = 0;
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < ldc; ++j) {
      const std::size_t at = std::size_t(i * ldc + j);
      if (j >= n) {  // the padding is untouched
        CHECK(blas[at] == c0[at]);
        continue;
      }
      double scale = std::abs(double(beta) * c0[at]);
      for (std::int64_t p = 0; p < k; ++p)
        scale += std::abs(double(alpha) * (ta ? a[std::size_t(p * lda + i)] : a[std::size_t(i * lda + p)]) *
                          (tb ? b[std::size_t(j * ldb + p)] : b[std::size_t(p * ldb + j)]));
      worst = std::max(worst, std::abs(double(blas[at]) - double(loops[at])) / scale);
    }
  return worst;
}

TEST_CASE("the loaded GEMM agrees with the plain loops for every transpose, float and double") {
  // A build configured with OpenBLAS must load it (else this compares the loops with themselves).
  CHECK(cpu::gemm_uses_blas() == cpu::blas_configured());
  std::mt19937 rng(36);
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      const double f = gemm_vs_loops<float>(ta, tb, 37, 53, 301, rng);
      const double d = gemm_vs_loops<double>(ta, tb, 37, 53, 301, rng);
      INFO("trans_a " << ta << " trans_b " << tb << " BLAS " << cpu::gemm_uses_blas() << ": maxdiff float " << f
                      << ", double " << d);
      CHECK(f <= 1e-6);
      CHECK(d <= 1e-14);
    }
}

TEST_CASE("load_blas refuses a missing library and one without cblas, and leaves the environment") {
  const bool user_set = std::getenv("OPENBLAS_NUM_THREADS") != nullptr;
  CHECK_FALSE(cpu::load_blas("libfsdpx-no-such-blas.so.0").loaded());
  CHECK_FALSE(cpu::load_blas("libm.so.6").loaded());  // loads, has no cblas_sgemm
  CHECK((std::getenv("OPENBLAS_NUM_THREADS") != nullptr) == user_set);
}

}  // namespace
}  // namespace fsdpx
