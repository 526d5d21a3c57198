// executor/cuda/cuda_check.h — CUDA_CHECK, CUBLAS_CHECK and NCCL_CHECK in the llm.c style
// (llmc/cuda_common.h cudaCheck_): print the expression, file:line and the error string (for NCCL
// also ncclGetLastError), then abort, so a failing rank never hangs its peers silently (style.md,
// Errors 2). Call CUDA_CHECK(cudaGetLastError()) after every kernel launch. NCCL_CHECK is defined only
// where nccl.h is available (FSDPX_HAVE_NCCL).
#pragma once

#include <cstdio>
#include <cstdlib>

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#if defined(FSDPX_HAVE_NCCL)
#include <nccl.h>
#endif

namespace fsdpx::cuda {

inline void cuda_check_(cudaError_t err, const char* expr, const char* file, int line) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "[CUDA ERROR] %s:%d: %s: %s (%s)\n", file, line, expr, cudaGetErrorString(err),
               cudaGetErrorName(err));
  std::abort();
}

inline void cublas_check_(cublasStatus_t st, const char* expr, const char* file, int line) {
  if (st == CUBLAS_STATUS_SUCCESS) return;
  std::fprintf(stderr, "[cuBLAS ERROR] %s:%d: %s: status %d\n", file, line, expr, static_cast<int>(st));
  std::abort();
}

#if defined(FSDPX_HAVE_NCCL)
inline void nccl_check_(ncclResult_t r, ncclComm_t comm, const char* expr, const char* file, int line) {
  if (r == ncclSuccess || r == ncclInProgress) return;
  std::fprintf(stderr, "[NCCL ERROR] %s:%d: %s: %s; last error: %s\n", file, line, expr, ncclGetErrorString(r),
               ncclGetLastError(comm));
  std::abort();
}
#endif

}  // namespace fsdpx::cuda

#define CUDA_CHECK(expr) (::fsdpx::cuda::cuda_check_((expr), #expr, __FILE__, __LINE__))
#define CUBLAS_CHECK(expr) (::fsdpx::cuda::cublas_check_((expr), #expr, __FILE__, __LINE__))
#if defined(FSDPX_HAVE_NCCL)
// NCCL_CHECK(expr) for calls without a communicator; NCCL_CHECK_COMM(comm, expr) adds its last error.
#define NCCL_CHECK(expr) (::fsdpx::cuda::nccl_check_((expr), nullptr, #expr, __FILE__, __LINE__))
#define NCCL_CHECK_COMM(comm, expr) (::fsdpx::cuda::nccl_check_((expr), (comm), #expr, __FILE__, __LINE__))
#endif
