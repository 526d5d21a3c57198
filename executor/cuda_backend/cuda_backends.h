// executor/cuda_backend/cuda_backends.h — how `fsdpx run --backend cuda` makes the Trainer's ranks:
// every rank of the plan as a thread of this process on one GPU (the in-process device communicator:
// single-GPU runs and the multi-rank equivalence tests), or this process as one rank of a
// multi-process NCCL job (one process per GPU, the NCCL id from the launcher's rendezvous). The
// Trainer's kernel profiler goes to global rank 0's model only, as on the CPU. Leaves out several GPUs
// driven by one process.
#pragma once

#include "executor/runtime/rank_backend.h"
#if defined(FSDPX_HAVE_NCCL)
#include "executor/cuda/nccl_communicator.h"
#endif

namespace fsdpx::cuda {

// Every rank of the plan's mesh as a thread on CUDA device `device`.
RankBackendFactory in_process_cuda_backends(int device);

#if defined(FSDPX_HAVE_NCCL)
// Global rank `rank` of the plan's mesh in this process, on options.device; the world communicator is
// NCCL's from `id` (every process passes the same id).
RankBackendFactory nccl_cuda_backend(const NcclId& id, int rank, NcclOptions options);
#endif

}  // namespace fsdpx::cuda
