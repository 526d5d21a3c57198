// executor/cuda/gemm.cpp — cuBLASLt calls behind gemm_col_major (the linear-layer wrappers over it are in
// gemm.h). Pointer alignments are passed to the heuristic because FSDP module pointers sit at arbitrary
// offsets of a flat unit buffer, while cuBLASLt otherwise assumes 256-byte alignment. The algorithm (the
// heuristic's first, or under FSDPX_GEMM_ALGO=search the fastest of its top candidates: gemm_algo_search.h) is
// kept per call shape in the GemmContext (the same algorithm, so the same results, without asking again). A
// failure throws CudaError naming the whole call (GemmShape::describe), the heuristic's status included.
#include "executor/cuda/gemm.h"

#include <cstddef>
#include <string>
#include <type_traits>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/cuda/bias.h"
#include "executor/cuda/cuda_check.h"
#include "executor/cuda/gemm_algo_search.h"
#include "executor/cuda/gemm_lt.h"

namespace fsdpx::cuda {
namespace {

// cuBLAS's name of the 16-bit operand type T.
template <class T>
cudaDataType_t operand_type() {
  static_assert(std::is_same_v<T, bf16> || std::is_same_v<T, f16>, "gemm: bf16 or f16 operands");
  return std::is_same_v<T, bf16> ? CUDA_R_16BF : CUDA_R_16F;
}

template <class T>
cudaDataType_t data_type(GemmOut t) { return t == GemmOut::operand ? operand_type<T>() : CUDA_R_32F; }

// The bias epilogue reads the bias vector with wide loads; a bias pointer that is not 16-byte aligned
// (a module offset inside a flat unit) takes bias_add_columns after the GEMM instead.
constexpr std::uint32_t kBiasEpilogueAlignBytes = 16;

template <class T>
cublasLtMatmulDesc_t make_desc(bool trans_a, bool trans_b, const T* bias) {
  cublasLtMatmulDesc_t desc;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b));
  if (bias) {
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    const cudaDataType_t bias_type = operand_type<T>();
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  }
  return desc;
}

const char* type_name(cudaDataType_t t) { return t == CUDA_R_16BF ? "bf16" : t == CUDA_R_16F ? "f16" : "f32"; }

// Everything a cuBLASLt failure needs to be reproduced: shape, transposes, leading dimensions, the
// pointer alignments passed to the heuristic, the types and the bias path.
struct GemmShape {
  bool trans_a, trans_b;
  std::int64_t m, n, k, lda, ldb, ldc;
  const void *a, *b, *c, *bias;
  cudaDataType_t ab_type, c_type;
  bool bias_epilogue, accumulate;
  float alpha;
  std::string describe() const {
    return fmt::format("m={} n={} k={} op(A)={} op(B)={} lda={} ldb={} ldc={} align A={} B={} C={} bias={} bytes, "
                       "A/B {} C {} compute f32, bias {}, beta={}, alpha={}",
                       m, n, k, trans_a ? "T" : "N", trans_b ? "T" : "N", lda, ldb, ldc, alignment_bytes(a),
                       alignment_bytes(b), alignment_bytes(c), bias ? alignment_bytes(bias) : 0, type_name(ab_type),
                       type_name(c_type), !bias ? "none" : bias_epilogue ? "epilogue" : "kernel after the GEMM",
                       accumulate ? 1 : 0, alpha);
  }
};

[[noreturn]] void throw_gemm_error(const char* what, cublasStatus_t st, const GemmShape& g) {
  throw CudaError(fmt::format("[cuBLAS ERROR] gemm ({}): {}: {}", g.describe(), what,
                              st == CUBLAS_STATUS_SUCCESS ? std::string("no algorithm found") : cublas_error_text_(st)));
}

}  // namespace

GemmContext::GemmContext(GemmAlgoMode mode) : algo_mode_(mode) {
  CUBLAS_CHECK(cublasLtCreate(&handle_));
  CUDA_CHECK(cudaMalloc(&workspace_, kWorkspaceBytes));
}

