// executor/cpu/blas_loader.h — OpenBLAS's two GEMMs, loaded on first use (issue 36). fsdpx links no BLAS:
// OpenBLAS starts its thread pool in its load-time constructor, and idle pool threads spin before they
// sleep, so a linked OpenBLAS cost every command (plan, simulate) CPU time for a library only the CPU
// executor calls. Leaves out every other BLAS routine and any BLAS but the OpenBLAS found at configure time.
#pragma once

namespace fsdpx::cpu {

// CBLAS's values of its order and transpose enums (the reference CBLAS header cblas.h, as OpenBLAS's).
constexpr int kCblasRowMajor = 101;
constexpr int kCblasNoTrans = 111;
constexpr int kCblasTrans = 112;

// cblas_sgemm and cblas_dgemm, the enums passed as int (their C type's size and ABI on the platforms
// OpenBLAS builds for; blasint is int in Debian's LP64 OpenBLAS).
using SgemmFn = void (*)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a,
                         int lda, const float* b, int ldb, float beta, float* c, int ldc);
using DgemmFn = void (*)(int order, int trans_a, int trans_b, int m, int n, int k, double alpha, const double* a,
                         int lda, const double* b, int ldb, double beta, double* c, int ldc);

struct BlasGemms {
  SgemmFn sgemm = nullptr;  // both set, or both null
  DgemmFn dgemm = nullptr;
  bool loaded() const { return sgemm != nullptr; }
};

// Loads `library` (a path or a soname for the loader's search path) with its pool at one thread: sets
// OPENBLAS_NUM_THREADS=1 while dlopen runs its constructor unless the user set it (then restores the
// environment), and calls openblas_set_num_threads(1) after, as every GEMM here is one serial call
// (gemm.cpp). Both null when the library or either symbol is missing. Not thread-safe (it edits the
// environment): blas_gemms() calls it once.
BlasGemms load_blas(const char* library);

// The OpenBLAS this build was configured with, loaded on the first call (thread-safe, once per process):
// first from the directory found at configure time, then by soname from the loader's search path (an
// installed fsdpx). Both null in a build without OpenBLAS (-DFSDPX_USE_BLAS=OFF, or none found) or when
// it cannot be loaded: the GEMMs then run plain loops, as in a build without it.
const BlasGemms& blas_gemms();

// True when this build was configured with an OpenBLAS to load (tests: then blas_gemms() must load it).
bool blas_configured();

}  // namespace fsdpx::cpu
