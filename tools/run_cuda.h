// tools/run_cuda.h — how `fsdpx run --backend cuda` places the plan's ranks: one rank, or every rank as a
// thread on GPU 0 (--single-process: the in-process device communicator, for tests on one GPU); a
// process launched by torchrun, srun, mpirun or fsdpx itself runs its one rank with NCCL, the NCCL id
// coming from rank 0 through the TCP rendezvous at MASTER_ADDR:MASTER_PORT; otherwise this process
// starts one process per rank on this node (executor/launch/local_launcher.h) and waits for them.
// Built only with CUDA. Leaves out several GPUs per process.
#pragma once

#include <optional>
#include <string>

#include "core/plan.h"
#include "executor/runtime/trainer.h"

namespace fsdpx {

struct CudaRunSetup {
  RankBackendFactory backends;     // the ranks of this process (empty when it only launched others)
  std::optional<int> launcher_exit;  // set: this process launched the ranks; exit with this status
  bool prints = true;              // false on ranks other than 0 of a multi-process job
  bool whole_state = true;         // every shard owner is in this process (false: one process per GPU)
  std::string description;         // one line: where the ranks run and how they communicate
  std::string job_token;           // names checkpoint staging directories; "" when not launched
};

// Throws ConfigError when no CUDA device is usable, when the launcher's world size differs from the
// plan's, or when the node has fewer GPUs than ranks (and NCCL cannot put several on one GPU).
CudaRunSetup setup_cuda_run(const Plan& plan, const std::string& plan_fingerprint, bool single_process);

}  // namespace fsdpx
