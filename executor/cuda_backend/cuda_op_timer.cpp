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
  // A destructor must not throw: a failing call is reported and the op is left out of the profile.
  float elapsed_ms = 0;
  cudaError_t err = cudaEventRecord(stop_, stream_);
  if (err == cudaSuccess) err = cudaEventSynchronize(stop_);
  if (err == cudaSuccess) err = cudaEventElapsedTime(&elapsed_ms, start_, stop_);
  CUDA_CHECK_NOEXCEPT(err);
  CUDA_CHECK_NOEXCEPT(cudaEventDestroy(start_));
  CUDA_CHECK_NOEXCEPT(cudaEventDestroy(stop_));
  if (err == cudaSuccess) profiler_->record(op_, module_, double(elapsed_ms) / 1e3);
}

}  // namespace fsdpx::cuda
