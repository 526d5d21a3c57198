// executor/cuda/gemm_algo_search.h — FSDPX_GEMM_ALGO=search's trial of cuBLASLt's candidates for one GEMM
// shape (the choice rule: gemm_algo_choice.h): each candidate runs once untimed (its kernel's lazy module
// load) and once between CUDA events, into a scratch output, never into the call's C (with beta = 1 a trial
// would add into it). Internal to executor/cuda (gemm.cpp); leaves out repeated timings (one launch each, on
// the shape's first call, while other streams may run) and the fp8 GEMMs (fp8_gemm.cpp).
#pragma once

#include <cstddef>
#include <string>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

namespace fsdpx::cuda {

// One cublasLtMatmul call as gemm.cpp builds it, C in place of D.
struct LtMatmulCall {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  const float* alpha = nullptr;
  const float* beta = nullptr;
  const void* a = nullptr;
  const void* b = nullptr;
  std::size_t c_bytes = 0;  // what C spans: (ldc·(n − 1) + m) elements
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  cudaStream_t stream = nullptr;
};

// Of the heuristic's `count` results (count >= 1), the algorithm that ran fastest on call.stream; the first
// when no scratch output can be allocated or none ran. Prints one line to stderr naming `shape`, every
// candidate's time and configuration, and the choice. Synchronises call.stream.
cublasLtMatmulAlgo_t search_gemm_algo(const LtMatmulCall& call, const cublasLtMatmulHeuristicResult_t* results,
                                      int count, const std::string& shape);

}  // namespace fsdpx::cuda
