// executor/session/cpu_placement.h — where the CPU backend's ranks run for one `fsdpx run`: every rank as
// a thread of this process (the default), or one process per rank: a process launched by torchrun, srun,
// mpirun or fsdpx itself runs its one rank with the TCP communicator (executor/comm/tcp_communicator.h)
// after the rendezvous at MASTER_ADDR:MASTER_PORT; asked for processes and not launched, this process
// starts one process per rank on this node (executor/launch/local_launcher.h) and waits for them. The
// same launch path as the CUDA backend's (executor/cuda_backend/cuda_placement.h), testable without a GPU.
#pragma once

#include <string>

#include "core/plan.h"
#include "executor/runtime/rank_placement.h"

namespace fsdpx {

// Throws ConfigError when the launcher's world size differs from the plan's; RendezvousError or
// CommAborted when the ranks cannot meet. comm_timeout_s bounds each wait of a rank's TCP communicator
// and the silence of its peers (tcp_communicator.h).
RankPlacement place_cpu_ranks(const Plan& plan, const std::string& plan_fingerprint, bool processes,
                              double comm_timeout_s);

}  // namespace fsdpx
