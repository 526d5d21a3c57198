// executor/cuda_backend/cuda_op_timer.h — the device twin of ScopedOp (executor/model/op_profiler.h):
// times the kernels a scope enqueues on one stream with a pair of CUDA events and reports the elapsed
// GPU time under the simulator's kernel name. Synchronous by design, like the CPU profile: the
// destructor waits for the stop event, so a profiled run serialises the host with the GPU, and each
// scope's time includes the launch latency of its first kernel (the stream is idle when the start
// event is recorded). Leaves out asynchronous collection (resolving the events after the step).
#pragma once

#include <string_view>

#include <cuda_runtime_api.h>

#include "executor/model/op_profiler.h"

namespace fsdpx::cuda {

// Costs one branch when `profiler` is null. Otherwise it creates its two events in the constructor and
// destroys them in the destructor (a microsecond or two of host time per scope, outside the timed
// interval): no pool to size or to bind to a device, and nesting or concurrent scopes stay independent.
// Events are created on the current device, which must be `stream`'s.
class CudaScopedOp {
 public:
  CudaScopedOp(OpProfiler* profiler, std::string_view op, int module, cudaStream_t stream);
  ~CudaScopedOp();
  CudaScopedOp(const CudaScopedOp&) = delete;
  CudaScopedOp& operator=(const CudaScopedOp&) = delete;
  // PausableOp's interface (executor/model/ends_sequence.h): events cannot pause, so a collective inside
  // a scope is timed with it.
  void pause() {}
  void resume() {}

 private:
  OpProfiler* profiler_;
  std::string_view op_;
  int module_;
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace fsdpx::cuda
