// executor/cuda/gemm_lt.h — cuBLASLt plumbing shared by the 16-bit GEMMs (gemm.cpp) and the fp8 GEMMs
// (fp8_gemm.cpp): operand alignments for the heuristic (FSDP module pointers sit at arbitrary offsets of a
// flat unit buffer, while cuBLASLt otherwise assumes 256 bytes), the preference with the workspace size, and
// the descriptors released on every path. Internal to executor/cuda; leaves out the descriptors' contents.
#pragma once

#include <cstdint>

#include <cublasLt.h>

#include "executor/cuda/cuda_check.h"
#include "executor/cuda/gemm.h"

namespace fsdpx::cuda {

inline std::uint32_t alignment_bytes(const void* p) {
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t a = 256;
  while (a > 1 && addr % a != 0) a /= 2;
  return a;
}

inline cublasLtMatmulPreference_t make_preference(const void* a, const void* b, const void* c) {
  cublasLtMatmulPreference_t pref;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const std::size_t ws = GemmContext::kWorkspaceBytes;
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  const std::uint32_t align[4] = {alignment_bytes(a), alignment_bytes(b), alignment_bytes(c), alignment_bytes(c)};
  const cublasLtMatmulPreferenceAttributes_t attrs[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i)
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attrs[i], &align[i], sizeof align[i]));
  return pref;
}

// cuBLASLt objects released on every path (a failing call throws CudaError).
struct LtObjects {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  LtObjects() = default;
  LtObjects(const LtObjects&) = delete;
  LtObjects& operator=(const LtObjects&) = delete;
  ~LtObjects() {
    if (pref) CUBLAS_CHECK_NOEXCEPT(cublasLtMatmulPreferenceDestroy(pref));
    for (cublasLtMatrixLayout_t l : {la, lb, lc})
      if (l) CUBLAS_CHECK_NOEXCEPT(cublasLtMatrixLayoutDestroy(l));
    if (desc) CUBLAS_CHECK_NOEXCEPT(cublasLtMatmulDescDestroy(desc));
  }
};

}  // namespace fsdpx::cuda
