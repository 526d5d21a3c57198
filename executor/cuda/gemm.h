// executor/cuda/gemm.h — the linear layer's three GEMMs through cuBLASLt (llm.c matmul_cublaslt):
// 16-bit operands T (bf16, or f16 for fp16 plans), fp32 accumulation (CUBLAS_COMPUTE_32F), T or fp32
// output, an optional bias epilogue in forward, and an accumulate flag (beta = 1) so dW += works for
// gradient accumulation. Row-major shapes as executor/cpu/gemm.h (weights [OC, C]). A 32 MiB workspace ("only Hopper needs
// 32", llm.c). The algorithm is chosen once per call shape (GemmContext keeps it): the heuristic's first, or
// under FSDPX_GEMM_ALGO=search the fastest of its top candidates (gemm_algo_choice.h). Leaves out GELU
// epilogues, fp8 and batched GEMMs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include <cublasLt.h>

#include "executor/cuda/gemm_algo_choice.h"
#include "executor/cuda/types.h"

namespace fsdpx::cuda {

// One cuBLASLt handle and its workspace; one per device and stream family.
class GemmContext {
 public:
  static constexpr std::size_t kWorkspaceBytes = std::size_t(32) << 20;
  // The mode from FSDPX_GEMM_ALGO unless given (a bad value is a ConfigError).
  explicit GemmContext(GemmAlgoMode mode = parse_gemm_algo_mode(std::getenv(kGemmAlgoEnv)));
  ~GemmContext();
  GemmContext(const GemmContext&) = delete;
  GemmContext& operator=(const GemmContext&) = delete;
  cublasLtHandle_t handle() const { return handle_; }
  void* workspace() const { return workspace_; }
  GemmAlgoMode algo_mode() const { return algo_mode_; }
  // The chosen algorithm for each call shape seen (gemm.cpp: the shape's description, alignments
  // included), so that cuBLASLt is asked once per shape rather than at every call: the query is host time on
  // the launch path of every GEMM, and inside a profiled GEMM's events (a search, also device time).
  bool find_algo(const std::string& shape, cublasLtMatmulAlgo_t& algo) const {
    std::lock_guard<std::mutex> lock(algos_mu_);
    const auto it = algos_.find(shape);
    if (it == algos_.end()) return false;
    algo = it->second;
    return true;
  }
  void remember_algo(const std::string& shape, const cublasLtMatmulAlgo_t& algo) {
    std::lock_guard<std::mutex> lock(algos_mu_);
    algos_.emplace(shape, algo);
  }

 private:
  GemmAlgoMode algo_mode_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  mutable std::mutex algos_mu_;
  std::map<std::string, cublasLtMatmulAlgo_t> algos_;
};

// The output type: the operands' 16-bit type, or fp32.
enum class GemmOut { operand, f32 };

// Column-major core: C [m, n] (ldc) = (accumulate ? C : 0) + alpha·op(A)·op(B) + bias [m]; op(A) is m×k,
// op(B) is k×n; A, B of type T; C of type c_type; bias T or null. (LoRA's adapter GEMMs use alpha for
// their scale and ldc for a column slice of their output: cuda_backend/lora_gemm_plan.h.)
template <class T>
void gemm_col_major(GemmContext& ctx, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                    const T* a, std::int64_t lda, const no_deduce_t<T>* b, std::int64_t ldb, void* c, GemmOut c_type,
                    std::int64_t ldc, bool accumulate, const no_deduce_t<T>* bias, cudaStream_t stream,
                    float alpha = 1.0f);

// The linear layer's three GEMMs on row-major operands, each the column-major product of its transpose
// (row-major X [r, c] is column-major Xᵀ [c, r] with ld c). Written once here over gemm_col_major, whose
// build (cuBLASLt in executor/cuda/gemm.cpp, host loops in tests/cuda/emulated/gemm.cpp) decides how it runs.

// out [N, OC] (+)= inp [N, C] · weight [OC, C]ᵀ + bias [OC] (bias may be null).
template <class T>
void matmul_forward(GemmContext& ctx, void* out, GemmOut out_type, const T* inp, const no_deduce_t<T>* weight,
                    const no_deduce_t<T>* bias, std::int64_t n, std::int64_t c, std::int64_t oc, bool accumulate,
                    cudaStream_t stream) {
  // outᵀ [OC, N] = W [OC, C] · inpᵀ [C, N]: W is stored as column-major [C, OC] -> transposed.
  gemm_col_major<T>(ctx, true, false, oc, n, c, weight, c, inp, c, out, out_type, oc, accumulate, bias, stream);
}

// dinp [N, C] (+)= dout [N, OC] · weight [OC, C].
template <class T>
void matmul_backward_dx(GemmContext& ctx, void* dinp, GemmOut dinp_type, const T* dout, const no_deduce_t<T>* weight,
                        std::int64_t n, std::int64_t c, std::int64_t oc, bool accumulate, cudaStream_t stream) {
  // dinpᵀ [C, N] = Wᵀ [C, OC] · doutᵀ [OC, N]: both stored column-major as needed.
  gemm_col_major<T>(ctx, false, false, c, n, oc, weight, c, dout, oc, dinp, dinp_type, c, accumulate, nullptr, stream);
}

// dweight [OC, C] (+)= dout [N, OC]ᵀ · inp [N, C]. The bias gradient is bias_backward (bias.h).
template <class T>
void matmul_backward_dw(GemmContext& ctx, void* dweight, GemmOut dweight_type, const T* dout, const no_deduce_t<T>* inp,
                        std::int64_t n, std::int64_t c, std::int64_t oc, bool accumulate, cudaStream_t stream) {
  // dWᵀ [C, OC] = inpᵀ [C, N] · dout [N, OC]: dout is stored column-major [OC, N] -> transposed.
  gemm_col_major<T>(ctx, false, true, c, oc, n, inp, c, dout, oc, dweight, dweight_type, c, accumulate, nullptr,
                    stream);
}

}  // namespace fsdpx::cuda
