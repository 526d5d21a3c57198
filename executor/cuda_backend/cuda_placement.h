// executor/cuda_backend/cuda_placement.h — where the CUDA backend's ranks run for one `fsdpx run`: one
// rank, or every rank as a thread on GPU 0 (single_process: the in-process device communicator, for tests
// on one GPU); a process launched by torchrun, srun, mpirun or fsdpx itself runs its one rank with NCCL,
// the NCCL id coming from rank 0 through the TCP rendezvous at MASTER_ADDR:MASTER_PORT; otherwise this
// process starts one process per rank on this node (executor/launch/local_launcher.h) and waits for
// them. Leaves out several GPUs per process.
#pragma once

#include <string>

#include "executor/runtime/rank_placement.h"

namespace fsdpx::cuda {

// Throws ConfigError when no CUDA device is usable, when the launcher's world size differs from the
// plan's (world_size ranks), or when the node has fewer GPUs than ranks (and NCCL cannot put several on one GPU).
RankPlacement place_cuda_ranks(int world_size, const std::string& plan_fingerprint, bool single_process);

}  // namespace fsdpx::cuda
