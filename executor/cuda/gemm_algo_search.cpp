// executor/cuda/gemm_algo_search.cpp — the candidates' trial (see gemm_algo_search.h).
#include "executor/cuda/gemm_algo_search.h"

#include <cstdint>
#include <cstdio>
#include <vector>

#include <fmt/format.h>

#include "executor/cuda/cuda_check.h"
#include "executor/cuda/gemm_algo_choice.h"

namespace fsdpx::cuda {
namespace {

// The scratch output and the two events, released on every path (a failing call throws CudaError).
struct Trial {
  void* scratch = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  Trial() = default;
  Trial(const Trial&) = delete;
  Trial& operator=(const Trial&) = delete;
  ~Trial() {
    if (start) CUDA_CHECK_NOEXCEPT(cudaEventDestroy(start));
    if (stop) CUDA_CHECK_NOEXCEPT(cudaEventDestroy(stop));
    if (scratch) CUDA_CHECK_NOEXCEPT(cudaFreeAsync(scratch, stream));
  }
};

// cuBLASLt's configuration of an algorithm (its id, tile, stages, split-k and cluster shape), -1 where
// cuBLASLt does not say: what tells two candidates apart in the printed line.
std::string describe_algo(const cublasLtMatmulAlgo_t& algo) {
  std::int32_t id = -1, split_k = -1;
  std::uint32_t tile = 0, stages = 0;
  std::uint16_t cluster = 0;
  std::size_t written = 0;
  const auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attr, void* v, std::size_t bytes) {
    return cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, v, bytes, &written) == CUBLAS_STATUS_SUCCESS;
  };
  const bool ok = get(CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id) && get(CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile) &&
                  get(CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages) &&
                  get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split_k, sizeof split_k) &&
                  get(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster);
  if (!ok) return fmt::format("algo {}", id);
  return fmt::format("algo {} tile {} stages {} split-k {} cluster {}", id, tile, stages, split_k, cluster);
}

}  // namespace

cublasLtMatmulAlgo_t search_gemm_algo(const LtMatmulCall& call, const cublasLtMatmulHeuristicResult_t* results,
                                      int count, const std::string& shape) {
  Trial t;
  t.stream = call.stream;
  if (cudaMallocAsync(&t.scratch, call.c_bytes, call.stream) != cudaSuccess) {
    (void)cudaGetLastError();  // out of memory is not sticky: the run goes on with the heuristic's first
    t.scratch = nullptr;
    std::fprintf(stderr, "fsdpx: gemm search (%s): no scratch output of %zu bytes: the heuristic's first\n",
                 shape.c_str(), call.c_bytes);
    return results[0].algo;
  }
  CUDA_CHECK(cudaMemsetAsync(t.scratch, 0, call.c_bytes, call.stream));  // what beta = 1 reads
  CUDA_CHECK(cudaEventCreate(&t.start));
  CUDA_CHECK(cudaEventCreate(&t.stop));
  std::vector<GemmCandidateTrial> trials(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    const cublasLtMatmulHeuristicResult_t& r = results[i];
    if (r.state != CUBLAS_STATUS_SUCCESS || r.workspaceSize > call.workspace_bytes) continue;
    const auto launch = [&] {
      return cublasLtMatmul(call.handle, call.desc, call.alpha, call.a, call.la, call.b, call.lb, call.beta, t.scratch,
                            call.lc, t.scratch, call.lc, &r.algo, call.workspace, call.workspace_bytes, call.stream);
    };
    if (launch() != CUBLAS_STATUS_SUCCESS) continue;  // untimed: loads the kernel's module
    CUDA_CHECK(cudaEventRecord(t.start, call.stream));
    const cublasStatus_t st = launch();
    CUDA_CHECK(cudaEventRecord(t.stop, call.stream));
    CUDA_CHECK(cudaEventSynchronize(t.stop));
    float ms = 0.0f;
    if (st == CUBLAS_STATUS_SUCCESS && cudaEventElapsedTime(&ms, t.start, t.stop) == cudaSuccess)
      trials[static_cast<std::size_t>(i)] = {true, ms};
  }
  const std::size_t pick = pick_gemm_candidate(trials);
  std::string times;
  for (const GemmCandidateTrial& c : trials) times += c.ran ? fmt::format(" {:.3f}", c.time_ms) : std::string(" -");
  std::fprintf(stderr, "fsdpx: gemm search (%s): %d candidates, ms:%s; kept #%zu (%s) over the heuristic's first (%s)\n",
               shape.c_str(), count, times.c_str(), pick, describe_algo(results[pick].algo).c_str(),
               describe_algo(results[0].algo).c_str());
  return results[pick].algo;
}

}  // namespace fsdpx::cuda
