// executor/cuda/fp8_gemm.cpp — the cuBLASLt fp8 call behind fp8_gemm_tn (see fp8_gemm.h). A failure throws
// CudaError naming the shape, the formats and the call that failed. The amax of a bf16 D is fp8_amax's pass
// over D after the GEMM: cuBLASLt takes CUBLASLT_MATMUL_DESC_AMAX_D_POINTER only with an fp8 D (cuBLAS 13.0
// on an H200, 2026-11-30: cublasLtMatmulAlgoGetHeuristic answered CUBLAS_STATUS_INVALID_VALUE for bf16 D).
#include "executor/cuda/fp8_gemm.h"

#include <string>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/cuda/cuda_check.h"
#include "executor/cuda/fp8.h"
#include "executor/cuda/gemm_lt.h"

namespace fsdpx::cuda {
namespace {

cudaDataType_t fp8_type(Fp8Format f) { return f == Fp8Format::e4m3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2; }
const char* fp8_name(Fp8Format f) { return f == Fp8Format::e4m3 ? "e4m3" : "e5m2"; }

template <class V>
void set_attr(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const V& value) {
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof value));
}

// TN with fp32 compute and scale; the operands' inverse scales as device pointers.
cublasLtMatmulDesc_t make_fp8_desc(const Fp8Operand& a, const Fp8Operand& b) {
  cublasLtMatmulDesc_t desc;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  set_attr(desc, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  set_attr(desc, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  set_attr(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, static_cast<const void*>(a.inv_scale));
  set_attr(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, static_cast<const void*>(b.inv_scale));
  return desc;
}

}  // namespace

void fp8_gemm_tn(GemmContext& ctx, std::int64_t m, std::int64_t n, std::int64_t k, const Fp8Operand& a,
                 const Fp8Operand& b, bf16* d, float* amax_d, bool accumulate, cudaStream_t stream) {
  const std::string what = fmt::format("fp8 gemm m={} n={} k={} A {} B {} -> bf16{}{}", m, n, k, fp8_name(a.format),
                                       fp8_name(b.format), accumulate ? ", beta=1" : "", amax_d ? ", amax" : "");
  FSDP_CHECK(m > 0 && n > 0 && k > 0 && k % 16 == 0, what + ": cuBLASLt's fp8 kernels need k a multiple of 16");
  FSDP_CHECK(a.format == Fp8Format::e4m3 || b.format == Fp8Format::e4m3, what + ": no e5m2 x e5m2 kernel");
  LtObjects o;
  o.desc = make_fp8_desc(a, b);
  cublasStatus_t st = cublasLtMatrixLayoutCreate(&o.la, fp8_type(a.format), k, m, k);
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&o.lb, fp8_type(b.format), k, n, k);
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&o.lc, CUDA_R_16BF, m, n, m);
  if (st != CUBLAS_STATUS_SUCCESS)
    throw CudaError(fmt::format("[cuBLAS ERROR] {}: layouts: {}", what, cublas_error_text_(st)));
  o.pref = make_preference(a.codes, b.codes, d);
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  st = cublasLtMatmulAlgoGetHeuristic(ctx.handle(), o.desc, o.la, o.lb, o.lc, o.lc, o.pref, 1, &heuristic, &found);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
    const std::string why = st == CUBLAS_STATUS_SUCCESS ? "no algorithm found" : cublas_error_text_(st);
    throw CudaError(fmt::format("[cuBLAS ERROR] {}: cublasLtMatmulAlgoGetHeuristic: {}", what, why));
  }
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  st = cublasLtMatmul(ctx.handle(), o.desc, &alpha, a.codes, o.la, b.codes, o.lb, &beta, d, o.lc, d, o.lc,
                      &heuristic.algo, ctx.workspace(), GemmContext::kWorkspaceBytes, stream);
  if (st != CUBLAS_STATUS_SUCCESS)
    throw CudaError(fmt::format("[cuBLAS ERROR] {}: cublasLtMatmul: {}", what, cublas_error_text_(st)));
  if (amax_d) fp8_amax(amax_d, d, m * n, stream);
}

}  // namespace fsdpx::cuda
