// tools/run_cpu_processes.h — how `fsdpx run --backend cpu` places the plan's ranks: as threads of this
// process (the default), or one process per rank: a process launched by torchrun, srun, mpirun or
// fsdpx itself runs its one rank with the TCP communicator (executor/comm/tcp_communicator.h) after
// the rendezvous at MASTER_ADDR:MASTER_PORT; with --processes and not launched, this process starts
// one process per rank on this node (executor/launch/local_launcher.h) and waits for them. The same
// launch path as --backend cuda (tools/run_cuda.h), testable without a GPU.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "executor/runtime/trainer.h"

namespace fsdpx {

struct CpuRunSetup {
  RankBackendFactory backends;       // empty: every rank as a thread of this process
  std::optional<int> launcher_exit;  // set: this process launched the ranks; exit with this status
  bool prints = true;                // false on ranks other than 0 of a multi-process job
  bool whole_state = true;           // false: one process per rank
  std::string description;           // one line: where the ranks run (empty for threads)
  std::string job_token;             // names checkpoint staging directories; "" when not launched
};

// The same hex string on every process of a launched job (its rendezvous address, world size and plan),
// which names the staging directory of its checkpoints (executor/checkpoint/checkpoint.h).
struct LaunchEnv;
std::string checkpoint_job_token(const LaunchEnv& env, const std::string& plan_fingerprint);

// Throws ConfigError when the launcher's world size differs from the plan's; RendezvousError or
// CommAborted when the ranks cannot meet.
CpuRunSetup setup_cpu_run(const Plan& plan, const std::string& plan_fingerprint, bool processes);

// This process's argv from /proc/self/cmdline (the local launcher starts every rank with it).
std::vector<std::string> own_argv();

}  // namespace fsdpx
