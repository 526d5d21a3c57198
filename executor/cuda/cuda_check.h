// executor/cuda/cuda_check.h — CUDA_CHECK, CUBLAS_CHECK and NCCL_CHECK in the llm.c style
// (llmc/cuda_common.h cudaCheck_) with one change: a failing call throws CudaError naming the expression,
// file:line and the error string (for NCCL also ncclGetLastError) instead of aborting, so one failing test
// or op does not end the process (the runtime turns the exception into a family abort, so no peer hangs:
// executor/session/trainer.cpp on_ranks). Destructors use CUDA_CHECK_NOEXCEPT, which prints and goes on
// (a destructor must not throw). Call CUDA_CHECK(cudaGetLastError()) after every kernel launch. NCCL_CHECK
// is defined only where nccl.h is available (FSDPX_HAVE_NCCL). Leaves out recovery of a sticky error
// (cudaErrorIllegalAddress and the like poison the context: later calls in the process fail too).
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#if defined(FSDPX_HAVE_NCCL)
#include <nccl.h>
#endif

namespace fsdpx::cuda {

// A CUDA runtime, cuBLAS(Lt) or NCCL call that failed: what() names the call, file:line and the error.
class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline std::string check_message_(const char* kind, const char* expr, const char* file, int line,
                                  const std::string& error) {
  return std::string("[") + kind + " ERROR] " + file + ":" + std::to_string(line) + ": " + expr + ": " + error;
}

inline std::string cuda_error_text_(cudaError_t err) {
  return std::string(cudaGetErrorString(err)) + " (" + cudaGetErrorName(err) + ")";
}

inline void cuda_check_(cudaError_t err, const char* expr, const char* file, int line) {
  if (err == cudaSuccess) return;
  throw CudaError(check_message_("CUDA", expr, file, line, cuda_error_text_(err)));
}

inline void cuda_check_noexcept_(cudaError_t err, const char* expr, const char* file, int line) noexcept {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "%s (in a destructor: reported, not thrown)\n",
               check_message_("CUDA", expr, file, line, cuda_error_text_(err)).c_str());
}

inline std::string cublas_error_text_(cublasStatus_t st) {
  return std::string(cublasGetStatusName(st)) + " (status " + std::to_string(static_cast<int>(st)) + ": " +
         cublasGetStatusString(st) + ")";
}

inline void cublas_check_(cublasStatus_t st, const char* expr, const char* file, int line) {
  if (st == CUBLAS_STATUS_SUCCESS) return;
  throw CudaError(check_message_("cuBLAS", expr, file, line, cublas_error_text_(st)));
}

inline void cublas_check_noexcept_(cublasStatus_t st, const char* expr, const char* file, int line) noexcept {
  if (st == CUBLAS_STATUS_SUCCESS) return;
  std::fprintf(stderr, "%s (in a destructor: reported, not thrown)\n",
               check_message_("cuBLAS", expr, file, line, cublas_error_text_(st)).c_str());
}

#if defined(FSDPX_HAVE_NCCL)
inline void nccl_check_(ncclResult_t r, ncclComm_t comm, const char* expr, const char* file, int line) {
  if (r == ncclSuccess || r == ncclInProgress) return;
  throw CudaError(check_message_("NCCL", expr, file, line,
                                 std::string(ncclGetErrorString(r)) + "; last error: " + ncclGetLastError(comm)));
}
#endif

}  // namespace fsdpx::cuda

#define CUDA_CHECK(expr) (::fsdpx::cuda::cuda_check_((expr), #expr, __FILE__, __LINE__))
#define CUBLAS_CHECK(expr) (::fsdpx::cuda::cublas_check_((expr), #expr, __FILE__, __LINE__))
// For destructors and other noexcept paths: prints the same message and continues.
#define CUDA_CHECK_NOEXCEPT(expr) (::fsdpx::cuda::cuda_check_noexcept_((expr), #expr, __FILE__, __LINE__))
#define CUBLAS_CHECK_NOEXCEPT(expr) (::fsdpx::cuda::cublas_check_noexcept_((expr), #expr, __FILE__, __LINE__))
#if defined(FSDPX_HAVE_NCCL)
// NCCL_CHECK(expr) for calls without a communicator; NCCL_CHECK_COMM(comm, expr) adds its last error.
#define NCCL_CHECK(expr) (::fsdpx::cuda::nccl_check_((expr), nullptr, #expr, __FILE__, __LINE__))
#define NCCL_CHECK_COMM(comm, expr) (::fsdpx::cuda::nccl_check_((expr), (comm), #expr, __FILE__, __LINE__))
#endif
