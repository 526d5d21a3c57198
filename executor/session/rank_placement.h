// executor/session/rank_placement.h — where the ranks of a plan run for one `fsdpx run`. CPU backend: every
// rank as a thread of this process (the default), or one process per rank: a process launched by
// torchrun, srun, mpirun or fsdpx itself runs its one rank with the TCP communicator
// (executor/comm/tcp_communicator.h) after the rendezvous at MASTER_ADDR:MASTER_PORT; asked for
// processes and not launched, this process starts one process per rank on this node
// (executor/launch/local_launcher.h) and waits for them. CUDA backend (built with CUDA only): one rank,
// or every rank as a thread on GPU 0 (the in-process device communicator), or one process per GPU with
// NCCL, the NCCL id coming from rank 0 through the same rendezvous. Leaves out several GPUs per process.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "executor/runtime/rank_backend.h"

namespace fsdpx {

enum class ExecutorBackend { cpu, cuda };

struct PlacementOptions {
  ExecutorBackend backend = ExecutorBackend::cpu;
  bool processes = false;       // cpu: one process per rank on this node instead of threads
  bool single_process = false;  // cuda: every rank as a thread on GPU 0 instead of one process per GPU
};

struct RankPlacement {
  RankBackendFactory backends;       // this process's ranks; empty: the CPU backend, every rank a thread
  std::optional<int> launcher_exit;  // set: this process launched the ranks; exit with this status
  std::string launcher_message;      // why the launch failed (empty when it did not)
  bool prints = true;                // false on ranks other than 0 of a multi-process job
  bool whole_state = true;           // every shard owner runs in this process (false: one process per rank)
  std::string description;           // one line: where the ranks run (empty for CPU threads)
  std::string backend_name = "cpu";  // "cpu" or "cuda"
};

// Throws ConfigError when the launcher's world size differs from the plan's, when --backend cuda finds no
// usable device (or fewer GPUs than ranks where NCCL cannot share one), or when this build has no CUDA;
// RendezvousError or CommAborted when the ranks cannot meet.
RankPlacement place_ranks(const Plan& plan, const std::string& plan_fingerprint, const PlacementOptions& o);

// The two halves of place_ranks.
RankPlacement place_cpu_ranks(const Plan& plan, const std::string& plan_fingerprint, bool processes);
RankPlacement place_cuda_ranks(const Plan& plan, const std::string& plan_fingerprint, bool single_process);

// This process's argv from /proc/self/cmdline (the local launcher starts every rank with it).
std::vector<std::string> own_argv();

}  // namespace fsdpx