GemmContext::~GemmContext() {
  if (workspace_) CUDA_CHECK_NOEXCEPT(cudaFree(workspace_));
  if (handle_) CUBLAS_CHECK_NOEXCEPT(cublasLtDestroy(handle_));
}

template <class T>
void gemm_col_major(GemmContext& ctx, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                    const T* a, std::int64_t lda, const no_deduce_t<T>* b, std::int64_t ldb, void* c, GemmOut c_type,
                    std::int64_t ldc, bool accumulate, const no_deduce_t<T>* bias, cudaStream_t stream, float alpha) {
  FSDP_CHECK(m > 0 && n > 0 && k > 0, fmt::format("gemm: empty shape m={} n={} k={}", m, n, k));
  const bool epilogue = bias && alignment_bytes(bias) >= kBiasEpilogueAlignBytes;
  const GemmShape g{trans_a, trans_b, m, n, k, lda, ldb, ldc, a, b, c, bias, operand_type<T>(), data_type<T>(c_type),
                    epilogue, accumulate, alpha};
  LtObjects o;
  o.desc = make_desc(trans_a, trans_b, epilogue ? bias : nullptr);
  // layouts of the stored (untransposed) matrices
  cublasStatus_t st = cublasLtMatrixLayoutCreate(&o.la, g.ab_type, trans_a ? k : m, trans_a ? m : k, lda);
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&o.lb, g.ab_type, trans_b ? n : k, trans_b ? k : n, ldb);
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&o.lc, g.c_type, m, n, ldc);
  if (st != CUBLAS_STATUS_SUCCESS) throw_gemm_error("cublasLtMatrixLayoutCreate", st, g);
  const std::string shape = g.describe();  // pointers enter only as their alignments
  const float beta = accumulate ? 1.0f : 0.0f;
  cublasLtMatmulAlgo_t algo{};
  if (!ctx.find_algo(shape, algo)) {
    o.pref = make_preference(a, b, c);
    const bool search = ctx.algo_mode() == GemmAlgoMode::search;
    cublasLtMatmulHeuristicResult_t results[kGemmSearchCandidates]{};
    int found = 0;
    st = cublasLtMatmulAlgoGetHeuristic(ctx.handle(), o.desc, o.la, o.lb, o.lc, o.lc, o.pref,
                                        search ? kGemmSearchCandidates : 1, results, &found);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0) throw_gemm_error("cublasLtMatmulAlgoGetHeuristic", st, g);
    const std::size_t c_bytes = std::size_t(ldc * (n - 1) + m) * (c_type == GemmOut::f32 ? 4 : sizeof(T));
    algo = search && found > 1 ? search_gemm_algo({ctx.handle(), o.desc, o.la, o.lb, o.lc, &alpha, &beta, a, b, c_bytes,
                                                   ctx.workspace(), GemmContext::kWorkspaceBytes, stream},
                                                  results, found, shape)
                               : results[0].algo;
    ctx.remember_algo(shape, algo);
  }
  st = cublasLtMatmul(ctx.handle(), o.desc, &alpha, a, o.la, b, o.lb, &beta, c, o.lc, c, o.lc, &algo,
                      ctx.workspace(), GemmContext::kWorkspaceBytes, stream);
  if (st != CUBLAS_STATUS_SUCCESS) throw_gemm_error("cublasLtMatmul", st, g);
  if (bias && !epilogue) bias_add_columns<T>(c, c_type == GemmOut::f32, bias, m, n, ldc, stream);
}

#define FSDPX_INSTANTIATE(T)                                                                                     \
  template void gemm_col_major<T>(GemmContext&, bool, bool, std::int64_t, std::int64_t, std::int64_t, const T*,   \
                                  std::int64_t, const T*, std::int64_t, void*, GemmOut, std::int64_t, bool,       \
                                  const T*, cudaStream_t, float);
FSDPX_INSTANTIATE(bf16)
FSDPX_INSTANTIATE(f16)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cuda
