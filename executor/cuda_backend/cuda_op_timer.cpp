// executor/cuda_backend/cuda_op_timer.cpp — CudaScopedOp (see cuda_op_timer.h).
#include "executor/cuda_backend/cuda_op_timer.h"

#include "executor/cuda/cuda_check.h"

namespace fsdpx::cuda {

CudaScopedOp::CudaScopedOp(OpProfiler* profiler, std::string_view op, int module, cudaStream_t stream)
    : profiler_(profiler), op_(op), module_(module), stream_(stream) {
  if (!profiler_) return;
  // Timing events (no cudaEventDisableTiming); default flags: the wait spins, for the lowest latency.
  CUDA_CHECK(cudaEventCreate(&start_));
  CUDA_CHECK(cudaEventCreate(&stop_));
  CUDA_CHECK(cudaEventRecord(start_, stream_));
}

CudaScopedOp::~CudaScopedOp() {
  if (!profiler_) return;
  CUDA_CHECK(cudaEventRecord(stop_, stream_));
  CUDA_CHECK(cudaEventSynchronize(stop_));
  float elapsed_ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&elapsed_ms, start_, stop_));
  CUDA_CHECK(cudaEventDestroy(start_));
  CUDA_CHECK(cudaEventDestroy(stop_));
  profiler_->record(op_, module_, double(elapsed_ms) / 1e3);
}

}  // namespace fsdpx::cuda
