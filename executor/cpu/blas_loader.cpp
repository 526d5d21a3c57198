// executor/cpu/blas_loader.cpp — dlopen of OpenBLAS on the first GEMM (see blas_loader.h). Why the
// environment: OpenBLAS's constructor (gotoblas_init, memory.c) reads OPENBLAS_NUM_THREADS and starts that
// many threads less one; openblas_set_num_threads after the load would leave a full pool that spins.
#include "executor/cpu/blas_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace fsdpx::cpu {

BlasGemms load_blas(const char* library) {
  const bool set_here = std::getenv("OPENBLAS_NUM_THREADS") == nullptr;
  if (set_here) setenv("OPENBLAS_NUM_THREADS", "1", 0);
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (set_here) unsetenv("OPENBLAS_NUM_THREADS");  // thread_budget.cpp reads it: leave the user's environment
  if (handle == nullptr) return {};
  BlasGemms g;
  g.sgemm = reinterpret_cast<SgemmFn>(dlsym(handle, "cblas_sgemm"));
  g.dgemm = reinterpret_cast<DgemmFn>(dlsym(handle, "cblas_dgemm"));
  if (g.sgemm == nullptr || g.dgemm == nullptr) {
    dlclose(handle);
    return {};
  }
  // A user's OPENBLAS_NUM_THREADS started a pool: keep every call on its own thread all the same.
  using SetThreadsFn = void (*)(int);
  if (auto set_threads = reinterpret_cast<SetThreadsFn>(dlsym(handle, "openblas_set_num_threads")))
    set_threads(1);
  return g;  // the handle stays open for the process
}

namespace {

#if defined(FSDPX_OPENBLAS_SONAME) && defined(FSDPX_OPENBLAS_DIR)
#define FSDPX_BLAS_CONFIGURED 1
#else
#define FSDPX_BLAS_CONFIGURED 0
#endif

BlasGemms load_configured() {
#if FSDPX_BLAS_CONFIGURED
  const BlasGemms found = load_blas((std::string(FSDPX_OPENBLAS_DIR) + "/" + FSDPX_OPENBLAS_SONAME).c_str());
  return found.loaded() ? found : load_blas(FSDPX_OPENBLAS_SONAME);
#else
  return {};
#endif
}

}  // namespace

const BlasGemms& blas_gemms() {
  static const BlasGemms gemms = load_configured();  // initialised once, other threads wait ([stmt.dcl])
  return gemms;
}

bool blas_configured() { return FSDPX_BLAS_CONFIGURED; }

}  // namespace fsdpx::cpu
