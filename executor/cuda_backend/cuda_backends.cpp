// executor/cuda_backend/cuda_backends.cpp — the CUDA backend factories (see cuda_backends.h).
#include "executor/cuda_backend/cuda_backends.h"

#include "executor/cuda/device_thread_communicator.h"
#include "executor/cuda_backend/cuda_rank_backend.h"

namespace fsdpx::cuda {

RankBackendFactory in_process_cuda_backends(int device) {
  return [device](const RuntimeProgram& rp, OpProfiler* rank0_profiler) {
    std::vector<std::unique_ptr<RankBackend>> out;
    auto comms = make_device_thread_communicators(rp.program.world_size, device);
    for (auto& c : comms) {
      OpProfiler* profiler = c->rank() == 0 ? rank0_profiler : nullptr;  // the first: ranks come in order
      out.push_back(make_cuda_rank_backend(rp, std::move(c), device, profiler));
    }
    return out;
  };
}

#if defined(FSDPX_HAVE_NCCL)
RankBackendFactory nccl_cuda_backend(const NcclId& id, int rank, NcclOptions options) {
  return [id, rank, options](const RuntimeProgram& rp, OpProfiler* rank0_profiler) {
    std::vector<std::unique_ptr<RankBackend>> out;
    auto world = make_nccl_communicator(id, rp.program.world_size, rank, options);
    OpProfiler* profiler = rank == 0 ? rank0_profiler : nullptr;  // only global rank 0 times its kernels
    out.push_back(make_cuda_rank_backend(rp, std::move(world), options.device, profiler));
    return out;
  };
}
#endif

}  // namespace fsdpx::cuda
